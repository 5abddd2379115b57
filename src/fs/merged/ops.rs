//! [`FsOps`] for the merged view: read-only, every entry versioned (a changed source makes
//! the old inodes answer `ESTALE`), extended attributes naming each entry's sources, and
//! the kernel's lookup counts (a forgotten inode leaves the map of inodes).

use super::{lock, other_xattr, Content, Handle, MergedCore, NodeId, SOURCES_XATTR, SOURCE_XATTR};
use crate::fs::core::{Attr, DirItem, Inval, Opened, PAGE_MAX, PLUS_PAGE_MAX};
use crate::fs::ops::FsOps;
use crate::fs::stage::Ident;
use crate::fs::{Caller, FsError, StatFs};
use std::ffi::OsStr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

impl MergedCore {
    /// Looks `name` up in `parent` (not counted).
    fn lookup_entry(&self, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        let pid = self.id(parent)?;
        let name = name.to_str().ok_or(FsError::NotFound)?;
        match &pid {
            NodeId::Dir(pkey) => {
                let snap = self.snapshot();
                let p = Self::node(&snap, pkey)?;
                if !snap.index.is_dir(p) {
                    return Err(FsError::NotDir);
                }
                let c = snap.index.child(p, name).ok_or(FsError::NotFound)?;
                // Only the shown spelling: another spelling would be a second name of the
                // same folder inode, which the kernel refuses (directory aliasing).
                if snap.index.name(c) != name {
                    return Err(FsError::NotFound);
                }
                Ok(self.index_node(&snap, c)?.1)
            }
            NodeId::File(..) => Err(FsError::NotDir),
            NodeId::Asset {
                key,
                ver,
                vpath,
                dir,
            } => {
                if !dir {
                    return Err(FsError::NotDir);
                }
                let snap = self.snapshot();
                let (layout, _) = self.current_layout(&snap, key, *ver)?;
                let vp = crate::fs::shared::join(vpath, name);
                let d = layout.is_dir(&vp).ok_or(FsError::NotFound)?;
                let id = NodeId::Asset {
                    key: key.clone(),
                    ver: *ver,
                    vpath: vp,
                    dir: d,
                };
                let ino = self.ino(id.clone());
                self.attr_of(ino, &id)
            }
        }
    }

    /// What an open of file `ino` reads: the loose file (opened, its identity checked), or
    /// the bytes of a member or a generated file (from the cache, else made).
    /// `EACCES` unless the caller of the request may search every folder of the game folder
    /// from its top down to where `c` is read from (an archive: the top itself): what the
    /// view serves never reaches past a folder its source closes to the caller, whatever
    /// the merged folders show.
    fn may_reach(&self, caller: Caller, c: &Content) -> Result<(), FsError> {
        let dir = match c {
            Content::Loose { rel, .. } => {
                let p = self.game_dir.join(rel);
                p.parent()
                    .map_or(self.game_dir.clone(), std::path::Path::to_path_buf)
            }
            Content::Member { .. } => self.game_dir.clone(),
        };
        if crate::fs::caller::may_search(caller, &self.game_dir, &dir) {
            Ok(())
        } else {
            Err(std::io::Error::from_raw_os_error(libc::EACCES).into())
        }
    }

    fn handle_of(&self, caller: Caller, ino: u64) -> Result<Handle, FsError> {
        let id = self.id(ino)?;
        let snap = self.snapshot();
        Ok(match &id {
            NodeId::Dir(_) | NodeId::Asset { dir: true, .. } => return Err(FsError::IsDir),
            NodeId::File(key, ver) => {
                let n = Self::node(&snap, key)?;
                let (now, c) = self.content(&snap, n)?;
                if now != *ver {
                    return Err(FsError::Stale);
                }
                self.may_reach(caller, &c)?;
                match &c {
                    Content::Loose { rel, meta } => {
                        let f = super::open_game_file(&self.game_dir, std::path::Path::new(rel))?;
                        if Ident::of(&f.metadata()?) != Ident::of(meta) {
                            return Err(FsError::Stale);
                        }
                        Handle::File(f)
                    }
                    Content::Member { .. } => {
                        let b = self.bytes_of(key, *ver, &c)?;
                        let a = self.attr(ino, c.meta(), false, b.len() as u64, 1);
                        Handle::Bytes(b, a)
                    }
                }
            }
            NodeId::Asset {
                key, ver, vpath, ..
            } => {
                let (layout, c) = self.current_layout(&snap, key, *ver)?;
                self.may_reach(caller, &c)?;
                // a size only the persisted index gave is checked by rendering now
                let listed = match layout.verified_size(vpath) {
                    None => layout.size(vpath),
                    Some(_) => None,
                };
                let b = self.render(key, *ver, &layout, vpath, &snap)?;
                if listed.is_some_and(|s| s != b.len() as u64) {
                    log::warn!(
                        "{key}/{vpath}: {} bytes, not the {} the index recorded",
                        b.len(),
                        listed.unwrap_or(0)
                    );
                    self.send_inval(Inval::Inode { ino });
                }
                let a = self.attr(ino, c.meta(), false, b.len() as u64, 1);
                Handle::Bytes(b, a)
            }
        })
    }
}

impl FsOps for MergedCore {
    fn ttl(&self) -> Duration {
        if self.watching() {
            crate::fs::watch::WATCH_TTL
        } else {
            self.opts.ttl
        }
    }

    fn cache_dirs(&self) -> bool {
        self.watching()
    }

    /// (read-only, with `user.tafs.source*` of its own, and no ACLs: `ENODATA`)
    fn kernel_acls(&self) -> bool {
        true
    }

    fn lookup(&self, _c: Caller, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        // an inode forgotten between being found and being counted is looked up again
        for _ in 0..3 {
            let a = self.lookup_entry(parent, name)?;
            if lock(&self.inodes).remember(a.ino) {
                return Ok(a);
            }
        }
        Err(FsError::Stale)
    }

    fn forget(&self, ino: u64, n: u64) {
        lock(&self.inodes).forget(ino, n);
    }

    fn inodes(&self) -> usize {
        lock(&self.inodes).by_ino.len()
    }

    fn getattr(&self, _c: Caller, ino: u64, fh: Option<u64>) -> Result<Attr, FsError> {
        if let Some(fh) = fh {
            let h = lock(&self.handles).get(&fh).cloned();
            if let Some(Handle::Bytes(_, a)) = h.as_deref() {
                if a.ino == ino {
                    return Ok(*a);
                }
            }
        }
        let id = self.id(ino)?;
        self.attr_of(ino, &id)
    }

    fn readlink(&self, _c: Caller, _ino: u64) -> Result<Vec<u8>, FsError> {
        Err(FsError::Invalid("not a symbolic link".into()))
    }

    fn open(&self, c: Caller, ino: u64, flags: i32) -> Result<Opened, FsError> {
        if flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0 {
            return Err(FsError::ReadOnly("the merged game view is read-only"));
        }
        let handle = self.handle_of(c, ino)?;
        let keep_cache = matches!(handle, Handle::Bytes(..));
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, Arc::new(handle));
        Ok(Opened { fh, keep_cache })
    }

    fn read(&self, _c: Caller, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
        let h = lock(&self.handles)
            .get(&fh)
            .cloned()
            .ok_or(FsError::BadHandle(fh))?;
        h.read(offset, size)
    }

    /// The merged view is read-only and versions its inodes (a changed source is another
    /// inode), so the kernel may keep the pages of files it opened itself: each belongs to
    /// one version of one file.
    fn open_less(&self) -> bool {
        true
    }

    fn read_ino(&self, c: Caller, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
        self.handle_of(c, ino)?.read(offset, size)
    }

    fn release(&self, _c: Caller, fh: u64) -> Result<(), FsError> {
        lock(&self.handles)
            .remove(&fh)
            .map(|_| ())
            .ok_or(FsError::BadHandle(fh))
    }

    fn finish(&self) {
        self.save_index();
        log::info!("{}", self.index_status().trim_end());
    }

    fn opendir(&self, _c: Caller, ino: u64) -> Result<u64, FsError> {
        let id = self.id(ino)?;
        let items = self.list(ino, &id)?;
        self.save_index_now_and_then();
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        Ok(self.dirs.open(fh, items))
    }

    fn readdir(&self, _c: Caller, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        self.dirs.page(fh, offset, PAGE_MAX)
    }

    fn readdirplus(&self, c: Caller, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        let items = self.dirs.page(fh, offset, PLUS_PAGE_MAX)?;
        // the folder listed: the inode of its `.` (the kernel holds it while it is open)
        let dir = self.dirs.dir_ino(fh)?;
        let with_attrs = crate::fs::fan_out(&items, |(next, it)| {
            let mut it = it.clone();
            if it.name == "." || it.name == ".." {
                // ignored by the kernel; `..` of every subfolder would count the parent's
                // children once per subfolder
                it.attr = Some(Attr::dot(it.ino));
            } else if it.attr.is_none() {
                match self.id(it.ino) {
                    Ok(id) => it.attr = Some(self.attr_of(it.ino, &id).ok()?),
                    // forgotten since the listing was taken: looked up again
                    Err(_) => {
                        let a = self.lookup_entry(dir, &it.name).ok()?;
                        it.ino = a.ino;
                        it.attr = Some(a);
                    }
                }
            }
            Some((*next, it))
        });
        // every entry but `.` and `..` counts as a lookup (see `FsOps::forget`)
        Ok(DirItem::counted(
            with_attrs.into_iter().flatten(),
            |ino| lock(&self.inodes).remember(ino),
            |name| self.lookup(c, dir, name),
        ))
    }

    fn releasedir(&self, _c: Caller, fh: u64) -> Result<(), FsError> {
        self.dirs.release(fh)
    }

    fn statfs(&self, _c: Caller) -> Result<StatFs, FsError> {
        Ok(crate::sys::statvfs(&self.game_dir)?)
    }

    fn access(&self, c: Caller, ino: u64, mask: i32) -> Result<(), FsError> {
        if mask & libc::W_OK != 0 {
            return Err(FsError::ReadOnly("the merged game view is read-only"));
        }
        self.getattr(c, ino, None).map(|_| ())
    }

    fn has_xattrs(&self) -> bool {
        true
    }

    fn getxattr(&self, _c: Caller, ino: u64, name: &OsStr) -> Result<Vec<u8>, FsError> {
        let id = self.id(ino)?;
        let all = self.describe(&id)?;
        if name == SOURCE_XATTR {
            Ok(all.into_iter().next().unwrap_or_default().into_bytes())
        } else if name == SOURCES_XATTR {
            Ok(all
                .iter()
                .map(|s| format!("{s}\n"))
                .collect::<String>()
                .into_bytes())
        } else {
            Err(other_xattr(name))
        }
    }

    fn listxattr(&self, _c: Caller, ino: u64) -> Result<Vec<u8>, FsError> {
        self.id(ino)?;
        Ok(format!("{SOURCE_XATTR}\0{SOURCES_XATTR}\0").into_bytes())
    }
}
