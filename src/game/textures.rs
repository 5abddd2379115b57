//! Where a game folder keeps the textures its 3DO models name: the sequences of
//! `textures/*.gaf` (folder and extension matched ignoring case). The view layer decodes
//! them ([`crate::view::model3d::game_textures`]).

use super::{find_dir_ci_in, GameFs, Kind, Plain};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The texture GAFs of `game_dir`, sorted by path (the first sequence of a name wins).
pub fn gaf_files(game_dir: &Path) -> Vec<PathBuf> {
    gaf_files_in(&Plain, game_dir)
}

/// [`gaf_files`] through `gfs`.
pub fn gaf_files_in(gfs: &dyn GameFs, game_dir: &Path) -> Vec<PathBuf> {
    let Some(dir) = find_dir_ci_in(gfs, game_dir, "textures") else {
        return Vec::new();
    };
    let Some(names) = gfs.names(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = names
        .into_iter()
        .map(|n| dir.join(n))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e.eq_ignore_ascii_case("gaf"))
                && gfs.kind(p) == Some(Kind::File)
        })
        .collect();
    out.sort();
    out
}

/// What identifies the current texture set of `game_dir`: each texture GAF's path, size and
/// modification time (a changed stamp means the textures must be read again).
pub fn stamp(game_dir: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    stamp_in(&Plain, game_dir)
}

/// [`stamp`] through `gfs`.
pub fn stamp_in(gfs: &dyn GameFs, game_dir: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    gaf_files_in(gfs, game_dir)
        .into_iter()
        .map(|p| {
            let (len, mtime) = gfs.stat(&p).unwrap_or((0, None));
            (p, len, mtime)
        })
        .collect()
}

/// The folder whose `textures/` a model file is drawn with: the nearest ancestor of `file`
/// holding a `textures` folder (a game folder, or a mod laid out like one).
pub fn folder_of(file: &Path) -> Option<PathBuf> {
    folder_of_in(&Plain, file)
}

/// [`folder_of`] through `gfs`.
pub fn folder_of_in(gfs: &dyn GameFs, file: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    abs.ancestors()
        .skip(1)
        .find(|d| find_dir_ci_in(gfs, d, "textures").is_some())
        .map(Path::to_path_buf)
}
