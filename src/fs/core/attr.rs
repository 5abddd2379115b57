//! Attributes: the kinds and attributes of nodes as `stat` reports them, how each kind of
//! node gets its attributes (real files from the game folder, generated files and folders
//! from the binary, staged files from the staging area, nodes no longer at their path from a
//! handle that holds them open), `getattr` and `access`.

use super::assets::Outcome;
use super::handles::Handle;
use super::inode::{NodeKind, DETACHED};
use super::writeback_ops::WritebackOps;
use super::{is_asset_name, AssetAt, Attr, Core, FileKind, MountOptions};
use crate::fs::layout::Layout;
use crate::fs::shared::{fingerprint, folder_fingerprint, lock, time};
use crate::fs::stage::Ident;
use crate::fs::staging::merged_children;
use crate::fs::staging::times::{parts, Before};
use crate::fs::FsError;
use std::fs::{self, Metadata};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// The owner shown for a file described by `m`: the mount's `uid`/`gid` options, else its own.
pub(in crate::fs) fn owner_of(opts: &MountOptions, m: &Metadata) -> (u32, u32) {
    (opts.uid.unwrap_or(m.uid()), opts.gid.unwrap_or(m.gid()))
}

impl Core {
    pub(in crate::fs) fn owner(&self, m: &Metadata) -> (u32, u32) {
        owner_of(&self.opts, m)
    }

    pub(in crate::fs) fn write_bits(&self, mode: u32) -> u32 {
        if self.opts.read_only {
            0
        } else {
            mode & 0o222
        }
    }

    pub(in crate::fs) fn real_attr(&self, ino: u64, rel: &Path, m: &Metadata) -> Attr {
        let kind = FileKind::of(m.file_type());
        let mut nlink = m.nlink() as u32;
        if kind == FileKind::Dir {
            nlink = nlink.saturating_add(self.asset_children(rel));
        }
        let mut perm = m.mode() & 0o7777;
        if self.opts.read_only {
            perm &= !0o222;
        }
        Attr::of_meta(ino, m, kind, perm, nlink, self.owner(m))
    }

    /// How many entries of real directory `rel` are shown as directories although they are
    /// files (asset binaries not known to be broken).
    /// The folder is read without changing its access time (a `stat` must not change it).
    pub(in crate::fs) fn asset_children(&self, rel: &Path) -> u32 {
        let listed = self.parent_fd(rel).and_then(|(dir, name)| {
            let c = std::ffi::CString::new(name.into_encoded_bytes())
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
            crate::fs::watch::list_quietly(dir.as_fd(), &c)
        });
        let Ok(entries) = listed else {
            return 0;
        };
        let mut n = 0u32;
        for (name, kind) in entries {
            let is_asset = name.to_str().is_some_and(is_asset_name);
            if !is_asset || kind != libc::S_IFREG {
                continue;
            }
            let child = rel.join(&name);
            let slot = lock(&self.assets).get(&child).cloned();
            // An asset being decoded right now (lock busy) counts as a directory.
            let broken = slot.is_some_and(|a| {
                a.state
                    .try_lock()
                    .is_ok_and(|st| matches!(st.outcome, Outcome::Broken))
            });
            if !broken {
                n += 1;
            }
        }
        n
    }

    pub(in crate::fs) fn gen_attr(
        &self,
        ino: u64,
        m: &Metadata,
        dir: bool,
        size: u64,
        subdirs: u32,
    ) -> Attr {
        let r = m.mode() & 0o444;
        let w = self.write_bits(m.mode());
        let perm = if dir { r | w | (r >> 2) } else { r | w };
        let nlink = if dir { 2 + subdirs } else { 1 };
        Attr::generated(ino, m, dir, size, perm, nlink, self.owner(m))
    }

    /// Attributes of a view node (or asset root when `vpath` is empty).
    pub(in crate::fs) fn view_attr(
        &self,
        ino: u64,
        at: AssetAt,
        vpath: &str,
        dir: bool,
    ) -> Result<Attr, FsError> {
        let AssetAt {
            rel,
            gen,
            layout,
            meta,
        } = at;
        let mut a = if dir {
            self.asset_dir_attr(ino, rel, gen, layout, meta, vpath)
        } else {
            let size = self.size_of(rel, gen, layout, vpath)?;
            let mut a = self.gen_attr(ino, meta, false, size, 0);
            a.mtime = self.kept_mtime(rel, meta, vpath, false, || {
                let b = self.render(rel, gen, layout, vpath).ok()?;
                Some(crate::fs::shared::fingerprint(&b))
            });
            self.with_member_shown(&mut a, rel, meta, vpath, false);
            a
        };
        // no write bit where writes are refused
        if !Self::accepts_at(rel, vpath, !dir) {
            a.perm &= !0o222;
        }
        Ok(a)
    }
    pub(in crate::fs) fn staged_attr(&self, ino: u64, m: &Metadata, subdirs: u32) -> Attr {
        let dir = m.is_dir();
        let kind = if dir { FileKind::Dir } else { FileKind::File };
        let nlink = if dir { 2 + subdirs } else { 1 };
        Attr {
            rdev: 0,
            blksize: 4096,
            ..Attr::of_meta(ino, m, kind, m.mode() & 0o777, nlink, self.owner(m))
        }
    }

    /// Attributes of a folder of an asset directory (staged folder or generated).
    pub(in crate::fs) fn asset_dir_attr(
        &self,
        ino: u64,
        rel: &Path,
        gen: u64,
        layout: &Layout,
        meta: &Metadata,
        vpath: &str,
    ) -> Attr {
        let staged = self.staging(rel);
        let ((n, subdirs), staged) = {
            let g = lock(&staged.stage);
            // kept between requests while nothing changes (O(1) while a folder is filled)
            let counts = self.dircounts.counts(ino, gen, || {
                merged_children(g.as_ref(), Some(layout), vpath).unwrap_or_default()
            });
            let staged = g
                .as_ref()
                .filter(|s| s.active())
                .and_then(|s| fs::metadata(s.path(vpath)).ok());
            (counts, staged)
        };
        match staged {
            Some(m) if m.is_dir() => self.staged_attr(ino, &m, subdirs),
            _ => {
                let mut a = self.gen_attr(ino, meta, true, 4096.max(n * 32), subdirs);
                a.mtime = self.kept_mtime(rel, meta, vpath, true, || {
                    let names = layout.children(vpath)?;
                    Some(crate::fs::shared::folder_fingerprint(&names))
                });
                self.with_member_shown(&mut a, rel, meta, vpath, true);
                a
            }
        }
    }

    /// Attributes of inode `ino`, no longer at its path, from a handle that has it open: a
    /// real or staged file's own file, or the generated bytes it was opened with; `ESTALE`
    /// when none does.
    pub(in crate::fs) fn open_file_attr(&self, ino: u64) -> Result<Attr, FsError> {
        let handles: Vec<Arc<Handle>> = lock(&self.handles).values().cloned().collect();
        for h in handles {
            match &*h {
                Handle::Real { file, ino: i, .. } if *i == ino => {
                    return Ok(self.real_attr(ino, Path::new(""), &file.metadata()?));
                }
                Handle::Staged { file, ino: i, .. } if *i == ino => {
                    return Ok(self.staged_attr(ino, &file.metadata()?, 0));
                }
                Handle::Generated(_, attr) if attr.ino == ino => return Ok(*attr),
                _ => {}
            }
        }
        Err(FsError::Stale)
    }

    /// Attributes of `ino` (from the open handle `fh` when given and real).
    pub(in crate::fs) fn attr_of(&self, ino: u64, fh: Option<u64>) -> Result<Attr, FsError> {
        if let Some(fh) = fh {
            let h = lock(&self.handles).get(&fh).cloned();
            match h.as_deref() {
                Some(Handle::Real { file, .. }) => {
                    let m = file.metadata()?;
                    let rel = self.rel_path(ino).unwrap_or_default();
                    return Ok(self.real_attr(ino, &rel, &m));
                }
                // fstat of an open generated file: the version it was opened with.
                Some(Handle::Generated(_, attr)) if attr.ino == ino => return Ok(*attr),
                Some(Handle::Staged { file, .. }) => {
                    return Ok(self.staged_attr(ino, &file.metadata()?, 0));
                }
                _ => {}
            }
        }
        let node = self.node(ino)?;
        match node.kind {
            NodeKind::Real { kind } => {
                let found = self.rel_path(ino).ok().and_then(|rel| {
                    let m = self.lstat_rel(&rel).ok()?;
                    (FileKind::of(m.file_type()) == kind).then_some((rel, m))
                });
                match found {
                    Some((rel, m)) => {
                        // a node first given by a listing: known for its backing file from
                        // now on, so a later `link` names the same inode
                        let id = (m.dev(), m.ino());
                        if kind != FileKind::Dir && self.table().file_node(id).is_none() {
                            self.table_mut().set_file(ino, id);
                        }
                        Ok(self.real_attr(ino, &rel, &m))
                    }
                    // unlinked or replaced: fstat of a file still open answers from it
                    None => self.open_file_attr(ino),
                }
            }
            NodeKind::AssetRoot => {
                let (rel, gen, layout, meta) = self.root_asset(ino)?;
                self.view_attr(ino, AssetAt::of(&rel, gen, &layout, &meta), "", true)
            }
            NodeKind::Status { root } => self.status_attr(ino, root),
            NodeKind::ViewDir { root, vpath } => {
                // folders follow the asset across generations
                let (rel, gen, layout, meta) = self.folder(root, &vpath)?;
                self.view_attr(ino, AssetAt::of(&rel, gen, &layout, &meta), &vpath, true)
            }
            NodeKind::ViewFile { root, gen, vpath } => {
                if node.parent == DETACHED {
                    // renamed over or removed: the file it still is for whoever holds it open
                    // (fstat reaches here without a handle), never the one at its old path
                    return self.open_file_attr(ino);
                }
                let rel = self.rel_path(root)?;
                {
                    let staged = self.staging(&rel);
                    let g = lock(&staged.stage);
                    // under the stage lock, so the staged file is the one this inode names
                    if !self.stands_at(ino, &vpath) {
                        drop(g);
                        return self.open_file_attr(ino);
                    }
                    // a file no build reads is always the generated one
                    let staged = g.as_ref().filter(|_| Self::accepts_at(&rel, &vpath, true));
                    if let Some(m) = staged.and_then(|s| s.lstat(&vpath)) {
                        return Ok(self.staged_attr(ino, &m, 0));
                    }
                }
                match self.current(root, gen) {
                    Ok((rel, layout, meta)) => {
                        self.view_attr(ino, AssetAt::of(&rel, gen, &layout, &meta), &vpath, false)
                    }
                    // the binary changed meanwhile: what an open descriptor still reads
                    Err(FsError::Stale) => self.open_file_attr(ino),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// `access(2)`: existence, and `EROFS` for write access where writes are refused.
    pub(in crate::fs) fn check_access(&self, ino: u64, mask: i32) -> Result<(), FsError> {
        let node = self.node(ino)?;
        if mask & libc::W_OK != 0 {
            if self.opts.read_only {
                return Err(FsError::ReadOnly("mounted read-only"));
            }
            match node.kind {
                NodeKind::Real { .. } => {}
                NodeKind::AssetRoot | NodeKind::ViewDir { .. } | NodeKind::ViewFile { .. }
                    if self.wb_node(ino) => {}
                _ => return Err(FsError::ReadOnly("asset directories are read-only")),
            }
        }
        self.attr_of(ino, None).map(|_| ())
    }
}

/// The mtime a generated file shows: the write-back component's records of times, asked by
/// the read side (`fs::staging::times`).
impl Core {
    /// The mtime generated `vpath` of asset `rel` shows, the binary being `binary`: the one
    /// it showed before the last commit(s) when its fingerprint `fp` did not change, else the
    /// binary's. `dir`: a folder (compared by its names).
    pub(in crate::fs) fn kept_mtime(
        &self,
        rel: &Path,
        binary: &std::fs::Metadata,
        vpath: &str,
        dir: bool,
        fp: impl FnOnce() -> Option<u64>,
    ) -> SystemTime {
        use std::os::unix::fs::MetadataExt;
        let now = time(binary.mtime(), binary.mtime_nsec());
        if !self.writeback() {
            return now;
        }
        let staged = self.staging(rel);
        let ident = Ident::of(binary);
        {
            let mut t = lock(&staged.times);
            t.load();
            if t.kept.is_empty() && t.prev.is_none() {
                // nothing committed here: every file shows the binary's time
                return now;
            }
        }
        // rendered without the lock held (a render takes the asset's state lock, which a
        // decode holds while it takes the staging lock, which a commit holds while it takes
        // this one)
        let Some(fp) = fp() else { return now };
        let prev = {
            let t = lock(&staged.times);
            if let Some(&(h, s, n)) = t.kept.get(vpath) {
                if h == fp {
                    return time(s, i64::from(n));
                }
            }
            // what the replaced version had at this path: a folder's names, or a file to render
            let before = t.prev.as_ref().filter(|p| p.by == ident).map(|p| {
                let old = if dir {
                    Before::Folder(p.layout.children(vpath).map(|k| folder_fingerprint(&k)))
                } else if p.layout.is_dir(vpath) == Some(false) {
                    Before::File(p.view.clone(), p.key.clone())
                } else {
                    Before::Folder(None)
                };
                (old, p.mtime)
            });
            (fp, before)
        };
        let (fp, before) = prev;
        let shown = match before {
            Some((old, mtime)) => {
                let old_fp = match old {
                    Before::Folder(f) => f,
                    // rendered outside the lock: other files of the asset are not held up
                    Before::File(view, key) => self
                        .cache
                        .fingerprint(&key, vpath)
                        .or_else(|| view.render_vec(vpath).ok().map(|b| fingerprint(&b))),
                };
                if old_fp == Some(fp) {
                    mtime
                } else {
                    now
                }
            }
            None => now,
        };
        let mut t = lock(&staged.times);
        let (s, n) = parts(shown);
        t.kept.insert(vpath.to_string(), (fp, s, n));
        t.dirty = true;
        shown
    }
}
