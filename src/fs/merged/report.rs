//! What the mod of a writable merged view changes: the root `.tafs-status` (what TARGET
//! overrides, what it adds, refused operations, then the top's write-back status) and
//! `.tafs-diff` (every file of TARGET compared with what it shadows; `tafs diff`).

use super::overlay::{OverlayCore, Target};
use crate::formats::hpi::{self, EntryKind, FileInfo};
use crate::fs::core::writeback_ops::WritebackOps;
use crate::fs::core::ROOT;
use crate::fs::shared::join;
use crate::fs::Caller;
use crate::view::archive::{FileSource, SameAs};
use std::path::Path;

/// Most files of TARGET reported.
const MAX_FILES: usize = 1 << 20;
/// Deepest folder of a TARGET folder walked.
const MAX_DEPTH: usize = 64;

/// One file TARGET holds, as stored there (its bytes are read one file at a time, when
/// [`OverlayCore::diff_text`] compares it).
struct ModFile {
    path: String,
    /// Where it is: a file of a folder TARGET (its path there) or a member of an archive
    /// TARGET.
    at: At,
}

enum At {
    Loose,
    Member(FileInfo),
}

/// What TARGET holds: its files, and for an archive TARGET the archive read by range (its
/// directory parsed, members read from the open file when compared).
struct ModFiles {
    files: Vec<ModFile>,
    archive: Option<(FileSource, hpi::Archive)>,
}

impl OverlayCore {
    /// The files TARGET holds (committed: a folder's files, an archive's members), sorted
    /// by path. An archive TARGET is read by range: its header and directory only.
    fn mod_files(&self) -> ModFiles {
        let mut out = Vec::new();
        let mut archive = None;
        match &self.target {
            Target::Folder(dir) => {
                let mut stack = vec![(String::new(), 0usize)];
                while let Some((rel, depth)) = stack.pop() {
                    let Ok(rd) = super::read_game_dir(dir, Path::new(&rel)) else {
                        continue;
                    };
                    for e in rd.flatten() {
                        let Some(name) = e.file_name().to_str().map(str::to_string) else {
                            continue;
                        };
                        let Ok(t) = e.file_type() else { continue };
                        let p = join(&rel, &name);
                        if t.is_dir() && depth < MAX_DEPTH {
                            stack.push((p, depth + 1));
                        } else if t.is_file() && out.len() < MAX_FILES {
                            out.push(ModFile {
                                path: p,
                                at: At::Loose,
                            });
                        }
                    }
                }
            }
            Target::Archive(p) => {
                let limits = self.top.options().archive_limits;
                match super::overlay::open_archive(p, &limits) {
                    Ok((src, a)) => {
                        let paths = crate::view::archive::shown_paths(&a);
                        for (e, path) in a.entries.iter().zip(paths) {
                            let EntryKind::File(info) = &e.kind else {
                                continue;
                            };
                            if out.len() >= MAX_FILES {
                                break;
                            }
                            out.push(ModFile {
                                path,
                                at: At::Member(*info),
                            });
                        }
                        archive = Some((src, a));
                    }
                    Err(e) => log::warn!("{}: {e}", p.display()),
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        ModFiles {
            files: out,
            archive,
        }
    }

    /// Whether `f` (of TARGET, as listed by [`OverlayCore::mod_files`]) holds exactly
    /// `theirs`: read from TARGET in blocks, or a member decompressed chunk by chunk.
    fn same_as(&self, m: &ModFiles, f: &ModFile, theirs: &[u8]) -> Result<bool, String> {
        match (&f.at, &self.target, &m.archive) {
            (At::Loose, Target::Folder(dir), _) => super::open_game_file(dir, Path::new(&f.path))
                .and_then(|file| crate::sys::file_holds(&file, theirs))
                .map_err(|e| e.to_string()),
            (At::Member(info), _, Some((src, a))) => {
                if u64::from(info.size) != theirs.len() as u64 {
                    return Ok(false);
                }
                let limits = self.top.options().archive_limits;
                let mut other = theirs;
                let mut same = SameAs::new(&mut other);
                let wrote = a.read_to(src, info, &limits, &mut same);
                same.verdict(wrote).map_err(|e| match e {
                    Ok(e) => e.to_string(),
                    Err(e) => e.to_string(),
                })
            }
            _ => Err("not in TARGET".into()),
        }
    }

    /// Whether `f` can be read (a member is decompressed and checked, its bytes dropped).
    fn readable(&self, m: &ModFiles, f: &ModFile) -> Result<(), String> {
        match (&f.at, &self.target, &m.archive) {
            (At::Loose, Target::Folder(dir), _) => super::open_game_file(dir, Path::new(&f.path))
                .map(drop)
                .map_err(|e| e.to_string()),
            (At::Member(info), _, Some((src, a))) => {
                let limits = self.top.options().archive_limits;
                a.read_to(src, info, &limits, &mut std::io::sink())
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
            _ => Err("not in TARGET".into()),
        }
    }

    /// The text of the root `.tafs-status`.
    pub(super) fn status_text(&self, c: Caller) -> String {
        let files = self.mod_files().files;
        let mut over = Vec::new();
        let mut added = Vec::new();
        for f in &files {
            match self.stock.sources_at(&f.path).into_iter().next() {
                Some(s) => over.push(format!("  overrides {}  ({s})\n", f.path)),
                None => added.push(format!("  adds {}\n", f.path)),
            }
        }
        let mut t = format!(
            "mod {}: {} files, {} override stock files, {} new\n",
            self.target.path().display(),
            files.len(),
            over.len(),
            added.len()
        );
        t.extend(over);
        t.extend(added);
        let refused = super::lock(&self.refused);
        if !refused.is_empty() {
            t.push_str("refused (stock content is never changed):\n");
            for r in refused.iter() {
                t.push_str(&format!("  {r}\n"));
            }
        }
        drop(refused);
        t.push_str(&self.stock.index_status());
        t.push_str("write-back:\n");
        // a folder TARGET: every asset staged in it; an archive TARGET: that archive's
        // staging area only (not the other assets of the folder holding it)
        let root = match &self.target {
            Target::Folder(_) => Ok(ROOT),
            Target::Archive(_) => self.top_root(),
        };
        match root.and_then(|r| self.top.status_bytes(r, c)) {
            Ok(b) => t.push_str(&String::from_utf8_lossy(&b)),
            Err(e) => t.push_str(&format!("  unknown: {e}\n")),
        }
        t
    }

    /// The text of `.tafs-diff`: one line per file of TARGET, `M` (differs from the stock
    /// file it shadows), `=` (the same bytes as it) or `A` (no stock file there), the path,
    /// and the shadowed source.
    pub(super) fn diff_text(&self) -> String {
        let mut t = String::new();
        let m = self.mod_files();
        for f in &m.files {
            let shadowed = self.stock.sources_at(&f.path).into_iter().next();
            let line = match shadowed {
                None => match self.readable(&m, f) {
                    Ok(()) => format!("A\t{}\n", f.path),
                    Err(e) => format!("?\t{}\tunreadable: {e}\n", f.path),
                },
                Some(s) => match self.stock.raw_file(&f.path) {
                    Ok((theirs, _)) => match self.same_as(&m, f, &theirs) {
                        Ok(true) => format!("=\t{}\t{s}\n", f.path),
                        Ok(false) => format!("M\t{}\t{s}\n", f.path),
                        Err(e) => format!("?\t{}\tunreadable: {e}\n", f.path),
                    },
                    // shadows a folder, or what it shadows cannot be read
                    Err(_) => match self.readable(&m, f) {
                        Ok(()) => format!("M\t{}\t{s}\n", f.path),
                        Err(e) => format!("?\t{}\tunreadable: {e}\n", f.path),
                    },
                },
            };
            t.push_str(&line);
        }
        t
    }
}
