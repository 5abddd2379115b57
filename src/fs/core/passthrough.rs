//! Pass-through: operations on the real files and folders of the game folder (create,
//! mkdir, mknod, symlink, link, unlink, rmdir, rename, setattr, readlink), applied to the
//! game folder as they are and mirrored in the inode table.
//!
//! Every request reaches the game folder relative to directory descriptors (see
//! [`sys::open_dir_beneath`]): the parent is opened beneath the game folder without following
//! any symlink, and the last component is acted on with an `*at` call that does not follow
//! it. A symlink swapped in under the mount therefore fails the request (`ELOOP`) instead of
//! leading the daemon outside the game folder.

use super::handles::Handle;
use super::inode::{Node, NodeKind};
use super::writeback_ops::WritebackOps;
use super::{is_asset_name, Core, Inval, Resolved};
use super::{Attr, FileKind, Opened, SetAttr};
use crate::fs::shared::{lock, NewNode};
use crate::fs::Caller;
use crate::fs::FsError;
use crate::sys::{self, SetTime};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

/// Applies the mode (not to symlinks), owner, size and times of `set` to the file at `path`;
/// the size goes through `open` (an open handle of that file) when given, so a file that has
/// no name any more can still be truncated.
pub(in crate::fs) fn apply_setattr(
    path: &Path,
    set: &SetAttr,
    is_symlink: bool,
    open: Option<&File>,
) -> std::io::Result<()> {
    if let (Some(mode), false) = (set.mode, is_symlink) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o7777))?;
    }
    if set.uid.is_some() || set.gid.is_some() {
        std::os::unix::fs::lchown(path, set.uid, set.gid)?;
    }
    if let Some(size) = set.size {
        match open {
            Some(file) => file.set_len(size)?,
            None => OpenOptions::new().write(true).open(path)?.set_len(size)?,
        }
    }
    if set.atime.is_some() || set.mtime.is_some() {
        sys::set_times(
            path,
            set.atime.unwrap_or(SetTime::Omit),
            set.mtime.unwrap_or(SetTime::Omit),
        )?;
    }
    Ok(())
}

/// The set-user-id and set-group-id bits.
const SET_ID: u32 = libc::S_ISUID | libc::S_ISGID;

impl Core {
    /// The directory `rel` of the game folder, opened beneath it without following symlinks.
    pub(in crate::fs) fn dir_fd(&self, rel: &Path) -> io::Result<OwnedFd> {
        sys::open_dir_beneath(self.root_fd.as_fd(), rel)
    }

    /// The parent directory of `rel` (opened as [`Core::dir_fd`]) and its last component
    /// (`.` for the game folder itself).
    pub(in crate::fs) fn parent_fd(&self, rel: &Path) -> io::Result<(OwnedFd, OsString)> {
        sys::parent_beneath(self.root_fd.as_fd(), rel)
    }

    /// `lstat` of game-folder path `rel` (no symlink followed, also not on the way).
    pub(in crate::fs) fn lstat_rel(&self, rel: &Path) -> io::Result<fs::Metadata> {
        let (dir, name) = self.parent_fd(rel)?;
        sys::lstat_at(dir.as_fd(), &name)
    }

    /// [`Core::lstat_rel`], answered from the game folder's watch when it is authoritative
    /// and no event has named `rel` since its last `lstat`.
    pub(in crate::fs) fn watched_lstat(&self, rel: &Path) -> io::Result<fs::Metadata> {
        let Some(w) = &self.watch else {
            return self.lstat_rel(rel);
        };
        match w.trusted(rel) {
            Ok(m) => Ok(m),
            Err(seq) => {
                let m = self.lstat_rel(rel)?;
                w.trust(rel, &m, seq);
                Ok(m)
            }
        }
    }

    /// The entries of real directory `rel` (no symlink followed).
    pub(in crate::fs) fn read_dir_rel(&self, rel: &Path) -> io::Result<fs::ReadDir> {
        let (dir, name) = self.parent_fd(rel)?;
        sys::read_dir_at(dir.as_fd(), &name)
    }

    /// Opens game-folder path `rel` with `flags` (`O_NOFOLLOW` added; `mode` for `O_CREAT`).
    pub(in crate::fs) fn open_rel(&self, rel: &Path, flags: i32, mode: u32) -> io::Result<File> {
        let (dir, name) = self.parent_fd(rel)?;
        sys::open_at(dir.as_fd(), &name, flags, mode)
    }

    /// `setattr` of a real inode that has no path any more (unlinked, renamed over), applied
    /// to a file that holds it open; `ESTALE` when none does.
    pub(in crate::fs) fn setattr_open(
        &self,
        c: Caller,
        ino: u64,
        set: &SetAttr,
    ) -> Result<Attr, FsError> {
        let handle = lock(&self.handles)
            .values()
            .find(|h| matches!(&***h, Handle::Real { ino: i, .. } if *i == ino))
            .cloned();
        let Some(Handle::Real { file, written, .. }) = handle.as_deref() else {
            return Err(FsError::Stale);
        };
        let mut set = *set;
        if c.uid != 0 {
            let caller = c.uid;
            // the rule of `real_setattr`: the file may have other names on disk
            let real = file.metadata()?;
            if set.uid.is_some_and(|u| u != caller && u != real.uid()) {
                return Err(io::Error::from_raw_os_error(libc::EPERM).into());
            }
            if real.uid() != caller {
                set.mode = set.mode.map(|m| m & !SET_ID);
            }
        }
        if let Some(mode) = set.mode {
            file.set_permissions(fs::Permissions::from_mode(mode & 0o7777))?;
        }
        if set.uid.is_some() || set.gid.is_some() {
            std::os::unix::fs::fchown(file, set.uid, set.gid)?;
        }
        if let Some(size) = set.size {
            file.set_len(size)?;
            written.store(true, Ordering::Relaxed);
        }
        let when = |t: SetTime| match t {
            SetTime::Omit => None,
            SetTime::Now => Some(SystemTime::now()),
            SetTime::At(t) => Some(t),
        };
        let (atime, mtime) = (set.atime.and_then(when), set.mtime.and_then(when));
        if atime.is_some() || mtime.is_some() {
            let mut times = fs::FileTimes::new();
            if let Some(t) = atime {
                times = times.set_accessed(t);
            }
            if let Some(t) = mtime {
                times = times.set_modified(t);
            }
            file.set_times(times)?;
        }
        self.open_file_attr(ino)
    }

    pub(in crate::fs) fn writable_real(&self, ino: u64) -> Result<(Node, PathBuf), FsError> {
        if self.opts.read_only {
            return Err(FsError::ReadOnly("mounted read-only"));
        }
        let node = self.node(ino)?;
        match node.kind {
            NodeKind::Real { .. } => {
                let rel = self.rel_path(ino)?;
                Ok((node, rel))
            }
            _ => Err(FsError::ReadOnly("asset directories are read-only")),
        }
    }

    pub(in crate::fs) fn writable_dir(&self, parent: u64) -> Result<PathBuf, FsError> {
        let (node, rel) = self.writable_real(parent)?;
        match node.kind {
            NodeKind::Real {
                kind: FileKind::Dir,
            } => Ok(rel),
            _ => Err(FsError::NotDir),
        }
    }

    /// Changes attributes of a real node.
    pub(in crate::fs) fn real_setattr(
        &self,
        c: Caller,
        ino: u64,
        mut set: SetAttr,
        fh: Option<u64>,
    ) -> Result<Attr, FsError> {
        // `ftruncate` acts on the open file, which may have no name any more (unlinked).
        let only_size = set.mode.is_none()
            && set.uid.is_none()
            && set.gid.is_none()
            && set.atime.is_none()
            && set.mtime.is_none();
        if let (Some(size), true, false) = (set.size, only_size, self.opts.read_only) {
            let handle = fh.and_then(|fh| lock(&self.handles).get(&fh).cloned());
            if let Some(Handle::Real { file, written, .. }) = handle.as_deref() {
                file.set_len(size)?;
                written.store(true, Ordering::Relaxed);
                return self.attr_of(ino, fh);
            }
        }
        let (node, rel) = match self.writable_real(ino) {
            // fchmod/fchown/futimens of an open file that has no name any more
            Err(FsError::Stale) => return self.setattr_open(c, ino, &set),
            r => r?,
        };
        let (dir, name) = self.parent_fd(&rel)?;
        let (dir, name) = (dir.as_fd(), name.as_os_str());
        let is_symlink = matches!(
            node.kind,
            NodeKind::Real {
                kind: FileKind::Symlink
            }
        );
        // A caller that is neither root nor the real owner passed the kernel's checks only
        // because `--uid`/`--gid` show it as the owner: it gets no set-id bits and cannot
        // give the file to someone else (the daemon acts as root).
        if c.uid != 0 {
            let caller = c.uid;
            let real = sys::lstat_at(dir, name)?;
            if set.uid.is_some_and(|u| u != caller && u != real.uid()) {
                return Err(io::Error::from_raw_os_error(libc::EPERM).into());
            }
            if real.uid() != caller {
                set.mode = set.mode.map(|m| m & !SET_ID);
            }
        }
        if let (Some(mode), false) = (set.mode, is_symlink) {
            sys::chmod_at(dir, name, mode & 0o7777)?;
        }
        if set.uid.is_some() || set.gid.is_some() {
            sys::chown_at(dir, name, set.uid, set.gid)?;
        }
        if let Some(size) = set.size {
            let handle = fh.and_then(|fh| lock(&self.handles).get(&fh).cloned());
            match handle.as_deref() {
                Some(Handle::Real { file, written, .. }) => {
                    written.store(true, Ordering::Relaxed);
                    file.set_len(size)?;
                }
                _ => sys::open_at(dir, name, libc::O_WRONLY, 0)?.set_len(size)?,
            }
        }
        if set.atime.is_some() || set.mtime.is_some() {
            sys::set_times_at(
                dir,
                name,
                set.atime.unwrap_or(SetTime::Omit),
                set.mtime.unwrap_or(SetTime::Omit),
            )?;
        }
        self.attr_of(ino, fh)
    }

    /// The target of a symbolic link.
    pub(in crate::fs) fn real_readlink(&self, ino: u64) -> Result<Vec<u8>, FsError> {
        match self.node(ino)?.kind {
            NodeKind::Real { .. } => {
                let (dir, name) = self.parent_fd(&self.rel_path(ino)?)?;
                Ok(sys::readlink_at(dir.as_fd(), &name)?)
            }
            _ => Err(FsError::Invalid("not a symbolic link".into())),
        }
    }

    pub(in crate::fs) fn chown_new(&self, abs: &Path, uid: u32, gid: u32) -> Result<(), FsError> {
        if self.root_owner && (uid != 0 || gid != 0) {
            std::os::unix::fs::lchown(abs, Some(uid), Some(gid))?;
        }
        Ok(())
    }

    /// Gives the new entry `name` of `dir` to the caller (when the mount runs as root) and
    /// its exact permission bits `perm` (the caller's mode and umask; the daemon's own umask
    /// is not applied). A directory keeps the set-group-id bit it inherited.
    fn settle_new(
        &self,
        dir: std::os::fd::BorrowedFd,
        name: &OsStr,
        perm: Option<u32>,
        uid: u32,
        gid: u32,
    ) -> Result<(), FsError> {
        if self.root_owner && (uid != 0 || gid != 0) {
            sys::chown_at(dir, name, Some(uid), Some(gid))?;
        }
        if let Some(perm) = perm {
            let m = sys::lstat_at(dir, name)?;
            let inherited = if m.is_dir() {
                m.mode() & libc::S_ISGID
            } else {
                0
            };
            if m.mode() & 0o7777 != perm | inherited {
                sys::chmod_at(dir, name, perm | inherited)?;
            }
        }
        Ok(())
    }

    pub(in crate::fs) fn new_real(&self, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        let rel = self.rel_path(parent)?.join(name);
        let meta = self.lstat_rel(&rel)?;
        let ino = self.real_node(parent, name, &meta, true);
        Ok(self.real_attr(ino, &rel, &meta))
    }

    /// Creates a device node, fifo, socket or empty regular file.
    pub(in crate::fs) fn real_mknod(
        &self,
        c: Caller,
        n: NewNode,
        rdev: u32,
    ) -> Result<Attr, FsError> {
        let NewNode {
            parent,
            name,
            mode,
            umask,
        } = n;
        let Caller { uid, gid, .. } = c;
        let dir = self.dir_fd(&self.writable_dir(parent)?)?;
        let perm = mode & 0o7777 & !umask;
        sys::mknod_at(dir.as_fd(), name, (mode & libc::S_IFMT) | perm, rdev)?;
        self.settle_new(dir.as_fd(), name, Some(perm), uid, gid)?;
        self.new_real(parent, name)
    }

    /// Creates a directory.
    pub(in crate::fs) fn real_mkdir(&self, c: Caller, n: NewNode) -> Result<Attr, FsError> {
        let NewNode {
            parent,
            name,
            mode,
            umask,
        } = n;
        let Caller { uid, gid, .. } = c;
        let rel = self.writable_dir(parent)?;
        if let Some(a) = self.new_asset(c, n)? {
            return Ok(a);
        }
        let dir = self.dir_fd(&rel)?;
        let perm = mode & 0o7777 & !umask;
        sys::mkdir_at(dir.as_fd(), name, perm)?;
        self.settle_new(dir.as_fd(), name, Some(perm), uid, gid)?;
        self.new_real(parent, name)
    }

    /// Creates a symbolic link `name` → `target`.
    pub(in crate::fs) fn real_symlink(
        &self,
        c: Caller,
        parent: u64,
        name: &OsStr,
        target: &Path,
    ) -> Result<Attr, FsError> {
        let dir = self.dir_fd(&self.writable_dir(parent)?)?;
        sys::symlink_at(target, dir.as_fd(), name)?;
        self.settle_new(dir.as_fd(), name, None, c.uid, c.gid)?;
        self.new_real(parent, name)
    }

    /// Creates a hard link `newparent/newname` to `ino`.
    pub(in crate::fs) fn real_link(
        &self,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
    ) -> Result<Attr, FsError> {
        let (_, src) = self.writable_real(ino)?;
        let (odir, oname) = self.parent_fd(&src)?;
        let ndir = self.dir_fd(&self.writable_dir(newparent)?)?;
        sys::link_at(odir.as_fd(), &oname, ndir.as_fd(), newname)?;
        self.new_real(newparent, newname)
    }

    /// Removes a file.
    pub(in crate::fs) fn real_unlink(&self, parent: u64, name: &OsStr) -> Result<(), FsError> {
        let rel = self.writable_dir(parent)?;
        if self.child_is_view(parent, name) {
            return Err(FsError::ReadOnly("asset directories are read-only"));
        }
        sys::unlink_at(self.dir_fd(&rel)?.as_fd(), name, false)?;
        self.table_mut().detach_child(parent, name);
        Ok(())
    }

    /// Removes an empty directory.
    pub(in crate::fs) fn real_rmdir(&self, parent: u64, name: &OsStr) -> Result<(), FsError> {
        let prel = self.writable_dir(parent)?;
        let rel = prel.join(name);
        if self.writeback() && self.remove_asset(parent, name)? {
            return Ok(());
        }
        if self.child_is_view(parent, name)
            || matches!(self.resolve(&rel), Ok(Resolved::Asset { .. }))
        {
            return Err(FsError::ReadOnly("asset directories are read-only"));
        }
        sys::unlink_at(self.dir_fd(&prel)?.as_fd(), name, true)?;
        self.table_mut().detach_child(parent, name);
        Ok(())
    }

    /// Renames `parent/name` to `newparent/newname` (`flags`: `RENAME_NOREPLACE`,
    /// `RENAME_EXCHANGE`). An asset directory can be renamed as a whole (it renames the
    /// binary); nothing inside one can.
    pub(in crate::fs) fn real_rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<(), FsError> {
        let from = self.dir_fd(&self.writable_dir(parent)?)?;
        let to = self.dir_fd(&self.writable_dir(newparent)?)?;
        sys::rename_at(from.as_fd(), name, to.as_fd(), newname, flags)?;
        {
            let mut t = self.table_mut();
            if flags & libc::RENAME_EXCHANGE != 0 {
                t.exchange(parent, name, newparent, newname);
            } else {
                t.move_child(parent, name, newparent, newname);
            }
        }
        for (p, n) in [(parent, name), (newparent, newname)] {
            if n.to_str().is_some_and(is_asset_name) {
                self.send(Inval::Entry {
                    parent: p,
                    name: n.to_os_string(),
                });
            }
        }
        Ok(())
    }

    /// Creates and opens a regular file.
    pub(in crate::fs) fn real_create(
        &self,
        c: Caller,
        n: NewNode,
        flags: i32,
    ) -> Result<(Attr, Opened), FsError> {
        let NewNode {
            parent,
            name,
            mode,
            umask,
        } = n;
        let Caller { uid, gid, .. } = c;
        let dir = self.dir_fd(&self.writable_dir(parent)?)?;
        let mut oflags = Self::open_flags(flags) | libc::O_CREAT;
        if flags & libc::O_EXCL != 0 {
            oflags |= libc::O_EXCL;
        }
        if flags & libc::O_ACCMODE == libc::O_RDONLY {
            // create needs write access; the kernel enforces the mode
            oflags = (oflags & !libc::O_ACCMODE) | libc::O_RDWR;
        }
        let perm = mode & 0o7777 & !umask;
        let file = sys::open_at(dir.as_fd(), name, oflags, perm)?;
        self.settle_new(dir.as_fd(), name, Some(perm), uid, gid)?;
        let attr = self.new_real(parent, name)?;
        let fh = self.add_handle(Handle::Real {
            file,
            ino: attr.ino,
            written: AtomicBool::new(true),
        });
        Ok((
            attr,
            Opened {
                fh,
                keep_cache: false,
            },
        ))
    }
}
