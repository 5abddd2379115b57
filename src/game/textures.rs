//! Where a game folder keeps the textures its 3DO models name: the sequences of
//! `textures/*.gaf` (folder and extension matched ignoring case). The view layer decodes
//! them ([`crate::view::model3d::game_textures`]).

use super::find_dir_ci;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The texture GAFs of `game_dir`, sorted by path (the first sequence of a name wins).
pub fn gaf_files(game_dir: &Path) -> Vec<PathBuf> {
    let Some(dir) = find_dir_ci(game_dir, "textures") else {
        return Vec::new();
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| e.eq_ignore_ascii_case("gaf"))
        })
        .collect();
    out.sort();
    out
}

/// What identifies the current texture set of `game_dir`: each texture GAF's path, size and
/// modification time (a changed stamp means the textures must be read again).
pub fn stamp(game_dir: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    gaf_files(game_dir)
        .into_iter()
        .map(|p| {
            let m = std::fs::metadata(&p).ok();
            let len = m.as_ref().map_or(0, |m| m.len());
            let mtime = m.and_then(|m| m.modified().ok());
            (p, len, mtime)
        })
        .collect()
}

/// The folder whose `textures/` a model file is drawn with: the nearest ancestor of `file`
/// holding a `textures` folder (a game folder, or a mod laid out like one).
pub fn folder_of(file: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    abs.ancestors()
        .skip(1)
        .find(|d| find_dir_ci(d, "textures").is_some())
        .map(Path::to_path_buf)
}
