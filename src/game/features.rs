//! The feature definitions of a game folder: every `[section]` of `features/**/*.tdf`, by
//! name (what a map's feature table refers to).

use super::find_dir_ci;
use crate::formats::tdf;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Feature definitions of a game folder: lower-case section name → (file, section).
#[derive(Debug, Default)]
pub struct FeatureIndex {
    map: HashMap<String, (PathBuf, tdf::Section)>,
}

/// Largest TDF file read.
const MAX_TDF_BYTES: u64 = 8 << 20;

impl FeatureIndex {
    /// Reads every `features/**/*.tdf` under `game_dir`. Files that do not parse are
    /// reported, not fatal.
    pub fn scan(game_dir: &Path) -> (FeatureIndex, Vec<String>) {
        let mut idx = FeatureIndex::default();
        let mut problems = Vec::new();
        let Some(features) = find_dir_ci(game_dir, "features") else {
            problems.push(format!("{}: no features/ folder", game_dir.display()));
            return (idx, problems);
        };
        let mut files = Vec::new();
        walk(&features, &mut files);
        files.sort();
        for f in files {
            if !f.extension().is_some_and(|e| e.eq_ignore_ascii_case("tdf")) {
                continue;
            }
            let too_big = std::fs::metadata(&f).map_or(true, |m| m.len() > MAX_TDF_BYTES);
            if too_big {
                problems.push(format!("{}: unreadable or over 8 MB, skipped", f.display()));
                continue;
            }
            match std::fs::read(&f) {
                Ok(b) => match tdf::parse(&b) {
                    Ok(secs) => {
                        for s in secs {
                            idx.map
                                .entry(s.name.to_ascii_lowercase())
                                .or_insert_with(|| (f.clone(), s));
                        }
                    }
                    Err(e) => problems.push(format!("{}: {e}", f.display())),
                },
                Err(e) => problems.push(format!("{}: {e}", f.display())),
            }
        }
        (idx, problems)
    }

    /// The definition of feature `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&(PathBuf, tdf::Section)> {
        self.map.get(&name.to_ascii_lowercase())
    }
}

/// The files under `dir`, 16 folders deep and 100,000 files at most (symlinks not followed).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let files = walkdir::WalkDir::new(dir)
        .max_depth(17)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .take(100_001);
    out.extend(files.map(walkdir::DirEntry::into_path));
}

/// The nearest folder above `map` holding a `features/` folder.
pub fn find_game_dir(map: &Path) -> Option<PathBuf> {
    let abs = std::fs::canonicalize(map).ok()?;
    abs.ancestors()
        .skip(1)
        .find(|d| find_dir_ci(d, "features").is_some())
        .map(Path::to_path_buf)
}
