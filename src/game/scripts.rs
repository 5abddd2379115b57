//! Where the headers a unit script includes are found: the script's own folder, then the
//! `scripts/` folder of its game folder, names matched ignoring letter case as on Windows
//! (the built-in `sfxtype.h`/`exptype.h` of [`crate::formats::bos::headers`] come last).

use std::path::{Component, Path, PathBuf};

use super::{find_ci_in, find_dir_ci_in, GameFs};
use crate::formats::bos::Includes;

/// Largest header read.
const MAX_HEADER: u64 = 16 << 20;

/// [`Includes`] over folders of a game, read through a [`GameFs`].
pub struct FolderIncludes<'a> {
    gfs: &'a dyn GameFs,
    dirs: Vec<PathBuf>,
}

impl<'a> FolderIncludes<'a> {
    /// Headers of the script at `script`: its folder, then `<game>/scripts` when `game` is
    /// given and has one.
    pub fn new(gfs: &'a dyn GameFs, script_dir: &Path, game: Option<&Path>) -> Self {
        let mut dirs = vec![script_dir.to_path_buf()];
        if let Some(s) = game.and_then(|g| find_dir_ci_in(gfs, g, "scripts")) {
            if s != script_dir {
                dirs.push(s);
            }
        }
        FolderIncludes { gfs, dirs }
    }
}

impl Includes for FolderIncludes<'_> {
    fn find(&self, _from: &str, name: &str) -> Option<(String, Vec<u8>)> {
        let rel = name.replace('\\', "/");
        let parts: Vec<&str> = Path::new(&rel)
            .components()
            .map(|c| match c {
                Component::Normal(s) => s.to_str(),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        let (file, folders) = parts.split_last()?;
        for d in &self.dirs {
            let mut dir = d.clone();
            let mut ok = true;
            for f in folders {
                match find_dir_ci_in(self.gfs, &dir, f) {
                    Some(x) => dir = x,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                continue;
            }
            if let Some(p) = find_ci_in(self.gfs, &dir, file) {
                if let Some(bytes) = self.gfs.read(&p, MAX_HEADER) {
                    return Some((p.to_string_lossy().into_owned(), bytes));
                }
            }
        }
        None
    }
}
