//! The core's side of the watch ([`crate::fs::watch`]): the watch thread ([`run`]) turns
//! events into kernel invalidations and decodes changed binaries again, through the core.

use super::inode::NodeKind;
use super::{is_asset_name, Core, FileKind, Inval, ROOT};
use crate::fs::shared::lock;
use crate::fs::watch::{Todo, Watch};
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// How long after its event a changed binary is resolved again by the watch thread. A
/// commit through the mount resolves the binary it wrote itself, right after replacing it,
/// and invalidates the old generation before it answers the request that caused it; the
/// watch must not do that first (its invalidations could then arrive after the answer).
const SETTLE: Duration = Duration::from_millis(50);

/// A changed binary waiting for [`SETTLE`].
struct Recheck {
    due: Instant,
    dir: PathBuf,
    name: OsString,
    listing: bool,
}

/// The watch thread: turns events into invalidations and decodes changed binaries again.
/// Ends when the core is dropped.
pub(in crate::fs) fn run(watch: Arc<Watch>, core: Weak<Core>) {
    let mut later: Vec<Recheck> = Vec::new();
    loop {
        let now = Instant::now();
        let timeout = later
            .iter()
            .map(|r| r.due.saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::from_millis(500))
            .min(Duration::from_millis(500));
        let todo = watch.wait(timeout);
        let Some(core) = core.upgrade() else { return };
        let mut seen = HashSet::new();
        for t in todo {
            match t {
                Todo::All => core.invalidate_all(),
                Todo::Changed {
                    dir,
                    name,
                    listing,
                    writing,
                } => {
                    if !seen.insert((dir.clone(), name.clone(), listing, writing)) {
                        continue;
                    }
                    if !core.changed(&dir, &name, listing, writing) {
                        continue;
                    }
                    match later.iter_mut().find(|r| r.dir == dir && r.name == name) {
                        Some(r) => r.listing |= listing,
                        None => later.push(Recheck {
                            due: Instant::now() + SETTLE,
                            dir,
                            name,
                            listing,
                        }),
                    }
                }
            }
        }
        let now = Instant::now();
        let (due, rest): (Vec<Recheck>, Vec<Recheck>) =
            later.into_iter().partition(|r| r.due <= now);
        later = rest;
        for mut r in due {
            if core.committing(&r.dir.join(&r.name)) {
                r.due = now + SETTLE;
                later.push(r);
            } else {
                core.binary_changed(&r.dir, &r.name, r.listing);
            }
        }
    }
}

impl Core {
    /// Walks the inode table from the root to folder `rel`: its inode, if the kernel was
    /// given one.
    fn ino_of_dir(&self, rel: &Path) -> Option<u64> {
        let t = self.table();
        let mut ino = ROOT;
        for c in rel.components() {
            ino = t.child_of(ino, c.as_os_str())?;
        }
        Some(ino)
    }

    /// Invalidates what the kernel holds of `name` in game-folder folder `dir`. True when it
    /// is an asset binary, to be resolved again after [`SETTLE`] ([`Core::binary_changed`]).
    fn changed(&self, dir: &Path, name: &OsStr, listing: bool, writing: bool) -> bool {
        let Some(d) = self.ino_of_dir(dir) else {
            return false;
        };
        let child = self.table().child_of(d, name);
        let rel = dir.join(name);
        if child.is_some_and(|c| self.is_asset_node(c)) || self.has_asset(&rel) {
            // being written: decoded again once closed; until then requests `stat` it
            return !writing;
        }
        // only a name the kernel was given: invalidating a name locks its folder in the
        // kernel (uninterruptibly), so names it never saw (a commit's temporary files) are
        // not sent
        let entry = listing && child.is_some_and(|c| self.name_moved_on(c, &rel));
        self.send_changed(d, name, child, listing, entry);
        false
    }

    /// Sends the invalidations of a change of `name` in folder `d`: the folder's listing
    /// when `listing` (and the entry `name` first when `entry`), then the node `child` the
    /// name shows, if the kernel was given one.
    fn send_changed(&self, d: u64, name: &OsStr, child: Option<u64>, listing: bool, entry: bool) {
        if listing {
            if entry {
                self.send(Inval::Entry {
                    parent: d,
                    name: name.to_os_string(),
                });
            }
            self.send(Inval::Inode { ino: d });
        }
        if let Some(c) = child {
            self.send(Inval::Inode { ino: c });
        }
    }

    /// True when the name of real node `ino` (at `rel`) no longer leads to what the node
    /// shows: the path is gone, or is a binary now shown as a folder. Otherwise the kernel's
    /// entry stays: real nodes are served by path, and dropping the entry would make the
    /// kernel forget the node, so that a rename through the mount (whose events are read
    /// while the mount's own table is being updated) could change the file's inode number.
    /// A file replaced directly by another kind of file keeps its entry: its next `stat`
    /// fails once (`EIO`, the kernel sees the type change) and the kernel looks it up again.
    fn name_moved_on(&self, ino: u64, rel: &Path) -> bool {
        let kind = match self.table().get(ino).map(|n| &n.kind) {
            Some(NodeKind::Real { kind }) => *kind,
            _ => return true,
        };
        match self.lstat_rel(rel) {
            Ok(m) => {
                kind == FileKind::File
                    && m.is_file()
                    && rel
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(is_asset_name)
            }
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        }
    }

    /// Resolves binary `name` of folder `dir` again after a change (decoded if it changed,
    /// its old generation invalidated), and invalidates the folder's listing and, if it is
    /// not shown as the same folder any more, its entry.
    fn binary_changed(&self, dir: &Path, name: &OsStr, listing: bool) {
        let keep_entry = self.recheck_asset(&dir.join(name));
        let Some(d) = self.ino_of_dir(dir) else {
            return;
        };
        let child = self.table().child_of(d, name);
        let entry = !keep_entry && child.is_some();
        self.send_changed(d, name, child, listing || !keep_entry, entry);
    }

    /// True while a commit of asset `rel` holds its staging area.
    fn committing(&self, rel: &Path) -> bool {
        let slot = self.wb.get(rel);
        slot.is_some_and(|a| matches!(a.stage.try_lock(), Err(std::sync::TryLockError::WouldBlock)))
    }

    fn has_asset(&self, rel: &Path) -> bool {
        lock(&self.assets).contains_key(rel)
    }

    /// Resolves asset `rel` again after a change; a binary that is gone has its last
    /// generation invalidated. True when it is still shown as the same folder.
    fn recheck_asset(&self, rel: &Path) -> bool {
        match self.resolve(rel) {
            Ok(super::Resolved::Asset { .. }) => true,
            Ok(_) => {
                self.forget_asset(rel);
                false
            }
            Err(e) if super::is_not_found(&e) => {
                self.forget_asset(rel);
                false
            }
            Err(_) => false,
        }
    }

    /// Invalidates the generation last shown of asset `rel` (its binary is gone or is not
    /// an asset any more).
    fn forget_asset(&self, rel: &Path) {
        let slot = lock(&self.assets).get(rel).cloned();
        let Some(asset) = slot else { return };
        let (gen, root) = {
            let mut st = lock(&asset.state);
            if st.ident.is_none() {
                return;
            }
            st.ident = None;
            (st.gen, st.root)
        };
        self.invalidate_gen(gen, root);
    }

    /// Invalidates every name and inode the kernel was given, and resolves every decoded
    /// asset again (events were lost, or the mount falls back to polling).
    fn invalidate_all(&self) {
        log::warn!("change detection: invalidating every cached entry");
        let nodes = self.table().nodes();
        for (ino, parent, name) in nodes {
            if ino != ROOT && parent != super::inode::DETACHED {
                self.send(Inval::Entry { parent, name });
            }
            self.send(Inval::Inode { ino });
        }
        let assets: Vec<PathBuf> = lock(&self.assets).keys().cloned().collect();
        for rel in assets {
            self.recheck_asset(&rel);
        }
    }
}
