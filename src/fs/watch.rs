//! Change detection by inotify: the game folder watched recursively, so the kernel may cache
//! names, attributes, listings and data for long and the core need not `stat` a binary on
//! every request to know it is unchanged.
//!
//! [`Watch`] owns the inotify descriptor, the watched folders and the *trusted* metadata of
//! binaries (what `lstat` said, valid until an event names the path). Events are read by the
//! watch thread ([`run`]) and, before any trusted metadata is used, by the request itself
//! (one non-blocking `read`; a listing's entries share one, [`Watch::batch`]), so a change
//! made before a request is always seen by it. The thread turns events into kernel
//! invalidations (`Inval`, sent by the invalidation thread) and decodes changed binaries
//! again (their old generation is invalidated as usual).
//!
//! Where watching is not possible (`--no-watch`, a network file system, the inotify watch
//! limit) the mount polls as before: short TTLs and an identity `stat` per request. A watch
//! that fails while mounted (limit reached, queue overflow) falls back to polling and
//! invalidates everything the kernel was given.

use super::FsError;
use crate::fs::shared::lock;
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::Metadata;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the kernel may cache names and attributes while the watch is authoritative.
pub const WATCH_TTL: Duration = Duration::from_secs(24 * 3600);

/// Trusted entries kept at most (beyond, the map is cleared: the next requests `stat`).
const MAX_TRUSTED: usize = 1 << 20;

/// File systems whose changes inotify does not see (made on other machines): NFS, SMB/CIFS,
/// 9p, Ceph, AFS, FUSE (sshfs, …), Lustre, GPFS.
const REMOTE_FS: &[(i64, &str)] = &[
    (0x6969, "NFS"),
    (0xFF53_4D42, "CIFS"),
    (0xFE53_4D42, "SMB2"),
    (0x517B, "SMB"),
    (0x0102_1997, "9p"),
    (0x00C3_6400, "Ceph"),
    (0x5346_414F, "AFS"),
    (0x6573_5546, "FUSE"),
    (0x0BD0_0BD0, "Lustre"),
    (0x4750_4653, "GPFS"),
];

const MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::MODIFY)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::CLOSE_WRITE)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::DONT_FOLLOW)
    .union(WatchMask::ONLYDIR)
    .union(WatchMask::EXCL_UNLINK);

/// What one event asks the watch thread to do.
#[derive(Debug)]
pub(in crate::fs) enum Todo {
    /// `name` in folder `dir` (both relative to the game folder) changed: `listing` when it
    /// appeared, vanished or was renamed, else its contents or attributes changed (`writing`:
    /// written, not closed yet; a binary is decoded again once it is closed).
    Changed {
        dir: PathBuf,
        name: OsString,
        listing: bool,
        writing: bool,
    },
    /// Events were lost, or the watch stopped being authoritative: invalidate everything.
    All,
}

struct State {
    inotify: Inotify,
    /// Watched folder of each descriptor (relative to the game folder).
    dirs: HashMap<WatchDescriptor, PathBuf>,
    /// Descriptor of each watched folder.
    by_path: HashMap<PathBuf, WatchDescriptor>,
    /// Metadata of paths known unchanged since it was taken.
    trusted: HashMap<PathBuf, Metadata>,
    /// Events seen so far (a `stat` taken before an event is not trusted).
    seq: u64,
    /// Work for the watch thread.
    todo: Vec<Todo>,
    /// Device of the game folder.
    dev: u64,
    /// Why the watch is not authoritative (set once, never cleared).
    failed: Option<String>,
}

/// The recursive inotify watch of a game folder.
pub struct Watch {
    root: PathBuf,
    state: Mutex<State>,
    authoritative: AtomicBool,
    /// Wakes the watch thread when a request has read events (an eventfd).
    wake: OwnedFd,
}

/// The change-detection mode of a mount, as `-v` and `tafs status` report it.
/// `no_watch`: why there is no watch when `w` is `None`.
pub fn mode_line(w: Option<&Watch>, no_watch: &str, ttl: Duration) -> String {
    match w {
        Some(w) if w.authoritative() => {
            let n = lock(&w.state).dirs.len();
            format!("change detection: inotify watch ({n} folders; the kernel caches for 24 h, direct changes show within milliseconds)")
        }
        Some(w) => {
            let why = lock(&w.state).failed.clone().unwrap_or_default();
            format!(
                "change detection: polling, TTL {} s ({why})",
                ttl.as_secs_f64()
            )
        }
        None => format!(
            "change detection: polling, TTL {} s ({no_watch})",
            ttl.as_secs_f64()
        ),
    }
}

thread_local! {
    /// Set while this thread serves a request whose pending events were read when it began
    /// ([`Watch::batch`]).
    static BATCH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// While alive, [`Watch::trusted`] on this thread reads no events (see [`Watch::batch`]).
pub(in crate::fs) struct Batch {
    was: bool,
}

impl Drop for Batch {
    fn drop(&mut self) {
        BATCH.with(|b| b.set(self.was));
    }
}

impl Watch {
    /// Watches `root` and every folder beneath it. `Ok(watch)` may be a watch that already
    /// fell back to polling (network file system, watch limit): see [`Watch::authoritative`].
    pub fn new(root: &Path) -> Result<Arc<Watch>, FsError> {
        let inotify = Inotify::init()?;
        // SAFETY: eventfd returns a new descriptor or -1, checked below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        let wake = unsafe { OwnedFd::from_raw_fd(fd) };
        let dev = std::fs::symlink_metadata(root)?.dev();
        let w = Arc::new(Watch {
            root: root.to_path_buf(),
            state: Mutex::new(State {
                inotify,
                dirs: HashMap::new(),
                by_path: HashMap::new(),
                trusted: HashMap::new(),
                seq: 0,
                todo: Vec::new(),
                dev,
                failed: None,
            }),
            authoritative: AtomicBool::new(true),
            wake,
        });
        {
            let mut st = lock(&w.state);
            w.add_tree(&mut st, Path::new(""));
            if let Some(why) = &st.failed {
                log::warn!("{}: not watched ({why}); polling", root.display());
            }
        }
        Ok(w)
    }

    /// True while every folder is watched and no event was lost.
    pub fn authoritative(&self) -> bool {
        self.authoritative.load(Ordering::Acquire)
    }

    fn fail(&self, st: &mut State, why: String) {
        if st.failed.is_none() {
            st.failed = Some(why);
        }
        if self.authoritative.swap(false, Ordering::AcqRel) {
            st.trusted.clear();
            st.todo.push(Todo::All);
            for (_, wd) in st.by_path.drain() {
                let _ = st.inotify.watches().remove(wd);
            }
            st.dirs.clear();
        }
    }

    /// Watches folder `rel` and every folder beneath it (iteratively; symlinks not followed).
    fn add_tree(&self, st: &mut State, rel: &Path) {
        let mut stack = vec![rel.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if !self.authoritative() {
                return;
            }
            let abs = if dir.as_os_str().is_empty() {
                self.root.clone()
            } else {
                self.root.join(&dir)
            };
            let meta = match std::fs::symlink_metadata(&abs) {
                Ok(m) if m.is_dir() => m,
                _ => continue, // gone, or not a folder any more
            };
            if meta.dev() != st.dev || dir.as_os_str().is_empty() {
                if let Some(kind) = remote_fs(&abs) {
                    self.fail(st, format!("{} is on {kind}", abs.display()));
                    return;
                }
            }
            match st.inotify.watches().add(&abs, MASK) {
                Ok(wd) => {
                    if let Some(old) = st.dirs.insert(wd.clone(), dir.clone()) {
                        st.by_path.remove(&old);
                    }
                    st.by_path.insert(dir.clone(), wd);
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(libc::ENOTDIR) =>
                {
                    continue
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                    let n = st.dirs.len();
                    self.fail(
                        st,
                        format!("inotify watch limit reached after {n} folders; raise fs.inotify.max_user_watches"),
                    );
                    return;
                }
                Err(e) => {
                    self.fail(st, format!("cannot watch {}: {e}", abs.display()));
                    return;
                }
            }
            for name in subdirs(&abs) {
                stack.push(dir.join(name));
            }
        }
    }

    /// Stops watching folder `rel` and everything beneath it.
    fn remove_tree(&self, st: &mut State, rel: &Path) {
        let gone: Vec<PathBuf> = st
            .by_path
            .keys()
            .filter(|p| p.starts_with(rel))
            .cloned()
            .collect();
        for p in gone {
            if let Some(wd) = st.by_path.remove(&p) {
                st.dirs.remove(&wd);
                let _ = st.inotify.watches().remove(wd);
            }
        }
    }

    /// Reads every pending event (never blocks), updating what is trusted and queueing work
    /// for the watch thread. Returns whether there was any.
    fn drain(&self, st: &mut State) -> bool {
        let mut buf = [0u8; 16384];
        let mut any = false;
        loop {
            let events: Vec<(Option<WatchDescriptor>, EventMask, Option<OsString>)> =
                match st.inotify.read_events(&mut buf) {
                    Ok(evs) => evs
                        .map(|e| {
                            let wd = (e.mask & EventMask::Q_OVERFLOW).is_empty().then_some(e.wd);
                            (wd, e.mask, e.name.map(|n| n.to_os_string()))
                        })
                        .collect(),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        self.fail(st, format!("reading inotify events: {e}"));
                        break;
                    }
                };
            if events.is_empty() {
                break;
            }
            any = true;
            for (wd, mask, name) in events {
                self.event(st, wd, mask, name);
            }
        }
        any
    }

    fn event(
        &self,
        st: &mut State,
        wd: Option<WatchDescriptor>,
        mask: EventMask,
        name: Option<OsString>,
    ) {
        st.seq += 1;
        if mask.contains(EventMask::Q_OVERFLOW) {
            self.fail(st, "inotify queue overflowed".into());
            return;
        }
        let Some(dir) = wd.as_ref().and_then(|wd| st.dirs.get(wd)).cloned() else {
            return;
        };
        if mask.contains(EventMask::IGNORED) {
            if let Some(wd) = wd {
                st.dirs.remove(&wd);
                if st.by_path.get(&dir) == Some(&wd) {
                    st.by_path.remove(&dir);
                }
            }
            return;
        }
        let Some(name) = name else {
            // the watched folder itself (deleted): its parent reports the name
            return;
        };
        let path = dir.join(&name);
        let is_dir = mask.contains(EventMask::ISDIR);
        let listing = mask.intersects(
            EventMask::CREATE | EventMask::DELETE | EventMask::MOVED_FROM | EventMask::MOVED_TO,
        );
        if is_dir && listing {
            st.trusted.retain(|k, _| !k.starts_with(&path));
            self.remove_tree(st, &path);
            if mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
                self.add_tree(st, &path);
            }
        } else {
            st.trusted.remove(&path);
            if mask.contains(EventMask::CREATE) {
                // a new hard link of a trusted file: changes made through either name are
                // reported under that name only, so the file is not trusted any more
                if let Ok(m) = std::fs::symlink_metadata(self.root.join(&path)) {
                    if m.nlink() > 1 {
                        st.trusted
                            .retain(|_, t| (t.dev(), t.ino()) != (m.dev(), m.ino()));
                    }
                }
            }
        }
        let writing = mask == EventMask::MODIFY;
        st.todo.push(Todo::Changed {
            dir,
            name,
            listing,
            writing,
        });
    }

    /// The metadata of `rel` known unchanged (`Ok`), or the event count to pass to
    /// [`Watch::trust`] with a fresh `lstat` (`Err`). Reads pending events first.
    pub(in crate::fs) fn trusted(&self, rel: &Path) -> Result<Metadata, u64> {
        if !self.authoritative() {
            return Err(u64::MAX);
        }
        let mut st = lock(&self.state);
        if !BATCH.with(std::cell::Cell::get) && self.drain(&mut st) {
            self.kick();
        }
        match st.trusted.get(rel) {
            Some(m) if self.authoritative() => Ok(m.clone()),
            _ => Err(st.seq),
        }
    }

    /// Reads pending events now, and not again in [`Watch::trusted`] on this thread until the
    /// guard is dropped: for one request that looks at many binaries (a listing's entries),
    /// each change made before it began is seen, and one made while it runs is as if made
    /// after it (its event is read by the next request, and the watch thread invalidates what
    /// the kernel was given). One non-blocking `read` per request instead of one per entry.
    pub(in crate::fs) fn batch(&self) -> Batch {
        if self.authoritative() {
            let mut st = lock(&self.state);
            if self.drain(&mut st) {
                self.kick();
            }
        }
        Batch {
            was: BATCH.with(|b| b.replace(true)),
        }
    }

    /// [`Watch::batch`] for a thread working for a request that began one (the threads a
    /// listing fans out to): the events were read when it began, so nothing is read here.
    pub(in crate::fs) fn joined(&self, batch: &Batch) -> Batch {
        let _ = batch;
        Batch {
            was: BATCH.with(|b| b.replace(true)),
        }
    }

    /// Trusts `meta` (an `lstat` of `rel` taken after [`Watch::trusted`] answered `seq`)
    /// unless an event was read since.
    /// Only a regular file with one link is trusted: a change made through another link
    /// would be reported under that name only.
    pub(in crate::fs) fn trust(&self, rel: &Path, meta: &Metadata, seq: u64) {
        if seq == u64::MAX || !self.authoritative() || !meta.is_file() || meta.nlink() != 1 {
            return;
        }
        let mut st = lock(&self.state);
        if st.seq == seq {
            if st.trusted.len() >= MAX_TRUSTED {
                st.trusted.clear();
            }
            st.trusted.insert(rel.to_path_buf(), meta.clone());
        }
    }

    /// Reads pending events (never blocks) and returns how many were ever read: a view that
    /// handles every change alike (the merged view) rescans when the number moved.
    pub(in crate::fs) fn events_read(&self) -> u64 {
        let mut st = lock(&self.state);
        if self.drain(&mut st) {
            self.kick();
        }
        st.seq
    }

    /// Waits at most `timeout` for events; true when any were read since the last call, or
    /// the watch fell back to polling (for views that handle every change alike).
    pub(in crate::fs) fn wait_changed(&self, timeout: Duration) -> bool {
        !self.wait(timeout).is_empty()
    }

    fn kick(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to our eventfd.
        let _ = unsafe {
            libc::write(
                self.wake.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
    }

    /// Waits (at most `timeout`) for events or a wake-up, reads them, and returns the work.
    pub(in crate::fs) fn wait(&self, timeout: Duration) -> Vec<Todo> {
        let ino_fd = lock(&self.state).inotify.as_fd().as_raw_fd();
        let mut fds = [
            libc::pollfd {
                fd: ino_fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid array of two pollfd for the call's duration; both
        // descriptors are owned by `self`, which outlives the call.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if fds[1].revents != 0 {
            let mut n: u64 = 0;
            // SAFETY: reads 8 bytes into a valid u64 from our non-blocking eventfd.
            let _ = unsafe {
                libc::read(
                    self.wake.as_raw_fd(),
                    (&mut n as *mut u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
        }
        let mut st = lock(&self.state);
        self.drain(&mut st);
        std::mem::take(&mut st.todo)
    }
}

/// The sub-folders of folder `abs` (symlinks not followed), read without changing its
/// access time.
fn subdirs(abs: &Path) -> Vec<OsString> {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(abs.as_os_str().as_bytes()) else {
        return Vec::new();
    };
    // SAFETY: AT_FDCWD is a valid directory descriptor for openat.
    let cwd = unsafe { std::os::fd::BorrowedFd::borrow_raw(libc::AT_FDCWD) };
    list_quietly(cwd, &c)
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, t)| *t == libc::S_IFDIR)
        .map(|(n, _)| n)
        .collect()
}

/// The entries of folder `name` in `dir` (not followed if a symlink) with their file type
/// (`S_IFDIR`, `S_IFREG`, …), read with `O_NOATIME` where allowed (the owner or
/// `CAP_FOWNER`): listings the mount makes for itself (watching, counting a folder's asset
/// children for its link count) must not show in the folder's access time.
pub(in crate::fs) fn list_quietly(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &std::ffi::CStr,
) -> std::io::Result<Vec<(OsString, libc::mode_t)>> {
    use std::os::unix::ffi::OsStrExt;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `dir` is a valid descriptor and `name` a NUL-terminated path; checked below.
    let mut fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_NOATIME) };
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
        // SAFETY: as above.
        fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    }
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is an open directory descriptor; on success the stream owns it.
    let stream = unsafe { libc::fdopendir(fd) };
    if stream.is_null() {
        let e = std::io::Error::last_os_error();
        // SAFETY: `fd` is still ours when fdopendir fails.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    let mut out = Vec::new();
    loop {
        // SAFETY: `stream` is a valid stream until closedir below.
        let ent = unsafe { libc::readdir(stream) };
        if ent.is_null() {
            break;
        }
        // SAFETY: readdir returned a valid entry whose d_name is NUL-terminated.
        let (entry, kind) = unsafe {
            (
                std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()),
                (*ent).d_type,
            )
        };
        let b = entry.to_bytes();
        if b == b"." || b == b".." {
            continue;
        }
        let t = match kind {
            libc::DT_DIR => libc::S_IFDIR,
            libc::DT_REG => libc::S_IFREG,
            libc::DT_LNK => libc::S_IFLNK,
            libc::DT_UNKNOWN => {
                // SAFETY: a zeroed stat is a valid out-buffer; `stream` and `entry` are valid.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                let r = unsafe {
                    libc::fstatat(
                        libc::dirfd(stream),
                        entry.as_ptr(),
                        &mut st,
                        libc::AT_SYMLINK_NOFOLLOW,
                    )
                };
                if r == 0 {
                    st.st_mode & libc::S_IFMT
                } else {
                    0
                }
            }
            _ => 0,
        };
        out.push((std::ffi::OsStr::from_bytes(b).to_os_string(), t));
    }
    // SAFETY: `stream` is valid and closed once (this also closes `fd`).
    unsafe { libc::closedir(stream) };
    Ok(out)
}

fn remote_fs(path: &Path) -> Option<&'static str> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statfs fills `s` for a valid NUL-terminated path.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let t = s.f_type as i64;
    REMOTE_FS.iter().find(|(m, _)| *m == t).map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted_now(w: &Watch, rel: &str, abs: &Path) -> bool {
        match w.trusted(Path::new(rel)) {
            Ok(_) => true,
            Err(seq) => {
                if let Ok(m) = std::fs::symlink_metadata(abs) {
                    w.trust(Path::new(rel), &m, seq);
                }
                false
            }
        }
    }

    #[test]
    fn a_stat_is_trusted_until_an_event_names_the_path() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("a")).unwrap();
        let f = d.path().join("a/x.gaf");
        std::fs::write(&f, "1").unwrap();
        let w = Watch::new(d.path()).unwrap();
        assert!(w.authoritative());
        assert!(
            !trusted_now(&w, "a/x.gaf", &f),
            "nothing trusted before a stat"
        );
        assert!(trusted_now(&w, "a/x.gaf", &f));
        std::fs::write(&f, "22").unwrap();
        assert!(!trusted_now(&w, "a/x.gaf", &f), "written: not trusted");
        let m = w
            .trusted(Path::new("a/x.gaf"))
            .expect("trusted again after a stat");
        assert_eq!(m.len(), 2);

        // a folder made after the watch started is watched too
        std::fs::create_dir_all(d.path().join("b/c")).unwrap();
        let g = d.path().join("b/c/y.gaf");
        std::fs::write(&g, "1").unwrap();
        // the events of b are read (and b/c watched) before c's file is trusted
        let _ = w.trusted(Path::new("b"));
        assert!(!trusted_now(&w, "b/c/y.gaf", &g));
        assert!(trusted_now(&w, "b/c/y.gaf", &g));
        std::fs::write(&g, "changed").unwrap();
        assert!(!trusted_now(&w, "b/c/y.gaf", &g));

        // a file with a second link is never trusted (a change through the other name
        // would be reported under that name only)
        std::fs::hard_link(&f, d.path().join("link.gaf")).unwrap();
        assert!(!trusted_now(&w, "a/x.gaf", &f));
        assert!(!trusted_now(&w, "a/x.gaf", &f));

        // renaming a folder forgets what was trusted in it
        std::fs::rename(d.path().join("b"), d.path().join("b2")).unwrap();
        assert!(!trusted_now(&w, "b/c/y.gaf", &g));
        let g2 = d.path().join("b2/c/y.gaf");
        assert!(!trusted_now(&w, "b2/c/y.gaf", &g2));
        assert!(trusted_now(&w, "b2/c/y.gaf", &g2));
        std::fs::write(&g2, "again").unwrap();
        assert!(
            !trusted_now(&w, "b2/c/y.gaf", &g2),
            "the moved folder is watched"
        );
    }

    #[test]
    fn a_batch_reads_events_once_when_it_begins() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("x.gaf");
        std::fs::write(&f, "1").unwrap();
        let w = Watch::new(d.path()).unwrap();
        assert!(!trusted_now(&w, "x.gaf", &f));
        assert!(trusted_now(&w, "x.gaf", &f));
        // a change made before the batch begins is seen by it
        std::fs::write(&f, "22").unwrap();
        {
            let _b = w.batch();
            assert!(!trusted_now(&w, "x.gaf", &f), "changed before the batch");
            assert!(trusted_now(&w, "x.gaf", &f));
            // one made while it runs is read after it (as if made after the request)
            std::fs::write(&f, "333").unwrap();
            assert_eq!(w.trusted(Path::new("x.gaf")).map(|m| m.len()).ok(), Some(2));
            // another thread reads events as usual
            std::thread::scope(|s| {
                s.spawn(|| assert!(w.trusted(Path::new("x.gaf")).is_err()));
            });
        }
        assert!(!trusted_now(&w, "x.gaf", &f), "read once the batch ended");
        assert_eq!(w.trusted(Path::new("x.gaf")).map(|m| m.len()).ok(), Some(3));
    }

    #[test]
    fn listing_quietly_keeps_the_access_time() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("f"), "").unwrap();
        // an access time older than the modification time: relatime would update it
        let c = std::ffi::CString::new(d.path().as_os_str().as_bytes()).unwrap();
        let times = [
            libc::timespec {
                tv_sec: 1000,
                tv_nsec: 0,
            },
            libc::timespec {
                tv_sec: 2000,
                tv_nsec: 0,
            },
        ];
        // SAFETY: valid path and two timespecs.
        assert_eq!(
            unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), 0) },
            0
        );
        let cwd = unsafe { std::os::fd::BorrowedFd::borrow_raw(libc::AT_FDCWD) };
        let mut got = list_quietly(cwd, &c).unwrap();
        got.sort();
        assert_eq!(
            got,
            [("f".into(), libc::S_IFREG), ("sub".into(), libc::S_IFDIR)]
        );
        assert_eq!(std::fs::metadata(d.path()).unwrap().atime(), 1000);
        assert_eq!(subdirs(d.path()), [OsString::from("sub")]);
        // the control: a plain listing updates it
        let _ = std::fs::read_dir(d.path()).unwrap().count();
        assert_ne!(std::fs::metadata(d.path()).unwrap().atime(), 1000);
    }
}
