//! `tafs tnt lint`'s rules over a decoded map: tile indices past the tile set, feature names
//! no `features/**/*.tdf` defines, the minimap flag and size, duplicate and unused tiles.

use crate::formats::tnt::{Tnt, TILE_BYTES};
use crate::game::features::FeatureIndex;
use std::collections::HashMap;

/// One lint finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Rule name.
    pub rule: &'static str,
    /// What was found.
    pub msg: String,
}

/// Runs every rule on `t`; `features` resolves names (None: rule skipped).
pub fn lint_map(t: &Tnt, features: Option<&FeatureIndex>) -> Vec<Finding> {
    let mut out = Vec::new();
    let n = t.tile_count();
    let tx = t.tiles_x().max(1);
    let bad: Vec<usize> = (0..t.tilemap.len())
        .filter(|&i| usize::from(t.tilemap[i]) >= n)
        .collect();
    if let Some(&first) = bad.first() {
        out.push(Finding {
            rule: "bad-tile-index",
            msg: format!(
                "{} cells index tiles past the {n} stored (first at tile x={} y={}: {}); the game draws whatever follows the tile set",
                bad.len(),
                first % tx,
                first / tx,
                t.tilemap[first]
            ),
        });
    }
    if let Some(idx) = features {
        let placed: std::collections::BTreeSet<u16> = t.placements().map(|p| p.0).collect();
        for (i, f) in t.features.iter().enumerate() {
            if idx.get(&f.name_str()).is_none() {
                out.push(Finding {
                    rule: "unresolved-feature",
                    msg: format!(
                        "feature [{i}] {:?} ({}) has no [section] in features/**/*.tdf",
                        f.name_str(),
                        if placed.contains(&(i as u16)) {
                            "placed"
                        } else {
                            "not placed"
                        }
                    ),
                });
            }
        }
    }
    if t.minimap_flags & 1 == 0 {
        out.push(Finding {
            rule: "minimap-flag",
            msg: format!(
                "minimap flags {:#x}: bit 0 is clear, the game ignores the stored minimap",
                t.minimap_flags
            ),
        });
    }
    let (mw, mh) = (t.minimap.width, t.minimap.height);
    if mw < 252 || mh < 252 {
        out.push(Finding {
            rule: "minimap-size",
            msg: format!("minimap is {mw}×{mh}; the radar uses a stored minimap only when both sides are at least 252"),
        });
    }
    let mut seen: HashMap<&[u8], usize> = HashMap::new();
    let mut dups = Vec::new();
    for (i, tile) in t.tiles.chunks_exact(TILE_BYTES).enumerate() {
        if let Some(&first) = seen.get(tile) {
            dups.push((i, first));
        } else {
            seen.insert(tile, i);
        }
    }
    if !dups.is_empty() {
        let list: Vec<String> = dups
            .iter()
            .take(8)
            .map(|(i, f)| format!("{i}={f}"))
            .collect();
        out.push(Finding {
            rule: "duplicate-tiles",
            msg: format!(
                "{} tiles repeat an earlier one ({}{})",
                dups.len(),
                list.join(", "),
                if dups.len() > 8 { ", …" } else { "" }
            ),
        });
    }
    let mut used = vec![false; n];
    for &c in &t.tilemap {
        if let Some(u) = used.get_mut(usize::from(c)) {
            *u = true;
        }
    }
    let unused: Vec<usize> = (0..n).filter(|&i| !used[i]).collect();
    if !unused.is_empty() {
        let list: Vec<String> = unused.iter().take(8).map(|i| i.to_string()).collect();
        out.push(Finding {
            rule: "unused-tiles",
            msg: format!(
                "{} tiles are used by no cell ({}{}); `tafs tnt unpack` + `pack --prune` drops them",
                unused.len(),
                list.join(", "),
                if unused.len() > 8 { ", …" } else { "" }
            ),
        });
    }
    out
}
