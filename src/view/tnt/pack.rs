//! [`pack`]: an unpacked directory back to a map (header and lossless data from
//! metadata.json, the grids from the CSVs and PNGs, re-tiling when map.png was edited).

use crate::formats::palette::{Palette, MINIMAP_PAD};
use crate::formats::tnt::{
    self, Attr, FeatureEntry, Minimap, Tnt, FEATURE_NONE, FIRST_SENTINEL, MAX_TILES, NAME_LEN,
    TILE_BYTES, TILE_SIDE, VERSION_LEGACY, VERSION_TA,
};
use crate::view::image::{decode_png, to_indices};
use crate::view::{FileSet, ViewError};

use super::inputs::{
    parse_features, parse_tilemap, read_heightmap, read_tiles, resolve_feature, stream_png_rows,
};
use super::meta::{FeatureMeta, Metadata};
use super::retile::{canon_crc, canon_table, prune, retile, MinimapAccumulator};
use super::{FEATURES_CSV, FORMAT, HEIGHT_PNG, MAP_PNG, METADATA, MINI_PNG, TILEMAP_CSV};
use crate::view::csv::{csv_err, unhex};

/// What [`pack`] did besides writing the map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackReport {
    /// map.png differed from the mosaic it was unpacked as and was re-tiled.
    pub map_retiled: bool,
    /// Tiles added by re-tiling.
    pub new_tiles: usize,
    /// Tiles dropped by `prune`.
    pub pruned_tiles: usize,
    /// The minimap was rebuilt from the new map image.
    pub minimap_rebuilt: bool,
}

/// The palette metadata.json names (`palette_rgb`), if any.
fn own_palette(meta: &Metadata) -> Result<Option<Palette>, ViewError> {
    match &meta.palette_rgb {
        Some(h) => {
            let rgb = unhex(h)
                .filter(|b| b.len() == 768)
                .ok_or_else(|| ViewError::invalid(METADATA, "palette_rgb: not 768 bytes of hex"))?;
            let mut colors = [[0u8; 3]; 256];
            for (c, v) in colors.iter_mut().zip(rgb.chunks_exact(3)) {
                c.copy_from_slice(v);
            }
            Ok(Some(Palette { colors }))
        }
        None => Ok(None),
    }
}

/// The checksum [`pack`] compares `map.png` (`minimap`: `minimap.png`) with to tell an edit:
/// the CRC-32 of its palette indices folded to the first index of equal colour, read with
/// the palette of `meta_json` (a map's metadata.json). `metadata.json` of a version holds
/// the checksums of that version's renderings, so a file whose checksum is one of an earlier
/// version's is a copy of that rendering, not an edit.
pub fn image_checksum(png: &[u8], meta_json: &[u8], minimap: bool) -> Result<u32, ViewError> {
    let meta: Metadata = serde_json::from_slice(meta_json)
        .map_err(|e| ViewError::invalid(METADATA, e.to_string()))?;
    let own = own_palette(&meta)?;
    let ta = Palette::ta();
    let palette = own.as_ref().unwrap_or(&ta);
    let canon = canon_table(palette);
    if minimap {
        let d = decode_png(png).map_err(|e| ViewError::invalid(MINI_PNG, e))?;
        let img = to_indices(&d, palette, &[], MINIMAP_PAD);
        return Ok(canon_crc(&img.indices, &canon));
    }
    let mut h = crc32fast::Hasher::new();
    let mut canon_row = Vec::new();
    stream_png_rows(png, MAP_PNG, palette, |_, row| {
        canon_row.clear();
        canon_row.extend(row.iter().map(|&i| canon[usize::from(i)]));
        h.update(&canon_row);
        Ok(())
    })?;
    Ok(h.finalize())
}

/// Options of [`pack`]. The palette is not an option: the PNGs are read with the palette
/// metadata.json names (`palette_rgb`, else the built-in TA palette), the one they were
/// written with.
#[derive(Debug, Clone, Default)]
pub struct PackOptions {
    /// Drop tiles no cell uses (renumbering the rest).
    pub prune: bool,
    /// Budgets.
    pub limits: crate::formats::Limits,
}

pub(super) fn need(files: &dyn FileSet, path: &str, why: &str) -> Result<Vec<u8>, ViewError> {
    files.read(path)?.ok_or_else(|| ViewError::Missing {
        file: path.to_string(),
        why: why.to_string(),
    })
}

/// Rebuilds the map from an unpacked directory (see the module docs). Nothing is written:
/// the caller stores the returned bytes.
pub fn pack(files: &dyn FileSet, opts: &PackOptions) -> Result<Vec<u8>, ViewError> {
    pack_with_report(files, opts).map(|(b, _)| b)
}

/// [`pack`], also saying what was re-tiled, pruned and rebuilt.
pub fn pack_with_report(
    files: &dyn FileSet,
    opts: &PackOptions,
) -> Result<(Vec<u8>, PackReport), ViewError> {
    let limits = &opts.limits;
    let mut report = PackReport::default();

    let meta_bytes = need(files, METADATA, "the map's header constants")?;
    let meta: Metadata = serde_json::from_slice(&meta_bytes)
        .map_err(|e| ViewError::invalid(METADATA, e.to_string()))?;
    let own_palette = own_palette(&meta)?;
    let ta = Palette::ta();
    let palette = own_palette.as_ref().unwrap_or(&ta);
    let canon = canon_table(palette);
    if meta.format != FORMAT {
        return Err(ViewError::invalid(
            METADATA,
            format!("format is {:?}, expected {FORMAT:?}", meta.format),
        ));
    }
    let (width, height) = (meta.width, meta.height);
    let cells = u64::from(width) * u64::from(height);
    if cells > limits.max_map_cells
        || width % 2 != 0
        || height % 2 != 0
        || cells == 0
        || width.max(height) > tnt::MAX_SIDE
    {
        return Err(ViewError::invalid(
            METADATA,
            format!(
                "width {width} × height {height}: need even, non-zero dimensions within {} cells",
                limits.max_map_cells
            ),
        ));
    }
    let (tx, ty) = ((width / 2) as usize, (height / 2) as usize);
    let cells = cells as usize;

    // Tiles.
    let mut tiles = read_tiles(files, palette, limits.max_tiles.min(MAX_TILES))?;

    // Tile grid.
    let tilemap_bytes = need(files, TILEMAP_CSV, "the tile grid")?;
    let mut tilemap = parse_tilemap(&tilemap_bytes, tx, ty)?;

    // Heights.
    let heights = match files.read(HEIGHT_PNG)? {
        Some(b) => read_heightmap(&b, width, height)?,
        None => {
            return Err(ViewError::Missing {
                file: HEIGHT_PNG.to_string(),
                why: "the elevation grid".to_string(),
            })
        }
    };

    // Minimap.
    let (mut minimap, minimap_edited) = match files.read(MINI_PNG)? {
        Some(b) => {
            let d = decode_png(&b).map_err(|e| ViewError::invalid(MINI_PNG, e))?;
            let img = to_indices(&d, palette, &[], MINIMAP_PAD);
            let crc = canon_crc(&img.indices, &canon);
            (
                Minimap {
                    width: img.width,
                    height: img.height,
                    pixels: img.indices,
                },
                crc != meta.checksums.minimap,
            )
        }
        None => {
            let n = u64::from(meta.minimap_width) * u64::from(meta.minimap_height);
            if n > 0 {
                return Err(ViewError::Missing {
                    file: MINI_PNG.to_string(),
                    why: format!("{}×{} minimap", meta.minimap_width, meta.minimap_height),
                });
            }
            let m = Minimap {
                width: meta.minimap_width,
                height: meta.minimap_height,
                pixels: vec![],
            };
            (m, false)
        }
    };

    // map.png: unedited, or re-tiled.
    if let Some(png_bytes) = files.read(MAP_PNG)? {
        let (pw, ph) = (tx * TILE_SIDE, ty * TILE_SIDE);
        let mut h = crc32fast::Hasher::new();
        let mut canon_row = Vec::new();
        let dims = stream_png_rows(&png_bytes, MAP_PNG, palette, |_, row| {
            canon_row.clear();
            canon_row.extend(row.iter().map(|&i| canon[usize::from(i)]));
            h.update(&canon_row);
            Ok(())
        })?;
        if dims != (pw as u32, ph as u32) {
            return Err(ViewError::invalid(
                MAP_PNG,
                format!(
                    "is {}×{} pixels; the map is {pw}×{ph} ({tx}×{ty} tiles of 32×32)",
                    dims.0, dims.1
                ),
            ));
        }
        if h.finalize() != meta.checksums.map {
            report.map_retiled = true;
            let before = tiles.len() / TILE_BYTES;
            let mut acc = MinimapAccumulator::new(width, height, &minimap);
            retile(
                &png_bytes,
                palette,
                &canon,
                tx,
                &mut tiles,
                &mut tilemap,
                &mut acc,
                limits.max_tiles.min(MAX_TILES),
            )?;
            report.new_tiles = tiles.len() / TILE_BYTES - before;
            if !minimap_edited {
                minimap.pixels = acc.finish(palette);
                report.minimap_rebuilt = true;
            }
        }
    }

    // Tile indices must name stored tiles. A missing one is reported as a missing file (a
    // copy of the tree may not have brought it yet: the mount then waits for it).
    let ntiles = tiles.len() / TILE_BYTES;
    if let Some(i) = tilemap.iter().position(|&c| usize::from(c) >= ntiles) {
        return Err(ViewError::Missing {
            file: format!("tiles/{}.png", tilemap[i]),
            why: format!(
                "{TILEMAP_CSV} row {}, column {} uses tile {}; tiles/ holds {ntiles} tiles",
                i / tx + 1,
                i % tx + 1,
                tilemap[i]
            ),
        });
    }
    if opts.prune {
        report.pruned_tiles = prune(&mut tiles, &mut tilemap);
    }

    // Features.
    let feats_bytes = need(files, FEATURES_CSV, "the feature placements")?;
    let placements = parse_features(&feats_bytes, width, height)?;
    let mut table: Vec<FeatureEntry> = Vec::new();
    if let Some(fm) = &meta.features {
        for (i, f) in fm.iter().enumerate() {
            table.push(feature_entry(i, f)?);
        }
    }
    let mut words = vec![FEATURE_NONE; cells];
    for r in &meta.feature_words {
        fill_runs(&mut words, r, width, "feature_words", |v| {
            u16::try_from(v).ok()
        })?;
    }
    let fixed_words = words.clone();
    let mut placed = vec![false; cells];
    for p in &placements {
        let idx = resolve_feature(&mut table, p)?;
        let cell = p.y as usize * width as usize + p.x as usize;
        if placed[cell] {
            return Err(csv_err(
                FEATURES_CSV,
                p.row,
                "attr_x",
                format!("a second feature at cell ({}, {})", p.x, p.y),
            ));
        }
        placed[cell] = true;
        words[cell] = idx;
    }
    if table.len() > limits.max_features.min(usize::from(FIRST_SENTINEL) - 1) {
        return Err(ViewError::invalid(
            FEATURES_CSV,
            format!(
                "{} distinct features; a map holds fewer than 65,531",
                table.len()
            ),
        ));
    }
    // A kept non-placement word must not turn into a placement of a grown table.
    for (i, w) in words.iter_mut().enumerate() {
        if !placed[i] && usize::from(fixed_words[i]) < table.len() {
            *w = FEATURE_NONE;
        }
    }
    let mut pads = vec![0u8; cells];
    for r in &meta.attr_pads {
        fill_runs(&mut pads, r, width, "attr_pads", |v| u8::try_from(v).ok())?;
    }
    let attrs = heights
        .iter()
        .zip(&words)
        .zip(&pads)
        .map(|((&height, &feature), &pad)| Attr {
            height,
            feature,
            pad,
        })
        .collect();

    let layout = match (&meta.layout, meta.source_version) {
        (Some(l), VERSION_TA) => Some(l.to_layout(cells as u64, limits)?),
        _ => None,
    };
    if meta.source_version != VERSION_TA && meta.source_version != VERSION_LEGACY {
        return Err(ViewError::invalid(
            METADATA,
            format!(
                "source_version {:#x} is not a TA map version",
                meta.source_version
            ),
        ));
    }
    let t = Tnt {
        source_version: meta.source_version,
        width,
        height,
        sea_level: meta.sea_level,
        minimap_flags: meta.minimap_flags,
        pads: meta.pads,
        tilemap,
        attrs,
        tiles,
        features: table,
        minimap,
        layout,
    };
    Ok((tnt::write(&t)?, report))
}

pub(super) fn feature_entry(i: usize, f: &FeatureMeta) -> Result<FeatureEntry, ViewError> {
    let bad = |m: String| ViewError::invalid(METADATA, format!("features[{i}]: {m}"));
    match &f.raw {
        Some(raw) => {
            let b = unhex(raw).ok_or_else(|| bad("raw is not hex".into()))?;
            let name: [u8; NAME_LEN] = b
                .try_into()
                .map_err(|_| bad("raw must be 128 bytes (256 hex digits)".into()))?;
            let e = FeatureEntry {
                index: f.index,
                name,
            };
            // The name is what features.csv refers to: an edited name replaces the buffer.
            if e.name_str() == f.name {
                Ok(e)
            } else {
                FeatureEntry::new(f.index, f.name.as_bytes()).ok_or_else(|| {
                    bad(format!("name {:?} is not 1..127 bytes without NUL", f.name))
                })
            }
        }
        None => FeatureEntry::new(f.index, f.name.as_bytes()).ok_or_else(|| {
            bad(format!(
                "name {:?} is 128 bytes or more, or has a NUL",
                f.name
            ))
        }),
    }
}

pub(super) fn fill_runs<T: Copy>(
    out: &mut [T],
    r: &[u32; 4],
    width: u32,
    what: &str,
    conv: impl Fn(u32) -> Option<T>,
) -> Result<(), ViewError> {
    let [x, y, n, v] = *r;
    let bad = |m: &str| ViewError::invalid(METADATA, format!("{what} run {r:?}: {m}"));
    let v = conv(v).ok_or_else(|| bad("value out of range"))?;
    if x >= width {
        return Err(bad("x past the map width"));
    }
    let start = u64::from(y) * u64::from(width) + u64::from(x);
    let end = start + u64::from(n);
    if end > out.len() as u64 {
        return Err(bad("passes the end of the map"));
    }
    out[start as usize..end as usize].fill(v);
    Ok(())
}
