//! The checked GAF reader.

use super::rle;
use super::*;
use crate::formats::bytes::Bytes;
use std::collections::HashMap;

/// Decodes a GAF. Follows pointers only, checks every offset and length against the input,
/// and refuses what exceeds `limits` (from the headers, before decoding any pixel). A
/// malformed payload rejects the whole file.
pub fn parse(data: &[u8], limits: &Limits) -> Result<Gaf, GafError> {
    // the headers first: a file over budget is refused before any pixel is decoded
    walk(data, limits, Mode::Count)?;
    walk(data, limits, Mode::Decode).map(|(gaf, _)| gaf)
}

/// [`parse`] that keeps the stored bytes of the simple paletted frames a sequence lists
/// directly without decoding them ([`Frame::undecoded`]): their pixels are decoded on
/// demand ([`Frame::decoded`], [`Frame::flatten`]), so reading a GAF of many frames costs
/// its headers, a pass over its RLE commands and the copy of its payloads. The layers of
/// composites and truecolor frames are decoded as [`parse`] decodes them. Refuses what
/// [`parse`] refuses and reports the same [`Warning`]s.
pub fn parse_stored(data: &[u8], limits: &Limits) -> Result<Gaf, GafError> {
    walk(data, limits, Mode::Count)?;
    walk(data, limits, Mode::Stored).map(|(gaf, _)| gaf)
}

/// [`parse_stored`] whose payloads are slices of `data` instead of copies: the result
/// shares the file's bytes (and keeps them alive while any frame holds one).
pub fn parse_stored_shared(data: &Payload, limits: &Limits) -> Result<Gaf, GafError> {
    walk(data, limits, Mode::Count)?;
    walk_in(data, Some(data), limits, Mode::Stored).map(|(gaf, _)| gaf)
}

/// The pixels [`parse`] would decode from `data` (every reference of a frame counted, as
/// [`parse`] keeps one copy per reference), found by following the headers only: no pixel is
/// decoded, so a caller can budget the memory of a decode before it starts. Refuses what
/// [`parse`] refuses for its structure or its [`Limits`].
pub fn decoded_pixels(data: &[u8], limits: &Limits) -> Result<u64, GafError> {
    walk(data, limits, Mode::Count).map(|(_, pixels)| pixels)
}

/// What a walk does with pixel payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Checked for their place only (raw) or their row lengths (RLE), not decoded or kept.
    Count,
    /// The stored bytes of frames a sequence lists directly are kept undecoded (checked as
    /// when decoding); layers are decoded.
    Stored,
    /// Decoded.
    Decode,
}

/// Follows the whole graph of `data`, doing with payloads what `mode` says.
fn walk(data: &[u8], limits: &Limits, mode: Mode) -> Result<(Gaf, u64), GafError> {
    walk_in(data, None, limits, mode)
}

/// [`walk`] keeping payloads as slices of `owner` (the same bytes as `data`) when given.
fn walk_in(
    data: &[u8],
    owner: Option<&Payload>,
    limits: &Limits,
    mode: Mode,
) -> Result<(Gaf, u64), GafError> {
    let count_only = mode == Mode::Count;
    let mut r = Reader {
        mode,
        owner,
        b: Bytes::new(data),
        limits,
        end: 0,
        frames: 0,
        pixels: 0,
        refs: HashMap::new(),
        shared: 0,
        warnings: Vec::new(),
        blocks: Vec::new(),
    };
    let version = r.u32("file header", 0)?;
    if version == VERSION_TA3D_TRUECOLOR {
        return Err(GafError::Truecolor { version });
    }
    let count = r.u32("file header", 4)?;
    let header_word8 = r.u32("file header", 8)?;
    r.need("file header", 0, HEADER_LEN)?;
    let table_len = u64::from(count) * 4;
    r.need("sequence table", HEADER_LEN, table_len)?;
    r.blocks.push((0, HEADER_LEN + table_len));
    let mut sequences = Vec::with_capacity(count as usize);
    let mut slots = Vec::with_capacity(count as usize);
    for i in 0..u64::from(count) {
        let off = r.u32("sequence table", HEADER_LEN + 4 * i)?;
        let (seq, slot) = r.sequence(off, i)?;
        sequences.push(seq);
        slots.push(slot);
    }
    let end = usize::try_from(r.end).unwrap_or(usize::MAX);
    let trailing = data.get(end..).unwrap_or_default().to_vec();
    let layout = if count_only {
        None
    } else {
        Some(Arc::new(Layout::record(data, r.end, &r.blocks, slots)))
    };
    let gaf = Gaf {
        version,
        header_word8,
        sequences,
        trailing,
        warnings: r.warnings,
        layout,
    };
    Ok((gaf, r.pixels))
}

/// The pixels of simple frame `f` from its stored bytes `payload` (raw: the indices; RLE:
/// the rows), as [`parse`] decodes them; `None` where they do not decode.
pub(super) fn decode_stored(f: &Frame, payload: &Payload) -> Option<Pixels> {
    let (w, h) = (usize::from(f.width), usize::from(f.height));
    if !f.is_compressed() {
        if payload.len() != w * h {
            return None;
        }
        return Some(Pixels {
            indices: payload.to_vec(),
            opaque: payload.iter().map(|&i| i != f.key).collect(),
            payload: Some(payload.clone()),
        });
    }
    let mut indices = vec![f.key; w * h];
    let mut opaque = vec![false; w * h];
    let mut pos = 0usize;
    for y in 0..h {
        let count = usize::from(u16::from_le_bytes([
            *payload.get(pos)?,
            *payload.get(pos + 1)?,
        ]));
        let cmds = payload.get(pos + 2..pos + 2 + count)?;
        let (a, b) = (y * w, (y + 1) * w);
        rle::decode_row(cmds, indices.get_mut(a..b)?, opaque.get_mut(a..b)?).ok()?;
        pos += 2 + count;
    }
    (pos == payload.len()).then(|| Pixels {
        indices,
        opaque,
        payload: Some(payload.clone()),
    })
}

struct Reader<'a, 'l> {
    /// What is done with pixel payloads.
    mode: Mode,
    /// What payloads are sliced from (the input itself), or `None` to copy them.
    owner: Option<&'a Payload>,
    b: Bytes<'a>,
    limits: &'l Limits,
    /// Furthest byte any block reached.
    end: u64,
    frames: usize,
    pixels: u64,
    /// Frame-header offset → times referenced.
    refs: HashMap<u64, usize>,
    /// References to a header already read once.
    shared: usize,
    warnings: Vec<Warning>,
    /// Every block range read, once per reference.
    blocks: Vec<(u64, u64)>,
}

impl Reader<'_, '_> {
    fn truncated(&self, structure: &str, offset: u64, len: u64) -> GafError {
        GafError::Truncated {
            structure: structure.to_string(),
            offset,
            len,
            file_len: self.b.len() as u64,
        }
    }

    /// Checks that `len` bytes at `offset` exist and records the block's end.
    fn need(&mut self, structure: &str, offset: u64, len: u64) -> Result<&[u8], GafError> {
        let s = self
            .b
            .slice(offset, len)
            .map_err(|_| self.truncated(structure, offset, len))?;
        self.end = self.end.max(offset + len);
        Ok(s)
    }

    fn u32(&self, structure: &str, offset: u64) -> Result<u32, GafError> {
        self.b
            .u32(offset)
            .map_err(|_| self.truncated(structure, offset, 4))
    }

    fn malformed(structure: &str, offset: u64, message: impl Into<String>) -> GafError {
        GafError::Malformed {
            structure: structure.to_string(),
            offset,
            message: message.into(),
        }
    }

    fn limit(structure: &str, offset: u64, message: impl Into<String>) -> GafError {
        GafError::Limit {
            structure: structure.to_string(),
            offset,
            message: message.into(),
        }
    }

    fn sequence(&mut self, off32: u32, index: u64) -> Result<(Sequence, SequenceSlot), GafError> {
        let off = u64::from(off32);
        let what = format!("sequence {index} header");
        let head = self.need(&what, off, SEQUENCE_HEADER_LEN)?;
        let frame_count = u16::from_le_bytes([head[0], head[1]]);
        let loop_word = u16::from_le_bytes([head[2], head[3]]);
        let word4 = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let mut name = [0u8; 32];
        name.copy_from_slice(&head[8..40]);
        let list_off = off + SEQUENCE_HEADER_LEN;
        let list_what = format!("sequence {index} frame list");
        let list = self
            .need(&list_what, list_off, u64::from(frame_count) * 8)?
            .to_vec();
        self.blocks
            .push((off, SEQUENCE_HEADER_LEN + u64::from(frame_count) * 8));
        let mut frames = Vec::with_capacity(usize::from(frame_count));
        let mut slots = Vec::with_capacity(usize::from(frame_count));
        for item in list.chunks_exact(8) {
            let ptr = u32::from_le_bytes([item[0], item[1], item[2], item[3]]);
            let duration = u32::from_le_bytes([item[4], item[5], item[6], item[7]]);
            let mut stack = Vec::new();
            let (frame, slot) = self.frame(ptr, &mut stack)?;
            frames.push(FrameEntry { duration, frame });
            slots.push(slot);
        }
        Ok((
            Sequence {
                name,
                loop_word,
                word4,
                frames,
            },
            SequenceSlot {
                offset: off32,
                frames: slots,
            },
        ))
    }

    /// Reads the frame header at `off`; `stack` holds the headers of the enclosing
    /// composites (cycle and depth checks).
    fn frame(&mut self, off32: u32, stack: &mut Vec<u64>) -> Result<(Frame, FrameSlot), GafError> {
        let off = u64::from(off32);
        let what = "frame header";
        if stack.contains(&off) {
            return Err(Self::malformed(
                what,
                off,
                "layer table refers back to an enclosing frame (cycle)",
            ));
        }
        if stack.len() > self.limits.max_layer_depth {
            return Err(Self::limit(
                what,
                off,
                format!("layers nested deeper than {}", self.limits.max_layer_depth),
            ));
        }
        let seen = self.refs.entry(off).or_insert(0);
        *seen += 1;
        if *seen > 1 {
            self.shared += 1;
        }
        if self.shared > self.limits.max_frame_references {
            return Err(Self::limit(
                what,
                off,
                format!(
                    "more than {} repeated references to frame headers",
                    self.limits.max_frame_references
                ),
            ));
        }
        self.frames += 1;
        if self.frames > self.limits.max_frames {
            return Err(Self::limit(
                what,
                off,
                format!("more than {} frames and layers", self.limits.max_frames),
            ));
        }
        let h = self.need(what, off, FRAME_HEADER_LEN)?;
        let width = u16::from_le_bytes([h[0], h[1]]);
        let height = u16::from_le_bytes([h[2], h[3]]);
        let origin_x = i16::from_le_bytes([h[4], h[5]]);
        let origin_y = i16::from_le_bytes([h[6], h[7]]);
        let (key, compressed, layer_count, blend) = (h[8], h[9], h[10], h[11]);
        let word12 = u32::from_le_bytes([h[12], h[13], h[14], h[15]]);
        let data32 = u32::from_le_bytes([h[16], h[17], h[18], h[19]]);
        let data_off = u64::from(data32);
        let word20 = u32::from_le_bytes([h[20], h[21], h[22], h[23]]);
        self.blocks.push((off, FRAME_HEADER_LEN));

        let (content, body) = if layer_count > 0 {
            let table_what = "layer table";
            let table = self
                .need(table_what, data_off, u64::from(layer_count) * 4)?
                .to_vec();
            self.blocks.push((data_off, u64::from(layer_count) * 4));
            stack.push(off);
            let mut layers = Vec::with_capacity(usize::from(layer_count));
            let mut slots = Vec::with_capacity(usize::from(layer_count));
            for p in table.chunks_exact(4) {
                let child = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
                let (layer, slot) = self.frame(child, stack)?;
                layers.push(layer);
                slots.push(slot);
            }
            stack.pop();
            (Content::Layers(layers), SlotBody::Layers(slots))
        } else {
            let n = u64::from(width) * u64::from(height);
            if n > self.limits.max_frame_pixels {
                return Err(Self::limit(
                    what,
                    off,
                    format!(
                        "{width}×{height} frame over {} pixels",
                        self.limits.max_frame_pixels
                    ),
                ));
            }
            self.pixels += n;
            if self.pixels > self.limits.max_total_pixels {
                return Err(Self::limit(
                    what,
                    off,
                    format!(
                        "more than {} decoded pixels in the file",
                        self.limits.max_total_pixels
                    ),
                ));
            }
            // a frame a sequence lists directly (not a layer) may stay undecoded
            let keep = self.mode == Mode::Count || (self.mode == Mode::Stored && stack.is_empty());
            let content = if Argb::from_byte(compressed).is_some() {
                self.truecolor(data_off, n)?
            } else if compressed == 0 {
                self.raw(data_off, width, height, key, keep)?
            } else {
                self.rle(data_off, width, height, key, keep)?
            };
            let len = match &content {
                Content::Pixels(p) => p.payload.as_ref().map_or(0, |p| p.len() as u64),
                Content::Truecolor(w) => 2 * w.len() as u64,
                Content::Layers(_) => 0,
            };
            self.blocks.push((data_off, len));
            (content, SlotBody::Payload(len))
        };
        let frame = Frame {
            width,
            height,
            origin_x,
            origin_y,
            key,
            compressed,
            blend,
            word12,
            word20,
            content,
        };
        let slot = FrameSlot {
            header: off32,
            data: data32,
            body,
        };
        Ok((frame, slot))
    }

    /// `n` little-endian 16-bit words (a truecolor frame).
    fn truecolor(&mut self, off: u64, n: u64) -> Result<Content, GafError> {
        let bytes = self.need("truecolor pixel data", off, 2 * n)?;
        Ok(Content::Truecolor(
            bytes
                .chunks_exact(2)
                .map(|p| u16::from_le_bytes([p[0], p[1]]))
                .collect(),
        ))
    }

    /// A raw payload; `undecoded`: checked (and, unless counting, kept) but not decoded.
    fn raw(
        &mut self,
        off: u64,
        width: u16,
        height: u16,
        key: u8,
        undecoded: bool,
    ) -> Result<Content, GafError> {
        let n = u64::from(width) * u64::from(height);
        let keep = self.mode != Mode::Count;
        let owner = self.owner;
        let bytes = self.need("raw pixel data", off, n)?;
        if undecoded {
            return Ok(Content::Pixels(Pixels {
                payload: keep.then(|| shared_or_copy(owner, bytes)),
                indices: Vec::new(),
                opaque: Vec::new(),
            }));
        }
        let indices = bytes.to_vec();
        let opaque = indices.iter().map(|&i| i != key).collect();
        Ok(Content::Pixels(Pixels {
            payload: Some(shared_or_copy(owner, bytes)),
            indices,
            opaque,
        }))
    }

    /// An RLE payload; `undecoded`: not decoded (when counting, only its row lengths are
    /// checked; else its commands are checked and its rows reported as when decoding, and the
    /// payload is kept).
    fn rle(
        &mut self,
        off: u64,
        width: u16,
        height: u16,
        key: u8,
        undecoded: bool,
    ) -> Result<Content, GafError> {
        let (w, h) = (usize::from(width), usize::from(height));
        let counting = self.mode == Mode::Count;
        let mut pixels = (!undecoded).then(|| (vec![key; w * h], vec![false; w * h]));
        let mut pos = off;
        for y in 0..h {
            let count = self
                .b
                .u16(pos)
                .map_err(|_| self.truncated(&format!("RLE row {y} byte count"), pos, 2))?;
            if !counting {
                let cmds = self.b.slice(pos + 2, u64::from(count)).map_err(|_| {
                    self.truncated(&format!("RLE row {y}"), pos + 2, u64::from(count))
                })?;
                let (a, b) = (y * w, (y + 1) * w);
                let outcome = match pixels.as_mut() {
                    Some((indices, opaque)) => {
                        rle::decode_row(cmds, &mut indices[a..b], &mut opaque[a..b])
                    }
                    None => rle::scan_row(cmds),
                }
                .map_err(|e| {
                    Self::malformed(
                        &format!("RLE row {y}"),
                        pos + 2 + e.at as u64,
                        format!(
                            "command needs {} byte(s) past the row's {count}-byte length",
                            e.needs
                        ),
                    )
                })?;
                if count > 0 && outcome.covered < w {
                    self.warnings.push(Warning {
                        offset: pos,
                        message: format!(
                            "RLE row {y} covers {} of {w} pixels; padded transparent",
                            outcome.covered
                        ),
                    });
                } else if outcome.covered > w {
                    self.warnings.push(Warning {
                        offset: pos,
                        message: format!(
                            "RLE row {y} covers {} pixels, clamped to the width {w}",
                            outcome.covered
                        ),
                    });
                }
            }
            pos += 2 + u64::from(count);
        }
        let owner = self.owner;
        let bytes = self.need("RLE pixel data", off, pos - off)?;
        let payload = (!counting).then(|| shared_or_copy(owner, bytes));
        let (indices, opaque) = pixels.unwrap_or_default();
        Ok(Content::Pixels(Pixels {
            payload,
            indices,
            opaque,
        }))
    }
}

/// Stored bytes `bytes` (a slice of the input) as a payload: a slice of `owner` (the input)
/// when given, else a copy.
fn shared_or_copy(owner: Option<&Payload>, bytes: &[u8]) -> Payload {
    let at = owner.and_then(|o| {
        let start = (bytes.as_ptr() as usize).checked_sub(o.as_ptr() as usize)?;
        let end = start.checked_add(bytes.len())?;
        (end <= o.len()).then_some((o, start, end))
    });
    match at {
        Some((o, start, end)) => o.slice(start..end),
        None => Payload::copy_from_slice(bytes),
    }
}
