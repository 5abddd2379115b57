//! A map's `.ota` (the mission/skirmish description beside a `.tnt`): where it is, and the
//! start positions of its first schema.

use super::find_ci;
use crate::formats::tdf;
use std::path::{Path, PathBuf};

/// Start positions from a parsed `.ota`: (player number, x, z) in map pixels, sorted.
pub fn start_positions(ota: &[tdf::Section]) -> Vec<(u32, i64, i64)> {
    let schema = tdf::find(ota, "GlobalHeader")
        .and_then(|g| g.child("Schema 0"))
        .or_else(|| tdf::find(ota, "Schema 0"));
    let Some(specials) = schema.and_then(|s| s.child("specials")) else {
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
