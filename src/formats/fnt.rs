//! Total Annihilation bitmap fonts (`.fnt`): 1 bit per pixel, variable width, one glyph per
//! 8-bit character code.
//!
//! Layout (every offset from the first byte of the file):
//! - byte 0: glyph height in rows, shared by every glyph; byte 1: unused by the game (kept);
//!   byte 2: baseline (signed, rows above the pen); byte 3: first character code of the
//!   offset table (0 in every retail font).
//! - from byte 4: `256 - first` little-endian u16 glyph offsets; 0 = no glyph.
//! - a glyph record: a width byte (1–255), then `width × height` bits, most significant bit
//!   first, packed continuously across rows, the last byte padded.
//!
//! Retail fonts keep one record that no table entry points at between the table and the
//! first glyph (a box drawn for missing characters); it is kept as bytes, like anything else
//! no entry points at. A font is *regular* when every non-zero entry points past the table
//! at a whole record and no two records overlap: such a font is rebuilt record by record, so
//! a glyph may change size. Any other font decodes what it can ([`Fnt::warnings`]) and is
//! rebuilt only unchanged.

use super::bytes::Bytes;

/// Bytes before the offset table.
pub const HEADER_LEN: usize = 4;

/// Why a font could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FntError {
    /// The header or offset table is cut short or invalid.
    #[error("fnt: {what} at offset {offset:#x}: {msg}")]
    Structure {
        /// The structure (header, offset table, glyph record).
        what: &'static str,
        /// Byte offset of the structure.
        offset: usize,
        /// What is wrong.
        msg: String,
    },
    /// The model cannot be written as a font.
    #[error("fnt: {0}")]
    Write(String),
}

fn structure(what: &'static str, offset: usize, msg: impl Into<String>) -> FntError {
    FntError::Structure {
        what,
        offset,
        msg: msg.into(),
    }
}

/// One glyph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glyph {
    /// Width in pixels, also the pen advance (1–255).
    pub width: u8,
    /// `width × height` pixels, row by row; true = drawn.
    pub pixels: Vec<bool>,
    /// The padding bits after the last pixel in the record's last byte, as stored (low
    /// bits); written back while the width and height are unchanged.
    pub tail: u8,
}

/// A piece of the file after the offset table, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes no table entry points at, kept verbatim.
    Bytes(Vec<u8>),
    /// One glyph record and the character codes whose entries point at it.
    Record(Vec<u8>),
}

/// A decoded font.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fnt {
    /// Glyph height in rows (header byte 0).
    pub height: u8,
    /// Header byte 1 (unused by the game).
    pub byte1: u8,
    /// Header byte 2: rows the glyphs reach above the pen.
    pub baseline: i8,
    /// Header byte 3: the character code of the first table entry.
    pub first_char: u8,
    /// The glyph of each character code (256 entries), `None` where there is none.
    pub glyphs: Vec<Option<Glyph>>,
    /// How the records lay in the file, for a rebuild that moves nothing unedited; empty
    /// for a new font.
    pub layout: Vec<Piece>,
    /// For an irregular font (see the module docs): its bytes, the only ones it rebuilds to.
    pub irregular: Option<Vec<u8>>,
    /// What was skipped or odd while reading, one message per entry.
    pub warnings: Vec<String>,
}

impl Fnt {
    /// An empty font of `height` rows.
    pub fn new(height: u8) -> Fnt {
        Fnt {
            height,
            byte1: 0,
            baseline: 0,
            first_char: 0,
            glyphs: vec![None; 256],
            layout: Vec::new(),
            irregular: None,
            warnings: Vec::new(),
        }
    }

    /// Number of defined glyphs.
    pub fn glyph_count(&self) -> usize {
        self.glyphs.iter().filter(|g| g.is_some()).count()
    }

    /// The glyph of `code`.
    pub fn glyph(&self, code: u8) -> Option<&Glyph> {
        self.glyphs.get(usize::from(code)).and_then(|g| g.as_ref())
    }
}

/// Bytes of a record of `width` × `height` pixels, width byte included.
pub fn record_len(width: u8, height: u8) -> usize {
    1 + (usize::from(width) * usize::from(height)).div_ceil(8)
}

/// Decodes the record at `off`, or says why not.
fn decode_record(b: &Bytes<'_>, off: usize, height: u8) -> Result<Glyph, String> {
    let width = b.u8(off as u64).map_err(|_| {
        format!(
            "offset {off:#x} is past the end of the font ({} bytes)",
            b.len()
        )
    })?;
    if width == 0 {
        return Err(format!("width 0 at offset {off:#x}"));
    }
    let n = record_len(width, height) - 1;
    let bits = b.slice(off as u64 + 1, n as u64).map_err(|_| {
        format!(
            "record at offset {off:#x} needs {n} bitmap bytes, the font ends {} bytes after it",
            b.len().saturating_sub(off + 1)
        )
    })?;
    let count = usize::from(width) * usize::from(height);
    let pixels: Vec<bool> = (0..count)
        .map(|i| bits.get(i / 8).is_some_and(|v| v & (0x80 >> (i % 8)) != 0))
        .collect();
    let pad = (8 - count % 8) % 8;
    let tail = match bits.last() {
        Some(&last) if pad > 0 => last & ((1u8 << pad) - 1),
        _ => 0,
    };
    Ok(Glyph {
        width,
        pixels,
        tail,
    })
}

/// Decodes a font. Only a cut-short header or table, or a height of 0, is an error; glyphs
/// that cannot be decoded are left out and named in [`Fnt::warnings`].
pub fn parse(data: &[u8]) -> Result<Fnt, FntError> {
    let b = Bytes::new(data);
    let head: [u8; HEADER_LEN] = b
        .array(0)
        .map_err(|_| structure("header", 0, format!("{} bytes, needs 4", data.len())))?;
    let [height, byte1, baseline, first_char] = head;
    if height == 0 {
        return Err(structure("header", 0, "glyph height 0"));
    }
    let entries = 256 - usize::from(first_char);
    let table_end = HEADER_LEN + 2 * entries;
    if data.len() < table_end {
        return Err(structure(
            "offset table",
            HEADER_LEN,
            format!(
                "{entries} entries need the font to be {table_end} bytes, it has {}",
                data.len()
            ),
        ));
    }
    let mut f = Fnt::new(height);
    f.byte1 = byte1;
    f.baseline = baseline as i8;
    f.first_char = first_char;
    let mut regular = true;
    // record offset → (end, codes)
    let mut records: std::collections::BTreeMap<usize, (usize, Vec<u8>)> = Default::default();
    for i in 0..entries {
        let code = (usize::from(first_char) + i) as u8;
        let off = b
            .u16((HEADER_LEN + 2 * i) as u64)
            .map_err(|e| structure("offset table", HEADER_LEN + 2 * i, e.to_string()))?;
        let off = usize::from(off);
        if off == 0 {
            continue;
        }
        match decode_record(&b, off, height) {
            Ok(g) => {
                if off < table_end {
                    regular = false;
                    f.warnings.push(format!(
                        "glyph {code:#04x}: offset {off:#x} points into the {table_end}-byte header and table"
                    ));
                }
                let end = off + record_len(g.width, height);
                records.entry(off).or_insert((end, Vec::new())).1.push(code);
                f.glyphs[usize::from(code)] = Some(g);
            }
            Err(why) => {
                regular = false;
                f.warnings.push(format!("glyph {code:#04x}: {why}"));
            }
        }
    }
    let mut pos = table_end;
    let mut layout = Vec::new();
    for (&off, (end, codes)) in &records {
        if off < pos {
            regular = false;
            break;
        }
        if off > pos {
            layout.push(Piece::Bytes(data[pos..off].to_vec()));
        }
        layout.push(Piece::Record(codes.clone()));
        pos = *end;
    }
    if regular {
        if let Some(rest) = data.get(pos..).filter(|r| !r.is_empty()) {
            layout.push(Piece::Bytes(rest.to_vec()));
        }
        f.layout = layout;
    } else {
        f.irregular = Some(data.to_vec());
    }
    Ok(f)
}

fn encode_record(g: &Glyph, height: u8, code: u8, out: &mut Vec<u8>) -> Result<(), FntError> {
    let count = usize::from(g.width) * usize::from(height);
    if g.width == 0 {
        return Err(FntError::Write(format!("glyph {code:#04x}: width 0")));
    }
    if g.pixels.len() != count {
        return Err(FntError::Write(format!(
            "glyph {code:#04x}: {} pixels, {}×{height} needs {count}",
            g.pixels.len(),
            g.width
        )));
    }
    out.push(g.width);
    let start = out.len();
    out.resize(start + count.div_ceil(8), 0);
    let bits = &mut out[start..];
    for (i, _) in g.pixels.iter().enumerate().filter(|(_, p)| **p) {
        if let Some(v) = bits.get_mut(i / 8) {
            *v |= 0x80 >> (i % 8);
        }
    }
    let pad = (8 - count % 8) % 8;
    if pad > 0 {
        if let Some(last) = bits.last_mut() {
            *last |= g.tail & ((1u8 << pad) - 1);
        }
    }
    Ok(())
}

/// Writes a font. A regular font's pieces are written in their order, each record from its
/// glyph (so an unedited font gives back its bytes, and an edit moves only what follows it);
/// glyphs with no record, and glyphs that no longer equal the others sharing their record,
/// are appended. An irregular font is written only unchanged.
pub fn write(f: &Fnt) -> Result<Vec<u8>, FntError> {
    if f.glyphs.len() != 256 {
        return Err(FntError::Write(format!(
            "{} glyph slots, expected 256",
            f.glyphs.len()
        )));
    }
    if let Some(orig) = &f.irregular {
        let same = parse(orig).is_ok_and(|o| {
            (o.height, o.byte1, o.baseline, o.first_char, &o.glyphs)
                == (f.height, f.byte1, f.baseline, f.first_char, &f.glyphs)
        });
        if same {
            return Ok(orig.clone());
        }
        return Err(FntError::Write(
            "this font's table points into its header, past its end or into overlapping records; it can only be rebuilt unchanged".into(),
        ));
    }
    if f.height == 0 {
        return Err(FntError::Write("glyph height 0".into()));
    }
    if let Some(c) = (0..usize::from(f.first_char)).find(|&c| f.glyphs[c].is_some()) {
        return Err(FntError::Write(format!(
            "glyph {c:#04x} is below the table's first character code {:#04x}",
            f.first_char
        )));
    }
    let entries = 256 - usize::from(f.first_char);
    let table_end = HEADER_LEN + 2 * entries;
    let mut out = vec![f.height, f.byte1, f.baseline as u8, f.first_char];
    out.resize(table_end, 0);
    let mut offsets = [0usize; 256];
    let mut placed = [false; 256];
    for piece in &f.layout {
        match piece {
            Piece::Bytes(b) => out.extend_from_slice(b),
            Piece::Record(codes) => {
                let live: Vec<u8> = codes
                    .iter()
                    .copied()
                    .filter(|&c| f.glyphs[usize::from(c)].is_some())
                    .collect();
                let Some(&c0) = live.first() else { continue };
                let g0 = f.glyphs[usize::from(c0)].as_ref();
                let at = out.len();
                if let Some(g) = g0 {
                    encode_record(g, f.height, c0, &mut out)?;
                }
                for c in live {
                    if f.glyphs[usize::from(c)].as_ref() == g0 {
                        offsets[usize::from(c)] = at;
                        placed[usize::from(c)] = true;
                    }
                }
            }
        }
    }
    for code in 0..256 {
        if let (Some(g), false) = (&f.glyphs[code], placed[code]) {
            offsets[code] = out.len();
            encode_record(g, f.height, code as u8, &mut out)?;
        }
    }
    for (code, &at_byte) in offsets.iter().enumerate().skip(usize::from(f.first_char)) {
        if f.glyphs[code].is_none() {
            continue;
        }
        let off = u16::try_from(at_byte).map_err(|_| {
            FntError::Write(format!(
                "glyph {code:#04x} would start at byte {at_byte}, past the 65,535 a 16-bit offset reaches"
            ))
        })?;
        let at = HEADER_LEN + 2 * (code - usize::from(f.first_char));
        out[at..at + 2].copy_from_slice(&off.to_le_bytes());
    }
    Ok(out)
}

/// Windows-1252 (the game's code page) for the bytes 0x80–0x9F; 0 = unassigned.
const CP1252_HIGH: [u32; 32] = [
    0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
    0x0152, 0, 0x017D, 0, 0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC,
    0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
];

/// The character of byte `code` in Windows-1252, `None` for control and unassigned bytes.
pub fn cp1252_char(code: u8) -> Option<char> {
    match code {
        0x20..=0x7E | 0xA0..=0xFF => Some(char::from(code)),
        0x80..=0x9F => CP1252_HIGH
            .get(usize::from(code - 0x80))
            .filter(|&&u| u != 0)
            .and_then(|&u| char::from_u32(u)),
        _ => None,
    }
}

/// Text as Windows-1252 bytes; a character with no byte becomes `?`.
pub fn encode_cp1252(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match u32::from(c) {
            u @ (0..=0x7F | 0xA0..=0xFF) => u as u8,
            u => CP1252_HIGH
                .iter()
                .position(|&h| h == u && h != 0)
                .map_or(b'?', |i| 0x80 + i as u8),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glyph(width: u8, height: u8, seed: usize) -> Glyph {
        let n = usize::from(width) * usize::from(height);
        Glyph {
            width,
            pixels: (0..n).map(|i| (i * 7 + seed) % 3 == 0).collect(),
            tail: 0,
        }
    }

    /// A font laid out like Cavedog's: a box record before the first glyph.
    fn sample() -> Vec<u8> {
        let mut f = Fnt::new(5);
        f.baseline = 1;
        f.layout.push(Piece::Bytes(vec![3, 0xFF, 0x80]));
        for c in b'A'..=b'C' {
            f.glyphs[usize::from(c)] = Some(glyph(3 + c - b'A', 5, usize::from(c)));
            f.layout.push(Piece::Record(vec![c]));
        }
        write(&f).unwrap()
    }

    #[test]
    fn round_trip_and_edits() {
        let data = sample();
        assert_eq!(data.len(), 516 + 3 + (1 + 2) + (1 + 3) + (1 + 4));
        let f = parse(&data).unwrap();
        assert!(f.irregular.is_none() && f.warnings.is_empty());
        assert_eq!(f.glyph_count(), 3);
        assert_eq!(u16::from_le_bytes([data[4 + 130], data[5 + 130]]), 519);
        assert_eq!(write(&f).unwrap(), data);
        // widen B: C moves by one byte, A and the box stay
        let mut e = f.clone();
        e.glyphs[usize::from(b'B')] = Some(glyph(6, 5, 1));
        let out = write(&e).unwrap();
        assert_eq!(out[..4 + 2 * 67], data[..4 + 2 * 67]); // table up to C's entry
        assert_eq!(out[516..522], data[516..522]); // the box and A
        assert_eq!(u16::from_le_bytes([out[4 + 134], out[5 + 134]]), 527);
        let back = parse(&out).unwrap();
        assert_eq!(back.glyphs, e.glyphs);
        assert_eq!(out.len(), data.len() + 1);
        // a new glyph is appended, a removed one leaves no record
        e.glyphs[usize::from(b'z')] = Some(glyph(2, 5, 0));
        e.glyphs[usize::from(b'A')] = None;
        let back = parse(&write(&e).unwrap()).unwrap();
        assert_eq!(back.glyphs, e.glyphs);
    }

    #[test]
    fn padding_bits_are_kept() {
        let mut data = sample();
        let last = data.len() - 1; // C: 5×5 = 25 bits, 7 padding bits
        data[last] |= 0x55;
        let f = parse(&data).unwrap();
        assert_eq!(write(&f).unwrap(), data);
    }

    #[test]
    fn irregular_fonts_decode_and_rebuild_only_unchanged() {
        let mut data = sample();
        // 'D' points into the header; 'E' past the end; 'F' at a width-0 byte
        data[4 + 2 * 68..4 + 2 * 68 + 2].copy_from_slice(&2u16.to_le_bytes());
        data[4 + 2 * 69..4 + 2 * 69 + 2].copy_from_slice(&9000u16.to_le_bytes());
        data.push(0);
        let z = (data.len() - 1) as u16;
        data[4 + 2 * 70..4 + 2 * 70 + 2].copy_from_slice(&z.to_le_bytes());
        let f = parse(&data).unwrap();
        assert!(f.irregular.is_some());
        assert_eq!(f.warnings.len(), 3);
        assert_eq!(write(&f).unwrap(), data);
        let mut e = f.clone();
        e.glyphs[usize::from(b'A')] = Some(glyph(3, 5, 9));
        assert!(write(&e).is_err());
    }

    #[test]
    fn bad_headers_are_errors() {
        assert!(parse(&[]).is_err());
        assert!(parse(&[0, 0, 0, 0]).is_err());
        assert!(parse(&[5, 0, 0, 0, 1, 2]).is_err());
        // a shortened table (first char 0xFE: 2 entries)
        let mut d = vec![2, 0, 0, 0xFE, 8, 0, 0, 0, 1, 0xC0];
        let f = parse(&d).unwrap();
        assert_eq!(f.glyph(0xFE).unwrap().pixels, vec![true, true]);
        assert_eq!(write(&f).unwrap(), d);
        d[3] = 0xFF;
        assert!(parse(&d).is_ok());
    }

    #[test]
    fn mutated_fonts_parse_or_fail_and_rebuild_identically() {
        let base = sample();
        let mut seed = 0x2545_f491_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as usize
        };
        for _ in 0..3000 {
            let mut d = base.clone();
            for _ in 0..1 + next() % 4 {
                let at = next() % d.len();
                d[at] = next() as u8;
            }
            if next() % 5 == 0 {
                d.truncate(next() % d.len());
            }
            if let Ok(f) = parse(&d) {
                assert_eq!(write(&f).unwrap(), d);
            }
        }
    }

    #[test]
    fn code_page() {
        assert_eq!(cp1252_char(0x80), Some('€'));
        assert_eq!(cp1252_char(0x81), None);
        assert_eq!(cp1252_char(b'A'), Some('A'));
        assert_eq!(encode_cp1252("A€é☃"), vec![b'A', 0x80, 0xE9, b'?']);
    }
}
