//! What belongs to a game folder (a TA or TA: Kingdoms install, or a mod's folder laid out
//! like one): finding its files ignoring letter case, the folder an asset belongs to, the
//! palette an asset is drawn with ([`palette`]), the feature definitions of `features/**/*.tdf`
//! ([`features`]) and a map's `.ota` start positions ([`ota`]), the texture GAFs of 3DO models ([`textures`]). Used by the view, the CLI
//! and the mount alike; reads real files only, and imports only [`crate::formats`].

pub mod features;
pub mod ota;
pub mod palette;
pub mod textures;

use std::path::{Path, PathBuf};

/// Finds `name` in `dir` ignoring ASCII case (exact match preferred).
pub fn find_ci(dir: &Path, name: &str) -> Option<PathBuf> {
    find_entry_ci(dir, name, Path::is_file)
}

/// Finds a sub-directory ignoring ASCII case.
pub fn find_dir_ci(dir: &Path, name: &str) -> Option<PathBuf> {
    find_entry_ci(dir, name, Path::is_dir)
}

fn find_entry_ci(dir: &Path, name: &str, kind: fn(&Path) -> bool) -> Option<PathBuf> {
    let exact = dir.join(name);
    if kind(&exact) {
        return Some(exact);
    }
    let rd = std::fs::read_dir(dir).ok()?;
    let mut hits: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().eq_ignore_ascii_case(name))
        .map(|e| e.path())
        .filter(|p| kind(p))
        .collect();
    hits.sort();
    hits.into_iter().next()
}

/// The game folder of a loose asset file: the nearest ancestor holding a `palettes` folder,
/// else the file's own folder. Returns the folder and the asset's path relative to it.
pub fn game_dir_of(file: &Path) -> (PathBuf, String) {
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let mut dir = abs.parent();
    while let Some(d) = dir {
        if find_dir_ci(d, "palettes").is_some() {
            let rel = abs.strip_prefix(d).unwrap_or(&abs);
            return (d.to_path_buf(), rel.to_string_lossy().replace('\\', "/"));
        }
        dir = d.parent();
    }
    let parent = abs.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = abs
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    (parent, name)
}
