//! `tafs gaf …`: list, export, dump, build, palette, roundtrip.

use super::{err, read_file, write_bytes, CliError};
use crate::formats::gaf::{self, Content, Gaf};
use crate::formats::palette::Palette;
use crate::formats::Limits;
use crate::view::gaf::{self as gview, BuildOptions, GafView, Storage};
use crate::view::{self, DirFileSet, MemFileSet, ViewOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `tafs gaf` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum GafCmd {
    /// List sequences, frame counts, loop flags and durations.
    List {
        /// The GAF file.
        file: PathBuf,
    },
    /// Export one sequence as an animated PNG (APNG) or GIF.
    Export {
        /// The GAF file.
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ImageFormat::Png)]
        format: ImageFormat,
        /// Sequence number (see `list`).
        #[arg(long, default_value_t = 0)]
        sequence: usize,
        /// Output file.
        #[arg(short, long)]
        target: PathBuf,
        /// Palette file (.pal or .pcx) instead of the one resolved from the game folder.
        #[arg(long)]
        palette: Option<PathBuf>,
        /// Transparency: game (the game's rule), heuristic (TA: Kingdoms corner guess, raw
        /// frames only), none, or a palette index.
        #[arg(long, default_value = "game")]
        transparency: String,
    },
    /// Write the exploded view: one folder per sequence with CSVs and indexed PNGs (RGBA PNGs
    /// for truecolor frames).
    Dump {
        /// The GAF file.
        file: PathBuf,
        /// Output folder (created).
        #[arg(short, long)]
        target: PathBuf,
        /// Image format of the frame files (build reads either).
        #[arg(long, value_enum, default_value_t = ImageFormat::Png)]
        format: ImageFormat,
        /// Palette file (.pal or .pcx) instead of the one resolved from the game folder.
        #[arg(long)]
        palette: Option<PathBuf>,
    },
    /// Rebuild a GAF from a dump folder.
    Build {
        /// The dump folder.
        dir: PathBuf,
        /// Output GAF (written atomically; nothing is written on error).
        #[arg(short, long)]
        target: PathBuf,
        /// Palette file images are mapped to (default: resolved for the target).
        #[arg(long)]
        palette: Option<PathBuf>,
        /// Frame storage.
        #[arg(long, value_enum, default_value_t = Storage::Auto)]
        storage: Storage,
        /// The original GAF: frames equal to its frames keep their stored bytes.
        #[arg(long)]
        base: Option<PathBuf>,
    },
    /// Write the crate's sample GAF (RLE, raw and composite frames) to try the other commands on.
    Sample {
        /// Output GAF.
        #[arg(short, long)]
        target: PathBuf,
        /// The sample texture GAF (raw frames) instead.
        #[arg(long)]
        texture: bool,
    },
    /// The GIMP palette (.gpl) of the palette the GAF resolves to (the one its frames are
    /// drawn with), printed or written to --target.
    Palette {
        /// The GAF file.
        file: PathBuf,
        /// Output .gpl (default: standard output).
        #[arg(short, long)]
        target: Option<PathBuf>,
        /// Palette file (.pal or .pcx) instead of the one resolved from the game folder.
        #[arg(long)]
        palette: Option<PathBuf>,
    },
    /// Check that decode → encode and dump → build keep what the game reads, for every GAF
    /// under the given paths.
    Roundtrip {
        /// Files or folders (searched recursively for .gaf/.taf).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

/// Image formats of `export`/`dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImageFormat {
    /// PNG (APNG for animations).
    Png,
    /// GIF.
    Gif,
}

/// Runs a `tafs gaf` subcommand.
pub fn run(cmd: GafCmd) -> Result<i32, CliError> {
    match cmd {
        GafCmd::List { file } => list(&file),
        GafCmd::Export {
            file,
            format,
            sequence,
            target,
            palette,
            transparency,
        } => export(
            &file,
            format,
            sequence,
            &target,
            palette.as_deref(),
            &transparency,
        ),
        GafCmd::Dump {
            file,
            target,
            format,
            palette,
        } => dump(&file, &target, palette.as_deref(), format),
        GafCmd::Build {
            dir,
            target,
            palette,
            storage,
            base,
        } => build(&dir, &target, palette.as_deref(), storage, base.as_deref()),
        GafCmd::Roundtrip { paths } => roundtrip(&paths),
        GafCmd::Palette {
            file,
            target,
            palette,
        } => {
            let opts = view_options_for(&file, palette.as_deref())?;
            // the same text as palette.gpl of the dump
            super::pcx::write_gpl(&opts.palette, &opts.palette_source, target.as_deref())
        }
        GafCmd::Sample { target, texture } => {
            let g = if texture {
                crate::sample::texture_gaf()
            } else {
                crate::sample::animated_gaf()
            };
            let bytes = gaf::write(&g).map_err(|e| CliError::Msg(e.to_string()))?;
            write_bytes(&target, &bytes)?;
            Ok(0)
        }
    }
}

fn parse_file(file: &Path) -> Result<Gaf, CliError> {
    let data = read_file(file)?;
    gaf::parse(&data, &Limits::default())
        .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))
}

/// The options `dump` (and the mount) use for a file: palette given, or resolved from the
/// game folder found by walking up from the file ([`view::options_for`]).
pub fn view_options_for(file: &Path, palette: Option<&Path>) -> Result<ViewOptions, CliError> {
    let palette = match palette {
        Some(p) => Some((load_palette(p)?, p.display().to_string())),
        None => None,
    };
    let overrides = view::Overrides {
        palette,
        ..Default::default()
    };
    Ok(view::options_for(file, None, &overrides))
}

/// Reads a .pal or .pcx palette file.
pub fn load_palette(p: &Path) -> Result<Palette, CliError> {
    let data = read_file(p)?;
    Palette::from_file_bytes(&p.to_string_lossy(), &data)
        .map_err(|e| CliError::Msg(format!("{}: {e}", p.display())))
}

fn list(file: &Path) -> Result<i32, CliError> {
    let g = parse_file(file)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "GAF: {} sequence(s), version {:#010x}",
        g.sequences.len(),
        g.version
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:<4}{:<24}{:>7}{:>7}{:>18}{:>16}",
        "#", "Name", "Frames", "Loops", "Duration (ticks)", "Duration (sec)"
    )?;
    for (i, s) in g.sequences.iter().enumerate() {
        let (frames, loops, ticks) = gview::sequence_summary(s);
        writeln!(
            out,
            "{:<4}{:<24}{:>7}{:>7}{:>18}{:>16.2}",
            i,
            s.name_str(),
            frames,
            if loops { "yes" } else { "no" },
            ticks,
            ticks as f64 / 30.0
        )?;
    }
    let mut formats = std::collections::BTreeMap::new();
    for fe in g.sequences.iter().flat_map(|s| &s.frames) {
        if let Some(t) = fe.frame.truecolor() {
            *formats.entry(t.name()).or_insert(0usize) += 1;
        }
    }
    for (name, n) in formats {
        writeln!(out, "truecolor: {n} {name} frame(s)")?;
    }
    for w in &g.warnings {
        eprintln!("warning: {}: {w}", file.display());
    }
    Ok(0)
}

fn export(
    file: &Path,
    format: ImageFormat,
    sequence: usize,
    target: &Path,
    palette: Option<&Path>,
    transparency: &str,
) -> Result<i32, CliError> {
    let g = parse_file(file)?;
    let opts = view_options_for(file, palette)?;
    let mode = match transparency {
        "game" => gview::Transparency::Game,
        "heuristic" => gview::Transparency::Heuristic,
        "none" => gview::Transparency::None,
        n => gview::Transparency::Index(n.parse().map_err(|_| {
            CliError::Msg(format!(
                "--transparency {n:?}: expected game, heuristic, none or 0..255"
            ))
        })?),
    };
    let Some(seq) = g.sequences.get(sequence) else {
        return err(format!(
            "{}: no sequence {sequence} (the file has {})",
            file.display(),
            g.sequences.len()
        ));
    };
    if gview::truecolor::sequence_has_truecolor(seq) {
        if format == ImageFormat::Gif {
            return err(format!(
                "sequence {sequence} holds truecolor frames: export it as PNG (GIF has no alpha)"
            ));
        }
        let mut bytes = Vec::new();
        gview::truecolor::write_rgba_apng(&mut bytes, seq, &opts.palette)
            .map_err(|m| CliError::Msg(format!("sequence {sequence}: {m}")))?;
        write_bytes(target, &bytes)?;
        return Ok(0);
    }
    let anim = gview::animation(seq, mode)
        .map_err(|m| CliError::Msg(format!("sequence {sequence}: {m}")))?;
    let mut bytes = Vec::new();
    match format {
        ImageFormat::Png => gview::write_apng(&mut bytes, &anim, &opts.palette, seq.loops())
            .map_err(CliError::Msg)?,
        ImageFormat::Gif => write_gif(&mut bytes, &anim, &opts.palette, seq.loops())?,
    }
    write_bytes(target, &bytes)?;
    Ok(0)
}

fn write_gif(
    out: &mut Vec<u8>,
    a: &gview::Animation,
    pal: &Palette,
    loops: bool,
) -> Result<(), CliError> {
    let (Ok(w), Ok(h)) = (u16::try_from(a.width), u16::try_from(a.height)) else {
        return err("animation too large for GIF");
    };
    let e = |e: gif::EncodingError| CliError::Msg(format!("gif: {e}"));
    let rgb = pal.rgb_bytes();
    let mut enc = gif::Encoder::new(out, w, h, &rgb).map_err(e)?;
    enc.set_repeat(if loops {
        gif::Repeat::Infinite
    } else {
        gif::Repeat::Finite(0)
    })
    .map_err(e)?;
    for i in 0..a.len() {
        let (canvas, ticks) = (a.canvas(i), a.ticks(i));
        let mut f = gif::Frame {
            width: w,
            height: h,
            buffer: std::borrow::Cow::Owned(canvas),
            transparent: Some(a.slot),
            dispose: gif::DisposalMethod::Background,
            ..Default::default()
        };
        // GIF delays are in 1/100 s.
        f.delay = ((u64::from(ticks) * 100 + 15) / 30).min(u64::from(u16::MAX)) as u16;
        enc.write_frame(&f).map_err(e)?;
    }
    Ok(())
}

fn dump(
    file: &Path,
    target: &Path,
    palette: Option<&Path>,
    format: ImageFormat,
) -> Result<i32, CliError> {
    let data = read_file(file)?;
    let mut opts = view_options_for(file, palette)?;
    if format == ImageFormat::Gif {
        opts.frame_format = view::FrameFormat::Gif;
    }
    let v = GafView::new(&data, &opts)
        .map_err(|e| CliError::Msg(format!("{}: {e}", file.display())))?;
    for w in &v.gaf().warnings {
        eprintln!("warning: {}: {w}", file.display());
    }
    super::progress::write_tree(&v, target)?;
    Ok(0)
}

fn build(
    dir: &Path,
    target: &Path,
    palette: Option<&Path>,
    storage: Storage,
    base: Option<&Path>,
) -> Result<i32, CliError> {
    // The original's place decides the palette (a build elsewhere keeps a TA: Kingdoms
    // asset's own palette), then the target's.
    let opts = view_options_for(base.unwrap_or(target), palette)?;
    let base = base.map(parse_file).transpose()?;
    let built = gview::build(
        &DirFileSet::new(dir),
        &BuildOptions {
            palette: opts.palette,
            storage,
            asset_path: Some(target.to_string_lossy().replace('\\', "/")),
            base: base.as_ref(),
        },
    )
    .map_err(|e| CliError::Msg(format!("{}: {e}", dir.display())))?;
    for w in &built.warnings {
        eprintln!("warning: {w}");
    }
    let bytes = gaf::write(&built.gaf).map_err(|e| CliError::Msg(e.to_string()))?;
    write_bytes(target, &bytes)?;
    Ok(0)
}

/// Result of checking one file.
pub(super) struct Check {
    pub(super) file: String,
    pub(super) sequences: usize,
    pub(super) frames: usize,
    pub(super) composites: usize,
    pub(super) write_identical: bool,
    pub(super) build_identical: bool,
    pub(super) problem: Option<String>,
    pub(super) skipped: Option<String>,
}

/// Checks one GAF: decode → encode and dump → build --base (`tafs gaf roundtrip`, and the
/// GAF rows of `tafs roundtrip`).
pub(super) fn check_one(path: &Path) -> Check {
    let mut c = Check {
        file: path.display().to_string(),
        sequences: 0,
        frames: 0,
        composites: 0,
        write_identical: false,
        build_identical: false,
        problem: None,
        skipped: None,
    };
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => {
            c.problem = Some(e.to_string());
            return c;
        }
    };
    let g = match gaf::parse(&data, &Limits::default()) {
        Ok(g) => g,
        Err(e @ gaf::GafError::Truecolor { .. }) => {
            c.skipped = Some(e.to_string());
            return c;
        }
        Err(e) => {
            c.problem = Some(e.to_string());
            return c;
        }
    };
    c.sequences = g.sequences.len();
    for s in &g.sequences {
        c.frames += s.frames.len();
        c.composites += s
            .frames
            .iter()
            .filter(|f| matches!(f.frame.content, Content::Layers(_)))
            .count();
    }
    // decode → encode
    match gaf::write(&g).and_then(|b| gaf::parse(&b, &Limits::default()).map(|g2| (b, g2))) {
        Ok((bytes, g2)) => {
            c.write_identical = bytes == data;
            if let Some(d) = gview::first_difference(&g, &g2) {
                c.problem = Some(format!("decode → encode changed {d}"));
                return c;
            }
        }
        Err(e) => {
            c.problem = Some(format!("decode → encode: {e}"));
            return c;
        }
    }
    // dump → build (with the original as base)
    let opts = match view_options_for(path, None) {
        Ok(o) => o,
        Err(e) => {
            c.problem = Some(e.to_string());
            return c;
        }
    };
    let view = match GafView::from_gaf(g.clone(), &opts) {
        Ok(v) => v,
        Err(e) => {
            c.problem = Some(format!("dump: {e}"));
            return c;
        }
    };
    let result = MemFileSet::from_view(&view).and_then(|files| {
        gview::build(
            &files,
            &BuildOptions {
                palette: opts.palette.clone(),
                storage: Storage::Auto,
                asset_path: opts.asset_path.clone(),
                base: Some(&g),
            },
        )
    });
    match result {
        Ok(built) => {
            if let Some(d) = gview::first_difference(&g, &built.gaf) {
                c.problem = Some(format!("dump → build changed {d}"));
                return c;
            }
            c.build_identical = gaf::write(&built.gaf).is_ok_and(|b| b == data);
        }
        Err(e) => c.problem = Some(format!("dump → build: {e}")),
    }
    c
}

fn roundtrip(paths: &[PathBuf]) -> Result<i32, CliError> {
    use rayon::prelude::*;
    let mut files = Vec::new();
    for p in paths {
        collect_gafs(p, &mut files, 0)?;
    }
    files.sort();
    let bar = super::progress::files(files.len(), 8);
    let checks: Vec<Check> = files
        .par_iter()
        .map(|f| {
            let c = check_one(f);
            bar.inc(1);
            c
        })
        .collect();
    bar.finish_and_clear();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<8} {:>5} {:>7} {:>10} {:>12} {:>12}  file",
        "status", "seqs", "frames", "composite", "encode==", "build=="
    )?;
    let (mut failed, mut skipped, mut wid, mut bid, mut comps) = (0, 0, 0, 0, 0);
    for c in &checks {
        let status = if c.problem.is_some() {
            failed += 1;
            "FAIL"
        } else if c.skipped.is_some() {
            skipped += 1;
            "skip"
        } else {
            "ok"
        };
        wid += usize::from(c.write_identical);
        bid += usize::from(c.build_identical);
        comps += c.composites;
        let yn = |b: bool| if b { "identical" } else { "equivalent" };
        writeln!(
            out,
            "{:<8} {:>5} {:>7} {:>10} {:>12} {:>12}  {}",
            status,
            c.sequences,
            c.frames,
            c.composites,
            if status == "ok" {
                yn(c.write_identical)
            } else {
                "-"
            },
            if status == "ok" {
                yn(c.build_identical)
            } else {
                "-"
            },
            c.file
        )?;
        if let Some(p) = c.problem.as_ref().or(c.skipped.as_ref()) {
            writeln!(out, "         {p}")?;
        }
    }
    writeln!(
        out,
        "\n{} file(s): {} ok, {failed} failed, {skipped} skipped; byte-identical: {wid} after decode → encode, {bid} after dump → build --base; {comps} composite frame(s)",
        checks.len(),
        checks.len() - failed - skipped
    )?;
    Ok(if failed > 0 { 1 } else { 0 })
}

fn collect_gafs(p: &Path, out: &mut Vec<PathBuf>, depth: usize) -> Result<(), CliError> {
    if depth > 64 {
        return Ok(());
    }
    let md =
        std::fs::symlink_metadata(p).map_err(|e| CliError::Msg(format!("{}: {e}", p.display())))?;
    if md.is_dir() {
        let rd =
            std::fs::read_dir(p).map_err(|e| CliError::Msg(format!("{}: {e}", p.display())))?;
        for e in rd.flatten() {
            let path = e.path();
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir
                || view::AssetKind::from_name(&e.file_name().to_string_lossy())
                    == Some(view::AssetKind::Gaf)
            {
                collect_gafs(&path, out, depth + 1)?;
            }
        }
    } else {
        out.push(p.to_path_buf());
    }
    Ok(())
}
