//! Pass-through: operations on the real files and folders of the game folder (create,
//! mkdir, mknod, symlink, link, unlink, rmdir, rename, setattr, readlink), applied to the
//! game folder as they are and mirrored in the inode table.

use super::handles::Handle;
use super::inode::{Node, NodeKind};
use super::{is_asset_name, lock, Core, Inval, Resolved};
use super::{Attr, FileKind, Opened, SetAttr};
use crate::fs::sys::{self, SetTime};
use crate::fs::FsError;
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
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

impl Core {
    /// `setattr` of a real inode that has no path any more (unlinked, renamed over), applied
    /// to a file that holds it open; `ESTALE` when none does.
    pub(in crate::fs) fn setattr_open(&self, ino: u64, set: &SetAttr) -> Result<Attr, FsError> {
        let handle = lock(&self.handles)
            .values()
            .find(|h| matches!(&***h, Handle::Real { ino: i, .. } if *i == ino))
            .cloned();
        let Some(Handle::Real { file, written, .. }) = handle.as_deref() else {
            return Err(FsError::Stale);
        };
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
        ino: u64,
        set: SetAttr,
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
            Err(FsError::Stale) => return self.setattr_open(ino, &set),
            r => r?,
        };
        let abs = self.abs(&rel);
        let is_symlink = matches!(
            node.kind,
            NodeKind::Real {
                kind: FileKind::Symlink
            }
        );
        let handle = fh.and_then(|fh| lock(&self.handles).get(&fh).cloned());
        let open = match handle.as_deref() {
            Some(Handle::Real { file, written, .. }) => {
                if set.size.is_some() {
                    written.store(true, Ordering::Relaxed);
                }
                Some(file)
            }
            _ => None,
        };
        apply_setattr(&abs, &set, is_symlink, open)?;
        self.attr_of(ino, fh)
    }

    /// The target of a symbolic link.
    pub(in crate::fs) fn real_readlink(&self, ino: u64) -> Result<Vec<u8>, FsError> {
        match self.node(ino)?.kind {
            NodeKind::Real { .. } => {
                let rel = self.rel_path(ino)?;
                Ok(fs::read_link(self.abs(&rel))?
                    .into_os_string()
                    .as_bytes()
                    .to_vec())
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

    pub(in crate::fs) fn new_real(&self, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        let rel = self.rel_path(parent)?.join(name);
        let meta = fs::symlink_metadata(self.abs(&rel))?;
        let kind = FileKind::of(meta.file_type());
        let ino = self
            .table_mut()
            .replace(parent, name, NodeKind::Real { kind }, None);
        Ok(self.real_attr(ino, &rel, &meta))
    }

    /// Creates a device node, fifo, socket or empty regular file.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::fs) fn real_mknod(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr, FsError> {
        let rel = self.writable_dir(parent)?.join(name);
        let abs = self.abs(&rel);
        let perm = mode & 0o7777 & !umask;
        sys::mknod(&abs, (mode & libc::S_IFMT) | perm, rdev)?;
        self.chown_new(&abs, uid, gid)?;
        self.new_real(parent, name)
    }

    /// Creates a directory.
    pub(in crate::fs) fn real_mkdir(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr, FsError> {
        let rel = self.writable_dir(parent)?.join(name);
        if let Some(a) = self.new_asset(parent, name, mode, umask)? {
            return Ok(a);
        }
        let abs = self.abs(&rel);
        fs::DirBuilder::new()
            .mode(mode & 0o7777 & !umask)
            .create(&abs)?;
        self.chown_new(&abs, uid, gid)?;
        self.new_real(parent, name)
    }

    /// Creates a symbolic link `name` → `target`.
    pub(in crate::fs) fn real_symlink(
        &self,
        parent: u64,
        name: &OsStr,
        target: &Path,
        uid: u32,
        gid: u32,
    ) -> Result<Attr, FsError> {
        let rel = self.writable_dir(parent)?.join(name);
        let abs = self.abs(&rel);
        std::os::unix::fs::symlink(target, &abs)?;
        self.chown_new(&abs, uid, gid)?;
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
        let rel = self.writable_dir(newparent)?.join(newname);
        fs::hard_link(self.abs(&src), self.abs(&rel))?;
        self.new_real(newparent, newname)
    }

    /// Removes a file.
    pub(in crate::fs) fn real_unlink(&self, parent: u64, name: &OsStr) -> Result<(), FsError> {
        let rel = self.writable_dir(parent)?.join(name);
        if self.child_is_view(parent, name) {
            return Err(FsError::ReadOnly("asset directories are read-only"));
        }
        fs::remove_file(self.abs(&rel))?;
        self.table_mut().detach_child(parent, name);
        Ok(())
    }

    /// Removes an empty directory.
    pub(in crate::fs) fn real_rmdir(&self, parent: u64, name: &OsStr) -> Result<(), FsError> {
        let rel = self.writable_dir(parent)?.join(name);
        if self.writeback() && self.remove_asset(parent, name)? {
            return Ok(());
        }
        if self.child_is_view(parent, name)
            || matches!(self.resolve(&rel), Ok(Resolved::Asset { .. }))
        {
            return Err(FsError::ReadOnly("asset directories are read-only"));
        }
        fs::remove_dir(self.abs(&rel))?;
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
        let from = self.writable_dir(parent)?.join(name);
        let to = self.writable_dir(newparent)?.join(newname);
        if flags == 0 {
            fs::rename(self.abs(&from), self.abs(&to))?;
        } else {
            sys::rename2(&self.abs(&from), &self.abs(&to), flags)?;
        }
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
    #[allow(clippy::too_many_arguments)]
    pub(in crate::fs) fn real_create(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        uid: u32,
        gid: u32,
    ) -> Result<(Attr, Opened), FsError> {
        let rel = self.writable_dir(parent)?.join(name);
        let abs = self.abs(&rel);
        let mut o = Self::open_options(flags);
        if flags & libc::O_EXCL != 0 {
            o.create_new(true);
        } else {
            o.create(true);
        }
        if flags & libc::O_ACCMODE == libc::O_RDONLY {
            o.write(true); // create needs write access; the kernel enforces the mode
        }
        o.mode(mode & 0o7777 & !umask);
        let file = o.open(&abs)?;
        self.chown_new(&abs, uid, gid)?;
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
