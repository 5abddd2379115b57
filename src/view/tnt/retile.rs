//! Re-tiling an edited map.png: palette-colour identity (the canonical index table and the
//! mosaic checksum that tells map.png was edited), reusing equal tiles, the minimap rebuilt
//! from the new image, and pruning unused tiles.

use crate::formats::palette::{NearestCache, Palette, MINIMAP_PAD};
use crate::formats::tnt::{self, Minimap, Tnt, TILE_BYTES, TILE_SIDE};
use crate::view::ViewError;
use std::collections::HashMap;

use super::inputs::stream_png_rows;
use super::MAP_PNG;

/// For every palette index, the first index holding the same colour.
pub fn canon_table(p: &Palette) -> [u8; 256] {
    let mut t = [0u8; 256];
    for (i, c) in p.colors.iter().enumerate() {
        t[i] = p.colors.iter().position(|x| x == c).unwrap_or(i) as u8;
    }
    t
}

pub(super) fn canon_crc(px: &[u8], canon: &[u8; 256]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    let mut buf = Vec::with_capacity(px.len().min(1 << 16));
    for chunk in px.chunks(1 << 16) {
        buf.clear();
        buf.extend(chunk.iter().map(|&i| canon[usize::from(i)]));
        h.update(&buf);
    }
    h.finalize()
}

/// Tile rows per band of the mosaic checksum: one (a 256-tile-wide map: 256 KiB of pixels),
/// so that an edited tile costs the rows that show it, and the bands combine in microseconds.
const BAND_ROWS: usize = 1;

/// CRC-32 of the mosaic's pixels, row-major, folded through `canon`.
#[cfg(test)]
pub(super) fn map_checksum(t: &Tnt, canon: &[u8; 256]) -> u32 {
    combined(&map_bands(t, canon, None))
}

/// The CRC-32 the bands of [`map_bands`] make together.
pub(super) fn combined(bands: &[crc32fast::Hasher]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for b in bands {
        h.combine(b);
    }
    h.finalize()
}

/// Per tile row of `t`: whether its cells and the tiles they show are the same in `old`;
/// `None` when the grids differ in size.
pub(super) fn unchanged_rows(t: &Tnt, old: &Tnt) -> Option<Vec<bool>> {
    let (tx, ty) = (t.tiles_x(), t.tiles_y());
    if (old.tiles_x(), old.tiles_y()) != (tx, ty) {
        return None;
    }
    let n = t.tile_count().max(old.tile_count());
    let changed: Vec<bool> = (0..n).map(|i| t.tile(i) != old.tile(i)).collect();
    Some(
        (0..ty)
            .map(|r| {
                let cells = t.tilemap.get(r * tx..(r + 1) * tx);
                cells.is_some()
                    && old.tilemap.get(r * tx..(r + 1) * tx) == cells
                    && cells
                        .unwrap_or_default()
                        .iter()
                        .all(|&c| !changed.get(usize::from(c)).copied().unwrap_or(false))
            })
            .collect(),
    )
}

/// The mosaic's pixels (row-major, folded through `canon`) hashed in bands of
/// [`BAND_ROWS`] tile rows, on every core: the tiles are folded once (not every pixel of the
/// mosaic, which is the same 32×32 tiles over and over). With `prev` (the version before,
/// the same palette, and its bands), a band whose cells are the same and whose tiles are
/// unchanged is taken from it, so a commit of one tile hashes one band again.
pub(super) fn map_bands(
    t: &Tnt,
    canon: &[u8; 256],
    prev: Option<(&Tnt, &[crc32fast::Hasher])>,
) -> Vec<crc32fast::Hasher> {
    use rayon::prelude::*;
    let (tx, ty) = (t.tiles_x(), t.tiles_y());
    let count = ty.div_ceil(BAND_ROWS);
    let rows = |b: usize| (b * BAND_ROWS, ((b + 1) * BAND_ROWS).min(ty));
    let same = prev.and_then(|(old, bands)| {
        let same = unchanged_rows(t, old)?;
        (bands.len() == count).then_some((same, bands))
    });
    let kept: Vec<Option<&crc32fast::Hasher>> = match same {
        Some((same, bands)) => (0..count)
            .map(|b| {
                let (r0, r1) = rows(b);
                if same.get(r0..r1)?.iter().all(|&s| s) {
                    bands.get(b)
                } else {
                    None
                }
            })
            .collect(),
        None => vec![None; count],
    };
    let tiles: Vec<u8> = t.tiles.iter().map(|&i| canon[usize::from(i)]).collect();
    // a cell whose tile index is past the tile set is drawn with index 0 (`render_row`)
    let zeros = [canon[0]; TILE_BYTES];
    let tile = |i: u16| {
        let start = usize::from(i) * TILE_BYTES;
        tiles.get(start..start + TILE_BYTES).unwrap_or(&zeros)
    };
    let width = t.pixel_width();
    (0..count)
        .into_par_iter()
        .map(|b| {
            if let Some(Some(h)) = kept.get(b) {
                return (*h).clone();
            }
            let (r0, r1) = rows(b);
            let mut h = crc32fast::Hasher::new();
            let mut row = vec![0u8; width];
            for r in r0..r1 {
                let line = t.tilemap.get(r * tx..(r + 1) * tx).unwrap_or(&[]);
                if line.len() < tx {
                    row.fill(canon[0]);
                }
                for py in 0..TILE_SIDE {
                    for (cell, out) in line.iter().zip(row.chunks_exact_mut(TILE_SIDE)) {
                        out.copy_from_slice(&tile(*cell)[py * TILE_SIDE..(py + 1) * TILE_SIDE]);
                    }
                    h.update(&row);
                }
            }
            h
        })
        .collect()
}

/// Rebuilds the minimap pixels of `t` (same size as its current minimap) from its tiles by
/// the game's visible-region rule: each region pixel is the palette entry nearest (never
/// 0x64) to the average colour of the map pixels it covers; the rest is 0x64.
pub fn rebuild_minimap(t: &Tnt, palette: &Palette) -> Vec<u8> {
    let mut acc = MinimapAccumulator::new(t.width, t.height, &t.minimap);
    let mut row = vec![0u8; t.pixel_width()];
    for y in 0..t.pixel_height() {
        t.render_row(y, &mut row);
        acc.add_row(y, &row, palette);
    }
    acc.finish(palette)
}

/// Sums map colours per minimap pixel of the visible region.
pub(super) struct MinimapAccumulator {
    mw: u32,
    mh: u32,
    rw: u32,
    rh: u32,
    vw: u64,
    vh: u64,
    sums: Vec<[u64; 4]>,
}

impl MinimapAccumulator {
    pub(super) fn new(width: u32, height: u32, m: &Minimap) -> Self {
        let (rw, rh) = tnt::minimap_region(width, height, m.width, m.height);
        let (vw, vh) = tnt::visible_size(width, height);
        MinimapAccumulator {
            mw: m.width,
            mh: m.height,
            rw,
            rh,
            vw,
            vh,
            sums: vec![[0; 4]; (rw as usize) * (rh as usize)],
        }
    }

    pub(super) fn add_row(&mut self, y: usize, row: &[u8], palette: &Palette) {
        if self.rw == 0 || self.rh == 0 || y as u64 >= self.vh {
            return;
        }
        let my = (y as u64 * u64::from(self.rh) / self.vh) as usize;
        let base = my * self.rw as usize;
        for (x, &i) in row.iter().enumerate().take(self.vw as usize) {
            let mx = (x as u64 * u64::from(self.rw) / self.vw) as usize;
            let c = palette.colors[usize::from(i)];
            let s = &mut self.sums[base + mx];
            s[0] += u64::from(c[0]);
            s[1] += u64::from(c[1]);
            s[2] += u64::from(c[2]);
            s[3] += 1;
        }
    }

    /// The minimap: region pixels = nearest palette colour (never 0x64) to the average; the
    /// rest 0x64.
    pub(super) fn finish(self, palette: &Palette) -> Vec<u8> {
        let mut px = vec![MINIMAP_PAD; (self.mw as usize) * (self.mh as usize)];
        let mut cache = NearestCache::new(palette, &[MINIMAP_PAD]);
        for y in 0..self.rh as usize {
            for x in 0..self.rw as usize {
                let s = self.sums[y * self.rw as usize + x];
                if s[3] == 0 {
                    continue;
                }
                let avg = |v: u64| ((v + s[3] / 2) / s[3]) as u8;
                px[y * self.mw as usize + x] = cache.get([avg(s[0]), avg(s[1]), avg(s[2])]);
            }
        }
        px
    }
}

pub(super) fn canon_hash(cell: &[u8], canon: &[u8; 256]) -> u64 {
    // FNV-1a over the folded indices.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in cell {
        h ^= u64::from(canon[usize::from(b)]);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

pub(super) fn same_colours(a: &[u8], b: &[u8], canon: &[u8; 256]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(&x, &y)| canon[usize::from(x)] == canon[usize::from(y)])
}

/// The tiles [`retile`] rebuilds: the stored tiles (32×32 bytes each), the tile index of
/// every cell, and how many tiles may be stored.
pub(super) struct TileSet<'a> {
    pub(super) tiles: &'a mut Vec<u8>,
    pub(super) tilemap: &'a mut [u16],
    pub(super) max_tiles: usize,
}

/// Cuts map.png into 32×32 cells: a cell showing the colours of the tile already at that
/// position keeps it, else the first stored tile with those colours, else it becomes a new
/// tile. Feeds every row to the minimap accumulator.
pub(super) fn retile(
    png_bytes: &[u8],
    palette: &Palette,
    canon: &[u8; 256],
    tx: usize,
    set: TileSet,
    acc: &mut MinimapAccumulator,
) -> Result<(), ViewError> {
    let TileSet {
        tiles,
        tilemap,
        max_tiles,
    } = set;
    let mut index: HashMap<u64, Vec<u32>> = HashMap::new();
    for (i, t) in tiles.chunks_exact(TILE_BYTES).enumerate() {
        index
            .entry(canon_hash(t, canon))
            .or_default()
            .push(i as u32);
    }
    let pw = tx * TILE_SIDE;
    let mut band = vec![0u8; pw * TILE_SIDE];
    let mut cell = vec![0u8; TILE_BYTES];
    stream_png_rows(png_bytes, MAP_PNG, palette, |y, row| {
        acc.add_row(y, row, palette);
        let py = y % TILE_SIDE;
        band[py * pw..(py + 1) * pw].copy_from_slice(&row[..pw]);
        if py + 1 < TILE_SIDE {
            return Ok(());
        }
        let ty = y / TILE_SIDE;
        for cx in 0..tx {
            for r in 0..TILE_SIDE {
                let s = r * pw + cx * TILE_SIDE;
                cell[r * TILE_SIDE..(r + 1) * TILE_SIDE].copy_from_slice(&band[s..s + TILE_SIDE]);
            }
            let slot = &mut tilemap[ty * tx + cx];
            let cur = usize::from(*slot);
            let cur_tile = tiles.get(cur * TILE_BYTES..(cur + 1) * TILE_BYTES);
            if cur_tile.is_some_and(|t| same_colours(t, &cell, canon)) {
                continue;
            }
            let h = canon_hash(&cell, canon);
            let found = index.get(&h).and_then(|c| {
                c.iter().copied().find(|&i| {
                    let i = i as usize;
                    same_colours(&tiles[i * TILE_BYTES..(i + 1) * TILE_BYTES], &cell, canon)
                })
            });
            let i = match found {
                Some(i) => i as usize,
                None => {
                    let n = tiles.len() / TILE_BYTES;
                    if n >= max_tiles {
                        return Err(ViewError::invalid(
                            MAP_PNG,
                            format!(
                                "cell at pixel ({}, {}) needs tile {}, past the limit of {max_tiles} tiles",
                                cx * TILE_SIDE,
                                ty * TILE_SIDE,
                                n + 1
                            ),
                        ));
                    }
                    tiles.extend_from_slice(&cell);
                    index.entry(h).or_default().push(n as u32);
                    n
                }
            };
            *slot = i as u16;
        }
        Ok(())
    })?;
    Ok(())
}

/// Drops tiles no cell uses, keeping the order of the rest; returns how many were dropped.
pub(super) fn prune(tiles: &mut Vec<u8>, tilemap: &mut [u16]) -> usize {
    let n = tiles.len() / TILE_BYTES;
    let mut used = vec![false; n];
    for &c in tilemap.iter() {
        if let Some(u) = used.get_mut(usize::from(c)) {
            *u = true;
        }
    }
    let mut remap = vec![0u16; n];
    let mut kept = Vec::with_capacity(tiles.len());
    for (i, t) in tiles.chunks_exact(TILE_BYTES).enumerate() {
        if used[i] {
            remap[i] = (kept.len() / TILE_BYTES) as u16;
            kept.extend_from_slice(t);
        }
    }
    for c in tilemap.iter_mut() {
        *c = remap[usize::from(*c)];
    }
    let dropped = n - kept.len() / TILE_BYTES;
    *tiles = kept;
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checksum as defined: every mosaic row rendered, folded, hashed in order.
    fn reference(t: &Tnt, canon: &[u8; 256]) -> u32 {
        let mut h = crc32fast::Hasher::new();
        let mut row = vec![0u8; t.pixel_width()];
        for y in 0..t.pixel_height() {
            t.render_row(y, &mut row);
            row.iter_mut().for_each(|i| *i = canon[usize::from(*i)]);
            h.update(&row);
        }
        h.finalize()
    }

    #[test]
    fn map_checksum_is_the_crc_of_the_folded_mosaic() {
        let mut t = crate::sample::demo_map();
        // a palette repeating colours, used by the tiles, so folding matters
        let mut p = Palette::ta();
        p.colors[9] = p.colors[0];
        p.colors[200] = p.colors[3];
        let canon = canon_table(&p);
        assert_eq!((canon[9], canon[200]), (0, 3));
        t.tiles[7] = 9;
        t.tiles[TILE_BYTES + 40] = 200;
        assert_ne!(
            map_checksum(&t, &canon),
            map_checksum(&t, &canon_table(&Palette::ta()))
        );
        assert_eq!(map_checksum(&t, &canon), reference(&t, &canon));
        // a cell past the tile set (drawn with index 0), more rows than a band
        t.tilemap[5] = 999;
        assert_eq!(map_checksum(&t, &canon), reference(&t, &canon));
        let mut tall = t.clone();
        tall.height = 80;
        tall.tilemap = (0..tall.tiles_x() * tall.tiles_y())
            .map(|i| (i % 5) as u16)
            .collect();
        assert_eq!(map_checksum(&tall, &canon), reference(&tall, &canon));
        assert_ne!(map_checksum(&tall, &canon), map_checksum(&t, &canon));
    }

    #[test]
    fn bands_are_taken_over_only_where_cells_and_tiles_are_unchanged() {
        let canon = canon_table(&Palette::ta());
        let mut old = crate::sample::demo_map();
        assert!(old.tile_count() >= 3);
        // three bands, the cells of band b all showing tile b
        old.height = (2 * 3 * BAND_ROWS) as u32;
        let (tx, ty) = (old.tiles_x(), old.tiles_y());
        old.tilemap = (0..tx * ty).map(|i| (i / tx / BAND_ROWS) as u16).collect();
        let good = map_bands(&old, &canon, None);
        assert_eq!(good.len(), 3);
        assert_eq!(combined(&good), reference(&old, &canon));
        // bands the version before never had: what is taken over shows as these
        let poison: Vec<crc32fast::Hasher> = (0..3u8)
            .map(|b| {
                let mut h = crc32fast::Hasher::new();
                h.update(&[b, 0xEE]);
                h
            })
            .collect();
        let crcs =
            |v: &[crc32fast::Hasher]| v.iter().map(|h| h.clone().finalize()).collect::<Vec<_>>();
        let (p, g) = (crcs(&poison), crcs(&good));
        let check = |new: &Tnt, taken: [bool; 3]| {
            // right with the real bands before, whatever is taken over
            assert_eq!(
                combined(&map_bands(new, &canon, Some((&old, &good)))),
                reference(new, &canon)
            );
            let got = crcs(&map_bands(new, &canon, Some((&old, &poison))));
            let fresh = crcs(&map_bands(new, &canon, None));
            for b in 0..3 {
                let want = if taken[b] { p[b] } else { fresh[b] };
                assert_eq!(got[b], want, "band {b}");
            }
        };
        // nothing changed: every band taken over
        check(&old, [true, true, true]);
        assert_eq!(crcs(&map_bands(&old, &canon, None)), g);
        // a pixel of tile 1 (shown in band 1 only)
        let mut t = old.clone();
        t.tiles[TILE_BYTES + 5] ^= 1;
        check(&t, [true, false, true]);
        // a cell of band 2 showing tile 0
        let mut t = old.clone();
        t.tilemap[2 * BAND_ROWS * tx + 3] = 0;
        check(&t, [true, true, false]);
        // a new tile appended and shown nowhere: nothing changes
        let mut t = old.clone();
        t.tiles.extend_from_slice(&[7; TILE_BYTES]);
        check(&t, [true, true, true]);
        // another size: nothing is taken over
        let mut t = old.clone();
        t.height -= 2;
        t.tilemap.truncate(tx * (ty - 1));
        let got = map_bands(&t, &canon, Some((&old, &poison)));
        assert_eq!(combined(&got), reference(&t, &canon));
    }
}
