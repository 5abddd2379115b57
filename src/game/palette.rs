//! Which palette an asset is drawn with, decided from the game folder: the TA: Kingdoms
//! chain for sprites (for TA it ends at `palettes/PALETTE.PAL` or the built-in palette, which
//! are the same) and the main palette for maps.

use super::{find_ci_in, find_dir_ci_in, GameFs, Plain};
use crate::formats::palette::Palette;
use std::path::{Path, PathBuf};

/// Faction prefixes of TA: Kingdoms asset names and their palette files.
const FACTIONS: &[(&str, &str)] = &[
    ("ara", "aramon"),
    ("tar", "taros"),
    ("ver", "veruna"),
    ("zon", "zhon"),
    ("aid", "aiden"),
    ("cre", "creon"),
];

/// Largest palette file read (a faction `.pcx` is a picture carrying its palette).
const MAX_PALETTE_FILE: u64 = 16 << 20;

fn try_load(gfs: &dyn GameFs, game_dir: &Path, path: &Path) -> Option<(Palette, String)> {
    let data = gfs.read(path, MAX_PALETTE_FILE)?;
    let name = path.file_name()?.to_string_lossy().to_string();
    let pal = Palette::from_file_bytes(&name, &data).ok()?;
    let rel = path.strip_prefix(game_dir).unwrap_or(path);
    Some((pal, rel.to_string_lossy().replace('\\', "/")))
}

/// Resolves the palette of the asset at `asset_rel` (relative to `game_dir`, `/`-separated):
/// a same-named `.pcx` beside it, then `palettes/<base>.pal`, then the faction palette
/// `palettes/<faction>.pcx` by the name's 3-letter prefix, then `palettes/palette.pal`, then
/// the built-in TA palette. Names are matched ignoring case; unreadable candidates are
/// skipped. Returns the palette and where it came from (a path relative to `game_dir`).
pub fn resolve(game_dir: &Path, asset_rel: &str) -> (Palette, String) {
    resolve_in(&Plain, game_dir, asset_rel)
}

/// [`resolve`] through `gfs`.
pub fn resolve_in(gfs: &dyn GameFs, game_dir: &Path, asset_rel: &str) -> (Palette, String) {
    let asset = Path::new(asset_rel);
    let base = asset
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let parent = game_dir.join(asset.parent().unwrap_or(Path::new("")));
    let palettes = find_dir_ci_in(gfs, game_dir, "palettes");
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = find_ci_in(gfs, &parent, &format!("{base}.pcx")) {
        candidates.push(p);
    }
    if let Some(pd) = &palettes {
        if let Some(p) = find_ci_in(gfs, pd, &format!("{base}.pal")) {
            candidates.push(p);
        }
        let lower = base.to_ascii_lowercase();
        for (prefix, faction) in FACTIONS {
            if lower.starts_with(prefix) {
                if let Some(p) = find_ci_in(gfs, pd, &format!("{faction}.pcx")) {
                    candidates.push(p);
                }
            }
        }
        if let Some(p) = find_ci_in(gfs, pd, "palette.pal") {
            candidates.push(p);
        }
    }
    for c in candidates {
        if let Some(found) = try_load(gfs, game_dir, &c) {
            return found;
        }
    }
    (Palette::ta(), BUILTIN.to_string())
}

/// How the built-in palette is named in metadata.json.
pub const BUILTIN: &str = "built-in TA palette";

/// The palette maps are drawn in: the game's main palette, `palettes/PALETTE.PAL` of
/// `game_dir` (any letter case) when it reads, else the built-in TA palette. (Not the
/// asset-name chain of [`resolve`]: a `.pcx` beside a map is its loading-screen picture, not
/// its palette.) Returns the palette and where it came from.
pub fn main_palette(game_dir: &Path) -> (Palette, String) {
    main_palette_in(&Plain, game_dir)
}

/// [`main_palette`] through `gfs`.
pub fn main_palette_in(gfs: &dyn GameFs, game_dir: &Path) -> (Palette, String) {
    find_dir_ci_in(gfs, game_dir, "palettes")
        .and_then(|d| find_ci_in(gfs, &d, "palette.pal"))
        .and_then(|p| {
            let pal = Palette::from_pal(&gfs.read(&p, MAX_PALETTE_FILE)?).ok()?;
            let name = p.file_name()?.to_string_lossy().to_string();
            Some((pal, format!("palettes/{name}")))
        })
        .unwrap_or_else(|| (Palette::ta(), BUILTIN.to_string()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A readable PCX whose palette starts with `color0` (the rest black).
    pub(crate) fn pcx_with(color0: [u8; 3]) -> Vec<u8> {
        let mut v = vec![0u8; 130];
        v.push(0x0C);
        v.extend_from_slice(&color0);
        v.extend_from_slice(&[0u8; 765]);
        v
    }

    #[test]
    fn resolver_chain_order() {
        let t = tempfile::tempdir().unwrap();
        let g = t.path();
        std::fs::create_dir_all(g.join("anims")).unwrap();
        std::fs::create_dir_all(g.join("Palettes")).unwrap();
        // nothing: built-in
        assert_eq!(resolve(g, "anims/aramon_x.gaf").1, BUILTIN);
        // palettes/palette.pal
        let mut pal = vec![0u8; 1024];
        pal[0] = 1;
        std::fs::write(g.join("Palettes/PALETTE.PAL"), &pal).unwrap();
        let (p, src) = resolve(g, "anims/aramon_x.gaf");
        assert_eq!(
            (p.colors[0], src.as_str()),
            ([1, 0, 0], "Palettes/PALETTE.PAL")
        );
        // faction prefix beats palette.pal
        std::fs::write(g.join("Palettes/aramon.pcx"), pcx_with([2, 0, 0])).unwrap();
        assert_eq!(resolve(g, "anims/ARAmon_x.gaf").1, "Palettes/aramon.pcx");
        assert_eq!(resolve(g, "anims/other.gaf").1, "Palettes/PALETTE.PAL");
        // palettes/<base>.pal beats the faction
        std::fs::write(g.join("Palettes/aramon_x.pal"), &pal).unwrap();
        assert_eq!(resolve(g, "anims/aramon_x.gaf").1, "Palettes/aramon_x.pal");
        // a sibling .pcx beats everything
        std::fs::write(g.join("anims/Aramon_X.PCX"), pcx_with([3, 0, 0])).unwrap();
        let (p, src) = resolve(g, "anims/aramon_x.gaf");
        assert_eq!(
            (p.colors[0], src.as_str()),
            ([3, 0, 0], "anims/Aramon_X.PCX")
        );
        // an unreadable candidate is skipped
        std::fs::write(g.join("anims/bad.pcx"), b"short").unwrap();
        assert_eq!(resolve(g, "anims/bad.gaf").1, "Palettes/PALETTE.PAL");
        // the game folder of a loose file
        let (gd, rel) = super::super::game_dir_of(&g.join("anims/aramon_x.gaf"));
        assert_eq!((gd.as_path(), rel.as_str()), (g, "anims/aramon_x.gaf"));
    }
}
