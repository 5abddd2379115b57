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

/// Feature words of cells no unit crosses (kbot's quality rules: 0xFFFC and 0xFFFE).
fn impassable(feature: u16) -> bool {
    feature == 0xFFFC || feature == 0xFFFE
}

/// Start positions farther than this from every metal feature are flagged (tiles of 32 px).
pub const METAL_REACH_TILES: f64 = 24.0;
/// Passable cells unreachable from every start are flagged from this many on.
pub const STRANDED_CELLS: usize = 20;

/// The largest integer of a `numplayers` list such as `2, 3, 4` (0: none).
pub fn max_players(s: &str) -> usize {
    s.split([',', ' ', ';'])
        .filter_map(|t| t.trim().parse::<usize>().ok())
        .max()
        .unwrap_or(0)
}

/// kbot's map-quality rules, over the map and its `.ota` (`None`: the `.ota` rules are
/// skipped): `otaFields` (mission name, description, planet, numplayers, size blank or
/// missing, no schema), `startsInBounds` (a start outside the map or on an impassable cell),
/// `schemaSlots` (a schema with fewer starts than the largest `numplayers`), `metalProximity`
/// (a start with no placed feature whose TDF `metal` is above 0 within 24 tiles; needs
/// `features`), `voidIslands` (20 or more passable cells no start reaches through 4-neighbour
/// steps), `heightDiscontinuities` (4-neighbour cells whose heights differ by more than 32).
pub fn quality(
    t: &Tnt,
    ota: Option<&[crate::formats::tdf::Section]>,
    features: Option<&FeatureIndex>,
) -> Vec<Finding> {
    use crate::game::ota as o;
    let mut out = Vec::new();
    let (w, h) = (t.width as usize, t.height as usize);
    let schemas: Vec<Vec<(u32, i64, i64)>> = match ota {
        Some(secs) => (0..o::schema_count(secs))
            .map(|n| o::start_positions_of(secs, n).unwrap_or_default())
            .collect(),
        None => vec![],
    };
    if let Some(secs) = ota {
        let head = crate::formats::tdf::find(secs, "GlobalHeader");
        let field = |k: &str| head.and_then(|g| g.get(k)).unwrap_or("").trim().to_string();
        let mut missing: Vec<&str> = [
            "missionname",
            "missiondescription",
            "planet",
            "numplayers",
            "size",
        ]
        .into_iter()
        .filter(|k| field(k).is_empty())
        .collect();
        if schemas.is_empty() {
            missing.push("a [Schema 0]");
        }
        if !missing.is_empty() {
            out.push(Finding {
                rule: "otaFields",
                msg: format!("the .ota lacks {}", missing.join(", ")),
            });
        }
        let maxp = max_players(&field("numplayers"));
        let thin: Vec<String> = schemas
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                if maxp > 0 {
                    s.len() < maxp
                } else {
                    s.is_empty()
                }
            })
            .map(|(i, s)| format!("Schema {i} ({} starts)", s.len()))
            .collect();
        if !thin.is_empty() {
            out.push(Finding {
                rule: "schemaSlots",
                msg: format!(
                    "{} for numplayers {:?}: {}",
                    if maxp > 0 {
                        format!("{maxp} starts needed per schema")
                    } else {
                        "a start needed per schema".to_string()
                    },
                    field("numplayers"),
                    thin.join(", ")
                ),
            });
        }
    }
    let cell = |x: i64, z: i64| -> Option<usize> {
        let (ax, ay) = (x.div_euclid(16), z.div_euclid(16));
        (x >= 0 && z >= 0 && (ax as usize) < w && (ay as usize) < h)
            .then(|| ay as usize * w + ax as usize)
    };
    let mut bad = Vec::new();
    for (si, s) in schemas.iter().enumerate() {
        for &(n, x, z) in s {
            match cell(x, z) {
                None => bad.push(format!(
                    "Schema {si} StartPos{n} at ({x}, {z}) outside the map"
                )),
                Some(i) if t.attrs.get(i).is_some_and(|a| impassable(a.feature)) => bad.push(
                    format!("Schema {si} StartPos{n} at ({x}, {z}) on a void cell"),
                ),
                Some(_) => {}
            }
        }
    }
    if !bad.is_empty() {
        out.push(Finding {
            rule: "startsInBounds",
            msg: bad.join("; "),
        });
    }
    if let (Some(idx), false) = (features, schemas.iter().all(Vec::is_empty)) {
        let metals: Vec<(f64, f64)> = t
            .placements()
            .filter(|&(f, _, _)| {
                t.features.get(usize::from(f)).is_some_and(|e| {
                    idx.get(&e.name_str()).is_some_and(|(_, s)| {
                        s.get("metal")
                            .and_then(|m| m.trim().parse::<f64>().ok())
                            .is_some_and(|m| m > 0.0)
                    })
                })
            })
            .map(|(_, ax, ay)| (f64::from(ax) / 2.0, f64::from(ay) / 2.0))
            .collect();
        if metals.is_empty() {
            out.push(Finding {
                rule: "metalProximity",
                msg: "no metal-producing feature is placed on the map".into(),
            });
        } else {
            let mut far = Vec::new();
            for (si, s) in schemas.iter().enumerate() {
                for &(n, x, z) in s {
                    let (sx, sy) = (x as f64 / 32.0, z as f64 / 32.0);
                    let d = metals
                        .iter()
                        .map(|(mx, my)| ((sx - mx).powi(2) + (sy - my).powi(2)).sqrt())
                        .fold(f64::INFINITY, f64::min);
                    if d > METAL_REACH_TILES {
                        far.push(format!("Schema {si} StartPos{n} ({} tiles)", d as u64));
                    }
                }
            }
            if !far.is_empty() {
                out.push(Finding {
                    rule: "metalProximity",
                    msg: format!(
                        "no metal feature within {METAL_REACH_TILES} tiles of {}",
                        far.join(", ")
                    ),
                });
            }
        }
    }
    if !schemas.iter().all(Vec::is_empty) && t.attrs.len() == w * h {
        let passable: Vec<bool> = t.attrs.iter().map(|a| !impassable(a.feature)).collect();
        let mut seen = vec![false; w * h];
        let mut queue = std::collections::VecDeque::new();
        for &(_, x, z) in schemas.iter().flatten() {
            if let Some(i) = cell(x, z).filter(|&i| passable[i] && !seen[i]) {
                seen[i] = true;
                queue.push_back(i);
            }
        }
        while let Some(i) = queue.pop_front() {
            let (x, y) = (i % w, i / w);
            let mut near = Vec::with_capacity(4);
            if x > 0 {
                near.push(i - 1);
            }
            if x + 1 < w {
                near.push(i + 1);
            }
            if y > 0 {
                near.push(i - w);
            }
            if y + 1 < h {
                near.push(i + w);
            }
            for j in near {
                if passable[j] && !seen[j] {
                    seen[j] = true;
                    queue.push_back(j);
                }
            }
        }
        let total = passable.iter().filter(|p| **p).count();
        let stranded = (0..w * h).filter(|&i| passable[i] && !seen[i]).count();
        if stranded >= STRANDED_CELLS {
            out.push(Finding {
                rule: "voidIslands",
                msg: format!(
                    "{stranded} passable cells ({:.1}%) are unreachable from every start",
                    stranded as f64 * 100.0 / total.max(1) as f64
                ),
            });
        }
    }
    let height = |i: usize| t.attrs.get(i).map_or(0, |a| i32::from(a.height));
    let mut cliffs = 0usize;
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            if x + 1 < w && (height(i) - height(i + 1)).abs() > super::tools::CLIFF {
                cliffs += 1;
            }
            if y + 1 < h && (height(i) - height(i + w)).abs() > super::tools::CLIFF {
                cliffs += 1;
            }
        }
    }
    if cliffs > 0 {
        out.push(Finding {
            rule: "heightDiscontinuities",
            msg: format!(
                "{cliffs} cliff edges: neighbouring cells over {} height units apart (ground units may not pass)",
                super::tools::CLIFF
            ),
        });
    }
    out
}
