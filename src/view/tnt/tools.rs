//! kbot's map artefacts over a decoded map: the build map and void map (one pixel per 16×16
//! attribute cell), the ASCII sketch, and the duplicate-tile merge of `tafs tnt optimize`.

use crate::formats::tnt::{Tnt, FEATURE_VOID, TILE_BYTES};
use std::collections::HashMap;

/// Height difference to a 4-neighbour above which a cell is a cliff edge (game units).
pub const CLIFF: i32 = 32;

/// Build-map colours, in the order they are decided.
pub const VOID_RGB: [u8; 3] = [0, 0, 0];
/// A feature is placed in the cell.
pub const FEATURE_RGB: [u8; 3] = [255, 0, 0];
/// Below sea level.
pub const WATER_RGB: [u8; 3] = [0, 0, 255];
/// A cliff edge.
pub const CLIFF_RGB: [u8; 3] = [255, 255, 0];
/// Buildable.
pub const BUILD_RGB: [u8; 3] = [0, 255, 0];

/// Whether cell `(x, y)` differs in height from a 4-neighbour by more than [`CLIFF`].
fn is_cliff(t: &Tnt, x: usize, y: usize) -> bool {
    let (w, h) = (t.width as usize, t.height as usize);
    let at = |x: usize, y: usize| t.attrs.get(y * w + x).map_or(0, |a| i32::from(a.height));
    let here = at(x, y);
    let mut near = Vec::with_capacity(4);
    if x > 0 {
        near.push(at(x - 1, y));
    }
    if x + 1 < w {
        near.push(at(x + 1, y));
    }
    if y > 0 {
        near.push(at(x, y - 1));
    }
    if y + 1 < h {
        near.push(at(x, y + 1));
    }
    near.iter().any(|n| (here - n).abs() > CLIFF)
}

/// The build map: RGB, one pixel per attribute cell, row-major; each cell, in this order:
/// void (feature word 0xFFFC) black, a placed feature red, below `sea_level` blue (0: no
/// water), a cliff edge yellow, else green.
pub fn buildmap(t: &Tnt, sea_level: u32) -> Vec<u8> {
    let w = t.width as usize;
    let mut out = Vec::with_capacity(t.attrs.len() * 3);
    for (i, a) in t.attrs.iter().enumerate() {
        let (x, y) = (i % w.max(1), i / w.max(1));
        let c = if a.feature == FEATURE_VOID {
            VOID_RGB
        } else if t.places_feature(a.feature) {
            FEATURE_RGB
        } else if u32::from(a.height) < sea_level {
            WATER_RGB
        } else if is_cliff(t, x, y) {
            CLIFF_RGB
        } else {
            BUILD_RGB
        };
        out.extend_from_slice(&c);
    }
    out
}

/// The void map: RGBA, one pixel per cell: opaque red where the feature word is 0xFFFC,
/// transparent elsewhere.
pub fn voidmap(t: &Tnt) -> Vec<u8> {
    t.attrs
        .iter()
        .flat_map(|a| {
            if a.feature == FEATURE_VOID {
                [255, 0, 0, 255]
            } else {
                [0, 0, 0, 0]
            }
        })
        .collect()
}

/// The ramp of the ASCII sketch, low to high.
pub const RAMP: &[u8] = b".,:;=+*#%@";

/// The ASCII sketch, `cols` characters wide: each character stands for a block of `b × 2b`
/// cells (`b = ceil(width / cols)`; characters are about twice as tall as wide), the last
/// blocks cut at the map's edge. A block at least half void is `X`; else one whose mean
/// height is below `sea_level` is `~`; else the ramp [`RAMP`] at `mean × 10 / 256`.
pub fn ascii(t: &Tnt, cols: usize, sea_level: u32) -> String {
    let (w, h) = (t.width as usize, t.height as usize);
    let b = w.div_ceil(cols.max(1)).max(1);
    let (bw, bh) = (b, 2 * b);
    let mut s = String::new();
    for by in (0..h).step_by(bh) {
        for bx in (0..w).step_by(bw) {
            let (mut n, mut void, mut sum) = (0usize, 0usize, 0u64);
            for y in by..(by + bh).min(h) {
                for x in bx..(bx + bw).min(w) {
                    if let Some(a) = t.attrs.get(y * w + x) {
                        n += 1;
                        sum += u64::from(a.height);
                        void += usize::from(a.feature == FEATURE_VOID);
                    }
                }
            }
            let n = n.max(1);
            let mean = sum / n as u64;
            let c = if 2 * void >= n {
                'X'
            } else if mean < u64::from(sea_level) {
                '~'
            } else {
                char::from(RAMP[(mean as usize * RAMP.len() / 256).min(RAMP.len() - 1)])
            };
            s.push(c);
        }
        s.push('\n');
    }
    s
}

/// What [`optimize`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Optimized {
    /// Tiles before.
    pub before: usize,
    /// Tiles after.
    pub after: usize,
}

/// Merges byte-identical tiles: each tile keeps the first of its copies, the survivors keep
/// their order, every cell points at the survivor of its tile. The map draws the same pixels;
/// heights, features, minimap and header are untouched. A map with a cell indexing past
/// its tile set is refused (what that cell draws would change).
pub fn optimize(t: &mut Tnt) -> Result<Optimized, String> {
    let n = t.tile_count();
    if let Some(bad) = t.tilemap.iter().find(|&&c| usize::from(c) >= n) {
        return Err(format!(
            "a cell indexes tile {bad}, past the {n} stored: fix the map first (tafs tnt lint)"
        ));
    }
    let mut first: HashMap<&[u8], u16> = HashMap::new();
    let mut remap = Vec::with_capacity(n);
    let mut kept = Vec::new();
    for (i, tile) in t.tiles.chunks_exact(TILE_BYTES).enumerate() {
        match first.get(tile) {
            Some(&k) => remap.push(k),
            None => {
                let k = u16::try_from(kept.len()).map_err(|_| "too many tiles".to_string())?;
                first.insert(tile, k);
                remap.push(k);
                kept.push(i);
            }
        }
    }
    let after = kept.len();
    if after == n {
        return Ok(Optimized { before: n, after });
    }
    let mut tiles = Vec::with_capacity(after * TILE_BYTES);
    for &i in &kept {
        tiles.extend_from_slice(&t.tiles[i * TILE_BYTES..(i + 1) * TILE_BYTES]);
    }
    for c in t.tilemap.iter_mut() {
        *c = remap[usize::from(*c)];
    }
    t.tiles = tiles;
    Ok(Optimized { before: n, after })
}
