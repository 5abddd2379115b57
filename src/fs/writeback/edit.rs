//! The tree of an archive being edited by a commit: every entry by shown path, new content
//! where changed, written back as an HPI tree: kept members are copied from the archive
//! range by range ([`Member::InPlace`]), staged files are read when written
//! ([`Member::Deferred`]), so a commit holds neither the archive nor its members whole.

use crate::formats::hpi::{self, Member};
use crate::fs::FsError;
use crate::view::archive::ArchiveView;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The archive's tree being edited: every entry by shown path, new content where changed.
pub(in crate::fs::writeback) struct Edit {
    nodes: Vec<ENode>,
    by_path: HashMap<String, usize>,
    roots: Vec<usize>,
    /// Something was added, replaced, moved or removed since [`Edit::of`].
    changed: bool,
}

pub(in crate::fs::writeback) struct ENode {
    raw: Vec<u8>,
    kind: EKind,
    removed: bool,
}

pub(in crate::fs::writeback) enum EKind {
    Dir(Vec<usize>),
    /// An archive entry kept as stored (index in the archive's entries).
    Kept(usize),
    New(Vec<u8>),
    /// A staged file (its path in the staging area and its length), read when written.
    Staged(PathBuf, u64),
}

/// Deepest nesting written (the reader's default limit).
pub(in crate::fs::writeback) const MAX_DEPTH: usize = 64;

impl Edit {
    pub(in crate::fs::writeback) fn of(av: &ArchiveView) -> Edit {
        let a = av.archive();
        let mut e = Edit {
            nodes: Vec::with_capacity(a.entries.len()),
            by_path: HashMap::new(),
            roots: Vec::new(),
            changed: false,
        };
        for (i, (entry, p)) in a.entries.iter().zip(av.paths()).enumerate() {
            let kind = match entry.kind {
                hpi::EntryKind::Dir => EKind::Dir(Vec::new()),
                hpi::EntryKind::File(_) => EKind::Kept(i),
            };
            let parent = entry.parent.and_then(|p| av.paths().get(p)).cloned();
            e.push(parent.as_deref(), p, entry.name.clone(), kind);
        }
        e.changed = false;
        e
    }

    /// Whether anything was added, replaced, moved or removed: an unchanged edit writes the
    /// archive it came from again.
    pub(in crate::fs::writeback) fn changed(&self) -> bool {
        self.changed
    }

    pub(in crate::fs::writeback) fn push(
        &mut self,
        parent: Option<&str>,
        path: &str,
        raw: Vec<u8>,
        kind: EKind,
    ) -> usize {
        let i = self.nodes.len();
        self.changed = true;
        self.nodes.push(ENode {
            raw,
            kind,
            removed: false,
        });
        match parent.and_then(|p| self.by_path.get(p).copied()) {
            Some(pi) => {
                if let Some(EKind::Dir(kids)) = self.nodes.get_mut(pi).map(|n| &mut n.kind) {
                    kids.push(i);
                }
            }
            None => self.roots.push(i),
        }
        self.by_path.insert(path.to_string(), i);
        i
    }

    pub(in crate::fs::writeback) fn live(&self, path: &str) -> Option<usize> {
        let i = *self.by_path.get(path)?;
        (!self.nodes.get(i)?.removed).then_some(i)
    }

    /// The folder at `path`, made (with its parents) if missing.
    pub(in crate::fs::writeback) fn dir(&mut self, path: &str) -> Result<(), FsError> {
        if path.is_empty() {
            return Ok(());
        }
        if let Some(i) = self.live(path) {
            return match self.nodes.get(i).map(|n| &n.kind) {
                Some(EKind::Dir(_)) => Ok(()),
                _ => Err(FsError::NotDir),
            };
        }
        let (parent, name) = match path.rsplit_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, path),
        };
        if let Some(p) = parent {
            self.dir(p)?;
        }
        self.push(
            parent,
            path,
            name.as_bytes().to_vec(),
            EKind::Dir(Vec::new()),
        );
        Ok(())
    }

    /// The file at `path` holds `bytes` (folders of `path` made if missing).
    pub(in crate::fs::writeback) fn set_file(
        &mut self,
        path: &str,
        bytes: Vec<u8>,
    ) -> Result<(), FsError> {
        self.put_file(path, EKind::New(bytes))
    }

    /// The file at `path` holds what staged file `from` (`len` bytes) holds when the archive
    /// is written.
    pub(in crate::fs::writeback) fn set_staged(
        &mut self,
        path: &str,
        from: PathBuf,
        len: u64,
    ) -> Result<(), FsError> {
        self.put_file(path, EKind::Staged(from, len))
    }

    fn put_file(&mut self, path: &str, kind: EKind) -> Result<(), FsError> {
        if let Some(i) = self.live(path) {
            if let Some(n) = self.nodes.get_mut(i) {
                if matches!(n.kind, EKind::Dir(_)) {
                    return Err(FsError::IsDir);
                }
                n.kind = kind;
                self.changed = true;
            }
            return Ok(());
        }
        let (parent, name) = match path.rsplit_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, path),
        };
        if let Some(p) = parent {
            self.dir(p)?;
        }
        self.push(parent, path, name.as_bytes().to_vec(), kind);
        Ok(())
    }

    /// Moves the entry at `src` (with everything under it) to `dst`, named by its last
    /// component; folders of `dst` are made if missing.
    pub(in crate::fs::writeback) fn rename(&mut self, src: &str, dst: &str) -> Result<(), FsError> {
        let i = self.live(src).ok_or(FsError::NotFound)?;
        self.changed = true;
        let parent_of = |p: &str| p.rsplit_once('/').map(|(d, _)| d.to_string());
        match parent_of(src).and_then(|p| self.live(&p)) {
            Some(pi) => {
                if let Some(EKind::Dir(kids)) = self.nodes.get_mut(pi).map(|n| &mut n.kind) {
                    kids.retain(|&k| k != i);
                }
            }
            None => self.roots.retain(|&k| k != i),
        }
        let dparent = parent_of(dst);
        if let Some(d) = &dparent {
            self.dir(d)?;
        }
        let name = dst.rsplit('/').next().unwrap_or(dst);
        if let Some(n) = self.nodes.get_mut(i) {
            n.raw = name.as_bytes().to_vec();
        }
        match dparent.and_then(|d| self.live(&d)) {
            Some(pi) => {
                if let Some(EKind::Dir(kids)) = self.nodes.get_mut(pi).map(|n| &mut n.kind) {
                    kids.push(i);
                }
            }
            None => self.roots.push(i),
        }
        let under = format!("{src}/");
        let keys: Vec<String> = self
            .by_path
            .keys()
            .filter(|k| *k == src || k.starts_with(&under))
            .cloned()
            .collect();
        for k in keys {
            if let Some(v) = self.by_path.remove(&k) {
                let rest = k.get(src.len()..).unwrap_or_default();
                self.by_path.insert(format!("{dst}{rest}"), v);
            }
        }
        Ok(())
    }

    pub(in crate::fs::writeback) fn remove(&mut self, path: &str) {
        if let Some(i) = self.live(path) {
            if let Some(n) = self.nodes.get_mut(i) {
                n.removed = true;
                self.changed = true;
            }
        }
    }

    /// The tree to write (from `av`'s source, [`hpi::write_to`]): kept members copied in
    /// place, new content as data, staged files deferred.
    pub(in crate::fs::writeback) fn tree(
        &self,
        av: &ArchiveView,
        date: u32,
    ) -> Result<Vec<hpi::Node>, FsError> {
        self.build(&self.roots, av, date, 0)
    }

    pub(in crate::fs::writeback) fn build(
        &self,
        list: &[usize],
        av: &ArchiveView,
        date: u32,
        depth: usize,
    ) -> Result<Vec<hpi::Node>, FsError> {
        if depth > MAX_DEPTH {
            return Err(FsError::Commit(format!(
                "folders nested deeper than {MAX_DEPTH} levels"
            )));
        }
        let a = av.archive();
        let mut out = Vec::new();
        for n in list.iter().filter_map(|&i| self.nodes.get(i)) {
            if n.removed {
                continue;
            }
            let kind = match &n.kind {
                EKind::Dir(kids) => hpi::NodeKind::Dir(self.build(kids, av, date, depth + 1)?),
                EKind::New(b) => hpi::NodeKind::File(Member::Data {
                    bytes: b.clone(),
                    date,
                }),
                EKind::Staged(from, len) => {
                    let what = from.display().to_string();
                    let from = from.clone();
                    hpi::NodeKind::File(Member::Deferred(hpi::Deferred {
                        what,
                        date,
                        len: *len,
                        fetch: Arc::new(move || std::fs::read(&from)),
                    }))
                }
                EKind::Kept(i) => {
                    let Some(hpi::EntryKind::File(f)) = a.entries.get(*i).map(|e| &e.kind) else {
                        continue;
                    };
                    hpi::NodeKind::File(Member::InPlace(a.in_place(f)))
                }
            };
            out.push(hpi::Node {
                name: n.raw.clone(),
                kind,
            });
        }
        Ok(out)
    }
}
