//! Indexed PNGs written as independent bands of rows, for the one big generated image (a
//! map's `map.png`, up to hundreds of megapixels).
//!
//! Each band is filtered against the row above it and compressed on its own, with the png
//! crate's fast deflate (`fdeflate`), into a byte-aligned run of deflate blocks in an `IDAT`
//! chunk of its own. So the bands are encoded on every core, and a band whose rows and the
//! row above them did not change is copied from the version before's file as it is: after an
//! edit only the bands it touches are encoded again. The bytes do not depend on which bands
//! were copied or on the number of cores.
//!
//! The file is one zlib stream split over the `IDAT` chunks: the zlib header in a chunk of
//! its own, one chunk per band (a deflate block that is not the last, then an empty stored
//! block that brings it to a byte boundary, as a zlib "sync flush" does), and a last chunk
//! holding the final (empty) block and the Adler-32 of every row, combined from the bands'
//! own. Rows are filtered as the png crate's fast mode does (adaptive: the least sum of
//! absolute values of Up, Sub, Average and Paeth).
//!
//! Taking `fdeflate`'s stream apart relies on its shape (one block after a two-byte header,
//! ending with an end-of-block code whose last bit is 1); [`available`] checks that once
//! against an inflater, and callers fall back to the png crate's single stream without it.

use crate::formats::palette::Palette;
use crate::view::image::indexed_encoder;
use rayon::prelude::*;
use std::cell::Cell;
use std::io::{self, Write};
use std::sync::OnceLock;

/// Where one band's data lies in the file, and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    /// Offset of the band's `IDAT` data in the file.
    start: usize,
    /// Bytes of that data.
    len: usize,
    /// Adler-32 of the band's filtered rows (each row's filter byte and bytes).
    adler: u32,
    /// Bytes of the band's filtered rows.
    raw: u64,
}

/// The bands of a file [`write_banded`] wrote: what a next version needs to copy them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandIndex {
    width: u32,
    height: u32,
    band_rows: u32,
    spans: Vec<Span>,
}

impl BandIndex {
    /// The number of bands.
    pub fn bands(&self) -> usize {
        self.spans.len()
    }
}

/// The version before, for [`write_banded`]: its file, the index of its bands, and which
/// bands may be copied (`keep[b]`: the rows of band `b` and the row above them are the
/// same as now).
#[derive(Debug, Clone, Copy)]
pub struct Reuse<'a> {
    /// The version before's file.
    pub png: &'a [u8],
    /// Its bands.
    pub index: &'a BandIndex,
    /// Per band: unchanged, with the row above it.
    pub keep: &'a [bool],
}

/// Whether this build's `fdeflate` gives streams [`write_banded`] can take apart (checked
/// once: a banded image is inflated and compared).
pub fn available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(self_check)
}

fn self_check() -> bool {
    // rows that take every path: literals, runs of zeros, a band stored raw
    let (w, h) = (97usize, 40usize);
    let px = |y: usize, row: &mut [u8]| {
        for (x, p) in row.iter_mut().enumerate() {
            *p = match y % 4 {
                0 => 0,
                1 => (x * 7 + y) as u8,
                2 => ((x * 2654435761usize) >> 7) as u8 ^ y as u8,
                _ => (x / 9) as u8,
            };
        }
    };
    let mut want = Vec::new();
    let mut row = vec![0u8; w];
    for y in 0..h {
        px(y, &mut row);
        want.extend_from_slice(&row);
    }
    let palette = Palette::ta();
    let mut png = Vec::new();
    if write_banded(
        &mut png,
        Shape {
            width: w as u32,
            height: h as u32,
            band_rows: 3,
        },
        &palette,
        None,
        &px,
        None,
    )
    .is_err()
    {
        return false;
    }
    let mut dec = png::Decoder::new(io::Cursor::new(&png[..]));
    dec.set_transformations(png::Transformations::IDENTITY);
    let Ok(mut r) = dec.read_info() else {
        return false;
    };
    let mut got = vec![0u8; r.output_buffer_size().unwrap_or(0)];
    let ok = r.next_frame(&mut got).is_ok() && got == want;
    // and the zlib stream itself, with its checksum, by another inflater
    ok && idat_stream(&png).is_some_and(|z| {
        let mut out = Vec::new();
        io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&z[..]), &mut out).is_ok()
            && out.len() == h * (w + 1)
    })
}

/// The concatenated `IDAT` data of a PNG (for the checks).
fn idat_stream(png: &[u8]) -> Option<Vec<u8>> {
    let mut at = 8usize;
    let mut z = Vec::new();
    while at + 12 <= png.len() {
        let len = u32::from_be_bytes(png.get(at..at + 4)?.try_into().ok()?) as usize;
        let kind = png.get(at + 4..at + 8)?;
        let data = png.get(at + 8..at + 8 + len)?;
        if kind == b"IDAT" {
            z.extend_from_slice(data);
        }
        at += 12 + len;
    }
    Some(z)
}

/// A writer that counts the bytes through it.
struct Counting<'a> {
    out: &'a mut dyn Write,
    n: &'a Cell<u64>,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let k = self.out.write(buf)?;
        self.n.set(self.n.get() + k as u64);
        Ok(k)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A worker's rows for [`encode_band`], kept from band to band.
struct Rows {
    w: usize,
    prev: Vec<u8>,
    cur: Vec<u8>,
    lines: Vec<u8>,
    scratch: Scratch,
}

impl Rows {
    fn new(w: usize, per: usize) -> Rows {
        Rows {
            w,
            prev: vec![0; w],
            cur: vec![0; w],
            lines: Vec::with_capacity(per.saturating_mul(w + 1)),
            scratch: Scratch {
                best: vec![0; w],
                next: vec![0; w],
            },
        }
    }
}

/// One band encoded: its deflate data (byte-aligned, not final), Adler-32 and raw length.
struct Band {
    data: Vec<u8>,
    adler: u32,
    raw: u64,
}

/// The shape of a banded PNG: its size in pixels and the rows of each band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Rows per band (the last band may have fewer).
    pub band_rows: u32,
}

/// Writes a `width × height` 8-bit indexed PNG whose row `y` is what `row(y, buf)` puts in
/// `buf` (`width` bytes), in bands of `band_rows` rows encoded on every core; with `reuse`,
/// the bands it keeps are copied from the version before. Returns the index of the bands.
/// The bytes are the same whatever was reused.
pub fn write_banded(
    out: &mut dyn Write,
    shape: Shape,
    palette: &Palette,
    transparent: Option<u8>,
    row: &(dyn Fn(usize, &mut [u8]) + Sync),
    reuse: Option<Reuse<'_>>,
) -> Result<BandIndex, png::EncodingError> {
    let Shape {
        width,
        height,
        band_rows,
    } = shape;
    let (w, h) = (width as usize, height as usize);
    let per = band_rows.max(1) as usize;
    let count = h.div_ceil(per);
    let n = Cell::new(0u64);
    let mut sink = Counting { out, n: &n };
    let enc = indexed_encoder(&mut sink, width, height, palette, transparent);
    let mut png = enc.write_header()?;
    // which bands come from the version before (checked against this image's shape)
    let old = reuse.filter(|r| {
        (r.index.width, r.index.height, r.index.band_rows) == (width, height, per as u32)
            && r.index.spans.len() == count
            && r.keep.len() == count
    });
    let copied = |b: usize| -> Option<(&[u8], Span)> {
        let r = old?;
        if !*r.keep.get(b)? {
            return None;
        }
        let s = *r.index.spans.get(b)?;
        Some((r.png.get(s.start..s.start.checked_add(s.len)?)?, s))
    };
    let fresh: Vec<Option<io::Result<Band>>> = (0..count)
        .into_par_iter()
        .map_init(
            || Rows::new(w, per),
            |rows, b| match copied(b) {
                Some(_) => None,
                None => Some(encode_band(rows, b * per, ((b + 1) * per).min(h), row)),
            },
        )
        .collect();
    png.write_chunk(png::chunk::IDAT, &[0x78, 0x01])?;
    let mut spans = Vec::with_capacity(count);
    let mut adler = 1u32;
    for (b, band) in fresh.into_iter().enumerate() {
        let (data, a, raw) = match band {
            Some(band) => {
                let band = band?;
                (std::borrow::Cow::Owned(band.data), band.adler, band.raw)
            }
            None => match copied(b) {
                Some((d, s)) => (std::borrow::Cow::Borrowed(d), s.adler, s.raw),
                None => unreachable_band()?,
            },
        };
        let start = n.get() as usize + 8;
        png.write_chunk(png::chunk::IDAT, &data)?;
        spans.push(Span {
            start,
            len: data.len(),
            adler: a,
            raw,
        });
        adler = adler32_combine(adler, a, raw);
    }
    let mut tail = [0x03, 0x00, 0, 0, 0, 0];
    tail[2..].copy_from_slice(&adler.to_be_bytes());
    png.write_chunk(png::chunk::IDAT, &tail)?;
    png.finish()?;
    Ok(BandIndex {
        width,
        height,
        band_rows: per as u32,
        spans,
    })
}

/// A band neither encoded nor copied: cannot happen (the same test chose both).
fn unreachable_band<T>() -> Result<T, png::EncodingError> {
    Err(io::Error::other("a band was neither encoded nor copied").into())
}

/// Encodes rows `y0..y1`: filtered against the row above (`y0 - 1`, zeros above the top),
/// deflated on their own, made byte-aligned and not final; stored raw if that is smaller.
fn encode_band(
    rows: &mut Rows,
    y0: usize,
    y1: usize,
    row: &(dyn Fn(usize, &mut [u8]) + Sync),
) -> io::Result<Band> {
    let Rows {
        w,
        prev,
        cur,
        lines,
        scratch,
    } = rows;
    let w = *w;
    if y0 > 0 {
        row(y0 - 1, prev);
    } else {
        prev.fill(0);
    }
    lines.resize((y1 - y0) * (w + 1), 0);
    for (y, line) in (y0..y1).zip(lines.chunks_exact_mut(w + 1)) {
        row(y, cur);
        let (kind, bytes) = line.split_at_mut(1);
        kind[0] = filter_row(prev, cur, bytes, scratch);
        std::mem::swap(prev, cur);
    }
    let lines = &lines[..];
    let raw = lines.len() as u64;
    let mut z = fdeflate::Compressor::new(Vec::with_capacity(lines.len() / 2 + 64))?;
    z.write_data(lines)?;
    let mut data = z.finish()?;
    // [0x78 0x01] [one block, final] [end-of-block, zero bits to the byte] [Adler-32]
    let bad = || io::Error::other("fdeflate gave a stream of another shape");
    let n = data.len();
    if n < 7 || data[..2] != [0x78, 0x01] || data[2] & 1 != 1 {
        return Err(bad());
    }
    let mut be = [0u8; 4];
    be.copy_from_slice(&data[n - 4..]);
    let adler = u32::from_be_bytes(be);
    data.copy_within(2..n - 4, 0);
    data.truncate(n - 6);
    data[0] &= !1; // not the last block
    let last = data.last().copied().unwrap_or(0);
    if last == 0 {
        return Err(bad());
    }
    // an empty stored block: three zero bits (in the last byte's padding if they fit),
    // zeros to the byte, LEN 0, NLEN 0xFFFF
    let used = 8 - last.leading_zeros();
    if 8 - used < 3 {
        data.push(0);
    }
    data.extend_from_slice(&[0, 0, 0xFF, 0xFF]);
    let stored = raw + 5 * raw.div_ceil(0xFFFF);
    if data.len() as u64 > stored {
        data.clear();
        for piece in lines.chunks(0xFFFF) {
            let len = piece.len() as u16;
            data.push(0); // not last, stored, padding
            data.extend_from_slice(&len.to_le_bytes());
            data.extend_from_slice(&(!len).to_le_bytes());
            data.extend_from_slice(piece);
        }
    }
    Ok(Band { data, adler, raw })
}

/// Filters `cur` (its row above: `prev`) into `out` as the png crate's adaptive filter does
/// for one byte per pixel: of Up, Sub, Average and Paeth the last with the least sum of
/// absolute values (as signed bytes), stopping at a sum of 0. Returns the filter type.
fn filter_row(prev: &[u8], cur: &[u8], out: &mut [u8], scratch: &mut Scratch) -> u8 {
    let Scratch { best, next } = scratch;
    let mut min = (u64::MAX, 0u8);
    for kind in [2u8, 1, 3, 4] {
        let cost = apply(kind, prev, cur, next);
        if cost <= min.0 {
            min = (cost, kind);
            std::mem::swap(best, next);
            if cost == 0 {
                break;
            }
        }
    }
    out.copy_from_slice(best);
    min.1
}

/// Two rows of room for [`filter_row`].
struct Scratch {
    best: Vec<u8>,
    next: Vec<u8>,
}

const LANES: usize = 32;

/// PNG filter `kind` (1 Sub, 2 Up, 3 Average, 4 Paeth) of `cur` with one byte per pixel,
/// into `out`; returns the sum of absolute values of `out` as signed bytes. In fixed-size
/// blocks, so that the compiler vectorises every filter.
fn apply(kind: u8, prev: &[u8], cur: &[u8], out: &mut [u8]) -> u64 {
    match kind {
        1 => apply_k::<1>(prev, cur, out),
        2 => apply_k::<2>(prev, cur, out),
        3 => apply_k::<3>(prev, cur, out),
        _ => apply_k::<4>(prev, cur, out),
    }
}

fn apply_k<const KIND: u8>(prev: &[u8], cur: &[u8], out: &mut [u8]) -> u64 {
    let n = cur.len().min(prev.len()).min(out.len());
    if n == 0 {
        return 0;
    }
    // the first pixel has no left neighbour (a = c = 0)
    out[0] = match KIND {
        1 => cur[0],
        3 => cur[0].wrapping_sub(prev[0] >> 1),
        _ => cur[0].wrapping_sub(prev[0]),
    };
    // pixel i ≥ 1: x = cur[i], a = cur[i - 1], b = prev[i], c = prev[i - 1]
    let (x, a) = (&cur[1..n], &cur[..n - 1]);
    let (b, c) = (&prev[1..n], &prev[..n - 1]);
    let o = &mut out[1..n];
    let f = |x: u8, a: u8, b: u8, c: u8| -> u8 {
        match KIND {
            1 => x.wrapping_sub(a),
            2 => x.wrapping_sub(b),
            // ⌊(a + b) / 2⌋ in bytes
            3 => x.wrapping_sub((a & b) + ((a ^ b) >> 1)),
            _ => x.wrapping_sub(paeth(a, b, c)),
        }
    };
    let blocks = (n - 1) / LANES * LANES;
    let (o_main, o_rest) = o.split_at_mut(blocks);
    for ((((o, x), a), b), c) in o_main
        .chunks_exact_mut(LANES)
        .zip(x.chunks_exact(LANES))
        .zip(a.chunks_exact(LANES))
        .zip(b.chunks_exact(LANES))
        .zip(c.chunks_exact(LANES))
    {
        for i in 0..LANES {
            o[i] = f(x[i], a[i], b[i], c[i]);
        }
    }
    let rest = x[blocks..].iter().zip(&a[blocks..]).zip(&b[blocks..]);
    for (o, ((&x, &a), (&b, &c))) in o_rest
        .iter_mut()
        .zip(rest.zip(&c[blocks..]).map(|((xa, b), c)| (xa, (b, c))))
    {
        *o = f(x, a, b, c);
    }
    cost(&out[..n])
}

/// The sum of absolute values of `b` as signed bytes (the png crate's heuristic).
fn cost(b: &[u8]) -> u64 {
    let mut sum = 0u64;
    let mut blocks = b.chunks_exact(LANES);
    for block in &mut blocks {
        let mut acc = 0u16;
        for &x in block {
            acc += u16::from((x as i8).unsigned_abs());
        }
        sum += u64::from(acc);
    }
    for &x in blocks.remainder() {
        sum += u64::from((x as i8).unsigned_abs());
    }
    sum
}

/// The Paeth predictor of the PNG specification, in the form that works on bytes only (from
/// FPNGE, as the png crate has it): `pc` matters only when `c` lies between `a` and `b`.
fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let pa = b.max(c) - b.min(c);
    let pb = a.max(c) - a.min(c);
    let pc = if (a < c) == (c < b) {
        pa.max(pb) - pa.min(pb)
    } else {
        255
    };
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// The Adler-32 of `A ‖ B` from those of `A` and `B` (`len_b` bytes), as zlib's
/// `adler32_combine`.
fn adler32_combine(a: u32, b: u32, len_b: u64) -> u32 {
    const BASE: u64 = 65521;
    let rem = len_b % BASE;
    let (a1, a2) = (u64::from(a & 0xFFFF), u64::from(a >> 16));
    let (b1, b2) = (u64::from(b & 0xFFFF), u64::from(b >> 16));
    let s1 = (a1 + b1 + BASE - 1) % BASE;
    let s2 = (rem * a1 % BASE + a2 + b2 + BASE - rem) % BASE;
    (s1 | (s2 << 16)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(width: u32, height: u32, band_rows: u32) -> Shape {
        Shape {
            width,
            height,
            band_rows,
        }
    }

    fn decode(png: &[u8]) -> (u32, u32, Vec<u8>) {
        let mut dec = png::Decoder::new(io::Cursor::new(png));
        dec.set_transformations(png::Transformations::IDENTITY);
        let mut r = dec.read_info().unwrap();
        let mut px = vec![0u8; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut px).unwrap();
        (info.width, info.height, px)
    }

    fn image(seed: u32) -> impl Fn(usize, &mut [u8]) + Sync {
        move |y, row: &mut [u8]| {
            for (x, p) in row.iter_mut().enumerate() {
                let v = (x as u32).wrapping_mul(2654435761) ^ (y as u32).wrapping_mul(seed);
                *p = match (y / 5) % 3 {
                    0 => 0,
                    1 => (v >> 27) as u8,
                    _ => (v >> 13) as u8,
                };
            }
        }
    }

    fn rows(f: &dyn Fn(usize, &mut [u8]), w: usize, h: usize) -> Vec<u8> {
        let mut all = vec![0u8; w * h];
        for (y, r) in all.chunks_exact_mut(w).enumerate() {
            f(y, r);
        }
        all
    }

    #[test]
    fn the_stream_taken_apart_is_checked_and_usable_here() {
        assert!(available());
    }

    #[test]
    fn bands_decode_to_the_rows_and_inflate_with_their_checksum() {
        let pal = Palette::ta();
        for (w, h, per) in [
            (1, 1, 32),
            (33, 70, 32),
            (300, 97, 7),
            (64, 64, 64),
            (5, 9, 1),
        ] {
            let f = image(7);
            let mut png = Vec::new();
            let idx = write_banded(&mut png, shape(w, h, per), &pal, Some(9), &f, None).unwrap();
            assert_eq!(idx.bands(), (h as usize).div_ceil(per as usize));
            let (dw, dh, px) = decode(&png);
            assert_eq!((dw, dh), (w, h));
            assert_eq!(px, rows(&f, w as usize, h as usize), "{w}×{h}/{per}");
            let z = idat_stream(&png).unwrap();
            let mut raw = Vec::new();
            io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&z[..]), &mut raw).unwrap();
            assert_eq!(raw.len(), (h * (w + 1)) as usize);
            // every span is where the index says, in an IDAT chunk of its own
            for s in &idx.spans {
                assert_eq!(&png[s.start - 4..s.start], b"IDAT");
                let len = u32::from_be_bytes(png[s.start - 8..s.start - 4].try_into().unwrap());
                assert_eq!(len as usize, s.len);
            }
        }
    }

    #[test]
    fn noise_is_stored_and_still_decodes() {
        let pal = Palette::ta();
        let noise = |y: usize, row: &mut [u8]| {
            let mut s = (y as u64 + 1).wrapping_mul(0x9E3779B97F4A7C15);
            for p in row.iter_mut() {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                *p = s as u8;
            }
        };
        let mut png = Vec::new();
        write_banded(&mut png, shape(500, 40, 16), &pal, None, &noise, None).unwrap();
        assert!(png.len() < 500 * 40 + 2000, "{}", png.len());
        assert_eq!(decode(&png).2, rows(&noise, 500, 40));
    }

    #[test]
    fn copied_bands_give_the_bytes_of_a_fresh_encoding() {
        let pal = Palette::ta();
        let (w, h, per) = (200u32, 96u32, 16u32);
        let old = image(7);
        let mut old_png = Vec::new();
        let idx = write_banded(&mut old_png, shape(w, h, per), &pal, None, &old, None).unwrap();
        // rows 40..=41 change (band 2); band 3 starts below them but filters against row 47
        let new = |y: usize, row: &mut [u8]| {
            old(y, row);
            if (40..42).contains(&y) {
                row[3] ^= 0x55;
            }
        };
        let mut fresh = Vec::new();
        write_banded(&mut fresh, shape(w, h, per), &pal, None, &new, None).unwrap();
        let keep = [true, true, false, true, true, true];
        let reuse = Reuse {
            png: &old_png,
            index: &idx,
            keep: &keep,
        };
        let mut got = Vec::new();
        let idx2 = write_banded(&mut got, shape(w, h, per), &pal, None, &new, Some(reuse)).unwrap();
        assert_eq!(got, fresh);
        assert_eq!(decode(&got).2, rows(&new, w as usize, h as usize));
        // copying a band that did change shows (the test can fail)
        let all = [true; 6];
        let wrong = Reuse {
            png: &old_png,
            index: &idx,
            keep: &all,
        };
        let mut bad = Vec::new();
        write_banded(&mut bad, shape(w, h, per), &pal, None, &new, Some(wrong)).unwrap();
        assert_ne!(bad, fresh);
        // an index of another shape is not used
        let other = Reuse {
            png: &old_png,
            index: &idx2,
            keep: &all,
        };
        let mut again = Vec::new();
        write_banded(
            &mut again,
            shape(w, h + 1, per),
            &pal,
            None,
            &new,
            Some(other),
        )
        .unwrap();
        assert_eq!(decode(&again).1, h + 1);
    }

    #[test]
    fn filters_match_the_png_crate_fast_mode_in_size() {
        // the same filter choice as the png crate: the compressed sizes agree closely
        let pal = Palette::ta();
        let (w, h) = (256u32, 256u32);
        let f = image(31);
        let all = rows(&f, w as usize, h as usize);
        let mut ours = Vec::new();
        write_banded(&mut ours, shape(w, h, 256), &pal, None, &f, None).unwrap();
        let mut theirs = Vec::new();
        let mut enc = crate::view::image::indexed_encoder(&mut theirs, w, h, &pal, None);
        enc.set_compression(png::Compression::Fast);
        let mut wr = enc.write_header().unwrap();
        wr.write_image_data(&all).unwrap();
        wr.finish().unwrap();
        let (a, b) = (ours.len() as f64, theirs.len() as f64);
        assert!((a - b).abs() / b < 0.01, "{a} vs {b}");
    }

    #[test]
    fn adler_combines_as_computed_whole() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let adler = |d: &[u8]| {
            let mut z = fdeflate::Compressor::new(Vec::new()).unwrap();
            z.write_data(d).unwrap();
            let v = z.finish().unwrap();
            u32::from_be_bytes(v[v.len() - 4..].try_into().unwrap())
        };
        for cut in [0, 1, 65521, 100_000, 200_000] {
            let (a, b) = data.split_at(cut);
            assert_eq!(
                adler32_combine(adler(a), adler(b), b.len() as u64),
                adler(&data)
            );
        }
    }
}
