//! The write-back staging area: where edits made in asset directories are kept until (and
//! after) they are committed to the binary, and the history of replaced binaries.
//!
//! ```text
//! STATE/assets/<key>/asset.json   binary path, base identity, dirty paths, whiteouts, status
//! STATE/assets/<key>/files/…      staged files and folders (bytes, mode, mtime)
//! STATE/history/<key>/<nanos>-<name>   previous versions of the binary (the oldest, the
//!                                      original, and the last HISTORY_KEEP)
//! ```
//!
//! `<key>` is derived from the binary's absolute path, so the same binary finds its staged
//! files again after a remount. The commits of one operation (saves of one asset less than
//! the mount's operation gap apart) keep one version: the binary before the operation.

use crate::view::{AssetKind, FileSet, RebuildBase, Rebuilt, ViewError, ViewOptions};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Versions kept per binary in the history, besides the original (the oldest version, which
/// is never evicted).
pub const HISTORY_KEEP: usize = 10;

/// Lines of one operation's commits kept for the status (the count of the others is kept).
pub const OPERATION_LINES: usize = 64;

/// Saves of one asset less than this apart (from the end of one to the start of the next)
/// are one operation by default: its commits keep one version in the history.
pub const OPERATION_GAP: std::time::Duration = std::time::Duration::from_secs(2);

/// Rebuilds a binary of `kind` from a file set; `base` is the current binary, as bytes or as
/// decoded (unchanged parts keep its stored bytes). The mount uses
/// [`crate::view::rebuild_from`]; tests can substitute their own.
pub type Packer = Arc<
    dyn Fn(AssetKind, &dyn FileSet, RebuildBase<'_>, &ViewOptions) -> Result<Rebuilt, ViewError>
        + Send
        + Sync,
>;

/// Whether `vpath` (relative to the asset directory) is a layout file: no component starts
/// with `.`, and the name ends in `.png`, `.gif`, `.csv`, `.json`, a script's `.coba` or
/// `.bos`, or a 3DO's `.obj` / `.mtl` (any case). Other names
/// (temporary, swap and backup files) are staged but never built.
pub fn is_layout_name(vpath: &str) -> bool {
    if vpath.is_empty() || vpath.split('/').any(|c| c.starts_with('.') || c.is_empty()) {
        return false;
    }
    let lower = vpath.to_ascii_lowercase();
    [
        ".png", ".gif", ".csv", ".json", ".coba", ".bos", ".obj", ".mtl",
    ]
    .iter()
    .any(|e| lower.ends_with(e))
}

/// The default state directory: `$XDG_STATE_HOME/tafs`, else `~/.local/state/tafs`.
pub fn default_state_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("tafs");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
    PathBuf::from(home).join(".local/state/tafs")
}

/// Identity of one version of a binary (what tells "changed by someone else").
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ident {
    /// Size in bytes.
    pub size: u64,
    /// Modification time (seconds, nanoseconds).
    pub mtime: (i64, i64),
    /// Status change time.
    pub ctime: (i64, i64),
    /// Inode number.
    pub ino: u64,
    /// Device.
    pub dev: u64,
}

impl Ident {
    /// The identity of the file `m` describes.
    pub fn of(m: &std::fs::Metadata) -> Ident {
        use std::os::unix::fs::MetadataExt;
        Ident {
            size: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            ino: m.ino(),
            dev: m.dev(),
        }
    }
}

/// The persisted state of one asset's staging area (`asset.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StageMeta {
    /// Absolute path of the binary.
    pub binary: PathBuf,
    /// Identity of the binary the staged files are based on (`None`: no binary yet).
    pub base: Option<Ident>,
    /// Staged layout paths and whiteouts not committed yet.
    pub dirty: BTreeSet<String>,
    /// Deleted generated paths.
    pub whiteouts: BTreeSet<String>,
    /// An asset created with `mkdir` whose binary does not exist yet.
    pub new_asset: bool,
    /// `metadata.json` was deleted: no commits until it is written again.
    pub removing: bool,
    /// The binary changed outside the mount while files were dirty.
    pub conflict: bool,
    /// Last outcome (stored as its one line of text).
    pub status: Status,
    /// The binary a commit is replacing the current one with (recorded before the rename,
    /// cleared after): if the process dies in between, the next start recognises the new
    /// binary as its own commit instead of a change made outside.
    #[serde(default)]
    pub committing: Option<Written>,
    /// The last operation that committed (see [`OPERATION_GAP`]).
    #[serde(default)]
    pub operation: Option<Operation>,
    /// The user and group who made this asset with `mkdir` (a root daemon's caller): its
    /// staged folder is theirs, and so is the binary its first commit writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<(u32, u32)>,
}

/// The last outcome of an asset's staging area, shown in its `.tafs-status`. Stored in
/// `asset.json` as the one line it is shown as (`"error: …"`, `"committed …"`, …), so the
/// state folders written before it was an enum load unchanged: the text is parsed by its
/// prefix once, when loaded, never tested again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Status {
    /// Nothing happened yet.
    #[default]
    None,
    /// A save is waiting for the files it needs (`pending: …`).
    Pending(String),
    /// Saves wait for the quiet delay of deferred commits (shown as is).
    Deferred(String),
    /// The last commit or save failed (`error: …`).
    Error(String),
    /// The binary changed outside the mount while files were staged (`conflict: …`).
    Conflict(String),
    /// `metadata.json` was deleted (`removing: …`).
    Removing(String),
    /// A directory made with `mkdir` waits for its files (`new asset: …`).
    NewAsset(String),
    /// A save changed nothing (`clean: …`).
    Clean(String),
    /// The binary was rebuilt (`committed` or `committed …`).
    Committed(String),
}

/// A [`Status`] variant made from its message.
type StatusOf = fn(String) -> Status;

impl Status {
    /// The prefixes of the line, each with its variant (the message is what follows).
    const PREFIXES: [(&'static str, StatusOf); 6] = [
        ("pending: ", Status::Pending),
        ("error: ", Status::Error),
        ("conflict: ", Status::Conflict),
        ("removing: ", Status::Removing),
        ("new asset: ", Status::NewAsset),
        ("clean: ", Status::Clean),
    ];

    /// True for a failed commit or save.
    pub fn is_error(&self) -> bool {
        matches!(self, Status::Error(_))
    }

    /// True when nothing was recorded.
    pub fn is_none(&self) -> bool {
        matches!(self, Status::None)
    }
}

impl From<String> for Status {
    fn from(line: String) -> Status {
        if line.is_empty() {
            return Status::None;
        }
        if line == "committed" {
            return Status::Committed(String::new());
        }
        if let Some(m) = line.strip_prefix("committed ") {
            return Status::Committed(m.to_string());
        }
        for (prefix, make) in Status::PREFIXES {
            if let Some(m) = line.strip_prefix(prefix) {
                return make(m.to_string());
            }
        }
        Status::Deferred(line)
    }
}

impl From<Status> for String {
    fn from(s: Status) -> String {
        s.to_string()
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::None => Ok(()),
            Status::Pending(m) => write!(f, "pending: {m}"),
            Status::Deferred(m) => f.write_str(m),
            Status::Error(m) => write!(f, "error: {m}"),
            Status::Conflict(m) => write!(f, "conflict: {m}"),
            Status::Removing(m) => write!(f, "removing: {m}"),
            Status::NewAsset(m) => write!(f, "new asset: {m}"),
            Status::Clean(m) => write!(f, "clean: {m}"),
            Status::Committed(m) if m.is_empty() => f.write_str("committed"),
            Status::Committed(m) => write!(f, "committed {m}"),
        }
    }
}

/// The commits of one operation: saves of one asset, each starting less than the operation
/// gap after the previous one ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    /// When its last save ended (milliseconds since the Unix epoch).
    pub last_ms: u64,
    /// What its last commit wrote (the binary a commit continuing it replaces).
    pub wrote: Option<Written>,
    /// The identity of the binary its last commit wrote, once renamed into place: a binary
    /// of that identity is known to hold what `wrote` records without reading it.
    #[serde(default)]
    pub wrote_ident: Option<Ident>,
    /// Its commits' outcomes, oldest first (at most [`OPERATION_LINES`]).
    pub commits: Vec<String>,
    /// Commits not in `commits` (the earliest beyond [`OPERATION_LINES`]).
    pub more: usize,
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What a commit wrote: size and CRC-32 of the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    /// Size in bytes.
    pub size: u64,
    /// CRC-32 of the bytes.
    pub crc32: u32,
}

impl Written {
    /// The record of `bytes`.
    pub fn of(bytes: &[u8]) -> Written {
        Written {
            size: bytes.len() as u64,
            crc32: crc32fast::hash(bytes),
        }
    }

    /// The record of everything in `file` (read by range from its start, in blocks of
    /// [`BLOCK`] bytes: never held whole; the file's offset is not used).
    pub fn of_file(file: &std::fs::File) -> std::io::Result<Written> {
        let mut h = crc32fast::Hasher::new();
        let size = blocks_of(file, |b| {
            h.update(b);
            true
        })?;
        Ok(Written {
            size,
            crc32: h.finalize(),
        })
    }

    /// [`Self::of_file`] of `file`, and whether its bytes are those of `other` (both read by
    /// range, block by block).
    pub fn of_file_comparing(
        file: &std::fs::File,
        other: &std::fs::File,
    ) -> std::io::Result<(Written, bool)> {
        use std::os::unix::fs::FileExt;
        let other_len = other.metadata()?.len();
        let mut same = file.metadata()?.len() == other_len;
        let mut h = crc32fast::Hasher::new();
        let mut theirs = vec![0u8; BLOCK];
        let mut at = 0u64;
        let mut failed = None;
        let size = blocks_of(file, |b| {
            h.update(b);
            if same {
                let t = &mut theirs[..b.len()];
                match other.read_exact_at(t, at) {
                    Ok(()) => same = t == b,
                    Err(e) => {
                        failed = Some(e);
                        return false;
                    }
                }
            }
            at += b.len() as u64;
            true
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        Ok((
            Written {
                size,
                crc32: h.finalize(),
            },
            same && size == other_len,
        ))
    }
}

/// Bytes read at a time by the records and copies that stream a file.
pub const BLOCK: usize = 256 << 10;

/// Hands every block of `file` (from offset 0 to its end, read by `pread`) to `f`, which may
/// stop the walk by returning false; returns the bytes handed over.
fn blocks_of(file: &std::fs::File, mut f: impl FnMut(&[u8]) -> bool) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; BLOCK];
    let mut at = 0u64;
    loop {
        let n = match file.read_at(&mut buf, at) {
            Ok(0) => return Ok(at),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let Some(b) = buf.get(..n) else {
            return Ok(at);
        };
        at += n as u64;
        if !f(b) {
            return Ok(at);
        }
    }
}

/// A binary version being kept in the history: its bytes, or the open file (an archive,
/// copied file to file when it cannot be linked, never read whole).
#[derive(Debug, Clone, Copy)]
pub enum Version<'a> {
    /// The bytes.
    Bytes(&'a [u8]),
    /// The file, as opened (read from its start).
    File(&'a std::fs::File),
}

impl Version<'_> {
    /// Its record.
    fn written(&self) -> std::io::Result<Written> {
        match self {
            Version::Bytes(b) => Ok(Written::of(b)),
            Version::File(f) => Written::of_file(f),
        }
    }

    /// Its length.
    fn len(&self) -> std::io::Result<u64> {
        match self {
            Version::Bytes(b) => Ok(b.len() as u64),
            Version::File(f) => f.metadata().map(|m| m.len()),
        }
    }
}

/// One asset's staging area.
#[derive(Debug)]
pub struct Stage {
    /// `STATE/assets/<key>`.
    pub dir: PathBuf,
    /// `STATE/assets/<key>/files`: the staged tree.
    pub files: PathBuf,
    /// `STATE/history/<key>`.
    pub history: PathBuf,
    /// Persisted state.
    pub meta: StageMeta,
    /// Set once `files` was seen absent, cleared before this daemon creates it
    /// ([`Stage::creating_files`]): while set, nothing is staged and no path beneath `files`
    /// is looked up (a listing of a folder no one edited asks the staging area nothing).
    /// Only this daemon creates a stage's `files` (under the asset's stage lock).
    pub(crate) files_absent: std::sync::atomic::AtomicBool,
    /// The state folder's count of `asset.json` writes ([`StagedIndex`]).
    pub(crate) writes: Arc<AtomicU64>,
}

/// What kind of entry a staged path is ([`StagedTree`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StagedKind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// Anything else (a symlink, …).
    Other,
}

/// The staged tree of one staging area as one pass of `readdir` found it (no `stat`): what a
/// commit's build asks of every frame (staged or not, a folder, being filled) answered from
/// memory instead of a system call per question. Taken under the asset's stage lock, for
/// one build.
#[derive(Debug, Default)]
pub struct StagedTree {
    entries: std::collections::HashMap<String, StagedKind>,
    /// Folders' children, sorted.
    children: std::collections::HashMap<String, Vec<(String, bool)>>,
}

/// Entries a [`StagedTree`] records at most (a larger staging area is walked no further;
/// what is beyond is taken as not staged only by builds that tolerate it: see
/// [`StagedTree::complete`]).
const SNAPSHOT_MAX: usize = 1 << 20;

impl StagedTree {
    /// Walks `files` (a staging area's tree; missing: empty).
    pub fn of(files: &Path) -> StagedTree {
        let mut t = StagedTree::default();
        let mut stack = vec![String::new()];
        let mut n = 0usize;
        while let Some(dir) = stack.pop() {
            let real = if dir.is_empty() {
                files.to_path_buf()
            } else {
                files.join(&dir)
            };
            let Ok(rd) = std::fs::read_dir(&real) else {
                continue;
            };
            let mut kids = Vec::new();
            for e in rd.flatten() {
                let Ok(name) = e.file_name().into_string() else {
                    continue;
                };
                let kind = match e.file_type() {
                    Ok(ft) if ft.is_dir() => StagedKind::Dir,
                    Ok(ft) if ft.is_file() => StagedKind::File,
                    _ => StagedKind::Other,
                };
                let p = if dir.is_empty() {
                    name.clone()
                } else {
                    format!("{dir}/{name}")
                };
                n += 1;
                if n > SNAPSHOT_MAX {
                    t.entries.clear();
                    t.children.clear();
                    t.entries.insert(String::new(), StagedKind::Other);
                    return t;
                }
                if kind == StagedKind::Dir && stack.len() < 4096 {
                    stack.push(p.clone());
                }
                kids.push((name, kind == StagedKind::Dir));
                t.entries.insert(p, kind);
            }
            kids.sort();
            t.entries.entry(dir.clone()).or_insert(StagedKind::Dir);
            t.children.insert(dir, kids);
        }
        t
    }

    /// Whether the walk recorded everything (a tree over [`SNAPSHOT_MAX`] entries is not
    /// answered from memory).
    pub fn complete(&self) -> bool {
        self.entries.get("") != Some(&StagedKind::Other)
    }

    /// The kind of staged `path` (`""`: the tree itself), `None` when nothing is staged there.
    pub fn kind(&self, path: &str) -> Option<StagedKind> {
        self.entries.get(path).copied()
    }

    /// The entries of staged folder `dir` (name, is a folder), sorted; `None` when it is no
    /// staged folder.
    pub fn children(&self, dir: &str) -> Option<&[(String, bool)]> {
        self.children.get(dir).map(Vec::as_slice)
    }
}

pub use sha_like::fnv64;

/// The key of a binary's staging area and history.
pub fn key_of(abs_binary: &Path) -> String {
    let name = abs_binary
        .file_name()
        .map(|n| crate::view::safe_component(n.to_string_lossy().as_bytes()))
        .unwrap_or_default();
    format!(
        "{:016x}-{name}",
        fnv64(abs_binary.as_os_str().as_encoded_bytes())
    )
}

mod sha_like {
    /// FNV-1a, 64 bits: stable across runs and builds (unlike `DefaultHasher`).
    pub fn fnv64(data: &[u8]) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in data {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }
}

impl Stage {
    /// Loads (or starts empty) the staging area of `abs_binary` under `state`.
    pub fn load(state: &Path, abs_binary: &Path) -> Stage {
        let key = key_of(abs_binary);
        let dir = state.join("assets").join(&key);
        let meta = std::fs::read(dir.join("asset.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<StageMeta>(&b).ok())
            .filter(|m| m.binary == abs_binary)
            .unwrap_or_else(|| StageMeta {
                binary: abs_binary.to_path_buf(),
                ..Default::default()
            });
        Stage {
            files: dir.join("files"),
            history: state.join("history").join(&key),
            dir,
            meta,
            files_absent: Default::default(),
            writes: meta_writes(state),
        }
    }

    /// Whether the staged tree (`files`) may exist: `false` once it was seen absent, until
    /// [`Stage::creating_files`].
    pub fn has_files(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.files_absent.load(Ordering::Acquire) {
            return false;
        }
        match self.files.symlink_metadata() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.files_absent.store(true, Ordering::Release);
                false
            }
            _ => true,
        }
    }

    /// `files` is about to be created: [`Stage::has_files`] looks at it again.
    pub fn creating_files(&self) {
        self.files_absent
            .store(false, std::sync::atomic::Ordering::Release);
    }

    /// Whether anything is staged (files, folders or whiteouts) or the asset is new.
    pub fn active(&self) -> bool {
        self.meta.new_asset || !self.meta.whiteouts.is_empty() || self.has_files()
    }

    /// Writes `asset.json` atomically (readers and a killed daemon see the old or the new
    /// record), without syncing it: what it records (dirty paths, status, the base after a
    /// commit) is what the files beside it and the binary say after a power loss too, or is
    /// recognised from the durable record of [`Stage::save_durable`].
    pub fn save(&self) -> std::io::Result<()> {
        self.write_meta(false)
    }

    /// [`Stage::save`], synced before the rename: the record of a binary about to be renamed
    /// into place (`committing`), which must survive a power loss that the rename survives,
    /// so that the next start knows the binary as the mount's own.
    pub fn save_durable(&self) -> std::io::Result<()> {
        self.write_meta(true)
    }

    fn write_meta(&self, sync: bool) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let json = serde_json::to_vec_pretty(&self.meta).map_err(std::io::Error::other)?;
        let tmp = self.dir.join(".asset.json.tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&json)?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, self.dir.join("asset.json"))?;
        self.writes.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Forgets everything staged (files, whiteouts, flags).
    pub fn clear(&mut self) -> std::io::Result<()> {
        if self.files.exists() {
            std::fs::remove_dir_all(&self.files)?;
        }
        self.files_absent
            .store(true, std::sync::atomic::Ordering::Release);
        let binary = std::mem::take(&mut self.meta.binary);
        self.meta = StageMeta {
            binary,
            ..Default::default()
        };
        let r = std::fs::remove_file(self.dir.join("asset.json"));
        self.writes.fetch_add(1, Ordering::AcqRel);
        match r {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// `lstat` of staged `vpath`; `None` when it is not staged (without a look when nothing
    /// is, [`Stage::has_files`]).
    pub fn lstat(&self, vpath: &str) -> Option<std::fs::Metadata> {
        self.has_files()
            .then(|| self.path(vpath).symlink_metadata().ok())
            .flatten()
    }

    /// The entries of staged folder `vpath`, if there is one.
    pub fn read_dir(&self, vpath: &str) -> Option<std::fs::ReadDir> {
        self.has_files()
            .then(|| std::fs::read_dir(self.path(vpath)).ok())
            .flatten()
    }

    /// The real path of staged `vpath` (`""` = the asset directory itself).
    pub fn path(&self, vpath: &str) -> PathBuf {
        if vpath.is_empty() {
            self.files.clone()
        } else {
            self.files.join(vpath)
        }
    }

    /// Whether `vpath` or one of its folders is deleted.
    pub fn hidden(&self, vpath: &str) -> bool {
        let mut p = vpath;
        loop {
            if self.meta.whiteouts.contains(p) {
                return true;
            }
            match p.rsplit_once('/') {
                Some((parent, _)) => p = parent,
                None => return false,
            }
        }
    }

    /// The last operation, if a save starting now continues it (began less than `gap` after
    /// its last save ended).
    fn ongoing(&mut self, gap: std::time::Duration) -> Option<&mut Operation> {
        let gap = u64::try_from(gap.as_millis()).unwrap_or(u64::MAX);
        let now = now_ms();
        self.meta
            .operation
            .as_mut()
            .filter(|o| now.saturating_sub(o.last_ms) < gap)
    }

    /// Called by a commit about to replace binary `abs` (its version `old`, read from the
    /// file `old_meta` describes) with the binary `new` records: keeps the binary in the
    /// history unless the commit continues an operation whose last commit wrote it (the
    /// version before the operation is already kept), and records the commit in the
    /// operation (a new one when it continues none). `gap`: the mount's operation gap.
    ///
    /// Returns the version when it is a hard link of the binary: the link changed the
    /// binary's ctime, so the staging area is based on the binary as it is now; if the
    /// binary is not replaced after all, [`Self::unkeep`] removes the link.
    pub fn keep_replaced(
        &mut self,
        abs: &Path,
        old: Version<'_>,
        old_meta: &std::fs::Metadata,
        new: Written,
        gap: std::time::Duration,
    ) -> std::io::Result<Option<PathBuf>> {
        // the binary the last commit wrote, unchanged since (the same identity), or else of
        // the same record: the old version's record is read only when it can matter (no
        // known identity, the same size)
        let (wrote, wrote_ident) = self
            .ongoing(gap)
            .map_or((None, None), |o| (o.wrote, o.wrote_ident.clone()));
        let continues = match wrote {
            Some(_) if wrote_ident.is_some_and(|i| i == Ident::of(old_meta)) => true,
            Some(w) if w.size == old.len()? => old.written()? == w,
            _ => false,
        };
        let mut linked = None;
        if !continues {
            let (p, link) = self.push_version(old, Some((abs, old_meta)))?;
            if link {
                self.meta.base = std::fs::symlink_metadata(abs).ok().map(|m| Ident::of(&m));
                linked = Some(p);
            }
            self.meta.operation = Some(Operation::default());
        }
        if let Some(o) = self.meta.operation.as_mut() {
            o.wrote = Some(new);
            o.wrote_ident = None;
            o.last_ms = now_ms();
        }
        Ok(linked)
    }

    /// The binary [`Self::keep_replaced`] was called for was replaced: it is now `ident`
    /// (the file the operation's last commit wrote).
    pub fn note_replaced(&mut self, ident: &Ident) {
        if let Some(o) = self.meta.operation.as_mut() {
            o.wrote_ident = Some(ident.clone());
        }
    }

    /// Removes history version `p`, a hard link of the binary made by
    /// [`Self::keep_replaced`] for a commit that did not replace it; the staging area is
    /// based on the binary as it is then.
    pub fn unkeep(&mut self, p: &Path) {
        let _ = std::fs::remove_file(p);
        self.meta.base = std::fs::symlink_metadata(&self.meta.binary)
            .ok()
            .map(|m| Ident::of(&m));
        self.meta.operation = None;
    }

    /// At start, binary version `ident` not being the one the staging area is based on: when
    /// it is the newest version of the history (the same file: a commit was killed after
    /// keeping the binary and before replacing it), that version is removed and the staging
    /// area is based on the binary again, its staged files still to commit. `true` then.
    pub fn resume_unreplaced(&mut self, ident: &Ident) -> bool {
        use std::os::unix::fs::MetadataExt;
        if self.meta.committing.is_none() {
            return false;
        }
        let Some(newest) = history_of(&self.history).pop() else {
            return false;
        };
        let same = std::fs::symlink_metadata(&newest)
            .is_ok_and(|m| m.ino() == ident.ino && m.dev() == ident.dev);
        if !same {
            return false;
        }
        self.meta.committing = None;
        self.unkeep(&newest);
        true
    }

    /// Records a commit's outcome (the status set for it) in the operation.
    pub fn note_commit(&mut self) {
        let line = self.meta.status.to_string();
        if let Some(o) = self.meta.operation.as_mut() {
            o.last_ms = now_ms();
            o.commits.push(line);
            if o.commits.len() > OPERATION_LINES {
                o.commits.remove(0);
                o.more += 1;
            }
        }
    }

    /// A save that committed nothing (pending, or no change) ended: it continues the last
    /// operation if it started in time (`gap`), else that operation is over.
    pub fn note_save(&mut self, gap: std::time::Duration) {
        match self.ongoing(gap) {
            Some(o) => o.last_ms = now_ms(),
            None => self.meta.operation = None,
        }
    }

    /// The status of a save that changed nothing in the `what` (binary, archive): said so,
    /// unless it ends an operation whose earlier saves did commit (`gap` as in
    /// [`Self::note_save`]).
    pub fn clean_status(&mut self, what: &str, gap: std::time::Duration) -> Status {
        self.note_save(gap);
        Status::Clean(match &self.meta.operation {
            Some(o) if !o.commits.is_empty() => format!(
                "the last operation made {} commit{} of the {what} (below); its last save \
                 added nothing to them",
                o.commits.len() + o.more,
                if o.commits.len() + o.more == 1 {
                    ""
                } else {
                    "s"
                }
            ),
            _ => format!("the last save changed nothing in the {what}"),
        })
    }

    /// Keeps `bytes` (the binary before a change or a deletion) in the history, keeping the
    /// original and the last [`HISTORY_KEEP`] versions. The version is written atomically (a
    /// full state dir leaves no partial version) with the mode and owner of the binary as it
    /// is now (other users read an old version only if they may read the binary); the
    /// history folders are made `0700`.
    pub fn push_history(&self, bytes: &[u8]) -> std::io::Result<PathBuf> {
        self.push_history_from(bytes, None)
    }

    /// [`Self::push_history`]; `from`: the file `bytes` were read from (path and metadata of
    /// what was read). When that file is still there, unchanged, with no other link, and on
    /// the state directory's file system, the version is a hard link to it instead of a copy:
    /// a commit renames a new file over the binary, so the old inode, now only in the
    /// history, is never written again (no bytes copied, one folder `fsync`).
    pub fn push_history_from(
        &self,
        bytes: &[u8],
        from: Option<(&Path, &std::fs::Metadata)>,
    ) -> std::io::Result<PathBuf> {
        self.push_version(Version::Bytes(bytes), from)
            .map(|(p, _)| p)
    }

    /// [`Self::push_history_from`] of the open file `old` (read from its start, never whole
    /// into memory): a hard link of `from` where it can be, else a copy file to file.
    pub fn push_history_file(
        &self,
        old: &std::fs::File,
        from: Option<(&Path, &std::fs::Metadata)>,
    ) -> std::io::Result<PathBuf> {
        self.push_version(Version::File(old), from).map(|(p, _)| p)
    }

    /// [`Self::push_history_from`] of `old` (bytes or an open file), saying whether the
    /// version is a hard link. A file that cannot be linked is copied file to file
    /// (`copy_file_range` where the kernel can), never through memory whole.
    fn push_version(
        &self,
        old: Version<'_>,
        from: Option<(&Path, &std::fs::Metadata)>,
    ) -> std::io::Result<(PathBuf, bool)> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.history)?;
        let like = std::fs::metadata(&self.meta.binary)
            .ok()
            .filter(std::fs::Metadata::is_file);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = self
            .meta
            .binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let p = self.history.join(format!("{nanos:020}-{name}"));
        if let Some((src, m)) = from.filter(|_| like.is_some()) {
            if link_version(src, m, &p, old.len()?) {
                return self.evict().map(|()| (p, true));
            }
        }
        let put = |w: &mut std::io::BufWriter<&mut std::fs::File>| -> std::io::Result<()> {
            match old {
                Version::Bytes(b) => w.write_all(b),
                Version::File(f) => copy_file(f, w),
            }
        };
        match &like {
            Some(m) => crate::atomic::write_seekable(&p, Some(m), put)?,
            // no binary to follow (a new asset): readable by its owner only
            None => {
                crate::atomic::write_seekable(&p, None, put)?;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))?;
            }
        }
        self.evict().map(|()| (p, false))
    }

    /// Removes the oldest versions beyond the original (the oldest, never removed) and the
    /// last [`HISTORY_KEEP`].
    fn evict(&self) -> std::io::Result<()> {
        let mut all = history_of(&self.history);
        while all.len() > HISTORY_KEEP + 1 {
            let old = all.remove(1);
            let _ = std::fs::remove_file(old);
        }
        Ok(())
    }
}

/// Copies all of `from` (from its start; its offset is neither used nor moved) to `w`,
/// file to file: the kernel's `copy_file_range` where it can, else `pread` in blocks of
/// [`BLOCK`] bytes; an error when fewer bytes than its length arrive.
fn copy_file(
    from: &std::fs::File,
    w: &mut std::io::BufWriter<&mut std::fs::File>,
) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    let len = from.metadata()?.len();
    w.flush()?;
    let out: &mut std::fs::File = w.get_mut();
    let mut at = 0u64;
    let mut kernel = true;
    let mut buf = Vec::new();
    while at < len {
        let want = usize::try_from(len - at).unwrap_or(usize::MAX).min(1 << 30);
        if kernel {
            let mut off = i64::try_from(at).map_err(std::io::Error::other)?;
            // SAFETY: both descriptors are open for the call; `off` is a valid pointer and
            // the output offset is the file's own (null).
            let n = unsafe {
                libc::copy_file_range(
                    from.as_raw_fd(),
                    &mut off,
                    out.as_raw_fd(),
                    std::ptr::null_mut(),
                    want,
                    0,
                )
            };
            match n {
                0 => break,
                n if n > 0 => {
                    at += n as u64;
                    continue;
                }
                _ => {
                    let e = std::io::Error::last_os_error();
                    match e.raw_os_error() {
                        Some(libc::EINTR) => continue,
                        // not between these files (another file system, no support)
                        Some(libc::EXDEV | libc::ENOSYS | libc::EINVAL | libc::EOPNOTSUPP) => {
                            kernel = false;
                            buf = vec![0u8; BLOCK];
                            continue;
                        }
                        _ => return Err(e),
                    }
                }
            }
        }
        let n = from.read_at(&mut buf[..want.min(BLOCK)], at)?;
        if n == 0 {
            break;
        }
        std::io::Write::write_all(out, &buf[..n])?;
        at += n as u64;
    }
    if at != len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("copied {at} of {len} bytes"),
        ));
    }
    Ok(())
}

/// Makes history version `to` a hard link of `src`, the file read as `m` (`len` bytes), and
/// syncs the history folder; `false` (nothing left behind) when it cannot: `src` replaced or
/// changed since, linked elsewhere too (a change there would change the version), or on
/// another file system.
fn link_version(src: &Path, m: &std::fs::Metadata, to: &Path, len: u64) -> bool {
    use std::os::unix::fs::MetadataExt;
    // unchanged (size, times, inode: ctime moves with any change, a link included), one link
    let unchanged = std::fs::symlink_metadata(src)
        .is_ok_and(|x| x.is_file() && Ident::of(&x) == Ident::of(m) && x.nlink() == 1);
    if m.len() != len || !unchanged || std::fs::hard_link(src, to).is_err() {
        return false;
    }
    // the link is the file that was read (a rename in between is caught)
    let linked = std::fs::symlink_metadata(to)
        .is_ok_and(|x| x.ino() == m.ino() && x.dev() == m.dev() && x.nlink() == 2);
    let synced = || {
        std::fs::File::open(to.parent().unwrap_or(Path::new(".")))
            .and_then(|d| d.sync_all())
            .is_ok()
    };
    if !(linked && synced()) {
        let _ = std::fs::remove_file(to);
        return false;
    }
    true
}

/// The versions in a history folder, oldest first (temporary files of a version being
/// written, whose names start with a dot, are no versions).
pub fn history_of(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The history folder of `abs_binary` under `state`.
pub fn history_dir(state: &Path, abs_binary: &Path) -> PathBuf {
    state.join("history").join(key_of(abs_binary))
}

/// Per state folder (as the mount names it), the writes and removals of `asset.json` this
/// process made in it so far: a [`StagedIndex`] read before the latest is outdated. (A
/// mount's state folder is locked to it: only its own writes change what the index holds;
/// records made there by hand show after a remount.)
fn meta_writes(state: &Path) -> Arc<AtomicU64> {
    static WRITES: Mutex<Vec<(PathBuf, Arc<AtomicU64>)>> = Mutex::new(Vec::new());
    let mut all = WRITES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, n)) = all.iter().find(|(p, _)| p == state) {
        return n.clone();
    }
    let n = Arc::new(AtomicU64::new(0));
    all.push((state.to_path_buf(), n.clone()));
    n
}

/// What the staging areas under a state folder record for the binaries of one game folder,
/// read in one pass over them ([`StagedIndex::read`]), so that a listing asks the state
/// folder nothing while nothing was staged, committed or cleared since.
#[derive(Debug, Clone)]
pub struct StagedIndex {
    /// Binaries with a staging area (staged files, a status, a new asset): absolute paths.
    pub binaries: Vec<PathBuf>,
    /// New assets (created with `mkdir`): their absolute binary paths, whether or not a
    /// binary has appeared since.
    pub new_assets: Vec<PathBuf>,
    /// The state folder's count of writes ([`meta_writes`]) and its value when read.
    writes: (Arc<AtomicU64>, u64),
}

impl StagedIndex {
    /// Reads the staging areas under `state` of binaries inside `game_dir`.
    pub fn read(state: &Path, game_dir: &Path) -> StagedIndex {
        // (counted first: a write during the pass makes the index outdated, never current)
        let count = meta_writes(state);
        let n = count.load(Ordering::Acquire);
        let mut ix = StagedIndex {
            binaries: Vec::new(),
            new_assets: Vec::new(),
            writes: (count, n),
        };
        let Ok(rd) = std::fs::read_dir(state.join("assets")) else {
            return ix;
        };
        for m in rd
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("asset.json")).ok())
            .filter_map(|b| serde_json::from_slice::<StageMeta>(&b).ok())
            .filter(|m| m.binary.starts_with(game_dir))
        {
            if m.new_asset {
                ix.new_assets.push(m.binary.clone());
            }
            ix.binaries.push(m.binary);
        }
        ix
    }

    /// Whether this process wrote or removed an `asset.json` since the index was read.
    pub fn outdated(&self) -> bool {
        self.writes.0.load(Ordering::Acquire) != self.writes.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `asset.json` written while the status was a plain line (every kind of line the
    /// mount writes) loads with its status and the rest of its record, and is saved back
    /// with the same line.
    #[test]
    fn asset_json_of_earlier_versions_loads_with_its_status() {
        let d = tempfile::tempdir().unwrap();
        let bin = Path::new("/g/anims/fire.gaf");
        let dir = d.path().join("assets").join(key_of(bin));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            (
                "error: writing the binary: No space left on device (os error 28)",
                Status::Error("writing the binary: No space left on device (os error 28)".into()),
            ),
            (
                "committed 1234 bytes after saving fire/0.png (12 ms: build 3 ms)",
                Status::Committed("1234 bytes after saving fire/0.png (12 ms: build 3 ms)".into()),
            ),
            ("committed", Status::Committed(String::new())),
            (
                "pending: fire/frames.csv: row 2: missing",
                Status::Pending("fire/frames.csv: row 2: missing".into()),
            ),
            (
                "conflict: the binary changed outside the mount",
                Status::Conflict("the binary changed outside the mount".into()),
            ),
            (
                "removing: metadata.json was deleted",
                Status::Removing("metadata.json was deleted".into()),
            ),
            (
                "new asset: waiting for files",
                Status::NewAsset("waiting for files".into()),
            ),
            (
                "clean: the last save changed nothing in the binary",
                Status::Clean("the last save changed nothing in the binary".into()),
            ),
            (
                "fire/0.png and the saves with it commit once no save came for 500 ms",
                Status::Deferred(
                    "fire/0.png and the saves with it commit once no save came for 500 ms".into(),
                ),
            ),
            ("", Status::None),
        ];
        for (line, want) in cases {
            let json = format!(
                r#"{{"binary":"/g/anims/fire.gaf","base":{{"size":7,"mtime":[1,2],"ctime":[3,4],"ino":5,"dev":6}},"dirty":["fire/0.png"],"whiteouts":[],"new_asset":false,"removing":false,"conflict":false,"status":{},"committing":null,"operation":{{"last_ms":1,"wrote":null,"wrote_ident":null,"commits":[{}],"more":0}}}}"#,
                serde_json::to_string(line).unwrap(),
                serde_json::to_string(line).unwrap()
            );
            std::fs::write(dir.join("asset.json"), json).unwrap();
            let s = Stage::load(d.path(), bin);
            assert_eq!(s.meta.status, want, "{line}");
            assert_eq!(s.meta.status.to_string(), line);
            assert_eq!(
                s.meta.base.as_ref().map(|b| b.size),
                Some(7),
                "{line}: the record loaded"
            );
            assert!(s.meta.dirty.contains("fire/0.png"));
            assert_eq!(s.meta.operation.as_ref().unwrap().commits, [line]);
            s.save().unwrap();
            let back: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join("asset.json")).unwrap()).unwrap();
            assert_eq!(back["status"], line);
        }
    }

    #[test]
    fn a_staging_area_seen_without_files_is_not_looked_at_until_they_are_created() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Stage::load(d.path(), Path::new("/g/x.gaf"));
        assert!(!s.has_files());
        assert!(!s.active());
        // made behind the daemon's back: not looked for again (only the daemon makes it)
        std::fs::create_dir_all(s.path("seq")).unwrap();
        assert!(!s.has_files());
        // made by the daemon: announced first
        s.creating_files();
        assert!(s.has_files() && s.active());
        s.clear().unwrap();
        assert!(!s.files.exists() && !s.has_files());
        // a staging area loaded with files has them
        std::fs::create_dir_all(s.path("seq")).unwrap();
        let s2 = Stage::load(d.path(), Path::new("/g/x.gaf"));
        assert!(s2.has_files());
    }

    #[test]
    fn the_staged_index_is_outdated_by_every_record_written_or_removed() {
        let d = tempfile::tempdir().unwrap();
        let game = Path::new("/g");
        let ix = StagedIndex::read(d.path(), game);
        assert!(ix.binaries.is_empty() && !ix.outdated());
        let mut made = Stage::load(d.path(), Path::new("/g/new.gaf"));
        made.meta.new_asset = true;
        made.save().unwrap();
        assert!(ix.outdated(), "a new record");
        let mut edited = Stage::load(d.path(), Path::new("/g/a/x.gaf"));
        edited.meta.status = Status::Committed(String::new());
        edited.save_durable().unwrap();
        // another game folder's record is not this one's
        Stage::load(d.path(), Path::new("/other/y.gaf"))
            .save()
            .unwrap();
        let ix = StagedIndex::read(d.path(), game);
        assert!(!ix.outdated());
        let mut b = ix.binaries.clone();
        b.sort();
        assert_eq!(b, [Path::new("/g/a/x.gaf"), Path::new("/g/new.gaf")]);
        assert_eq!(ix.new_assets, [Path::new("/g/new.gaf")]);
        made.clear().unwrap();
        assert!(ix.outdated(), "a removed record");
        let ix = StagedIndex::read(d.path(), game);
        assert_eq!(ix.binaries, [Path::new("/g/a/x.gaf")]);
        assert!(ix.new_assets.is_empty());
        // made by hand: not seen until the index is read again (a remount)
        let by_hand = d.path().join("assets/hand");
        std::fs::create_dir_all(&by_hand).unwrap();
        std::fs::write(
            by_hand.join("asset.json"),
            serde_json::to_vec(&StageMeta {
                binary: "/g/hand.gaf".into(),
                ..Default::default()
            })
            .unwrap(),
        )
        .unwrap();
        assert!(!ix.outdated());
        assert_eq!(StagedIndex::read(d.path(), game).binaries.len(), 2);
    }

    #[test]
    fn layout_names() {
        for n in [
            "metadata.json",
            "fire/frames.csv",
            "fire/0.png",
            "fire/0.layers/1.PNG",
        ] {
            assert!(is_layout_name(n), "{n}");
        }
        for n in [
            ".0.png.AbC123",
            "fire/.0.png.x",
            "fire/.goutputstream-XYZ",
            "fire/sedAb12Cd",
            "fire/tmpa1b2",
            "fire/0.png~",
            "fire/.0.png.swp",
            "fire/0.png.Qx1234",
            ".hidden/0.png",
            "",
        ] {
            assert!(!is_layout_name(n), "{n}");
        }
    }

    #[test]
    fn keys_are_stable_and_distinct() {
        // FNV-1a of "" is the offset basis (first principles of FNV-1a).
        assert_eq!(sha_like::fnv64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(sha_like::fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
        let a = key_of(Path::new("/g/anims/x.gaf"));
        assert_eq!(a, key_of(Path::new("/g/anims/x.gaf")));
        assert_ne!(a, key_of(Path::new("/g/anims/y.gaf")));
        assert!(a.ends_with("-x.gaf"));
    }

    #[test]
    fn history_is_bounded() {
        let d = tempfile::tempdir().unwrap();
        let s = Stage::load(d.path(), Path::new("/g/x.gaf"));
        for i in 0..(HISTORY_KEEP + 3) {
            s.push_history(&[i as u8]).unwrap();
        }
        let h = history_of(&s.history);
        assert_eq!(h.len(), HISTORY_KEEP + 1);
        // the original (version 0) stays; versions 1 and 2 are gone, the next kept is 3
        assert_eq!(std::fs::read(&h[0]).unwrap(), [0u8]);
        assert_eq!(std::fs::read(&h[1]).unwrap(), [3u8]);
    }

    #[test]
    fn an_operation_keeps_one_version_linked() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("x.gaf");
        let gap = std::time::Duration::from_secs(60);
        let mut s = Stage::load(&d.path().join("state"), &bin);
        let mut cur = b"v0".to_vec();
        std::fs::write(&bin, &cur).unwrap();
        for i in 1..=5u8 {
            let new = vec![b'v', b'0' + i];
            std::fs::write(d.path().join("new"), &new).unwrap();
            let m = std::fs::symlink_metadata(&bin).unwrap();
            s.keep_replaced(&bin, Version::Bytes(&cur), &m, Written::of(&new), gap)
                .unwrap();
            std::fs::rename(d.path().join("new"), &bin).unwrap();
            s.meta.status = Status::Committed(i.to_string());
            s.note_commit();
            cur = new;
        }
        // five commits of one operation: one version, the binary before it, a hard link
        let h = history_of(&s.history);
        assert_eq!(h.len(), 1);
        assert_eq!(std::fs::read(&h[0]).unwrap(), b"v0");
        assert_eq!(std::fs::metadata(&h[0]).unwrap().nlink(), 1);
        let o = s.meta.operation.clone().unwrap();
        assert_eq!(o.commits.len(), 5);
        assert!(s
            .clean_status("binary", gap)
            .to_string()
            .contains("made 5 commits"));
        // an operation over (no gap): the next commit keeps the binary again, as a copy
        // when the binary has another link
        std::fs::hard_link(&bin, d.path().join("other")).unwrap();
        let m = std::fs::symlink_metadata(&bin).unwrap();
        let zero = std::time::Duration::ZERO;
        s.keep_replaced(&bin, Version::Bytes(&cur), &m, Written::of(b"v9"), zero)
            .unwrap();
        let h = history_of(&s.history);
        assert_eq!(h.len(), 2);
        assert_eq!(std::fs::read(&h[1]).unwrap(), b"v5");
        assert_eq!(std::fs::metadata(&h[1]).unwrap().nlink(), 1, "copied");
        assert!(s
            .clean_status("binary", zero)
            .to_string()
            .starts_with("clean: the last save"));
    }

    #[test]
    fn an_operation_recognises_the_binary_it_wrote_by_its_identity() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("x.gaf");
        let gap = std::time::Duration::from_secs(60);
        let mut s = Stage::load(&d.path().join("state"), &bin);
        std::fs::write(&bin, b"v0").unwrap();
        let m = std::fs::symlink_metadata(&bin).unwrap();
        s.keep_replaced(&bin, Version::Bytes(b"v0"), &m, Written::of(b"v1"), gap)
            .unwrap();
        std::fs::write(d.path().join("new"), b"v1").unwrap();
        std::fs::rename(d.path().join("new"), &bin).unwrap();
        let now = std::fs::symlink_metadata(&bin).unwrap();
        s.note_replaced(&Ident::of(&now));
        assert_eq!(history_of(&s.history).len(), 1);
        // the file the last commit renamed into place, by its identity: its bytes are not
        // looked at (these would not match the record)
        s.keep_replaced(&bin, Version::Bytes(b"zz"), &now, Written::of(b"v2"), gap)
            .unwrap();
        assert_eq!(history_of(&s.history).len(), 1, "continues the operation");
        // another identity (the binary changed since) with other bytes: a new operation
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&bin, b"v9").unwrap();
        let other = std::fs::symlink_metadata(&bin).unwrap();
        s.note_replaced(&Ident::of(&now));
        s.keep_replaced(&bin, Version::Bytes(b"v9"), &other, Written::of(b"v3"), gap)
            .unwrap();
        assert_eq!(
            history_of(&s.history).len(),
            2,
            "a new operation keeps the binary"
        );
    }

    #[test]
    fn a_staged_tree_answers_as_the_file_system_does() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("files");
        std::fs::create_dir_all(f.join("seq/0.layers")).unwrap();
        std::fs::write(f.join("metadata.json"), b"{}").unwrap();
        std::fs::write(f.join("seq/1.png"), b"x").unwrap();
        std::fs::write(f.join("seq/.tafs-filling"), b"").unwrap();
        std::os::unix::fs::symlink("1.png", f.join("seq/2.png")).unwrap();
        let t = StagedTree::of(&f);
        assert!(t.complete());
        for (p, k) in [
            ("", Some(StagedKind::Dir)),
            ("metadata.json", Some(StagedKind::File)),
            ("seq", Some(StagedKind::Dir)),
            ("seq/0.layers", Some(StagedKind::Dir)),
            ("seq/1.png", Some(StagedKind::File)),
            ("seq/.tafs-filling", Some(StagedKind::File)),
            ("seq/2.png", Some(StagedKind::Other)),
            ("seq/3.png", None),
            ("other/1.png", None),
        ] {
            assert_eq!(t.kind(p), k, "{p}");
            let real = std::fs::symlink_metadata(if p.is_empty() { f.clone() } else { f.join(p) });
            assert_eq!(real.is_ok(), k.is_some(), "{p}");
        }
        let kids: Vec<(String, bool)> = t.children("seq").unwrap().to_vec();
        assert_eq!(
            kids,
            [
                (".tafs-filling".to_string(), false),
                ("0.layers".to_string(), true),
                ("1.png".to_string(), false),
                ("2.png".to_string(), false),
            ]
        );
        assert_eq!(t.children("seq/0.layers"), Some(&[][..]));
        assert!(t.children("seq/1.png").is_none());
        // no staged tree at all: nothing staged
        let none = StagedTree::of(&d.path().join("missing"));
        assert_eq!(none.kind("metadata.json"), None);
        assert!(none.children("").is_none());
    }

    #[test]
    fn a_link_whose_commit_did_not_replace_the_binary_is_undone() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("x.tnt");
        std::fs::write(&bin, b"old").unwrap();
        let mut s = Stage::load(&d.path().join("state"), &bin);
        let m = std::fs::symlink_metadata(&bin).unwrap();
        s.meta.committing = Some(Written::of(b"new"));
        let gap = std::time::Duration::ZERO;
        let p = s
            .keep_replaced(&bin, Version::Bytes(b"old"), &m, Written::of(b"new"), gap)
            .unwrap();
        assert!(p.is_some(), "linked");
        assert_eq!(std::fs::metadata(&bin).unwrap().nlink(), 2);
        // as found at the next start after a kill: the binary is the newest version's file
        let now = Ident::of(&std::fs::symlink_metadata(&bin).unwrap());
        assert!(s.resume_unreplaced(&now));
        assert!(history_of(&s.history).is_empty());
        assert_eq!(std::fs::metadata(&bin).unwrap().nlink(), 1);
        assert_eq!(
            s.meta.base,
            Some(Ident::of(&std::fs::symlink_metadata(&bin).unwrap()))
        );
        assert!(s.meta.committing.is_none());
        // a binary that is not the newest version's file is not taken for one
        s.meta.committing = Some(Written::of(b"new"));
        s.push_history(b"other").unwrap();
        assert!(!s.resume_unreplaced(&Ident::of(&std::fs::symlink_metadata(&bin).unwrap())));
    }

    #[test]
    fn a_file_version_is_linked_or_copied_file_to_file() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("x.hpi");
        // more than one block, not a multiple of it
        let old: Vec<u8> = (0..(BLOCK * 2 + 1234))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        std::fs::write(&bin, &old).unwrap();
        let f = std::fs::File::open(&bin).unwrap();
        let (w, same) = Written::of_file_comparing(&f, &f).unwrap();
        assert_eq!(w, Written::of(&old));
        assert!(same);
        let mut s = Stage::load(&d.path().join("state"), &bin);
        let m = std::fs::symlink_metadata(&bin).unwrap();
        let zero = std::time::Duration::ZERO;
        let new = Written::of(b"new");
        let p = s
            .keep_replaced(&bin, Version::File(&f), &m, new, zero)
            .unwrap()
            .expect("linked");
        assert_eq!(std::fs::metadata(&p).unwrap().ino(), m.ino());
        s.unkeep(&p);
        // with a second link the binary is copied (the file's offset is not used)
        std::fs::hard_link(&bin, d.path().join("other")).unwrap();
        let m = std::fs::symlink_metadata(&bin).unwrap();
        use std::io::Seek;
        (&f).seek(std::io::SeekFrom::Start(77)).unwrap();
        assert!(s
            .keep_replaced(&bin, Version::File(&f), &m, new, zero)
            .unwrap()
            .is_none());
        let h = history_of(&s.history);
        assert_eq!(h.len(), 1);
        assert_eq!(std::fs::read(&h[0]).unwrap(), old);
        assert_eq!(std::fs::metadata(&h[0]).unwrap().nlink(), 1, "copied");
        assert_eq!(s.meta.operation.as_ref().unwrap().wrote, Some(new));
        // a file of other bytes compares unequal, whatever its length
        let o = d.path().join("o");
        let mut other = old.clone();
        other[BLOCK + 5] ^= 1;
        std::fs::write(&o, &other).unwrap();
        let of = std::fs::File::open(&o).unwrap();
        let (w, same) = Written::of_file_comparing(&of, &f).unwrap();
        assert_eq!(w, Written::of(&other));
        assert!(!same);
        std::fs::write(&o, &old[..100]).unwrap();
        let of = std::fs::File::open(&o).unwrap();
        assert!(!Written::of_file_comparing(&of, &f).unwrap().1);
        assert!(!Written::of_file_comparing(&f, &of).unwrap().1);
    }

    #[test]
    fn a_copy_across_file_systems_gets_every_byte() {
        // /dev/shm (tmpfs) to the temporary folder: where the two are different file
        // systems, `copy_file_range` refuses and the blocks are read and written instead
        let shm = std::path::Path::new("/dev/shm");
        let src_dir = if shm.is_dir() {
            tempfile::tempdir_in(shm).unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        let src = src_dir.path().join("x.hpi");
        let bytes: Vec<u8> = (0..(BLOCK * 3 + 17)).map(|i| (i * 7 % 253) as u8).collect();
        std::fs::write(&src, &bytes).unwrap();
        let from = std::fs::File::open(&src).unwrap();
        let d = tempfile::tempdir().unwrap();
        let to = d.path().join("copy");
        crate::atomic::write_seekable(&to, None, |w| {
            std::io::Write::write_all(w, b"head:")?;
            copy_file(&from, w)
        })
        .unwrap();
        let got = std::fs::read(&to).unwrap();
        assert_eq!(&got[..5], b"head:");
        assert!(got[5..] == bytes[..]);
    }
}
