//! Reading the files of an unpacked map for [`super::pack()`]: features.csv, tilemap.csv,
//! heightmap.png, tiles/*.png, and map.png/minimap.png streamed row by row.

use crate::formats::palette::{NearestCache, Palette};
use crate::formats::tnt::{FeatureEntry, FIRST_SENTINEL};
use crate::view::image::{decode_png, to_indices};
use crate::view::{FileSet, ViewError};

use super::pack::need;
use super::{FEATURES_CSV, FEATURES_HEADER, HEIGHT_PNG, TILEMAP_CSV};
use crate::view::csv::csv_err;

pub(super) struct Placement {
    pub(super) row: u64,
    pub(super) index: Option<u16>,
    pub(super) name: String,
    pub(super) x: u32,
    pub(super) y: u32,
}

pub(super) fn parse_features(
    data: &[u8],
    width: u32,
    height: u32,
) -> Result<Vec<Placement>, ViewError> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::Fields)
        .flexible(true)
        .from_reader(data);
    let headers = rd
        .headers()
        .map_err(|e| csv_err(FEATURES_CSV, 1, "-", e.to_string()))?
        .clone();
    let want = ["feature_index", "name", "attr_x", "attr_y"];
    if headers.len() != 4
        || headers
            .iter()
            .zip(want)
            .any(|(a, b)| !a.eq_ignore_ascii_case(b))
    {
        return Err(csv_err(
            FEATURES_CSV,
            1,
            "-",
            format!("header must be {FEATURES_HEADER}"),
        ));
    }
    let mut out = Vec::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| {
            let row = e.position().map_or(0, |p| p.line());
            csv_err(FEATURES_CSV, row, "-", e.to_string())
        })?;
        let row = rec.position().map_or(0, |p| p.line());
        if rec.iter().all(|f| f.is_empty()) {
            continue;
        }
        if rec.len() != 4 {
            return Err(csv_err(
                FEATURES_CSV,
                row,
                "-",
                format!("{} fields, expected 4 ({FEATURES_HEADER})", rec.len()),
            ));
        }
        let num = |col: usize, name: &str, max: u32| -> Result<u32, ViewError> {
            let s = &rec[col];
            let v: u32 = s
                .parse()
                .map_err(|_| csv_err(FEATURES_CSV, row, name, format!("{s:?} is not a number")))?;
            if v >= max {
                return Err(csv_err(
                    FEATURES_CSV,
                    row,
                    name,
                    format!("{v} is outside the map (0..{max})"),
                ));
            }
            Ok(v)
        };
        let index = match &rec[0] {
            "" => None,
            s => Some(s.parse::<u16>().map_err(|_| {
                csv_err(
                    FEATURES_CSV,
                    row,
                    "feature_index",
                    format!("{s:?} is not a feature index"),
                )
            })?),
        };
        let name = rec[1].to_string();
        if name.is_empty() && index.is_none() {
            return Err(csv_err(
                FEATURES_CSV,
                row,
                "name",
                "needs a name or an index",
            ));
        }
        out.push(Placement {
            row,
            index,
            name,
            x: num(2, "attr_x", width)?,
            y: num(3, "attr_y", height)?,
        });
    }
    Ok(out)
}

/// The table index for a placement: its `feature_index` when that entry has its name, else
/// the first entry of that name, else a new entry.
pub(super) fn resolve_feature(
    table: &mut Vec<FeatureEntry>,
    p: &Placement,
) -> Result<u16, ViewError> {
    if let Some(i) = p.index {
        if let Some(e) = table.get(usize::from(i)) {
            if p.name.is_empty() || e.name_str() == p.name {
                return Ok(i);
            }
        }
    }
    if let Some(i) = table.iter().position(|e| e.name_str() == p.name) {
        return Ok(i as u16);
    }
    if p.name.is_empty() {
        return Err(csv_err(
            FEATURES_CSV,
            p.row,
            "feature_index",
            "no such feature and no name to add it by",
        ));
    }
    let n = table.len();
    if n + 1 >= usize::from(FIRST_SENTINEL) {
        return Err(csv_err(
            FEATURES_CSV,
            p.row,
            "name",
            "too many distinct features",
        ));
    }
    let e = FeatureEntry::new(n as u32, p.name.as_bytes()).ok_or_else(|| {
        csv_err(
            FEATURES_CSV,
            p.row,
            "name",
            format!("{:?} is longer than 127 bytes", p.name),
        )
    })?;
    table.push(e);
    Ok(n as u16)
}

pub(super) fn parse_tilemap(data: &[u8], tx: usize, ty: usize) -> Result<Vec<u16>, ViewError> {
    let text = std::str::from_utf8(data)
        .map_err(|e| ViewError::invalid(TILEMAP_CSV, format!("not UTF-8 text: {e}")))?;
    let mut out = Vec::with_capacity(tx * ty);
    let mut rows = 0usize;
    for (n, line) in text.lines().enumerate() {
        let row = (n + 1) as u64;
        let line = line.trim();
        if line.is_empty() && (tx > 0 || rows >= ty) {
            continue;
        }
        rows += 1;
        if rows > ty {
            return Err(csv_err(
                TILEMAP_CSV,
                row,
                "-",
                format!("more than {ty} rows"),
            ));
        }
        let mut cols = 0usize;
        for (c, field) in line.split(',').enumerate() {
            if tx == 0 {
                break;
            }
            let field = field.trim();
            let v: u16 = field.parse().map_err(|_| {
                csv_err(
                    TILEMAP_CSV,
                    row,
                    (c + 1).to_string(),
                    format!("{field:?} is not a tile index (0..65535)"),
                )
            })?;
            cols += 1;
            if cols > tx {
                return Err(csv_err(
                    TILEMAP_CSV,
                    row,
                    (c + 1).to_string(),
                    format!("more than {tx} columns"),
                ));
            }
            out.push(v);
        }
        if cols != tx {
            return Err(csv_err(
                TILEMAP_CSV,
                row,
                (cols + 1).to_string(),
                format!("{cols} columns, expected {tx}"),
            ));
        }
    }
    if rows != ty {
        return Err(csv_err(
            TILEMAP_CSV,
            rows as u64 + 1,
            "-",
            format!("{rows} rows, expected {ty}"),
        ));
    }
    Ok(out)
}

pub(super) fn read_heightmap(data: &[u8], width: u32, height: u32) -> Result<Vec<u8>, ViewError> {
    let d = decode_png(data).map_err(|e| ViewError::invalid(HEIGHT_PNG, e))?;
    if (d.width, d.height) != (width, height) {
        return Err(ViewError::invalid(
            HEIGHT_PNG,
            format!(
                "is {}×{}; the attribute grid is {width}×{height}",
                d.width, d.height
            ),
        ));
    }
    match d.pixels {
        crate::view::image::PngPixels::Gray(g) => Ok(g),
        crate::view::image::PngPixels::Rgba(px) => px
            .chunks_exact(4)
            .enumerate()
            .map(|(i, p)| {
                if p[0] == p[1] && p[1] == p[2] {
                    Ok(p[0])
                } else {
                    Err(ViewError::invalid(
                        HEIGHT_PNG,
                        format!(
                            "pixel ({}, {}) is not grey ({}, {}, {}); heights are grey levels",
                            i % width as usize,
                            i / width as usize,
                            p[0],
                            p[1],
                            p[2]
                        ),
                    ))
                }
            })
            .collect(),
        crate::view::image::PngPixels::Indexed { .. } => Err(ViewError::invalid(
            HEIGHT_PNG,
            "is an indexed PNG; save it as 8-bit greyscale",
        )),
    }
}

/// The tiles of `tiles/`, as palette indices; a tile that is `base`'s own rendering
/// ([`FileSet::generated`]) is taken from `base` without being read.
pub(super) fn read_tiles(
    files: &dyn FileSet,
    palette: &Palette,
    max: usize,
    base: Option<&crate::formats::tnt::Tnt>,
) -> Result<Vec<u8>, ViewError> {
    use rayon::prelude::*;
    let list = files.list("tiles")?.unwrap_or_default();
    let mut numbers = Vec::new();
    for (name, is_dir) in &list {
        if *is_dir || name.starts_with('.') || !name.to_ascii_lowercase().ends_with(".png") {
            continue;
        }
        let stem = &name[..name.len() - 4];
        let n = stem
            .parse::<usize>()
            .ok()
            .filter(|_| stem.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| {
                ViewError::invalid(
                    format!("tiles/{name}"),
                    "tile files are named <n>.png with n = 0, 1, 2, …",
                )
            })?;
        numbers.push((n, name.clone()));
    }
    numbers.sort();
    if numbers.len() > max {
        return Err(ViewError::invalid(
            "tiles",
            format!("{} tiles, over the limit of {max}", numbers.len()),
        ));
    }
    for (i, (n, name)) in numbers.iter().enumerate() {
        if *n != i {
            let file = format!("tiles/{i}.png");
            return Err(if *n > i {
                ViewError::Missing {
                    file,
                    why: format!("tiles are numbered without gaps; found tiles/{name}"),
                }
            } else {
                ViewError::invalid(format!("tiles/{name}"), "duplicate tile number")
            });
        }
    }
    /// A base tile, or the PNG to decode.
    enum Tile<'a> {
        Own(&'a [u8]),
        Png(Vec<u8>),
    }
    let mut raw: Vec<(String, Tile)> = Vec::with_capacity(numbers.len());
    for (n, name) in &numbers {
        let path = format!("tiles/{name}");
        let own = base
            .filter(|_| files.generated(&path))
            .and_then(|t| t.tile(*n));
        let b = match own {
            Some(t) => Tile::Own(t),
            None => Tile::Png(need(files, &path, "listed in tiles/")?),
        };
        raw.push((path, b));
    }
    // the PNGs decoded on every core; the base's tiles copied once, into the result
    let decoded: Vec<Option<Vec<u8>>> = raw
        .par_iter()
        .map(|(path, b)| {
            let Tile::Png(b) = b else {
                return Ok(None);
            };
            let d = decode_png(b).map_err(|e| ViewError::invalid(path.as_str(), e))?;
            if (d.width, d.height) != (32, 32) {
                return Err(ViewError::invalid(
                    path.as_str(),
                    format!("is {}×{}; tiles are 32×32", d.width, d.height),
                ));
            }
            Ok(Some(to_indices(&d, palette, &[], 0).indices))
        })
        .collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(raw.len() * crate::formats::tnt::TILE_BYTES);
    for ((_, b), d) in raw.iter().zip(&decoded) {
        match (b, d) {
            (Tile::Own(tile), _) => out.extend_from_slice(tile),
            (Tile::Png(_), Some(px)) => out.extend_from_slice(px),
            (Tile::Png(_), None) => {}
        }
    }
    Ok(out)
}

/// Decodes a PNG row by row (whole-image decode for interlaced files), handing each row as
/// palette indices of `palette` to `f`. Returns the image size.
pub(super) fn stream_png_rows(
    data: &[u8],
    file: &str,
    palette: &Palette,
    mut f: impl FnMut(usize, &[u8]) -> Result<(), ViewError>,
) -> Result<(u32, u32), ViewError> {
    let bad = |e: String| ViewError::invalid(file, e);
    let limits = png::Limits {
        bytes: crate::view::image::MAX_DECODED_BYTES,
    };
    let probe = png::Decoder::new_with_limits(std::io::Cursor::new(data), limits)
        .read_info()
        .map_err(|e| bad(format!("not a readable PNG: {e}")))?;
    let info = probe.info();
    let (w, h) = (info.width, info.height);
    let indexed8 =
        info.color_type == png::ColorType::Indexed && info.bit_depth == png::BitDepth::Eight;
    let plte = info.palette.as_deref().unwrap_or_default().to_vec();
    let interlaced = info.interlaced;
    drop(probe);
    if interlaced {
        let d = decode_png(data).map_err(bad)?;
        let img = to_indices(&d, palette, &[], 0);
        for (y, row) in img.indices.chunks(w.max(1) as usize).enumerate() {
            f(y, row)?;
        }
        return Ok((w, h));
    }
    let mut reader = crate::view::image::png_reader(data, limits, indexed8).map_err(bad)?;
    let (ct, _) = reader.output_color_type();
    let same = plte.len() <= 768
        && plte
            .chunks_exact(3)
            .zip(palette.colors.iter())
            .all(|(a, b)| a == b);
    let mut lut = [0u8; 256];
    if indexed8 && !same {
        let mut cache = NearestCache::new(palette, &[]);
        for (i, l) in lut.iter_mut().enumerate() {
            let c = plte
                .get(i * 3..i * 3 + 3)
                .map_or([0, 0, 0], |c| [c[0], c[1], c[2]]);
            *l = cache.get(c);
        }
    }
    let mut cache = NearestCache::new(palette, &[]);
    let mut out = vec![0u8; w as usize];
    let mut y = 0usize;
    while let Some(row) = reader
        .next_row()
        .map_err(|e| bad(format!("corrupt PNG data at row {y}: {e}")))?
    {
        let data = row.data();
        match (indexed8, ct) {
            (true, _) if same => out.copy_from_slice(&data[..w as usize]),
            (true, _) => {
                for (o, &i) in out.iter_mut().zip(data) {
                    *o = lut[usize::from(i)];
                }
            }
            (false, png::ColorType::Rgba) => {
                for (o, p) in out.iter_mut().zip(data.chunks_exact(4)) {
                    *o = cache.get([p[0], p[1], p[2]]);
                }
            }
            (false, png::ColorType::GrayscaleAlpha) => {
                for (o, p) in out.iter_mut().zip(data.chunks_exact(2)) {
                    *o = cache.get([p[0], p[0], p[0]]);
                }
            }
            (false, other) => return Err(bad(format!("unsupported PNG colour layout {other:?}"))),
        }
        f(y, &out)?;
        y += 1;
    }
    Ok((w, h))
}
