//! `tafs pcx …` (describe, convert, dump, build) and `tafs pal …` (dump, build, gpl): PCX
//! pictures and palettes, through the same views the mount shows ([`crate::view::pcx`],
//! [`crate::view::pal`]).

use super::gaf::load_palette;
use super::{err, read_file, write_bytes, CliError};
use crate::formats::palette::Palette;
use crate::formats::pcx::{self, Pcx, PcxKind};
use crate::formats::Limits;
use crate::view::image::{decode_png, PngPixels};
use crate::view::{self, pal, pcx as pview, AssetKind, DirFileSet};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `tafs pcx` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum PcxCmd {
    /// Size, layout, header fields, palette and how TA draws the file.
    Describe {
        /// The PCX file.
        file: PathBuf,
    },
    /// PCX → PNG, GIF or BMP (indexed with the PCX's palette) or PNG → PCX (by --format, else
    /// by the target's extension).
    Convert {
        /// Input (.pcx or .png).
        file: PathBuf,
        /// Output (.png, .gif, .bmp or .pcx; written atomically).
        #[arg(short, long)]
        target: PathBuf,
        /// Output format, whatever the target's name (default: its extension).
        #[arg(long, value_enum)]
        format: Option<PcxFormat>,
        /// PNG → PCX: the palette (.pal or .pcx) the picture is mapped to (default: an
        /// indexed PNG's own palette; else the built-in TA palette).
        #[arg(long)]
        palette: Option<PathBuf>,
    },
    /// Write the exploded view (image.png + metadata.json; swatch.png, palette.gpl and
    /// palette.csv for a 1×1 palette carrier), as the mount shows it.
    Dump {
        /// The PCX file.
        file: PathBuf,
        /// Output folder (created).
        #[arg(short, long)]
        target: PathBuf,
    },
    /// Rebuild a PCX from a dump folder.
    Build {
        /// The dump folder.
        dir: PathBuf,
        /// Output PCX (written atomically; nothing is written on error).
        #[arg(short, long)]
        target: PathBuf,
        /// The original PCX: unchanged pixels keep their palette index (required for a
        /// palette carrier, whose picture and header are kept).
        #[arg(long)]
        base: Option<PathBuf>,
    },
}

/// `tafs pal` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum PalCmd {
    /// Write the exploded view of a .pal or palette .pcx (swatch.png, palette.gpl,
    /// palette.csv) or of a lookup table .alp/.shd/.lht (table.png, table.csv).
    Dump {
        /// The palette file (.pal, or a .pcx whose palette is wanted) or lookup table.
        file: PathBuf,
        /// Output folder (created).
        #[arg(short, long)]
        target: PathBuf,
    },
    /// Rebuild a palette file or lookup table from a dump folder: palette.csv (table.csv)
    /// decides; an edited swatch.png (table.png) is taken with --base (which tells which of
    /// the two was edited).
    Build {
        /// The dump folder.
        dir: PathBuf,
        /// Output .pal, .pcx, .alp, .shd or .lht (written atomically).
        #[arg(short, long)]
        target: PathBuf,
        /// The original file (required for a .pcx; a .pal keeps the bytes after its 1,024).
        #[arg(long)]
        base: Option<PathBuf>,
    },
    /// Convert a palette between the game's binary .pal (1,024 bytes), GIMP .gpl and
    /// JASC-PAL text; the input is any of those or a palette .pcx (told apart by content).
    Convert {
        /// The palette file.
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum)]
        format: PalFormat,
        /// Output file (default: standard output).
        #[arg(short, long)]
        target: Option<PathBuf>,
    },
    /// Render a lookup table (.alp 256 × 256 cells, .shd/.lht 256 × 32) as a PNG, each cell
    /// the palette colour its byte selects; or print one entry (--entry).
    Lookup {
        /// The table (.alp, .shd, .lht; another name needs --kind).
        file: PathBuf,
        /// Output PNG (default: standard output).
        #[arg(short, long)]
        target: Option<PathBuf>,
        /// The palette (.pal or .pcx) cells are coloured with (default: the one the mount
        /// draws the table in: the same-named .pal or .pcx beside it, else the game's).
        #[arg(long)]
        palette: Option<PathBuf>,
        /// Pixels per cell side (1–16).
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=16))]
        cell: u32,
        /// The table kind when the extension does not say: alp, shd or lht.
        #[arg(long)]
        kind: Option<String>,
        /// Print entry ROW,COL (its index and colour) instead of rendering.
        #[arg(long, value_name = "ROW,COL")]
        entry: Option<String>,
    },
    /// The GIMP palette (.gpl) of a .pal or .pcx, printed or written to --target.
    Gpl {
        /// The palette file (.pal or .pcx).
        file: PathBuf,
        /// Output .gpl (default: standard output).
        #[arg(short, long)]
        target: Option<PathBuf>,
    },
}

/// An output format of `tafs pcx convert`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcxFormat {
    /// Indexed PNG (RGB for a 24-bit PCX).
    Png,
    /// GIF with the PCX's palette.
    Gif,
    /// 8-bit Windows BMP with the PCX's palette.
    Bmp,
    /// PCX (from a PNG).
    Pcx,
}

/// A palette file format of `tafs pal convert`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PalFormat {
    /// GIMP palette text.
    Gpl,
    /// JASC-PAL text (Paint Shop Pro, Aseprite).
    Jasc,
    /// The game's binary palette: 256 × R, G, B, 0.
    Pal,
}

/// Reads a palette from any file `tafs pal convert` takes: JASC-PAL or GIMP text, else a
/// binary palette (`.pal`, raw, or a `.pcx` trailer).
fn load_any_palette(p: &Path) -> Result<Palette, CliError> {
    let data = read_file(p)?;
    if data.starts_with(b"JASC-PAL") || data.starts_with(b"GIMP Palette") {
        return pal::parse_text_palette(&data).map_err(|e| in_file(p, e));
    }
    load_palette(p)
}

/// Runs a `tafs pcx` subcommand.
pub fn run_pcx(cmd: PcxCmd) -> Result<i32, CliError> {
    match cmd {
        PcxCmd::Describe { file } => describe(&file),
        PcxCmd::Convert {
            file,
            target,
            format,
            palette,
        } => convert(&file, &target, format, palette.as_deref()),
        PcxCmd::Dump { file, target } => dump(AssetKind::Pcx, &file, &target),
        PcxCmd::Build { dir, target, base } => {
            build(AssetKind::Pcx, &dir, &target, base.as_deref())
        }
    }
}

/// Runs a `tafs pal` subcommand.
pub fn run_pal(cmd: PalCmd) -> Result<i32, CliError> {
    match cmd {
        PalCmd::Dump { file, target } if is_table(&file) => {
            dump(AssetKind::PalTable, &file, &target)
        }
        PalCmd::Build { dir, target, base } if is_table(&target) => {
            build(AssetKind::PalTable, &dir, &target, base.as_deref())
        }
        PalCmd::Lookup {
            file,
            target,
            palette,
            cell,
            kind,
            entry,
        } => lookup(
            &file,
            target.as_deref(),
            palette.as_deref(),
            cell,
            kind.as_deref(),
            entry.as_deref(),
        ),
        PalCmd::Dump { file, target } => {
            let data = read_file(&file)?;
            let pkind = palette_kind(&file, Some(&data))?;
            let v = pal::open(&data, pkind, &file_name(&file), &Limits::default())
                .map_err(|e| in_file(&file, e))?;
            view::write_tree(&v, &target)?;
            Ok(0)
        }
        PalCmd::Build { dir, target, base } => {
            let base = base.as_deref().map(read_file).transpose()?;
            let pkind = palette_kind(&target, base.as_deref())?;
            let bytes = pal::build(
                &DirFileSet::new(&dir),
                pkind,
                base.as_deref(),
                &Limits::default(),
            )
            .map_err(|e| in_file(&dir, e))?;
            write_bytes(&target, &bytes)?;
            Ok(0)
        }
        PalCmd::Convert {
            file,
            format,
            target,
        } => {
            let p = load_any_palette(&file)?;
            let bytes = match format {
                PalFormat::Gpl => pal::gpl(&p, &file_name(&file)).into_bytes(),
                PalFormat::Jasc => pal::jasc(&p).into_bytes(),
                PalFormat::Pal => p.to_pal(),
            };
            match target {
                Some(t) => write_bytes(&t, &bytes)?,
                None => std::io::stdout().lock().write_all(&bytes)?,
            }
            Ok(0)
        }
        PalCmd::Gpl { file, target } => {
            let p = load_palette(&file)?;
            write_gpl(&p, &file_name(&file), target.as_deref())
        }
    }
}

fn is_table(p: &Path) -> bool {
    AssetKind::from_name(&file_name(p)) == Some(AssetKind::PalTable)
}

/// `tafs pal lookup`.
fn lookup(
    file: &Path,
    target: Option<&Path>,
    palette: Option<&Path>,
    cell: u32,
    kind: Option<&str>,
    entry: Option<&str>,
) -> Result<i32, CliError> {
    use crate::formats::paltable::{self, TableKind, COLUMNS};
    let kind =
        match kind {
            Some(k) => Some(TableKind::from_word(k).ok_or_else(|| {
                CliError::Msg(format!("--kind must be alp, shd or lht, got {k:?}"))
            })?),
            None => TableKind::from_name(&file_name(file)),
        };
    let Some(kind) = kind else {
        return err(format!(
            "{}: cannot tell the table kind from the extension; pass --kind alp|shd|lht",
            file.display()
        ));
    };
    let data = read_file(file)?;
    let t = paltable::parse(&data, Some(kind), &Limits::default()).map_err(|e| in_file(file, e))?;
    let pal = match palette {
        Some(p) => load_palette(p)?,
        None => {
            let opts = view::options_for(file, None, &Default::default());
            opts.palette
        }
    };
    if let Some(e) = entry {
        let at = e.split_once(',').and_then(|(r, c)| {
            Some((
                r.trim().parse::<usize>().ok()?,
                c.trim().parse::<usize>().ok()?,
            ))
        });
        let Some((row, col)) = at else {
            return err(format!("--entry wants ROW,COL, got {e:?}"));
        };
        let Some(v) = t.get(row, col) else {
            return err(format!(
                "--entry {row},{col}: the table has {} rows of 256",
                t.rows
            ));
        };
        let c = pal.colors[usize::from(v)];
        outln!("{v} #{:02x}{:02x}{:02x}", c[0], c[1], c[2]);
        return Ok(0);
    }
    let cell = cell as usize;
    let (w, h) = (COLUMNS * cell, t.rows * cell);
    let mut px = Vec::with_capacity(w * h);
    for row in t.cells.chunks_exact(COLUMNS) {
        let line: Vec<u8> = row
            .iter()
            .flat_map(|&v| std::iter::repeat(v).take(cell))
            .collect();
        for _ in 0..cell {
            px.extend_from_slice(&line);
        }
    }
    let mut out = Vec::new();
    crate::view::image::write_indexed_png(&mut out, w as u32, h as u32, &px, &pal, None)
        .map_err(|e| in_file(file, e))?;
    match target {
        Some(t) => write_bytes(t, &out)?,
        None => std::io::stdout().lock().write_all(&out)?,
    }
    Ok(0)
}

/// Writes the GIMP palette of `p` to `target`, or to standard output.
pub fn write_gpl(p: &Palette, name: &str, target: Option<&Path>) -> Result<i32, CliError> {
    let text = pal::gpl(p, name);
    match target {
        Some(t) => write_bytes(t, text.as_bytes())?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(0)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default()
}

fn in_file(p: &Path, e: impl std::fmt::Display) -> CliError {
    CliError::Msg(format!("{}: {e}", p.display()))
}

/// The palette file `p` is: by name, and for a `.pcx` by its content when known (a raw
/// 768-byte palette or a carrier).
fn palette_kind(p: &Path, data: Option<&[u8]>) -> Result<pal::PaletteFile, CliError> {
    match AssetKind::from_name(&file_name(p)) {
        Some(AssetKind::Pal) => Ok(pal::PaletteFile::Pal),
        Some(AssetKind::Pcx) => Ok(data
            .and_then(|d| pal::pcx_palette_kind(d, &Limits::default()))
            .unwrap_or(pal::PaletteFile::Pcx)),
        _ => err(format!("{}: expected a .pal or .pcx", p.display())),
    }
}

fn dump(kind: AssetKind, file: &Path, target: &Path) -> Result<i32, CliError> {
    let data = read_file(file)?;
    let opts = view::options_for(file, None, &Default::default());
    let v = view::open(kind, &data, &opts).map_err(|e| in_file(file, e))?;
    super::progress::write_tree(&*v, target)?;
    Ok(0)
}

fn build(kind: AssetKind, dir: &Path, target: &Path, base: Option<&Path>) -> Result<i32, CliError> {
    let opts = view::options_for(base.unwrap_or(target), None, &Default::default());
    let base = base.map(read_file).transpose()?;
    let bytes = view::rebuild(kind, &DirFileSet::new(dir), base.as_deref(), &opts)
        .map_err(|e| in_file(dir, e))?;
    write_bytes(target, &bytes)?;
    Ok(0)
}

fn describe(file: &Path) -> Result<i32, CliError> {
    let data = read_file(file)?;
    let lim = Limits::default();
    let p = pcx::parse(&data, &lim).map_err(|e| in_file(file, e))?;
    let f = p.fields();
    let mut out = std::io::stdout().lock();
    let kind = match p.kind {
        PcxKind::Indexed8 => "8-bit paletted",
        PcxKind::Rgb24 => "24-bit RGB (3 planes)",
    };
    writeln!(out, "file: {}", file.display())?;
    writeln!(out, "size: {}×{} ({kind})", p.width, p.height)?;
    writeln!(
        out,
        "version: {}  encoding: {}  window: ({}, {})–({}, {})  dpi: {}×{}",
        f.version,
        if f.encoding == 1 { "RLE" } else { "stored" },
        f.xmin,
        f.ymin,
        f.xmax,
        f.ymax,
        f.hdpi,
        f.vdpi
    )?;
    writeln!(
        out,
        "bytes per line: {} (padding {} per line)",
        p.bytes_per_line,
        usize::from(p.bytes_per_line).saturating_sub(p.width as usize)
    )?;
    if let Some(pal) = &p.palette {
        let used = {
            let mut seen = [false; 256];
            for &i in &p.pixels {
                seen[usize::from(i)] = true;
            }
            seen.iter().filter(|s| **s).count()
        };
        writeln!(
            out,
            "palette: 256 colours (CRC-32 {:08x}), {used} used by the picture",
            pal.crc32()
        )?;
    }
    if pal::is_palette_carrier(&data, &lim) {
        writeln!(
            out,
            "role: palette carrier (1×1, TA: Kingdoms): the mount shows it as a palette"
        )?;
    }
    let canonical = pcx::write(&p).is_ok_and(|w| w == data);
    writeln!(
        out,
        "encoder: {}",
        if canonical {
            "this codec's runs reproduce the file"
        } else {
            "other runs or trailing bytes (kept in metadata.json while the pixels are unchanged)"
        }
    )?;
    for n in pview::game_notes(&p) {
        writeln!(out, "note: {n}")?;
    }
    Ok(0)
}

fn ext_is(p: &Path, ext: &str) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// An 8-bit paletted Windows BMP (BITMAPINFOHEADER, 256-colour table, rows bottom-up padded
/// to 4 bytes).
fn bmp8(width: u32, height: u32, indices: &[u8], pal: &Palette) -> Vec<u8> {
    let stride = (width as usize).div_ceil(4) * 4;
    let data_at = 14 + 40 + 1024;
    let size = data_at + stride * height as usize;
    let mut b = Vec::with_capacity(size);
    b.extend_from_slice(b"BM");
    b.extend_from_slice(&(size as u32).to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&(data_at as u32).to_le_bytes());
    b.extend_from_slice(&40u32.to_le_bytes());
    b.extend_from_slice(&(width as i32).to_le_bytes());
    b.extend_from_slice(&(height as i32).to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&8u16.to_le_bytes());
    b.extend_from_slice(&[0; 4]); // BI_RGB
    b.extend_from_slice(&((stride * height as usize) as u32).to_le_bytes());
    b.extend_from_slice(&2835u32.to_le_bytes());
    b.extend_from_slice(&2835u32.to_le_bytes());
    b.extend_from_slice(&256u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    for c in &pal.colors {
        b.extend_from_slice(&[c[2], c[1], c[0], 0]);
    }
    let w = width as usize;
    for y in (0..height as usize).rev() {
        let row = indices.get(y * w..y * w + w).unwrap_or(&[]);
        b.extend_from_slice(row);
        b.resize(b.len() + stride - row.len(), 0);
    }
    b
}

fn convert(
    file: &Path,
    target: &Path,
    format: Option<PcxFormat>,
    palette: Option<&Path>,
) -> Result<i32, CliError> {
    let format = match format {
        Some(f) => f,
        None if ext_is(target, "png") => PcxFormat::Png,
        None if ext_is(target, "gif") => PcxFormat::Gif,
        None if ext_is(target, "bmp") => PcxFormat::Bmp,
        None if ext_is(target, "pcx") => PcxFormat::Pcx,
        None => {
            return err(format!(
                "{}: the target must end in .png, .gif, .bmp or .pcx, or --format say which",
                target.display()
            ))
        }
    };
    let data = read_file(file)?;
    let lim = Limits::default();
    if format == PcxFormat::Png {
        let p = pcx::parse(&data, &lim).map_err(|e| in_file(file, e))?;
        let png = pview::image_png(&p).map_err(|e| in_file(file, e))?;
        write_bytes(target, &png)?;
        return Ok(0);
    }
    if format == PcxFormat::Gif || format == PcxFormat::Bmp {
        let p = pcx::parse(&data, &lim).map_err(|e| in_file(file, e))?;
        let Some(pal) = p.palette.as_ref().filter(|_| p.kind == PcxKind::Indexed8) else {
            return err(format!(
                "{}: a 24-bit PCX has no palette: convert it to .png",
                file.display()
            ));
        };
        let mut out = Vec::new();
        if format == PcxFormat::Gif {
            crate::view::image::write_indexed_gif(
                &mut out, p.width, p.height, &p.pixels, pal, None,
            )
            .map_err(|e| in_file(target, e))?;
        } else {
            out = bmp8(p.width, p.height, &p.pixels, pal);
        }
        write_bytes(target, &out)?;
        return Ok(0);
    }
    let img = decode_png(&data).map_err(|e| in_file(file, e))?;
    if u64::from(img.width) * u64::from(img.height) > lim.max_frame_pixels
        || img.width > u32::from(u16::MAX)
        || img.height > u32::from(u16::MAX)
    {
        return err(format!(
            "{}: {}×{} is too large for a PCX",
            file.display(),
            img.width,
            img.height
        ));
    }
    let pal = match (palette, &img.pixels) {
        (Some(p), _) => load_palette(p)?,
        (None, PngPixels::Indexed { plte, .. }) => {
            let mut colors = [[0u8; 3]; 256];
            for (c, rgb) in colors.iter_mut().zip(plte.chunks_exact(3)) {
                c.copy_from_slice(rgb);
            }
            Palette { colors }
        }
        (None, _) => Palette::ta(),
    };
    let pixels = pview::map_to_palette(&img, &pal, None);
    let p = Pcx::new(PcxKind::Indexed8, img.width, img.height, pixels, Some(pal));
    let bytes = pcx::write(&p).map_err(|e| in_file(target, e))?;
    write_bytes(target, &bytes)?;
    Ok(0)
}
