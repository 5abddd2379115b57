//! What the mod of a writable merged view changes: the root `.tafs-status` (what TARGET
//! overrides, what it adds, refused operations, then the top's write-back status) and
//! `.tafs-diff` (every file of TARGET compared with what it shadows; `tafs diff`).

use super::overlay::{join, OverlayCore, Target};
use crate::formats::hpi::{self, EntryKind};
use crate::fs::core::ROOT;
use std::path::Path;

/// Most files of TARGET reported.
const MAX_FILES: usize = 1 << 20;
/// Deepest folder of a TARGET folder walked.
const MAX_DEPTH: usize = 64;

/// One file TARGET holds, as stored there.
struct ModFile {
    path: String,
    bytes: Result<Vec<u8>, String>,
}

impl OverlayCore {
    /// The files TARGET holds (committed: a folder's files, an archive's members), sorted
    /// by path; their bytes are read when `with_bytes`.
    fn mod_files(&self, with_bytes: bool) -> Vec<ModFile> {
        let mut out = Vec::new();
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
                            let bytes = if with_bytes {
                                super::open_game_file(dir, Path::new(&p))
                                    .and_then(|mut f| {
                                        let mut v = Vec::new();
                                        std::io::Read::read_to_end(&mut f, &mut v)?;
                                        Ok(v)
                                    })
                                    .map_err(|e| e.to_string())
                            } else {
                                Ok(Vec::new())
                            };
                            out.push(ModFile { path: p, bytes });
                        }
                    }
                }
            }
            Target::Archive(p) => {
                let limits = self.top.options().archive_limits;
                let read = std::fs::read(p)
                    .map_err(|e| e.to_string())
                    .and_then(|data| {
                        let a = hpi::parse(&data, &limits).map_err(|e| e.to_string())?;
                        Ok((data, a))
                    });
                match read {
                    Ok((data, a)) => {
                        let paths = crate::view::archive::shown_paths(&a);
                        for (e, path) in a.entries.iter().zip(paths) {
                            let EntryKind::File(info) = &e.kind else {
                                continue;
                            };
                            if out.len() >= MAX_FILES {
                                break;
                            }
                            let bytes = if with_bytes {
                                a.read(&data, info, &limits).map_err(|e| e.to_string())
                            } else {
                                Ok(Vec::new())
                            };
                            out.push(ModFile { path, bytes });
                        }
                    }
                    Err(e) => log::warn!("{}: {e}", p.display()),
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// The text of the root `.tafs-status`.
    pub(super) fn status_text(&self) -> String {
        let files = self.mod_files(false);
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
        t.push_str("write-back:\n");
        // a folder TARGET: every asset staged in it; an archive TARGET: that archive's
        // staging area only (not the other assets of the folder holding it)
        let root = match &self.target {
            Target::Folder(_) => Ok(ROOT),
            Target::Archive(_) => self.top_root(),
        };
        match root.and_then(|r| self.top.status_bytes(r)) {
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
        for f in self.mod_files(true) {
            let shadowed = self.stock.sources_at(&f.path).into_iter().next();
            let line = match (&f.bytes, shadowed) {
                (Err(e), _) => format!("?\t{}\tunreadable: {e}\n", f.path),
                (Ok(_), None) => format!("A\t{}\n", f.path),
                (Ok(mine), Some(s)) => match self.stock.raw_file(&f.path) {
                    Ok((theirs, _)) if theirs.as_slice() == mine.as_slice() => {
                        format!("=\t{}\t{s}\n", f.path)
                    }
                    Ok(_) => format!("M\t{}\t{s}\n", f.path),
                    // shadows a folder, or what it shadows cannot be read
                    Err(_) => format!("M\t{}\t{s}\n", f.path),
                },
            };
            t.push_str(&line);
        }
        t
    }
}
