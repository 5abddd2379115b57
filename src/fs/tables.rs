//! The balance tables folder `.tafs-tables/` at the mount root (not listed, like
//! `.tafs-status`): one generated CSV per [`crate::view::tables::FAMILIES`] entry, built from
//! the files the mount shows, and writable: a saved CSV is planned by
//! [`crate::view::tables::Table::plan`] and every changed file is written through the mount
//! itself (a temporary file beside it renamed over it), so the same code serves the game
//! folder, the merged view and `--merged --into MOD` (whose writes copy a stock file up into
//! the mod).
//!
//! [`TablesOps`] wraps any [`FsOps`]: the folder, its CSVs and the scratch files editors
//! create beside them (`sed -i`'s and rsync's temporary files, LibreOffice's lock file: kept
//! in memory, gone at unmount) have inode and handle numbers of their own (above
//! [`BASE`]); every other request goes to the wrapped file system unchanged. A CSV opened for
//! writing collects the new text; its `close` (flush) or a rename onto it commits, and an
//! error (a refused cell: row and column) answers `EIO` and is kept in `.tafs-tables/status`.

use super::core::{Attr, DirItem, FileKind, Opened, SetAttr, ROOT};
use super::ops::FsOps;
use super::{FsError, StatFs};
use crate::game::{GameFs, Kind};
use crate::view::tables::{list_files, read_files, Family, Table, FAMILIES};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// The folder's name at the mount root.
pub const DIR_NAME: &str = ".tafs-tables";

/// Inode and handle numbers at and above this belong to the tables folder (the wrapped
/// file systems count theirs up from 1).
pub const BASE: u64 = 1 << 62;
const DIR_INO: u64 = BASE;
const STATUS_INO: u64 = BASE + 1;
const CSV_INO: u64 = BASE + 16;
const SCRATCH_INO: u64 = BASE + 4096;
const STATUS_NAME: &str = "status";

/// Bytes of one CSV being written, and of all scratch files together.
const MAX_PENDING: usize = 256 << 20;

struct Scratch {
    ino: u64,
    data: Vec<u8>,
}

enum Handle {
    /// A snapshot for reading.
    Read(Vec<u8>),
    /// A CSV opened for writing (`ino`); its text is the family's `pending`.
    Csv { fam: usize, dirty: bool },
    /// A scratch file.
    Scratch { ino: u64 },
    /// A listing of the folder.
    Dir,
}

#[derive(Default)]
struct State {
    /// New text of a CSV being written, by family index.
    pending: HashMap<usize, Vec<u8>>,
    scratch: HashMap<OsString, Scratch>,
    handles: HashMap<u64, Handle>,
    next_fh: u64,
    next_scratch: u64,
    /// The outcome of the last commits, newest last.
    log: Vec<String>,
    mtime: Option<SystemTime>,
}

/// A file system with the tables folder added at its root.
pub struct TablesOps {
    inner: std::sync::Arc<dyn FsOps>,
    read_only: bool,
    /// Other users reach the mount (`-o allow_other`): a table holds only the files every
    /// user may read ([`OpsFs::public_only`]), whoever asks.
    shared: bool,
    state: Mutex<State>,
    /// Serialises commits (one reads, plans and writes at a time).
    commit: Mutex<()>,
    /// The last CSV of each family and the files it was built from.
    rendered: Mutex<HashMap<usize, Rendered>>,
}

/// A file of a table: its path, size and modification time.
type Stamp = (String, Option<(u64, Option<SystemTime>)>);

/// A rendered CSV and the files it was built from.
type Rendered = (Vec<Stamp>, Vec<u8>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl TablesOps {
    /// Wraps `inner`; `read_only`: the CSVs refuse writes (`EROFS` at open).
    pub fn new(inner: std::sync::Arc<dyn FsOps>, read_only: bool) -> TablesOps {
        TablesOps {
            inner,
            read_only,
            shared: false,
            state: Mutex::new(State {
                next_fh: BASE,
                next_scratch: SCRATCH_INO,
                ..State::default()
            }),
            commit: Mutex::new(()),
            rendered: Mutex::new(HashMap::new()),
        }
    }

    /// The tables of a mount other users reach (`-o allow_other`): built from the files
    /// every user may read only, so no user reads through them a value of a file the game
    /// folder hides from them (a root daemon reads every file), and every user reads the
    /// same table.
    pub fn shared(mut self, shared: bool) -> TablesOps {
        self.shared = shared;
        self
    }

    fn attr(&self, ino: u64, kind: FileKind, size: u64, perm: u16) -> Attr {
        let root = self.inner.getattr(ROOT, None).ok();
        let t = lock(&self.state).mtime.unwrap_or(SystemTime::UNIX_EPOCH);
        let t = root.as_ref().map_or(t, |r| r.mtime.max(t));
        Attr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: t,
            mtime: t,
            ctime: t,
            kind,
            perm,
            nlink: if kind == FileKind::Dir { 2 } else { 1 },
            uid: root.as_ref().map_or(0, |r| r.uid),
            gid: root.as_ref().map_or(0, |r| r.gid),
            rdev: 0,
            blksize: 4096,
        }
    }

    fn file_perm(&self) -> u16 {
        if self.read_only {
            0o444
        } else {
            0o644
        }
    }

    /// The CSV of family `fam` as the mount shows the game now: kept while the size and
    /// modification time of every file of the family (and their list) stay the same.
    fn render(&self, fam: usize) -> Result<Vec<u8>, FsError> {
        let f = &FAMILIES[fam];
        let gfs = OpsFs::new(&*self.inner, self.shared);
        let stamp: Vec<Stamp> = list_files(&gfs, Path::new(""), f)
            .into_iter()
            .map(|rel| {
                let st = gfs.stat(Path::new(&rel));
                (rel, st)
            })
            .collect();
        if let Some((s, b)) = lock(&self.rendered).get(&fam) {
            if *s == stamp {
                return Ok(b.clone());
            }
        }
        let csv = Table::build(f, read_files(&gfs, Path::new(""), f)?).to_csv();
        lock(&self.rendered).insert(fam, (stamp, csv.clone()));
        Ok(csv)
    }

    /// The table of `fam` built afresh (for a commit).
    fn table(&self, fam: &Family) -> Result<Table, FsError> {
        let gfs = OpsFs::new(&*self.inner, self.shared);
        Ok(Table::build(fam, read_files(&gfs, Path::new(""), fam)?))
    }

    fn status_text(&self) -> Vec<u8> {
        let st = lock(&self.state);
        let mut s = String::new();
        for l in &st.log {
            s.push_str(l);
            s.push('\n');
        }
        s.into_bytes()
    }

    fn getattr_own(&self, ino: u64) -> Result<Attr, FsError> {
        match ino {
            DIR_INO => Ok(self.attr(ino, FileKind::Dir, 0, 0o755)),
            STATUS_INO => {
                Ok(self.attr(ino, FileKind::File, self.status_text().len() as u64, 0o444))
            }
            i if (CSV_INO..CSV_INO + FAMILIES.len() as u64).contains(&i) => {
                let fam = (i - CSV_INO) as usize;
                let pending = lock(&self.state).pending.get(&fam).map(|p| p.len());
                let size = match pending {
                    Some(n) => n,
                    None => self.render(fam)?.len(),
                };
                Ok(self.attr(ino, FileKind::File, size as u64, self.file_perm()))
            }
            i => {
                let st = lock(&self.state);
                let s = st
                    .scratch
                    .values()
                    .find(|s| s.ino == i)
                    .ok_or(FsError::UnknownInode(i))?;
                let n = s.data.len() as u64;
                drop(st);
                Ok(self.attr(i, FileKind::File, n, 0o644))
            }
        }
    }

    fn lookup_own(&self, name: &OsStr) -> Result<Attr, FsError> {
        if name == STATUS_NAME {
            return self.getattr_own(STATUS_INO);
        }
        if let Some(i) = FAMILIES.iter().position(|f| name == f.csv) {
            return self.getattr_own(CSV_INO + i as u64);
        }
        let ino = lock(&self.state).scratch.get(name).map(|s| s.ino);
        match ino {
            Some(i) => self.getattr_own(i),
            None => Err(FsError::NotFound),
        }
    }

    fn new_handle(&self, h: Handle) -> u64 {
        let mut st = lock(&self.state);
        st.next_fh += 1;
        let fh = st.next_fh;
        st.handles.insert(fh, h);
        fh
    }

    fn note(&self, msg: String) {
        let mut st = lock(&self.state);
        st.log.push(msg);
        let n = st.log.len();
        if n > 100 {
            st.log.drain(..n - 100);
        }
    }

    /// Applies `text` as the new CSV of family `fam`: every changed file written through the
    /// wrapped file system, or nothing on a refused cell.
    fn commit_csv(&self, fam: usize, text: &[u8]) -> Result<(), FsError> {
        let _one = lock(&self.commit);
        let f = &FAMILIES[fam];
        let plan = self.table(f).and_then(|t| Ok(t.plan(text)?));
        let plan = match plan {
            Ok(p) => p,
            Err(e) => {
                log::warn!("{DIR_NAME}/{}: not applied: {e}", f.csv);
                self.note(format!("{}: refused, nothing written: {e}", f.csv));
                return Err(FsError::Commit(e.to_string()));
            }
        };
        let mut done = Vec::new();
        for (rel, bytes) in &plan {
            if let Err(e) = self.write_through(rel, bytes) {
                let msg = format!(
                    "{}: writing {rel} failed after {} of {} files: {e}",
                    f.csv,
                    done.len(),
                    plan.len()
                );
                log::warn!("{DIR_NAME}/{msg}");
                self.note(msg.clone());
                return Err(FsError::Commit(msg));
            }
            done.push(rel.as_str());
        }
        if !plan.is_empty() {
            self.note(format!("{}: committed {}", f.csv, done.join(", ")));
            lock(&self.state).mtime = Some(SystemTime::now());
        }
        Ok(())
    }

    /// Replaces file `rel` of the mount with `bytes`: a temporary file beside it, renamed
    /// over it.
    fn write_through(&self, rel: &str, bytes: &[u8]) -> Result<(), FsError> {
        let ops = &*self.inner;
        let path = Path::new(rel);
        let name = path.file_name().ok_or(FsError::NotFound)?;
        let parent = path.parent().unwrap_or(Path::new(""));
        let (dir, held) = resolve(ops, parent)?;
        let result = (|| {
            let mut tmp = OsString::from(".");
            tmp.push(name);
            tmp.push(".tafs-tables");
            let mode = ops
                .lookup(dir, name)
                .map(|a| {
                    ops.forget(a.ino, 1);
                    u32::from(a.perm)
                })
                .unwrap_or(0o644);
            let (a, opened) = ops.create(
                dir,
                &tmp,
                0o100000 | mode,
                0,
                libc::O_WRONLY | libc::O_TRUNC,
                0,
                0,
            )?;
            ops.forget(a.ino, 1);
            let mut w = (|| {
                let mut off = 0usize;
                while off < bytes.len() {
                    let n = ops.write(opened.fh, off as u64, &bytes[off..])? as usize;
                    if n == 0 {
                        return Err(FsError::Io(std::io::ErrorKind::WriteZero.into()));
                    }
                    off += n;
                }
                ops.flush(opened.fh)
            })();
            let r = ops.release(opened.fh);
            if w.is_ok() {
                w = r;
            }
            match w {
                Ok(()) => ops.rename(dir, &tmp, dir, name, 0),
                Err(e) => {
                    let _ = ops.unlink(dir, &tmp);
                    Err(e)
                }
            }
        })();
        forget_all(ops, &held);
        result
    }

    fn read_all(&self, ino: u64) -> Result<Vec<u8>, FsError> {
        match ino {
            STATUS_INO => Ok(self.status_text()),
            i if (CSV_INO..CSV_INO + FAMILIES.len() as u64).contains(&i) => {
                self.render((i - CSV_INO) as usize)
            }
            i => lock(&self.state)
                .scratch
                .values()
                .find(|s| s.ino == i)
                .map(|s| s.data.clone())
                .ok_or(FsError::UnknownInode(i)),
        }
    }

    fn own_dir_items(&self, plus: bool) -> Result<Vec<DirItem>, FsError> {
        let mut items = vec![
            (DIR_INO, OsString::from("."), FileKind::Dir),
            (ROOT, OsString::from(".."), FileKind::Dir),
            (STATUS_INO, OsString::from(STATUS_NAME), FileKind::File),
        ];
        for (i, f) in FAMILIES.iter().enumerate() {
            items.push((CSV_INO + i as u64, f.csv.into(), FileKind::File));
        }
        let mut scratch: Vec<(u64, OsString)> = lock(&self.state)
            .scratch
            .iter()
            .map(|(n, s)| (s.ino, n.clone()))
            .collect();
        scratch.sort();
        for (ino, n) in scratch {
            items.push((ino, n, FileKind::File));
        }
        items
            .into_iter()
            .map(|(ino, name, kind)| {
                let attr = match (plus, ino == ROOT) {
                    (false, _) => None,
                    (true, true) => Some(self.inner.getattr(ROOT, None)?),
                    (true, false) => Some(self.getattr_own(ino)?),
                };
                Ok(DirItem {
                    ino,
                    name,
                    kind,
                    attr,
                })
            })
            .collect()
    }

    fn listing(&self, fh: u64, offset: u64, plus: bool) -> Result<Vec<(u64, DirItem)>, FsError> {
        if !matches!(lock(&self.state).handles.get(&fh), Some(Handle::Dir)) {
            return Err(FsError::BadHandle(fh));
        }
        let items = self.own_dir_items(plus)?;
        Ok(items
            .into_iter()
            .enumerate()
            .skip(offset as usize)
            .map(|(i, d)| (i as u64 + 1, d))
            .collect())
    }

    fn csv_fam(ino: u64) -> Option<usize> {
        (CSV_INO..CSV_INO + FAMILIES.len() as u64)
            .contains(&ino)
            .then(|| (ino - CSV_INO) as usize)
    }
}

/// The inode of folder `rel` of `ops` and the inodes looked up on the way (to forget).
fn resolve(ops: &dyn FsOps, rel: &Path) -> Result<(u64, Vec<u64>), FsError> {
    let mut ino = ROOT;
    let mut held = Vec::new();
    for c in rel.components() {
        let Component::Normal(n) = c else {
            continue;
        };
        match ops.lookup(ino, n) {
            Ok(a) => {
                held.push(a.ino);
                ino = a.ino;
            }
            Err(e) => {
                forget_all(ops, &held);
                return Err(e);
            }
        }
    }
    Ok((ino, held))
}

fn forget_all(ops: &dyn FsOps, held: &[u64]) {
    for &i in held.iter().rev() {
        ops.forget(i, 1);
    }
}

/// The wrapped file system seen as a game folder (paths relative to its root), for one
/// build of a table: the listings it reads are kept, so the kind of an entry costs no lookup
/// and its size and time one `readdirplus` of its folder.
struct OpsFs<'a> {
    ops: &'a dyn FsOps,
    /// Only what every user may read: folders others may list and enter (from the root
    /// down), files others may read; anything else is as if missing.
    public_only: bool,
    listings: Mutex<HashMap<(PathBuf, bool), Listing>>,
}

/// An entry of a listing: name, kind, size and modification time (`readdirplus` only).
type Listed = (OsString, Kind, Option<(u64, SystemTime)>);

/// A folder's entries; `None` when it cannot be listed.
type Listing = Option<Vec<Listed>>;

impl<'a> OpsFs<'a> {
    fn new(ops: &'a dyn FsOps, public_only: bool) -> OpsFs<'a> {
        OpsFs {
            ops,
            public_only,
            listings: Mutex::new(HashMap::new()),
        }
    }

    fn with<T>(&self, p: &Path, f: impl FnOnce(u64) -> Option<T>) -> Option<T> {
        let (ino, held) = resolve(self.ops, p).ok()?;
        let public = !self.public_only || self.public(&held);
        let r = public.then(|| f(ino)).flatten();
        forget_all(self.ops, &held);
        r
    }

    /// Whether every user may reach the path of inodes `held` (looked up from the root): the root
    /// and every folder on the way listable and enterable by others (`r-x`), the last one
    /// readable by them (a folder `r-x`, a file `r`).
    fn public(&self, held: &[u64]) -> bool {
        let mut inos = vec![ROOT];
        inos.extend_from_slice(held);
        let last = inos.len() - 1;
        inos.iter().enumerate().all(|(i, &ino)| {
            let Ok(a) = self.ops.getattr(ino, None) else {
                return false;
            };
            let need = match a.kind {
                FileKind::Dir => 0o005,
                _ if i == last => 0o004,
                _ => return false,
            };
            a.perm & need == need
        })
    }

    /// The entries of folder `dir` (`plus`: with sizes and times), kept for the next call.
    fn listing(&self, dir: &Path, plus: bool) -> Option<Vec<Listed>> {
        let key = (dir.to_path_buf(), plus);
        if let Some(l) = lock(&self.listings).get(&key) {
            return l.clone();
        }
        let l = self.with(dir, |ino| {
            let fh = self.ops.opendir(ino).ok()?;
            let mut out = Vec::new();
            let mut off = 0;
            // (with attributes when only what every user may read is taken)
            let plus = plus || self.public_only;
            let ok = loop {
                let page = if plus {
                    self.ops.readdirplus(fh, off)
                } else {
                    self.ops.readdir(fh, off)
                };
                match page {
                    Ok(items) if items.is_empty() => break true,
                    Ok(items) => {
                        for (o, d) in items {
                            off = o;
                            if d.name == "." || d.name == ".." {
                                continue;
                            }
                            if plus {
                                // each readdirplus entry counts as a lookup
                                self.ops.forget(d.ino, 1);
                            }
                            let k = match d.kind {
                                FileKind::Dir => Kind::Dir,
                                FileKind::File => Kind::File,
                                _ => Kind::Other,
                            };
                            let need = if k == Kind::Dir { 0o005 } else { 0o004 };
                            if self.public_only
                                && !d.attr.as_ref().is_some_and(|a| a.perm & need == need)
                            {
                                continue;
                            }
                            out.push((d.name, k, d.attr.map(|a| (a.size, a.mtime))));
                        }
                    }
                    Err(_) => break false,
                }
            };
            let _ = self.ops.releasedir(fh);
            ok.then_some(out)
        });
        lock(&self.listings).insert(key, l.clone());
        l
    }

    fn entry(&self, path: &Path, plus: bool) -> Option<Listed> {
        let name = path.file_name()?;
        let parent = path.parent().unwrap_or(Path::new(""));
        self.listing(parent, plus)?
            .into_iter()
            .find(|(n, _, _)| n == name)
    }
}

impl GameFs for OpsFs<'_> {
    fn kind(&self, path: &Path) -> Option<Kind> {
        Some(self.entry(path, false)?.1)
    }
    fn names(&self, dir: &Path) -> Option<Vec<OsString>> {
        Some(self.listing(dir, false)?.into_iter().map(|l| l.0).collect())
    }
    fn read(&self, path: &Path, max: u64) -> Option<Vec<u8>> {
        self.with(path, |ino| {
            let a = self.ops.getattr(ino, None).ok()?;
            if a.kind != FileKind::File || a.size > max {
                return None;
            }
            let opened = self.ops.open(ino, libc::O_RDONLY).ok()?;
            let mut out = Vec::new();
            let ok = loop {
                match self.ops.read(opened.fh, out.len() as u64, 1 << 20) {
                    Ok(b) if b.is_empty() => break true,
                    Ok(b) => {
                        out.extend_from_slice(&b);
                        if out.len() as u64 > max {
                            break false;
                        }
                    }
                    Err(_) => break false,
                }
            };
            let _ = self.ops.release(opened.fh);
            ok.then_some(out)
        })
    }
    fn stat(&self, path: &Path) -> Option<(u64, Option<SystemTime>)> {
        let (size, mtime) = self.entry(path, true)?.2?;
        Some((size, Some(mtime)))
    }
}

fn own(ino: u64) -> bool {
    ino >= BASE
}

impl FsOps for TablesOps {
    fn ttl(&self) -> Duration {
        self.inner.ttl()
    }
    fn finish(&self) {
        self.inner.finish()
    }
    fn ttl_of(&self, ino: u64) -> Duration {
        if own(ino) {
            Duration::ZERO
        } else {
            self.inner.ttl_of(ino)
        }
    }
    fn cache_dirs(&self) -> bool {
        self.inner.cache_dirs()
    }
    fn open_less(&self) -> bool {
        self.inner.open_less()
    }
    fn kernel_acls(&self) -> bool {
        self.inner.kernel_acls()
    }
    fn read_ino(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
        if !own(ino) {
            return self.inner.read_ino(ino, offset, size);
        }
        let b = self.read_all(ino)?;
        Ok(slice(&b, offset, size))
    }
    fn backing_file(&self, fh: u64) -> Option<std::io::Result<std::fs::File>> {
        if own(fh) {
            None
        } else {
            self.inner.backing_file(fh)
        }
    }
    fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        if parent == ROOT && name == DIR_NAME {
            return self.getattr_own(DIR_INO);
        }
        if parent == DIR_INO {
            return self.lookup_own(name);
        }
        self.inner.lookup(parent, name)
    }
    fn forget(&self, ino: u64, n: u64) {
        if !own(ino) {
            self.inner.forget(ino, n)
        }
    }
    fn inodes(&self) -> usize {
        self.inner.inodes()
    }
    fn getattr(&self, ino: u64, fh: Option<u64>) -> Result<Attr, FsError> {
        if own(ino) {
            // An open table is as long as the text its handle reads.
            let snap = fh.and_then(|fh| match lock(&self.state).handles.get(&fh) {
                Some(Handle::Read(b)) => Some(b.len() as u64),
                _ => None,
            });
            let mut a = self.getattr_own(ino)?;
            if let Some(n) = snap {
                a.size = n;
                a.blocks = n.div_ceil(512);
            }
            Ok(a)
        } else {
            self.inner.getattr(ino, fh)
        }
    }
    fn readlink(&self, ino: u64) -> Result<Vec<u8>, FsError> {
        if own(ino) {
            return Err(FsError::Invalid("not a symbolic link".into()));
        }
        self.inner.readlink(ino)
    }
    fn open(&self, ino: u64, flags: i32) -> Result<Opened, FsError> {
        if !own(ino) {
            return self.inner.open(ino, flags);
        }
        let write = flags & libc::O_ACCMODE != libc::O_RDONLY;
        let trunc = flags & libc::O_TRUNC != 0;
        if ino == DIR_INO {
            return Err(FsError::IsDir);
        }
        if let Some(fam) = Self::csv_fam(ino) {
            if !write {
                let pending = lock(&self.state).pending.get(&fam).cloned();
                let b = match pending {
                    Some(p) => p,
                    None => self.render(fam)?,
                };
                return Ok(Opened {
                    fh: self.new_handle(Handle::Read(b)),
                    keep_cache: false,
                });
            }
            if self.read_only {
                return Err(FsError::ReadOnly("a read-only mount's tables"));
            }
            // Without O_TRUNC the text starts as the table, made at the first read, write or
            // truncate that needs it (a truncate to 0, as `open(…, 'w')` may send, does not).
            if trunc {
                lock(&self.state).pending.insert(fam, Vec::new());
            }
            return Ok(Opened {
                fh: self.new_handle(Handle::Csv { fam, dirty: trunc }),
                keep_cache: false,
            });
        }
        if ino == STATUS_INO {
            if write {
                return Err(FsError::ReadOnly("the tables status"));
            }
            return Ok(Opened {
                fh: self.new_handle(Handle::Read(self.status_text())),
                keep_cache: false,
            });
        }
        let mut st = lock(&self.state);
        let s = st
            .scratch
            .values_mut()
            .find(|s| s.ino == ino)
            .ok_or(FsError::UnknownInode(ino))?;
        if write && trunc {
            s.data.clear();
        }
        drop(st);
        Ok(Opened {
            fh: self.new_handle(Handle::Scratch { ino }),
            keep_cache: false,
        })
    }
    fn read(&self, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
        if !own(fh) {
            return self.inner.read(fh, offset, size);
        }
        if let Some(fam) = self.writer_fam(fh) {
            self.fill_pending(fam)?;
        }
        let st = lock(&self.state);
        match st.handles.get(&fh) {
            Some(Handle::Read(b)) => Ok(slice(b, offset, size)),
            Some(Handle::Csv { fam, .. }) => Ok(slice(
                st.pending.get(fam).map_or(&[][..], |p| p),
                offset,
                size,
            )),
            Some(Handle::Scratch { ino }) => Ok(st
                .scratch
                .values()
                .find(|s| s.ino == *ino)
                .map_or(Vec::new(), |s| slice(&s.data, offset, size))),
            _ => Err(FsError::BadHandle(fh)),
        }
    }
    fn release(&self, fh: u64) -> Result<(), FsError> {
        if !own(fh) {
            return self.inner.release(fh);
        }
        let r = self.flush(fh);
        let mut st = lock(&self.state);
        if let Some(Handle::Csv { fam, .. }) = st.handles.remove(&fh) {
            let writers = st
                .handles
                .values()
                .any(|h| matches!(h, Handle::Csv { fam: f, .. } if *f == fam));
            if !writers {
                st.pending.remove(&fam);
            }
        }
        r
    }
    fn opendir(&self, ino: u64) -> Result<u64, FsError> {
        if ino == DIR_INO {
            return Ok(self.new_handle(Handle::Dir));
        }
        if own(ino) {
            return Err(FsError::NotDir);
        }
        self.inner.opendir(ino)
    }
    fn readdir(&self, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        if own(fh) {
            self.listing(fh, offset, false)
        } else {
            self.inner.readdir(fh, offset)
        }
    }
    fn readdirplus(&self, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        if own(fh) {
            self.listing(fh, offset, true)
        } else {
            self.inner.readdirplus(fh, offset)
        }
    }
    fn releasedir(&self, fh: u64) -> Result<(), FsError> {
        if own(fh) {
            lock(&self.state).handles.remove(&fh);
            Ok(())
        } else {
            self.inner.releasedir(fh)
        }
    }
    fn statfs(&self) -> Result<StatFs, FsError> {
        self.inner.statfs()
    }
    fn access(&self, ino: u64, mask: i32) -> Result<(), FsError> {
        if !own(ino) {
            return self.inner.access(ino, mask);
        }
        if mask & libc::W_OK != 0 && (self.read_only || ino == STATUS_INO) {
            return Err(FsError::ReadOnly("the tables folder"));
        }
        Ok(())
    }
    fn has_xattrs(&self) -> bool {
        self.inner.has_xattrs()
    }
    fn getxattr(&self, ino: u64, name: &OsStr) -> Result<Vec<u8>, FsError> {
        if own(ino) {
            return Err(FsError::NoAttr);
        }
        self.inner.getxattr(ino, name)
    }
    fn listxattr(&self, ino: u64) -> Result<Vec<u8>, FsError> {
        if own(ino) {
            return Ok(Vec::new());
        }
        self.inner.listxattr(ino)
    }
    fn setxattr(&self, ino: u64, name: &OsStr) -> Result<(), FsError> {
        if own(ino) {
            return Err(FsError::NotSupported(
                "extended attributes in the tables folder",
            ));
        }
        self.inner.setxattr(ino, name)
    }
    fn setattr(&self, ino: u64, set: SetAttr, fh: Option<u64>) -> Result<Attr, FsError> {
        if !own(ino) {
            return self.inner.setattr(ino, set, fh);
        }
        if let Some(size) = set.size {
            if self.read_only || ino == DIR_INO || ino == STATUS_INO {
                return Err(FsError::ReadOnly("the tables folder"));
            }
            let size = usize::try_from(size)
                .ok()
                .filter(|&s| s <= MAX_PENDING)
                .ok_or(FsError::Invalid("too large".into()))?;
            if let Some(fam) = Self::csv_fam(ino) {
                let writing = lock(&self.state)
                    .handles
                    .values()
                    .any(|h| matches!(h, Handle::Csv { fam: f, .. } if *f == fam));
                if !writing {
                    return Err(FsError::Busy("truncate a table only while it is open"));
                }
                if size == 0 {
                    lock(&self.state).pending.entry(fam).or_default();
                } else {
                    self.fill_pending(fam)?;
                }
                let mut st = lock(&self.state);
                let Some(p) = st.pending.get_mut(&fam) else {
                    return Err(FsError::Busy("truncate a table only while it is open"));
                };
                p.resize(size, 0);
                for h in st.handles.values_mut() {
                    if let Handle::Csv { fam: f, dirty } = h {
                        if *f == fam {
                            *dirty = true;
                        }
                    }
                }
            } else {
                let mut st = lock(&self.state);
                if let Some(s) = st.scratch.values_mut().find(|s| s.ino == ino) {
                    s.data.resize(size, 0);
                }
            }
        }
        self.getattr_own(ino)
    }
    fn mknod(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr, FsError> {
        if parent == DIR_INO {
            if mode & libc::S_IFMT != libc::S_IFREG {
                return Err(FsError::NotSupported(
                    "only regular files in the tables folder",
                ));
            }
            let ino = self.new_scratch(name)?;
            return self.getattr_own(ino);
        }
        self.inner.mknod(parent, name, mode, umask, rdev, uid, gid)
    }
    fn mkdir(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr, FsError> {
        if parent == DIR_INO {
            return Err(FsError::NotSupported("folders in the tables folder"));
        }
        if parent == ROOT && name == DIR_NAME {
            return Err(FsError::Exists);
        }
        self.inner.mkdir(parent, name, mode, umask, uid, gid)
    }
    fn symlink(
        &self,
        parent: u64,
        name: &OsStr,
        target: &Path,
        uid: u32,
        gid: u32,
    ) -> Result<Attr, FsError> {
        if parent == DIR_INO {
            return Err(FsError::NotSupported("links in the tables folder"));
        }
        self.inner.symlink(parent, name, target, uid, gid)
    }
    fn link(&self, ino: u64, newparent: u64, newname: &OsStr) -> Result<Attr, FsError> {
        if own(ino) || newparent == DIR_INO {
            return Err(FsError::NotSupported("links in the tables folder"));
        }
        self.inner.link(ino, newparent, newname)
    }
    fn unlink(&self, parent: u64, name: &OsStr) -> Result<(), FsError> {
        if parent == DIR_INO {
            let mut st = lock(&self.state);
            return match st.scratch.remove(name) {
                Some(_) => Ok(()),
                None if self.lookup_is_generated(name) => {
                    Err(FsError::ReadOnly("a table cannot be removed"))
                }
                None => Err(FsError::NotFound),
            };
        }
        self.inner.unlink(parent, name)
    }
    fn rmdir(&self, parent: u64, name: &OsStr) -> Result<(), FsError> {
        if parent == ROOT && name == DIR_NAME {
            return Err(FsError::ReadOnly("the tables folder"));
        }
        self.inner.rmdir(parent, name)
    }
    fn rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<(), FsError> {
        match (parent == DIR_INO, newparent == DIR_INO) {
            (false, false) => {
                if parent == ROOT && name == DIR_NAME {
                    return Err(FsError::ReadOnly("the tables folder"));
                }
                self.inner.rename(parent, name, newparent, newname, flags)
            }
            (true, true) => {
                if self.read_only || newname == STATUS_NAME {
                    return Err(FsError::ReadOnly("a read-only mount's tables"));
                }
                let data = match lock(&self.state).scratch.get(name) {
                    Some(s) => s.data.clone(),
                    None if self.lookup_is_generated(name) => {
                        return Err(FsError::ReadOnly("a table cannot be renamed"))
                    }
                    None => return Err(FsError::NotFound),
                };
                if let Some(fam) = FAMILIES.iter().position(|f| newname == f.csv) {
                    self.commit_csv(fam, &data)?;
                    lock(&self.state).scratch.remove(name);
                    return Ok(());
                }
                let mut st = lock(&self.state);
                if let Some(s) = st.scratch.remove(name) {
                    st.scratch.insert(newname.to_os_string(), s);
                }
                Ok(())
            }
            _ => Err(FsError::CrossDevice("into or out of the tables folder")),
        }
    }
    fn create(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        uid: u32,
        gid: u32,
    ) -> Result<(Attr, Opened), FsError> {
        if parent != DIR_INO {
            return self
                .inner
                .create(parent, name, mode, umask, flags, uid, gid);
        }
        if let Some(fam) = FAMILIES.iter().position(|f| name == f.csv) {
            let ino = CSV_INO + fam as u64;
            let opened = self.open(ino, flags | libc::O_WRONLY)?;
            return Ok((self.getattr_own(ino)?, opened));
        }
        let ino = self.new_scratch(name)?;
        let opened = self.open(ino, flags)?;
        Ok((self.getattr_own(ino)?, opened))
    }
    fn write(&self, fh: u64, offset: u64, data: &[u8]) -> Result<u32, FsError> {
        if !own(fh) {
            return self.inner.write(fh, offset, data);
        }
        if let Some(fam) = self.writer_fam(fh) {
            self.fill_pending(fam)?;
        }
        let mut st = lock(&self.state);
        let st = &mut *st;
        let scratch_total: usize = st.scratch.values().map(|s| s.data.len()).sum();
        let is_scratch = matches!(st.handles.get(&fh), Some(Handle::Scratch { .. }));
        let buf = match st.handles.get_mut(&fh) {
            Some(Handle::Csv { fam, dirty }) => {
                *dirty = true;
                st.pending.get_mut(fam)
            }
            Some(Handle::Scratch { ino }) => st
                .scratch
                .values_mut()
                .find(|s| s.ino == *ino)
                .map(|s| &mut s.data),
            _ => None,
        }
        .ok_or(FsError::BadHandle(fh))?;
        let end = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_add(data.len()))
            .filter(|&e| e <= MAX_PENDING)
            .ok_or(FsError::Invalid("a table is limited to 256 MiB".into()))?;
        let start = end - data.len();
        if is_scratch && end > buf.len() && scratch_total + (end - buf.len()) > MAX_PENDING {
            return Err(FsError::Invalid(
                "the tables folder's files are limited to 256 MiB".into(),
            ));
        }
        if buf.len() < end {
            buf.resize(end, 0);
        }
        buf[start..end].copy_from_slice(data);
        Ok(data.len() as u32)
    }
    fn flush(&self, fh: u64) -> Result<(), FsError> {
        if !own(fh) {
            return self.inner.flush(fh);
        }
        let job = {
            let mut st = lock(&self.state);
            let st = &mut *st;
            match st.handles.get_mut(&fh) {
                Some(Handle::Csv { fam, dirty }) if *dirty => {
                    *dirty = false;
                    st.pending.get(fam).map(|p| (*fam, p.clone()))
                }
                _ => None,
            }
        };
        match job {
            Some((fam, text)) => self.commit_csv(fam, &text),
            None => Ok(()),
        }
    }
    fn fsync(&self, fh: u64, datasync: bool) -> Result<(), FsError> {
        if own(fh) {
            return self.flush(fh);
        }
        self.inner.fsync(fh, datasync)
    }
}

impl TablesOps {
    /// The family of writing handle `fh`.
    fn writer_fam(&self, fh: u64) -> Option<usize> {
        match lock(&self.state).handles.get(&fh) {
            Some(Handle::Csv { fam, .. }) => Some(*fam),
            _ => None,
        }
    }

    /// Starts the text being written of `fam` as the table, unless a writer started it.
    fn fill_pending(&self, fam: usize) -> Result<(), FsError> {
        if lock(&self.state).pending.contains_key(&fam) {
            return Ok(());
        }
        let text = self.render(fam)?;
        lock(&self.state).pending.entry(fam).or_insert(text);
        Ok(())
    }

    fn lookup_is_generated(&self, name: &OsStr) -> bool {
        name == STATUS_NAME || FAMILIES.iter().any(|f| name == f.csv)
    }

    fn new_scratch(&self, name: &OsStr) -> Result<u64, FsError> {
        if self.read_only {
            return Err(FsError::ReadOnly("a read-only mount's tables"));
        }
        if self.lookup_is_generated(name) {
            return Err(FsError::Exists);
        }
        let mut st = lock(&self.state);
        if let Some(s) = st.scratch.get(name) {
            return Ok(s.ino);
        }
        if st.scratch.len() >= 1024 {
            return Err(FsError::Invalid(
                "too many files in the tables folder".into(),
            ));
        }
        st.next_scratch += 1;
        let ino = st.next_scratch;
        st.scratch.insert(
            name.to_os_string(),
            Scratch {
                ino,
                data: Vec::new(),
            },
        );
        Ok(ino)
    }
}

fn slice(b: &[u8], offset: u64, size: u32) -> Vec<u8> {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(b.len());
    let end = start.saturating_add(size as usize).min(b.len());
    b[start..end].to_vec()
}
