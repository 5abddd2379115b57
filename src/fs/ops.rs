//! [`FsOps`]: the operations the FUSE adapter forwards, implemented by the game-folder
//! [`super::Core`] (in `core/mod.rs`) and by the read-only merged game view
//! ([`super::merged::MergedCore`]).

use super::types::{Attr, DirItem, Opened, SetAttr};
use super::{Caller, FsError, NewNode, StatFs};
use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

const RO: FsError = FsError::ReadOnly("the merged game view is read-only");

/// Every file system operation on plain types. The write operations default to `EROFS`
/// (a read-only file system implements only the reading ones). Each operation a process asks
/// for takes its [`Caller`] first; what the kernel asks on its own behalf (`forget`) and the
/// mount's settings do not.
pub trait FsOps: Send + Sync {
    /// How long the kernel may cache attributes and names.
    fn ttl(&self) -> Duration;
    /// The mount ends (no request comes any more): what was put off is done now.
    fn finish(&self) {}
    /// How long the kernel may cache the attributes and name of `ino`.
    fn ttl_of(&self, _ino: u64) -> Duration {
        self.ttl()
    }
    /// Whether the kernel may cache directory listings across opens (`FOPEN_CACHE_DIR`,
    /// `FOPEN_KEEP_CACHE`): only where every change is invalidated.
    fn cache_dirs(&self) -> bool {
        false
    }
    /// Whether opens of files may be left to the kernel (`FUSE_NO_OPEN_SUPPORT`, asked for by
    /// the adapter only on a mount no other user can reach): a read-only mount whose every
    /// change is invalidated. Reads then come by inode ([`FsOps::read_ino`]).
    fn open_less(&self) -> bool {
        false
    }
    /// Whether the kernel should handle POSIX ACLs itself (`FUSE_POSIX_ACL`): it then asks
    /// for `system.posix_acl_*` once per inode and keeps the answer, instead of sending every
    /// `ls -l`'s two ACL `getxattr`s. Only for a read-only file system that has extended
    /// attributes of its own (no create, so no umask the kernel would stop applying).
    fn kernel_acls(&self) -> bool {
        false
    }
    /// Reads up to `size` bytes at `offset` of file `ino`, read without an open handle.
    fn read_ino(
        &self,
        _c: Caller,
        _ino: u64,
        _offset: u64,
        _size: u32,
    ) -> Result<Vec<u8>, FsError> {
        Err(FsError::BadHandle(0))
    }
    /// For an open pass-through file (handle `fh`), a file of the same inode opened for
    /// reading and writing, for the kernel to read and write directly (FUSE passthrough):
    /// `None` for every other handle (generated and staged files, asset binaries shown as
    /// files, whose writes the core must see).
    fn backing_file(&self, _fh: u64) -> Option<std::io::Result<std::fs::File>> {
        None
    }
    /// Looks `name` up in directory `parent`.
    fn lookup(&self, c: Caller, parent: u64, name: &OsStr) -> Result<Attr, FsError>;
    /// The kernel dropped `n` of the entries of `ino` it was given (each successful lookup,
    /// create, mkdir, mknod, symlink, link and readdirplus entry but `.` and `..` is one).
    fn forget(&self, _ino: u64, _n: u64) {}
    /// Inodes held (tests and diagnostics).
    fn inodes(&self) -> usize;
    /// Attributes of `ino` (from the open handle `fh` when given).
    fn getattr(&self, c: Caller, ino: u64, fh: Option<u64>) -> Result<Attr, FsError>;
    /// The target of a symbolic link.
    fn readlink(&self, c: Caller, ino: u64) -> Result<Vec<u8>, FsError>;
    /// Opens a file.
    fn open(&self, c: Caller, ino: u64, flags: i32) -> Result<Opened, FsError>;
    /// Reads up to `size` bytes at `offset`.
    fn read(&self, c: Caller, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError>;
    /// Closes a handle for good.
    fn release(&self, c: Caller, fh: u64) -> Result<(), FsError>;
    /// Opens a directory (a snapshot of its entries).
    fn opendir(&self, c: Caller, ino: u64) -> Result<u64, FsError>;
    /// Entries from index `offset` on, each with the offset of the entry after it.
    fn readdir(&self, c: Caller, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError>;
    /// Like [`FsOps::readdir`], with attributes.
    fn readdirplus(&self, c: Caller, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError>;
    /// Closes a directory handle.
    fn releasedir(&self, c: Caller, fh: u64) -> Result<(), FsError>;
    /// File system statistics.
    fn statfs(&self, c: Caller) -> Result<StatFs, FsError>;
    /// `access(2)`.
    fn access(&self, c: Caller, ino: u64, mask: i32) -> Result<(), FsError>;
    /// Whether `getxattr`/`listxattr` are answered at all; when false the adapter answers
    /// `ENOSYS` once, and the kernel answers `EOPNOTSUPP` by itself from then on.
    fn has_xattrs(&self) -> bool {
        false
    }
    /// The value of extended attribute `name` of `ino` (`ENODATA` when it has none).
    fn getxattr(&self, _c: Caller, _ino: u64, _name: &OsStr) -> Result<Vec<u8>, FsError> {
        Err(FsError::NotSupported("extended attributes"))
    }
    /// The names of the extended attributes of `ino`, each followed by a NUL byte.
    fn listxattr(&self, _c: Caller, _ino: u64) -> Result<Vec<u8>, FsError> {
        Err(FsError::NotSupported("extended attributes"))
    }
    /// `setxattr`/`removexattr`.
    fn setxattr(&self, _c: Caller, _ino: u64, _name: &OsStr) -> Result<(), FsError> {
        Err(RO)
    }
    /// Changes attributes.
    fn setattr(
        &self,
        _c: Caller,
        _ino: u64,
        _set: SetAttr,
        _fh: Option<u64>,
    ) -> Result<Attr, FsError> {
        Err(RO)
    }
    /// Creates a device node, fifo, socket or empty regular file, owned by the caller.
    fn mknod(&self, _c: Caller, _n: NewNode, _rdev: u32) -> Result<Attr, FsError> {
        Err(RO)
    }
    /// Creates a directory, owned by the caller.
    fn mkdir(&self, _c: Caller, _n: NewNode) -> Result<Attr, FsError> {
        Err(RO)
    }
    /// Creates a symbolic link `name` in `parent` to `target`, owned by the caller.
    fn symlink(
        &self,
        _c: Caller,
        _parent: u64,
        _name: &OsStr,
        _target: &Path,
    ) -> Result<Attr, FsError> {
        Err(RO)
    }
    /// Creates a hard link.
    fn link(
        &self,
        _c: Caller,
        _ino: u64,
        _newparent: u64,
        _newname: &OsStr,
    ) -> Result<Attr, FsError> {
        Err(RO)
    }
    /// Removes a file.
    fn unlink(&self, _c: Caller, _parent: u64, _name: &OsStr) -> Result<(), FsError> {
        Err(RO)
    }
    /// Removes an empty directory.
    fn rmdir(&self, _c: Caller, _parent: u64, _name: &OsStr) -> Result<(), FsError> {
        Err(RO)
    }
    /// Renames.
    fn rename(
        &self,
        _c: Caller,
        _parent: u64,
        _name: &OsStr,
        _newparent: u64,
        _newname: &OsStr,
        _flags: u32,
    ) -> Result<(), FsError> {
        Err(RO)
    }
    /// Creates and opens a regular file, owned by the caller.
    fn create(&self, _c: Caller, _n: NewNode, _flags: i32) -> Result<(Attr, Opened), FsError> {
        Err(RO)
    }
    /// Writes `data` at `offset`.
    fn write(&self, _c: Caller, _fh: u64, _offset: u64, _data: &[u8]) -> Result<u32, FsError> {
        Err(RO)
    }
    /// Called on every `close`.
    fn flush(&self, _c: Caller, _fh: u64) -> Result<(), FsError> {
        Ok(())
    }
    /// Flushes a file to stable storage.
    fn fsync(&self, _c: Caller, _fh: u64, _datasync: bool) -> Result<(), FsError> {
        Ok(())
    }
}
