//! A thin wrapper over a [`FsOps`] (the game-folder [`Core`], or the merged game view
//! [`MergedCore`]) implementing [`fuser::Filesystem`]: each callback converts types, calls
//! the core, and replies or maps the error to an errno ([`FsError::errno`]).
//! Also: mounting, and the thread that sends kernel cache invalidations.

use super::core::{Attr, Core, FileKind, Inval, InvalProgress, MountOptions, SetAttr};
use super::merged::{MergedCore, OverlayCore, Target};
use super::ops::FsOps;
use super::FsError;
use super::{Caller, NewNode};
use crate::fs::shared::lock;
use crate::sys::SetTime;
use crate::view::merged::Priority;
use fuser::{
    AccessFlags, BackingId, Config, CopyFileRangeFlags, Errno, FileAttr, FileHandle, FileType,
    Filesystem, FopenFlags, Generation, INodeNo, InitFlags, IoctlFlags, KernelConfig, LockOwner,
    MountOption, Notifier, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyIoctl, ReplyLseek, ReplyOpen,
    ReplyStatfs, ReplyWrite, ReplyXattr, Request, Session, SessionACL, TimeOrNow, WriteFlags,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

/// The [`fuser::Filesystem`] over a [`Core`] or a [`MergedCore`].
pub struct TafsFs {
    core: Arc<dyn FsOps>,
    /// Whether opens of files may be left to the kernel once the core allows it (a mount no
    /// other user can reach, see [`FsOps::open_less`]).
    open_less: bool,
    /// Whether the kernel reads and writes pass-through files itself (FUSE passthrough).
    passthrough: AtomicBool,
    /// The open pass-through files: per inode, how the kernel does their I/O.
    io: Mutex<PassIo>,
    /// Listings read without a directory handle, by folder inode: the handle serving them.
    streams: Mutex<Streams>,
}

/// The handles serving listings read without one ([`TafsFs::dir_call`]), least recently used
/// dropped first (a reader that stops before the end leaves its handle here).
type Streams = lru::LruCache<u64, u64>;

/// Listings read without a directory handle kept at once.
const STREAMS: std::num::NonZeroUsize = match std::num::NonZeroUsize::new(16) {
    Some(n) => n,
    None => unreachable!(),
};

/// How the kernel does the I/O of the open pass-through files of each inode: directly on a
/// backing file, or through the daemon. All opens of one inode are of one kind at a time (the
/// kernel refuses to mix them), so an inode keeps the kind of its first open until its last
/// handle is released.
#[derive(Default)]
struct PassIo {
    inodes: HashMap<u64, (Option<Arc<BackingId>>, usize)>,
    handles: HashMap<u64, u64>,
}

impl TafsFs {
    /// Wraps a core.
    pub fn new(core: Arc<dyn FsOps>) -> TafsFs {
        TafsFs {
            core,
            open_less: false,
            passthrough: AtomicBool::new(false),
            io: Mutex::new(PassIo::default()),
            streams: Mutex::new(Streams::new(STREAMS)),
        }
    }

    /// Lets the kernel open files without asking (`FUSE_NO_OPEN_SUPPORT`) when the core
    /// allows it: on a mount only its owner reaches, as a caller-dependent answer (the root
    /// `.tafs-status`) must not reach another user from the shared page cache.
    pub fn with_open_less(mut self, allowed: bool) -> TafsFs {
        self.open_less = allowed;
        self
    }

    /// Answers an open of `ino` that the core made as `o`: a pass-through file the core can
    /// back is handed to the kernel (FUSE passthrough: its reads and writes never reach the
    /// daemon), with the backing file of the inode's other opens if it has some.
    fn reply_open(&self, ino: u64, o: super::core::Opened, flags: FopenFlags, reply: ReplyOpen) {
        if !self.passthrough.load(Ordering::Relaxed) {
            return reply.opened(FileHandle(o.fh), flags);
        }
        // The lock is held only to count the handle, never while replying (the reply wakes
        // the caller, whose next request, a RELEASE most often, would wait for it) nor while
        // opening the backing file (a generated file, the most common open, has none).
        let mut kept = self.count_open(ino, o.fh);
        if kept.is_none() {
            let Some(file) = self.core.backing_file(o.fh) else {
                return reply.opened(FileHandle(o.fh), flags);
            };
            let id = file.and_then(|f| reply.open_backing(&f));
            if let Err(e) = &id {
                log::debug!("open of inode {ino}: no passthrough ({e})");
            }
            let mut io = lock(&self.io);
            let io = &mut *io;
            // (another open of the inode may have counted itself meanwhile: its kind wins)
            let e = io
                .inodes
                .entry(ino)
                .or_insert_with(|| (id.ok().map(Arc::new), 0));
            io.handles.insert(o.fh, ino);
            e.1 += 1;
            kept = Some(e.0.clone());
        }
        match kept.flatten() {
            // (the kernel takes no cache flags with a backing file: EIO otherwise)
            Some(id) => {
                reply.opened_passthrough(FileHandle(o.fh), flags & FopenFlags::FOPEN_NOFLUSH, &id)
            }
            None => reply.opened(FileHandle(o.fh), flags),
        }
    }

    /// Counts handle `fh` as an open of `ino` if the inode has open pass-through handles
    /// already, returning their backing file (`None` inside: through the daemon); `None`
    /// if it has none.
    fn count_open(&self, ino: u64, fh: u64) -> Option<Option<Arc<BackingId>>> {
        let mut io = lock(&self.io);
        let io = &mut *io;
        let e = io.inodes.get_mut(&ino)?;
        e.1 += 1;
        let id = e.0.clone();
        io.handles.insert(fh, ino);
        Some(id)
    }

    /// Runs `f` with directory handle `fh`. Handle 0 (the kernel sends no `opendir`, see
    /// [`Filesystem::opendir`]): the pages of one listing come as successive offsets, so the
    /// handle made for offset 0 is kept for the pages after it ([`Streams`]) and closed at the
    /// empty page that ends the listing: a folder is listed once per listing, not per page.
    fn dir_call<T>(
        &self,
        c: Caller,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        f: impl Fn(u64) -> Result<Vec<T>, FsError>,
    ) -> Result<Vec<T>, FsError> {
        if fh.0 != 0 {
            return f(fh.0);
        }
        let kept = (offset > 0)
            .then(|| lock(&self.streams).get(&ino.0).copied())
            .flatten();
        if let Some(h) = kept {
            match f(h) {
                // closed meanwhile (another listing of the folder began): listed again
                Err(FsError::BadHandle(_)) => {}
                r => return self.stream_page(c, ino.0, h, r),
            }
        }
        let h = self.core.opendir(c, ino.0)?;
        let replaced = lock(&self.streams).push(ino.0, h);
        if let Some((_, old)) = replaced.filter(|(_, old)| *old != h) {
            let _ = self.core.releasedir(c, old);
        }
        let r = f(h);
        self.stream_page(c, ino.0, h, r)
    }

    /// A page served from kept handle `h` of `ino`: the handle is closed when the page is
    /// empty (the end of the listing) or failed.
    fn stream_page<T>(
        &self,
        c: Caller,
        ino: u64,
        h: u64,
        r: Result<Vec<T>, FsError>,
    ) -> Result<Vec<T>, FsError> {
        if r.as_ref().map_or(true, Vec::is_empty) {
            let mut s = lock(&self.streams);
            if s.peek(&ino) == Some(&h) {
                s.pop(&ino);
            }
            drop(s);
            let _ = self.core.releasedir(c, h);
        }
        r
    }

    /// How long the kernel may cache the name and attributes of `a` (asked per reply: a
    /// watch falling back to polling shortens it).
    fn ttl(&self, a: &Attr) -> Duration {
        self.core.ttl_of(a.ino)
    }
}

/// The caller of request `req`.
fn who(req: &Request) -> Caller {
    Caller {
        uid: req.uid(),
        gid: req.gid(),
        pid: req.pid(),
    }
}

/// Replies to `getxattr`/`listxattr` with `data`: its size when asked with size 0, `ERANGE`
/// when it does not fit.
fn reply_xattr(size: u32, data: &[u8], reply: ReplyXattr) {
    if size == 0 {
        reply.size(data.len() as u32);
    } else if data.len() > size as usize {
        reply.error(errno("xattr", &FsError::TooSmall));
    } else {
        reply.data(data);
    }
}

fn file_type(k: FileKind) -> FileType {
    match k {
        FileKind::Dir => FileType::Directory,
        FileKind::File => FileType::RegularFile,
        FileKind::Symlink => FileType::Symlink,
        FileKind::Fifo => FileType::NamedPipe,
        FileKind::Socket => FileType::Socket,
        FileKind::CharDevice => FileType::CharDevice,
        FileKind::BlockDevice => FileType::BlockDevice,
    }
}

fn fattr(a: &Attr) -> FileAttr {
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size,
        blocks: a.blocks,
        atime: a.atime,
        mtime: a.mtime,
        ctime: a.ctime,
        crtime: a.ctime,
        kind: file_type(a.kind),
        perm: a.perm,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: a.rdev,
        blksize: a.blksize,
        flags: 0,
    }
}

fn errno(op: &str, e: &FsError) -> Errno {
    let n = e.errno();
    match n {
        libc::ENOENT | libc::ESTALE => log::trace!("{op}: {e}"),
        libc::EIO => log::warn!("{op}: {e}"),
        _ => log::debug!("{op}: {e}"),
    }
    Errno::from_i32(n)
}

fn set_time(t: Option<TimeOrNow>) -> Option<SetTime> {
    t.map(|t| match t {
        TimeOrNow::Now => SetTime::Now,
        TimeOrNow::SpecificTime(t) => SetTime::At(t),
    })
}

fn fopen(keep_cache: bool) -> FopenFlags {
    if keep_cache {
        FopenFlags::FOPEN_KEEP_CACHE
    } else {
        FopenFlags::empty()
    }
}

impl Filesystem for TafsFs {
    fn destroy(&mut self) {
        self.core.finish();
    }

    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        let mut want = InitFlags::FUSE_DO_READDIRPLUS | InitFlags::FUSE_READDIRPLUS_AUTO;
        if self.open_less {
            // without opens, a changed size or mtime seen in the attributes is what drops
            // the kernel's pages of a file (once the watch has fallen back to polling)
            want |= InitFlags::FUSE_AUTO_INVAL_DATA;
        }
        if let Err(missing) = config.add_capabilities(want) {
            log::info!("kernel lacks {missing:?}; plain readdir only");
        }
        if self.core.kernel_acls() && config.add_capabilities(InitFlags::FUSE_POSIX_ACL).is_err() {
            log::info!("kernel lacks FUSE_POSIX_ACL; ACL getxattrs reach the daemon");
        }
        // (backing files may sit on a stacked file system themselves: depth 2)
        if config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
            && config.set_max_stack_depth(2).is_ok()
        {
            self.passthrough.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.core.lookup(who(req), parent.0, name) {
            Ok(a) => reply.entry(&self.ttl(&a), &fattr(&a), Generation(0)),
            Err(e) => reply.error(errno("lookup", &e)),
        }
    }

    // `batch_forget` is fuser's default: one `forget` per inode.
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.core.forget(ino.0, nlookup);
    }

    fn getattr(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.core.getattr(who(req), ino.0, fh.map(|f| f.0)) {
            Ok(a) => reply.attr(&self.ttl(&a), &fattr(&a)),
            Err(e) => reply.error(errno("getattr", &e)),
        }
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let set = SetAttr {
            mode,
            uid,
            gid,
            size,
            atime: set_time(atime),
            mtime: set_time(mtime),
        };
        match self.core.setattr(who(req), ino.0, set, fh.map(|f| f.0)) {
            Ok(a) => reply.attr(&self.ttl(&a), &fattr(&a)),
            Err(e) => reply.error(errno("setattr", &e)),
        }
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.core.readlink(who(req), ino.0) {
            Ok(t) => reply.data(&t),
            Err(e) => reply.error(errno("readlink", &e)),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        match self
            .core
            .mknod(who(req), NewNode::new(parent.0, name, mode, umask), rdev)
        {
            Ok(a) => reply.entry(&self.ttl(&a), &fattr(&a), Generation(0)),
            Err(e) => reply.error(errno("mknod", &e)),
        }
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        match self
            .core
            .mkdir(who(req), NewNode::new(parent.0, name, mode, umask))
        {
            Ok(a) => reply.entry(&self.ttl(&a), &fattr(&a), Generation(0)),
            Err(e) => reply.error(errno("mkdir", &e)),
        }
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.core.unlink(who(req), parent.0, name) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("unlink", &e)),
        }
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.core.rmdir(who(req), parent.0, name) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("rmdir", &e)),
        }
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        match self.core.symlink(who(req), parent.0, link_name, target) {
            Ok(a) => reply.entry(&self.ttl(&a), &fattr(&a), Generation(0)),
            Err(e) => reply.error(errno("symlink", &e)),
        }
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        match self
            .core
            .rename(who(req), parent.0, name, newparent.0, newname, flags.bits())
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("rename", &e)),
        }
    }

    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        match self.core.link(who(req), ino.0, newparent.0, newname) {
            Ok(a) => reply.entry(&self.ttl(&a), &fattr(&a), Generation(0)),
            Err(e) => reply.error(errno("link", &e)),
        }
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        // a descriptor opened for reading only has nothing to flush on close (write-back
        // commits on the close of a written file; locks are the kernel's): no FLUSH round trip
        let noflush = if flags.0 & libc::O_ACCMODE == libc::O_RDONLY && flags.0 & libc::O_TRUNC == 0
        {
            FopenFlags::FOPEN_NOFLUSH
        } else {
            FopenFlags::empty()
        };
        let opened = self.core.open(who(req), ino.0, flags.0);
        match opened {
            Ok(o) if self.open_less && !noflush.is_empty() && self.core.open_less() => {
                // ENOSYS (after the open succeeded): the kernel opens files itself from now
                // on, sends no OPEN, RELEASE or (below) FLUSH, and keeps their pages; reads
                // come with handle 0
                let _ = self.core.release(who(req), o.fh);
                log::info!("files open without a round trip from now on (read-only mount)");
                reply.error(Errno::ENOSYS)
            }
            Ok(o) => self.reply_open(ino.0, o, fopen(o.keep_cache) | noflush, reply),
            Err(e) => reply.error(errno("open", &e)),
        }
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let r = if fh.0 == 0 {
            // a file the kernel opened itself (open-less mode)
            self.core.read_ino(who(req), ino.0, offset, size)
        } else {
            self.core.read(who(req), fh.0, offset, size)
        };
        match r {
            Ok(d) => reply.data(&d),
            Err(e) => reply.error(errno("read", &e)),
        }
    }

    fn write(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.core.write(who(req), fh.0, offset, data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(errno("write", &e)),
        }
    }

    fn flush(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        if fh.0 == 0 {
            // the close of a file the kernel opened itself (open-less mode, read-only):
            // nothing to flush, and ENOSYS sends no FLUSH from now on
            return reply.error(Errno::ENOSYS);
        }
        match self.core.flush(who(req), fh.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("flush", &e)),
        }
    }

    fn release(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        // (dropped after the lock: dropping the inode's last backing id closes it)
        let _closed = self.passthrough.load(Ordering::Relaxed).then(|| {
            let mut io = lock(&self.io);
            let ino = io.handles.remove(&fh.0)?;
            let e = io.inodes.get_mut(&ino)?;
            e.1 -= 1;
            if e.1 == 0 {
                return io.inodes.remove(&ino);
            }
            None
        });
        match self.core.release(who(req), fh.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("release", &e)),
        }
    }

    fn fsync(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        if fh.0 == 0 {
            return reply.ok(); // (open-less mode: a read-only file)
        }
        match self.core.fsync(who(req), fh.0, datasync) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("fsync", &e)),
        }
    }

    fn opendir(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.core.cache_dirs() {
            // ENOSYS: the kernel stops sending OPENDIR/RELEASEDIR and caches listings
            // (FOPEN_CACHE_DIR + FOPEN_KEEP_CACHE) until invalidated; readdir comes with
            // handle 0 (served by a handle made for it, below)
            return reply.error(errno("opendir", &FsError::Unimplemented("opendir")));
        }
        match self.core.opendir(who(req), ino.0) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(errno("opendir", &e)),
        }
    }

    fn readdir(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        match self.dir_call(who(req), ino, fh, offset, |fh| {
            self.core.readdir(who(req), fh, offset)
        }) {
            Ok(items) => {
                for (next, it) in items {
                    if reply.add(INodeNo(it.ino), next, file_type(it.kind), &it.name) {
                        break;
                    }
                }
                reply.ok()
            }
            Err(e) => reply.error(errno("readdir", &e)),
        }
    }

    fn readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        match self.dir_call(who(req), ino, fh, offset, |fh| {
            self.core.readdirplus(who(req), fh, offset)
        }) {
            Ok(items) => {
                let mut items = items.into_iter();
                for (next, it) in items.by_ref() {
                    let Some(a) = it.attr else { continue };
                    if reply.add(
                        INodeNo(it.ino),
                        next,
                        &it.name,
                        &self.ttl(&a),
                        &fattr(&a),
                        Generation(0),
                    ) {
                        // not sent: the lookup the core counted for it is not the kernel's
                        if it.name != "." && it.name != ".." {
                            self.core.forget(it.ino, 1);
                        }
                        break;
                    }
                }
                // entries after a full reply are not sent either
                for (_, it) in items.filter(|(_, it)| it.name != "." && it.name != "..") {
                    self.core.forget(it.ino, 1);
                }
                reply.ok()
            }
            Err(e) => reply.error(errno("readdirplus", &e)),
        }
    }

    fn releasedir(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        match self.core.releasedir(who(req), fh.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("releasedir", &e)),
        }
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok()
    }

    // Extended attributes. Where the core has none (the game-folder mount), reading answers
    // ENOSYS (not EOPNOTSUPP), which makes the kernel stop asking and answer EOPNOTSUPP
    // itself from then on. Writing (ACLs that editors copy onto saved files included): the
    // core's answer, every time.
    fn getxattr(&self, req: &Request, ino: INodeNo, n: &OsStr, size: u32, reply: ReplyXattr) {
        if !self.core.has_xattrs() {
            return reply.error(errno(
                "getxattr",
                &FsError::Unimplemented("extended attributes"),
            ));
        }
        match self.core.getxattr(who(req), ino.0, n) {
            Ok(v) => reply_xattr(size, &v, reply),
            Err(e) => reply.error(errno("getxattr", &e)),
        }
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        if !self.core.has_xattrs() {
            return reply.error(errno(
                "listxattr",
                &FsError::Unimplemented("extended attributes"),
            ));
        }
        match self.core.listxattr(who(req), ino.0) {
            Ok(v) => reply_xattr(size, &v, reply),
            Err(e) => reply.error(errno("listxattr", &e)),
        }
    }

    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        match self.core.setxattr(who(req), ino.0, name) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("setxattr", &e)),
        }
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.core.setxattr(who(req), ino.0, name) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("removexattr", &e)),
        }
    }

    fn statfs(&self, req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match self.core.statfs(who(req)) {
            Ok(s) => reply.statfs(
                s.blocks, s.bfree, s.bavail, s.files, s.ffree, s.bsize, s.namelen, s.frsize,
            ),
            Err(e) => reply.error(errno("statfs", &e)),
        }
    }

    // The requests below are not supported. fuser's defaults answer them the same way but
    // log a warning for each, and `ioctl` comes with every `isatty` (Python's `open`, most
    // tools' first look at a descriptor): answered quietly here.

    /// No file of the mount takes an ioctl: `ENOTTY`, what a disk file answers to a terminal's
    /// (`TCGETS` of `isatty`); the kernel makes it `EOPNOTSUPP` for file flags (`lsattr`).
    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: IoctlFlags,
        cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: ReplyIoctl,
    ) {
        log::trace!("ioctl {cmd:#x}: ENOTTY");
        reply.error(Errno::ENOTTY);
    }

    /// `SEEK_DATA`/`SEEK_HOLE`: `ENOSYS` once, then the kernel answers them itself for every
    /// file (the whole file is data).
    fn lseek(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: i64,
        _whence: i32,
        reply: ReplyLseek,
    ) {
        reply.error(Errno::ENOSYS);
    }

    /// `ENOSYS` once, then the kernel (and `cp`) copy through reads and writes, which the
    /// write-back sees as any other write.
    fn copy_file_range(
        &self,
        _req: &Request,
        _ino_in: INodeNo,
        _fh_in: FileHandle,
        _offset_in: u64,
        _ino_out: INodeNo,
        _fh_out: FileHandle,
        _offset_out: u64,
        _len: u64,
        _flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        reply.error(Errno::ENOSYS);
    }

    /// `ENOSYS` once, then every `fallocate` is `EOPNOTSUPP` without a round trip
    /// (`posix_fallocate` then writes the range instead).
    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOSYS);
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        match self.core.access(who(req), ino.0, mask.bits()) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno("access", &e)),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        match self
            .core
            .create(who(req), NewNode::new(parent.0, name, mode, umask), flags)
        {
            Ok((a, o)) => {
                // a created file's I/O goes through the daemon: its inode's other opens
                // meanwhile must too
                let mut io = lock(&self.io);
                if self.passthrough.load(Ordering::Relaxed) && !io.inodes.contains_key(&a.ino) {
                    io.inodes.insert(a.ino, (None, 0));
                }
                if let Some(e) = io.inodes.get_mut(&a.ino) {
                    e.1 += 1;
                    io.handles.insert(o.fh, a.ino);
                }
                drop(io);
                reply.created(
                    &self.ttl(&a),
                    &fattr(&a),
                    Generation(0),
                    FileHandle(o.fh),
                    fopen(o.keep_cache),
                )
            }
            Err(e) => reply.error(errno("create", &e)),
        }
    }
}

/// How to mount.
#[derive(Debug, Clone)]
pub struct MountConfig {
    /// Let every user access the mount (`-o allow_other`).
    pub allow_other: bool,
    /// Let root access the mount (`-o allow_root`).
    pub allow_root: bool,
    /// Worker threads serving requests (at least 2).
    pub threads: usize,
    /// Extra mount options passed to the kernel as they are.
    pub extra: Vec<String>,
    /// Name shown as the mount's source.
    pub fsname: String,
}

impl Default for MountConfig {
    fn default() -> Self {
        MountConfig {
            allow_other: false,
            allow_root: false,
            threads: 4,
            extra: Vec::new(),
            fsname: "tafs".into(),
        }
    }
}

/// A mounted (not yet running) session plus its invalidation thread.
pub struct Mounted {
    /// The fuser session; `run` it, or `spawn` it into the background.
    pub session: Session<TafsFs>,
    /// The thread sending kernel cache invalidations; it ends with the session.
    pub invalidator: JoinHandle<()>,
    /// The file system served (tests of `forget` read its inode count). Weak: the core,
    /// and with it the invalidation channel, ends with the session.
    pub ops: Weak<dyn FsOps>,
}

/// Mounts `game_dir` at `mountpoint`. When this returns, the kernel has completed the
/// FUSE handshake: the mount is live (requests are served once the session runs).
pub fn mount(
    game_dir: &Path,
    mountpoint: &Path,
    opts: MountOptions,
    cfg: &MountConfig,
) -> Result<Mounted, FsError> {
    let read_only = opts.read_only;
    let opts_state = opts.state_dir.clone().filter(|_| !read_only);
    let (tx, rx) = mpsc::channel();
    let core = Arc::new(Core::new(game_dir, opts, Some(tx))?);
    let progress = core.inval_progress.clone();
    log::info!("{}: {}", game_dir.display(), core.change_detection());
    if let Some(w) = core.watch.clone() {
        let weak = Arc::downgrade(&core);
        std::thread::Builder::new()
            .name("tafs-watch".into())
            .spawn(move || super::core::watching::run(w, weak))?;
    }
    Core::start_committer(&core)?;
    Core::start_ahead(&core)?;
    let tables = super::tables::Setup {
        journal: super::tables::Journal::of_mount(opts_state.as_deref(), game_dir, true)?,
        archive_rows: true,
    };
    mount_ops(core, read_only, tables, rx, Some(progress), mountpoint, cfg)
}

/// Mounts the merged game view of `game_dir` (read-only; sources in `priority` order) at
/// `mountpoint`. Returns once the kernel handshake is done, like [`mount`].
pub fn mount_merged(
    game_dir: &Path,
    mountpoint: &Path,
    opts: MountOptions,
    priority: Priority,
    cfg: &MountConfig,
) -> Result<Mounted, FsError> {
    let watch = opts.watch;
    let (tx, rx) = mpsc::channel();
    let mut core = MergedCore::new(game_dir, opts, priority)?;
    // Watched, the view invalidates what the kernel holds after each change; polling, it
    // sends nothing (inodes are versioned, see SEMANTICS.md).
    if watch {
        core = core.with_watch(tx);
    }
    let core = Arc::new(core);
    log::info!("{}: {}", game_dir.display(), core.change_detection());
    if core.watching() {
        let weak = Arc::downgrade(&core);
        std::thread::Builder::new()
            .name("tafs-watch".into())
            .spawn(move || crate::fs::merged::run_watch(weak))?;
    }
    mount_ops(core, true, Default::default(), rx, None, mountpoint, cfg)
}

/// Mounts the writable merged view of `game_dir` with TARGET on top at `mountpoint`.
pub fn mount_overlay(
    game_dir: &Path,
    target: Target,
    mountpoint: &Path,
    opts: MountOptions,
    priority: Priority,
    cfg: &MountConfig,
) -> Result<Mounted, FsError> {
    let (tx, rx) = mpsc::channel();
    let (mod_path, loose) = match &target {
        Target::Folder(p) => (p, true),
        Target::Archive(p) => (p, false),
    };
    let journal = crate::fs::tables::Journal::of_mount(opts.state_dir.as_deref(), mod_path, loose)?;
    let core = Arc::new(OverlayCore::new(
        game_dir,
        target,
        opts,
        priority,
        Some(tx),
    )?);
    let tables = crate::fs::tables::Setup {
        journal,
        archive_rows: false,
    };
    mount_ops(core, false, tables, rx, None, mountpoint, cfg)
}

/// The mount option `o` of `-o`: the flags of mount(8) as flags (`noatime`, …), `nosuid`
/// and `nodev` as what every mount has already, anything else passed to the kernel as
/// it is (`max_read=N`, security contexts, …). `suid` and `dev` are refused: a daemon that
/// runs as root never serves set-user-id programs or device files to other users.
fn kernel_option(o: &str) -> Result<MountOption, FsError> {
    Ok(match o {
        "noatime" => MountOption::NoAtime,
        "atime" => MountOption::Atime,
        "noexec" => MountOption::NoExec,
        "exec" => MountOption::Exec,
        "sync" => MountOption::Sync,
        "async" => MountOption::Async,
        "dirsync" => MountOption::DirSync,
        "nosuid" => MountOption::NoSuid,
        "nodev" => MountOption::NoDev,
        "suid" | "dev" => {
            return Err(FsError::Invalid(format!(
                "-o {o}: every tafs mount is nosuid,nodev"
            )))
        }
        "relatime" | "strictatime" | "nodiratime" | "lazytime" | "nostrictatime" => {
            return Err(FsError::Invalid(format!(
                "-o {o}: not supported (atime, noatime are)"
            )))
        }
        other => MountOption::CUSTOM(other.to_string()),
    })
}

pub(in crate::fs) fn mount_ops(
    core: Arc<dyn FsOps>,
    read_only: bool,
    tables: super::tables::Setup,
    rx: Receiver<Inval>,
    progress: Option<Arc<InvalProgress>>,
    mountpoint: &Path,
    cfg: &MountConfig,
) -> Result<Mounted, FsError> {
    let core: Arc<dyn FsOps> = Arc::new(super::tables::with_tables(
        core,
        read_only,
        tables,
        cfg.allow_other,
    ));
    let mut options = vec![
        MountOption::FSName(cfg.fsname.clone()),
        MountOption::Subtype("tafs".into()),
        MountOption::DefaultPermissions,
        MountOption::NoDev,
        MountOption::NoSuid,
    ];
    options.push(if read_only {
        MountOption::RO
    } else {
        MountOption::RW
    });
    for o in &cfg.extra {
        options.push(kernel_option(o)?);
    }
    let mut config = Config::default();
    config.mount_options = options;
    config.acl = if cfg.allow_other {
        SessionACL::All
    } else if cfg.allow_root {
        SessionACL::RootAndOwner
    } else {
        SessionACL::Owner
    };
    config.n_threads = Some(cfg.threads.max(2));
    let fs = TafsFs::new(core.clone()).with_open_less(read_only && !cfg.allow_other);
    let session = Session::new(fs, mountpoint, &config)?;
    let notifier = session.notifier();
    let invalidator = std::thread::Builder::new()
        .name("tafs-invalidate".into())
        .spawn(move || invalidation_loop(rx, notifier, progress))?;
    Ok(Mounted {
        session,
        invalidator,
        ops: Arc::downgrade(&core),
    })
}

/// Sends each invalidation to the kernel, outside of any request handler, counting them in
/// `progress`. Ends when the core (the only sender) is dropped.
fn invalidation_loop(
    rx: Receiver<Inval>,
    notifier: Notifier,
    progress: Option<Arc<InvalProgress>>,
) {
    for msg in rx {
        let _done = Done(progress.as_deref());
        let r = match &msg {
            Inval::Entry { parent, name } => notifier.inval_entry(INodeNo(*parent), name),
            Inval::Inode { ino } => notifier.inval_inode(INodeNo(*ino), 0, 0),
        };
        match r {
            Ok(()) => log::trace!("invalidated {msg:?}"),
            // Not cached by the kernel (or already gone): nothing to do.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => log::debug!("invalidation {msg:?} failed: {e}"),
        }
    }
}

/// Counts one invalidation as handled when dropped.
struct Done<'a>(Option<&'a InvalProgress>);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            p.done(1);
        }
    }
}
