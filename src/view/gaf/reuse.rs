//! Stored bytes of unchanged frames kept from the original GAF ([`reuse_payloads`]), where
//! two GAFs differ ([`first_difference`]), and whether a rebuild writes its base's bytes
//! again ([`same_bytes`]).

use crate::formats::gaf::{Content, Frame, Gaf};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// Gives every frame that equals a frame of `base` (header fields and pixels) the stored bytes
/// of that frame, so unchanged frames are written exactly as they were. Frames that already
/// have stored bytes (taken from the base as they were) are left as they are. `base` may hold
/// [`undecoded`](Frame::undecoded) frames ([`crate::formats::gaf::parse_stored`]): only those
/// whose header could match a frame that needs stored bytes are looked at, raw ones without
/// decoding them, so the cost follows the frames edited and the base frames of their shape.
pub fn reuse_payloads(gaf: &mut Gaf, base: &Gaf) {
    fn needs(f: &Frame, shapes: &mut HashSet<Shape>, depth: usize) {
        match &f.content {
            Content::Pixels(p) if p.payload.is_none() => {
                shapes.insert(shape(f));
            }
            Content::Pixels(_) | Content::Truecolor(_) => {}
            Content::Layers(l) if depth < MAX_DEPTH => {
                l.iter().for_each(|x| needs(x, shapes, depth + 1))
            }
            Content::Layers(_) => {}
        }
    }
    let mut shapes = HashSet::new();
    for s in &gaf.sequences {
        for fe in &s.frames {
            needs(&fe.frame, &mut shapes, 0);
        }
    }
    if shapes.is_empty() {
        return;
    }
    // the base frames that could match, in the base's order: undecoded RLE frames decoded
    // (their pixels are needed to hash them), undecoded raw frames as they are
    let mut cands: Vec<Cow<'_, Frame>> = Vec::new();
    fn collect<'a>(
        f: &'a Frame,
        shapes: &HashSet<Shape>,
        out: &mut Vec<Cow<'a, Frame>>,
        depth: usize,
    ) {
        match &f.content {
            Content::Pixels(p) if p.payload.is_some() && shapes.contains(&shape(f)) => {
                if f.undecoded() && f.is_compressed() {
                    if let Some(px) = f.decoded() {
                        let mut d = f.clone();
                        d.content = Content::Pixels(px.into_owned());
                        out.push(Cow::Owned(d));
                    }
                } else {
                    out.push(Cow::Borrowed(f));
                }
            }
            // truecolor words are written as they are: nothing to reuse
            Content::Pixels(_) | Content::Truecolor(_) => {}
            Content::Layers(l) if depth < MAX_DEPTH => {
                l.iter().for_each(|x| collect(x, shapes, out, depth + 1))
            }
            Content::Layers(_) => {}
        }
    }
    for s in &base.sequences {
        for fe in &s.frames {
            collect(&fe.frame, &shapes, &mut cands, 0);
        }
    }
    let mut index: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, c) in cands.iter().enumerate() {
        index.entry(frame_hash(c)).or_default().push(i);
    }
    fn apply(
        f: &mut Frame,
        cands: &[Cow<'_, Frame>],
        index: &HashMap<u64, Vec<usize>>,
        depth: usize,
    ) {
        let h = match &f.content {
            Content::Pixels(p) if p.payload.is_none() => frame_hash(f),
            _ => 0,
        };
        match &mut f.content {
            Content::Layers(l) if depth < MAX_DEPTH => {
                l.iter_mut().for_each(|x| apply(x, cands, index, depth + 1))
            }
            Content::Layers(_) | Content::Truecolor(_) => {}
            Content::Pixels(p) if p.payload.is_some() => {}
            Content::Pixels(_) => {
                let found = index.get(&h).and_then(|ids| {
                    ids.iter()
                        .filter_map(|&i| cands.get(i))
                        .find(|b| same_pixels_and_fields(b, f))
                        .and_then(|b| b.pixels())
                        .and_then(|p| p.payload.clone())
                });
                if let (Some(payload), Content::Pixels(p)) = (found, &mut f.content) {
                    p.payload = Some(payload);
                }
            }
        }
    }
    for s in &mut gaf.sequences {
        for fe in &mut s.frames {
            apply(&mut fe.frame, &cands, &index, 0);
        }
    }
}

/// Depth guard for models built by code (parsed ones are bounded by `Limits`).
const MAX_DEPTH: usize = 64;

/// The header fields a stored payload depends on besides the pixels: size, key, storage.
type Shape = (u16, u16, u8, u8);

fn shape(f: &Frame) -> Shape {
    (f.width, f.height, f.key, f.compressed)
}

/// Equality of what a stored payload encodes: size, key, storage and drawn pixels (an
/// [`undecoded`](Frame::undecoded) frame compared by its decoded pixels).
pub(super) fn same_pixels_and_fields(a: &Frame, b: &Frame) -> bool {
    if shape(a) != shape(b) {
        return false;
    }
    let (Some(pa), Some(pb)) = (a.decoded(), b.decoded()) else {
        return false;
    };
    pa.opaque == pb.opaque
        && pa
            .indices
            .iter()
            .zip(&pb.indices)
            .zip(&pa.opaque)
            .all(|((x, y), o)| !*o || x == y)
        && (a.is_compressed() || pa.indices == pb.indices)
}

/// Pixels of a frame [`frame_hash`] looks at, spread evenly over it (enough to tell frames
/// apart in the index; equal hashes are compared in full).
const HASH_SAMPLES: usize = 64;

/// A hash of part of what [`same_pixels_and_fields`] compares (size, key, storage, and the
/// mask and drawn pixels at [`HASH_SAMPLES`] places spread over the frame): equal frames hash
/// equal; candidates are then compared in full. Hashing every frame of a large GAF at each
/// commit costs a few pixels per frame, not the GAF's size. An undecoded raw frame is hashed
/// from its stored bytes (its indices; drawn where not the key), as its decoded pixels hash.
pub(super) fn frame_hash(f: &Frame) -> u64 {
    let mut h = crc32fast::Hasher::new();
    h.update(&f.width.to_le_bytes());
    h.update(&f.height.to_le_bytes());
    h.update(&[f.key, f.compressed]);
    let sample = |n: usize, at: &dyn Fn(usize) -> (bool, u8)| {
        let step = n.div_ceil(HASH_SAMPLES).max(1);
        let mut buf = Vec::with_capacity(2 * HASH_SAMPLES + 16);
        buf.extend_from_slice(&(n as u64).to_le_bytes());
        for k in (0..n).step_by(step) {
            let (o, i) = at(k);
            buf.push(u8::from(o));
            buf.push(if o { i } else { 0 });
        }
        buf
    };
    match f.pixels() {
        Some(p) if f.undecoded() && !f.is_compressed() => {
            let stored = p.payload.as_deref().unwrap_or_default();
            let key = f.key;
            h.update(&sample(stored.len(), &|k| {
                let i = stored.get(k).copied().unwrap_or(key);
                (i != key, i)
            }));
        }
        Some(p) => {
            let n = p.indices.len().min(p.opaque.len());
            h.update(&sample(n, &|k| {
                let o = p.opaque.get(k).copied().unwrap_or(false);
                (o, p.indices.get(k).copied().unwrap_or(0))
            }));
        }
        None => {}
    }
    u64::from(h.finalize())
}

/// Whether `built` is written ([`crate::formats::gaf::write`]) as the bytes `base` was read
/// from, known without writing either: `Some(false)` when a sequence or frame at some place
/// differs as the game reads it (the bytes cannot be the same), `Some(true)` when every
/// frame is stored as the base's at its place (the same header fields and stored bytes,
/// shared or equal) and the layout, header and trailing bytes are the base's (the writer
/// writes exactly those), `None` otherwise (the same as read, stored otherwise, or other
/// trailing bytes). Only frames
/// not stored as the base's are decoded, so the cost follows the frames edited.
pub fn same_bytes(base: &Gaf, built: &Gaf) -> Option<bool> {
    if (base.version, base.header_word8) != (built.version, built.header_word8)
        || base.sequences.len() != built.sequences.len()
    {
        return Some(false);
    }
    // (trailing bytes a layout places are not always written as the model holds them)
    let mut stored_same = base.layout == built.layout && base.trailing == built.trailing;
    for (x, y) in base.sequences.iter().zip(&built.sequences) {
        if (x.name, x.loop_word, x.word4, x.frames.len())
            != (y.name, y.loop_word, y.word4, y.frames.len())
        {
            return Some(false);
        }
        for (f, g) in x.frames.iter().zip(&y.frames) {
            if f.duration != g.duration {
                return Some(false);
            }
            if !same_stored(&f.frame, &g.frame, 0) {
                if frame_difference(&f.frame, &g.frame).is_some() {
                    return Some(false);
                }
                stored_same = false;
            }
        }
    }
    stored_same.then_some(true)
}

/// A frame's header words and layer count (what two frames must share to be the same).
#[allow(clippy::type_complexity)]
fn header(f: &Frame) -> (u16, u16, i16, i16, u8, u8, u8, u32, u32, usize) {
    (
        f.width,
        f.height,
        f.origin_x,
        f.origin_y,
        f.key,
        f.compressed,
        f.blend,
        f.word12,
        f.word20,
        f.layer_count(),
    )
}

/// Whether two frames are written alike: the same header fields and, per simple frame, the
/// same stored bytes (compared by pointer first); composites layer by layer.
fn same_stored(a: &Frame, b: &Frame, depth: usize) -> bool {
    if header(a) != header(b) || depth >= MAX_DEPTH {
        return false;
    }
    match (&a.content, &b.content) {
        (Content::Pixels(p), Content::Pixels(q)) => match (&p.payload, &q.payload) {
            (Some(x), Some(y)) => (x.as_ptr() == y.as_ptr() && x.len() == y.len()) || x == y,
            _ => false,
        },
        (Content::Layers(x), Content::Layers(y)) => {
            x.iter().zip(y).all(|(p, q)| same_stored(p, q, depth + 1))
        }
        (Content::Truecolor(x), Content::Truecolor(y)) => x == y,
        _ => false,
    }
}

/// Compares two GAFs as the game reads them: every header field, every drawn pixel, every
/// duration, name, loop word and the trailing bytes. Returns the first difference.
pub fn first_difference(a: &Gaf, b: &Gaf) -> Option<String> {
    if a.version != b.version || a.header_word8 != b.header_word8 {
        return Some("file header".into());
    }
    if a.sequences.len() != b.sequences.len() {
        return Some(format!(
            "{} vs {} sequences",
            a.sequences.len(),
            b.sequences.len()
        ));
    }
    for (i, (x, y)) in a.sequences.iter().zip(&b.sequences).enumerate() {
        if x.name != y.name || x.loop_word != y.loop_word || x.word4 != y.word4 {
            return Some(format!("sequence {i} header"));
        }
        if x.frames.len() != y.frames.len() {
            return Some(format!("sequence {i}: frame count"));
        }
        for (j, (f, g)) in x.frames.iter().zip(&y.frames).enumerate() {
            if f.duration != g.duration {
                return Some(format!("sequence {i} frame {j}: duration"));
            }
            if let Some(d) = frame_difference(&f.frame, &g.frame) {
                return Some(format!("sequence {i} frame {j}: {d}"));
            }
        }
    }
    if a.trailing != b.trailing {
        return Some("trailing bytes".into());
    }
    None
}

pub(super) fn frame_difference(a: &Frame, b: &Frame) -> Option<String> {
    if header(a) != header(b) {
        return Some("header fields".into());
    }
    match (&a.content, &b.content) {
        (Content::Layers(x), Content::Layers(y)) => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(k, (p, q))| frame_difference(p, q).map(|d| format!("layer {k}: {d}"))),
        (Content::Pixels(_), Content::Pixels(_)) => {
            (!same_pixels_and_fields(a, b)).then(|| "pixels".to_string())
        }
        (Content::Truecolor(x), Content::Truecolor(y)) => (x != y).then(|| "pixels".to_string()),
        _ => Some("structure".into()),
    }
}
