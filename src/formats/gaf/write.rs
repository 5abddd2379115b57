//! The GAF writer: the recorded layout when there is one, else the canonical layout;
//! original payloads reused.

use super::rle;
use super::*;
use crate::formats::bytes::PutLe;

/// Writes `gaf`: where its [`Layout`](super::Layout) says when it has one (see
/// [`write_with_layout`](super::write_with_layout)), else in canonical layout: header, sequence table, then per sequence its header,
/// its frame list and its frames (each frame header immediately followed by its data; a
/// composite by its layer table and then its layers), then the trailing bytes.
///
/// Frames keep their original payload bytes when they have them; others are encoded (RLE by
/// the command table, or raw). Refuses, returning an error and no bytes, what the format
/// cannot hold.
pub fn write(gaf: &Gaf) -> Result<Vec<u8>, GafError> {
    if let Some(layout) = &gaf.layout {
        return super::write_with_layout(gaf, layout);
    }
    write_canonical(gaf)
}

/// Writes `gaf` in canonical layout, ignoring any recorded layout.
pub fn write_canonical(gaf: &Gaf) -> Result<Vec<u8>, GafError> {
    let count = u32::try_from(gaf.sequences.len())
        .map_err(|_| unwritable("file header", "more than 2^32 sequences"))?;
    let mut out = Vec::new();
    out.put_u32(gaf.version);
    out.put_u32(count);
    out.put_u32(gaf.header_word8);
    let table = out.len();
    out.resize(table + 4 * gaf.sequences.len(), 0);
    for (i, seq) in gaf.sequences.iter().enumerate() {
        let what = || format!("sequence {i} ({})", seq.name_str());
        let here = offset(&out, &what())?;
        out[table + 4 * i..table + 4 * i + 4].copy_from_slice(&here.to_le_bytes());
        let fc = u16::try_from(seq.frames.len()).map_err(|_| {
            unwritable(
                what(),
                format!("{} frames, at most 65535", seq.frames.len()),
            )
        })?;
        out.put_u16(fc);
        out.put_u16(seq.loop_word);
        out.put_u32(seq.word4);
        out.extend_from_slice(&seq.name);
        let list = out.len();
        out.resize(list + 8 * seq.frames.len(), 0);
        for (j, entry) in seq.frames.iter().enumerate() {
            let at = write_frame(&mut out, &entry.frame, &format!("{} frame {j}", what()), 0)?;
            let slot = list + 8 * j;
            out[slot..slot + 4].copy_from_slice(&at.to_le_bytes());
            out[slot + 4..slot + 8].copy_from_slice(&entry.duration.to_le_bytes());
        }
    }
    out.extend_from_slice(&gaf.trailing);
    offset(&out, "file")?;
    Ok(out)
}

fn unwritable(structure: impl Into<String>, message: impl Into<String>) -> GafError {
    GafError::Unwritable {
        structure: structure.into(),
        message: message.into(),
    }
}

fn offset(out: &[u8], what: &str) -> Result<u32, GafError> {
    u32::try_from(out.len()).map_err(|_| unwritable(what, "file would pass 4 GiB"))
}

/// Depth guard for models built by code (parsed ones are already bounded by Limits).
const MAX_WRITE_DEPTH: usize = 64;

/// The layer count byte of `f` (+10); refuses composites with no or over 255 layers.
pub(super) fn layer_count(f: &Frame, what: &str) -> Result<u8, GafError> {
    match &f.content {
        Content::Pixels(_) | Content::Truecolor(_) => Ok(0),
        Content::Layers(l) if l.is_empty() => {
            Err(unwritable(what, "composite frame without layers"))
        }
        Content::Layers(l) => u8::try_from(l.len())
            .map_err(|_| unwritable(what, format!("{} layers, at most 255", l.len()))),
    }
}

/// The 24 header bytes of `f` with data pointer `data`.
pub(super) fn header(f: &Frame, layer_count: u8, data: u32) -> [u8; 24] {
    let mut h = Vec::with_capacity(24);
    h.put_u16(f.width);
    h.put_u16(f.height);
    h.put_i16(f.origin_x);
    h.put_i16(f.origin_y);
    h.extend_from_slice(&[f.key, f.compressed, layer_count, f.blend]);
    h.put_u32(f.word12);
    h.put_u32(data);
    h.put_u32(f.word20);
    let mut out = [0u8; 24];
    out.copy_from_slice(&h);
    out
}

/// The stored bytes of a simple frame: its original payload (all an
/// [`undecoded`](Frame::undecoded) frame has), else RLE rows or raw indices.
pub(super) fn payload<'p>(
    f: &Frame,
    px: &'p Pixels,
    what: &str,
) -> Result<std::borrow::Cow<'p, [u8]>, GafError> {
    use std::borrow::Cow;
    if let (Some(p), true) = (&px.payload, f.undecoded()) {
        return Ok(Cow::Borrowed(p));
    }
    let n = usize::from(f.width) * usize::from(f.height);
    if px.indices.len() != n || px.opaque.len() != n {
        return Err(unwritable(
            what,
            format!(
                "{}×{} frame with {} pixels ({} opacity flags)",
                f.width,
                f.height,
                px.indices.len(),
                px.opaque.len()
            ),
        ));
    }
    if let Some(p) = &px.payload {
        Ok(Cow::Borrowed(p))
    } else if f.is_compressed() {
        rle::encode(
            usize::from(f.width),
            usize::from(f.height),
            &px.indices,
            &px.opaque,
        )
        .map(Cow::Owned)
        .map_err(|row| unwritable(what, format!("RLE row {row} longer than 65535 bytes")))
    } else {
        Ok(Cow::Borrowed(&px.indices))
    }
}

/// The stored bytes of a truecolor frame: its words, little-endian. Refuses a word count
/// other than width × height or a format byte that names no truecolor format.
pub(super) fn truecolor_payload(f: &Frame, words: &[u16], what: &str) -> Result<Vec<u8>, GafError> {
    let n = usize::from(f.width) * usize::from(f.height);
    if words.len() != n {
        return Err(unwritable(
            what,
            format!(
                "{}×{} truecolor frame with {} words",
                f.width,
                f.height,
                words.len()
            ),
        ));
    }
    if Argb::from_byte(f.compressed).is_none() {
        return Err(unwritable(
            what,
            format!(
                "truecolor frame with format byte {} (4 = ARGB4444, 5 = ARGB1555)",
                f.compressed
            ),
        ));
    }
    Ok(words.iter().flat_map(|w| w.to_le_bytes()).collect())
}

fn write_frame(out: &mut Vec<u8>, f: &Frame, what: &str, depth: usize) -> Result<u32, GafError> {
    if depth > MAX_WRITE_DEPTH {
        return Err(unwritable(what, "layers nested too deep"));
    }
    let at = offset(out, what)?;
    let layer_count = layer_count(f, what)?;
    out.extend_from_slice(&header(f, layer_count, at + FRAME_HEADER_LEN as u32));
    match &f.content {
        Content::Pixels(px) => {
            let bytes = payload(f, px, what)?;
            out.extend_from_slice(&bytes);
        }
        Content::Truecolor(words) => {
            let bytes = truecolor_payload(f, words, what)?;
            out.extend_from_slice(&bytes);
        }
        Content::Layers(layers) => {
            let table = out.len();
            out.resize(table + 4 * layers.len(), 0);
            for (k, layer) in layers.iter().enumerate() {
                let child = write_frame(out, layer, &format!("{what} layer {k}"), depth + 1)?;
                out[table + 4 * k..table + 4 * k + 4].copy_from_slice(&child.to_le_bytes());
            }
        }
    }
    offset(out, what)?;
    Ok(at)
}
