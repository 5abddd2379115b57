//! PNG in and out of palette indices: indexed PNGs with the asset's palette and one
//! transparent slot, and decoding of whatever an image editor saved back.

use crate::formats::palette::{NearestCache, Palette};
use std::io::{Cursor, Write};

/// Largest image decoded from a user file, in bytes of decoded output.
pub const MAX_DECODED_BYTES: usize = 512 << 20;

/// The one PNG setting of every generated image, shared by `dump` and the mount (so both
/// write the same bytes): fdeflate's fastest level with the `Up` filter on every row. The
/// bytes only have to be valid and deterministic; the filter choice per row that the
/// `Fast` level adds costs more than its few percent of size on a first listing.
pub fn fast_png<W: Write>(enc: &mut png::Encoder<'_, W>) {
    enc.set_compression(png::Compression::Fastest);
}

/// Writes an 8-bit indexed PNG of `indices` (`width × height`, row-major) with `palette` and,
/// if `transparent` is `Some(i)`, palette slot `i` marked fully transparent (tRNS).
/// Encoded with [`fast_png`]: views are generated on the hot path of `ls` and editors.
pub fn write_indexed_png(
    out: &mut dyn Write,
    width: u32,
    height: u32,
    indices: &[u8],
    palette: &Palette,
    transparent: Option<u8>,
) -> Result<(), png::EncodingError> {
    let mut enc = indexed_encoder(out, width, height, palette, transparent);
    crate::view::image::fast_png(&mut enc);
    let mut w = enc.write_header()?;
    w.write_image_data(indices)?;
    w.finish()
}

/// An encoder set up for an indexed PNG (for callers that stream rows or write APNG).
pub fn indexed_encoder<'w>(
    out: &'w mut dyn Write,
    width: u32,
    height: u32,
    palette: &Palette,
    transparent: Option<u8>,
) -> png::Encoder<'static, &'w mut dyn Write> {
    let mut enc = png::Encoder::new(out, width, height);
    enc.set_color(png::ColorType::Indexed);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_palette(palette.rgb_bytes());
    if let Some(t) = transparent {
        let mut trns = vec![255u8; usize::from(t) + 1];
        trns[usize::from(t)] = 0;
        enc.set_trns(trns);
    }
    crate::view::image::fast_png(&mut enc);
    enc
}

/// Writes an 8-bit greyscale PNG.
pub fn write_gray_png(
    out: &mut dyn Write,
    width: u32,
    height: u32,
    gray: &[u8],
) -> Result<(), png::EncodingError> {
    let mut enc = png::Encoder::new(out, width, height);
    enc.set_color(png::ColorType::Grayscale);
    enc.set_depth(png::BitDepth::Eight);
    crate::view::image::fast_png(&mut enc);
    let mut w = enc.write_header()?;
    w.write_image_data(gray)?;
    w.finish()
}

/// A decoded user image, before it is mapped to palette indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedPng {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The pixels.
    pub pixels: PngPixels,
}

/// Pixel data of a [`DecodedPng`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PngPixels {
    /// 8-bit indexed: indices, the PLTE (RGB triples) and the tRNS alphas (may be shorter
    /// than the palette; missing entries are opaque).
    Indexed {
        /// One index per pixel.
        indices: Vec<u8>,
        /// RGB triples.
        plte: Vec<u8>,
        /// Alpha per palette entry.
        trns: Vec<u8>,
    },
    /// Anything else, expanded to 8-bit RGBA.
    Rgba(Vec<u8>),
    /// 8-bit greyscale without alpha (height maps).
    Gray(Vec<u8>),
}

/// A PNG reader over `data` within `limits`, past the header: samples as stored
/// (`identity`, for 8-bit indexed or grey images) or expanded to 8-bit RGBA.
pub fn png_reader(
    data: &[u8],
    limits: png::Limits,
    identity: bool,
) -> Result<png::Reader<Cursor<&[u8]>>, String> {
    let mut dec = png::Decoder::new_with_limits(Cursor::new(data), limits);
    if identity {
        dec.set_transformations(png::Transformations::IDENTITY);
    } else {
        dec.set_transformations(
            png::Transformations::normalize_to_color8() | png::Transformations::ALPHA,
        );
    }
    dec.read_info()
        .map_err(|e| format!("not a readable PNG: {e}"))
}

/// Decodes a PNG (any colour type) with a bound on the decoded size.
pub fn decode_png(data: &[u8]) -> Result<DecodedPng, String> {
    let limits = png::Limits {
        bytes: MAX_DECODED_BYTES,
    };
    let mut dec = png::Decoder::new_with_limits(Cursor::new(data), limits);
    dec.set_transformations(png::Transformations::IDENTITY);
    let head = dec
        .read_info()
        .map_err(|e| format!("not a readable PNG: {e}"))?;
    let info = head.info();
    let (ct, depth) = (info.color_type, info.bit_depth);
    let plain_indexed = ct == png::ColorType::Indexed && depth == png::BitDepth::Eight;
    let plain_gray =
        ct == png::ColorType::Grayscale && depth == png::BitDepth::Eight && info.trns.is_none();
    drop(head);
    let mut reader = png_reader(data, limits, plain_indexed || plain_gray)?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| "PNG too large to decode".to_string())?;
    if size > MAX_DECODED_BYTES {
        return Err(format!(
            "PNG decodes to {size} bytes, over the {MAX_DECODED_BYTES}-byte limit"
        ));
    }
    let mut buf = vec![0u8; size];
    let out = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("corrupt PNG data: {e}"))?;
    buf.truncate(out.buffer_size());
    let (width, height) = (out.width, out.height);
    let info = reader.info();
    let pixels = if plain_indexed {
        PngPixels::Indexed {
            indices: buf,
            plte: info.palette.as_deref().unwrap_or_default().to_vec(),
            trns: info.trns.as_deref().unwrap_or_default().to_vec(),
        }
    } else if plain_gray {
        PngPixels::Gray(buf)
    } else {
        match out.color_type {
            png::ColorType::Rgba => PngPixels::Rgba(buf),
            png::ColorType::GrayscaleAlpha => PngPixels::Rgba(
                buf.chunks_exact(2)
                    .flat_map(|p| [p[0], p[0], p[0], p[1]])
                    .collect(),
            ),
            other => return Err(format!("unsupported PNG colour layout {other:?}")),
        }
    };
    Ok(DecodedPng {
        width,
        height,
        pixels,
    })
}

/// A user image mapped to palette indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Palette index per pixel (transparent pixels hold `fill`).
    pub indices: Vec<u8>,
    /// True where the pixel is transparent.
    pub transparent: Vec<bool>,
}

/// Maps a decoded image onto `palette`.
///
/// * Indexed with the same colours (its PLTE equals the first entries of `palette`): indices
///   copied; pixels whose tRNS alpha is below 128 are transparent.
/// * Anything else: each colour maps to the nearest palette colour other than those in
///   `avoid`; alpha below 128 is transparent.
///
/// Transparent pixels get index `fill`.
pub fn to_indices(img: &DecodedPng, palette: &Palette, avoid: &[u8], fill: u8) -> IndexedImage {
    to_indices_as(img, palette, None, avoid, fill)
}

/// [`to_indices`], where an indexed image whose PLTE has the CRC-32 `dump_palette` (the
/// palette its dump was written with, see [`Palette::crc32`]) also keeps its indices, whatever
/// `palette` is.
pub fn to_indices_as(
    img: &DecodedPng,
    palette: &Palette,
    dump_palette: Option<u32>,
    avoid: &[u8],
    fill: u8,
) -> IndexedImage {
    let n = (img.width as usize) * (img.height as usize);
    let mut indices = Vec::with_capacity(n);
    let mut transparent = Vec::with_capacity(n);
    match &img.pixels {
        PngPixels::Indexed {
            indices: src,
            plte,
            trns,
        } => {
            let same = plte.len() <= 768
                && plte
                    .chunks_exact(3)
                    .zip(palette.colors.iter())
                    .all(|(a, b)| a == b);
            let same = same || (plte.len() == 768 && dump_palette == Some(crc32fast::hash(plte)));
            let alpha = |i: u8| trns.get(usize::from(i)).copied().unwrap_or(255);
            let mut cache = NearestCache::new(palette, avoid);
            for &i in src.iter().take(n) {
                if alpha(i) < 128 {
                    indices.push(fill);
                    transparent.push(true);
                } else if same && usize::from(i) * 3 < plte.len() {
                    indices.push(i);
                    transparent.push(false);
                } else {
                    let o = usize::from(i) * 3;
                    let rgb = match plte.get(o..o + 3) {
                        Some(c) => [c[0], c[1], c[2]],
                        None => [0, 0, 0],
                    };
                    indices.push(cache.get(rgb));
                    transparent.push(false);
                }
            }
        }
        PngPixels::Rgba(px) => {
            let mut cache = NearestCache::new(palette, avoid);
            for p in px.chunks_exact(4).take(n) {
                if p[3] < 128 {
                    indices.push(fill);
                    transparent.push(true);
                } else {
                    indices.push(cache.get([p[0], p[1], p[2]]));
                    transparent.push(false);
                }
            }
        }
        PngPixels::Gray(px) => {
            let mut cache = NearestCache::new(palette, avoid);
            for &g in px.iter().take(n) {
                indices.push(cache.get([g, g, g]));
                transparent.push(false);
            }
        }
    }
    IndexedImage {
        width: img.width,
        height: img.height,
        indices,
        transparent,
    }
}

/// Writes a single-frame GIF of `indices` with `palette` and an optional transparent index.
pub fn write_indexed_gif(
    out: &mut dyn Write,
    width: u32,
    height: u32,
    indices: &[u8],
    palette: &Palette,
    transparent: Option<u8>,
) -> Result<(), String> {
    let (Ok(w), Ok(h)) = (u16::try_from(width), u16::try_from(height)) else {
        return Err(format!("{width}×{height} is too large for GIF"));
    };
    let rgb = palette.rgb_bytes();
    let mut enc = gif::Encoder::new(out, w, h, &rgb).map_err(|e| e.to_string())?;
    let frame = gif::Frame {
        width: w,
        height: h,
        buffer: std::borrow::Cow::Borrowed(indices),
        transparent,
        ..Default::default()
    };
    enc.write_frame(&frame).map_err(|e| e.to_string())
}

/// Decodes the first frame of a GIF as an indexed image (its palette and transparent index
/// become PLTE/tRNS), bounded like [`decode_png`].
pub fn decode_gif(data: &[u8]) -> Result<DecodedPng, String> {
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::Indexed);
    let mut dec = opts
        .read_info(Cursor::new(data))
        .map_err(|e| format!("not a readable GIF: {e}"))?;
    let (w, h) = (u32::from(dec.width()), u32::from(dec.height()));
    if (w as usize) * (h as usize) > MAX_DECODED_BYTES {
        return Err("GIF too large".into());
    }
    let global = dec.global_palette().map(<[u8]>::to_vec);
    let frame = dec
        .read_next_frame()
        .map_err(|e| format!("corrupt GIF data: {e}"))?
        .ok_or_else(|| "GIF has no image".to_string())?;
    let plte = frame.palette.clone().or(global).unwrap_or_default();
    let mut trns = Vec::new();
    if let Some(t) = frame.transparent {
        trns = vec![255u8; usize::from(t) + 1];
        trns[usize::from(t)] = 0;
    }
    // Place the frame on the logical screen; uncovered pixels are transparent.
    let fill = frame.transparent.unwrap_or(0);
    let mut indices = vec![fill; (w as usize) * (h as usize)];
    let (fl, ft, fw) = (
        usize::from(frame.left),
        usize::from(frame.top),
        usize::from(frame.width),
    );
    for (y, row) in frame.buffer.chunks(fw.max(1)).enumerate() {
        for (x, &v) in row.iter().enumerate() {
            let (sx, sy) = (fl + x, ft + y);
            if sx < w as usize && sy < h as usize {
                indices[sy * w as usize + sx] = v;
            }
        }
    }
    if frame.transparent.is_none()
        && (fl > 0 || ft > 0 || fw < w as usize || usize::from(frame.height) < h as usize)
    {
        return Err("GIF frame does not cover the image and has no transparent index".into());
    }
    Ok(DecodedPng {
        width: w,
        height: h,
        pixels: PngPixels::Indexed {
            indices,
            plte,
            trns,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexed_round_trip_keeps_indices_and_transparency() {
        let pal = Palette::ta();
        let idx: Vec<u8> = (0..=255u8).collect();
        let mut png = Vec::new();
        write_indexed_png(&mut png, 16, 16, &idx, &pal, Some(9)).unwrap();
        let d = decode_png(&png).unwrap();
        let img = to_indices(&d, &pal, &[9], 9);
        assert_eq!(img.indices, idx);
        for (i, t) in img.transparent.iter().enumerate() {
            assert_eq!(*t, i == 9);
        }
    }

    #[test]
    fn rgba_maps_to_nearest_avoiding_key() {
        let pal = Palette::ta();
        let c9 = pal.colors[9];
        let c1 = pal.colors[1];
        let px = [
            c9[0], c9[1], c9[2], 255, c1[0], c1[1], c1[2], 255, 0, 0, 0, 0,
        ];
        let mut png = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut png, 3, 1);
            enc.set_color(png::ColorType::Rgba);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header().unwrap();
            w.write_image_data(&px).unwrap();
        }
        let img = to_indices(&decode_png(&png).unwrap(), &pal, &[9], 9);
        assert_ne!(img.indices[0], 9);
        assert_eq!(pal.colors[usize::from(img.indices[1])], c1);
        assert_eq!(img.transparent, [false, false, true]);
        assert_eq!(img.indices[2], 9);
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(decode_png(b"not a png").is_err());
        assert!(decode_png(&[]).is_err());
    }
}
