//! Open files: the handles of real, generated and staged files, and the operations on them
//! (open, read, write, flush, fsync, release).

use super::inode::{NodeKind, DETACHED};
use super::writeback_ops::WritebackOps;
use super::AssetKey;
use super::{is_archive_path, is_asset_name, Core, Inval};
use super::{Attr, Opened};
use crate::fs::layout::Layout;
use crate::fs::shared::lock;
use crate::fs::{Caller, FsError};
use crate::view::View;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub(in crate::fs) enum Handle {
    Real {
        file: File,
        ino: u64,
        written: AtomicBool,
    },
    /// A generated file: the bytes (or the view to render them from) and attributes of the
    /// version that was opened.
    Generated(GenBytes, Attr),
    /// A staged file of an asset directory (write-back).
    Staged {
        file: File,
        ino: u64,
        rel: PathBuf,
        writable: bool,
        written: AtomicBool,
        /// A write failed (a full state directory): the partial file was removed, and
        /// closing the descriptor commits nothing.
        failed: AtomicBool,
    },
}

/// The bytes of an open generated file: rendered at `open`, or — when the decoded view of
/// the version opened is in memory and the size is known — at the first `read` from that
/// view, held by the handle. A file the kernel keeps in its page cache (`FOPEN_KEEP_CACHE`)
/// is then opened without being rendered again.
pub(in crate::fs) struct GenBytes {
    ready: OnceLock<Arc<Vec<u8>>>,
    pinned: Mutex<Option<Box<Pinned>>>,
}

/// What a generated file is rendered from at its first read.
struct Pinned {
    src: Source,
    key: AssetKey,
    layout: Arc<Layout>,
    vpath: String,
}

/// The version a generated file was opened at, held until its first read.
enum Source {
    /// Its decoded view, in memory at the open.
    View(Arc<dyn View>),
    /// Its binary, held open (the view was not in memory): rendered through the cache while
    /// that version is the current one (`gen`), decoded from this file if it was replaced.
    Binary { file: File, gen: u64 },
}

/// How an open generated file gets its bytes.
enum Pin {
    /// Cached already.
    Cached(Arc<Vec<u8>>),
    /// Rendered at the first read from this source (the version of this key).
    Later(Source, AssetKey),
}

/// At most this many open generated files hold their binary open (beyond, an open whose
/// view is not in memory renders at once).
const MAX_HELD_BINARIES: usize = 1024;

impl GenBytes {
    /// Bytes rendered already.
    pub(in crate::fs) fn ready(bytes: Arc<Vec<u8>>) -> GenBytes {
        GenBytes {
            ready: OnceLock::from(bytes),
            pinned: Mutex::new(None),
        }
    }
}

impl Handle {
    /// The inode open.
    pub(in crate::fs) fn ino(&self) -> u64 {
        match self {
            Handle::Real { ino, .. } | Handle::Staged { ino, .. } => *ino,
            Handle::Generated(_, attr) => attr.ino,
        }
    }
}

impl Core {
    /// Registers an open handle (the node stays in the table while it is open).
    pub(in crate::fs) fn add_handle(&self, h: Handle) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        self.table_mut().opened(h.ino());
        lock(&self.handles).insert(fh, Arc::new(h));
        fh
    }

    pub(in crate::fs) fn open_options(flags: i32) -> OpenOptions {
        let acc = flags & libc::O_ACCMODE;
        let mut o = OpenOptions::new();
        o.read(acc == libc::O_RDONLY || acc == libc::O_RDWR);
        o.write(acc == libc::O_WRONLY || acc == libc::O_RDWR);
        if flags & libc::O_APPEND != 0 {
            o.append(true);
        }
        if flags & libc::O_TRUNC != 0 && acc != libc::O_RDONLY {
            o.truncate(true);
        }
        let passed = flags
            & !(libc::O_ACCMODE
                | libc::O_CREAT
                | libc::O_EXCL
                | libc::O_TRUNC
                | libc::O_APPEND
                | libc::O_NOCTTY);
        o.custom_flags(passed);
        o
    }

    /// The `openat` flags of a pass-through open with FUSE open `flags` (access mode,
    /// `O_APPEND`, `O_TRUNC` and the other status flags; not `O_CREAT`/`O_EXCL`/`O_NOCTTY`).
    pub(in crate::fs) fn open_flags(flags: i32) -> i32 {
        let acc = flags & libc::O_ACCMODE;
        let mut f = flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY);
        if acc == libc::O_RDONLY {
            f &= !libc::O_TRUNC;
        }
        f
    }

    pub(in crate::fs) fn wants_write(flags: i32) -> bool {
        let acc = flags & libc::O_ACCMODE;
        acc != libc::O_RDONLY || flags & libc::O_TRUNC != 0
    }

    /// Opens a file.
    pub(in crate::fs) fn open_node(
        &self,
        c: Caller,
        ino: u64,
        flags: i32,
    ) -> Result<Opened, FsError> {
        let node = self.node(ino)?;
        let real = matches!(node.kind, NodeKind::Real { .. });
        if flags & libc::O_ACCMODE == libc::O_ACCMODE && !real {
            // O_WRONLY|O_RDWR (access mode 3, for ioctls): a real file opens as Linux opens
            // it; generated and staged files have no use for it
            return Err(FsError::Invalid(
                "open: O_WRONLY and O_RDWR together".into(),
            ));
        }
        match node.kind {
            NodeKind::Real { .. } => {
                if Self::wants_write(flags) && self.opts.read_only {
                    return Err(FsError::ReadOnly("mounted read-only"));
                }
                let rel = self.rel_path(ino)?;
                let file = self.open_rel(&rel, Self::open_flags(flags), 0)?;
                let fh = self.add_handle(Handle::Real {
                    file,
                    ino,
                    written: AtomicBool::new(false),
                });
                // the watch invalidates the kernel's pages when the file changes directly
                Ok(Opened {
                    fh,
                    keep_cache: self.watching(),
                })
            }
            NodeKind::AssetRoot | NodeKind::ViewDir { .. } => Err(FsError::IsDir),
            NodeKind::Status { root } => {
                if Self::wants_write(flags) {
                    return Err(FsError::ReadOnly("the status file is read-only"));
                }
                let attr = self.status_attr(ino, root)?;
                let bytes = Arc::new(self.status_bytes(root, c)?);
                let fh = self.add_handle(Handle::Generated(GenBytes::ready(bytes), attr));
                Ok(Opened {
                    fh,
                    keep_cache: false,
                })
            }
            NodeKind::ViewFile { root, gen, vpath } => {
                // renamed over or removed: its path names another file now, which this inode
                // (whose attributes the kernel may still hold) must not open; ESTALE makes the
                // kernel look the path up again
                if node.parent == DETACHED {
                    return Err(FsError::Stale);
                }
                // a file no build reads opens as generated (a write: EROFS), never staged
                if self.opts.state_dir.is_some() && self.accepts(ino, None) {
                    if let Some(o) = self.wb_open(ino, root, gen, &vpath, flags)? {
                        return Ok(o);
                    }
                }
                if Self::wants_write(flags) {
                    return Err(FsError::ReadOnly("generated files are read-only"));
                }
                let (rel, layout, meta) = self.current(root, gen)?;
                // a size only the persisted index gave is checked by rendering now
                let pinned = layout
                    .verified_size(&vpath)
                    .and_then(|size| Some((size, self.pin(&rel, gen, &vpath)?)));
                let (bytes, size) = match pinned {
                    Some((size, Pin::Cached(b))) => (GenBytes::ready(b), size),
                    Some((size, Pin::Later(src, key))) => (
                        GenBytes {
                            ready: OnceLock::new(),
                            pinned: Mutex::new(Some(Box::new(Pinned {
                                src,
                                key,
                                layout: layout.clone(),
                                vpath: vpath.clone(),
                            }))),
                        },
                        size,
                    ),
                    None => {
                        let shown = layout.size(&vpath);
                        let b = self.render(&rel, gen, &layout, &vpath)?;
                        let n = b.len() as u64;
                        if shown.is_some_and(|s| s != n) {
                            log::warn!(
                                "{}/{vpath}: {n} bytes, not the {} the index recorded",
                                rel.display(),
                                shown.unwrap_or(0)
                            );
                            // before the open returns: its reads must not stop at the
                            // old size (an open holds no folder lock, see `inval_barrier`)
                            self.send(Inval::Inode { ino });
                            self.inval_barrier();
                        }
                        (GenBytes::ready(b), n)
                    }
                };
                let mut attr = self.gen_attr(ino, &meta, false, size, 0);
                // an mtime kept across a commit is decided by the bytes: render them now
                attr.mtime = self.kept_mtime(&rel, &meta, &vpath, false, || {
                    let b = match bytes.ready.get() {
                        Some(b) => b.clone(),
                        None => {
                            let b = self.render(&rel, gen, &layout, &vpath).ok()?;
                            *lock(&bytes.pinned) = None;
                            bytes.ready.get_or_init(|| b).clone()
                        }
                    };
                    Some(crate::fs::shared::fingerprint(&b))
                });
                self.with_member_shown(&mut attr, &rel, &meta, &vpath, false);
                if !Self::accepts_at(&rel, &vpath, true) {
                    attr.perm &= !0o222;
                }
                let fh = self.add_handle(Handle::Generated(bytes, attr));
                Ok(Opened {
                    fh,
                    keep_cache: true,
                })
            }
        }
    }

    /// How an open generated file `vpath` of asset `rel` at generation `gen` gets its bytes:
    /// cached already, or rendered at its first read from the decoded view if it is in
    /// memory now, else from the binary held open (its identity checked), so an open decodes
    /// nothing. `None`: render at the open.
    fn pin(&self, rel: &Path, gen: u64, vpath: &str) -> Option<Pin> {
        let ident = {
            let asset = self.slot(rel);
            let st = lock(&asset.state);
            if st.gen != gen {
                return None;
            }
            st.ident.clone()?
        };
        let key = (rel.to_path_buf(), ident);
        if let Some(b) = self.cache.cached(&key, vpath) {
            return Some(Pin::Cached(b));
        }
        if let Some(v) = self.cache.view(&key) {
            return Some(Pin::Later(Source::View(v), key));
        }
        // archives are read by range: their views hold no bytes to decode again
        if is_archive_path(rel) || lock(&self.handles).len() >= MAX_HELD_BINARIES {
            return None;
        }
        let file = self
            .open_rel(rel, libc::O_RDONLY | libc::O_CLOEXEC, 0)
            .ok()?;
        let same = file
            .metadata()
            .is_ok_and(|m| crate::fs::stage::Ident::of(&m) == key.1);
        same.then_some(Pin::Later(Source::Binary { file, gen }, key))
    }

    /// The bytes of an open generated file, rendered now from its pinned view if not yet.
    fn gen_bytes(&self, g: &GenBytes) -> Result<Arc<Vec<u8>>, FsError> {
        if let Some(b) = g.ready.get() {
            return Ok(b.clone());
        }
        let mut pinned = lock(&g.pinned);
        if let Some(b) = g.ready.get() {
            return Ok(b.clone());
        }
        let p = pinned.as_ref().ok_or(FsError::Stale)?;
        let b = match &p.src {
            Source::View(view) => {
                let view = view.clone();
                self.cache
                    .render(&p.key, &p.layout, &p.vpath, || Ok(view))?
            }
            Source::Binary { file, gen } => {
                match self.render(&p.key.0, *gen, &p.layout, &p.vpath) {
                    Err(FsError::Stale) => {
                        self.cache.render(&p.key, &p.layout, &p.vpath, || {
                            self.view_from_file(&p.key.0, file, &p.key.1)
                        })?
                    }
                    r => r?,
                }
            }
        };
        let _ = g.ready.set(b.clone());
        // the view is not held once the bytes are
        *pinned = None;
        Ok(b)
    }

    pub(in crate::fs) fn handle(&self, fh: u64) -> Result<Arc<Handle>, FsError> {
        lock(&self.handles)
            .get(&fh)
            .cloned()
            .ok_or(FsError::BadHandle(fh))
    }

    /// Reads up to `size` bytes at `offset`.
    pub(in crate::fs) fn read_handle(
        &self,
        fh: u64,
        offset: u64,
        size: u32,
    ) -> Result<Vec<u8>, FsError> {
        match &*self.handle(fh)? {
            Handle::Generated(g, _) => Ok(crate::fs::slice_at(&self.gen_bytes(g)?, offset, size)),
            Handle::Real { file, .. } | Handle::Staged { file, .. } => {
                Ok(crate::fs::read_at(file, offset, size)?)
            }
        }
    }

    /// The backing file of pass-through handle `fh` (see [`crate::fs::FsOps::backing_file`]):
    /// its own file when open for reading and writing (reading, on a read-only mount), else
    /// the same inode opened again through `/proc/self/fd` (never by path, which may name
    /// another file by now). Regular
    /// files only, and not asset binaries shown as files (a write of one makes it a folder).
    pub(in crate::fs) fn backing_of(&self, fh: u64) -> Option<std::io::Result<File>> {
        use std::os::fd::AsRawFd;
        let h = self.handle(fh).ok()?;
        let Handle::Real { file, ino, .. } = &*h else {
            return None;
        };
        let node = self.node(*ino).ok()?;
        if node.name.to_str().is_some_and(is_asset_name) || !file.metadata().ok()?.is_file() {
            return None;
        }
        // read and write, as every later open of the inode shares it; read only on a
        // read-only mount (nothing writes, and closing it is no change the watch would see)
        let want = if self.opts.read_only {
            libc::O_RDONLY
        } else {
            libc::O_RDWR
        };
        // SAFETY: F_GETFL on a descriptor this handle owns.
        let fl = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        if fl >= 0 && fl & libc::O_ACCMODE == want {
            return Some(file.try_clone());
        }
        Some(
            OpenOptions::new()
                .read(true)
                .write(want == libc::O_RDWR)
                .custom_flags(libc::O_CLOEXEC)
                .open(format!("/proc/self/fd/{}", file.as_raw_fd())),
        )
    }

    /// Reads up to `size` bytes at `offset` of file `ino`, which the kernel opened without
    /// asking (open-less mode, see [`crate::fs::FsOps::open_less`]): an open, a read and a
    /// release in one. A generated inode is one version, so the bytes are that version's
    /// (`ESTALE` once it was replaced); a status file's pages are dropped after each read,
    /// its content changing while its size may not.
    pub(in crate::fs) fn read_unopened(
        &self,
        c: Caller,
        ino: u64,
        offset: u64,
        size: u32,
    ) -> Result<Vec<u8>, FsError> {
        let status = matches!(self.node(ino)?.kind, NodeKind::Status { .. });
        let o = self.open_node(c, ino, libc::O_RDONLY | libc::O_CLOEXEC)?;
        let r = self.read_handle(o.fh, offset, size);
        self.release_handle(o.fh)?;
        if status {
            self.send(Inval::Inode { ino });
        }
        r
    }

    /// Writes `data` at `offset` (at the end for files opened with `O_APPEND`).
    pub(in crate::fs) fn write_handle(
        &self,
        fh: u64,
        offset: u64,
        data: &[u8],
    ) -> Result<u32, FsError> {
        match &*self.handle(fh)? {
            Handle::Generated(..) => Err(FsError::ReadOnly("generated files are read-only")),
            Handle::Real { file, written, .. } => {
                file.write_all_at(data, offset)?;
                written.store(true, Ordering::Relaxed);
                Ok(data.len() as u32)
            }
            Handle::Staged {
                file,
                written,
                failed,
                rel,
                ino,
                ..
            } => {
                if let Err(e) = file.write_all_at(data, offset) {
                    if !failed.swap(true, Ordering::Relaxed) {
                        self.staged_write_failed(rel, *ino, file, &e);
                    }
                    return Err(e.into());
                }
                if failed.load(Ordering::Relaxed) {
                    // the file is no longer staged: later writes of the descriptor are lost
                    return Err(FsError::Io(std::io::Error::from_raw_os_error(libc::EIO)));
                }
                if !written.swap(true, Ordering::Relaxed) {
                    self.staged_written(rel, *ino);
                }
                Ok(data.len() as u32)
            }
        }
    }

    /// Called on every `close` of a descriptor.
    pub(in crate::fs) fn flush_handle(&self, fh: u64) -> Result<(), FsError> {
        match &*self.handle(fh)? {
            Handle::Staged {
                writable: true,
                written,
                failed,
                rel,
                ino,
                ..
            } => {
                if failed.load(Ordering::Relaxed) {
                    // what the failed write left is gone (see `staged_write_failed`)
                    return Err(FsError::Io(std::io::Error::from_raw_os_error(libc::EIO)));
                }
                // a descriptor that only truncated (truncate -s 0) does not commit
                if written.load(Ordering::Relaxed) {
                    self.staged_written(rel, *ino);
                    // another file of the asset still being written (Blender writes
                    // model.mtl while model.obj is open): the build waits for it
                    let staged = self.staging(rel);
                    if self.writing_beside(rel, *ino) {
                        *lock(&staged.put_off) = Some(*ino);
                        return Ok(());
                    }
                    *lock(&staged.put_off) = None;
                    return self.staged_save(rel, *ino, false);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Whether a file of asset `rel` other than `ino` that a build reads is open for
    /// writing (a file a build ignores, such as git's `.git/index.lock` held open through a
    /// whole `git clone` into a new asset, puts nothing off).
    fn writing_beside(&self, rel: &Path, ino: u64) -> bool {
        let others: Vec<u64> = lock(&self.handles)
            .values()
            .filter_map(|h| match &**h {
                Handle::Staged {
                    writable: true,
                    rel: r,
                    ino: i,
                    ..
                } if r == rel && *i != ino => Some(*i),
                _ => None,
            })
            .collect();
        others
            .into_iter()
            .any(|i| self.vpath_of(i).is_some_and(|v| self.commits(rel, &v)))
    }

    /// Flushes a file to stable storage.
    pub(in crate::fs) fn fsync_handle(&self, fh: u64, datasync: bool) -> Result<(), FsError> {
        match &*self.handle(fh)? {
            Handle::Generated(..) => Ok(()),
            Handle::Staged {
                file,
                rel,
                ino,
                writable,
                ..
            } => {
                file.sync_all()?;
                if *writable {
                    self.staged_save(rel, *ino, true)?;
                }
                Ok(())
            }
            Handle::Real { file, .. } => {
                if datasync {
                    file.sync_data()?
                } else {
                    file.sync_all()?
                }
                Ok(())
            }
        }
    }

    /// Closes a handle for good.
    pub(in crate::fs) fn release_handle(&self, fh: u64) -> Result<(), FsError> {
        let h = lock(&self.handles)
            .remove(&fh)
            .ok_or(FsError::BadHandle(fh))?;
        self.table_mut().closed(h.ino());
        if let Handle::Staged {
            ino,
            rel,
            writable: true,
            ..
        } = &*h
        {
            // the last writer of the asset gone: the save put off commits (its errors
            // go to the status; nothing is left to report them to)
            let staged = self.staging(rel);
            let due = {
                let mut g = lock(&staged.put_off);
                match *g {
                    Some(v) if !self.writing_beside(rel, v) => g.take(),
                    _ => None,
                }
            };
            if let Some(v) = due {
                if let Err(e) = self.staged_save(rel, v, false) {
                    log::warn!("{}: {e}", rel.display());
                }
            }
            if is_archive_path(rel) {
                let _m = self.mutating();
                self.archive_released(rel, *ino);
            }
        }
        if let Handle::Real { ino, written, .. } = &*h {
            if written.load(Ordering::Relaxed) {
                // A binary written through the mount becomes a directory once it parses.
                let node = self.table().get(*ino).cloned();
                if let Some(n) = node {
                    let asset = n.name.to_str().is_some_and(is_asset_name);
                    if asset && n.parent != DETACHED {
                        self.send(Inval::Entry {
                            parent: n.parent,
                            name: n.name,
                        });
                    }
                }
            }
        }
        Ok(())
    }
}
