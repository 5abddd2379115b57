//! The request and answer types of the operations ([`super::FsOps`]): what every file
//! system of `src/fs` (the game-folder core, the merged view, the overlay, the tables)
//! takes and answers. A leaf: it imports no room but `shared`.

use crate::fs::shared::time;
use crate::fs::FsError;
use crate::sys::SetTime;
use std::ffi::{OsStr, OsString};
use std::fs::{self, Metadata};
use std::os::unix::fs::MetadataExt;
use std::time::{SystemTime, UNIX_EPOCH};

/// Kind of a node as `stat` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// Directory.
    Dir,
    /// Regular file.
    File,
    /// Symbolic link.
    Symlink,
    /// Named pipe.
    Fifo,
    /// Unix socket.
    Socket,
    /// Character device.
    CharDevice,
    /// Block device.
    BlockDevice,
}

impl FileKind {
    pub(in crate::fs) fn of(t: fs::FileType) -> FileKind {
        use std::os::unix::fs::FileTypeExt;
        if t.is_dir() {
            FileKind::Dir
        } else if t.is_symlink() {
            FileKind::Symlink
        } else if t.is_fifo() {
            FileKind::Fifo
        } else if t.is_socket() {
            FileKind::Socket
        } else if t.is_char_device() {
            FileKind::CharDevice
        } else if t.is_block_device() {
            FileKind::BlockDevice
        } else {
            FileKind::File
        }
    }
}

/// Attributes of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// Inode number (stable while mounted).
    pub ino: u64,
    /// Size in bytes (exact, also for generated files).
    pub size: u64,
    /// 512-byte blocks.
    pub blocks: u64,
    /// Last access.
    pub atime: SystemTime,
    /// Last modification (for generated files: the binary's).
    pub mtime: SystemTime,
    /// Last status change.
    pub ctime: SystemTime,
    /// Kind.
    pub kind: FileKind,
    /// Permission bits.
    pub perm: u16,
    /// Hard links (directories: 2 + sub-directories).
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device number of device files.
    pub rdev: u32,
    /// Preferred I/O size.
    pub blksize: u32,
}

impl Attr {
    /// The attributes of a file as `m` describes it (size, blocks, times, device), shown as
    /// `kind` with `perm`, `nlink` and `owner`.
    pub(in crate::fs) fn of_meta(
        ino: u64,
        m: &Metadata,
        kind: FileKind,
        perm: u32,
        nlink: u32,
        (uid, gid): (u32, u32),
    ) -> Attr {
        Attr {
            ino,
            size: m.len(),
            blocks: m.blocks(),
            atime: time(m.atime(), m.atime_nsec()),
            mtime: time(m.mtime(), m.mtime_nsec()),
            ctime: time(m.ctime(), m.ctime_nsec()),
            kind,
            perm: perm as u16,
            nlink,
            uid,
            gid,
            rdev: m.rdev() as u32,
            blksize: m.blksize() as u32,
        }
    }

    /// The attributes of a generated file or folder (`dir`) of `size` bytes, with the times
    /// of `m` (the binary or source it is generated from), `perm`, `nlink` and `owner`.
    pub(in crate::fs) fn generated(
        ino: u64,
        m: &Metadata,
        dir: bool,
        size: u64,
        perm: u32,
        nlink: u32,
        owner: (u32, u32),
    ) -> Attr {
        let kind = if dir { FileKind::Dir } else { FileKind::File };
        Attr {
            size,
            blocks: size.div_ceil(512),
            rdev: 0,
            blksize: 4096,
            ..Attr::of_meta(ino, m, kind, perm, nlink, owner)
        }
    }

    /// The placeholder attributes of a `.` or `..` entry in a `readdirplus` reply, which the
    /// kernel does not use: a folder, inode `ino`, all else zero.
    pub(crate) fn dot(ino: u64) -> Attr {
        Attr {
            ino,
            size: 0,
            blocks: 0,
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            kind: FileKind::Dir,
            perm: 0o555,
            nlink: 2,
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
        }
    }
}

/// Attribute changes requested by `setattr` (who asks is the request's
/// [`crate::fs::Caller`]: one other than root and the real owner gets no set-id bits on a
/// real file).
#[derive(Debug, Clone, Copy, Default)]
pub struct SetAttr {
    /// New permission bits.
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New size (truncate or extend).
    pub size: Option<u64>,
    /// New access time.
    pub atime: Option<SetTime>,
    /// New modification time.
    pub mtime: Option<SetTime>,
}

/// An open file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The handle.
    pub fh: u64,
    /// Whether the kernel may keep its page cache from earlier opens.
    pub keep_cache: bool,
}
/// One directory entry.
#[derive(Debug, Clone)]
pub struct DirItem {
    /// Inode.
    pub ino: u64,
    /// Name.
    pub name: OsString,
    /// Kind.
    pub kind: FileKind,
    /// Attributes, filled by `readdirplus` ([`crate::fs::FsOps::readdirplus`]).
    pub attr: Option<Attr>,
}

impl DirItem {
    /// The `.` (`ino`) and `..` (`parent`) entries of a listing.
    pub(in crate::fs) fn dots(ino: u64, parent: u64) -> Vec<DirItem> {
        [(ino, "."), (parent, "..")]
            .into_iter()
            .map(|(ino, name)| DirItem {
                ino,
                name: name.into(),
                kind: FileKind::Dir,
                attr: None,
            })
            .collect()
    }

    /// The entries of a `readdirplus` reply, each but `.` and `..` counted as a lookup by
    /// `remember`; one whose inode is gone (forgotten since its attributes were taken) is
    /// looked up again by name with `again` (which counts it), or left out when that fails.
    pub(in crate::fs) fn counted(
        items: impl IntoIterator<Item = (u64, DirItem)>,
        mut remember: impl FnMut(u64) -> bool,
        again: impl Fn(&OsStr) -> Result<Attr, FsError>,
    ) -> Vec<(u64, DirItem)> {
        let mut out = Vec::new();
        for (next, mut it) in items {
            if it.name != "." && it.name != ".." && !remember(it.ino) {
                match again(&it.name) {
                    Ok(a) => {
                        it.ino = a.ino;
                        it.attr = Some(a);
                    }
                    Err(_) => continue,
                }
            }
            out.push((next, it));
        }
        out
    }

    /// The entries of `items` from index `offset` on (at most `max`: the listing's
    /// page size), each with the offset of the entry after it: a page costs what it holds,
    /// not what the folder holds.
    pub(in crate::fs) fn numbered_from(
        items: &[DirItem],
        offset: u64,
        max: usize,
    ) -> Vec<(u64, DirItem)> {
        let from = usize::try_from(offset).unwrap_or(usize::MAX);
        items
            .iter()
            .enumerate()
            .skip(from)
            .take(max)
            .map(|(i, it)| (i as u64 + 1, it.clone()))
            .collect()
    }
}
