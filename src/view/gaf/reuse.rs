//! Stored bytes of unchanged frames kept from the original GAF ([`reuse_payloads`]), and
//! where two GAFs differ ([`first_difference`]).

use crate::formats::gaf::{Content, Frame, Gaf};
use std::collections::HashMap;

/// Gives every frame that equals a frame of `base` (header fields and pixels) the stored bytes
/// of that frame, so unchanged frames are written exactly as they were. Frames that already
/// have stored bytes (taken from the base as they were) are left as they are.
pub fn reuse_payloads(gaf: &mut Gaf, base: &Gaf) {
    fn needs(f: &Frame) -> bool {
        match &f.content {
            Content::Pixels(p) => p.payload.is_none(),
            Content::Truecolor(_) => false,
            Content::Layers(l) => l.iter().any(needs),
        }
    }
    let any = gaf
        .sequences
        .iter()
        .any(|s| s.frames.iter().any(|fe| needs(&fe.frame)));
    if !any {
        return;
    }
    let mut index: HashMap<u64, Vec<&Frame>> = HashMap::new();
    fn collect<'a>(f: &'a Frame, index: &mut HashMap<u64, Vec<&'a Frame>>) {
        match &f.content {
            Content::Pixels(p) if p.payload.is_some() => {
                index.entry(frame_hash(f)).or_default().push(f);
            }
            // truecolor words are written as they are: nothing to reuse
            Content::Pixels(_) | Content::Truecolor(_) => {}
            Content::Layers(l) => l.iter().for_each(|x| collect(x, index)),
        }
    }
    for s in &base.sequences {
        for fe in &s.frames {
            collect(&fe.frame, &mut index);
        }
    }
    fn apply(f: &mut Frame, index: &HashMap<u64, Vec<&Frame>>) {
        let h = match &f.content {
            Content::Pixels(p) if p.payload.is_none() => frame_hash(f),
            _ => 0,
        };
        match &mut f.content {
            Content::Layers(l) => l.iter_mut().for_each(|x| apply(x, index)),
            Content::Truecolor(_) => {}
            Content::Pixels(p) if p.payload.is_some() => {}
            Content::Pixels(_) => {
                let found = index.get(&h).and_then(|cands| {
                    cands
                        .iter()
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
            apply(&mut fe.frame, &index);
        }
    }
}

/// Equality of what a stored payload encodes: size, key, storage and drawn pixels.
pub(super) fn same_pixels_and_fields(a: &Frame, b: &Frame) -> bool {
    let (Some(pa), Some(pb)) = (a.pixels(), b.pixels()) else {
        return false;
    };
    a.width == b.width
        && a.height == b.height
        && a.key == b.key
        && a.compressed == b.compressed
        && pa.opaque == pb.opaque
        && pa
            .indices
            .iter()
            .zip(&pb.indices)
            .zip(&pa.opaque)
            .all(|((x, y), o)| !*o || x == y)
        && (a.is_compressed() || pa.indices == pb.indices)
}

/// Pixels of a frame [`frame_hash`] looks at, spread evenly over it.
const HASH_SAMPLES: usize = 1024;

/// A hash of part of what [`same_pixels_and_fields`] compares (size, key, storage, and the
/// mask and drawn pixels at [`HASH_SAMPLES`] places spread over the frame): equal frames hash
/// equal; candidates are then compared in full. Hashing every frame of a large GAF at each
/// commit costs a few pixels per frame, not the GAF's size.
pub(super) fn frame_hash(f: &Frame) -> u64 {
    let mut h = crc32fast::Hasher::new();
    h.update(&f.width.to_le_bytes());
    h.update(&f.height.to_le_bytes());
    h.update(&[f.key, f.compressed]);
    if let Some(p) = f.pixels() {
        let n = p.indices.len().min(p.opaque.len());
        let step = n.div_ceil(HASH_SAMPLES).max(1);
        let mut buf = Vec::with_capacity(2 * HASH_SAMPLES + 16);
        buf.extend_from_slice(&(n as u64).to_le_bytes());
        for k in (0..n).step_by(step) {
            let (i, o) = (p.indices.get(k), p.opaque.get(k));
            let o = o.copied().unwrap_or(false);
            buf.push(u8::from(o));
            buf.push(if o { i.copied().unwrap_or(0) } else { 0 });
        }
        h.update(&buf);
    }
    u64::from(h.finalize())
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
    let fields = |f: &Frame| {
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
    };
    if fields(a) != fields(b) {
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
