//! GAF sprite banks (and TA: Kingdoms `.taf`: paletted, or truecolor ARGB4444/ARGB1555 frames
//! named by the frame format byte, see [`Argb`]).
//!
//! [`parse`] follows pointers only (blocks may be in any order), checks every offset and
//! length, budgets frames and pixels with [`Limits`], and records where every block sat
//! ([`Layout`]). [`write()`] puts the blocks back where they were (edited blocks that no
//! longer fit move; see [`write_with_layout`]), so an unchanged file is rewritten byte for
//! byte whatever its layout; a GAF without a layout gets the canonical one (header, sequence
//! table, then per sequence its header, frame list and frames, each frame header immediately
//! followed by its data). Frames keep their original payload bytes.

mod layout;
mod read;
pub mod rle;
mod truecolor;
mod write;

pub use layout::{
    sequence_len, write_with_layout, Check, Filler, FrameSlot, Layout, SequenceSlot, SlotBody,
};
pub use read::{decoded_pixels, parse, parse_stored, parse_stored_shared};
pub use truecolor::{Argb, FORMAT_ARGB1555, FORMAT_ARGB4444};
pub use write::{write, write_canonical};

use std::fmt;
use std::sync::Arc;

/// The version word Cavedog's tools write.
pub const VERSION_STANDARD: u32 = 0x0001_0100;
/// TA3D's truecolor variant: not a Cavedog GAF.
pub const VERSION_TA3D_TRUECOLOR: u32 = 0x0001_0101;
/// Largest canvas [`Frame::flatten`] draws: 4096 × 4096 pixels, far above any stock frame.
pub const MAX_FLAT_PIXELS: u64 = 16 << 20;
/// Size of the file header.
pub const HEADER_LEN: u64 = 12;
/// Size of a sequence header (before its frame list).
pub const SEQUENCE_HEADER_LEN: u64 = 40;
/// Size of a frame header.
pub const FRAME_HEADER_LEN: u64 = 24;

/// A decoded GAF: everything needed to write it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gaf {
    /// Header +0: 0x00010100, or 0 in a few stock files; kept as found.
    pub version: u32,
    /// Header +8: zero in every known file; kept as found.
    pub header_word8: u32,
    /// The sequences, in table order.
    pub sequences: Vec<Sequence>,
    /// Bytes after the last block the pointers reach (kept for lossless rewrites).
    pub trailing: Vec<u8>,
    /// Non-fatal findings while reading (short RLE rows, clamped rows). Not written.
    pub warnings: Vec<Warning>,
    /// Where the blocks sat in the file this was read from; [`write()`] puts them back there.
    /// `None` for a GAF made by code: [`write()`] then uses the canonical layout.
    pub layout: Option<Arc<Layout>>,
}

/// One named animation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequence {
    /// The 32 raw name bytes, NUL-padded (garbage after the NUL is kept).
    pub name: [u8; 32],
    /// Sequence +2: low byte non-zero = the sequence loops.
    pub loop_word: u16,
    /// Sequence +4: unused by the game; kept.
    pub word4: u32,
    /// The frames with their durations.
    pub frames: Vec<FrameEntry>,
}

impl Sequence {
    /// The name up to the first NUL, as bytes.
    pub fn name_bytes(&self) -> &[u8] {
        let end = self.name.iter().position(|&b| b == 0).unwrap_or(32);
        &self.name[..end]
    }

    /// The name up to the first NUL, lossily decoded.
    pub fn name_str(&self) -> String {
        String::from_utf8_lossy(self.name_bytes()).into_owned()
    }

    /// Builds a NUL-padded name buffer; `None` if `name` is over 32 bytes.
    pub fn name_buffer(name: &[u8]) -> Option<[u8; 32]> {
        if name.len() > 32 {
            return None;
        }
        let mut buf = [0u8; 32];
        buf[..name.len()].copy_from_slice(name);
        Some(buf)
    }

    /// True when the low byte of the loop word is set.
    pub fn loops(&self) -> bool {
        self.loop_word & 0xFF != 0
    }
}

/// A frame-list item: the frame and how long it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameEntry {
    /// Duration in 30 Hz ticks; the game reads the low 16 bits and shows max(d, 1) ticks.
    pub duration: u32,
    /// The frame.
    pub frame: Frame,
}

/// A frame (or a layer of a composite frame) with every header field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// +0 width in pixels.
    pub width: u16,
    /// +2 height in pixels.
    pub height: u16,
    /// +4 anchor x: the pixel that lands on the pen (signed).
    pub origin_x: i16,
    /// +6 anchor y.
    pub origin_y: i16,
    /// +8 transparency key (per frame).
    pub key: u8,
    /// +9 storage: 0 raw, 4 / 5 truecolor ([`Argb`]) on a frame without layers, anything
    /// else RLE (the exact byte is kept).
    pub compressed: u8,
    /// +11 blend byte (a set byte on a layer = drawn translucently).
    pub blend: u8,
    /// +12 editor scratch word; kept.
    pub word12: u32,
    /// +20 word, zero in stock files; kept.
    pub word20: u32,
    /// Pixels, or the layers of a composite (+10 = their count).
    pub content: Content,
}

/// What a frame holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A simple frame.
    Pixels(Pixels),
    /// A composite: layers drawn in order, each with its origin on the parent's origin.
    Layers(Vec<Frame>),
    /// A truecolor frame (+9 = 4 or 5): one 16-bit ARGB word per pixel, row-major, in the
    /// format [`Frame::truecolor`] names. Stored as exactly these little-endian words.
    Truecolor(Vec<u16>),
}

/// Stored bytes of a frame, shared: a slice of the file they were read from
/// ([`parse_stored_shared`]) or bytes of their own; cloning one shares them.
pub type Payload = ::bytes::Bytes;

/// The pixels of a simple frame.
#[derive(Clone, PartialEq, Eq)]
pub struct Pixels {
    /// Palette index per pixel, row-major; transparent pixels hold the frame's key.
    pub indices: Vec<u8>,
    /// True where the game draws the pixel: raw frames: index != key; RLE: not skipped.
    pub opaque: Vec<bool>,
    /// The stored payload bytes these pixels were decoded from (raw bytes or RLE rows),
    /// reused verbatim by [`write()`]. Must be `None` once the pixels or storage change.
    pub payload: Option<Payload>,
}

impl fmt::Debug for Pixels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pixels")
            .field("len", &self.indices.len())
            .field("payload", &self.payload.as_ref().map(|p| p.len()))
            .finish()
    }
}

impl Frame {
    /// True for RLE storage (never for a truecolor frame).
    pub fn is_compressed(&self) -> bool {
        self.compressed != 0 && !matches!(self.content, Content::Truecolor(_))
    }

    /// The pixel format of a truecolor frame; `None` for paletted frames and composites.
    pub fn truecolor(&self) -> Option<Argb> {
        match &self.content {
            Content::Truecolor(_) => Argb::from_byte(self.compressed),
            _ => None,
        }
    }

    /// The layer count byte (+10) this frame is written with.
    pub fn layer_count(&self) -> usize {
        match &self.content {
            Content::Pixels(_) | Content::Truecolor(_) => 0,
            Content::Layers(l) => l.len(),
        }
    }

    /// True for a simple paletted frame read by [`parse_stored`] and not decoded: it holds
    /// its stored bytes only (no indices or opacity although it has pixels). [`write()`]
    /// writes them as they are; [`Frame::decoded`] gives its pixels.
    pub fn undecoded(&self) -> bool {
        match &self.content {
            Content::Pixels(p) => {
                p.payload.is_some()
                    && p.indices.is_empty()
                    && p.opaque.is_empty()
                    && self.width > 0
                    && self.height > 0
            }
            Content::Layers(_) | Content::Truecolor(_) => false,
        }
    }

    /// The pixels of a simple paletted frame, decoded from its stored bytes if it is
    /// [`Frame::undecoded`] (as [`parse`] decodes them). `None` for composites, truecolor
    /// frames and stored bytes that do not decode.
    pub fn decoded(&self) -> Option<std::borrow::Cow<'_, Pixels>> {
        let p = self.pixels()?;
        if !self.undecoded() {
            return Some(std::borrow::Cow::Borrowed(p));
        }
        read::decode_stored(self, p.payload.as_ref()?).map(std::borrow::Cow::Owned)
    }

    /// Pixels (for simple frames).
    pub fn pixels(&self) -> Option<&Pixels> {
        match &self.content {
            Content::Pixels(p) => Some(p),
            Content::Layers(_) | Content::Truecolor(_) => None,
        }
    }

    /// The frame as the game's compositor draws it (palette indices; a truecolor frame or layer
    /// covers its box but draws nothing): simple frames as they are; composites
    /// on the union box of all their (nested) layers, each layer placed so that its origin
    /// lands on the pen, later layers covering earlier ones, nothing clipped. `None` when
    /// that box holds more than [`MAX_FLAT_PIXELS`] (layers far apart in a crafted file).
    /// An [`undecoded`](Frame::undecoded) frame is decoded for it.
    pub fn flatten(&self) -> Option<Flat> {
        if let Some(flat) = self.flatten_simple() {
            return Some(flat);
        }
        let (x0, y0, x1, y1) = self.bounds();
        let (w, h) = ((x1 - x0).max(0) as usize, (y1 - y0).max(0) as usize);
        if (w as u64) * (h as u64) > MAX_FLAT_PIXELS {
            return None;
        }
        let mut flat = Flat {
            width: w as u32,
            height: h as u32,
            origin_x: -x0,
            origin_y: -y0,
            indices: vec![self.key; w * h],
            opaque: vec![false; w * h],
        };
        self.draw(&mut flat);
        Some(flat)
    }

    /// [`Frame::flatten`] of a simple paletted frame: its decoded pixels as they are (what
    /// drawing them on a canvas of their own size gives), without a copy when they were
    /// decoded for it. `None` for other frames.
    fn flatten_simple(&self) -> Option<Flat> {
        if !matches!(self.content, Content::Pixels(_)) {
            return None;
        }
        let n = usize::from(self.width) * usize::from(self.height);
        if n as u64 > MAX_FLAT_PIXELS {
            return None;
        }
        let px = self.decoded()?;
        if px.indices.len() != n || px.opaque.len() != n {
            return None;
        }
        let Pixels {
            mut indices,
            opaque,
            ..
        } = px.into_owned();
        // (an undrawn pixel holds the key, as on a fresh canvas)
        for (i, &o) in indices.iter_mut().zip(&opaque) {
            if !o {
                *i = self.key;
            }
        }
        Some(Flat {
            width: u32::from(self.width),
            height: u32::from(self.height),
            origin_x: i32::from(self.origin_x),
            origin_y: i32::from(self.origin_y),
            indices,
            opaque,
        })
    }

    /// Box of drawn area relative to the pen: (left, top, right, bottom), exclusive.
    /// A simple frame covers its own rectangle; a composite the union of its layers'.
    pub fn bounds(&self) -> (i32, i32, i32, i32) {
        match &self.content {
            Content::Pixels(_) | Content::Truecolor(_) => {
                let l = -i32::from(self.origin_x);
                let t = -i32::from(self.origin_y);
                (l, t, l + i32::from(self.width), t + i32::from(self.height))
            }
            Content::Layers(layers) => {
                let mut b: Option<(i32, i32, i32, i32)> = None;
                for layer in layers {
                    let (l, t, r, bo) = layer.bounds();
                    if r <= l || bo <= t {
                        continue;
                    }
                    b = Some(match b {
                        None => (l, t, r, bo),
                        Some((a, c, d, e)) => (a.min(l), c.min(t), d.max(r), e.max(bo)),
                    });
                }
                b.unwrap_or((0, 0, 0, 0))
            }
        }
    }

    fn draw(&self, flat: &mut Flat) {
        match &self.content {
            Content::Pixels(_) => {
                // (an undecoded frame is decoded for the drawing)
                let Some(px) = self.decoded() else {
                    return;
                };
                let left = flat.origin_x - i32::from(self.origin_x);
                let top = flat.origin_y - i32::from(self.origin_y);
                let w = usize::from(self.width);
                let fw = flat.width as usize;
                // the columns of the frame that land on the canvas, the same for every row
                let x0 = usize::try_from(-i64::from(left)).unwrap_or(0).min(w);
                let x1 = usize::try_from(i64::from(flat.width) - i64::from(left))
                    .unwrap_or(0)
                    .min(w);
                for (y, (row, orow)) in px
                    .indices
                    .chunks(w.max(1))
                    .zip(px.opaque.chunks(w.max(1)))
                    .enumerate()
                {
                    let fy = top + y as i32;
                    if fy < 0 || fy >= flat.height as i32 || x0 >= x1 {
                        continue;
                    }
                    let (Some(src), Some(smask)) = (row.get(x0..x1), orow.get(x0..x1)) else {
                        continue;
                    };
                    let at = fy as usize * fw + (i64::from(left) + x0 as i64) as usize;
                    let (Some(dst), Some(dmask)) = (
                        flat.indices.get_mut(at..at + src.len()),
                        flat.opaque.get_mut(at..at + src.len()),
                    ) else {
                        continue;
                    };
                    for (((d, m), &i), &o) in dst.iter_mut().zip(dmask).zip(src).zip(smask) {
                        if o {
                            *d = i;
                            *m = true;
                        }
                    }
                }
            }
            Content::Layers(layers) => {
                for layer in layers {
                    layer.draw(flat);
                }
            }
            Content::Truecolor(_) => {}
        }
    }
}

/// A frame drawn onto its own canvas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flat {
    /// Canvas width.
    pub width: u32,
    /// Canvas height.
    pub height: u32,
    /// The pen's x in canvas pixels.
    pub origin_x: i32,
    /// The pen's y in canvas pixels.
    pub origin_y: i32,
    /// Palette index per pixel (undrawn pixels hold the frame's key).
    pub indices: Vec<u8>,
    /// True where something was drawn.
    pub opaque: Vec<bool>,
}

/// A non-fatal finding of the reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Byte offset of the structure concerned.
    pub offset: u64,
    /// What was found.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {:#x}: {}", self.offset, self.message)
    }
}

/// Why a GAF could not be read or written. Read errors name the structure and byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GafError {
    /// TA3D's truecolor files (version 0x00010101).
    #[error("gaf: version {version:#010x} at offset 0: not a Cavedog GAF (TA3D truecolor variant); tafs reads paletted GAFs and TA: Kingdoms truecolor .taf only")]
    Truecolor {
        /// The version word found.
        version: u32,
    },
    /// A structure reaches past the end of the file.
    #[error("gaf: {structure} at offset {offset:#x}: {len} bytes needed, file has {file_len}")]
    Truncated {
        /// What was being read.
        structure: String,
        /// Its offset.
        offset: u64,
        /// Bytes it needs.
        len: u64,
        /// File length.
        file_len: u64,
    },
    /// A structure holds an impossible value.
    #[error("gaf: {structure} at offset {offset:#x}: {message}")]
    Malformed {
        /// What was being read.
        structure: String,
        /// Its offset.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A budget of [`Limits`] was exceeded.
    #[error("gaf: {structure} at offset {offset:#x}: over the limit: {message}")]
    Limit {
        /// What was being read.
        structure: String,
        /// Its offset.
        offset: u64,
        /// Which budget.
        message: String,
    },
    /// The model cannot be written (a value the format cannot hold).
    #[error("gaf: cannot write {structure}: {message}")]
    Unwritable {
        /// Which part of the model.
        structure: String,
        /// What is wrong.
        message: String,
    },
}

pub use crate::formats::Limits;

#[cfg(test)]
mod tests;
