//! The exploded view of a bitmap font (`.fnt`): one greyscale PNG per glyph named after its
//! character code (`U+0041.png`: white = drawn, black = clear), `glyphs.csv` (`code,char,
//! width`), `sheet.png` (every glyph on a 16 × 16 grid) and `metadata.json` (header bytes
//! and the order of the records in the file). Editing a glyph PNG or its width rebuilds the
//! font; an unedited folder rebuilds identical bytes. `sheet.png` is generated only: no
//! build reads it.

use super::image::{decode_png, write_gray_png, PngPixels};
use super::pcx::FileListView;
use super::{FileSet, ViewError};
use crate::formats::fnt::{self, Fnt, Glyph, Piece};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The glyph table.
pub const CSV: &str = "glyphs.csv";
/// The sheet of every glyph (generated only).
pub const SHEET: &str = "sheet.png";
/// Header bytes and record layout.
pub const METADATA: &str = "metadata.json";

/// The PNG of the glyph of `code`.
pub fn glyph_name(code: u8) -> String {
    format!("U+{code:04X}.png")
}

fn from_fnt(e: fnt::FntError) -> ViewError {
    ViewError::invalid("", e.to_string())
}

/// A glyph as an 8-bit greyscale PNG.
pub fn glyph_png(g: &Glyph, height: u8) -> Result<Vec<u8>, ViewError> {
    let grey: Vec<u8> = g.pixels.iter().map(|&p| if p { 255 } else { 0 }).collect();
    let mut out = Vec::new();
    write_gray_png(&mut out, u32::from(g.width), u32::from(height), &grey)
        .map_err(|e| ViewError::invalid(glyph_name(0), format!("cannot encode PNG: {e}")))?;
    Ok(out)
}

/// The sheet: 16 × 16 cells of (widest glyph + 2) × (height + 2) pixels, code `c` at row
/// `c / 16`, column `c % 16`; each glyph's box is drawn dark grey (64) behind its pixels.
pub fn sheet(f: &Fnt) -> (u32, u32, Vec<u8>) {
    let maxw = f
        .glyphs
        .iter()
        .flatten()
        .map(|g| u32::from(g.width))
        .max()
        .unwrap_or(8);
    let (cw, ch) = (maxw + 2, u32::from(f.height) + 2);
    let (w, h) = (16 * cw, 16 * ch);
    let mut px = vec![0u8; (w * h) as usize];
    for (code, g) in f.glyphs.iter().enumerate() {
        let Some(g) = g else { continue };
        let (ox, oy) = ((code as u32 % 16) * cw + 1, (code as u32 / 16) * ch + 1);
        let gw = u32::from(g.width);
        for (i, &p) in g.pixels.iter().enumerate() {
            let (x, y) = (ox + i as u32 % gw, oy + i as u32 / gw);
            if let Some(v) = px.get_mut((y * w + x) as usize) {
                *v = if p { 255 } else { 64 };
            }
        }
    }
    (w, h, px)
}

/// The CSV text: `code,char,width` (code as `0x41`; char in Windows-1252, empty for control
/// bytes; a comma or quote is quoted).
pub fn csv(f: &Fnt) -> String {
    let mut s = String::from("code,char,width\n");
    for (code, g) in f.glyphs.iter().enumerate() {
        let Some(g) = g else { continue };
        let c = fnt::cp1252_char(code as u8)
            .map(|c| match c {
                '"' => "\"\"\"\"".to_string(),
                ',' => "\",\"".to_string(),
                c => c.to_string(),
            })
            .unwrap_or_default();
        let _ = writeln!(s, "{code:#04x},{c},{}", g.width);
    }
    s
}

fn metadata(f: &Fnt) -> Value {
    let layout = layout_strings(&f.layout);
    let tails: serde_json::Map<String, Value> = f
        .glyphs
        .iter()
        .enumerate()
        .filter_map(|(c, g)| g.as_ref().filter(|g| g.tail != 0).map(|g| (c, g.tail)))
        .map(|(c, t)| (format!("{c:#04x}"), json!(t)))
        .collect();
    let mut m = json!({
        "format": "tafs fnt view 1",
        "height": f.height,
        "baseline": f.baseline,
        "first_char": f.first_char,
        "byte1": f.byte1,
        "layout": layout,
        "padding_bits": tails,
    });
    if let Some(orig) = &f.irregular {
        m["irregular"] = json!({
            "warnings": f.warnings,
            "bytes": hex(orig),
        });
    }
    m
}

/// The layout as strings: `bytes:<hex>` for bytes no entry points at, `0x41` for the
/// record of one code, `0x41-0x5a` for consecutive such records of consecutive codes,
/// `0x41=0x61` for one record shared by several codes.
fn layout_strings(layout: &[Piece]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(u8, u8)> = None;
    let flush = |run: &mut Option<(u8, u8)>, out: &mut Vec<String>| {
        if let Some((a, b)) = run.take() {
            out.push(if a == b {
                format!("{a:#04x}")
            } else {
                format!("{a:#04x}-{b:#04x}")
            });
        }
    };
    for p in layout {
        match p {
            Piece::Record(codes) if codes.len() == 1 => {
                let c = codes[0];
                match &mut run {
                    Some((_, b)) if c.checked_sub(1) == Some(*b) => *b = c,
                    _ => {
                        flush(&mut run, &mut out);
                        run = Some((c, c));
                    }
                }
            }
            Piece::Record(codes) => {
                flush(&mut run, &mut out);
                let s: Vec<String> = codes.iter().map(|c| format!("{c:#04x}")).collect();
                out.push(s.join("="));
            }
            Piece::Bytes(b) => {
                flush(&mut run, &mut out);
                out.push(format!("bytes:{}", hex(b)));
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

fn parse_layout(items: &[Value]) -> Result<Vec<Piece>, ViewError> {
    let bad = |s: &str| {
        meta_err(format!(
            "layout: {s:?} is none of bytes:<hex>, 0x41, 0x41-0x5a, 0x41=0x61"
        ))
    };
    let mut out = Vec::new();
    for item in items {
        let s = item.as_str().ok_or_else(|| bad(&item.to_string()))?;
        if let Some(h) = s.strip_prefix("bytes:") {
            out.push(Piece::Bytes(unhex(h).ok_or_else(|| bad(s))?));
        } else if let Some((a, b)) = s.split_once('-') {
            let (a, b) = (
                parse_code(a).ok_or_else(|| bad(s))?,
                parse_code(b).ok_or_else(|| bad(s))?,
            );
            if a > b {
                return Err(bad(s));
            }
            out.extend((a..=b).map(|c| Piece::Record(vec![c])));
        } else {
            let codes = s
                .split('=')
                .map(parse_code)
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| bad(s))?;
            out.push(Piece::Record(codes));
        }
    }
    Ok(out)
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, v| {
        let _ = write!(s, "{v:02x}");
        s
    })
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

/// The files of the view of `f`.
pub fn files_of(f: &Fnt) -> Result<Vec<(String, Vec<u8>)>, ViewError> {
    let mut out = Vec::new();
    for (code, g) in f.glyphs.iter().enumerate() {
        if let Some(g) = g {
            out.push((glyph_name(code as u8), glyph_png(g, f.height)?));
        }
    }
    out.push((CSV.to_string(), csv(f).into_bytes()));
    let (w, h, px) = sheet(f);
    let mut png = Vec::new();
    write_gray_png(&mut png, w, h, &px)
        .map_err(|e| ViewError::invalid(SHEET, format!("cannot encode PNG: {e}")))?;
    out.push((SHEET.to_string(), png));
    let meta = serde_json::to_vec_pretty(&metadata(f))
        .map_err(|e| ViewError::invalid(METADATA, e.to_string()))?;
    out.push((METADATA.to_string(), meta));
    Ok(out)
}

/// The view of the font `data`.
pub fn open(data: &[u8]) -> Result<FileListView, ViewError> {
    let f = fnt::parse(data).map_err(from_fnt)?;
    Ok(FileListView::new(files_of(&f)?))
}

/// Reads a glyph PNG: a pixel is drawn when it is light (grey ≥ 128) and opaque (alpha ≥
/// 128). Returns width and pixels.
pub fn read_glyph_png(name: &str, png: &[u8], height: u8) -> Result<(u8, Vec<bool>), ViewError> {
    let img = decode_png(png).map_err(|e| ViewError::invalid(name, e))?;
    if img.height != u32::from(height) {
        return Err(ViewError::invalid(
            name,
            format!(
                "{} rows: every glyph is {height} rows high (the font's height, metadata.json)",
                img.height
            ),
        ));
    }
    let width = u8::try_from(img.width)
        .ok()
        .filter(|&w| w > 0)
        .ok_or_else(|| {
            ViewError::invalid(name, format!("{} pixels wide: a glyph is 1–255", img.width))
        })?;
    let n = img.width as usize * img.height as usize;
    let light = |r: u8, g: u8, b: u8, a: u8| {
        a >= 128 && (u16::from(r) + u16::from(g) + u16::from(b)) >= 384
    };
    let pixels: Vec<bool> = match &img.pixels {
        PngPixels::Gray(px) => px.iter().take(n).map(|&v| v >= 128).collect(),
        PngPixels::Rgba(px) => px
            .chunks_exact(4)
            .take(n)
            .map(|p| light(p[0], p[1], p[2], p[3]))
            .collect(),
        PngPixels::Indexed {
            indices,
            plte,
            trns,
        } => indices
            .iter()
            .take(n)
            .map(|&i| {
                let i = usize::from(i);
                let c = plte.get(i * 3..i * 3 + 3).unwrap_or(&[0, 0, 0]);
                light(c[0], c[1], c[2], trns.get(i).copied().unwrap_or(255))
            })
            .collect(),
    };
    if pixels.len() != n {
        return Err(ViewError::invalid(name, "fewer pixels than its size"));
    }
    Ok((width, pixels))
}

fn meta_err(msg: impl Into<String>) -> ViewError {
    ViewError::invalid(METADATA, msg)
}

fn parse_metadata(text: &[u8]) -> Result<Fnt, ViewError> {
    let m: Value = serde_json::from_slice(text).map_err(|e| meta_err(e.to_string()))?;
    let num = |k: &str| {
        m.get(k)
            .and_then(Value::as_i64)
            .ok_or_else(|| meta_err(format!("{k}: a number is needed")))
    };
    let byte = |k: &str, lo: i64, hi: i64| -> Result<i64, ViewError> {
        let v = num(k)?;
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(meta_err(format!("{k}: {v} is outside {lo}–{hi}")))
        }
    };
    let mut f = Fnt::new(byte("height", 1, 255)? as u8);
    f.baseline = byte("baseline", -128, 127)? as i8;
    f.first_char = byte("first_char", 0, 255)? as u8;
    f.byte1 = byte("byte1", 0, 255)? as u8;
    if let Some(items) = m.get("layout").and_then(Value::as_array) {
        f.layout = parse_layout(items)?;
    }
    if let Some(orig) = m
        .get("irregular")
        .and_then(|i| i.get("bytes"))
        .and_then(Value::as_str)
    {
        f.irregular = Some(unhex(orig).ok_or_else(|| meta_err("irregular.bytes must be hex"))?);
    }
    if let Some(t) = m.get("padding_bits").and_then(Value::as_object) {
        // applied to the glyphs once they are read
        for (k, v) in t {
            let code =
                parse_code(k).ok_or_else(|| meta_err(format!("padding_bits: {k:?} is no code")))?;
            let bits = v
                .as_u64()
                .and_then(|b| u8::try_from(b).ok())
                .ok_or_else(|| meta_err("padding_bits: 0–255"))?;
            f.glyphs[usize::from(code)] = Some(Glyph {
                width: 0,
                pixels: Vec::new(),
                tail: bits,
            });
        }
    }
    Ok(f)
}

fn parse_code(s: &str) -> Option<u8> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u8::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Reads `glyphs.csv`: code → width.
fn parse_csv(text: &[u8]) -> Result<Vec<(u8, u8)>, ViewError> {
    let err = |row: u64, column: &str, msg: String| ViewError::Csv {
        file: CSV.into(),
        row,
        column: column.into(),
        msg,
    };
    let mut rd = ::csv::ReaderBuilder::new()
        .trim(::csv::Trim::Headers)
        .flexible(true)
        .from_reader(text);
    let headers = rd
        .headers()
        .map_err(|e| err(1, "header", e.to_string()))?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let (Some(cc), Some(cw)) = (col("code"), col("width")) else {
        return Err(err(1, "header", "expected columns code,char,width".into()));
    };
    let mut seen = [false; 256];
    let mut out = Vec::new();
    for (n, rec) in rd.records().enumerate() {
        let row = n as u64 + 2;
        let rec = rec.map_err(|e| err(row, "", e.to_string()))?;
        let v = rec.get(cc).unwrap_or("");
        let code = parse_code(v)
            .ok_or_else(|| err(row, "code", format!("{v:?} is not a code 0x00–0xff")))?;
        if std::mem::replace(&mut seen[usize::from(code)], true) {
            return Err(err(row, "code", format!("{code:#04x} appears twice")));
        }
        let v = rec.get(cw).unwrap_or("").trim();
        let width = v
            .parse::<u8>()
            .ok()
            .filter(|&w| w > 0)
            .ok_or_else(|| err(row, "width", format!("{v:?} is not a width 1–255")))?;
        out.push((code, width));
    }
    Ok(out)
}

/// Rebuilds the font from the view's files. `base` is the font the view was made from,
/// when known: it tells, for a glyph whose PNG width and CSV width disagree, which of the two
/// was edited (the CSV's new width crops or pads the glyph on the right with clear pixels;
/// a PNG of a new width sets it). Without `base` the two must agree.
pub fn build(files: &dyn FileSet, base: Option<&[u8]>) -> Result<Vec<u8>, ViewError> {
    let meta = files.read(METADATA)?.ok_or_else(|| ViewError::Missing {
        file: METADATA.into(),
        why: "the font's header".into(),
    })?;
    let mut f = parse_metadata(&meta)?;
    let tails: Vec<u8> = f
        .glyphs
        .iter()
        .map(|g| g.as_ref().map_or(0, |g| g.tail))
        .collect();
    f.glyphs = vec![None; 256];
    let base = match base {
        Some(b) => Some(fnt::parse(b).map_err(from_fnt)?),
        None => None,
    };
    let text = files.read(CSV)?.ok_or_else(|| ViewError::Missing {
        file: CSV.into(),
        why: "the glyph list".into(),
    })?;
    let rows = parse_csv(&text)?;
    let mut listed = [false; 256];
    for (code, csv_w) in rows {
        listed[usize::from(code)] = true;
        let name = glyph_name(code);
        let png = files.read(&name)?.ok_or_else(|| ViewError::Missing {
            file: name.clone(),
            why: format!("glyphs.csv lists {code:#04x}"),
        })?;
        let (png_w, mut pixels) = read_glyph_png(&name, &png, f.height)?;
        let old_w = base.as_ref().and_then(|b| b.glyph(code)).map(|g| g.width);
        let width = if png_w == csv_w {
            csv_w
        } else {
            match old_w {
                Some(o) if o == png_w => {
                    // the CSV's width was edited: crop or pad on the right
                    let (h, pw, cw) = (usize::from(f.height), usize::from(png_w), usize::from(csv_w));
                    pixels = (0..h * cw)
                        .map(|i| {
                            let (x, y) = (i % cw, i / cw);
                            x < pw && pixels.get(y * pw + x).copied().unwrap_or(false)
                        })
                        .collect();
                    csv_w
                }
                Some(o) if o == csv_w => png_w,
                _ => {
                    return Err(ViewError::invalid(
                        &name,
                        format!(
                            "{png_w} pixels wide but glyphs.csv says width {csv_w}: change one of the two"
                        ),
                    ))
                }
            }
        };
        let old_tail = tails.get(usize::from(code)).copied().unwrap_or(0);
        let tail = if old_w == Some(width) || base.is_none() {
            old_tail
        } else {
            0
        };
        f.glyphs[usize::from(code)] = Some(Glyph {
            width,
            pixels,
            tail,
        });
    }
    // a glyph PNG put in without a row is a new glyph
    for (name, is_dir) in files.list("")?.unwrap_or_default() {
        let code = name
            .strip_prefix("U+00")
            .and_then(|r| r.strip_suffix(".png"))
            .filter(|h| h.len() == 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        let Some(code) = code.filter(|&c| !is_dir && !listed[usize::from(c)]) else {
            continue;
        };
        let png = files.read(&name)?.unwrap_or_default();
        let (width, pixels) = read_glyph_png(&name, &png, f.height)?;
        f.glyphs[usize::from(code)] = Some(Glyph {
            width,
            pixels,
            tail: 0,
        });
    }
    fnt::write(&f).map_err(from_fnt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::MemFileSet;

    fn sample() -> Vec<u8> {
        let mut f = Fnt::new(4);
        f.layout.push(Piece::Bytes(vec![2, 0xF0]));
        for c in [b'A', b'B', b','] {
            f.glyphs[usize::from(c)] = Some(Glyph {
                width: 3,
                pixels: (0..12).map(|i| (i + usize::from(c)) % 2 == 0).collect(),
                tail: 0,
            });
            f.layout.push(Piece::Record(vec![c]));
        }
        fnt::write(&f).unwrap()
    }

    #[test]
    fn round_trip_and_edits() {
        let data = sample();
        let v = open(&data).unwrap();
        let mut fs = MemFileSet {
            files: v.files().iter().cloned().collect(),
        };
        assert_eq!(build(&fs, Some(&data)).unwrap(), data);
        assert_eq!(build(&fs, None).unwrap(), data);
        let text = String::from_utf8(fs.files[CSV].clone()).unwrap();
        assert!(text.contains("0x2c,\",\",3\n"), "{text}");
        // width in the CSV: B padded to 5
        fs.files.insert(
            CSV.into(),
            text.replace("0x42,B,3", "0x42,B,5").into_bytes(),
        );
        let out = fnt::parse(&build(&fs, Some(&data)).unwrap()).unwrap();
        let b = out.glyph(b'B').unwrap();
        assert_eq!(b.width, 5);
        assert!(!b.pixels[3] && !b.pixels[4]);
        assert!(
            build(&fs, None).is_err(),
            "without a base the widths must agree"
        );
        // a new PNG of A, 2 wide, all drawn
        fs.files.insert(CSV.into(), text.into_bytes());
        let mut png = Vec::new();
        write_gray_png(&mut png, 2, 4, &[255; 8]).unwrap();
        fs.files.insert(glyph_name(b'A'), png);
        let out = fnt::parse(&build(&fs, Some(&data)).unwrap()).unwrap();
        assert_eq!(out.glyph(b'A').unwrap().pixels, vec![true; 8]);
        assert_eq!(out.glyph(b'B'), fnt::parse(&data).unwrap().glyph(b'B'));
        // a wrong height is refused
        let mut png = Vec::new();
        write_gray_png(&mut png, 3, 5, &[0; 15]).unwrap();
        fs.files.insert(glyph_name(b'B'), png);
        assert!(build(&fs, Some(&data)).is_err());
    }
}
