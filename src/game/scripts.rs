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

/// Most bytes of headers [`HeaderSet::read`] keeps.
const MAX_HEADERS_TOTAL: u64 = 32 << 20;

/// The headers of a script's folder and of its game's `scripts/` folder, read ahead into
/// memory (a view's options outlive the game-folder handle): the files of those folders
/// named `*.h` in any letter case, not their subfolders. The mount compiles `script.bos`
/// with these ([`crate::view::ViewOptions::script_headers`]).
#[derive(Default)]
pub struct HeaderSet {
    /// Per folder, in search order: (path shown in errors, file name, bytes).
    dirs: Vec<Vec<(String, String, Vec<u8>)>>,
}

impl std::fmt::Debug for HeaderSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<Vec<&str>> = self
            .dirs
            .iter()
            .map(|d| d.iter().map(|(_, n, _)| n.as_str()).collect())
            .collect();
        f.debug_struct("HeaderSet").field("dirs", &names).finish()
    }
}

impl HeaderSet {
    /// Reads the `*.h` files of `script_dir`, then of `<game>/scripts` when there is one
    /// (and it is another folder), through `gfs`.
    pub fn read(gfs: &dyn GameFs, script_dir: &Path, game: Option<&Path>) -> Self {
        let mut folders = vec![script_dir.to_path_buf()];
        if let Some(s) = game.and_then(|g| find_dir_ci_in(gfs, g, "scripts")) {
            if s != script_dir {
                folders.push(s);
            }
        }
        let mut budget = MAX_HEADERS_TOTAL;
        let mut dirs = Vec::with_capacity(folders.len());
        for dir in folders {
            let mut names: Vec<String> = gfs
                .names(&dir)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|n| n.into_string().ok())
                .filter(|n| n.len() > 2 && n[n.len() - 2..].eq_ignore_ascii_case(".h"))
                .collect();
            names.sort();
            let mut found = Vec::new();
            for n in names {
                let p = dir.join(&n);
                let Some(bytes) = gfs.read(&p, MAX_HEADER.min(budget)) else {
                    continue;
                };
                budget = budget.saturating_sub(bytes.len() as u64);
                found.push((p.to_string_lossy().into_owned(), n, bytes));
            }
            dirs.push(found);
        }
        HeaderSet { dirs }
    }

    /// How many headers were read.
    pub fn len(&self) -> usize {
        self.dirs.iter().map(Vec::len).sum()
    }

    /// Whether none was read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Includes for HeaderSet {
    fn find(&self, _from: &str, name: &str) -> Option<(String, Vec<u8>)> {
        let name = name.replace('\\', "/");
        // Only headers of the folders themselves: a name with a folder part is not here.
        if name.contains('/') {
            return None;
        }
        self.dirs.iter().find_map(|d| {
            // An exact name first, then one differing only in letter case.
            d.iter()
                .find(|(_, n, _)| *n == name)
                .or_else(|| d.iter().find(|(_, n, _)| n.eq_ignore_ascii_case(&name)))
                .map(|(shown, _, b)| (shown.clone(), b.clone()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::Plain;

    #[test]
    fn headers_come_from_the_scripts_folder_then_the_games_ignoring_case() {
        let d = tempfile::tempdir().unwrap();
        let game = d.path();
        let own = game.join("units/x");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::create_dir_all(game.join("SCRIPTS/sub")).unwrap();
        std::fs::write(own.join("Defs.H"), "own").unwrap();
        std::fs::write(own.join("notes.txt"), "not a header").unwrap();
        std::fs::write(game.join("SCRIPTS/defs.h"), "shared").unwrap();
        std::fs::write(game.join("SCRIPTS/other.h"), "other").unwrap();
        std::fs::write(game.join("SCRIPTS/sub/deep.h"), "deep").unwrap();
        let h = HeaderSet::read(&Plain, &own, Some(game));
        assert_eq!(h.len(), 3);
        let body = |n: &str| {
            h.find("x.bos", n)
                .map(|(_, b)| String::from_utf8(b).unwrap())
        };
        assert_eq!(body("defs.h").as_deref(), Some("own"));
        assert_eq!(body("OTHER.H").as_deref(), Some("other"));
        assert_eq!(body("notes.txt"), None);
        assert_eq!(body("sub/deep.h"), None, "folders are not followed");
        assert_eq!(body("missing.h"), None);
    }
}
