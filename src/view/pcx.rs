//! The exploded view of a PCX picture (unit pictures, GUI panels, palette carriers): the
//! image as `image.png` (indexed with the PCX's palette, or RGB for 24-bit files) and the
//! header in `metadata.json`; and the way back, which rebuilds the identical PCX from an
//! unedited directory and maps an edited image onto the PCX's palette without moving the
//! pixels the edit did not touch.
//!
//! Also holds [`FileListView`], the eagerly rendered [`View`] shared by the small views
//! (PCX, palettes, 3DO models).

use super::image::{decode_png, write_indexed_png, DecodedPng, PngPixels};
use super::{Entry, FileSet, View, ViewError};
use crate::formats::palette::{NearestCache, Palette};
use crate::formats::pcx::{self, HeaderFields, Pcx, PcxKind, HEADER_LEN};
use crate::formats::Limits;
use serde::{Deserialize, Serialize};
use std::io::Write;

/// The image file of the view.
pub const IMAGE: &str = "image.png";
/// The header file of the view.
pub const METADATA: &str = "metadata.json";

/// A view whose files are all rendered up front (small assets).
#[derive(Debug, Clone, Default)]
pub struct FileListView {
    entries: Vec<Entry>,
    files: Vec<(String, Vec<u8>)>,
}

impl FileListView {
    /// A view of `files` (relative `/`-separated paths, parents implied and listed first).
    pub fn new(files: Vec<(String, Vec<u8>)>) -> FileListView {
        let mut entries: Vec<Entry> = Vec::new();
        for (path, _) in &files {
            let mut acc = String::new();
            let parts: Vec<&str> = path.split('/').collect();
            for dir in parts.iter().take(parts.len().saturating_sub(1)) {
                if !acc.is_empty() {
                    acc.push('/');
                }
                acc.push_str(dir);
                if !entries.iter().any(|e| e.path == acc) {
                    entries.push(Entry::dir(acc.clone()));
                }
            }
            entries.push(Entry::file(path.clone()));
        }
        FileListView { entries, files }
    }

    /// The files and their bytes.
    pub fn files(&self) -> &[(String, Vec<u8>)] {
        &self.files
    }
}

impl View for FileListView {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        let (_, bytes) = self
            .files
            .iter()
            .find(|(p, _)| p == path)
            .ok_or_else(|| ViewError::NotFound(path.to_string()))?;
        out.write_all(bytes).map_err(|source| ViewError::Io {
            path: path.to_string(),
            source,
        })
    }

    fn size_hint(&self, path: &str) -> Option<u64> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, b)| b.len() as u64)
    }
}

/// `metadata.json` of a PCX view: the header's named fields (editable), the whole header as
/// read (for the bytes no field names), the padding and the palette.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// Always "pcx".
    pub format: String,
    /// "indexed8" (8-bit, 256-colour palette) or "rgb24" (3 planes).
    pub kind: String,
    /// Width when dumped (the PNG's width decides on rebuild).
    pub width: u32,
    /// Height when dumped.
    pub height: u32,
    /// Header +1.
    pub version: u8,
    /// Header +2 (1 = RLE, 0 = stored).
    pub encoding: u8,
    /// Window origin, header +4.
    pub xmin: u16,
    /// Window origin, header +6.
    pub ymin: u16,
    /// Header +12.
    pub hdpi: u16,
    /// Header +14.
    pub vdpi: u16,
    /// Header +64.
    pub reserved: u8,
    /// Bytes per plane line (header +66); the rebuild keeps `bytes_per_line − width`.
    pub bytes_per_line: u16,
    /// Header +68.
    pub palette_info: u16,
    /// Header +70.
    pub hscreen: u16,
    /// Header +72.
    pub vscreen: u16,
    /// All 128 header bytes as read; the named fields above are written over them.
    pub header_hex: String,
    /// The decoded bytes-per-line padding, in file order (kept while the size is unchanged).
    pub padding_hex: String,
    /// The 768 palette bytes (R, G, B × 256) of an 8-bit image: what the image is mapped to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub palette_hex: Option<String>,
    /// The original pixel data when this codec's encoder would not reproduce it (other run
    /// choices, bytes after the last run); reused while the pixels are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_hex: Option<String>,
    /// How TA 3.1c would draw the file differently from standard readers (informational).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub game_notes: Vec<String>,
}

use crate::view::csv::{hex, unhex};

fn kind_name(k: PcxKind) -> &'static str {
    match k {
        PcxKind::Indexed8 => "indexed8",
        PcxKind::Rgb24 => "rgb24",
    }
}

/// The differences between how TA 3.1c and a standard reader draw `p`.
pub fn game_notes(p: &Pcx) -> Vec<String> {
    let f = p.fields();
    let mut notes = Vec::new();
    if f.version != 5 {
        notes.push(format!("version is {}; TA loads version 5 only", f.version));
    }
    if p.kind == PcxKind::Rgb24 {
        notes.push(
            "24-bit image: TA decodes every PCX as 8-bit paletted, so it shows garbage".into(),
        );
    }
    if usize::from(p.bytes_per_line) != p.width as usize {
        notes.push(format!(
            "bytes per line is {} but the width is {}: TA reads {} bytes per row, so the rows shift",
            p.bytes_per_line, p.width, p.width
        ));
    }
    notes
}

fn metadata_of(p: &Pcx, original: &[u8]) -> Metadata {
    let f = p.fields();
    let canonical = pcx::write(p).map(|w| w == original).unwrap_or(false);
    let data_hex = (!canonical).then(|| {
        let end = match p.kind {
            PcxKind::Indexed8 => original.len().saturating_sub(pcx::PALETTE_TRAILER_LEN),
            PcxKind::Rgb24 => original.len(),
        };
        hex(original.get(HEADER_LEN..end).unwrap_or_default())
    });
    Metadata {
        format: "pcx".into(),
        kind: kind_name(p.kind).into(),
        width: p.width,
        height: p.height,
        version: f.version,
        encoding: f.encoding,
        xmin: f.xmin,
        ymin: f.ymin,
        hdpi: f.hdpi,
        vdpi: f.vdpi,
        reserved: f.reserved,
        bytes_per_line: f.bytes_per_line,
        palette_info: f.palette_info,
        hscreen: f.hscreen,
        vscreen: f.vscreen,
        header_hex: hex(&p.header),
        padding_hex: hex(&p.padding),
        palette_hex: p.palette.as_ref().map(|pal| hex(&pal.rgb_bytes())),
        data_hex,
        game_notes: game_notes(p),
    }
}

/// Writes an 8-bit RGB PNG (fast deflate, like the other generated images).
pub fn write_rgb_png(
    out: &mut dyn Write,
    width: u32,
    height: u32,
    rgb: &[u8],
) -> Result<(), png::EncodingError> {
    let mut enc = png::Encoder::new(out, width, height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    crate::view::image::fast_png(&mut enc);
    let mut w = enc.write_header()?;
    w.write_image_data(rgb)?;
    w.finish()
}

fn png_error(e: png::EncodingError) -> ViewError {
    ViewError::invalid(IMAGE, format!("cannot encode PNG: {e}"))
}

/// The image of `p` as a PNG: indexed with its palette (no transparency: the game draws
/// PCX pictures opaque), or RGB.
pub fn image_png(p: &Pcx) -> Result<Vec<u8>, ViewError> {
    let mut out = Vec::new();
    match (&p.kind, &p.palette) {
        (PcxKind::Indexed8, Some(pal)) => {
            write_indexed_png(&mut out, p.width, p.height, &p.pixels, pal, None)
                .map_err(png_error)?
        }
        _ => write_rgb_png(&mut out, p.width, p.height, &p.pixels).map_err(png_error)?,
    }
    Ok(out)
}

/// The files of the view of the PCX `data`: `image.png` and `metadata.json`.
pub fn files(data: &[u8], limits: &Limits) -> Result<Vec<(String, Vec<u8>)>, ViewError> {
    let p = pcx::parse(data, limits).map_err(|e| ViewError::invalid("", e.to_string()))?;
    let meta = metadata_of(&p, data);
    let json = serde_json::to_vec_pretty(&meta)
        .map_err(|e| ViewError::invalid(METADATA, e.to_string()))?;
    Ok(vec![
        (IMAGE.to_string(), image_png(&p)?),
        (METADATA.to_string(), json),
    ])
}

/// The view of the PCX `data`.
pub fn open(data: &[u8], limits: &Limits) -> Result<FileListView, ViewError> {
    Ok(FileListView::new(files(data, limits)?))
}

/// Maps a decoded image onto `palette`. An indexed image whose colours equal the palette's
/// keeps its indices; otherwise each pixel keeps the index it had in `original` (same size,
/// row-major) when that index still holds the pixel's colour, then takes the first index
/// holding exactly its colour, then the nearest colour. Alpha is ignored (PCX is opaque).
pub fn map_to_palette(img: &DecodedPng, palette: &Palette, original: Option<&[u8]>) -> Vec<u8> {
    let n = (img.width as usize) * (img.height as usize);
    let mut cache = NearestCache::new(palette, &[]);
    let mut pick = |i: usize, rgb: [u8; 3]| -> u8 {
        if let Some(&o) = original.and_then(|o| o.get(i)) {
            if palette.colors[usize::from(o)] == rgb {
                return o;
            }
        }
        cache.get(rgb)
    };
    match &img.pixels {
        PngPixels::Indexed { indices, plte, .. } => {
            let same = plte.len() <= 768
                && plte
                    .chunks_exact(3)
                    .zip(palette.colors.iter())
                    .all(|(a, b)| a == b);
            indices
                .iter()
                .take(n)
                .enumerate()
                .map(|(i, &v)| {
                    let o = usize::from(v) * 3;
                    match plte.get(o..o + 3) {
                        Some(_) if same => v,
                        Some(c) => pick(i, [c[0], c[1], c[2]]),
                        None => pick(i, [0, 0, 0]),
                    }
                })
                .collect()
        }
        PngPixels::Rgba(px) => px
            .chunks_exact(4)
            .take(n)
            .enumerate()
            .map(|(i, p)| pick(i, [p[0], p[1], p[2]]))
            .collect(),
        PngPixels::Gray(px) => px
            .iter()
            .take(n)
            .enumerate()
            .map(|(i, &g)| pick(i, [g, g, g]))
            .collect(),
    }
}

/// The RGB bytes of a decoded image (alpha dropped).
pub fn to_rgb(img: &DecodedPng) -> Vec<u8> {
    let n = (img.width as usize) * (img.height as usize);
    match &img.pixels {
        PngPixels::Indexed { indices, plte, .. } => indices
            .iter()
            .take(n)
            .flat_map(|&v| {
                let o = usize::from(v) * 3;
                match plte.get(o..o + 3) {
                    Some(c) => [c[0], c[1], c[2]],
                    None => [0, 0, 0],
                }
            })
            .collect(),
        PngPixels::Rgba(px) => px
            .chunks_exact(4)
            .take(n)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
        PngPixels::Gray(px) => px.iter().take(n).flat_map(|&g| [g, g, g]).collect(),
    }
}

fn bad_meta(msg: impl Into<String>) -> ViewError {
    ViewError::invalid(METADATA, msg)
}

/// Rebuilds the PCX from the view's files. `base` is the PCX the view was made from, when at
/// hand: its palette is used if `metadata.json` is missing, and pixels are kept at their
/// original index where the colour still matches. An unedited directory gives back the
/// identical bytes (with or without `base`).
pub fn build(
    files: &dyn FileSet,
    base: Option<&[u8]>,
    limits: &Limits,
) -> Result<Vec<u8>, ViewError> {
    let base_pcx = base.and_then(|b| pcx::parse(b, limits).ok());
    let meta: Metadata = match files.read(METADATA)? {
        Some(b) => serde_json::from_slice(&b)
            .map_err(|e| bad_meta(format!("not valid PCX metadata: {e}")))?,
        None => match (&base_pcx, base) {
            (Some(p), Some(b)) => metadata_of(p, b),
            _ => {
                return Err(ViewError::Missing {
                    file: METADATA.into(),
                    why: "needed for the PCX header".into(),
                })
            }
        },
    };
    let kind = match meta.kind.as_str() {
        "indexed8" => PcxKind::Indexed8,
        "rgb24" => PcxKind::Rgb24,
        other => {
            return Err(bad_meta(format!(
                "kind {other:?}: expected indexed8 or rgb24"
            )))
        }
    };
    let header: [u8; HEADER_LEN] = unhex(&meta.header_hex)
        .and_then(|v| v.try_into().ok())
        .ok_or_else(|| bad_meta("header_hex must be 256 hex digits (128 bytes)"))?;
    let png_bytes = files.read(IMAGE)?.ok_or_else(|| ViewError::Missing {
        file: IMAGE.into(),
        why: "the picture".into(),
    })?;
    let img = decode_png(&png_bytes).map_err(|e| ViewError::invalid(IMAGE, e))?;
    let (width, height) = (img.width, img.height);
    if u64::from(width) * u64::from(height) > limits.max_frame_pixels {
        return Err(ViewError::invalid(
            IMAGE,
            format!("{width}×{height} is over the pixel budget"),
        ));
    }
    let same_size = width == meta.width && height == meta.height;
    let original = base_pcx
        .as_ref()
        .filter(|p| p.kind == kind && p.width == width && p.height == height)
        .map(|p| p.pixels.as_slice());
    let (pixels, palette) = match kind {
        PcxKind::Indexed8 => {
            let pal = match &meta.palette_hex {
                Some(h) => {
                    let b = unhex(h)
                        .filter(|b| b.len() == 768)
                        .ok_or_else(|| bad_meta("palette_hex must be 1536 hex digits"))?;
                    let mut colors = [[0u8; 3]; 256];
                    for (c, rgb) in colors.iter_mut().zip(b.chunks_exact(3)) {
                        c.copy_from_slice(rgb);
                    }
                    Palette { colors }
                }
                None => base_pcx
                    .as_ref()
                    .and_then(|p| p.palette.clone())
                    .ok_or_else(|| bad_meta("palette_hex is missing"))?,
            };
            (map_to_palette(&img, &pal, original), Some(pal))
        }
        PcxKind::Rgb24 => (to_rgb(&img), None),
    };
    let old_pad = usize::from(meta.bytes_per_line).saturating_sub(meta.width as usize);
    let planes = if kind == PcxKind::Rgb24 { 3 } else { 1 };
    let (bytes_per_line, padding) = if same_size {
        let pad = unhex(&meta.padding_hex).ok_or_else(|| bad_meta("padding_hex is not hex"))?;
        let want = old_pad * planes * height as usize;
        if pad.len() != want {
            return Err(bad_meta(format!(
                "padding_hex holds {} bytes, the header needs {want}",
                pad.len()
            )));
        }
        (meta.bytes_per_line, pad)
    } else {
        let bpl = u16::try_from(width as usize + old_pad).map_err(|_| {
            ViewError::invalid(IMAGE, format!("width {width} is too large for PCX"))
        })?;
        (bpl, vec![0u8; old_pad * planes * height as usize])
    };
    let mut hdr = header;
    let mut f = HeaderFields::from_bytes(&hdr);
    f.version = meta.version;
    f.encoding = meta.encoding;
    f.xmin = meta.xmin;
    f.ymin = meta.ymin;
    f.hdpi = meta.hdpi;
    f.vdpi = meta.vdpi;
    f.reserved = meta.reserved;
    f.palette_info = meta.palette_info;
    f.hscreen = meta.hscreen;
    f.vscreen = meta.vscreen;
    f.store(&mut hdr);
    let p = Pcx {
        header: hdr,
        kind,
        width,
        height,
        pixels,
        palette,
        bytes_per_line,
        padding,
    };
    let like = match (&meta.data_hex, base) {
        (Some(d), _) => {
            let mut synthetic = hdr.to_vec();
            synthetic.extend(unhex(d).ok_or_else(|| bad_meta("data_hex is not hex"))?);
            if let Some(pal) = &p.palette {
                synthetic.push(pcx::PALETTE_MARKER);
                synthetic.extend(pal.rgb_bytes());
            }
            Some(synthetic)
        }
        (None, Some(b)) => Some(b.to_vec()),
        (None, None) => None,
    };
    let out = match like {
        Some(l) => pcx::write_like(&p, &l, limits),
        None => pcx::write(&p),
    };
    out.map_err(|e| ViewError::invalid(IMAGE, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::MemFileSet;

    fn sample() -> Vec<u8> {
        let px: Vec<u8> = (0..12u32 * 5).map(|i| (i * 7 % 256) as u8).collect();
        pcx::write(&Pcx::new(PcxKind::Indexed8, 12, 5, px, Some(Palette::ta()))).unwrap()
    }

    fn set(files: Vec<(String, Vec<u8>)>) -> MemFileSet {
        MemFileSet {
            files: files.into_iter().collect(),
        }
    }

    #[test]
    fn unedited_view_rebuilds_identically_with_and_without_base() {
        let data = sample();
        let fs = set(files(&data, &Limits::default()).unwrap());
        assert_eq!(build(&fs, Some(&data), &Limits::default()).unwrap(), data);
        assert_eq!(build(&fs, None, &Limits::default()).unwrap(), data);
        let v = open(&data, &Limits::default()).unwrap();
        assert_eq!(v.entries().len(), 2);
        assert_eq!(v.render_vec(IMAGE).unwrap(), fs.files[IMAGE]);
    }

    #[test]
    fn non_canonical_runs_survive_without_base() {
        let data = sample();
        let mut odd = data[..HEADER_LEN].to_vec();
        // The first scan line as 12 literal-or-run codes of one pixel each, then the rest.
        let p = pcx::parse(&data, &Limits::default()).unwrap();
        for &v in &p.pixels[..12] {
            odd.extend_from_slice(&[0xC1, v]);
        }
        for row in p.pixels[12..].chunks(12) {
            pcx::encode_line(row, &mut odd);
        }
        odd.extend_from_slice(&data[data.len() - pcx::PALETTE_TRAILER_LEN..]);
        assert_eq!(pcx::parse(&odd, &Limits::default()).unwrap(), p);
        let fs = set(files(&odd, &Limits::default()).unwrap());
        assert_eq!(build(&fs, None, &Limits::default()).unwrap(), odd);
    }

    #[test]
    fn missing_or_broken_files_are_errors() {
        let data = sample();
        let mut fs = set(files(&data, &Limits::default()).unwrap());
        fs.files.remove(IMAGE);
        assert!(matches!(
            build(&fs, Some(&data), &Limits::default()),
            Err(ViewError::Missing { .. })
        ));
        let mut fs = set(files(&data, &Limits::default()).unwrap());
        fs.files.insert(METADATA.into(), b"{".to_vec());
        assert!(build(&fs, None, &Limits::default()).is_err());
        let mut fs = set(files(&data, &Limits::default()).unwrap());
        fs.files.remove(METADATA);
        assert!(build(&fs, None, &Limits::default()).is_err());
        assert_eq!(build(&fs, Some(&data), &Limits::default()).unwrap(), data);
        assert!(files(b"junk", &Limits::default()).is_err());
    }
}
