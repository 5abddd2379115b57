//! `tafs fnt …` (info, describe, render, sheet, dump, build): bitmap fonts through the view
//! the mount shows ([`crate::view::fnt`]).

use super::{err, read_file, write_bytes, CliError};
use crate::formats::fnt::{self, Fnt};
use crate::view::{self, fnt as fview, AssetKind, DirFileSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `tafs fnt` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum FntCmd {
    /// One line: height, glyph count, width range.
    Info {
        /// The font.
        file: PathBuf,
    },
    /// Header fields, glyph widths and code ranges; --list prints every glyph.
    Describe {
        /// The font.
        file: PathBuf,
        /// One line per glyph: code, character, offset-free width.
        #[arg(long)]
        list: bool,
    },
    /// Render text as the game lays it out (each glyph advances by its width; a character
    /// without a glyph draws nothing); `\n` starts a new line.
    Render {
        /// The font.
        file: PathBuf,
        /// The text (UTF-8, drawn in Windows-1252).
        #[arg(long)]
        text: String,
        /// Drawn colour, #rrggbb or #rrggbbaa.
        #[arg(long, default_value = "#ffffff")]
        fg: String,
        /// Background, #rrggbb[aa] or `transparent`.
        #[arg(long, default_value = "#000000")]
        bg: String,
        /// Output PNG.
        #[arg(short, long)]
        target: PathBuf,
    },
    /// Every glyph on a 16 × 16 sheet (the view's sheet.png).
    Sheet {
        /// The font.
        file: PathBuf,
        /// Output PNG.
        #[arg(short, long)]
        target: PathBuf,
    },
    /// Write the exploded view (U+00XX.png per glyph, glyphs.csv, sheet.png, metadata.json).
    Dump {
        /// The font.
        file: PathBuf,
        /// Output folder (created).
        #[arg(short, long)]
        target: PathBuf,
    },
    /// Rebuild a font from a dump folder.
    Build {
        /// The dump folder.
        dir: PathBuf,
        /// Output font (written atomically).
        #[arg(short, long)]
        target: PathBuf,
        /// The original font: tells whether a glyph's PNG or its CSV width was edited when
        /// they disagree.
        #[arg(long)]
        base: Option<PathBuf>,
    },
}

fn load(file: &Path) -> Result<Fnt, CliError> {
    let data = read_file(file)?;
    fnt::parse(&data).map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))
}

/// Runs a `tafs fnt` subcommand.
pub fn run(cmd: FntCmd) -> Result<i32, CliError> {
    match cmd {
        FntCmd::Info { file } => {
            let f = load(&file)?;
            let (lo, hi) = widths(&f);
            outln!(
                "{}: {} px high, {} glyphs, widths {lo}–{hi}",
                file.display(),
                f.height,
                f.glyph_count()
            );
            Ok(0)
        }
        FntCmd::Describe { file, list } => describe(&file, list),
        FntCmd::Render {
            file,
            text,
            fg,
            bg,
            target,
        } => {
            let f = load(&file)?;
            let fg = colour(&fg)?;
            let bg = if bg.eq_ignore_ascii_case("transparent") {
                [0, 0, 0, 0]
            } else {
                colour(&bg)?
            };
            let (w, h, rgba) = render(&f, &text, fg, bg);
            let mut png = Vec::new();
            let mut enc = png::Encoder::new(&mut png, w, h);
            enc.set_color(png::ColorType::Rgba);
            enc.set_depth(png::BitDepth::Eight);
            let mut wr = enc
                .write_header()
                .map_err(|e| CliError::Msg(e.to_string()))?;
            wr.write_image_data(&rgba)
                .map_err(|e| CliError::Msg(e.to_string()))?;
            wr.finish().map_err(|e| CliError::Msg(e.to_string()))?;
            write_bytes(&target, &png)?;
            Ok(0)
        }
        FntCmd::Sheet { file, target } => {
            let f = load(&file)?;
            let (w, h, px) = fview::sheet(&f);
            let mut png = Vec::new();
            view::image::write_gray_png(&mut png, w, h, &px)
                .map_err(|e| CliError::Msg(e.to_string()))?;
            write_bytes(&target, &png)?;
            Ok(0)
        }
        FntCmd::Dump { file, target } => {
            let data = read_file(&file)?;
            let v = fview::open(&data)
                .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
            super::progress::write_tree(&v, &target)?;
            Ok(0)
        }
        FntCmd::Build { dir, target, base } => {
            let base = base.as_deref().map(read_file).transpose()?;
            let opts = view::ViewOptions::default();
            let bytes = view::rebuild(
                AssetKind::Fnt,
                &DirFileSet::new(&dir),
                base.as_deref(),
                &opts,
            )
            .map_err(|e| CliError::Msg(format!("{}: {e}", dir.display())))?;
            write_bytes(&target, &bytes)?;
            Ok(0)
        }
    }
}

fn widths(f: &Fnt) -> (u8, u8) {
    let ws = f.glyphs.iter().flatten().map(|g| g.width);
    (ws.clone().min().unwrap_or(0), ws.max().unwrap_or(0))
}

fn describe(file: &Path, list: bool) -> Result<i32, CliError> {
    let f = load(file)?;
    let mut out = std::io::stdout().lock();
    let (lo, hi) = widths(&f);
    writeln!(out, "file: {}", file.display())?;
    writeln!(out, "height: {} px", f.height)?;
    writeln!(out, "baseline: {}", f.baseline)?;
    writeln!(out, "first table code: {:#04x}", f.first_char)?;
    writeln!(out, "header byte 1: {:#04x}", f.byte1)?;
    writeln!(out, "glyphs: {} / 256, widths {lo}–{hi}", f.glyph_count())?;
    let codes: Vec<usize> = (0..256).filter(|&c| f.glyphs[c].is_some()).collect();
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < codes.len() {
        let start = codes[i];
        while i + 1 < codes.len() && codes[i + 1] == codes[i] + 1 {
            i += 1;
        }
        ranges.push(if codes[i] == start {
            format!("{start:#04x}")
        } else {
            format!("{start:#04x}-{:#04x}", codes[i])
        });
        i += 1;
    }
    writeln!(out, "ranges: {}", ranges.join(" "))?;
    let unreferenced: usize = f
        .layout
        .iter()
        .map(|p| match p {
            fnt::Piece::Bytes(b) => b.len(),
            fnt::Piece::Record(_) => 0,
        })
        .sum();
    writeln!(out, "bytes no glyph points at: {unreferenced}")?;
    if f.irregular.is_some() {
        writeln!(out, "layout: irregular (rebuilt only unchanged)")?;
    }
    for w in &f.warnings {
        writeln!(out, "warning: {w}")?;
    }
    if list {
        for (c, g) in f.glyphs.iter().enumerate() {
            if let Some(g) = g {
                let ch = fnt::cp1252_char(c as u8)
                    .map(String::from)
                    .unwrap_or_default();
                writeln!(out, "{c:#04x}  {ch:<2} width {}", g.width)?;
            }
        }
    }
    Ok(0)
}

fn colour(s: &str) -> Result<[u8; 4], CliError> {
    let h = s.strip_prefix('#').unwrap_or(s);
    let byte = |i: usize| h.get(i..i + 2).and_then(|x| u8::from_str_radix(x, 16).ok());
    match (h.len(), byte(0), byte(2), byte(4)) {
        (6, Some(r), Some(g), Some(b)) => Ok([r, g, b, 255]),
        (8, Some(r), Some(g), Some(b)) => match byte(6) {
            Some(a) => Ok([r, g, b, a]),
            None => err(format!("{s:?}: expected #rrggbb or #rrggbbaa")),
        },
        _ => err(format!("{s:?}: expected #rrggbb or #rrggbbaa")),
    }
}

/// Lays `text` out as the game does, one font height per line: width = the widest line
/// (at least 1), RGBA pixels.
pub fn render(f: &Fnt, text: &str, fg: [u8; 4], bg: [u8; 4]) -> (u32, u32, Vec<u8>) {
    let lines: Vec<Vec<u8>> = text.split('\n').map(fnt::encode_cp1252).collect();
    let advance = |c: &u8| f.glyph(*c).map_or(0, |g| usize::from(g.width));
    let w = lines
        .iter()
        .map(|l| l.iter().map(advance).sum::<usize>())
        .max()
        .unwrap_or(0)
        .max(1);
    let lh = usize::from(f.height);
    let h = lh * lines.len();
    let mut px: Vec<u8> = bg.iter().copied().cycle().take(w * h * 4).collect();
    for (row, line) in lines.iter().enumerate() {
        let mut pen = 0;
        for c in line {
            let Some(g) = f.glyph(*c) else { continue };
            let gw = usize::from(g.width);
            for (i, _) in g.pixels.iter().enumerate().filter(|(_, p)| **p) {
                let (x, y) = (pen + i % gw, row * lh + i / gw);
                if let Some(p) = px.get_mut((y * w + x) * 4..(y * w + x) * 4 + 4) {
                    p.copy_from_slice(&fg);
                }
            }
            pen += gw;
        }
    }
    (w as u32, h as u32, px)
}
