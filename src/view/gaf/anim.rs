//! A sequence as an animation (`animated.png`, `tafs gaf export`): frames flattened on one
//! canvas with the chosen transparency rule, written as APNG.

use crate::formats::gaf::{self, Content, Flat, Frame, Sequence};
use crate::formats::palette::Palette;
use crate::view::image::indexed_encoder;
use std::io::Write;

/// How export decides transparency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transparency {
    /// The game's rule (skips and keys).
    Game,
    /// TA: Kingdoms corner guess on raw frames.
    Heuristic,
    /// Everything drawn.
    None,
    /// This palette index transparent.
    Index(u8),
}

/// A sequence drawn frame by frame on one canvas around the pen.
pub struct Animation {
    /// Canvas width.
    pub width: u32,
    /// Canvas height.
    pub height: u32,
    /// The transparent palette slot.
    pub slot: u8,
    /// Each frame flattened, with its duration in ticks (≥ 1).
    frames: Vec<(Flat, u32)>,
    /// Canvas position of the pen.
    pen: (i32, i32),
}

impl Animation {
    /// Number of frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// True when there are no frames.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Duration of frame `i` in ticks (≥ 1).
    pub fn ticks(&self, i: usize) -> u32 {
        self.frames.get(i).map_or(1, |f| f.1)
    }

    /// The canvas of frame `i` (drawn on demand, so only one canvas is in memory at a time).
    pub fn canvas(&self, i: usize) -> Vec<u8> {
        let (w, h) = (self.width as usize, self.height as usize);
        let mut canvas = vec![self.slot; w * h];
        let Some((f, _)) = self.frames.get(i) else {
            return canvas;
        };
        let (dx, dy) = (self.pen.0 - f.origin_x, self.pen.1 - f.origin_y);
        let fw = f.width as usize;
        for (y, (row, orow)) in f
            .indices
            .chunks(fw.max(1))
            .zip(f.opaque.chunks(fw.max(1)))
            .enumerate()
        {
            let cy = y as i64 + i64::from(dy);
            if cy < 0 || cy >= h as i64 {
                continue;
            }
            for (x, (&v, &o)) in row.iter().zip(orow).enumerate() {
                let cx = x as i64 + i64::from(dx);
                if o && cx >= 0 && cx < w as i64 {
                    canvas[cy as usize * w + cx as usize] = v;
                }
            }
        }
        canvas
    }
}

/// Lays a sequence out for animation under a transparency mode. Errors when it has no
/// pixels, or when a frame or the shared canvas would exceed [`gaf::MAX_FLAT_PIXELS`].
pub fn animation(seq: &Sequence, mode: Transparency) -> Result<Animation, String> {
    let mut flats = Vec::with_capacity(seq.frames.len());
    for (i, fe) in seq.frames.iter().enumerate() {
        let mut flat = fe.frame.flatten().ok_or_else(|| {
            format!(
                "frame {i}: its layers span more than {} pixels",
                gaf::MAX_FLAT_PIXELS
            )
        })?;
        apply_mode(&fe.frame, &mut flat, mode);
        flats.push((flat, (fe.duration & 0xFFFF).max(1)));
    }
    let (mut l, mut t, mut r, mut b) = (i64::MAX, i64::MAX, i64::MIN, i64::MIN);
    for (f, _) in flats.iter().filter(|(f, _)| f.width > 0 && f.height > 0) {
        l = l.min(-i64::from(f.origin_x));
        t = t.min(-i64::from(f.origin_y));
        r = r.max(i64::from(f.width) - i64::from(f.origin_x));
        b = b.max(i64::from(f.height) - i64::from(f.origin_y));
    }
    if r <= l || b <= t {
        return Err("the sequence has no pixels".into());
    }
    let (w, h) = ((r - l) as u64, (b - t) as u64);
    if w * h > gaf::MAX_FLAT_PIXELS {
        return Err(format!(
            "its frames span {w}×{h} pixels, more than {}",
            gaf::MAX_FLAT_PIXELS
        ));
    }
    let mut used = [false; 256];
    for (f, _) in &flats {
        for (&i, &o) in f.indices.iter().zip(&f.opaque) {
            used[usize::from(i)] |= o;
        }
    }
    let slot = seq
        .frames
        .iter()
        .map(|f| f.frame.key)
        .find(|k| !used[usize::from(*k)])
        .or_else(|| (0..=255u8).rev().find(|&i| !used[usize::from(i)]))
        .unwrap_or(0);
    Ok(Animation {
        width: w as u32,
        height: h as u32,
        slot,
        frames: flats,
        pen: (-l as i32, -t as i32),
    })
}

pub(super) fn apply_mode(frame: &Frame, flat: &mut Flat, mode: Transparency) {
    let raw_simple = matches!(frame.content, Content::Pixels(_)) && !frame.is_compressed();
    match mode {
        Transparency::Game => {}
        Transparency::None => flat.opaque.iter_mut().for_each(|o| *o = true),
        Transparency::Index(n) => {
            for (o, &i) in flat.opaque.iter_mut().zip(&flat.indices) {
                *o = if raw_simple { i != n } else { *o && i != n };
            }
        }
        Transparency::Heuristic if raw_simple => {
            let px = &flat.indices;
            let key = frame.key;
            let eff = if px.contains(&key) || px.is_empty() {
                key
            } else {
                let w = flat.width as usize;
                let corners = [px[0], px[w - 1], px[px.len() - w], px[px.len() - 1]];
                if corners.iter().all(|&c| c == corners[0]) {
                    corners[0]
                } else {
                    key
                }
            };
            for (o, &i) in flat.opaque.iter_mut().zip(px) {
                *o = i != eff;
            }
        }
        Transparency::Heuristic => {}
    }
}

/// Writes an animation as an indexed APNG.
pub fn write_apng(
    out: &mut dyn Write,
    a: &Animation,
    pal: &Palette,
    loops: bool,
) -> Result<(), String> {
    let e = |e: png::EncodingError| format!("png: {e}");
    let mut enc = indexed_encoder(out, a.width, a.height, pal, Some(a.slot));
    enc.set_animated(a.len() as u32, if loops { 0 } else { 1 })
        .map_err(e)?;
    let mut w = enc.write_header().map_err(e)?;
    for i in 0..a.len() {
        w.set_frame_delay(a.ticks(i).min(u32::from(u16::MAX)) as u16, 30)
            .map_err(e)?;
        w.set_dispose_op(png::DisposeOp::Background).map_err(e)?;
        w.write_image_data(&a.canvas(i)).map_err(e)?;
    }
    w.finish().map_err(e)
}
