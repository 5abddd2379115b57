//! Truecolor (`.taf`) frames as files: RGBA PNGs with the exact expansion of their 16-bit
//! words, the RGBA APNG preview of a sequence holding them, and the way back (any PNG to
//! RGBA, quantised to the frame's format).

use crate::formats::gaf::{self, Argb, Content, Sequence};
use crate::formats::palette::Palette;
use crate::view::image::{DecodedPng, PngPixels};
use std::io::Write;

/// The words of a truecolor frame as 8-bit RGBA (4 bytes a pixel).
pub fn expand(format: Argb, words: &[u16]) -> Vec<u8> {
    words.iter().flat_map(|&w| format.expand(w)).collect()
}

/// RGBA pixels back to words of `format`: the inverse of [`expand`] on its outputs, the
/// nearest representable colour for anything else.
pub fn quantise(format: Argb, rgba: &[u8]) -> Vec<u16> {
    rgba.chunks_exact(4)
        .map(|p| format.quantise([p[0], p[1], p[2], p[3]]))
        .collect()
}

/// A decoded image of any colour type as 8-bit RGBA (indexed: PLTE and tRNS; grey: opaque).
pub fn to_rgba(img: &DecodedPng) -> Vec<u8> {
    match &img.pixels {
        PngPixels::Rgba(v) => v.clone(),
        PngPixels::Gray(g) => g.iter().flat_map(|&v| [v, v, v, 255]).collect(),
        PngPixels::Indexed {
            indices,
            plte,
            trns,
        } => indices
            .iter()
            .flat_map(|&i| {
                let i = usize::from(i);
                let c = |k: usize| plte.get(3 * i + k).copied().unwrap_or(0);
                [c(0), c(1), c(2), trns.get(i).copied().unwrap_or(255)]
            })
            .collect(),
    }
}

/// Writes an 8-bit RGBA PNG.
pub fn write_rgba_png(
    out: &mut dyn Write,
    width: u32,
    height: u32,
    rgba: &[u8],
) -> Result<(), String> {
    let e = |e: png::EncodingError| format!("png: {e}");
    let mut enc = png::Encoder::new(out, width, height);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    crate::view::image::fast_png(&mut enc);
    let mut w = enc.write_header().map_err(e)?;
    w.write_image_data(rgba).map_err(e)?;
    w.finish().map_err(e)
}

/// True when a frame (or one of its layers) of the sequence is truecolor: its preview is
/// then an RGBA APNG.
pub fn sequence_has_truecolor(s: &Sequence) -> bool {
    fn any(f: &gaf::Frame, depth: usize) -> bool {
        match &f.content {
            Content::Truecolor(_) => true,
            Content::Layers(l) if depth < 64 => l.iter().any(|x| any(x, depth + 1)),
            _ => false,
        }
    }
    s.frames.iter().any(|fe| any(&fe.frame, 0))
}

/// Draws `f` (placed by its origin on the pen at `pen`) onto an RGBA canvas `w` wide:
/// truecolor words expanded (alpha kept), paletted pixels opaque in `pal`'s colours.
fn draw(f: &gaf::Frame, canvas: &mut [u8], w: usize, pen: (i64, i64), pal: &Palette, depth: usize) {
    let h = canvas.len() / 4 / w.max(1);
    let left = pen.0 - i64::from(f.origin_x);
    let top = pen.1 - i64::from(f.origin_y);
    let fw = usize::from(f.width).max(1);
    let mut put = |x: usize, y: usize, px: [u8; 4]| {
        let (cx, cy) = (left + x as i64, top + y as i64);
        if cx < 0 || cy < 0 || cx >= w as i64 || cy >= h as i64 {
            return;
        }
        let at = 4 * (cy as usize * w + cx as usize);
        if let Some(dst) = canvas.get_mut(at..at + 4) {
            dst.copy_from_slice(&px);
        }
    };
    match &f.content {
        Content::Truecolor(words) => {
            let Some(fmt) = f.truecolor() else { return };
            for (i, &word) in words.iter().enumerate() {
                let px = fmt.expand(word);
                if px[3] != 0 {
                    put(i % fw, i / fw, px);
                }
            }
        }
        Content::Pixels(p) => {
            for (i, (&v, &o)) in p.indices.iter().zip(&p.opaque).enumerate() {
                if o {
                    let c = pal.colors[usize::from(v)];
                    put(i % fw, i / fw, [c[0], c[1], c[2], 255]);
                }
            }
        }
        Content::Layers(l) if depth < 64 => {
            for layer in l {
                draw(layer, canvas, w, pen, pal, depth + 1);
            }
        }
        Content::Layers(_) => {}
    }
}

/// Writes the sequence as an RGBA APNG on the union box of its frames (truecolor frames with
/// their alpha, paletted frames in `pal`'s colours). Errors when it has no pixels or spans
/// more than [`gaf::MAX_FLAT_PIXELS`].
pub fn write_rgba_apng(out: &mut dyn Write, s: &Sequence, pal: &Palette) -> Result<(), String> {
    let (l, t, r, b) = super::render::sequence_bounds(s);
    let (w, h) = ((r - l).max(0) as usize, (b - t).max(0) as usize);
    if w == 0 || h == 0 {
        return Err("the sequence has no pixels".into());
    }
    if (w as u64) * (h as u64) > gaf::MAX_FLAT_PIXELS {
        return Err(format!(
            "its frames span {w}×{h} pixels, more than {}",
            gaf::MAX_FLAT_PIXELS
        ));
    }
    let e = |e: png::EncodingError| format!("png: {e}");
    let mut enc = png::Encoder::new(out, w as u32, h as u32);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    crate::view::image::fast_png(&mut enc);
    enc.set_animated(s.frames.len() as u32, if s.loops() { 0 } else { 1 })
        .map_err(e)?;
    let mut wr = enc.write_header().map_err(e)?;
    for fe in &s.frames {
        let mut canvas = vec![0u8; 4 * w * h];
        draw(
            &fe.frame,
            &mut canvas,
            w,
            (-i64::from(l), -i64::from(t)),
            pal,
            0,
        );
        let ticks = (fe.duration & 0xFFFF).max(1) as u16;
        wr.set_frame_delay(ticks, 30).map_err(e)?;
        wr.set_dispose_op(png::DisposeOp::Background).map_err(e)?;
        wr.write_image_data(&canvas).map_err(e)?;
    }
    wr.finish().map_err(e)
}
