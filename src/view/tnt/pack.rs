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
use super::retile::{canon_crc, canon_table, prune, retile, MinimapAccumulator, TileSet};
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

/// The map a build starts from: the one the file set's generated files were rendered from
/// ([`FileSet::generated`]), and the palette they were rendered in. [`pack_from`] takes such
/// a file's data from the map instead of decoding it (a commit costs what was edited, not
/// every tile of the map); the bytes built are the same.
#[derive(Clone, Copy)]
pub struct PackBase<'a> {
    /// The decoded map.
    pub tnt: &'a Tnt,
    /// The palette of its renderings.
    pub palette: &'a Palette,
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
    pack_from(files, None, opts)
}

/// [`pack_with_report`], taking the files `files` says are `base`'s own renderings from
/// `base` (see [`PackBase`]).
pub fn pack_from(
    files: &dyn FileSet,
    base: Option<PackBase<'_>>,
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
    // the base's renderings read back with the palette they were rendered in give the base's
    // own data; a base of other dimensions is read as its files (to report the mismatch)
    let base = base
        .filter(|b| b.palette == palette && (b.tnt.width, b.tnt.height) == (width, height))
        .map(|b| b.tnt);
    let own = |path: &str| base.filter(|_| files.generated(path));

    // Tiles.
    let mut tiles = read_tiles(files, palette, limits.max_tiles.min(MAX_TILES), base)?;

    // Tile grid.
    let mut tilemap = match own(TILEMAP_CSV).filter(|t| t.tilemap.len() == tx * ty) {
        Some(t) => t.tilemap.clone(),
        None => parse_tilemap(&need(files, TILEMAP_CSV, "the tile grid")?, tx, ty)?,
    };

    // Heights.
    let heights = match own(HEIGHT_PNG).filter(|t| t.attrs.len() == cells) {
        Some(t) => t.attrs.iter().map(|a| a.height).collect(),
        None => match files.read(HEIGHT_PNG)? {
            Some(b) => read_heightmap(&b, width, height)?,
            None => {
                return Err(ViewError::Missing {
                    file: HEIGHT_PNG.to_string(),
                    why: "the elevation grid".to_string(),
                })
            }
        },
    };

    // Minimap.
    let own_minimap = own(MINI_PNG).map(|t| t.minimap.clone());
    let (mut minimap, minimap_edited) = match own_minimap {
        Some(m) => {
            let crc = canon_crc(&m.pixels, &canon);
            (m, crc != meta.checksums.minimap)
        }
        None => match files.read(MINI_PNG)? {
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
        },
    };

    // map.png: unedited, or re-tiled. The base's own rendering, with metadata.json its own
    // too (holding its checksum), is unedited without reading it.
    let own_map = own(MAP_PNG).is_some() && own(METADATA).is_some();
    if let Some(png_bytes) = (!own_map)
        .then(|| files.read(MAP_PNG))
        .transpose()?
        .flatten()
    {
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
            let set = TileSet {
                tiles: &mut tiles,
                tilemap: &mut tilemap,
                max_tiles: limits.max_tiles.min(MAX_TILES),
            };
            retile(&png_bytes, palette, &canon, tx, set, &mut acc)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::image::{write_gray_png, write_indexed_png};
    use crate::view::tnt::TntView;
    use crate::view::{EntryKind, View, ViewOptions};
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// The files of a view with some replaced (`None`: deleted); the others are the view's
    /// own renderings, which it counts.
    struct Edited<'a> {
        view: &'a TntView,
        edits: HashMap<String, Option<Vec<u8>>>,
        rendered: RefCell<Vec<String>>,
    }

    impl Edited<'_> {
        fn own(&self, path: &str) -> bool {
            !self.edits.contains_key(path)
                && self
                    .view
                    .entries()
                    .iter()
                    .any(|e| e.path == path && e.kind == EntryKind::File)
        }
    }

    impl FileSet for Edited<'_> {
        fn read(&self, path: &str) -> Result<Option<Vec<u8>>, ViewError> {
            if let Some(e) = self.edits.get(path) {
                return Ok(e.clone());
            }
            if !self.own(path) {
                return Ok(None);
            }
            self.rendered.borrow_mut().push(path.to_string());
            self.view.render_vec(path).map(Some)
        }
        fn list(&self, dir: &str) -> Result<Option<Vec<(String, bool)>>, ViewError> {
            let prefix = format!("{dir}/");
            let mut v: Vec<(String, bool)> = self
                .view
                .entries()
                .iter()
                .filter_map(|e| e.path.strip_prefix(&prefix).map(|n| (e, n)))
                .filter(|(e, n)| !n.contains('/') && self.edits.get(&e.path) != Some(&None))
                .map(|(e, n)| (n.to_string(), e.kind == EntryKind::Dir))
                .collect();
            for (p, b) in &self.edits {
                if let (Some(n), Some(_)) = (p.strip_prefix(&prefix), b) {
                    if !v.iter().any(|(x, _)| x == n) {
                        v.push((n.to_string(), false));
                    }
                }
            }
            v.sort();
            Ok(Some(v))
        }
        fn generated(&self, path: &str) -> bool {
            self.own(path)
        }
    }

    /// pack_from with the view's map as base gives what pack of the same files gives, and
    /// renders only what it does not take from the base.
    #[test]
    fn a_decoded_base_stands_for_its_own_renderings_only() {
        let map = crate::sample::demo_map();
        let opts = ViewOptions::default();
        let view = TntView::from_tnt(map.clone(), &opts, false);
        let po = PackOptions::default();
        let ta = Palette::ta();
        let tile_png = |fill: u8| {
            let mut px = map.tile(1).unwrap().to_vec();
            px[..40].fill(fill);
            let mut out = Vec::new();
            write_indexed_png(&mut out, 32, 32, &px, &ta, None).unwrap();
            out
        };
        let meta = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut m: serde_json::Value =
                serde_json::from_slice(&view.render_vec(METADATA).unwrap()).unwrap();
            f(&mut m);
            Some(serde_json::to_vec_pretty(&m).unwrap())
        };
        let mut heights: Vec<u8> = map.attrs.iter().map(|a| a.height).collect();
        heights[9] ^= 0x55;
        let mut hpng = Vec::new();
        write_gray_png(&mut hpng, map.width, map.height, &heights).unwrap();
        // a colour the tiles use, moved: read with this palette they are other indices
        let mut other = ta.clone();
        other.colors[usize::from(map.tiles[0])] = [1, 2, 3];
        type Edits = Vec<(&'static str, Option<Vec<u8>>)>;
        let cases: Vec<(&str, Edits)> = vec![
            ("nothing edited", vec![]),
            ("a tile", vec![("tiles/1.png", Some(tile_png(7)))]),
            ("a new tile", vec![("tiles/5.png", Some(tile_png(9)))]),
            ("the height map", vec![(HEIGHT_PNG, Some(hpng))]),
            (
                "the tile grid",
                vec![(TILEMAP_CSV, Some(b"0,1\n".to_vec()))],
            ),
            (
                "the minimap's checksum",
                vec![(METADATA, meta(&|m| m["checksums"]["minimap"] = 1.into()))],
            ),
            (
                "the palette",
                vec![(
                    METADATA,
                    meta(&|m| m["palette_rgb"] = crate::view::csv::hex(&other.rgb_bytes()).into()),
                )],
            ),
            (
                "the size",
                vec![(
                    METADATA,
                    meta(&|m| {
                        m["width"] = (map.width + 2).into();
                    }),
                )],
            ),
        ];
        for (what, edits) in cases {
            let set = Edited {
                view: &view,
                edits: edits.into_iter().map(|(p, b)| (p.to_string(), b)).collect(),
                rendered: RefCell::default(),
            };
            let slow = pack_from(&set, None, &po)
                .map(|r| r.0)
                .map_err(|e| e.to_string());
            set.rendered.borrow_mut().clear();
            let base = PackBase {
                tnt: view.tnt(),
                palette: &opts.palette,
            };
            let fast = pack_from(&set, Some(base), &po)
                .map(|r| r.0)
                .map_err(|e| e.to_string());
            assert!(
                fast == slow,
                "{what}: the two builds differ ({:?} / {:?})",
                fast.as_ref().err(),
                slow.as_ref().err()
            );
            let rendered = set.rendered.borrow().clone();
            if matches!(what, "nothing edited" | "a tile" | "a new tile") {
                assert!(fast.is_ok(), "{what}: {fast:?}");
                assert!(
                    rendered.iter().all(|p| !p.ends_with(".png")),
                    "{what}: rendered {rendered:?}"
                );
            }
        }
        // unedited, the bytes of the map
        let set = Edited {
            view: &view,
            edits: HashMap::new(),
            rendered: RefCell::default(),
        };
        let base = PackBase {
            tnt: view.tnt(),
            palette: &opts.palette,
        };
        assert!(pack_from(&set, Some(base), &po).unwrap().0 == tnt::write(&map).unwrap());
    }
}
