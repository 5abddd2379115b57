//! Where the blocks of a parsed GAF sat, and the writer that puts them back there.
//!
//! A GAF is a graph of blocks reached through pointers: the file header (0..12), the sequence
//! table (12..), per sequence its header and frame list, per frame its 24-byte header and
//! either a layer table (composites) or a pixel payload. [`Layout`] records, for every
//! reference in the file, the offset (and length) of the block it reaches, the bytes outside
//! every block (gaps) and a CRC-32 of each block that is referenced more than once or that
//! overlaps another block.
//!
//! [`write_with_layout`] places every block of a model where the layout says it was, as long
//! as it still fits there (same or smaller size) and, for shared or overlapping blocks, still
//! holds the original bytes. Blocks that no longer fit, lost their shared place, or are new
//! go into the room freed by blocks that moved (first fit) or after the last block; the
//! trailing bytes follow. So an unedited model comes out byte for byte, and an edit changes
//! only the edited blocks and the pointers that reach blocks that moved.

use super::*;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

/// The recorded block layout of a GAF file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout {
    /// End of the furthest block (the trailing bytes start here).
    pub end: u64,
    /// Entries of the file's sequence table.
    pub sequence_count: usize,
    /// The sequences, matched to the model's by position (in table order as parsed; a caller
    /// may reorder them to follow reordered, added or removed sequences).
    pub sequences: Vec<SequenceSlot>,
    /// Bytes before `end` that no block covers, in file order.
    pub filler: Vec<Filler>,
    /// CRC-32 of the blocks that are referenced more than once or overlap another block,
    /// sorted by offset.
    pub checks: Vec<Check>,
}

/// Where one sequence header (with its frame list) and its frames sat.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SequenceSlot {
    /// Offset of the sequence header.
    pub offset: u32,
    /// The frame-list items in order (their count gives the block's original size).
    pub frames: Vec<FrameSlot>,
}

/// Where one frame header and what it points at sat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameSlot {
    /// Offset of the 24-byte frame header.
    pub header: u32,
    /// The header's data pointer (+16).
    pub data: u32,
    /// What the data pointer reaches.
    pub body: SlotBody,
}

/// The block a frame header's data pointer reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotBody {
    /// A pixel payload of this many bytes.
    Payload(u64),
    /// A layer table; the layers in table order.
    Layers(Vec<FrameSlot>),
}

/// Bytes outside every block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filler {
    /// Absolute offset.
    pub offset: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// CRC-32 of one shared or overlapping block as it was in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// Offset of the block.
    pub offset: u32,
    /// Its length.
    pub len: u64,
    /// CRC-32 (IEEE) of its bytes.
    pub crc: u32,
}

impl SequenceSlot {
    /// A slot for a sequence the file did not have: it claims no place.
    pub fn none() -> SequenceSlot {
        SequenceSlot {
            offset: u32::MAX,
            frames: Vec::new(),
        }
    }
}

impl Layout {
    /// Every block range `(offset, len)` the layout names, except the file header and table.
    pub fn slots(&self) -> Vec<(u64, u64)> {
        fn frame(f: &FrameSlot, out: &mut Vec<(u64, u64)>, depth: usize) {
            out.push((u64::from(f.header), FRAME_HEADER_LEN));
            match &f.body {
                SlotBody::Payload(len) => out.push((u64::from(f.data), *len)),
                SlotBody::Layers(l) => {
                    out.push((u64::from(f.data), 4 * l.len() as u64));
                    if depth < MAX_DEPTH {
                        l.iter().for_each(|c| frame(c, out, depth + 1));
                    }
                }
            }
        }
        let mut out = Vec::new();
        for s in &self.sequences {
            out.push((u64::from(s.offset), sequence_len(s.frames.len())));
            s.frames.iter().for_each(|f| frame(f, &mut out, 0));
        }
        out
    }

    /// Refuses a layout whose `end` lies past every byte it accounts for, or whose payload
    /// slots claim more bytes than a GAF within `limits` can hold (at most four bytes of
    /// payload per decoded pixel). A recorded layout always passes: every byte before its end
    /// is in a block or in a filler. A hand-edited `metadata.json` could otherwise make the
    /// writer produce a file of gigabytes of zeros.
    pub fn check_budget(&self, limits: &Limits) -> Result<(), GafError> {
        fn frame(f: &FrameSlot, sums: &mut (u64, u64), depth: usize) {
            sums.1 = sums.1.saturating_add(FRAME_HEADER_LEN);
            match &f.body {
                SlotBody::Payload(len) => sums.0 = sums.0.saturating_add(*len),
                SlotBody::Layers(l) => {
                    sums.1 = sums.1.saturating_add(4 * l.len() as u64);
                    if depth < MAX_DEPTH {
                        l.iter().for_each(|c| frame(c, sums, depth + 1));
                    }
                }
            }
        }
        // (payload bytes, other block bytes)
        let mut sums = (0u64, 0u64);
        for s in &self.sequences {
            sums.1 = sums.1.saturating_add(sequence_len(s.frames.len()));
            s.frames.iter().for_each(|f| frame(f, &mut sums, 0));
        }
        let cap = limits.max_total_pixels.saturating_mul(4);
        if sums.0 > cap {
            return Err(unwritable(
                "metadata.json layout",
                format!(
                    "frame payload slots total {} bytes, more than {cap} (four per decoded pixel of the budget)",
                    sums.0
                ),
            ));
        }
        let filler: u64 = self.filler.iter().map(|f| f.bytes.len() as u64).sum();
        let accounted = (HEADER_LEN + 4 * self.sequence_count as u64)
            .saturating_add(sums.0)
            .saturating_add(sums.1)
            .saturating_add(filler);
        if self.end > accounted {
            return Err(unwritable(
                "metadata.json layout",
                format!(
                    "end {} lies past every recorded block and filler ({accounted} bytes accounted for)",
                    self.end
                ),
            ));
        }
        Ok(())
    }

    /// Records the layout of `data` from the block ranges the reader visited (`blocks`, with
    /// repeats for shared blocks), the furthest block end and the per-reference slots.
    pub(super) fn record(
        data: &[u8],
        end: u64,
        blocks: &[(u64, u64)],
        sequences: Vec<SequenceSlot>,
    ) -> Layout {
        let mut ranges: Vec<(u64, u64)> = blocks.iter().copied().filter(|b| b.1 > 0).collect();
        ranges.sort_unstable();
        let mut marked: HashSet<(u64, u64)> = HashSet::new();
        for w in ranges.windows(2) {
            if w[0] == w[1] {
                marked.insert(w[0]);
            }
        }
        ranges.dedup();
        // any range that starts before the furthest end seen so far overlaps it
        let mut furthest: Option<(u64, u64)> = None;
        let mut filler = Vec::new();
        let mut covered = 0u64;
        for &r in &ranges {
            if let Some(m) = furthest {
                if r.0 < m.0 + m.1 {
                    marked.insert(r);
                    marked.insert(m);
                }
            }
            if furthest.map_or(true, |m| r.0 + r.1 > m.0 + m.1) {
                furthest = Some(r);
            }
            if r.0 > covered {
                filler.push(gap(data, covered, r.0));
            }
            covered = covered.max(r.0 + r.1);
        }
        if end > covered {
            filler.push(gap(data, covered, end));
        }
        // the file header with the table is always written in place
        let head = blocks.first().copied();
        let mut checks: Vec<Check> = marked
            .into_iter()
            .filter(|r| Some(*r) != head && r.0 <= u64::from(u32::MAX))
            .filter_map(|(o, l)| {
                let bytes = data.get(usize::try_from(o).ok()?..usize::try_from(o + l).ok()?)?;
                Some(Check {
                    offset: o as u32,
                    len: l,
                    crc: crc32fast::hash(bytes),
                })
            })
            .collect();
        checks.sort_unstable_by_key(|c| (c.offset, c.len));
        Layout {
            end,
            sequence_count: sequences.len(),
            sequences,
            filler,
            checks,
        }
    }

    fn check(&self, offset: u32, len: u64) -> Option<u32> {
        self.checks
            .binary_search_by_key(&(offset, len), |c| (c.offset, c.len))
            .ok()
            .and_then(|i| self.checks.get(i))
            .map(|c| c.crc)
    }
}

fn gap(data: &[u8], from: u64, to: u64) -> Filler {
    let bytes = usize::try_from(from)
        .ok()
        .zip(usize::try_from(to).ok())
        .and_then(|(a, b)| data.get(a..b))
        .unwrap_or_default()
        .to_vec();
    Filler {
        offset: from,
        bytes,
    }
}

/// Size of a sequence header with its frame list.
pub fn sequence_len(frames: usize) -> u64 {
    SEQUENCE_HEADER_LEN + 8 * frames as u64
}

/// Depth guard for models and layouts built by code (parsed ones are bounded by Limits).
const MAX_DEPTH: usize = 64;

/// One block of the model being written.
struct Node<'g> {
    /// Recorded `(offset, len)` of the place it claims.
    slot: Option<(u32, u64)>,
    /// Its bytes, pointers still zero (a payload borrowed from the model).
    bytes: Cow<'g, [u8]>,
    /// `(position in bytes, child node)` of each pointer.
    ptrs: Vec<(usize, usize)>,
}

struct Builder<'l, 'g> {
    layout: &'l Layout,
    nodes: Vec<Node<'g>>,
    /// Hash of (slot, bytes, pointers) → nodes with it (identical claimants share a node).
    interned: HashMap<u64, Vec<usize>>,
}

/// Bytes of a block that its interning hash covers: the blocks compared are those that claim
/// the same place (a shared frame's), so the head of the bytes with their length tells them
/// apart well enough, without hashing every payload of a large file.
const HASHED_PREFIX: usize = 64;

impl<'g> Builder<'_, 'g> {
    fn add(
        &mut self,
        slot: Option<(u32, u64)>,
        bytes: Cow<'g, [u8]>,
        ptrs: Vec<(usize, usize)>,
    ) -> usize {
        let Some(s) = slot else {
            self.nodes.push(Node { slot, bytes, ptrs });
            return self.nodes.len() - 1;
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let head = bytes.get(..HASHED_PREFIX).unwrap_or(&bytes);
        (s, bytes.len(), head, &ptrs).hash(&mut h);
        let key = h.finish();
        if let Some(found) = self.interned.get(&key).and_then(|c| {
            c.iter().copied().find(|&i| {
                self.nodes
                    .get(i)
                    .is_some_and(|n| n.slot == slot && n.bytes == bytes && n.ptrs == ptrs)
            })
        }) {
            return found;
        }
        self.nodes.push(Node { slot, bytes, ptrs });
        let id = self.nodes.len() - 1;
        self.interned.entry(key).or_default().push(id);
        id
    }

    fn frame(
        &mut self,
        f: &'g Frame,
        slot: Option<&FrameSlot>,
        what: &str,
        depth: usize,
    ) -> Result<usize, GafError> {
        if depth > MAX_DEPTH {
            return Err(unwritable(what, "layers nested too deep"));
        }
        let layer_count = super::write::layer_count(f, what)?;
        let data = match &f.content {
            Content::Pixels(px) => {
                let bytes = super::write::payload(f, px, what)?;
                let s = slot.and_then(|s| match s.body {
                    SlotBody::Payload(len) => Some((s.data, len)),
                    SlotBody::Layers(_) => None,
                });
                self.add(s, bytes, vec![])
            }
            Content::Truecolor(words) => {
                let bytes = super::write::truecolor_payload(f, words, what)?;
                let s = slot.and_then(|s| match s.body {
                    SlotBody::Payload(len) => Some((s.data, len)),
                    SlotBody::Layers(_) => None,
                });
                self.add(s, Cow::Owned(bytes), vec![])
            }
            Content::Layers(layers) => {
                let slots = slot.and_then(|s| match &s.body {
                    SlotBody::Layers(l) => Some((s.data, l)),
                    SlotBody::Payload(_) => None,
                });
                let mut ptrs = Vec::with_capacity(layers.len());
                for (k, layer) in layers.iter().enumerate() {
                    let child_slot = slots.and_then(|(_, l)| l.get(k));
                    let child =
                        self.frame(layer, child_slot, &format!("{what} layer {k}"), depth + 1)?;
                    ptrs.push((4 * k, child));
                }
                let s = slots.map(|(at, l)| (at, 4 * l.len() as u64));
                self.add(s, Cow::Owned(vec![0; 4 * layers.len()]), ptrs)
            }
        };
        let header = super::write::header(f, layer_count, 0).to_vec();
        let s = slot.map(|s| (s.header, FRAME_HEADER_LEN));
        Ok(self.add(s, Cow::Owned(header), vec![(16, data)]))
    }

    /// The node's bytes with every pointer set to its child's recorded place, if every child
    /// keeps its recorded place (`decided`).
    fn as_recorded(
        &self,
        n: &Node,
        decided: &HashMap<(u32, u64), Option<(usize, bool)>>,
    ) -> Option<Vec<u8>> {
        let mut b = n.bytes.to_vec();
        for &(at, child) in &n.ptrs {
            let slot = self.nodes.get(child)?.slot?;
            if decided.get(&slot).copied().flatten()?.0 != child {
                return None;
            }
            b.get_mut(at..at + 4)?
                .copy_from_slice(&slot.0.to_le_bytes());
        }
        Some(b)
    }
}

/// Decides which claimant keeps the recorded place `slot` (and whether it holds the original
/// bytes), deciding the places of the claimants' children first. A shared or overlapping
/// place goes only to a claimant whose bytes, with its children in their places, match the
/// recorded CRC; any other place to the first claimant that fits.
fn decide(
    slot: (u32, u64),
    b: &Builder,
    claimants: &HashMap<(u32, u64), Vec<usize>>,
    decided: &mut HashMap<(u32, u64), Option<(usize, bool)>>,
    depth: usize,
) {
    if decided.contains_key(&slot) {
        return;
    }
    let cands = claimants.get(&slot).map(Vec::as_slice).unwrap_or_default();
    let pick = match b.layout.check(slot.0, slot.1) {
        Some(crc) => {
            // children first (depth is bounded by the model's nesting)
            if depth < 4 * MAX_DEPTH {
                for &id in cands {
                    let Some(n) = b.nodes.get(id) else { continue };
                    for &(_, child) in &n.ptrs {
                        if let Some(cs) = b.nodes.get(child).and_then(|c| c.slot) {
                            decide(cs, b, claimants, decided, depth + 1);
                        }
                    }
                }
            }
            cands
                .iter()
                .copied()
                .find(|&id| {
                    b.nodes
                        .get(id)
                        .and_then(|n| b.as_recorded(n, decided))
                        .is_some_and(|bytes| crc32fast::hash(&bytes) == crc)
                })
                .map(|id| (id, true))
        }
        None => cands
            .iter()
            .copied()
            .find(|&id| {
                b.nodes
                    .get(id)
                    .is_some_and(|n| n.bytes.len() as u64 <= slot.1)
            })
            .map(|id| (id, false)),
    };
    decided.insert(slot, pick);
}

fn unwritable(structure: impl Into<String>, message: impl Into<String>) -> GafError {
    GafError::Unwritable {
        structure: structure.into(),
        message: message.into(),
    }
}

/// Half-open ranges minus other half-open ranges (both as `(start, end)`).
fn subtract(mut a: Vec<(u64, u64)>, mut b: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    a.sort_unstable();
    b.sort_unstable();
    // merge a
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for r in a.into_iter().filter(|r| r.1 > r.0) {
        match merged.last_mut() {
            Some(last) if r.0 <= last.1 => last.1 = last.1.max(r.1),
            _ => merged.push(r),
        }
    }
    let mut out = Vec::new();
    let mut bi = 0;
    for (mut s, e) in merged {
        while bi < b.len() && b[bi].1 <= s {
            bi += 1;
        }
        let mut j = bi;
        while s < e {
            match b.get(j) {
                Some(&(bs, be)) if bs < e => {
                    if bs > s {
                        out.push((s, bs));
                    }
                    s = s.max(be);
                    j += 1;
                }
                _ => {
                    out.push((s, e));
                    break;
                }
            }
        }
    }
    out
}

/// Writes `gaf` with its blocks where `layout` recorded them (see the module comment).
/// Refuses, returning an error and no bytes, what the format cannot hold.
pub fn write_with_layout(gaf: &Gaf, layout: &Layout) -> Result<Vec<u8>, GafError> {
    layout.check_budget(&Limits::default())?;
    let count = u32::try_from(gaf.sequences.len())
        .map_err(|_| unwritable("file header", "more than 2^32 sequences"))?;
    let mut b = Builder {
        layout,
        nodes: Vec::new(),
        interned: HashMap::new(),
    };
    let mut seq_nodes = Vec::with_capacity(gaf.sequences.len());
    for (i, seq) in gaf.sequences.iter().enumerate() {
        let what = format!("sequence {i} ({})", seq.name_str());
        let fc = u16::try_from(seq.frames.len()).map_err(|_| {
            unwritable(&what, format!("{} frames, at most 65535", seq.frames.len()))
        })?;
        let slot = b.layout.sequences.get(i);
        let mut bytes = Vec::with_capacity(sequence_len(seq.frames.len()) as usize);
        bytes.extend_from_slice(&fc.to_le_bytes());
        bytes.extend_from_slice(&seq.loop_word.to_le_bytes());
        bytes.extend_from_slice(&seq.word4.to_le_bytes());
        bytes.extend_from_slice(&seq.name);
        let mut ptrs = Vec::with_capacity(seq.frames.len());
        for (j, entry) in seq.frames.iter().enumerate() {
            let fslot = slot.and_then(|s| s.frames.get(j));
            let node = b.frame(&entry.frame, fslot, &format!("{what} frame {j}"), 0)?;
            ptrs.push((bytes.len(), node));
            bytes.extend_from_slice(&[0; 4]);
            bytes.extend_from_slice(&entry.duration.to_le_bytes());
        }
        let s = slot.map(|s| (s.offset, sequence_len(s.frames.len())));
        seq_nodes.push(b.add(s, Cow::Owned(bytes), ptrs));
    }

    // Which node keeps each recorded place.
    let table_end = HEADER_LEN + 4 * u64::from(count);
    let old_table_end = HEADER_LEN + 4 * layout.sequence_count as u64;
    let table_region = table_end.max(old_table_end);
    let mut claimants: HashMap<(u32, u64), Vec<usize>> = HashMap::new();
    let mut order: Vec<(u32, u64)> = Vec::new();
    for (id, n) in b.nodes.iter().enumerate() {
        if let Some(s) = n.slot {
            let v = claimants.entry(s).or_default();
            if v.is_empty() {
                order.push(s);
            }
            v.push(id);
        }
    }
    let mut decided: HashMap<(u32, u64), Option<(usize, bool)>> = HashMap::new();
    for s in &order {
        decide(*s, &b, &claimants, &mut decided, 0);
    }
    let mut winner: Vec<bool> = vec![false; b.nodes.len()];
    // whether the winner of a place holds its recorded bytes (with its children in place)
    let mut matched: Vec<bool> = vec![false; b.nodes.len()];
    for s in order {
        let (off, len) = (u64::from(s.0), s.1);
        let Some(Some((id, m))) = decided.get(&s).copied() else {
            continue;
        };
        // the header and sequence table are written last, from the new offsets: no block
        // keeps a place inside them (a crafted file may put one there)
        let in_table = len > 0 && off < table_region;
        if in_table || off + len > layout.end {
            continue;
        }
        if let (Some(w), Some(x)) = (winner.get_mut(id), matched.get_mut(id)) {
            *w = true;
            *x = m;
        }
    }
    // A kept place that does not hold its recorded bytes must not overlap another one. A
    // place holds them only while every block it points to keeps its own place too (else
    // a pointer in it changes), so dropping a place can make the places pointing to it
    // differ: repeat until no place is dropped (each round drops one at least; the rounds
    // follow the pointers' nesting).
    for _ in 0..=b.nodes.len() {
        // (start, end, holds its recorded bytes, node); the header and table first
        let mut kept: Vec<(u64, u64, bool, usize)> = vec![(0, table_end, true, usize::MAX)];
        for (id, n) in b.nodes.iter().enumerate() {
            let Some((off, len)) = n.slot.filter(|s| s.1 > 0) else {
                continue;
            };
            if !winner.get(id).copied().unwrap_or(false) {
                continue;
            }
            let holds = matched.get(id).copied().unwrap_or(false)
                && n.ptrs
                    .iter()
                    .all(|&(_, c)| winner.get(c).copied().unwrap_or(false));
            let off = u64::from(off);
            kept.push((off, off + len, holds, id));
        }
        kept.sort_unstable();
        let mut dropped = false;
        let mut reach = 0u64;
        for (i, &(s, e, holds, id)) in kept.iter().enumerate() {
            let next_overlaps = kept.get(i + 1).is_some_and(|k| k.0 < e);
            if !holds && (reach > s || next_overlaps) {
                if let Some(w) = winner.get_mut(id) {
                    *w = false;
                    dropped = true;
                }
            }
            reach = reach.max(e);
        }
        if !dropped {
            break;
        }
    }

    // Room freed by blocks that moved, shrank or went away.
    let mut occupied: Vec<(u64, u64)> = vec![(0, table_end)];
    for (id, n) in b.nodes.iter().enumerate() {
        if let (true, Some((o, _))) = (winner[id], n.slot) {
            occupied.push((u64::from(o), u64::from(o) + n.bytes.len() as u64));
        }
    }
    let all: Vec<(u64, u64)> = layout
        .slots()
        .into_iter()
        .map(|(o, l)| (o, o.saturating_add(l)))
        .filter(|r| r.1 <= layout.end)
        .collect();
    let mut holes = subtract(all, occupied.clone());

    let mut end = layout.end.max(table_end);
    for (o, e) in &occupied {
        end = end.max(*e).max(*o);
    }
    let mut offsets: Vec<u64> = vec![0; b.nodes.len()];
    for (id, n) in b.nodes.iter().enumerate() {
        let len = n.bytes.len() as u64;
        offsets[id] = if winner[id] {
            n.slot.map_or(0, |s| u64::from(s.0))
        } else if len == 0 {
            n.slot.map_or(end, |s| u64::from(s.0))
        } else if let Some(h) = holes.iter_mut().find(|h| h.1 - h.0 >= len) {
            h.0 += len;
            h.0 - len
        } else {
            end += len;
            end - len
        };
    }
    if end + gaf.trailing.len() as u64 > u64::from(u32::MAX) {
        return Err(unwritable("file", "file would pass 4 GiB"));
    }
    let mut out = crate::formats::bytes::zeroed(end as usize);
    for f in &layout.filler {
        let Ok(at) = usize::try_from(f.offset) else {
            continue;
        };
        if let Some(dst) = out.get_mut(at..at.saturating_add(f.bytes.len())) {
            dst.copy_from_slice(&f.bytes);
        }
    }
    for (id, n) in b.nodes.iter().enumerate() {
        if n.bytes.is_empty() {
            continue;
        }
        let mut bytes: Cow<[u8]> = Cow::Borrowed(&*n.bytes);
        for &(at, child) in &n.ptrs {
            let p = offsets.get(child).copied().unwrap_or(0) as u32;
            if let Some(dst) = bytes.to_mut().get_mut(at..at + 4) {
                dst.copy_from_slice(&p.to_le_bytes());
            }
        }
        let at = offsets[id] as usize;
        if let Some(dst) = out.get_mut(at..at + bytes.len()) {
            dst.copy_from_slice(&bytes);
        }
    }
    let mut head = Vec::with_capacity(table_end as usize);
    head.extend_from_slice(&gaf.version.to_le_bytes());
    head.extend_from_slice(&count.to_le_bytes());
    head.extend_from_slice(&gaf.header_word8.to_le_bytes());
    for &s in &seq_nodes {
        head.extend_from_slice(&(offsets.get(s).copied().unwrap_or(0) as u32).to_le_bytes());
    }
    if let Some(dst) = out.get_mut(..head.len()) {
        dst.copy_from_slice(&head);
    }
    out.extend_from_slice(&gaf.trailing);
    Ok(out)
}
