//! A map's `.ota` (the mission/skirmish description beside a `.tnt`): where it is, and the
//! start positions of its first schema.

use super::find_ci;
use crate::formats::tdf;
use std::path::{Path, PathBuf};

/// Start positions of the first schema of a parsed `.ota`: (player number, x, z) in map
/// pixels, sorted.
pub fn start_positions(ota: &[tdf::Section]) -> Vec<(u32, i64, i64)> {
    start_positions_of(ota, 0).unwrap_or_default()
}

/// Schema `n` (`[Schema n]` in `[GlobalHeader]`, or at the top level), if present.
pub fn schema(ota: &[tdf::Section], n: usize) -> Option<&tdf::Section> {
    let name = format!("Schema {n}");
    tdf::find(ota, "GlobalHeader")
        .and_then(|g| g.child(&name))
        .or_else(|| tdf::find(ota, &name))
}

/// The number of schemas: `Schema 0`, `Schema 1`, … up to the first missing.
pub fn schema_count(ota: &[tdf::Section]) -> usize {
    (0..).take_while(|&n| schema(ota, n).is_some()).count()
}

/// Start positions of schema `n` (`None`: no such schema), as [`start_positions`].
pub fn start_positions_of(ota: &[tdf::Section], n: usize) -> Option<Vec<(u32, i64, i64)>> {
    let schema = schema(ota, n)?;
    Some(schema_starts(schema))
}

fn schema_starts(schema: &tdf::Section) -> Vec<(u32, i64, i64)> {
    let Some(specials) = schema.child("specials") else {
        return vec![];
    };
    let mut out = Vec::new();
    for sp in &specials.children {
        let Some(what) = sp.get("specialwhat") else {
            continue;
        };
        let lower = what.to_ascii_lowercase();
        let Some(n) = lower
            .strip_prefix("startpos")
            .and_then(|n| n.trim().parse::<u32>().ok())
        else {
            continue;
        };
        let coord = |k: &str| sp.get(k).and_then(|v| v.trim().parse::<f64>().ok());
        if let (Some(x), Some(z)) = (coord("XPos"), coord("ZPos")) {
            out.push((n, x as i64, z as i64));
        }
    }
    out.sort();
    out
}

/// `<stem>.ota` next to the map (any letter case).
pub fn beside(map: &Path) -> Option<PathBuf> {
    let stem = map.file_stem()?.to_string_lossy().to_string();
    let dir = match map.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    find_ci(&dir, &format!("{stem}.ota"))
}
