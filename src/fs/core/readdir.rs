//! Directory listings: directory handles (a snapshot of the entries taken at `opendir`,
//! again at a rewind), the entries of real folders (asset binaries shown as folders) and of
//! view folders (generated entries with the staged ones on top), and `readdirplus`.

use super::assets::Resolved;
use super::inode::{NodeKind, DETACHED};
use super::writeback_ops::WritebackOps;
use super::{is_asset_name, Core};
use super::{Attr, DirItem, FileKind};
use crate::fs::layout::Layout;
use crate::fs::shared::{join, lock};
use crate::fs::staging::merged_children;
use crate::fs::{fan_out, FsError};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Entries of one `readdir` page at most (a 32 KiB reply, what `getdents` asks for, holds
/// about 800 plain or 200 `readdirplus` entries; a short page only means the kernel asks for
/// the next one): the entries after a page are neither copied nor counted as lookups for each
/// page, so listing a folder page by page costs O(n), not O(n²).
pub(in crate::fs) const PAGE_MAX: usize = 1 << 10;
/// [`PAGE_MAX`] for `readdirplus`, whose entries are counted as lookups (and forgotten again
/// when they do not fit in the reply).
pub(in crate::fs) const PLUS_PAGE_MAX: usize = 1 << 8;

pub(in crate::fs) struct DirHandle {
    /// The directory listed (a rewind to offset 0 lists it again, as POSIX `rewinddir` asks).
    ino: u64,
    items: Mutex<Vec<DirItem>>,
    with_attrs: AtomicBool,
    /// Set once entries have been served.
    served: AtomicBool,
    /// Set while the entries are not listed yet (a real folder opened while the watch is
    /// authoritative is listed at its first `readdir`: the kernel answers most from its
    /// cache of the listing).
    unlisted: AtomicBool,
}

impl Core {
    /// Lists a directory (a snapshot taken now; offsets index into it).
    pub(in crate::fs) fn open_dir(&self, ino: u64) -> Result<u64, FsError> {
        let lazy = self.watching()
            && matches!(
                self.node(ino)?.kind,
                NodeKind::Real {
                    kind: FileKind::Dir
                }
            );
        let items = if lazy {
            Vec::new()
        } else {
            self.dir_items(ino)?
        };
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.table_mut().opened(ino);
        lock(&self.dirs).insert(
            fh,
            Arc::new(DirHandle {
                ino,
                items: Mutex::new(items),
                with_attrs: AtomicBool::new(false),
                served: AtomicBool::new(false),
                unlisted: AtomicBool::new(lazy),
            }),
        );
        Ok(fh)
    }

    /// The handle `fh`; when asked for offset 0 after entries were served (`rewinddir`), its
    /// snapshot is taken again.
    pub(in crate::fs) fn dir_handle_at(
        &self,
        fh: u64,
        offset: u64,
    ) -> Result<Arc<DirHandle>, FsError> {
        let d = self.dir_handle(fh)?;
        let unlisted = d.unlisted.swap(false, Ordering::AcqRel);
        if unlisted || (offset == 0 && d.served.load(Ordering::Acquire)) {
            let items = self.dir_items(d.ino)?;
            *lock(&d.items) = items;
            d.with_attrs.store(false, Ordering::Release);
        }
        d.served.store(true, Ordering::Release);
        Ok(d)
    }

    pub(in crate::fs) fn dir_items(&self, ino: u64) -> Result<Vec<DirItem>, FsError> {
        let node = self.node(ino)?;
        let dotdot = if node.parent == DETACHED {
            ino
        } else {
            node.parent
        };
        let mut items = DirItem::dots(ino, dotdot);
        match node.kind {
            NodeKind::Status { .. } => return Err(FsError::NotDir),
            NodeKind::Real { kind } => {
                if kind != FileKind::Dir {
                    return Err(FsError::NotDir);
                }
                let rel = self.rel_path(ino)?;
                items.extend(self.list_real(ino, &rel)?);
            }
            NodeKind::AssetRoot => {
                let (rel, gen, layout, _) = self.root_asset(ino)?;
                self.ahead.entered(&rel);
                items.extend(self.list_view(ino, ino, gen, "", &layout));
            }
            NodeKind::ViewFile { .. } => return Err(FsError::NotDir),
            NodeKind::ViewDir { root, vpath } => {
                let (_, gen, layout, _) = self.folder(root, &vpath)?;
                items.extend(self.list_view(ino, root, gen, &vpath, &layout));
                // an archive member that found no room to be decoded now
                if !layout.pending_for(&vpath, false).is_empty() {
                    return Err(FsError::NoRoom);
                }
            }
        }
        Ok(items)
    }

    pub(in crate::fs) fn list_real(&self, ino: u64, rel: &Path) -> Result<Vec<DirItem>, FsError> {
        let mut raw = Vec::new();
        for ent in self.read_dir_rel(rel)? {
            let ent = ent?;
            let kind = ent.file_type().map(FileKind::of).unwrap_or(FileKind::File);
            raw.push((ent.file_name(), kind));
        }
        for n in self.new_assets_in(rel) {
            if !raw.iter().any(|(m, _)| *m == n) {
                raw.push((n, FileKind::File));
            }
        }
        raw.sort_by(|a, b| a.0.cmp(&b.0));
        // Asset binaries are decoded (in parallel) to know whether they are directories.
        let resolved: Vec<Option<Result<Resolved, FsError>>> = fan_out(&raw, |(name, kind)| {
            let asset = name.to_str().is_some_and(is_asset_name);
            (asset && *kind == FileKind::File).then(|| self.resolve(&rel.join(name)))
        });
        let mut items = Vec::with_capacity(raw.len());
        let mut roots = Vec::new();
        {
            let mut t = self.table_mut();
            for ((name, kind), res) in raw.into_iter().zip(resolved) {
                let item = match res {
                    Some(Err(_)) => continue, // vanished meanwhile
                    Some(Ok(Resolved::Asset { .. })) => {
                        let i = t.child(
                            ino,
                            &name,
                            |k| matches!(k, NodeKind::AssetRoot),
                            NodeKind::AssetRoot,
                            None,
                        );
                        roots.push((rel.join(&name), i));
                        DirItem {
                            ino: i,
                            name,
                            kind: FileKind::Dir,
                            attr: None,
                        }
                    }
                    _ => {
                        let i = t.child(
                            ino,
                            &name,
                            |k| matches!(k, NodeKind::Real { kind: k } if *k == kind),
                            NodeKind::Real { kind },
                            None,
                        );
                        DirItem {
                            ino: i,
                            name,
                            kind,
                            attr: None,
                        }
                    }
                };
                items.push(item);
            }
        }
        self.ahead.listed(rel, super::ahead::names_of(&roots));
        for (rel, i) in roots {
            lock(&self.slot(&rel).state).root = Some(i);
        }
        Ok(items)
    }

    pub(in crate::fs) fn list_view(
        &self,
        ino: u64,
        root: u64,
        gen: u64,
        dir: &str,
        layout: &Layout,
    ) -> Vec<DirItem> {
        let children = match self.rel_path(root) {
            Ok(rel) => {
                // parts listed here are decoded (in parallel) to know whether they are folders
                self.expand(&rel, layout, dir, true);
                let staged = self.staging(&rel);
                let g = lock(&staged.stage);
                // a listing may release a folder being filled (only where files are staged)
                let _m = g
                    .as_ref()
                    .is_some_and(|s| s.has_files())
                    .then(|| self.mutating());
                crate::fs::staging::listed(g.as_ref(), dir);
                let mut kids = merged_children(g.as_ref(), Some(layout), dir).unwrap_or_default();
                // a staged name no build reads with no generated counterpart (left by an
                // older mount) is not listed: open and stat never serve it either
                kids.retain(|(n, d)| {
                    let p = join(dir, n);
                    layout.is_dir(&p).is_some() || Self::accepts_at(&rel, &p, !d)
                });
                kids
            }
            Err(_) => Vec::new(),
        };
        let mut t = self.table_mut();
        children
            .iter()
            .map(|(name, is_dir)| {
                let vpath = join(dir, name);
                let i = Self::view_child(&mut t, ino, root, gen, name, &vpath, *is_dir);
                DirItem {
                    ino: i,
                    name: name.into(),
                    kind: if *is_dir {
                        FileKind::Dir
                    } else {
                        FileKind::File
                    },
                    attr: None,
                }
            })
            .collect()
    }

    pub(in crate::fs) fn dir_handle(&self, fh: u64) -> Result<Arc<DirHandle>, FsError> {
        lock(&self.dirs)
            .get(&fh)
            .cloned()
            .ok_or(FsError::BadHandle(fh))
    }

    /// Entries from index `offset` on, each with the offset of the entry after it.
    pub(in crate::fs) fn list_from(
        &self,
        fh: u64,
        offset: u64,
    ) -> Result<Vec<(u64, DirItem)>, FsError> {
        let d = self.dir_handle_at(fh, offset)?;
        let items = lock(&d.items);
        Ok(DirItem::numbered_from(&items, offset, PAGE_MAX))
    }

    /// Entries from index `offset` on, with attributes (generated files are rendered, in
    /// parallel, to know their sizes), each counted as a lookup but `.` and `..`. Entries
    /// whose attributes fail are left out.
    pub(in crate::fs) fn list_plus_from(
        &self,
        fh: u64,
        offset: u64,
    ) -> Result<Vec<(u64, DirItem)>, FsError> {
        let d = self.dir_handle_at(fh, offset)?;
        if !d.with_attrs.load(Ordering::Acquire) {
            // the game folder's pending changes are read once for all the entries
            let batch = self.watch.as_ref().map(|w| (w, w.batch()));
            let snapshot: Vec<DirItem> = lock(&d.items).clone();
            let attrs: Vec<Option<Attr>> = fan_out(&snapshot, |it| {
                // (and not once per entry on the threads it fans out to)
                let _joined = batch.as_ref().map(|(w, b)| w.joined(b));
                if it.name == "." || it.name == ".." {
                    // the kernel ignores the attributes of these two (fuse_direntplus_link);
                    // computing them costs a listing of the parent per folder (`..` of each
                    // of a thousand subfolders is the same big folder)
                    return Some(Attr::dot(it.ino));
                }
                match self.attr_of(it.ino, None) {
                    // forgotten since the listing was taken: looked up again
                    Err(FsError::UnknownInode(_)) => self.lookup_node(d.ino, &it.name).ok(),
                    r => r.ok(),
                }
            });
            let mut items = lock(&d.items);
            for (it, a) in items.iter_mut().zip(attrs) {
                if let Some(a) = &a {
                    it.ino = a.ino;
                }
                it.attr = a;
            }
            d.with_attrs.store(true, Ordering::Release);
        }
        let mut offset = offset;
        loop {
            let items = DirItem::numbered_from(&lock(&d.items), offset, PLUS_PAGE_MAX);
            let Some(last) = items.last().map(|(next, _)| *next) else {
                return Ok(Vec::new());
            };
            // every entry but `.` and `..` counts as a lookup (the adapter forgets those that
            // do not fit in the reply)
            let items = items.into_iter().filter(|(_, it)| it.attr.is_some());
            let page = DirItem::counted(
                items,
                |ino| self.table_mut().remember(ino),
                |name| self.lookup_node(d.ino, name).and_then(|a| self.entry(a)),
            );
            // an empty page ends the listing: one whose entries all failed is skipped
            if !page.is_empty() {
                return Ok(page);
            }
            offset = last;
        }
    }

    /// Closes a directory handle.
    pub(in crate::fs) fn release_dir(&self, fh: u64) -> Result<(), FsError> {
        let d = lock(&self.dirs).remove(&fh).ok_or(FsError::BadHandle(fh))?;
        self.table_mut().closed(d.ino);
        self.save_index_now_and_then();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::core::{MountOptions, ROOT};
    use crate::fs::Caller;
    use crate::fs::FsOps;
    use std::ffi::OsStr;
    use std::time::Duration;

    /// A listing that found nothing staged remembers it; a file staged after it (a save
    /// opened on a generated frame) shows in the attributes and the next listing.
    #[test]
    fn a_file_staged_after_a_listing_found_none_is_listed() {
        let game = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(game.path().join("anims")).unwrap();
        let gaf = crate::formats::gaf::write(&crate::sample::animated_gaf()).unwrap();
        std::fs::write(game.path().join("anims/fx.gaf"), gaf).unwrap();
        let opts = MountOptions {
            state_dir: Some(state.path().to_path_buf()),
            ..MountOptions::default()
        };
        let core = Core::new(game.path(), opts, None).unwrap();
        let mut dir = ROOT;
        for c in ["anims", "fx.gaf", "pulse"] {
            dir = core.lookup(Caller::root(), dir, OsStr::new(c)).unwrap().ino;
        }
        let size_in_listing = |core: &Core| {
            let fh = core.opendir(Caller::root(), dir).unwrap();
            let items = core.readdirplus(Caller::root(), fh, 0).unwrap();
            core.releasedir(Caller::root(), fh).unwrap();
            items
                .into_iter()
                .find(|(_, it)| it.name == "0.png")
                .and_then(|(_, it)| it.attr)
                .map(|a| a.size)
        };
        let generated = size_in_listing(&core).expect("0.png listed");
        assert!(generated > 3);
        let png = core
            .lookup(Caller::root(), dir, OsStr::new("0.png"))
            .unwrap()
            .ino;
        let o = core
            .open(Caller::root(), png, libc::O_WRONLY | libc::O_TRUNC)
            .unwrap();
        assert_eq!(core.write(Caller::root(), o.fh, 0, b"abc").unwrap(), 3);
        assert_eq!(
            core.getattr(Caller::root(), png, None).unwrap().size,
            3,
            "the staged file"
        );
        assert_eq!(size_in_listing(&core), Some(3));
        let r = core.open(Caller::root(), png, libc::O_RDONLY).unwrap();
        assert_eq!(
            core.read(Caller::root(), r.fh, 0, 100).unwrap(),
            b"abc",
            "a read opens the staged file"
        );
        core.release(Caller::root(), r.fh).unwrap();
        let _ = core.release(Caller::root(), o.fh); // (a commit of a file that is no PNG fails)
    }

    /// A commit holds its asset's stage lock while the codecs use rayon's global pool; a
    /// readdirplus of that asset's folder waits for the same lock. Before readdir fanned out on
    /// plain threads, its waiting tasks took the pool's workers and both sides hung.
    #[test]
    pub(in crate::fs) fn readdirplus_waiting_on_a_commit_does_not_starve_the_codecs() {
        use rayon::prelude::*;
        use std::sync::mpsc;
        // as on a 2-core machine (ignored if the pool was built already)
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build_global();
        let game = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(game.path().join("anims")).unwrap();
        let gaf = crate::formats::gaf::write(&crate::sample::animated_gaf()).unwrap();
        std::fs::write(game.path().join("anims/fx.gaf"), gaf).unwrap();
        let core = Arc::new(Core::new(game.path(), MountOptions::default(), None).unwrap());
        let mut dir = ROOT;
        for c in ["anims", "fx.gaf", "pulse"] {
            dir = core.lookup(Caller::root(), dir, OsStr::new(c)).unwrap().ino;
        }
        let fh = core.opendir(Caller::root(), dir).unwrap();
        let staged = core.staging(Path::new("anims/fx.gaf"));
        let commit = lock(&staged.stage); // a commit in progress
        let (tx, rx) = mpsc::channel();
        let c2 = core.clone();
        let lister =
            std::thread::spawn(move || c2.readdirplus(Caller::root(), fh, 0).map(|v| v.len()));
        std::thread::sleep(Duration::from_millis(300));
        std::thread::spawn(move || {
            let sum: u64 = (0..10_000u64).into_par_iter().map(|x| x * 2).sum();
            let _ = tx.send(sum);
        });
        let done = rx.recv_timeout(Duration::from_secs(20));
        drop(commit);
        assert_eq!(done, Ok(99_990_000), "the codecs' pool starved");
        let listed = lister.join().unwrap().unwrap();
        assert!(listed >= 6, "{listed} entries");
    }

    /// A folder bigger than a page is served in pages of at most `PAGE_MAX` (`readdir`) and
    /// `PLUS_PAGE_MAX` (`readdirplus`) entries, each entry once, offsets continuing.
    #[test]
    fn a_big_folder_is_served_in_bounded_pages_every_entry_once() {
        let game = tempfile::tempdir().unwrap();
        let n = PAGE_MAX * 2 + 7;
        for i in 0..n {
            std::fs::write(game.path().join(format!("f{i:05}.txt")), b"x").unwrap();
        }
        let core = Core::new(game.path(), MountOptions::default(), None).unwrap();
        for plus in [false, true] {
            let fh = core.opendir(Caller::root(), ROOT).unwrap();
            let (mut off, mut names) = (0, Vec::new());
            loop {
                let page = if plus {
                    core.readdirplus(Caller::root(), fh, off).unwrap()
                } else {
                    core.readdir(Caller::root(), fh, off).unwrap()
                };
                let Some((last, _)) = page.last() else { break };
                assert!(page.len() <= if plus { PLUS_PAGE_MAX } else { PAGE_MAX });
                off = *last;
                names.extend(page.into_iter().map(|(_, it)| it.name));
            }
            core.releasedir(Caller::root(), fh).unwrap();
            let files: Vec<_> = names.iter().filter(|x| *x != "." && *x != "..").collect();
            let unique: std::collections::HashSet<_> = files.iter().collect();
            assert_eq!((files.len(), unique.len()), (n, n), "plus: {plus}");
        }
    }
}
