//! ZSoft PCX images as TA and TA: Kingdoms ship them: unit pictures, GUI panels and the 1×1
//! palette carriers. Reads 8-bit single-plane images with the 256-colour trailer (0x0C then
//! 768 RGB bytes) and 24-bit three-plane images (R, G, B plane lines per scan line, no
//! palette); writes them back with the RLE the game reads.
//!
//! Losslessness: the model keeps the 128 header bytes verbatim and the decoded bytes-per-line
//! padding; [`write_like`] reuses the original encoded pixel data (the encoder's run choices
//! and anything after the last run) whenever the pixels and padding are unchanged, so an
//! unedited image rewrites to identical bytes.

use super::Limits;
use crate::formats::palette::Palette;

/// Length of the header.
pub const HEADER_LEN: usize = 128;
/// Length of the 256-colour trailer: the 0x0C marker and 768 RGB bytes.
pub const PALETTE_TRAILER_LEN: usize = 769;
/// The byte that introduces the 256-colour trailer.
pub const PALETTE_MARKER: u8 = 0x0C;
/// Longest run one RLE code can hold.
pub const MAX_RUN: usize = 63;

/// Why a PCX could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PcxError {
    /// A structure reaches past the end of the file.
    #[error("pcx: {structure} at offset {offset:#x}: {len} bytes needed, file has {file_len}")]
    Truncated {
        /// What was being read.
        structure: &'static str,
        /// Its offset.
        offset: u64,
        /// Bytes it needs.
        len: u64,
        /// File length.
        file_len: u64,
    },
    /// A field holds a value this reader does not accept.
    #[error("pcx: {structure} at offset {offset:#x}: {message}")]
    Malformed {
        /// What was being read.
        structure: &'static str,
        /// Its offset.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A budget of [`Limits`] was exceeded.
    #[error("pcx: {structure} at offset {offset:#x}: over the limit: {message}")]
    Limit {
        /// What was being read.
        structure: &'static str,
        /// Its offset.
        offset: u64,
        /// Which budget.
        message: String,
    },
    /// The model cannot be written (sizes that disagree, a value the format cannot hold).
    #[error("pcx: cannot write {structure}: {message}")]
    Unwritable {
        /// What was being written.
        structure: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// The pixel layouts this codec reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PcxKind {
    /// 8 bits per pixel, 1 plane, 256-colour trailer.
    Indexed8,
    /// 8 bits per pixel, 3 planes (R, G, B), no palette.
    Rgb24,
}

/// The named fields of the 128-byte header (little-endian words at their ZSoft offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderFields {
    /// +0, 0x0A.
    pub manufacturer: u8,
    /// +1, 5 in TA files.
    pub version: u8,
    /// +2, 1 = RLE, 0 = stored.
    pub encoding: u8,
    /// +3, bits per pixel per plane.
    pub bits_per_pixel: u8,
    /// +4..+12, the inclusive window.
    pub xmin: u16,
    /// See `xmin`.
    pub ymin: u16,
    /// See `xmin`.
    pub xmax: u16,
    /// See `xmin`.
    pub ymax: u16,
    /// +12, horizontal resolution.
    pub hdpi: u16,
    /// +14, vertical resolution.
    pub vdpi: u16,
    /// +64, reserved byte.
    pub reserved: u8,
    /// +65, colour planes.
    pub planes: u8,
    /// +66, bytes per plane line (may exceed the width: padding).
    pub bytes_per_line: u16,
    /// +68, 1 = colour, 2 = greyscale (advisory).
    pub palette_info: u16,
    /// +70, horizontal screen size.
    pub hscreen: u16,
    /// +72, vertical screen size.
    pub vscreen: u16,
}

impl HeaderFields {
    /// Reads the named fields out of a header.
    pub fn from_bytes(h: &[u8; HEADER_LEN]) -> HeaderFields {
        let w = |o: usize| u16::from_le_bytes([h[o], h[o + 1]]);
        HeaderFields {
            manufacturer: h[0],
            version: h[1],
            encoding: h[2],
            bits_per_pixel: h[3],
            xmin: w(4),
            ymin: w(6),
            xmax: w(8),
            ymax: w(10),
            hdpi: w(12),
            vdpi: w(14),
            reserved: h[64],
            planes: h[65],
            bytes_per_line: w(66),
            palette_info: w(68),
            hscreen: w(70),
            vscreen: w(72),
        }
    }

    /// Writes the named fields over `h`, leaving the other bytes (16-colour palette, filler)
    /// as they are.
    pub fn store(&self, h: &mut [u8; HEADER_LEN]) {
        let mut put = |o: usize, v: u16| h[o..o + 2].copy_from_slice(&v.to_le_bytes());
        put(4, self.xmin);
        put(6, self.ymin);
        put(8, self.xmax);
        put(10, self.ymax);
        put(12, self.hdpi);
        put(14, self.vdpi);
        put(66, self.bytes_per_line);
        put(68, self.palette_info);
        put(70, self.hscreen);
        put(72, self.vscreen);
        h[0] = self.manufacturer;
        h[1] = self.version;
        h[2] = self.encoding;
        h[3] = self.bits_per_pixel;
        h[64] = self.reserved;
        h[65] = self.planes;
    }

    /// Width from the window, or `None` when `xmax < xmin`.
    pub fn width(&self) -> Option<u32> {
        (self.xmax >= self.xmin).then(|| u32::from(self.xmax - self.xmin) + 1)
    }

    /// Height from the window, or `None` when `ymax < ymin`.
    pub fn height(&self) -> Option<u32> {
        (self.ymax >= self.ymin).then(|| u32::from(self.ymax - self.ymin) + 1)
    }
}

/// A decoded PCX.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pcx {
    /// The 128 header bytes as read (written back verbatim except the fields the writer
    /// must keep consistent: window and bytes per line follow `width`/`height`).
    pub header: [u8; HEADER_LEN],
    /// Pixel layout.
    pub kind: PcxKind,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `Indexed8`: one palette index per pixel; `Rgb24`: R, G, B per pixel; row-major,
    /// top-down.
    pub pixels: Vec<u8>,
    /// The 256 colours of an `Indexed8` image.
    pub palette: Option<Palette>,
    /// Bytes per plane line as stored (≥ width).
    pub bytes_per_line: u16,
    /// The decoded padding bytes (`bytes_per_line − width` per plane line), in file order.
    pub padding: Vec<u8>,
}

impl Pcx {
    /// The named header fields.
    pub fn fields(&self) -> HeaderFields {
        HeaderFields::from_bytes(&self.header)
    }

    /// Number of planes of `kind`.
    pub fn planes(&self) -> usize {
        match self.kind {
            PcxKind::Indexed8 => 1,
            PcxKind::Rgb24 => 3,
        }
    }

    /// Builds a new image with a fresh header (version 5, RLE, window from 0, bytes per
    /// line = width, 72 dpi).
    pub fn new(
        kind: PcxKind,
        width: u32,
        height: u32,
        pixels: Vec<u8>,
        palette: Option<Palette>,
    ) -> Pcx {
        let mut header = [0u8; HEADER_LEN];
        let bpl = u16::try_from(width).unwrap_or(u16::MAX);
        HeaderFields {
            manufacturer: 0x0A,
            version: 5,
            encoding: 1,
            bits_per_pixel: 8,
            xmin: 0,
            ymin: 0,
            xmax: u16::try_from(width.saturating_sub(1)).unwrap_or(u16::MAX),
            ymax: u16::try_from(height.saturating_sub(1)).unwrap_or(u16::MAX),
            hdpi: 72,
            vdpi: 72,
            reserved: 0,
            planes: if kind == PcxKind::Rgb24 { 3 } else { 1 },
            bytes_per_line: bpl,
            palette_info: 1,
            hscreen: 0,
            vscreen: 0,
        }
        .store(&mut header);
        let pad = (usize::from(bpl).saturating_sub(width as usize))
            * (height as usize)
            * if kind == PcxKind::Rgb24 { 3 } else { 1 };
        Pcx {
            header,
            kind,
            width,
            height,
            pixels,
            palette,
            bytes_per_line: bpl,
            padding: vec![0; pad],
        }
    }
}

fn truncated(structure: &'static str, offset: usize, len: usize, file_len: usize) -> PcxError {
    PcxError::Truncated {
        structure,
        offset: offset as u64,
        len: len as u64,
        file_len: file_len as u64,
    }
}

fn malformed(structure: &'static str, offset: usize, message: impl Into<String>) -> PcxError {
    PcxError::Malformed {
        structure,
        offset: offset as u64,
        message: message.into(),
    }
}

/// Where the parts of a PCX file lie.
struct Layout {
    header: [u8; HEADER_LEN],
    kind: PcxKind,
    width: u32,
    height: u32,
    bpl: usize,
    planes: usize,
    /// End of the pixel-data section (start of the palette trailer, or the file end).
    data_end: usize,
}

fn layout(data: &[u8], limits: &Limits) -> Result<Layout, PcxError> {
    let header: [u8; HEADER_LEN] = data
        .get(..HEADER_LEN)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| truncated("header", 0, HEADER_LEN, data.len()))?;
    let f = HeaderFields::from_bytes(&header);
    if f.manufacturer != 0x0A {
        return Err(malformed(
            "header",
            0,
            format!("manufacturer byte is {:#04x}, not 0x0a", f.manufacturer),
        ));
    }
    if f.encoding > 1 {
        return Err(malformed(
            "header",
            2,
            format!("encoding {} (0 = stored, 1 = RLE)", f.encoding),
        ));
    }
    let kind = match (f.bits_per_pixel, f.planes) {
        (8, 1) => PcxKind::Indexed8,
        (8, 3) => PcxKind::Rgb24,
        (b, p) => {
            return Err(malformed(
                "header",
                3,
                format!(
                "{b} bits per pixel × {p} planes; only 8 × 1 (paletted) and 8 × 3 (RGB) are read"
            ),
            ))
        }
    };
    let width = f
        .width()
        .ok_or_else(|| malformed("header", 8, format!("xmax {} < xmin {}", f.xmax, f.xmin)))?;
    let height = f
        .height()
        .ok_or_else(|| malformed("header", 10, format!("ymax {} < ymin {}", f.ymax, f.ymin)))?;
    let planes = usize::from(f.planes);
    let pixels = u64::from(width) * u64::from(height);
    if pixels > limits.max_frame_pixels {
        return Err(PcxError::Limit {
            structure: "header",
            offset: 4,
            message: format!(
                "{width}×{height} pixels, budget {}",
                limits.max_frame_pixels
            ),
        });
    }
    let bpl = usize::from(f.bytes_per_line);
    if bpl < width as usize {
        return Err(malformed(
            "header",
            66,
            format!("bytes per line {bpl} is below the width {width}"),
        ));
    }
    let decoded = (bpl as u64) * (planes as u64) * u64::from(height);
    if decoded > limits.max_frame_pixels.saturating_mul(4) {
        return Err(PcxError::Limit {
            structure: "header",
            offset: 66,
            message: format!("{decoded} decoded bytes (bytes per line × planes × height)"),
        });
    }
    let data_end = match kind {
        PcxKind::Indexed8 => {
            let start = data
                .len()
                .checked_sub(PALETTE_TRAILER_LEN)
                .filter(|&s| s >= HEADER_LEN)
                .ok_or_else(|| {
                    truncated(
                        "256-colour palette trailer",
                        HEADER_LEN,
                        PALETTE_TRAILER_LEN,
                        data.len(),
                    )
                })?;
            if data.get(start) != Some(&PALETTE_MARKER) {
                return Err(malformed(
                    "256-colour palette trailer",
                    start,
                    format!(
                        "byte is {:#04x}, not the 0x0c marker",
                        data.get(start).copied().unwrap_or(0)
                    ),
                ));
            }
            start
        }
        PcxKind::Rgb24 => data.len(),
    };
    Ok(Layout {
        header,
        kind,
        width,
        height,
        bpl,
        planes,
        data_end,
    })
}

/// Decodes `total` bytes of pixel data from `src` (RLE when `rle`), starting at file offset
/// `base` (for error messages). Runs may cross line ends, as standard readers allow.
fn decode_stream(
    src: &[u8],
    base: usize,
    total: usize,
    rle: bool,
    file_len: usize,
) -> Result<Vec<u8>, PcxError> {
    if !rle {
        return src
            .get(..total)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| truncated("stored pixel data", base, total, file_len));
    }
    // Each input byte yields at most 63 output bytes: refuse before allocating.
    if (total as u64) > (src.len() as u64) * (MAX_RUN as u64) {
        return Err(truncated("RLE pixel data", base, total / MAX_RUN, file_len));
    }
    let mut out = Vec::with_capacity(total);
    let mut i = 0usize;
    while out.len() < total {
        let Some(&b) = src.get(i) else {
            return Err(malformed(
                "RLE pixel data",
                base + i,
                format!("data ends after {} of {total} decoded bytes", out.len()),
            ));
        };
        if b >= 0xC0 {
            let Some(&v) = src.get(i + 1) else {
                return Err(truncated("RLE run value", base + i + 1, 1, file_len));
            };
            let n = usize::from(b & 0x3F).min(total - out.len());
            out.resize(out.len() + n, v);
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Ok(out)
}

/// What a PCX is, from its header and size alone (nothing is decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Pixel layout.
    pub kind: PcxKind,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bytes [`parse`] holds at once at most: the decoded scan lines (bytes per line ×
    /// planes × height), and the pixels and padding it sorts them into.
    pub decode_bytes: u64,
}

/// The [`Shape`] of `data`, checked as [`parse`] checks it before decoding (the same errors
/// for the header, the limits and the palette trailer).
pub fn shape(data: &[u8], limits: &Limits) -> Result<Shape, PcxError> {
    let l = layout(data, limits)?;
    let raw = (l.bpl as u64) * (l.planes as u64) * u64::from(l.height);
    Ok(Shape {
        kind: l.kind,
        width: l.width,
        height: l.height,
        decode_bytes: raw.saturating_mul(2),
    })
}

/// Reads a PCX.
pub fn parse(data: &[u8], limits: &Limits) -> Result<Pcx, PcxError> {
    let l = layout(data, limits)?;
    let section = data.get(HEADER_LEN..l.data_end).unwrap_or_default();
    let line = l.bpl * l.planes;
    let total = line * l.height as usize;
    let f = HeaderFields::from_bytes(&l.header);
    let raw = decode_stream(section, HEADER_LEN, total, f.encoding == 1, data.len())?;
    let (w, h) = (l.width as usize, l.height as usize);
    let mut pixels = vec![0u8; w * h * l.planes];
    let mut padding = Vec::with_capacity((l.bpl - w) * l.planes * h);
    for (y, row) in raw.chunks_exact(line.max(1)).enumerate().take(h) {
        for (p, plane) in row.chunks_exact(l.bpl.max(1)).enumerate() {
            let (px, pad) = plane.split_at(w);
            padding.extend_from_slice(pad);
            for (x, &v) in px.iter().enumerate() {
                pixels[(y * w + x) * l.planes + p] = v;
            }
        }
    }
    let palette = match l.kind {
        PcxKind::Indexed8 => Some(
            Palette::from_pcx(data)
                .map_err(|e| malformed("256-colour palette trailer", l.data_end, e.to_string()))?,
        ),
        PcxKind::Rgb24 => None,
    };
    Ok(Pcx {
        header: l.header,
        kind: l.kind,
        width: l.width,
        height: l.height,
        pixels,
        palette,
        bytes_per_line: f.bytes_per_line,
        padding,
    })
}

/// Appends the RLE of one plane line: runs of up to 63, and any byte ≥ 0xC0 always as a
/// run (of one if need be) so that it cannot be taken for a run code.
pub fn encode_line(line: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while let Some(&v) = line.get(i) {
        let n = line[i..]
            .iter()
            .take(MAX_RUN)
            .take_while(|&&b| b == v)
            .count();
        if n > 1 || v >= 0xC0 {
            out.push(0xC0 | n as u8);
        }
        out.push(v);
        i += n;
    }
}

/// The plane lines of `pcx` in file order (pixels then padding, per plane, per scan line).
fn plane_lines(pcx: &Pcx) -> Result<Vec<u8>, PcxError> {
    let planes = pcx.planes();
    let (w, h) = (pcx.width as usize, pcx.height as usize);
    let bpl = usize::from(pcx.bytes_per_line);
    if pcx.pixels.len() != w * h * planes {
        return Err(PcxError::Unwritable {
            structure: "pixels",
            message: format!("{} bytes for {w}×{h} × {planes} planes", pcx.pixels.len()),
        });
    }
    if bpl < w {
        return Err(PcxError::Unwritable {
            structure: "bytes per line",
            message: format!("{bpl} is below the width {w}"),
        });
    }
    let pad = bpl - w;
    if pcx.padding.len() != pad * planes * h {
        return Err(PcxError::Unwritable {
            structure: "padding",
            message: format!(
                "{} bytes, {pad} per plane line needs {}",
                pcx.padding.len(),
                pad * planes * h
            ),
        });
    }
    let mut out = Vec::with_capacity(bpl * planes * h);
    let mut pads = pcx.padding.chunks_exact(pad.max(1));
    for y in 0..h {
        for p in 0..planes {
            out.extend((0..w).map(|x| pcx.pixels[(y * w + x) * planes + p]));
            if pad > 0 {
                out.extend_from_slice(pads.next().unwrap_or_default());
            }
        }
    }
    Ok(out)
}

/// The header to write: the stored bytes with window and bytes per line made to agree with
/// the image size (the window keeps its origin).
fn header_for(pcx: &Pcx) -> Result<[u8; HEADER_LEN], PcxError> {
    let mut h = pcx.header;
    let mut f = HeaderFields::from_bytes(&h);
    let too_big = |what| PcxError::Unwritable {
        structure: "header",
        message: format!("{what} does not fit the 16-bit window"),
    };
    if pcx.width == 0 || pcx.height == 0 {
        return Err(PcxError::Unwritable {
            structure: "header",
            message: "an image needs at least one pixel".into(),
        });
    }
    f.xmax = u16::try_from(u32::from(f.xmin) + pcx.width - 1).map_err(|_| too_big("width"))?;
    f.ymax = u16::try_from(u32::from(f.ymin) + pcx.height - 1).map_err(|_| too_big("height"))?;
    f.bits_per_pixel = 8;
    f.planes = pcx.planes() as u8;
    f.bytes_per_line = pcx.bytes_per_line;
    f.store(&mut h);
    Ok(h)
}

/// Writes `pcx` with a fresh RLE (or stored data when the header says encoding 0), each
/// plane line encoded on its own, then the palette trailer of an `Indexed8` image.
pub fn write(pcx: &Pcx) -> Result<Vec<u8>, PcxError> {
    let header = header_for(pcx)?;
    let lines = plane_lines(pcx)?;
    let mut out = header.to_vec();
    if header[2] == 0 {
        out.extend_from_slice(&lines);
    } else {
        for line in lines.chunks(usize::from(pcx.bytes_per_line).max(1)) {
            encode_line(line, &mut out);
        }
    }
    push_palette(pcx, &mut out)?;
    Ok(out)
}

fn push_palette(pcx: &Pcx, out: &mut Vec<u8>) -> Result<(), PcxError> {
    match (pcx.kind, &pcx.palette) {
        (PcxKind::Indexed8, Some(p)) => {
            out.push(PALETTE_MARKER);
            out.extend_from_slice(&p.rgb_bytes());
            Ok(())
        }
        (PcxKind::Indexed8, None) => Err(PcxError::Unwritable {
            structure: "palette",
            message: "a paletted image needs its 256 colours".into(),
        }),
        (PcxKind::Rgb24, _) => Ok(()),
    }
}

/// Writes `pcx` as [`write`] does, except that when its pixels, padding, bytes per line and
/// encoding equal those of `base` (a PCX file), `base`'s encoded pixel data is reused byte
/// for byte (and with an equal header and palette the result is `base` itself).
pub fn write_like(pcx: &Pcx, base: &[u8], limits: &Limits) -> Result<Vec<u8>, PcxError> {
    let (Ok(old), Ok(l)) = (parse(base, limits), layout(base, limits)) else {
        return write(pcx);
    };
    let header = header_for(pcx)?;
    let same_data = old.kind == pcx.kind
        && old.width == pcx.width
        && old.height == pcx.height
        && old.bytes_per_line == pcx.bytes_per_line
        && old.pixels == pcx.pixels
        && old.padding == pcx.padding
        && old.header[2] == header[2];
    if !same_data {
        return write(pcx);
    }
    let mut out = header.to_vec();
    out.extend_from_slice(base.get(HEADER_LEN..l.data_end).unwrap_or_default());
    push_palette(pcx, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(kind: PcxKind, w: u32, h: u32) -> Pcx {
        let planes = if kind == PcxKind::Rgb24 { 3 } else { 1 };
        let px: Vec<u8> = (0..w * h * planes)
            .map(|i| {
                if i % 7 < 3 {
                    0xC5
                } else {
                    (i * 31 % 256) as u8
                }
            })
            .collect();
        let pal = (kind == PcxKind::Indexed8).then(Palette::ta);
        Pcx::new(kind, w, h, px, pal)
    }

    #[test]
    fn encode_line_escapes_and_splits_runs() {
        let mut out = Vec::new();
        encode_line(&[1, 0xC0, 2, 2], &mut out);
        assert_eq!(out, [1, 0xC1, 0xC0, 0xC2, 2]);
        out.clear();
        encode_line(&[7; 130], &mut out);
        assert_eq!(out, [0xFF, 7, 0xFF, 7, 0xC4, 7]);
    }

    #[test]
    fn write_then_parse_is_identity() {
        for kind in [PcxKind::Indexed8, PcxKind::Rgb24] {
            for (w, h) in [(1, 1), (5, 3), (96, 96), (200, 2)] {
                let p = sample(kind, w, h);
                let bytes = write(&p).unwrap();
                let q = parse(&bytes, &Limits::default()).unwrap();
                assert_eq!(q, p, "{kind:?} {w}×{h}");
                assert_eq!(write_like(&q, &bytes, &Limits::default()).unwrap(), bytes);
            }
        }
    }

    #[test]
    fn padding_is_kept() {
        let mut p = sample(PcxKind::Indexed8, 3, 2);
        p.bytes_per_line = 4;
        p.padding = vec![0xAA, 0xBB];
        let bytes = write(&p).unwrap();
        let q = parse(&bytes, &Limits::default()).unwrap();
        assert_eq!(q.padding, [0xAA, 0xBB]);
        assert_eq!(q.pixels, p.pixels);
    }

    #[test]
    fn write_like_keeps_foreign_runs_and_trailing_bytes() {
        // Two literal 5s where the writer would emit a run, and a junk byte after the data.
        let mut p = sample(PcxKind::Indexed8, 2, 1);
        p.pixels = vec![5, 5];
        let canonical = write(&p).unwrap();
        let mut odd = canonical[..HEADER_LEN].to_vec();
        odd.extend_from_slice(&[5, 5, 0x42]);
        odd.extend_from_slice(&canonical[canonical.len() - PALETTE_TRAILER_LEN..]);
        let q = parse(&odd, &Limits::default()).unwrap();
        assert_eq!(q.pixels, [5, 5]);
        assert_eq!(write_like(&q, &odd, &Limits::default()).unwrap(), odd);
        assert_ne!(write(&q).unwrap(), odd);
        let mut edited = q.clone();
        edited.pixels[1] = 6;
        let e = write_like(&edited, &odd, &Limits::default()).unwrap();
        assert_eq!(parse(&e, &Limits::default()).unwrap().pixels, [5, 6]);
    }

    #[test]
    fn malformed_inputs_are_clean_errors() {
        let lim = Limits::default();
        let good = write(&sample(PcxKind::Indexed8, 4, 4)).unwrap();
        for n in 0..good.len() {
            assert!(parse(&good[..n], &lim).is_err(), "prefix {n}");
        }
        let mut bad = good.clone();
        bad[0] = 0x0B;
        assert!(matches!(
            parse(&bad, &lim),
            Err(PcxError::Malformed { offset: 0, .. })
        ));
        let mut huge = good.clone();
        huge[8..12].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
        huge[66..68].copy_from_slice(&[0xFF, 0xFF]);
        assert!(matches!(parse(&huge, &lim), Err(PcxError::Limit { .. })));
        let mut wide = good.clone();
        wide[66..68].copy_from_slice(&[0xFF, 0x0F]);
        assert!(parse(&wide, &lim).is_err());
        let mut inverted = good.clone();
        inverted[4] = 9;
        assert!(matches!(
            parse(&inverted, &lim),
            Err(PcxError::Malformed { offset: 8, .. })
        ));
        let mut planes = good;
        planes[65] = 4;
        assert!(parse(&planes, &lim).is_err());
    }
}
