//! The GAF block layout in a dump's metadata.json, and the index choices that keep an
//! editor's re-save of unedited frames byte-identical.
//!
//! ```text
//! "layout": {
//!   "end": 12166,                       end of the furthest block; trailing bytes follow
//!   "sequences": ["12166: 52>76+3416 3492>3516[3524>3548+40 3588>3612+40]"],
//!   "filler": [{"offset": 10230, "hex": "0000"}],   bytes outside every block
//!   "checks": ["52+24:1a2b3c4d"]        CRC-32 of shared or overlapping blocks
//! }
//! ```
//!
//! A sequence string is `HEADER: frame frame …`, one frame per frame-list item: a simple
//! frame is `HEADER>DATA+LEN` (frame header offset, payload offset and length), a composite
//! `HEADER>TABLE[layer layer …]`. All numbers are decimal byte offsets.

use crate::formats::gaf::{
    rle, Check, Content, Filler, Frame, FrameSlot, Gaf, Layout, SequenceSlot, SlotBody,
};
use crate::formats::palette::Palette;
use crate::view::tnt::FillerMeta;
use crate::view::ViewError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

const METADATA: &str = "metadata.json";
/// Largest `layout.end` accepted from a metadata.json (far above any real GAF).
pub const MAX_LAYOUT_END: u64 = 1 << 30;
/// Deepest layer nesting a layout string may describe.
const MAX_DEPTH: usize = 64;

/// The `layout` object of a GAF dump's metadata.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutMeta {
    /// End of the furthest block (the trailing bytes follow).
    pub end: u64,
    /// One string per sequence (see the module comment).
    pub sequences: Vec<String>,
    /// Bytes outside every block before `end`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filler: Vec<FillerMeta>,
    /// `OFFSET+LEN:CRC32` of every block referenced more than once or overlapping another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Stored RLE rows that tafs's encoder would write differently, keyed by frame position
    /// (`SEQUENCE.FRAME`, then `.LAYER` per nesting level, 0-based): `ROW:HEX` (the row with
    /// its byte count). Build uses a row only while its pixels are unchanged.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rle_rows: BTreeMap<String, Vec<String>>,
}

use crate::view::csv::{hex, unhex};

fn frame_text(f: &FrameSlot, out: &mut String, depth: usize) {
    let _ = write!(out, "{}>{}", f.header, f.data);
    match &f.body {
        SlotBody::Payload(len) => {
            let _ = write!(out, "+{len}");
        }
        SlotBody::Layers(l) => {
            out.push('[');
            for (k, c) in l.iter().enumerate() {
                if k > 0 {
                    out.push(' ');
                }
                if depth < MAX_DEPTH {
                    frame_text(c, out, depth + 1);
                }
            }
            out.push(']');
        }
    }
}

/// The text form of one sequence's slots.
pub fn sequence_text(s: &SequenceSlot) -> String {
    let mut out = format!("{}:", s.offset);
    for f in &s.frames {
        out.push(' ');
        frame_text(f, &mut out, 0);
    }
    out
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn num(&mut self) -> Option<u64> {
        self.ws();
        let start = self.i;
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        std::str::from_utf8(self.s.get(start..self.i)?)
            .ok()?
            .parse()
            .ok()
    }

    fn frames(&mut self, depth: usize) -> Option<Vec<FrameSlot>> {
        let mut v = Vec::new();
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            v.push(self.frame(depth)?);
        }
        Some(v)
    }

    fn frame(&mut self, depth: usize) -> Option<FrameSlot> {
        let header = u32::try_from(self.num()?).ok()?;
        self.eat(b'>')?;
        let data = u32::try_from(self.num()?).ok()?;
        let body = match self.peek()? {
            b'+' => {
                self.i += 1;
                SlotBody::Payload(self.num()?)
            }
            b'[' if depth < MAX_DEPTH => {
                self.i += 1;
                let l = self.frames(depth + 1)?;
                self.eat(b']')?;
                SlotBody::Layers(l)
            }
            _ => return None,
        };
        Some(FrameSlot { header, data, body })
    }
}

/// Reads one sequence string; `None` when it is not in the form [`sequence_text`] writes.
pub fn parse_sequence_text(text: &str) -> Option<SequenceSlot> {
    let (off, rest) = text.split_once(':')?;
    let offset = off.trim().parse().ok()?;
    let mut c = Cursor {
        s: rest.as_bytes(),
        i: 0,
    };
    let frames = c.frames(0)?;
    c.ws();
    (c.i == c.s.len()).then_some(SequenceSlot { offset, frames })
}

impl From<&Layout> for LayoutMeta {
    fn from(l: &Layout) -> LayoutMeta {
        LayoutMeta {
            end: l.end,
            sequences: l.sequences.iter().map(sequence_text).collect(),
            filler: l
                .filler
                .iter()
                .map(|f| FillerMeta {
                    offset: f.offset,
                    hex: hex(&f.bytes),
                })
                .collect(),
            checks: l
                .checks
                .iter()
                .map(|c| format!("{}+{}:{:08x}", c.offset, c.len, c.crc))
                .collect(),
            rle_rows: BTreeMap::new(),
        }
    }
}

/// The `layout` object for a dump of `g` (`None` when `g` has no recorded layout): the
/// layout, and every stored RLE row that re-encoding its pixels would not reproduce (frames
/// looked at on every core: each RLE frame is decoded and encoded again for it).
pub fn layout_meta(g: &Gaf) -> Option<LayoutMeta> {
    use rayon::prelude::*;
    let mut meta = LayoutMeta::from(g.layout.as_deref()?);
    let frames: Vec<(usize, usize, &Frame)> = g
        .sequences
        .iter()
        .enumerate()
        .flat_map(|(si, s)| {
            s.frames
                .iter()
                .enumerate()
                .map(move |(fi, fe)| (si, fi, &fe.frame))
        })
        .collect();
    let found: Vec<BTreeMap<String, Vec<String>>> = frames
        .par_iter()
        .map(|(si, fi, f)| {
            let mut out = BTreeMap::new();
            odd_rows(f, format!("{si}.{fi}"), &mut out, 0);
            out
        })
        .collect();
    for m in found {
        meta.rle_rows.extend(m);
    }
    Some(meta)
}

/// The stored rows of an RLE payload (each with its 2-byte count); `None` if it does not
/// split into exactly `height` rows.
fn split_rows(payload: &[u8], height: usize) -> Option<Vec<&[u8]>> {
    let mut rows = Vec::with_capacity(height);
    let mut pos = 0usize;
    for _ in 0..height {
        let n = usize::from(u16::from_le_bytes([
            *payload.get(pos)?,
            *payload.get(pos + 1)?,
        ]));
        rows.push(payload.get(pos..pos + 2 + n)?);
        pos += 2 + n;
    }
    (pos == payload.len()).then_some(rows)
}

fn odd_rows(f: &Frame, key: String, out: &mut BTreeMap<String, Vec<String>>, depth: usize) {
    match &f.content {
        Content::Layers(l) if depth < MAX_DEPTH => {
            for (k, layer) in l.iter().enumerate() {
                odd_rows(layer, format!("{key}.{k}"), out, depth + 1);
            }
        }
        Content::Pixels(px) if f.is_compressed() => {
            let (w, h) = (usize::from(f.width), usize::from(f.height));
            let Some(rows) = px.payload.as_deref().and_then(|p| split_rows(p, h)) else {
                return;
            };
            // (an undecoded frame decoded for the comparison)
            let Some(px) = f.decoded() else {
                return;
            };
            let mut odd = Vec::new();
            let mut mine = Vec::new();
            for (y, stored) in rows.iter().enumerate() {
                let (Some(i), Some(o)) = (
                    px.indices.get(y * w..(y + 1) * w),
                    px.opaque.get(y * w..(y + 1) * w),
                ) else {
                    return;
                };
                mine.clear();
                if !rle::encode_row(i, o, &mut mine) || mine != *stored {
                    odd.push(format!("{y}:{}", hex(stored)));
                }
            }
            if !odd.is_empty() {
                out.insert(key, odd);
            }
        }
        _ => {}
    }
}

/// Gives every RLE frame without stored bytes the rows `meta.rle_rows` records for its
/// position, where they still decode to its pixels, and tafs's encoding for the others.
/// `dumped` and `built` are the sequence folders as for [`build_layout`]: a built sequence
/// takes the rows recorded for the dumped sequence of its folder.
pub fn apply_rle_rows(g: &mut Gaf, meta: Option<&LayoutMeta>, dumped: &[&str], built: &[&str]) {
    let Some(meta) = meta.filter(|m| !m.rle_rows.is_empty()) else {
        return;
    };
    for (k, s) in g.sequences.iter_mut().enumerate() {
        let si = match built.get(k) {
            Some(dir) if dumped.len() == meta.sequences.len() => {
                match dumped.iter().position(|d| d == dir) {
                    Some(i) => i,
                    None => continue,
                }
            }
            _ => k,
        };
        for (fi, fe) in s.frames.iter_mut().enumerate() {
            apply_frame(&mut fe.frame, format!("{si}.{fi}"), &meta.rle_rows, 0);
        }
    }
}

fn apply_frame(f: &mut Frame, key: String, rows: &BTreeMap<String, Vec<String>>, depth: usize) {
    let (w, h, compressed) = (
        usize::from(f.width),
        usize::from(f.height),
        f.is_compressed(),
    );
    match &mut f.content {
        Content::Layers(l) if depth < MAX_DEPTH => {
            for (k, layer) in l.iter_mut().enumerate() {
                apply_frame(layer, format!("{key}.{k}"), rows, depth + 1);
            }
        }
        Content::Pixels(px) if compressed && px.payload.is_none() => {
            let Some(recorded) = rows.get(&key) else {
                return;
            };
            if px.indices.len() != w * h || px.opaque.len() != w * h {
                return;
            }
            let mut given: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
            for r in recorded {
                if let Some((y, b)) = r
                    .split_once(':')
                    .and_then(|(y, x)| Some((y.parse().ok()?, unhex(x)?)))
                {
                    given.insert(y, b);
                }
            }
            let mut out = Vec::new();
            for y in 0..h {
                let (i, o) = (
                    &px.indices[y * w..(y + 1) * w],
                    &px.opaque[y * w..(y + 1) * w],
                );
                if let Some(stored) = given.get(&y).filter(|b| decodes_to(b, i, o)) {
                    out.extend_from_slice(stored);
                } else if !rle::encode_row(i, o, &mut out) {
                    return; // the writer reports the row
                }
            }
            px.payload = Some(out.into());
        }
        _ => {}
    }
}

/// True when the stored row (count + commands) draws exactly `indices`/`opaque`.
fn decodes_to(stored: &[u8], indices: &[u8], opaque: &[bool]) -> bool {
    let Some(cmds) = stored.get(2..) else {
        return false;
    };
    if usize::from(u16::from_le_bytes([stored[0], stored[1]])) != cmds.len() {
        return false;
    }
    let key = 0;
    let mut i2 = vec![key; indices.len()];
    let mut o2 = vec![false; opaque.len()];
    if rle::decode_row(cmds, &mut i2, &mut o2).is_err() {
        return false;
    }
    o2 == opaque
        && i2
            .iter()
            .zip(indices)
            .zip(opaque)
            .all(|((a, b), o)| !*o || a == b)
}

impl LayoutMeta {
    /// The layout this describes; refuses (naming the field) what no parsed file could have
    /// produced: offsets past `end`, `end` over [`MAX_LAYOUT_END`], malformed strings.
    pub fn to_layout(&self) -> Result<Layout, ViewError> {
        let bad = |m: String| ViewError::invalid(METADATA, m);
        if self.end > MAX_LAYOUT_END {
            return Err(bad(format!(
                "layout.end {} is over {MAX_LAYOUT_END}",
                self.end
            )));
        }
        let mut sequences = Vec::with_capacity(self.sequences.len());
        for (i, s) in self.sequences.iter().enumerate() {
            sequences.push(parse_sequence_text(s).ok_or_else(|| {
                bad(format!(
                    "layout.sequences[{i}]: not \"HEADER: HEADER>DATA+LEN …\""
                ))
            })?);
        }
        let mut filler = Vec::with_capacity(self.filler.len());
        for (i, f) in self.filler.iter().enumerate() {
            let bytes =
                unhex(&f.hex).ok_or_else(|| bad(format!("layout.filler[{i}].hex: not hex")))?;
            if f.offset.saturating_add(bytes.len() as u64) > self.end {
                return Err(bad(format!("layout.filler[{i}] passes layout.end")));
            }
            filler.push(Filler {
                offset: f.offset,
                bytes,
            });
        }
        let mut checks = Vec::with_capacity(self.checks.len());
        for (i, c) in self.checks.iter().enumerate() {
            let parsed = c.split_once(':').and_then(|(r, crc)| {
                let (o, l) = r.split_once('+')?;
                Some(Check {
                    offset: o.trim().parse().ok()?,
                    len: l.trim().parse().ok()?,
                    crc: u32::from_str_radix(crc.trim(), 16).ok()?,
                })
            });
            checks.push(
                parsed
                    .ok_or_else(|| bad(format!("layout.checks[{i}]: not \"OFFSET+LEN:CRC32\"")))?,
            );
        }
        checks.sort_unstable_by_key(|c| (c.offset, c.len));
        let layout = Layout {
            end: self.end,
            sequence_count: sequences.len(),
            sequences,
            filler,
            checks,
        };
        if let Some((o, l)) = layout
            .slots()
            .into_iter()
            .find(|(o, l)| o.saturating_add(*l) > self.end)
        {
            return Err(bad(format!(
                "layout: a {l}-byte block at {o} passes layout.end {}",
                self.end
            )));
        }
        Ok(layout)
    }
}

/// The layout a build writes with: the one metadata.json records, else the base file's.
/// `dumped` are the sequence folders of the dump in file order (metadata.json), `built` the
/// folders of the built sequences in their new order: each built sequence takes the places of
/// the dumped sequence of the same folder, so removing, adding or reordering sequences moves
/// no other sequence's blocks.
pub fn build_layout(
    recorded: Option<&LayoutMeta>,
    base: Option<&Gaf>,
    dumped: &[&str],
    built: &[&str],
) -> Result<Option<Arc<Layout>>, ViewError> {
    let layout = match recorded {
        Some(l) => Arc::new(l.to_layout()?),
        None => match base.and_then(|b| b.layout.clone()) {
            Some(l) => l,
            None => return Ok(None),
        },
    };
    if dumped.len() != layout.sequences.len() || dumped == built {
        return Ok(Some(layout));
    }
    let mut l = (*layout).clone();
    let mut taken = vec![false; l.sequences.len()];
    let mut order = Vec::with_capacity(built.len() + l.sequences.len());
    for dir in built {
        match dumped.iter().position(|d| d == dir) {
            Some(i) if !taken[i] => {
                taken[i] = true;
                order.push(l.sequences[i].clone());
            }
            _ => order.push(SequenceSlot::none()),
        }
    }
    // the places of removed sequences stay known (room for moved blocks)
    for (i, t) in taken.iter().enumerate() {
        if !t {
            order.push(l.sequences[i].clone());
        }
    }
    l.sequences = order;
    Ok(Some(Arc::new(l)))
}

/// The colours to avoid when mapping an image onto the palette for a frame: the key for raw
/// frames (there it would be transparent); nothing for RLE frames, whose transparency is the
/// skips and whose drawn pixels may use the key's colour.
pub fn avoid_for(compressed: u8, key: u8) -> Vec<u8> {
    if compressed == 0 {
        vec![key]
    } else {
        Vec::new()
    }
}

/// Where a built frame shows the colour its base frame (same sequence, frame and layer
/// position, same size) had at a pixel, takes the base's index: a palette with duplicate
/// colours maps a colour to its first index, while the file may have used another copy.
pub fn keep_base_indices(gaf: &mut Gaf, base: &Gaf, palette: &Palette) {
    for (s, b) in gaf.sequences.iter_mut().zip(&base.sequences) {
        for (f, g) in s.frames.iter_mut().zip(&b.frames) {
            keep_frame(&mut f.frame, &g.frame, palette, 0);
        }
    }
}

fn keep_frame(f: &mut Frame, base: &Frame, palette: &Palette, depth: usize) {
    if f.width != base.width || f.height != base.height || depth > MAX_DEPTH {
        return;
    }
    let raw = !f.is_compressed();
    let key = f.key;
    match (&mut f.content, &base.content) {
        // stored bytes taken from the base as they are: its indices already
        (Content::Pixels(p), Content::Pixels(_)) if p.payload.is_some() => {}
        (Content::Pixels(p), Content::Pixels(_)) => {
            // (an undecoded base frame decoded: only edited frames get here)
            let Some(q) = base.decoded() else {
                return;
            };
            let colour = |i: u8| palette.colors[usize::from(i)];
            let mut changed = false;
            for (k, (i, o)) in p.indices.iter_mut().zip(&p.opaque).enumerate() {
                let (Some(&bi), Some(&bo)) = (q.indices.get(k), q.opaque.get(k)) else {
                    break;
                };
                if *o && bo && *i != bi && colour(*i) == colour(bi) && !(raw && bi == key) {
                    *i = bi;
                    changed = true;
                }
            }
            if changed {
                p.payload = None;
            }
        }
        (Content::Layers(l), Content::Layers(m)) => {
            for (a, b) in l.iter_mut().zip(m) {
                keep_frame(a, b, palette, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_text_round_trips() {
        let s = SequenceSlot {
            offset: 12166,
            frames: vec![
                FrameSlot {
                    header: 52,
                    data: 76,
                    body: SlotBody::Payload(3416),
                },
                FrameSlot {
                    header: 3492,
                    data: 3516,
                    body: SlotBody::Layers(vec![FrameSlot {
                        header: 3524,
                        data: 3548,
                        body: SlotBody::Payload(0),
                    }]),
                },
            ],
        };
        let t = sequence_text(&s);
        assert_eq!(t, "12166: 52>76+3416 3492>3516[3524>3548+0]");
        assert_eq!(parse_sequence_text(&t), Some(s));
        assert_eq!(
            parse_sequence_text("7:"),
            Some(SequenceSlot {
                offset: 7,
                frames: vec![]
            })
        );
        for bad in [
            "",
            "x:",
            "1: 2>3",
            "1: 2>3+",
            "1: 2>3[4>5+1",
            "1: 2>3+4 junk",
            "1: 99999999999>1+1",
        ] {
            assert_eq!(parse_sequence_text(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn crafted_layouts_are_refused() {
        let ok = LayoutMeta {
            end: 100,
            sequences: vec!["16: 56>80+20".into()],
            filler: vec![],
            checks: vec![],
            rle_rows: BTreeMap::new(),
        };
        assert!(ok.to_layout().is_ok());
        let past = LayoutMeta {
            sequences: vec!["16: 56>90+20".into()],
            ..ok.clone()
        };
        assert!(past.to_layout().is_err());
        let huge = LayoutMeta {
            end: u64::from(u32::MAX),
            ..ok.clone()
        };
        assert!(huge.to_layout().is_err());
        let filler = LayoutMeta {
            filler: vec![FillerMeta {
                offset: 99,
                hex: "0000".into(),
            }],
            ..ok.clone()
        };
        assert!(filler.to_layout().is_err());
        let check = LayoutMeta {
            checks: vec!["1+2".into()],
            ..ok
        };
        assert!(check.to_layout().is_err());
    }

    #[test]
    fn rle_frames_may_use_the_key_colour_raw_frames_may_not() {
        assert_eq!(avoid_for(0, 9), vec![9]);
        assert!(avoid_for(1, 9).is_empty());
    }
}
