//! The sources of the merged view: the loose files of the game folder and every archive at
//! its top level that parses, overlaid in the order of a [`Priority`] ([`scan`]).

use crate::formats::hpi::{self, Archive, HpiLimits};
use crate::fs::stage::Ident;
use crate::fs::FsError;
use crate::view;
use crate::view::merged::{MergedIndex, Priority, Slot, SourceEntry, SourceList, ROOT_NODE};
use std::fs::{self, Metadata};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Most loose files and folders scanned.
const MAX_LOOSE_ENTRIES: usize = 1 << 20;
/// Deepest loose folder scanned.
const MAX_LOOSE_DEPTH: usize = 64;

/// One archive of the game folder.
pub struct ArchiveSource {
    /// File name in the game folder.
    pub name: String,
    /// Identity of the archive file the directory was read from.
    pub ident: Ident,
    pub(super) meta: Metadata,
    pub(super) archive: Archive,
    /// Shown path of every entry of `archive` (see [`view::archive::shown_paths`]).
    pub(super) paths: Vec<String>,
    /// Version number of its members (changes when the archive changes).
    pub(super) ver: u64,
}

/// A source of the merged view.
pub enum Source {
    /// The loose files of the game folder.
    Loose,
    /// An archive.
    Archive(Arc<ArchiveSource>),
}

impl Source {
    /// How a path of this source is named in [`super::SOURCE_XATTR`]: `loose:PATH` or
    /// `archive:NAME:PATH`.
    pub fn describe(&self, path: &str) -> String {
        match self {
            Source::Loose => format!("loose:{path}"),
            Source::Archive(a) => format!("archive:{}:{path}", a.name),
        }
    }
}

/// The sources of a game folder overlaid: what `scan` finds.
pub struct Snapshot {
    /// The overlay; hit `source` numbers index `sources`.
    pub index: MergedIndex,
    /// The sources, highest priority first.
    pub sources: Vec<Source>,
    pub(super) loose: Vec<SourceEntry>,
    pub(super) archives: Vec<(String, Ident)>,
}

impl Snapshot {
    /// Every source holding `node`, described, winner first.
    pub fn sources_of(&self, node: usize) -> Vec<String> {
        if node == ROOT_NODE {
            return self.sources.iter().map(|s| s.describe("")).collect();
        }
        self.index
            .hits(node)
            .iter()
            .filter_map(|h| Some(self.sources.get(h.source)?.describe(&h.path)))
            .collect()
    }

    pub(super) fn archive_of(&self, source: usize) -> Option<&Arc<ArchiveSource>> {
        match self.sources.get(source)? {
            Source::Archive(a) => Some(a),
            Source::Loose => None,
        }
    }
}

/// Lists the loose files of `game_dir` (not the archives in `skip`, not the path `exclude`
/// with everything under it), folders first in each folder, sorted by name. Symlinks to
/// files are files; symlinks to folders, sockets and other special files and names that
/// are not UTF-8 are left out.
fn walk_loose(game_dir: &Path, skip: &[String], exclude: Option<&str>) -> Vec<SourceEntry> {
    let mut out = Vec::new();
    let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(rd) = super::read_game_dir(game_dir, Path::new(&dir)) else {
            continue;
        };
        let mut names: Vec<(String, bool)> = Vec::new();
        for ent in rd.flatten() {
            let Some(name) = ent.file_name().to_str().map(str::to_string) else {
                log::debug!("{}: name is not UTF-8, left out", ent.path().display());
                continue;
            };
            if dir.is_empty() && skip.contains(&name) {
                continue;
            }
            let Ok(t) = ent.file_type() else { continue };
            let is_dir = if t.is_symlink() {
                match super::stat_game_file(game_dir, &Path::new(&dir).join(&name)) {
                    Ok(m) if m.is_file() => false,
                    _ => continue,
                }
            } else if t.is_dir() {
                true
            } else if t.is_file() {
                false
            } else {
                continue;
            };
            let path = if dir.is_empty() {
                name.clone()
            } else {
                format!("{dir}/{name}")
            };
            if exclude == Some(path.as_str()) {
                continue;
            }
            names.push((name, is_dir));
        }
        names.sort();
        for (name, is_dir) in names {
            if out.len() >= MAX_LOOSE_ENTRIES {
                log::warn!("more than {MAX_LOOSE_ENTRIES} loose files: the rest left out");
                return out;
            }
            let path = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            if is_dir && depth < MAX_LOOSE_DEPTH {
                stack.push((path.clone(), depth + 1));
            }
            out.push(SourceEntry { path, dir: is_dir });
        }
    }
    out
}

/// Scans `game_dir`: every regular file (or symlink to one) at its top level whose name ends
/// in `.hpi .ufo .ccx .gp3 .gpf` (any case) and that parses is an archive source; one that
/// does not parse stays a loose file (warning logged). Archives whose identity equals one in
/// `old` are not read again; `None` when the sources are those of `old`. `next_ver`
/// numbers new archive versions. `exclude` (a path relative to `game_dir`, as spelled on
/// disk: the mod the view writes into) is no source at all.
pub(super) fn scan(
    game_dir: &Path,
    priority: &Priority,
    max_bytes: u64,
    old: Option<&Snapshot>,
    next_ver: &AtomicU64,
    exclude: Option<&str>,
) -> Result<Option<Snapshot>, FsError> {
    let limits = HpiLimits::default();
    let mut archives: Vec<Arc<ArchiveSource>> = Vec::new();
    let mut idents = Vec::new();
    let mut names: Vec<String> = fs::read_dir(game_dir)?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| view::archive::is_archive_name(n) && exclude != Some(n.as_str()))
        .collect();
    names.sort();
    for name in names {
        let Ok(meta) = super::stat_game_file(game_dir, Path::new(&name)) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let ident = Ident::of(&meta);
        let reuse = old.and_then(|o| {
            o.sources.iter().find_map(|s| match s {
                Source::Archive(a) if a.name == name && a.ident == ident => Some(a.clone()),
                _ => None,
            })
        });
        if let Some(a) = reuse {
            idents.push((name, ident));
            archives.push(a);
            continue;
        }
        if meta.len() > max_bytes {
            log::warn!("{name}: too large, shown as a plain file");
            continue;
        }
        // only the header and directory are read (by range)
        let parsed = super::open_game_file(game_dir, Path::new(&name)).and_then(|f| {
            let meta = f.metadata()?;
            Ok((view::archive::FileSource::new(f)?, meta))
        });
        let (src, meta) = match parsed {
            Ok(x) => x,
            Err(e) => {
                log::warn!("{name}: cannot be read ({e}), shown as a plain file");
                continue;
            }
        };
        match hpi::parse_from(&src, &limits) {
            Ok(archive) => {
                let paths = view::archive::shown_paths(&archive);
                let ident = Ident::of(&meta);
                idents.push((name.clone(), ident.clone()));
                archives.push(Arc::new(ArchiveSource {
                    name,
                    ident,
                    meta,
                    archive,
                    paths,
                    ver: next_ver.fetch_add(1, Ordering::Relaxed),
                }));
            }
            Err(e) => log::warn!("{name}: not a readable archive ({e}), shown as a plain file"),
        }
    }
    let consumed: Vec<String> = archives.iter().map(|a| a.name.clone()).collect();
    let loose = walk_loose(game_dir, &consumed, exclude);
    if let Some(o) = old {
        if o.loose == loose && o.archives == idents {
            // Same sources: the caller keeps the old snapshot (same versions, same inodes).
            return Ok(None);
        }
    }
    let order = priority.order(&consumed);
    let mut sources = Vec::new();
    let mut lists = Vec::new();
    for slot in order {
        match slot {
            Slot::Loose => {
                lists.push(SourceList {
                    entries: loose.clone(),
                });
                sources.push(Source::Loose);
            }
            Slot::Archive(i) => {
                let Some(a) = archives.get(i) else { continue };
                let entries = a
                    .archive
                    .entries
                    .iter()
                    .zip(&a.paths)
                    .map(|(e, p)| SourceEntry {
                        path: p.clone(),
                        dir: matches!(e.kind, hpi::EntryKind::Dir),
                    })
                    .collect();
                lists.push(SourceList { entries });
                sources.push(Source::Archive(a.clone()));
            }
        }
    }
    Ok(Some(Snapshot {
        index: MergedIndex::build(&lists),
        sources,
        loose,
        archives: idents,
    }))
}

/// Scans `game_dir` and overlays its sources in `priority` order (what `tafs which` and
/// the mount use): archives at the top level of the game folder, loose files everywhere.
pub fn scan_once(game_dir: &Path, priority: &Priority) -> Result<Snapshot, FsError> {
    scan(game_dir, priority, 1 << 30, None, &AtomicU64::new(1), None)?.ok_or(FsError::NotFound)
}

/// [`scan_once`] leaving out `exclude` (a path relative to `game_dir`: the mod of a
/// writable view, see [`super::exclude_of`]).
pub fn scan_excluding(
    game_dir: &Path,
    priority: &Priority,
    exclude: Option<&str>,
) -> Result<Snapshot, FsError> {
    scan(
        game_dir,
        priority,
        1 << 30,
        None,
        &AtomicU64::new(1),
        exclude,
    )?
    .ok_or(FsError::NotFound)
}
