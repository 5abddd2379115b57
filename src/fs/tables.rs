//! The balance tables folder `.tafs-tables/` at the mount root (not listed, like
//! `.tafs-status`): one generated CSV per [`crate::view::tables::FAMILIES`] entry, built from
//! the files the mount shows, and writable: a saved CSV is planned by
//! [`crate::view::tables::Table::plan`] and every changed file is written through the mount
//! itself (a temporary file beside it renamed over it), so the same code serves the game
//! folder, the merged view and `--merged --into MOD` (whose writes copy a stock file up into
//! the mod).
//!
//! [`TablesOps`] is the folder as a file system of its own, grafted into any [`FsOps`] by
//! [`Graft`] ([`with_tables`]): the folder, its CSVs and the scratch files editors create
//! beside them (`sed -i`'s and rsync's temporary files, LibreOffice's lock file: kept in
//! memory, gone at unmount) have inode and handle numbers of their own (above [`BASE`]);
//! every other request goes to the wrapped file system unchanged. A CSV opened for
//! writing collects the new text; its `close` (flush) or a rename onto it commits, and an
//! error (a refused cell: row and column) answers `EIO` and is kept in `.tafs-tables/status`.
//!
//! A commit replaces all its files or none: a [`Journal`] in the state folder holds the bytes
//! being replaced, every new text is staged beside its file before the first rename, a failed
//! rename puts back what was replaced, and a journal left by a crash is undone when the next
//! mount starts. The replaced versions go to the files' history (`tafs history`/`restore`).

use super::core::{Attr, DirItem, FileKind, Opened, SetAttr, ROOT};
use super::ops::FsOps;
use super::{Caller, FsError, NewNode, StatFs};
use crate::game::{GameFs, Kind};
use crate::view::tables::{list_files, read_listed, Family, FileChange, Table, FAMILIES};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
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
    inner: Arc<dyn FsOps>,
    read_only: bool,
    /// Other users reach the mount (`-o allow_other`): a table holds only the files every
    /// user may read ([`OpsFs::public_only`]), whoever asks.
    shared: bool,
    state: Mutex<State>,
    /// Serialises commits (one reads, plans and writes at a time).
    commit: Mutex<()>,
    /// The last CSV of each family and the files it was built from.
    rendered: Mutex<HashMap<usize, Rendered>>,
    /// Where saves keep their journal and history (`None`: neither).
    journal: Option<Journal>,
    /// Rows for the files of archive folders at the root too, read-only (a game-folder
    /// mount, which shows each archive as a folder).
    archive_rows: bool,
    /// A failure injected by tests: staging (`true`) or renaming the file whose path ends so.
    #[cfg(test)]
    fail: Option<(bool, &'static str)>,
}

/// Name of a save's journal in its folder.
const JOURNAL_NAME: &str = "journal.json";

/// Where a table save is journalled: `STATE/tables/<key of the mount's source>/`, holding
/// `journal.json` (the files being replaced, as the mount names them) and `N.old` (the bytes
/// of the N-th before the save), written and synced before the first file is touched and
/// removed once every file is replaced or put back. A journal found when the mount starts is
/// of a save a crash cut short: its files are put back as they were before it.
#[derive(Debug, Clone)]
pub struct Journal {
    state: PathBuf,
    dir: PathBuf,
    /// The folder the table paths are loose files of, for the history of replaced versions.
    files: Option<PathBuf>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct JournalFile {
    /// The files being replaced, relative to the mount root; file `N.old` is the N-th's.
    files: Vec<String>,
}

impl Journal {
    /// The journal of the mount of `source` (the game folder or the mod, absolute) under
    /// state folder `state`; `files`: the folder whose loose files the tables' paths name
    /// (their replaced versions go to the history, as `tafs history` lists them).
    pub fn new(state: &Path, source: &Path, files: Option<PathBuf>) -> Journal {
        Journal {
            state: state.to_path_buf(),
            dir: state.join("tables").join(super::stage::key_of(source)),
            files,
        }
    }

    /// The journal of the mount of `source` under state folder `state` (`None` without
    /// one); `loose`: the tables' paths are loose files of `source` (their history is kept).
    pub fn of_mount(
        state: Option<&Path>,
        source: &Path,
        loose: bool,
    ) -> std::io::Result<Option<Journal>> {
        let Some(state) = state else {
            return Ok(None);
        };
        let source = std::path::absolute(source)?;
        let files = loose.then(|| source.clone());
        Ok(Some(Journal::new(state, &source, files)))
    }

    /// Records `plan` before its files are touched (refused while an earlier save's
    /// journal is still there).
    fn begin(&self, plan: &[FileChange]) -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        if self.dir.join(JOURNAL_NAME).exists() {
            return Err(std::io::Error::other(format!(
                "{} holds a save cut short that is not undone yet (remount to undo it)",
                self.dir.display()
            )));
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        for (i, c) in plan.iter().enumerate() {
            crate::atomic::write(&self.dir.join(format!("{i}.old")), &c.old, None)?;
        }
        let j = JournalFile {
            files: plan.iter().map(|c| c.path.clone()).collect(),
        };
        let json = serde_json::to_vec_pretty(&j).map_err(std::io::Error::other)?;
        crate::atomic::write(&self.dir.join(JOURNAL_NAME), &json, None)
    }

    /// The files of a save cut short and their bytes before it; `None` when there is none.
    fn read(&self) -> std::io::Result<Option<Vec<Replaced>>> {
        let json = match std::fs::read(self.dir.join(JOURNAL_NAME)) {
            Ok(j) => j,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let j: JournalFile = serde_json::from_slice(&json).map_err(std::io::Error::other)?;
        let mut out = Vec::with_capacity(j.files.len().min(MAX_JOURNAL_FILES));
        for (i, rel) in j.files.into_iter().enumerate() {
            let plain = !rel.is_empty()
                && Path::new(&rel)
                    .components()
                    .all(|c| matches!(c, Component::Normal(_)));
            if !plain || i >= MAX_JOURNAL_FILES {
                return Err(std::io::Error::other(format!(
                    "{}: not a file of the mount: {rel:?}",
                    self.dir.join(JOURNAL_NAME).display()
                )));
            }
            let old = std::fs::read(self.dir.join(format!("{i}.old")))?;
            out.push((rel, old));
        }
        Ok(Some(out))
    }

    /// Removes the journal (done: the files are consistent).
    fn end(&self) -> std::io::Result<()> {
        match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// A file of a save cut short (as the mount names it) and its bytes before the save.
type Replaced = (String, Vec<u8>);

/// Files one journal may name (a table's files: every FBI of a game is far fewer).
const MAX_JOURNAL_FILES: usize = 100_000;

/// A file of a table: its path, size and modification time.
type Stamp = (String, Option<(u64, Option<SystemTime>)>);

/// A rendered CSV and the files it was built from.
type Rendered = (Vec<Stamp>, Vec<u8>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl TablesOps {
    /// Wraps `inner`; `read_only`: the CSVs refuse writes (`EROFS` at open).
    pub fn new(inner: Arc<dyn FsOps>, read_only: bool) -> TablesOps {
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
            journal: None,
            archive_rows: false,
            #[cfg(test)]
            fail: None,
        }
    }

    /// Adds read-only rows for the files of the archive folders at the root that are not
    /// loose files (a game-folder mount shows each archive as a folder).
    pub fn with_archive_rows(mut self, on: bool) -> TablesOps {
        self.archive_rows = on;
        self
    }

    /// Journals saves in `journal` (and keeps history there); a save a crash cut short
    /// is undone now.
    pub fn with_journal(mut self, journal: Option<Journal>) -> TablesOps {
        self.journal = journal;
        if !self.read_only {
            self.recover();
        }
        self
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
        let root = self.inner.getattr(AS_DAEMON, ROOT, None).ok();
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
        let files = self.files_of(&gfs, f);
        let stamp: Vec<Stamp> = files
            .iter()
            .map(|(rel, _)| (rel.clone(), gfs.stat(Path::new(rel))))
            .collect();
        if let Some((s, b)) = lock(&self.rendered).get(&fam) {
            if *s == stamp {
                return Ok(b.clone());
            }
        }
        let csv = self.build_table(&gfs, f, files)?.to_csv();
        lock(&self.rendered).insert(fam, (stamp, csv.clone()));
        Ok(csv)
    }

    /// The table of `fam` built afresh (for a commit).
    fn table(&self, fam: &Family) -> Result<Table, FsError> {
        let gfs = OpsFs::new(&*self.inner, self.shared);
        let files = self.files_of(&gfs, fam);
        self.build_table(&gfs, fam, files)
    }

    /// The files of `fam` a table is built from: the family's own and, with archive rows,
    /// those of every archive folder at the root whose path is not a loose file, each with
    /// why its cells are read-only.
    fn files_of(&self, gfs: &OpsFs<'_>, fam: &Family) -> Vec<(String, Option<String>)> {
        let mut out: Vec<(String, Option<String>)> = list_files(gfs, Path::new(""), fam)
            .into_iter()
            .map(|r| (r, None))
            .collect();
        if !self.archive_rows {
            return out;
        }
        let loose: std::collections::HashSet<String> =
            out.iter().map(|(r, _)| r.to_ascii_lowercase()).collect();
        let mut names = gfs.names(Path::new("")).unwrap_or_default();
        names.sort();
        for n in names {
            let Some(name) = n.to_str() else { continue };
            if !crate::view::archive::is_archive_name(name)
                || gfs.kind(Path::new(name)) != Some(Kind::Dir)
            {
                continue;
            }
            for rel in list_files(gfs, Path::new(name), fam) {
                if !loose.contains(&rel.to_ascii_lowercase()) {
                    let why = format!(
                        "inside the archive {name} (a plain mount's tables edit loose files only; \
                         edit it with `tafs mount --merged --into MOD`)"
                    );
                    out.push((format!("{name}/{rel}"), Some(why)));
                }
            }
        }
        out
    }

    /// The table of `fam` from `files` (from [`Self::files_of`]).
    fn build_table(
        &self,
        gfs: &OpsFs<'_>,
        fam: &Family,
        files: Vec<(String, Option<String>)>,
    ) -> Result<Table, FsError> {
        let rels = files.iter().map(|(r, _)| r.clone()).collect();
        let mut t = Table::build(fam, read_listed(gfs, Path::new(""), fam, rels)?);
        for (rel, why) in &files {
            if let Some(why) = why {
                t.lock_file(rel, why);
            }
        }
        Ok(t)
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

    /// Applies `text` as the new CSV of family `fam`: every changed file replaced, or none
    /// (a refused cell; a failure while staging or replacing, after which what was replaced
    /// is put back).
    fn commit_csv(&self, fam: usize, text: &[u8]) -> Result<(), FsError> {
        let _one = lock(&self.commit);
        let f = &FAMILIES[fam];
        let plan = self.table(f).and_then(|t| Ok(t.changes(text)?));
        let plan = match plan {
            Ok(p) => p,
            Err(e) => {
                log::warn!("{DIR_NAME}/{}: not applied: {e}", f.csv);
                self.note(format!("{}: refused, nothing written: {e}", f.csv));
                return Err(FsError::Commit(e.to_string()));
            }
        };
        if plan.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.replace_all(&plan) {
            let msg = format!("{}: {e}", f.csv);
            log::warn!("{DIR_NAME}/{msg}");
            self.note(msg.clone());
            return Err(FsError::Commit(msg));
        }
        let kept = self.keep_history(&plan);
        let mut msg = format!("{}: committed {} file(s)", f.csv, plan.len());
        for c in &plan {
            msg.push_str(&format!("\n  {}", c.path));
            for cell in &c.cells {
                msg.push_str(&format!("\n    {cell}"));
            }
        }
        if let Some(e) = kept {
            msg.push_str(&format!("\n  (history not kept: {e})"));
        }
        self.note(msg);
        lock(&self.state).mtime = Some(SystemTime::now());
        Ok(())
    }

    /// Replaces every file of `plan`, all or nothing: the journal (the bytes being replaced)
    /// first, then each new text staged in a temporary file beside its file, then the
    /// renames; a failure while staging removes the temporary files, one while renaming puts
    /// back the files already replaced. The journal goes once the files are consistent.
    fn replace_all(&self, plan: &[FileChange]) -> Result<(), String> {
        let journal = self.journal.as_ref();
        if let Some(j) = journal {
            j.begin(plan)
                .map_err(|e| format!("nothing written: writing the journal failed: {e}"))?;
        }
        let end = |r: Result<(), String>| {
            if let Some(j) = journal {
                if let Err(e) = j.end() {
                    log::warn!("{DIR_NAME}: removing the journal: {e}");
                }
            }
            r
        };
        for (staged, c) in plan.iter().enumerate() {
            if let Err(e) = self.stage(&c.path, &c.new) {
                for c in &plan[..staged] {
                    let _ = self.remove_tmp(&c.path);
                }
                return end(Err(format!(
                    "nothing written: staging {} failed: {e}",
                    c.path
                )));
            }
        }
        for (i, c) in plan.iter().enumerate() {
            if let Err(e) = self.rename_tmp(&c.path) {
                for c in &plan[i..] {
                    let _ = self.remove_tmp(&c.path);
                }
                let mut unrestored = Vec::new();
                for c in &plan[..i] {
                    if let Err(e) = self.write_through(&c.path, &c.old) {
                        unrestored.push(format!("{} ({e})", c.path));
                    }
                }
                if unrestored.is_empty() {
                    return end(Err(format!(
                        "nothing changed: replacing {} failed: {e} (the {i} file(s) replaced before it were put back)",
                        c.path
                    )));
                }
                // The journal stays: the next mount tries again to put them back.
                return Err(format!(
                    "replacing {} failed: {e}; putting back {} failed too (the next mount retries from the journal)",
                    c.path,
                    unrestored.join(", ")
                ));
            }
        }
        end(Ok(()))
    }

    /// Keeps the replaced version of every file of `plan` in the history of its real file
    /// (when the mount's files are loose files of a folder); the error of the first that
    /// failed.
    fn keep_history(&self, plan: &[FileChange]) -> Option<String> {
        let j = self.journal.as_ref()?;
        let files = j.files.as_ref()?;
        let mut err = None;
        for c in plan {
            let abs = files.join(&c.path);
            if let Err(e) = super::stage::Stage::load(&j.state, &abs).push_history(&c.old) {
                log::warn!("{}: keeping its history: {e}", abs.display());
                err.get_or_insert_with(|| format!("{}: {e}", c.path));
            }
        }
        err
    }

    /// Puts back the files of a save cut short (the journal a crash left), once at start.
    fn recover(&self) {
        let Some(j) = self.journal.as_ref() else {
            return;
        };
        let entries = match j.read() {
            Ok(Some(e)) => e,
            Ok(None) => return,
            Err(e) => {
                self.note(format!("journal of a save cut short unreadable, kept: {e}"));
                return;
            }
        };
        let mut failed = Vec::new();
        for (rel, old) in &entries {
            let _ = self.remove_tmp(rel);
            let now =
                OpsFs::new(&*self.inner, self.shared).read(Path::new(rel), MAX_PENDING as u64);
            if now.as_deref() == Some(old.as_slice()) {
                continue;
            }
            if let Err(e) = self.write_through(rel, old) {
                failed.push(format!("{rel} ({e})"));
            }
        }
        if failed.is_empty() {
            let names: Vec<&str> = entries.iter().map(|(r, _)| r.as_str()).collect();
            self.note(format!(
                "a save cut short was undone: {} put back as before it",
                names.join(", ")
            ));
            if let Err(e) = j.end() {
                log::warn!("{DIR_NAME}: removing the journal: {e}");
            }
        } else {
            self.note(format!(
                "a save cut short could not be undone, journal kept: {}",
                failed.join(", ")
            ));
        }
    }

    /// The folder of `rel`'s file (its inode and the inodes to forget), its name and the
    /// name of its temporary file.
    fn place(&self, rel: &str) -> Result<(u64, Vec<u64>, OsString, OsString), FsError> {
        let path = Path::new(rel);
        let name = path.file_name().ok_or(FsError::NotFound)?;
        let parent = path.parent().unwrap_or(Path::new(""));
        let (dir, held) = resolve(&*self.inner, parent)?;
        let mut tmp = OsString::from(".");
        tmp.push(name);
        tmp.push(".tafs-tables");
        Ok((dir, held, name.to_os_string(), tmp))
    }

    /// Writes `bytes` into the temporary file beside file `rel` of the mount.
    fn stage(&self, rel: &str, bytes: &[u8]) -> Result<(), FsError> {
        let ops = &*self.inner;
        let (dir, held, name, tmp) = self.place(rel)?;
        let result = (|| {
            #[cfg(test)]
            if self
                .fail
                .is_some_and(|(stage, n)| stage && rel.ends_with(n))
            {
                return Err(FsError::Io(std::io::ErrorKind::StorageFull.into()));
            }
            let mode = ops
                .lookup(AS_DAEMON, dir, &name)
                .map(|a| {
                    ops.forget(a.ino, 1);
                    u32::from(a.perm)
                })
                .unwrap_or(0o644);
            let (a, opened) = ops.create(
                AS_DAEMON,
                NewNode::new(dir, &tmp, 0o100000 | mode, 0),
                libc::O_WRONLY | libc::O_TRUNC,
            )?;
            ops.forget(a.ino, 1);
            let mut w = (|| {
                let mut off = 0usize;
                while off < bytes.len() {
                    let n = ops.write(AS_DAEMON, opened.fh, off as u64, &bytes[off..])? as usize;
                    if n == 0 {
                        return Err(FsError::Io(std::io::ErrorKind::WriteZero.into()));
                    }
                    off += n;
                }
                ops.flush(AS_DAEMON, opened.fh)
            })();
            let r = ops.release(AS_DAEMON, opened.fh);
            if w.is_ok() {
                w = r;
            }
            if w.is_err() {
                let _ = ops.unlink(AS_DAEMON, dir, &tmp);
            }
            w
        })();
        forget_all(ops, &held);
        result
    }

    /// Renames the temporary file of `rel` over it.
    fn rename_tmp(&self, rel: &str) -> Result<(), FsError> {
        let (dir, held, name, tmp) = self.place(rel)?;
        #[cfg(test)]
        if self
            .fail
            .is_some_and(|(stage, n)| !stage && rel.ends_with(n))
        {
            forget_all(&*self.inner, &held);
            return Err(FsError::Io(std::io::ErrorKind::StorageFull.into()));
        }
        let r = self.inner.rename(AS_DAEMON, dir, &tmp, dir, &name, 0);
        forget_all(&*self.inner, &held);
        r
    }

    /// Removes the temporary file of `rel`, if there is one.
    fn remove_tmp(&self, rel: &str) -> Result<(), FsError> {
        let (dir, held, _, tmp) = self.place(rel)?;
        let r = self.inner.unlink(AS_DAEMON, dir, &tmp);
        forget_all(&*self.inner, &held);
        r
    }

    /// Replaces file `rel` of the mount with `bytes`: a temporary file beside it, renamed
    /// over it.
    fn write_through(&self, rel: &str, bytes: &[u8]) -> Result<(), FsError> {
        self.stage(rel, bytes)?;
        self.rename_tmp(rel).inspect_err(|_| {
            let _ = self.remove_tmp(rel);
        })
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
                    (true, true) => Some(self.inner.getattr(AS_DAEMON, ROOT, None)?),
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
        match ops.lookup(AS_DAEMON, ino, n) {
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
            let Ok(a) = self.ops.getattr(AS_DAEMON, ino, None) else {
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
            let fh = self.ops.opendir(AS_DAEMON, ino).ok()?;
            let mut out = Vec::new();
            let mut off = 0;
            // (with attributes when only what every user may read is taken)
            let plus = plus || self.public_only;
            let ok = loop {
                let page = if plus {
                    self.ops.readdirplus(AS_DAEMON, fh, off)
                } else {
                    self.ops.readdir(AS_DAEMON, fh, off)
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
            let _ = self.ops.releasedir(AS_DAEMON, fh);
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
            let a = self.ops.getattr(AS_DAEMON, ino, None).ok()?;
            if a.kind != FileKind::File || a.size > max {
                return None;
            }
            let opened = self.ops.open(AS_DAEMON, ino, libc::O_RDONLY).ok()?;
            let mut out = Vec::new();
            let ok = loop {
                match self
                    .ops
                    .read(AS_DAEMON, opened.fh, out.len() as u64, 1 << 20)
                {
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
            let _ = self.ops.release(AS_DAEMON, opened.fh);
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

/// A file system grafted into another by [`Graft`]: it answers for its own inodes and
/// handles (at and above [`BASE`]) and for the names of the other it claims.
pub trait Grafted: FsOps {
    /// Whether entry `name` of folder `parent` of the wrapped file system is this one's.
    fn claims(&self, parent: u64, name: &OsStr) -> bool;
}

impl Grafted for TablesOps {
    fn claims(&self, parent: u64, name: &OsStr) -> bool {
        parent == ROOT && name == DIR_NAME
    }
}

/// `inner` with the entries of `extra` grafted in. Every request goes to one of the two by
/// one rule: an inode or handle at and above [`BASE`], or a name `extra` claims, is
/// `extra`'s; everything else, and the answers for the whole mount (TTL, caching, statistics,
/// inode count), is `inner`'s. The routing is written once, here: an [`FsOps`] method added
/// later needs one line here and nothing in what is grafted.
pub struct Graft<E> {
    inner: Arc<dyn FsOps>,
    extra: E,
}

impl<E: Grafted> Graft<E> {
    /// `inner` with `extra` grafted in.
    pub fn new(inner: Arc<dyn FsOps>, extra: E) -> Graft<E> {
        Graft { inner, extra }
    }

    /// Who answers for inode or handle `n`.
    fn by(&self, n: u64) -> &dyn FsOps {
        if own(n) {
            &self.extra
        } else {
            &*self.inner
        }
    }

    /// Who answers for entry `name` of folder `parent`.
    fn at(&self, parent: u64, name: &OsStr) -> &dyn FsOps {
        if own(parent) || self.extra.claims(parent, name) {
            &self.extra
        } else {
            &*self.inner
        }
    }
}

/// Who the tables folder is to the file system it is grafted into: the daemon itself. A
/// table is one file for every user (on a shared mount it holds only what every user may
/// read, see [`TablesOps::shared`]), and a save writes the unit files as the daemon.
const AS_DAEMON: Caller = Caller::root();

/// How a mount's tables folder is set up.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Where saves are journalled and their history kept (`None`: neither).
    pub journal: Option<Journal>,
    /// Read-only rows for the files inside the archive folders at the root
    /// ([`TablesOps::with_archive_rows`]).
    pub archive_rows: bool,
}

/// The tables folder grafted into `inner`: what every mount serves (`shared`: other users
/// reach it, see [`TablesOps::shared`]).
pub fn with_tables(
    inner: Arc<dyn FsOps>,
    read_only: bool,
    setup: Setup,
    shared: bool,
) -> Graft<TablesOps> {
    let tables = TablesOps::new(inner.clone(), read_only)
        .with_archive_rows(setup.archive_rows)
        .with_journal(setup.journal)
        .shared(shared);
    Graft::new(inner, tables)
}

impl<E: Grafted> FsOps for Graft<E> {
    fn ttl(&self) -> Duration {
        self.inner.ttl()
    }
    fn finish(&self) {
        self.inner.finish();
        self.extra.finish();
    }
    fn ttl_of(&self, ino: u64) -> Duration {
        self.by(ino).ttl_of(ino)
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
    fn read_ino(&self, c: Caller, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
        self.by(ino).read_ino(c, ino, offset, size)
    }
    fn backing_file(&self, fh: u64) -> Option<std::io::Result<std::fs::File>> {
        self.by(fh).backing_file(fh)
    }
    fn lookup(&self, c: Caller, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        self.at(parent, name).lookup(c, parent, name)
    }
    fn forget(&self, ino: u64, n: u64) {
        self.by(ino).forget(ino, n)
    }
    fn inodes(&self) -> usize {
        self.inner.inodes()
    }
    fn getattr(&self, c: Caller, ino: u64, fh: Option<u64>) -> Result<Attr, FsError> {
        self.by(ino).getattr(c, ino, fh)
    }
    fn readlink(&self, c: Caller, ino: u64) -> Result<Vec<u8>, FsError> {
        self.by(ino).readlink(c, ino)
    }
    fn open(&self, c: Caller, ino: u64, flags: i32) -> Result<Opened, FsError> {
        self.by(ino).open(c, ino, flags)
    }
    fn read(&self, c: Caller, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
        self.by(fh).read(c, fh, offset, size)
    }
    fn release(&self, c: Caller, fh: u64) -> Result<(), FsError> {
        self.by(fh).release(c, fh)
    }
    fn opendir(&self, c: Caller, ino: u64) -> Result<u64, FsError> {
        self.by(ino).opendir(c, ino)
    }
    fn readdir(&self, c: Caller, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        self.by(fh).readdir(c, fh, offset)
    }
    fn readdirplus(&self, c: Caller, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        self.by(fh).readdirplus(c, fh, offset)
    }
    fn releasedir(&self, c: Caller, fh: u64) -> Result<(), FsError> {
        self.by(fh).releasedir(c, fh)
    }
    fn statfs(&self, c: Caller) -> Result<StatFs, FsError> {
        self.inner.statfs(c)
    }
    fn access(&self, c: Caller, ino: u64, mask: i32) -> Result<(), FsError> {
        self.by(ino).access(c, ino, mask)
    }
    fn has_xattrs(&self) -> bool {
        self.inner.has_xattrs()
    }
    fn getxattr(&self, c: Caller, ino: u64, name: &OsStr) -> Result<Vec<u8>, FsError> {
        self.by(ino).getxattr(c, ino, name)
    }
    fn listxattr(&self, c: Caller, ino: u64) -> Result<Vec<u8>, FsError> {
        self.by(ino).listxattr(c, ino)
    }
    fn setxattr(&self, c: Caller, ino: u64, name: &OsStr) -> Result<(), FsError> {
        self.by(ino).setxattr(c, ino, name)
    }
    fn setattr(&self, c: Caller, ino: u64, set: SetAttr, fh: Option<u64>) -> Result<Attr, FsError> {
        self.by(ino).setattr(c, ino, set, fh)
    }
    fn mknod(&self, c: Caller, n: NewNode, rdev: u32) -> Result<Attr, FsError> {
        self.at(n.parent, n.name).mknod(c, n, rdev)
    }
    fn mkdir(&self, c: Caller, n: NewNode) -> Result<Attr, FsError> {
        self.at(n.parent, n.name).mkdir(c, n)
    }
    fn symlink(
        &self,
        c: Caller,
        parent: u64,
        name: &OsStr,
        target: &Path,
    ) -> Result<Attr, FsError> {
        self.at(parent, name).symlink(c, parent, name, target)
    }
    fn link(&self, c: Caller, ino: u64, newparent: u64, newname: &OsStr) -> Result<Attr, FsError> {
        let fs = match own(ino) {
            true => &self.extra,
            false => self.at(newparent, newname),
        };
        fs.link(c, ino, newparent, newname)
    }
    fn unlink(&self, c: Caller, parent: u64, name: &OsStr) -> Result<(), FsError> {
        self.at(parent, name).unlink(c, parent, name)
    }
    fn rmdir(&self, c: Caller, parent: u64, name: &OsStr) -> Result<(), FsError> {
        self.at(parent, name).rmdir(c, parent, name)
    }
    fn rename(
        &self,
        c: Caller,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<(), FsError> {
        // the source decides, and so does a target folder of the grafted one
        let fs = match own(newparent) {
            true => &self.extra,
            false => self.at(parent, name),
        };
        fs.rename(c, parent, name, newparent, newname, flags)
    }
    fn create(&self, c: Caller, n: NewNode, flags: i32) -> Result<(Attr, Opened), FsError> {
        self.at(n.parent, n.name).create(c, n, flags)
    }
    fn write(&self, c: Caller, fh: u64, offset: u64, data: &[u8]) -> Result<u32, FsError> {
        self.by(fh).write(c, fh, offset, data)
    }
    fn flush(&self, c: Caller, fh: u64) -> Result<(), FsError> {
        self.by(fh).flush(c, fh)
    }
    fn fsync(&self, c: Caller, fh: u64, datasync: bool) -> Result<(), FsError> {
        self.by(fh).fsync(c, fh, datasync)
    }
}

/// The tables folder's own files, as a file system of their own: [`Graft`] sends it only
/// the requests of its inodes and handles (at and above [`BASE`]) and of the names it
/// [`Grafted::claims`]; the mount's global answers (TTL, statistics, caching) are the wrapped
/// file system's.
impl FsOps for TablesOps {
    fn ttl(&self) -> Duration {
        self.inner.ttl()
    }
    fn ttl_of(&self, _ino: u64) -> Duration {
        Duration::ZERO
    }
    fn read_ino(&self, _c: Caller, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
        let b = self.read_all(ino)?;
        Ok(slice(&b, offset, size))
    }
    fn lookup(&self, _c: Caller, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        if parent == ROOT && name == DIR_NAME {
            return self.getattr_own(DIR_INO);
        }
        if parent == DIR_INO {
            return self.lookup_own(name);
        }
        Err(FsError::NotFound)
    }
    fn inodes(&self) -> usize {
        0
    }
    fn getattr(&self, _c: Caller, ino: u64, fh: Option<u64>) -> Result<Attr, FsError> {
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
    }
    fn readlink(&self, _c: Caller, _ino: u64) -> Result<Vec<u8>, FsError> {
        Err(FsError::Invalid("not a symbolic link".into()))
    }
    fn open(&self, _c: Caller, ino: u64, flags: i32) -> Result<Opened, FsError> {
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
    fn read(&self, _c: Caller, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
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
    fn release(&self, c: Caller, fh: u64) -> Result<(), FsError> {
        let r = self.flush(c, fh);
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
    fn opendir(&self, _c: Caller, ino: u64) -> Result<u64, FsError> {
        if ino == DIR_INO {
            return Ok(self.new_handle(Handle::Dir));
        }
        Err(FsError::NotDir)
    }
    fn readdir(&self, _c: Caller, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        self.listing(fh, offset, false)
    }
    fn readdirplus(
        &self,
        _c: Caller,
        fh: u64,
        offset: u64,
    ) -> Result<Vec<(u64, DirItem)>, FsError> {
        self.listing(fh, offset, true)
    }
    fn releasedir(&self, _c: Caller, fh: u64) -> Result<(), FsError> {
        lock(&self.state).handles.remove(&fh);
        Ok(())
    }
    fn statfs(&self, c: Caller) -> Result<StatFs, FsError> {
        self.inner.statfs(c)
    }
    fn access(&self, _c: Caller, ino: u64, mask: i32) -> Result<(), FsError> {
        if mask & libc::W_OK != 0 && (self.read_only || ino == STATUS_INO) {
            return Err(FsError::ReadOnly("the tables folder"));
        }
        Ok(())
    }
    fn getxattr(&self, _c: Caller, _ino: u64, _name: &OsStr) -> Result<Vec<u8>, FsError> {
        Err(FsError::NoAttr)
    }
    fn listxattr(&self, _c: Caller, _ino: u64) -> Result<Vec<u8>, FsError> {
        Ok(Vec::new())
    }
    fn setxattr(&self, _c: Caller, _ino: u64, _name: &OsStr) -> Result<(), FsError> {
        Err(FsError::NotSupported(
            "extended attributes in the tables folder",
        ))
    }
    fn setattr(
        &self,
        _c: Caller,
        ino: u64,
        set: SetAttr,
        _fh: Option<u64>,
    ) -> Result<Attr, FsError> {
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
    fn mknod(&self, _c: Caller, n: NewNode, _rdev: u32) -> Result<Attr, FsError> {
        let NewNode {
            parent, name, mode, ..
        } = n;
        if parent == DIR_INO {
            if mode & libc::S_IFMT != libc::S_IFREG {
                return Err(FsError::NotSupported(
                    "only regular files in the tables folder",
                ));
            }
            let ino = self.new_scratch(name)?;
            return self.getattr_own(ino);
        }
        Err(FsError::Exists)
    }
    fn mkdir(&self, _c: Caller, n: NewNode) -> Result<Attr, FsError> {
        if n.parent == DIR_INO {
            return Err(FsError::NotSupported("folders in the tables folder"));
        }
        Err(FsError::Exists)
    }
    fn symlink(
        &self,
        _c: Caller,
        parent: u64,
        _name: &OsStr,
        _target: &Path,
    ) -> Result<Attr, FsError> {
        if parent == DIR_INO {
            return Err(FsError::NotSupported("links in the tables folder"));
        }
        Err(FsError::Exists)
    }
    fn link(
        &self,
        _c: Caller,
        _ino: u64,
        newparent: u64,
        newname: &OsStr,
    ) -> Result<Attr, FsError> {
        if newparent == ROOT && newname == DIR_NAME {
            return Err(FsError::Exists);
        }
        Err(FsError::NotSupported("links in the tables folder"))
    }
    fn unlink(&self, _c: Caller, parent: u64, name: &OsStr) -> Result<(), FsError> {
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
        Err(FsError::IsDir)
    }
    fn rmdir(&self, _c: Caller, parent: u64, name: &OsStr) -> Result<(), FsError> {
        if parent == ROOT && name == DIR_NAME {
            return Err(FsError::ReadOnly("the tables folder"));
        }
        Err(FsError::NotDir)
    }
    fn rename(
        &self,
        _c: Caller,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        _flags: u32,
    ) -> Result<(), FsError> {
        match (parent == DIR_INO, newparent == DIR_INO) {
            // the folder itself (the only name of the wrapped root claimed)
            (false, false) => Err(FsError::ReadOnly("the tables folder")),
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
    fn create(&self, c: Caller, n: NewNode, flags: i32) -> Result<(Attr, Opened), FsError> {
        let NewNode { parent, name, .. } = n;
        if parent != DIR_INO {
            return Err(FsError::Exists);
        }
        if let Some(fam) = FAMILIES.iter().position(|f| name == f.csv) {
            let ino = CSV_INO + fam as u64;
            let opened = self.open(c, ino, flags | libc::O_WRONLY)?;
            return Ok((self.getattr_own(ino)?, opened));
        }
        let ino = self.new_scratch(name)?;
        let opened = self.open(c, ino, flags)?;
        Ok((self.getattr_own(ino)?, opened))
    }
    fn write(&self, _c: Caller, fh: u64, offset: u64, data: &[u8]) -> Result<u32, FsError> {
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
    fn flush(&self, _c: Caller, fh: u64) -> Result<(), FsError> {
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
    fn fsync(&self, c: Caller, fh: u64, _datasync: bool) -> Result<(), FsError> {
        self.flush(c, fh)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::core::{Core, MountOptions};
    use std::sync::Arc;

    const ARMCOM: &[u8] =
        b"[UNITINFO]\r\n\t{\r\n\tUnitName=ARMCOM;\r\n\tBuildCostEnergy=34125;\r\n\t}\r\n";
    const CORCOM: &[u8] = b"[UNITINFO]\n{\nUnitName=CORCOM;\nBuildCostEnergy=33000;\n}\n";

    struct Game {
        game: tempfile::TempDir,
        state: tempfile::TempDir,
    }

    fn game() -> Game {
        let game = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(game.path().join("units")).unwrap();
        std::fs::write(game.path().join("units/ARMCOM.FBI"), ARMCOM).unwrap();
        std::fs::write(game.path().join("units/CORCOM.FBI"), CORCOM).unwrap();
        Game { game, state }
    }

    impl Game {
        fn ops(&self) -> TablesOps {
            let opts = MountOptions {
                state_dir: Some(self.state.path().to_path_buf()),
                ..MountOptions::default()
            };
            let core = Arc::new(Core::new(self.game.path(), opts, None).unwrap());
            let j = Journal::new(
                self.state.path(),
                self.game.path(),
                Some(self.game.path().to_path_buf()),
            );
            TablesOps::new(core, false).with_journal(Some(j))
        }
        fn read(&self, rel: &str) -> Vec<u8> {
            std::fs::read(self.game.path().join(rel)).unwrap()
        }
        /// Every file of the game folder (hidden ones included) and its bytes.
        fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
            let mut v: Vec<_> = walkdir::WalkDir::new(self.game.path())
                .into_iter()
                .flatten()
                .filter(|e| e.file_type().is_file())
                .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
                .collect();
            v.sort();
            v
        }
    }

    /// `units.csv` with both commanders' energy cost raised.
    fn both_edited(t: &TablesOps) -> Vec<u8> {
        let fam = FAMILIES.iter().position(|f| f.csv == "units.csv").unwrap();
        let csv = String::from_utf8(t.render(fam).unwrap()).unwrap();
        assert!(csv.contains("34125") && csv.contains("33000"), "{csv}");
        csv.replace("34125", "40000")
            .replace("33000", "41000")
            .into_bytes()
    }

    fn units() -> usize {
        FAMILIES.iter().position(|f| f.csv == "units.csv").unwrap()
    }

    #[test]
    fn a_save_of_two_files_replaces_both_and_keeps_their_history() {
        let g = game();
        let t = g.ops();
        t.commit_csv(units(), &both_edited(&t)).unwrap();
        assert!(String::from_utf8_lossy(&g.read("units/ARMCOM.FBI")).contains("=40000;"));
        assert!(String::from_utf8_lossy(&g.read("units/CORCOM.FBI")).contains("=41000;"));
        let status = String::from_utf8(t.status_text()).unwrap();
        assert!(
            status.contains("units.csv: committed 2 file(s)"),
            "{status}"
        );
        assert!(
            status.contains("[UNITINFO] BuildCostEnergy: \"34125\" -> \"40000\""),
            "{status}"
        );
        for (rel, old) in [("units/ARMCOM.FBI", ARMCOM), ("units/CORCOM.FBI", CORCOM)] {
            let abs = g.game.path().join(rel);
            let h =
                crate::fs::stage::history_of(&crate::fs::stage::history_dir(g.state.path(), &abs));
            assert_eq!(h.len(), 1, "{rel}");
            assert_eq!(std::fs::read(&h[0]).unwrap(), old);
        }
        // no journal, no temporary file left
        assert!(!g
            .state
            .path()
            .join("tables")
            .read_dir()
            .unwrap()
            .any(|_| true));
        assert_eq!(g.files().len(), 2);
    }

    #[test]
    fn a_save_failing_while_staging_writes_nothing() {
        let g = game();
        let mut t = g.ops();
        t.fail = Some((true, "CORCOM.FBI"));
        let before = g.files();
        let e = t.commit_csv(units(), &both_edited(&t)).unwrap_err();
        assert!(e.to_string().contains("nothing written"), "{e}");
        assert_eq!(g.files(), before);
    }

    #[test]
    fn a_save_failing_while_renaming_puts_back_what_it_replaced() {
        let g = game();
        let mut t = g.ops();
        // ARMCOM is replaced first, then CORCOM's rename fails
        t.fail = Some((false, "CORCOM.FBI"));
        let before = g.files();
        let e = t.commit_csv(units(), &both_edited(&t)).unwrap_err();
        assert!(e.to_string().contains("nothing changed"), "{e}");
        assert_eq!(g.files(), before);
        assert!(!g
            .state
            .path()
            .join("tables")
            .read_dir()
            .unwrap()
            .any(|_| true));
    }

    #[test]
    fn a_save_cut_short_is_undone_at_the_next_start() {
        let g = game();
        let t = g.ops();
        let fam = units();
        let plan = t
            .table(&FAMILIES[fam])
            .unwrap()
            .changes(&both_edited(&t))
            .unwrap();
        assert_eq!(plan.len(), 2);
        // the save got as far as replacing the first file and staging the second
        let j = t.journal.clone().unwrap();
        j.begin(&plan).unwrap();
        t.write_through(&plan[0].path, &plan[0].new).unwrap();
        t.stage(&plan[1].path, &plan[1].new).unwrap();
        drop(t);
        assert_ne!(g.read("units/ARMCOM.FBI"), ARMCOM);
        let t = g.ops();
        assert_eq!(g.read("units/ARMCOM.FBI"), ARMCOM);
        assert_eq!(g.read("units/CORCOM.FBI"), CORCOM);
        assert_eq!(g.files().len(), 2, "the staged file is gone");
        assert!(!j.dir.exists());
        let status = String::from_utf8(t.status_text()).unwrap();
        assert!(status.contains("a save cut short was undone"), "{status}");
        // and saves work again
        t.commit_csv(fam, &both_edited(&t)).unwrap();
        assert!(String::from_utf8_lossy(&g.read("units/CORCOM.FBI")).contains("=41000;"));
    }

    /// The graft sends the folder's name at the root to the tables: nothing of that name is
    /// made in the game folder; other names pass through.
    #[test]
    fn the_folder_name_at_the_root_is_the_tables() {
        let g = game();
        let opts = MountOptions::default();
        let core = Arc::new(Core::new(g.game.path(), opts, None).unwrap());
        let fs = with_tables(core, false, Setup::default(), false);
        let name = OsStr::new(DIR_NAME);
        let flags = libc::O_WRONLY | libc::O_CREAT;
        let errno = |e: FsError| e.errno();
        assert_eq!(
            fs.create(Caller::root(), NewNode::new(ROOT, name, 0o100644, 0), flags)
                .map(|_| ())
                .map_err(errno),
            Err(libc::EEXIST)
        );
        assert_eq!(
            fs.mkdir(Caller::root(), NewNode::new(ROOT, name, 0o755, 0))
                .map(|_| ())
                .map_err(errno),
            Err(libc::EEXIST)
        );
        assert_eq!(
            fs.unlink(Caller::root(), ROOT, name).map_err(errno),
            Err(libc::EISDIR)
        );
        assert_eq!(
            fs.rmdir(Caller::root(), ROOT, name).map_err(errno),
            Err(libc::EROFS)
        );
        assert_eq!(
            fs.rename(Caller::root(), ROOT, name, ROOT, OsStr::new("x"), 0)
                .map_err(errno),
            Err(libc::EROFS)
        );
        assert!(!g.game.path().join(DIR_NAME).exists());
        assert_eq!(fs.lookup(Caller::root(), ROOT, name).unwrap().ino, DIR_INO);
        let units = fs
            .lookup(Caller::root(), ROOT, OsStr::new("units"))
            .unwrap();
        assert!(units.ino < BASE);
        assert_eq!(units.kind, FileKind::Dir);
    }
}
