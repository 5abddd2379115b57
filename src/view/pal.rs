//! The exploded view of a palette: a TA `.pal` (256 × R, G, B, x) or a TA: Kingdoms 1×1
//! palette-carrier `.pcx` becomes `swatch.png` (16 × 16 cells), `palette.gpl` (a GIMP
//! palette, which GIMP, Krita, Aseprite and Inkscape load) and `palette.csv`
//! (`index,r,g,b` plus the fourth byte of a `.pal` entry as `extra`). Editing the CSV or
//! the swatch rebuilds the palette file; an unedited directory rebuilds identical bytes.
//! `palette.gpl` is generated only (edits to it are not read back).

use super::image::{decode_png, PngPixels};
use super::pcx::{write_rgb_png, FileListView};
use super::{FileSet, ViewError};
use crate::formats::palette::Palette;
use crate::formats::pcx::{self, PcxKind};
use crate::formats::Limits;
use std::fmt::Write as _;

/// The swatch image.
pub const SWATCH: &str = "swatch.png";
/// The GIMP palette.
pub const GPL: &str = "palette.gpl";
/// The entries as CSV.
pub const CSV: &str = "palette.csv";
/// Side of one swatch cell in pixels (the swatch is 16 cells square).
pub const CELL: u32 = 16;

/// Which file a palette lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaletteFile {
    /// A `.pal`: 1,024 bytes (and anything after them, kept as it is).
    Pal,
    /// An 8-bit `.pcx` whose trailer is the palette (TA: Kingdoms carriers are 1×1).
    Pcx,
    /// Exactly 768 bytes of R, G, B and nothing else.
    Raw,
}

/// Length of a raw palette ([`PaletteFile::Raw`]).
pub const RAW_LEN: usize = 768;

/// Which palette file a `.pcx` is by its content: a `.pal` under another name (1,024 bytes
/// that are no PCX: Cavedog's `GUIPAL.PCX` is `GUIPAL.PAL`'s bytes), a raw 768-byte
/// palette, a 1×1 carrier, or none (a picture).
pub fn pcx_palette_kind(data: &[u8], limits: &Limits) -> Option<PaletteFile> {
    // the header first: a picture is not decoded to find out it is one
    if pcx::shape(data, limits)
        .is_ok_and(|s| !(s.kind == PcxKind::Indexed8 && s.width == 1 && s.height == 1))
    {
        return None;
    }
    match pcx::parse(data, limits) {
        Ok(p) if p.kind == PcxKind::Indexed8 && p.width == 1 && p.height == 1 => {
            Some(PaletteFile::Pcx)
        }
        Ok(_) => None,
        Err(_) if data.len() == 1024 => Some(PaletteFile::Pal),
        Err(_) if data.len() == RAW_LEN => Some(PaletteFile::Raw),
        Err(_) => None,
    }
}

/// True for a PCX that only carries a palette: 8-bit, one pixel.
pub fn is_palette_carrier(data: &[u8], limits: &Limits) -> bool {
    pcx_palette_kind(data, limits) == Some(PaletteFile::Pcx)
}

/// A palette with the fourth byte of each `.pal` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entries {
    /// The colours.
    pub palette: Palette,
    /// The fourth byte of each entry (0 in Cavedog files; always 0 for a PCX).
    pub extra: [u8; 256],
}

fn decode(data: &[u8], kind: PaletteFile, limits: &Limits) -> Result<Entries, ViewError> {
    match kind {
        PaletteFile::Pal => {
            let palette =
                Palette::from_pal(data).map_err(|e| ViewError::invalid("", e.to_string()))?;
            let mut extra = [0u8; 256];
            for (x, quad) in extra.iter_mut().zip(data.chunks_exact(4)) {
                *x = quad[3];
            }
            Ok(Entries { palette, extra })
        }
        PaletteFile::Raw => {
            let rgb = <&[u8; RAW_LEN]>::try_from(data).map_err(|_| {
                ViewError::invalid(
                    "",
                    format!("{} bytes: a raw palette has {RAW_LEN}", data.len()),
                )
            })?;
            Ok(Entries {
                palette: Palette::from_rgb(rgb),
                extra: [0; 256],
            })
        }
        PaletteFile::Pcx => {
            let p = pcx::parse(data, limits).map_err(|e| ViewError::invalid("", e.to_string()))?;
            let palette = p
                .palette
                .ok_or_else(|| ViewError::invalid("", "a 24-bit PCX carries no palette"))?;
            Ok(Entries {
                palette,
                extra: [0; 256],
            })
        }
    }
}

/// The GIMP palette text: `GIMP Palette`, `Name: …`, `Columns: 16`, `#`, then one
/// `R G B<TAB>index N` line per entry.
pub fn gpl(palette: &Palette, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut s = format!("GIMP Palette\nName: {clean}\nColumns: 16\n#\n");
    for (i, c) in palette.colors.iter().enumerate() {
        let _ = writeln!(s, "{:3} {:3} {:3}\tindex {i}", c[0], c[1], c[2]);
    }
    s
}

/// The JASC-PAL text (Paint Shop Pro; read by Aseprite and most Windows tools):
/// `JASC-PAL`, `0100`, `256`, then one `R G B` line per entry, CRLF line ends.
pub fn jasc(palette: &Palette) -> String {
    let mut s = String::from("JASC-PAL\r\n0100\r\n256\r\n");
    for c in &palette.colors {
        let _ = write!(s, "{} {} {}\r\n", c[0], c[1], c[2]);
    }
    s
}

/// Reads a text palette: JASC-PAL or GIMP `.gpl`, told apart by the first line. Exactly
/// 256 colours are needed (`line` in errors is 1-based).
pub fn parse_text_palette(text: &[u8]) -> Result<Palette, String> {
    let text = std::str::from_utf8(text).map_err(|_| "not UTF-8 text".to_string())?;
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    let first = lines.next().map(|(_, l)| l).unwrap_or("");
    let jasc = match first {
        "JASC-PAL" => true,
        "GIMP Palette" => false,
        _ => return Err("neither a JASC-PAL nor a GIMP palette (first line)".into()),
    };
    if jasc {
        let (_, version) = lines.next().ok_or("JASC-PAL: version line missing")?;
        if version != "0100" {
            return Err(format!("JASC-PAL: version {version:?}, expected 0100"));
        }
        let (n, count) = lines.next().ok_or("JASC-PAL: colour count missing")?;
        if count != "256" {
            return Err(format!("line {n}: {count:?} colours; a TA palette has 256"));
        }
    }
    let mut colors = Vec::with_capacity(256);
    for (n, line) in lines {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !jasc && (line.starts_with("Name:") || line.starts_with("Columns:")) {
            continue;
        }
        let mut it = line.split_whitespace();
        let mut rgb = [0u8; 3];
        for (k, v) in rgb.iter_mut().enumerate() {
            let f = it
                .next()
                .ok_or(format!("line {n}: three numbers R G B expected"))?;
            *v = f.parse().map_err(|_| {
                format!(
                    "line {n}: {f:?} is not a number 0–255 ({})",
                    ["R", "G", "B"][k]
                )
            })?;
        }
        if jasc && it.next().is_some() {
            return Err(format!("line {n}: more than R G B"));
        }
        if colors.len() == 256 {
            return Err(format!("line {n}: more than 256 colours"));
        }
        colors.push(rgb);
    }
    let colors: [[u8; 3]; 256] = colors
        .try_into()
        .map_err(|c: Vec<[u8; 3]>| format!("{} colours; a TA palette has 256", c.len()))?;
    Ok(Palette { colors })
}

/// The CSV text (`index,r,g,b[,extra]`).
pub fn csv(e: &Entries, with_extra: bool) -> String {
    let mut s = String::from(if with_extra {
        "index,r,g,b,extra\n"
    } else {
        "index,r,g,b\n"
    });
    for (i, c) in e.palette.colors.iter().enumerate() {
        let _ = write!(s, "{i},{},{},{}", c[0], c[1], c[2]);
        if with_extra {
            let _ = write!(s, ",{}", e.extra[i]);
        }
        s.push('\n');
    }
    s
}

/// The swatch: 16 × 16 cells of [`CELL`] pixels, entry `i` at row `i / 16`, column `i % 16`.
pub fn swatch_png(palette: &Palette) -> Result<Vec<u8>, ViewError> {
    let side = 16 * CELL;
    let mut rgb = Vec::with_capacity((side * side * 3) as usize);
    for y in 0..side {
        for x in 0..side {
            let i = (y / CELL) * 16 + x / CELL;
            rgb.extend_from_slice(&palette.colors[i as usize]);
        }
    }
    let mut out = Vec::new();
    write_rgb_png(&mut out, side, side, &rgb)
        .map_err(|e| ViewError::invalid(SWATCH, format!("cannot encode PNG: {e}")))?;
    Ok(out)
}

/// The files of the view of the palette file `data`; `name` goes into the GIMP palette.
pub fn files(
    data: &[u8],
    kind: PaletteFile,
    name: &str,
    limits: &Limits,
) -> Result<Vec<(String, Vec<u8>)>, ViewError> {
    let e = decode(data, kind, limits)?;
    Ok(vec![
        (SWATCH.to_string(), swatch_png(&e.palette)?),
        (GPL.to_string(), gpl(&e.palette, name).into_bytes()),
        (
            CSV.to_string(),
            csv(&e, kind == PaletteFile::Pal).into_bytes(),
        ),
    ])
}

/// The view of the palette file `data`.
pub fn open(
    data: &[u8],
    kind: PaletteFile,
    name: &str,
    limits: &Limits,
) -> Result<FileListView, ViewError> {
    Ok(FileListView::new(files(data, kind, name, limits)?))
}

/// Reads `palette.csv`: every index 0–255 exactly once; `extra` optional (0 when absent).
pub fn parse_csv(text: &[u8]) -> Result<Entries, ViewError> {
    let err = |row: u64, column: &str, msg: String| ViewError::Csv {
        file: CSV.into(),
        row,
        column: column.into(),
        msg,
    };
    let mut rd = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(text);
    let headers = rd
        .headers()
        .map_err(|e| err(1, "header", e.to_string()))?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let (Some(ci), Some(cr), Some(cg), Some(cb)) = (col("index"), col("r"), col("g"), col("b"))
    else {
        return Err(err(
            1,
            "header",
            "expected columns index,r,g,b[,extra]".into(),
        ));
    };
    let cx = col("extra");
    let mut colors = [[0u8; 3]; 256];
    let mut extra = [0u8; 256];
    let mut seen = [false; 256];
    for (n, rec) in rd.records().enumerate() {
        let row = n as u64 + 2;
        let rec = rec.map_err(|e| err(row, "", e.to_string()))?;
        let field = |c: usize, name: &str| -> Result<u8, ViewError> {
            let v = rec.get(c).unwrap_or("");
            v.parse::<u8>()
                .map_err(|_| err(row, name, format!("{v:?} is not a number 0–255")))
        };
        let i = usize::from(field(ci, "index")?);
        if seen[i] {
            return Err(err(row, "index", format!("index {i} appears twice")));
        }
        seen[i] = true;
        colors[i] = [field(cr, "r")?, field(cg, "g")?, field(cb, "b")?];
        if let Some(c) = cx {
            extra[i] = field(c, "extra")?;
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(err(
            0,
            "index",
            format!("index {missing} is missing (all 256 entries are needed)"),
        ));
    }
    Ok(Entries {
        palette: Palette { colors },
        extra,
    })
}

/// Reads the swatch: the centre pixel of each of the 16 × 16 cells.
pub fn parse_swatch(png: &[u8]) -> Result<Palette, ViewError> {
    let img = decode_png(png).map_err(|e| ViewError::invalid(SWATCH, e))?;
    let side = 16 * CELL;
    if img.width != side || img.height != side {
        return Err(ViewError::invalid(
            SWATCH,
            format!(
                "{}×{}: the swatch must stay {side}×{side} (16 × 16 cells of {CELL} pixels)",
                img.width, img.height
            ),
        ));
    }
    let mut colors = [[0u8; 3]; 256];
    for (i, c) in colors.iter_mut().enumerate() {
        let (cx, cy) = (
            (i as u32 % 16) * CELL + CELL / 2,
            (i as u32 / 16) * CELL + CELL / 2,
        );
        let at = (cy * side + cx) as usize;
        *c = match &img.pixels {
            PngPixels::Indexed { indices, plte, .. } => {
                let o = usize::from(indices.get(at).copied().unwrap_or(0)) * 3;
                match plte.get(o..o + 3) {
                    Some(p) => [p[0], p[1], p[2]],
                    None => [0, 0, 0],
                }
            }
            PngPixels::Rgba(px) => match px.get(at * 4..at * 4 + 3) {
                Some(p) => [p[0], p[1], p[2]],
                None => [0, 0, 0],
            },
            PngPixels::Gray(px) => {
                let g = px.get(at).copied().unwrap_or(0);
                [g, g, g]
            }
        };
    }
    Ok(Palette { colors })
}

/// Rebuilds the palette file from the view's files. `base` is the file the view was made
/// from (required for a `.pcx`, whose picture and header are kept; for a `.pal` it supplies
/// the bytes after the first 1,024 and the reference to tell which file was edited).
///
/// The palette is the CSV's unless only the swatch differs from `base`; when both were
/// edited to different colours the build is refused rather than guessing. Without `base`
/// nothing tells which file was edited: the CSV decides, and the swatch is read only when
/// there is no CSV.
pub fn build(
    files: &dyn FileSet,
    kind: PaletteFile,
    base: Option<&[u8]>,
    limits: &Limits,
) -> Result<Vec<u8>, ViewError> {
    let base_entries = match base {
        Some(b) => Some(decode(b, kind, limits)?),
        None => None,
    };
    let from_csv = match files.read(CSV)? {
        Some(t) => Some(parse_csv(&t)?),
        None => None,
    };
    let from_swatch = match files.read(SWATCH)? {
        Some(_) if base.is_none() && from_csv.is_some() => None,
        Some(p) => Some(parse_swatch(&p)?),
        None => None,
    };
    let reference = base_entries
        .clone()
        .or_else(|| from_csv.clone())
        .or_else(|| {
            from_swatch.clone().map(|palette| Entries {
                palette,
                extra: [0; 256],
            })
        })
        .ok_or_else(|| ViewError::Missing {
            file: CSV.into(),
            why: "palette.csv or swatch.png is needed".into(),
        })?;
    let csv_entries = from_csv.unwrap_or_else(|| reference.clone());
    let mut result = csv_entries.clone();
    if let Some(sw) = from_swatch {
        let swatch_changed = sw != reference.palette;
        let csv_changed = csv_entries.palette != reference.palette;
        if swatch_changed {
            if csv_changed && csv_entries.palette != sw {
                return Err(ViewError::invalid(
                    SWATCH,
                    "both swatch.png and palette.csv were edited to different colours; edit one",
                ));
            }
            result.palette = sw;
        }
    }
    match kind {
        PaletteFile::Pal => {
            let mut out: Vec<u8> = result
                .palette
                .colors
                .iter()
                .zip(result.extra.iter())
                .flat_map(|(c, &x)| [c[0], c[1], c[2], x])
                .collect();
            if let Some(rest) = base.and_then(|b| b.get(1024..)) {
                out.extend_from_slice(rest);
            }
            Ok(out)
        }
        PaletteFile::Raw => Ok(result.palette.colors.concat()),
        PaletteFile::Pcx => {
            let b = base.ok_or_else(|| ViewError::Missing {
                file: String::new(),
                why: "the original .pcx (its picture and header are kept)".into(),
            })?;
            let mut p = pcx::parse(b, limits).map_err(|e| ViewError::invalid("", e.to_string()))?;
            p.palette = Some(result.palette);
            pcx::write_like(&p, b, limits).map_err(|e| ViewError::invalid("", e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::palette::TA_PALETTE_BYTES;
    use crate::view::MemFileSet;

    fn set(files: Vec<(String, Vec<u8>)>) -> MemFileSet {
        MemFileSet {
            files: files.into_iter().collect(),
        }
    }

    #[test]
    fn pal_round_trip_and_csv_edit() {
        let lim = Limits::default();
        let mut data = TA_PALETTE_BYTES.to_vec();
        data[7] = 0x55; // a non-zero fourth byte
        data.extend_from_slice(b"tail");
        let mut fs = set(files(&data, PaletteFile::Pal, "x", &lim).unwrap());
        assert_eq!(
            build(&fs, PaletteFile::Pal, Some(&data), &lim).unwrap(),
            data
        );
        assert_eq!(
            build(&fs, PaletteFile::Pal, None, &lim).unwrap(),
            data[..1024].to_vec()
        );
        let text = String::from_utf8(fs.files[CSV].clone()).unwrap();
        assert!(text.contains("\n1,128,0,0,85\n"));
        fs.files.insert(
            CSV.into(),
            text.replace("\n1,128,0,0,85\n", "\n1,1,2,3,85\n").into(),
        );
        let out = build(&fs, PaletteFile::Pal, Some(&data), &lim).unwrap();
        assert_eq!(&out[4..8], &[1, 2, 3, 0x55]);
        assert_eq!(&out[8..], &data[8..]);
    }

    #[test]
    fn swatch_edit_and_conflicts() {
        let lim = Limits::default();
        let data = TA_PALETTE_BYTES.to_vec();
        let mut fs = set(files(&data, PaletteFile::Pal, "x", &lim).unwrap());
        let mut pal = Palette::ta();
        pal.colors[17] = [9, 8, 7];
        fs.files.insert(SWATCH.into(), swatch_png(&pal).unwrap());
        let out = build(&fs, PaletteFile::Pal, Some(&data), &lim).unwrap();
        assert_eq!(&out[68..72], &[9, 8, 7, 0]);
        // The same edit in both files is accepted; different edits are refused.
        let mut e = decode(&data, PaletteFile::Pal, &lim).unwrap();
        e.palette = pal;
        fs.files.insert(CSV.into(), csv(&e, true).into_bytes());
        assert_eq!(
            build(&fs, PaletteFile::Pal, Some(&data), &lim).unwrap(),
            out
        );
        e.palette.colors[2] = [5, 5, 5];
        fs.files.insert(CSV.into(), csv(&e, true).into_bytes());
        assert!(build(&fs, PaletteFile::Pal, Some(&data), &lim).is_err());
    }

    #[test]
    fn a_pal_or_raw_palette_named_pcx_is_a_palette() {
        let lim = Limits::default();
        let opts = crate::view::ViewOptions::default();
        let pal = TA_PALETTE_BYTES.to_vec();
        let raw = Palette::ta().rgb_bytes();
        for data in [pal, raw] {
            let v = crate::view::open(crate::view::AssetKind::Pcx, &data, &opts).unwrap();
            let mut fs = MemFileSet::from_view(&*v).unwrap();
            assert!(fs.files.contains_key(CSV) && !fs.files.contains_key("image.png"));
            let kind = crate::view::AssetKind::Pcx;
            assert_eq!(
                crate::view::rebuild(kind, &fs, Some(&data), &opts).unwrap(),
                data
            );
            let text = String::from_utf8(fs.files[CSV].clone()).unwrap();
            let edited = text.replacen("\n1,128,0,0", "\n1,1,2,3", 1);
            assert_ne!(edited, text);
            fs.files.insert(CSV.into(), edited.into_bytes());
            let out = crate::view::rebuild(kind, &fs, Some(&data), &opts).unwrap();
            let step = if data.len() == 1024 { 4 } else { 3 };
            assert_eq!(&out[step..step + 3], &[1, 2, 3]);
            assert_eq!(out.len(), data.len());
            assert_eq!(out[..step], data[..step]);
            assert_eq!(out[step * 2..], data[step * 2..]);
        }
        assert!(pcx_palette_kind(&[0u8; 1000], &lim).is_none());
    }

    #[test]
    fn text_palettes_read_back() {
        let mut p = Palette::ta();
        p.colors[255] = [1, 2, 3];
        assert_eq!(parse_text_palette(jasc(&p).as_bytes()).unwrap(), p);
        assert_eq!(parse_text_palette(gpl(&p, "x").as_bytes()).unwrap(), p);
        let short = jasc(&p).replacen("1 2 3\r\n", "", 1);
        assert!(parse_text_palette(short.as_bytes()).is_err());
        assert!(parse_text_palette(b"JASC-PAL\n0100\n256\n1 2 x\n").is_err());
        assert!(parse_text_palette(b"hello").is_err());
    }

    #[test]
    fn bad_csv_rows_are_named() {
        let mut t = String::from("index,r,g,b\n");
        for i in 0..255 {
            t.push_str(&format!("{i},0,0,0\n"));
        }
        assert!(matches!(
            parse_csv(t.as_bytes()),
            Err(ViewError::Csv { .. })
        ));
        t.push_str("255,300,0,0\n");
        match parse_csv(t.as_bytes()) {
            Err(ViewError::Csv { row, column, .. }) => {
                assert_eq!((row, column.as_str()), (257, "r"))
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_csv(b"a,b\n1,2\n").is_err());
        assert!(parse_swatch(b"nope").is_err());
    }
}
