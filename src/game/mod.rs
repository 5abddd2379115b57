//! What belongs to a game folder (a TA or TA: Kingdoms install, or a mod's folder laid out
//! like one): finding its files ignoring letter case, the folder an asset belongs to, the
//! palette an asset is drawn with ([`palette`]), the feature definitions of `features/**/*.tdf`
//! ([`features`]) and a map's `.ota` start positions ([`ota`]), the texture GAFs of 3DO
//! models ([`textures`]). Used by the view, the CLI and the mount alike; reads real files
//! only, through a [`GameFs`] (the CLI's [`Plain`], the mount's reader confined beneath its
//! game folder), and imports only [`crate::formats`].

pub mod features;
pub mod ota;
pub mod palette;
pub mod scripts;
pub mod textures;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What a path of a game folder is, as a [`GameFs`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// Anything else (for a confined reader: a symlink too).
    Other,
}

/// How this module reads a game folder: [`Plain`] for the CLI (paths as given, symlinks
/// followed, with the rights of the user running it), or a reader confined beneath one
/// folder (the mount, whose daemon may run as root: see `fs::core::view_options_for`).
pub trait GameFs {
    /// What `path` is; `None` if it cannot be seen.
    fn kind(&self, path: &Path) -> Option<Kind>;
    /// The names in directory `dir`; `None` if it cannot be listed.
    fn names(&self, dir: &Path) -> Option<Vec<OsString>>;
    /// The names in directory `dir` equal to `name` ignoring ASCII case; `None` if it
    /// cannot be listed.
    fn names_like(&self, dir: &Path, name: &str) -> Option<Vec<OsString>> {
        let mut v = self.names(dir)?;
        v.retain(|n| n.to_string_lossy().eq_ignore_ascii_case(name));
        Some(v)
    }
    /// The bytes of regular file `path`, `None` if it cannot be read or is over `max` bytes.
    fn read(&self, path: &Path, max: u64) -> Option<Vec<u8>>;
    /// Size and modification time of regular file `path`.
    fn stat(&self, path: &Path) -> Option<(u64, Option<SystemTime>)>;
}

impl Kind {
    /// The kind of a file type (a symlink's own type is `Other`).
    pub fn of(t: std::fs::FileType) -> Kind {
        if t.is_dir() {
            Kind::Dir
        } else if t.is_file() {
            Kind::File
        } else {
            Kind::Other
        }
    }
}

/// The bytes of open file `f` when it is a regular file of at most `max` bytes (a file
/// growing while it is read stops at the bound too).
pub fn read_bounded(f: std::fs::File, max: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let m = f.metadata().ok()?;
    if !m.is_file() || m.len() > max {
        return None;
    }
    let mut v = Vec::with_capacity(m.len() as usize);
    f.take(max + 1).read_to_end(&mut v).ok()?;
    (v.len() as u64 <= max).then_some(v)
}

/// The file system as the process sees it (the CLI).
pub struct Plain;

impl GameFs for Plain {
    fn kind(&self, path: &Path) -> Option<Kind> {
        Some(Kind::of(std::fs::metadata(path).ok()?.file_type()))
    }
    fn names(&self, dir: &Path) -> Option<Vec<OsString>> {
        let rd = std::fs::read_dir(dir).ok()?;
        Some(rd.flatten().map(|e| e.file_name()).collect())
    }
    fn read(&self, path: &Path, max: u64) -> Option<Vec<u8>> {
        read_bounded(std::fs::File::open(path).ok()?, max)
    }
    fn stat(&self, path: &Path) -> Option<(u64, Option<SystemTime>)> {
        let m = std::fs::metadata(path).ok()?;
        Some((m.len(), m.modified().ok()))
    }
}

/// Finds `name` in `dir` ignoring ASCII case (exact match preferred).
pub fn find_ci(dir: &Path, name: &str) -> Option<PathBuf> {
    find_ci_in(&Plain, dir, name)
}

/// Finds a sub-directory ignoring ASCII case.
pub fn find_dir_ci(dir: &Path, name: &str) -> Option<PathBuf> {
    find_dir_ci_in(&Plain, dir, name)
}

/// [`find_ci`] through `gfs`.
pub fn find_ci_in(gfs: &dyn GameFs, dir: &Path, name: &str) -> Option<PathBuf> {
    find_entry_ci(gfs, dir, name, Kind::File)
}

/// [`find_dir_ci`] through `gfs`.
pub fn find_dir_ci_in(gfs: &dyn GameFs, dir: &Path, name: &str) -> Option<PathBuf> {
    find_entry_ci(gfs, dir, name, Kind::Dir)
}

fn find_entry_ci(gfs: &dyn GameFs, dir: &Path, name: &str, want: Kind) -> Option<PathBuf> {
    let exact = dir.join(name);
    if gfs.kind(&exact) == Some(want) {
        return Some(exact);
    }
    let mut hits: Vec<PathBuf> = gfs
        .names_like(dir, name)?
        .into_iter()
        .map(|n| dir.join(n))
        .filter(|p| gfs.kind(p) == Some(want))
        .collect();
    hits.sort();
    hits.into_iter().next()
}

/// The game folder of a loose asset file: the nearest ancestor holding a `palettes` folder,
/// else the file's own folder. Returns the folder and the asset's path relative to it.
pub fn game_dir_of(file: &Path) -> (PathBuf, String) {
    game_dir_of_in(&Plain, file)
}

/// [`game_dir_of`] through `gfs` (a confined reader sees no folder outside its own).
pub fn game_dir_of_in(gfs: &dyn GameFs, file: &Path) -> (PathBuf, String) {
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let mut dir = abs.parent();
    while let Some(d) = dir {
        if find_dir_ci_in(gfs, d, "palettes").is_some() {
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
