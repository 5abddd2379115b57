//! The merged game view (`tafs mount --merged`): one read-only tree as the game sees it,
//! loose files and the members of every archive of the game folder overlaid.
//!
//! `scan` lists the sources (the loose files of the game folder and every archive at its
//! top level that parses) and overlays them with [`crate::view::merged::MergedIndex`] in the order of a
//! [`Priority`]; [`MergedCore`] serves that index as a file system ([`FsOps`](crate::fs::FsOps)): folders of the
//! index, plain files read from the winning source, and GAF/TNT files (loose or members)
//! exploded exactly as in the normal mount (same [`crate::fs::core::view_options_for`], same opener). Every
//! entry carries the extended attributes `user.tafs.source` (the winner) and
//! `user.tafs.sources` (every source holding the path, winner first), see
//! [`SOURCE_XATTR`]. The contract is the "Merged game view" section of `SEMANTICS.md`.

mod dirs;
mod nodes;
mod ops;
mod overlay;
mod overlay_ops;
mod persisted;
mod report;
mod scan;

pub use overlay::{exclude_of, mod_source, prepare_target, OverlayCore, Target, MOD_DIFF_NAME};

pub use scan::{scan_excluding, scan_once, ArchiveSource, Snapshot, Source};

use crate::formats::hpi::{self, FileInfo};
use crate::fs::core::assets::{AssetCache, Outcome};
use crate::fs::core::Inval;
use crate::fs::core::{Attr, MountOptions};
use crate::fs::layout::Layout;
use crate::fs::shared::lock;
use crate::fs::stage::Ident;
use crate::fs::watch::Watch;
use crate::fs::FsError;
use crate::sys;
use crate::view::merged::Priority;
use crate::view::{self, AssetKind, SharedBytes, View, ViewError};
use scan::scan;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{self, File, Metadata};
use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// May the merged view follow a symlink owned by `link_uid` to a file owned by `file_uid`?
/// Only when the link belongs to the user the mount runs as, or to the file's owner (as the
/// kernel's `protected_symlinks`): a link someone planted in the game folder to a file they do
/// not own is never followed, so the mount (often root) never reads it for anyone.
fn may_follow(link_uid: u32, file_uid: u32) -> bool {
    link_uid == sys::euid() || link_uid == file_uid
}

/// Opens `rel` of `game_dir` for reading: no symlink on the way is followed and nothing
/// outside the game folder is reached; a symlink as the last component only under
/// [`may_follow`] (`EACCES` otherwise). Never blocks on a fifo.
pub(super) fn open_game_file(game_dir: &Path, rel: &Path) -> std::io::Result<File> {
    let root = sys::open_dir_path(game_dir)?;
    let (dir, name) = sys::parent_beneath(root.as_fd(), rel)?;
    sys::open_read_at(dir.as_fd(), &name, may_follow)
}

/// The status of what [`open_game_file`] opens.
pub(super) fn stat_game_file(game_dir: &Path, rel: &Path) -> std::io::Result<Metadata> {
    // the common case in one `openat2`: no symlink on the way or at the end (a symlink is
    // followed, or refused, as `open_game_file` decides)
    let root = sys::open_dir_path(game_dir)?;
    match sys::lstat_beneath(root.as_fd(), rel) {
        Some(Ok(m)) if !m.file_type().is_symlink() => return Ok(m),
        Some(Err(e)) if e.raw_os_error() != Some(libc::ELOOP) => return Err(e),
        _ => {}
    }
    let (dir, name) = sys::parent_beneath(root.as_fd(), rel)?;
    sys::open_read_at(dir.as_fd(), &name, may_follow)?.metadata()
}

/// The entries of folder `rel` of `game_dir` (no symlink followed, also not on the way).
pub(super) fn read_game_dir(game_dir: &Path, rel: &Path) -> std::io::Result<fs::ReadDir> {
    let root = sys::open_dir_path(game_dir)?;
    let (dir, name) = sys::parent_beneath(root.as_fd(), rel)?;
    sys::read_dir_at(dir.as_fd(), &name)
}

/// Bytes of the merged view's byte cache, shared with a view decoded from them.
struct Cached(Arc<Vec<u8>>);

impl AsRef<[u8]> for Cached {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Extended attribute naming the source an entry is read from: `loose:PATH` (a file of the
/// game folder) or `archive:NAME:PATH` (member PATH of archive NAME), PATH as the source
/// spells it. Inside an exploded GAF/TNT: the binary's source. The root: `loose:`.
pub const SOURCE_XATTR: &str = "user.tafs.source";
/// Extended attribute listing every source that holds the path, one per line, highest
/// priority first (the first is [`SOURCE_XATTR`]; for a file the others are shadowed, for a
/// folder they are merged into it, except files, which are shadowed). The root lists every
/// source of the view in priority order.
pub const SOURCES_XATTR: &str = "user.tafs.sources";

/// The answer to `getxattr` of a name other than the two above. Security labels
/// (`security.*`) are not supported at all (`EOPNOTSUPP`): `ls -l` asks for
/// `security.selinux` of every entry, and a "not supported" answer makes it stop asking
/// for the rest of the file system, where "no such attribute" (`ENODATA`) costs a round
/// trip per entry. Every other name is absent (`ENODATA`; the kernel reads the POSIX ACLs
/// that way, and needs that answer).
pub(crate) fn other_xattr(name: &OsStr) -> FsError {
    if name.as_encoded_bytes().starts_with(b"security.") {
        FsError::NotSupported("security labels")
    } else {
        FsError::NoAttr
    }
}

// ---------------------------------------------------------------------------------------
// The file system

/// What an inode is. Files and everything inside an exploded binary carry the version of
/// their content; when the winner of the path or its bytes change, they answer `ESTALE`
/// and the kernel looks the path up again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum NodeId {
    /// A folder of the index (lowercase shown path; "" is the root).
    Dir(String),
    /// A plain file at this version.
    File(String, u64),
    /// Entry `vpath` ("" = the binary's own directory) of the exploded view of a GAF/TNT.
    Asset {
        key: String,
        ver: u64,
        vpath: String,
        dir: bool,
    },
}

impl NodeId {
    fn key(&self) -> &str {
        match self {
            NodeId::Dir(k) | NodeId::File(k, _) | NodeId::Asset { key: k, .. } => k,
        }
    }

    fn parent(&self) -> NodeId {
        let up = |k: &str| NodeId::Dir(k.rsplit_once('/').map_or("", |(p, _)| p).to_string());
        match self {
            NodeId::Dir(k) | NodeId::File(k, _) => up(k),
            NodeId::Asset { vpath, .. } if vpath.is_empty() => up(self.key()),
            NodeId::Asset {
                key, ver, vpath, ..
            } => NodeId::Asset {
                key: key.clone(),
                ver: *ver,
                vpath: vpath.rsplit_once('/').map_or("", |(p, _)| p).to_string(),
                dir: true,
            },
        }
    }
}

/// The inodes given out: each [`NodeId`] has one while the kernel holds it (lookups it was
/// given and has not forgotten); a forgotten one is dropped, and the id gets a new number at
/// its next lookup (numbers are never reused). Handles need no inode: they serve their own
/// bytes or file.
struct Inodes {
    by_id: HashMap<NodeId, u64>,
    by_ino: HashMap<u64, NodeId>,
    lookups: HashMap<u64, u64>,
    next: u64,
}

impl Inodes {
    fn ino(&mut self, id: NodeId) -> u64 {
        if let Some(&i) = self.by_id.get(&id) {
            return i;
        }
        let i = self.next;
        self.next += 1;
        self.by_ino.insert(i, id.clone());
        self.by_id.insert(id, i);
        i
    }

    /// The kernel was given an entry of `ino`; false when it is gone (forgotten meanwhile).
    fn remember(&mut self, ino: u64) -> bool {
        if !self.by_ino.contains_key(&ino) {
            return false;
        }
        *self.lookups.entry(ino).or_default() += 1;
        true
    }

    /// The kernel forgot `n` of the entries of `ino` it was given.
    fn forget(&mut self, ino: u64, n: u64) {
        if ino == ROOT_INO {
            return;
        }
        let Some(count) = self.lookups.get_mut(&ino) else {
            return;
        };
        *count = count.saturating_sub(n);
        if *count == 0 {
            self.lookups.remove(&ino);
            if let Some(id) = self.by_ino.remove(&ino) {
                if self.by_id.get(&id) == Some(&ino) {
                    self.by_id.remove(&id);
                }
            }
        }
    }
}

/// A GAF/TNT of the view at one version: its key (lowercase shown path) and version.
type AssetKey = (String, u64);

/// A decoded GAF/TNT: the shape of its view and the view.
type Decoded = (Arc<Layout>, Arc<dyn View>);

/// A GAF/TNT known: the shape of its view, and the view when decoded.
type Loaded = (Arc<Layout>, Option<Arc<dyn View>>);

/// Where the bytes of a winning file come from, at one version.
enum Content {
    Loose {
        rel: String,
        meta: Metadata,
    },
    Member {
        archive: Arc<ArchiveSource>,
        entry: usize,
        info: FileInfo,
    },
}

impl Content {
    fn meta(&self) -> &Metadata {
        match self {
            Content::Loose { meta, .. } => meta,
            Content::Member { archive, .. } => &archive.meta,
        }
    }
}

enum Handle {
    Bytes(Arc<Vec<u8>>, Attr),
    File(File),
}

impl Handle {
    /// Up to `size` bytes at `offset`.
    fn read(&self, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
        match self {
            Handle::Bytes(b, _) => Ok(crate::fs::slice_at(b, offset, size)),
            Handle::File(f) => Ok(crate::fs::read_at(f, offset, size)?),
        }
    }
}

struct Refresh {
    snap: Arc<Snapshot>,
    checked: Instant,
    /// A thread is scanning the sources right now.
    scanning: bool,
    /// A source was seen changed: scan at the next request, whatever the TTL.
    expired: bool,
    /// Events of the watch read when the sources were last scanned.
    seen: u64,
}

/// The read-only file system of the merged game view.
pub struct MergedCore {
    game_dir: PathBuf,
    /// The game folder as view options read it (memoized, as the normal mount's).
    game: crate::fs::core::GameFolder,
    opts: MountOptions,
    priority: Priority,
    /// A path of the game folder that is no source (the mod a writable view writes into).
    exclude: Option<String>,
    dir_meta: Metadata,
    state: Mutex<Refresh>,
    inodes: Mutex<Inodes>,
    loose_vers: Mutex<HashMap<(String, Ident), u64>>,
    next_ver: AtomicU64,
    /// Decode state of each GAF/TNT version.
    assets: Mutex<HashMap<AssetKey, Arc<Mutex<Outcome>>>>,
    /// Keys of the GAF/TNT paths decoded at least once (any version).
    settled: Mutex<std::collections::HashSet<String>>,
    /// Decoded views, generated files and the bytes of winning files (name "").
    cache: AssetCache<AssetKey>,
    handles: Mutex<HashMap<u64, Arc<Handle>>>,
    dirs: dirs::DirHandles,
    next_fh: AtomicU64,
    /// The watch of the game folder, with the channel of kernel invalidations (`None`:
    /// polling, every `--ttl`).
    watch: Option<(Arc<Watch>, Mutex<Sender<Inval>>)>,
    /// The snapshot the kernel's names were last invalidated against.
    inval_base: Mutex<Option<Arc<Snapshot>>>,
    /// The persisted index of listings ([`persisted`]).
    index: persisted::MergedIndex,
}

/// The root inode.
const ROOT_INO: u64 = 1;

impl MergedCore {
    /// [`crate::fs::core::view_options_for`] of `rel`, through the memo of the game folder.
    fn options_for(&self, rel: &str) -> view::ViewOptions {
        view::options_in(
            &self.game,
            std::path::Path::new(rel),
            Some(&self.game_dir),
            &Default::default(),
        )
    }

    /// Scans `game_dir` and serves its merged view with sources ordered by `priority`.
    /// Of `opts`, the cache size, TTL, owner, decoded-view budget, size limit, archive
    /// limits and opener apply; write-back does not (the view is read-only).
    pub fn new(
        game_dir: impl Into<PathBuf>,
        opts: MountOptions,
        priority: Priority,
    ) -> Result<MergedCore, FsError> {
        Self::new_excluding(game_dir, opts, priority, None)
    }

    /// [`MergedCore::new`] leaving out `exclude` (a path relative to `game_dir`, as spelled
    /// on disk, with everything under it): the mod a writable view writes into is never
    /// also a source below it.
    pub fn new_excluding(
        game_dir: impl Into<PathBuf>,
        opts: MountOptions,
        priority: Priority,
        exclude: Option<String>,
    ) -> Result<MergedCore, FsError> {
        let game_dir = game_dir.into();
        let dir_meta = fs::metadata(&game_dir)?;
        if !dir_meta.is_dir() {
            return Err(FsError::NotDir);
        }
        let next_ver = AtomicU64::new(1);
        let snap = scan(
            &game_dir,
            &priority,
            opts.max_asset_bytes,
            None,
            &next_ver,
            exclude.as_deref(),
        )?
        .ok_or(FsError::NotFound)?;
        let mut inodes = Inodes {
            by_id: HashMap::new(),
            by_ino: HashMap::new(),
            lookups: HashMap::new(),
            next: ROOT_INO,
        };
        inodes.ino(NodeId::Dir(String::new()));
        let index =
            persisted::MergedIndex::open(opts.state_dir.as_deref(), &game_dir, opts.read_only);
        Ok(MergedCore {
            cache: AssetCache::new(opts.max_views, opts.cache_size),
            game: crate::fs::core::GameFolder::memoized(&game_dir),
            game_dir,
            priority,
            exclude,
            dir_meta,
            state: Mutex::new(Refresh {
                snap: Arc::new(snap),
                checked: Instant::now(),
                scanning: false,
                expired: false,
                seen: 0,
            }),
            inodes: Mutex::new(inodes),
            loose_vers: Mutex::new(HashMap::new()),
            next_ver,
            assets: Mutex::new(HashMap::new()),
            settled: Mutex::new(std::collections::HashSet::new()),
            handles: Mutex::new(HashMap::new()),
            dirs: dirs::DirHandles::default(),
            next_fh: AtomicU64::new(1),
            watch: None,
            inval_base: Mutex::new(None),
            index,
            opts,
        })
    }

    /// Watches the game folder (inotify): while the watch is authoritative the kernel caches
    /// names, attributes and listings for long, a request scans the sources again only after
    /// an event, and [`run_watch`] turns each change into invalidations sent on `inval`.
    /// Without a watch (it cannot start: a network file system, the watch limit) the view
    /// polls as before.
    pub(in crate::fs) fn with_watch(mut self, inval: Sender<Inval>) -> MergedCore {
        match Watch::new(&self.game_dir) {
            Ok(w) => {
                *lock(&self.inval_base) = Some(self.snapshot());
                lock(&self.state).seen = w.events_read();
                self.watch = Some((w, Mutex::new(inval)));
            }
            Err(e) => log::warn!("{}: not watched ({e}); polling", self.game_dir.display()),
        }
        self
    }

    /// True while the watch is authoritative (every change is seen and invalidated).
    pub(in crate::fs) fn watching(&self) -> bool {
        self.watch.as_ref().is_some_and(|(w, _)| w.authoritative())
    }

    /// How changes in the game folder are detected (`-v` logs it at mount).
    pub fn change_detection(&self) -> String {
        let no = if self.opts.watch {
            "no watch"
        } else {
            "--no-watch"
        };
        crate::fs::watch::mode_line(self.watch.as_ref().map(|(w, _)| &**w), no, self.opts.ttl)
    }

    /// After a change in the game folder: scans the sources again, and invalidates every
    /// name the kernel was given at folder level (folders, files, GAF/TNT directories; inside
    /// a GAF/TNT the inodes are versioned) and every folder's listing and attributes. Names
    /// are those of the snapshot last invalidated against and of the new one (a spelling
    /// may have changed). Sent by the invalidation thread, never from a request.
    fn changed_on_disk(&self) {
        let Some((_, tx)) = &self.watch else { return };
        self.expire();
        let new = self.snapshot();
        let base = lock(&self.inval_base).replace(new.clone());
        let known: Vec<(u64, NodeId)> = lock(&self.inodes)
            .by_ino
            .iter()
            .map(|(i, id)| (*i, id.clone()))
            .collect();
        let parent_of = |id: &NodeId| lock(&self.inodes).by_id.get(&id.parent()).copied();
        let tx = lock(tx);
        for (ino, id) in known {
            let key = match &id {
                NodeId::Dir(k) => {
                    let _ = tx.send(Inval::Inode { ino });
                    k
                }
                NodeId::File(k, _) => k,
                NodeId::Asset { key, vpath, .. } if vpath.is_empty() => key,
                NodeId::Asset { .. } => continue,
            };
            if key.is_empty() {
                continue;
            }
            let Some(parent) = parent_of(&id) else {
                continue;
            };
            let mut names: Vec<&str> = Vec::new();
            for snap in base.iter().chain(std::iter::once(&new)) {
                if let Some(n) = snap.index.lookup(key) {
                    let name = snap.index.name(n);
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
            for name in names {
                let _ = tx.send(Inval::Entry {
                    parent,
                    name: name.into(),
                });
            }
        }
    }

    /// Sends `m` to the kernel through the invalidation thread (watched views only; a
    /// polling view's attributes expire after the TTL).
    fn send_inval(&self, m: Inval) {
        if let Some((_, tx)) = &self.watch {
            let _ = lock(tx).send(m);
        }
    }

    /// Bytes held by the cache of decompressed members and generated files.
    pub fn cached_bytes(&self) -> u64 {
        self.cache.total()
    }

    /// The current snapshot, scanned again when older than the TTL (at least 50 ms).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        let every = self.opts.ttl.max(Duration::from_millis(50));
        let old = {
            let mut st = lock(&self.state);
            if st.scanning {
                return st.snap.clone();
            }
            let due = match &self.watch {
                // watched: scanned again after an event (read here first, so a change made
                // before a request is seen by it), not by time
                Some((w, _)) if w.authoritative() => {
                    let seen = w.events_read();
                    let news = seen != st.seen;
                    st.seen = seen;
                    news || st.expired
                }
                _ => st.checked.elapsed() >= every || st.expired,
            };
            if !due {
                return st.snap.clone();
            }
            // One thread scans; the others keep being served from the current snapshot.
            st.scanning = true;
            st.expired = false;
            st.snap.clone()
        };
        let r = scan(
            &self.game_dir,
            &self.priority,
            self.opts.max_asset_bytes,
            Some(&old),
            &self.next_ver,
            self.exclude.as_deref(),
        );
        let mut st = lock(&self.state);
        match r {
            Ok(Some(s)) => {
                log::info!("merged view: sources changed, index rebuilt");
                // Decoded views and cached bytes of archive versions no longer present go.
                let vers = |sn: &Snapshot| -> Vec<u64> {
                    sn.sources
                        .iter()
                        .filter_map(|x| match x {
                            Source::Archive(a) => Some(a.ver),
                            Source::Loose => None,
                        })
                        .collect()
                };
                let live = vers(&s);
                let dead: Vec<u64> = vers(&old)
                    .into_iter()
                    .filter(|v| !live.contains(v))
                    .collect();
                if !dead.is_empty() {
                    lock(&self.assets).retain(|k, _| !dead.contains(&k.1));
                    self.cache.retain(|k| !dead.contains(&k.1));
                }
                lock(&self.settled).retain(|k| s.index.lookup(k).is_some());
                st.snap = Arc::new(s);
            }
            Ok(None) => {}
            Err(e) => log::warn!("merged view: scan failed: {e}"),
        }
        st.scanning = false;
        st.checked = Instant::now();
        st.snap.clone()
    }

    /// The shown path of the file that `path` (any letter case) is or lies inside (an
    /// exploded GAF/TNT), if the view has one there.
    pub fn file_at(&self, path: &str) -> Option<String> {
        let snap = self.snapshot();
        let mut n = crate::view::merged::ROOT_NODE;
        for comp in path.split('/').filter(|c| !c.is_empty()) {
            n = snap.index.child(n, comp)?;
            if !snap.index.is_dir(n) {
                return Some(snap.index.path(n));
            }
        }
        None
    }

    /// The shown path of the folder or file at `path` (any letter case), if visible.
    pub fn shown_path(&self, path: &str) -> Option<String> {
        let snap = self.snapshot();
        snap.index.lookup(path).map(|n| snap.index.path(n))
    }

    /// Every source holding `path` (any letter case; inside an exploded GAF/TNT: the
    /// binary's), described as in [`SOURCES_XATTR`], winner first; empty when none does.
    pub fn sources_at(&self, path: &str) -> Vec<String> {
        let snap = self.snapshot();
        let mut n = crate::view::merged::ROOT_NODE;
        for comp in path.split('/').filter(|c| !c.is_empty()) {
            if !snap.index.is_dir(n) {
                break;
            }
            match snap.index.child(n, comp) {
                Some(c) => n = c,
                None => return Vec::new(),
            }
        }
        snap.sources_of(n)
    }

    /// The bytes and metadata (of its source) of the winning file at `path` (any letter
    /// case): a loose file read whole or a member decompressed, exactly as stored.
    pub fn raw_file(&self, path: &str) -> Result<(Arc<Vec<u8>>, Metadata), FsError> {
        let snap = self.snapshot();
        let n = snap.index.lookup(path).ok_or(FsError::NotFound)?;
        if snap.index.is_dir(n) {
            return Err(FsError::IsDir);
        }
        let key = snap.index.path(n).to_ascii_lowercase();
        let (ver, c) = self.content(&snap, n)?;
        let b = self.bytes_of(&key, ver, &c)?;
        Ok((b, c.meta().clone()))
    }

    /// Makes the next request scan the sources again (a source was found changed).
    fn expire(&self) {
        lock(&self.state).expired = true;
    }

    fn id(&self, ino: u64) -> Result<NodeId, FsError> {
        lock(&self.inodes)
            .by_ino
            .get(&ino)
            .cloned()
            .ok_or(FsError::UnknownInode(ino))
    }

    fn ino(&self, id: NodeId) -> u64 {
        lock(&self.inodes).ino(id)
    }

    /// The visible index node of `key`.
    fn node(snap: &Snapshot, key: &str) -> Result<usize, FsError> {
        snap.index.lookup(key).ok_or(FsError::Stale)
    }

    /// The content of file node `n` now, with its version.
    fn content(&self, snap: &Snapshot, n: usize) -> Result<(u64, Content), FsError> {
        let hit = snap.index.winner(n).ok_or(FsError::NotFound)?;
        if let Some(a) = snap.archive_of(hit.source) {
            let entry = hit.entry.ok_or(FsError::NotFound)?;
            let info = match a.archive.entries.get(entry).map(|e| &e.kind) {
                Some(hpi::EntryKind::File(f)) => *f,
                _ => return Err(FsError::NotFound),
            };
            return Ok((
                a.ver,
                Content::Member {
                    archive: a.clone(),
                    entry,
                    info,
                },
            ));
        }
        let meta = match stat_game_file(&self.game_dir, Path::new(&hit.path)) {
            Ok(m) if m.is_file() => m,
            Ok(_) => {
                self.expire();
                return Err(FsError::Stale);
            }
            Err(e) => {
                self.expire();
                return Err(if e.kind() == std::io::ErrorKind::NotFound {
                    FsError::Stale
                } else {
                    e.into()
                });
            }
        };
        let ident = Ident::of(&meta);
        let key = (hit.path.clone(), ident);
        let ver = *lock(&self.loose_vers)
            .entry(key)
            .or_insert_with(|| self.next_ver.fetch_add(1, Ordering::Relaxed));
        Ok((
            ver,
            Content::Loose {
                rel: hit.path.clone(),
                meta,
            },
        ))
    }

    /// The bytes of a winning file (a loose file read whole, or a member decompressed).
    fn bytes_of(&self, key: &str, ver: u64, c: &Content) -> Result<Arc<Vec<u8>>, FsError> {
        self.cache.bytes(&(key.to_string(), ver), "", || match c {
            Content::Loose { rel, meta } => {
                if meta.len() > self.opts.max_asset_bytes {
                    return Err(FsError::Invalid("file too large".into()));
                }
                let mut f = open_game_file(&self.game_dir, Path::new(rel))?;
                if Ident::of(&f.metadata()?) != Ident::of(meta) {
                    self.expire();
                    return Err(FsError::Stale);
                }
                let mut v = Vec::with_capacity(meta.len() as usize);
                f.read_to_end(&mut v)?;
                Ok(v)
            }
            Content::Member { archive, info, .. } => self.read_member(archive, info, key),
        })
    }

    /// Decompresses one member, reading only its stored bytes from the archive file.
    fn read_member(
        &self,
        a: &ArchiveSource,
        info: &FileInfo,
        what: &str,
    ) -> Result<Vec<u8>, FsError> {
        let f = open_game_file(&self.game_dir, Path::new(&a.name))?;
        let meta = f.metadata()?;
        if Ident::of(&meta) != a.ident {
            self.expire();
            return Err(FsError::Stale);
        }
        let end = u64::from(info.offset).saturating_add(info.stored_len);
        if end > meta.len() {
            return Err(ViewError::invalid(what, "member beyond the end of the archive").into());
        }
        // the member's chunks only, read one at a time
        let src = view::archive::FileSource::new(f)?;
        a.archive
            .read_from(&src, info, &self.opts.archive_limits)
            .map_err(|e| FsError::View(ViewError::invalid(what, e.to_string())))
    }

    /// The layout of the GAF/TNT of file node `n` (key `key`) at version `ver`: decoded
    /// once, or listed from the persisted index ([`persisted`]); afterwards known without
    /// the view, which is not decoded again for it when it left the cache (listings and
    /// attributes need the layout only).
    fn asset_layout(
        &self,
        _snap: &Snapshot,
        key: &str,
        ver: u64,
        c: &Content,
    ) -> Result<Option<Arc<Layout>>, FsError> {
        let slot = lock(&self.assets).get(&(key.to_string(), ver)).cloned();
        if let Some(slot) = slot {
            match &*lock(&slot) {
                Outcome::Ready(l) => return Ok(Some(l.clone())),
                Outcome::Broken => return Ok(None),
                Outcome::Unknown => {}
            }
        }
        Ok(self.load_asset(key, ver, c, false)?.map(|(l, _)| l))
    }

    /// Decodes the GAF/TNT of file node `n` (key `key`) at version `ver` if not done yet.
    fn asset(
        &self,
        _snap: &Snapshot,
        key: &str,
        ver: u64,
        c: &Content,
    ) -> Result<Option<Decoded>, FsError> {
        Ok(match self.load_asset(key, ver, c, true)? {
            Some((l, Some(v))) => Some((l, v)),
            _ => None,
        })
    }

    /// The layout of the GAF/TNT `key` at `ver` with its view (decoded if not in memory)
    /// when `want_view`; without it, a layout the persisted index records for the same
    /// bytes and options is enough (no view).
    fn load_asset(
        &self,
        key: &str,
        ver: u64,
        c: &Content,
        want_view: bool,
    ) -> Result<Option<Loaded>, FsError> {
        let name = key.rsplit('/').next().unwrap_or(key);
        let Some(kind) = AssetKind::from_name(name) else {
            return Ok(None);
        };
        let k = (key.to_string(), ver);
        let slot = lock(&self.assets)
            .entry(k.clone())
            .or_insert_with(|| Arc::new(Mutex::new(Outcome::Unknown)))
            .clone();
        // decoding holds this asset's lock: one decode per asset at a time
        let mut st = lock(&slot);
        match &*st {
            Outcome::Broken => return Ok(None),
            Outcome::Ready(l) => {
                if !want_view {
                    return Ok(Some((l.clone(), None)));
                }
                if let Some(v) = self.cache.view(&k) {
                    return Ok(Some((l.clone(), Some(v))));
                }
            }
            Outcome::Unknown => {}
        }
        // refused from its size before a byte is read or decompressed
        let size = match c {
            Content::Loose { meta, .. } => meta.len(),
            Content::Member { info, .. } => u64::from(info.size),
        };
        if let Err(e) = self.cache.check_size(kind, size) {
            st.settle(key, Err(ViewError::invalid(key, e)));
            lock(&self.settled).insert(key.to_string());
            return Ok(None);
        }
        // the cached bytes, which the view may keep (no copy)
        let bytes = SharedBytes::from_owner(Cached(self.bytes_of(key, ver, c)?));
        let opts = match c {
            Content::Loose { rel, .. } => self.options_for(rel),
            // leased from the budget of decoded views as a loose file is
            Content::Member { archive, entry, .. } => self.member_options(archive, *entry, kind),
        };
        let index_key = match &*st {
            Outcome::Unknown => self.index_key(kind, &bytes, &opts),
            _ => None,
        };
        if let Some(ik) = index_key.filter(|_| !want_view) {
            if let Some(layout) = self.indexed_layout(&k, c, ik) {
                log::debug!("{key}: listed from the index");
                *st = Outcome::Ready(layout.clone());
                lock(&self.settled).insert(key.to_string());
                return Ok(Some((layout, None)));
            }
        }
        let opened = self
            .cache
            .decode_within(key, kind, &bytes, &opts, |k, b, o| {
                (self.opts.opener)(k, b, o)
            })?;
        let decoded = st.settle(key, opened);
        self.note_decoded(&k, c, index_key);
        lock(&self.settled).insert(key.to_string());
        if let Some((_, v)) = &decoded {
            self.cache.keep_view(k, v.clone());
        }
        Ok(decoded.map(|(l, v)| (l, Some(v))))
    }

    /// The view options of member `entry` of `a`: those the normal mount gives it at
    /// `ARCHIVE/MEMBER` (same palette chain, same-named `.pcx` member beside a GAF first).
    fn member_options(
        &self,
        a: &ArchiveSource,
        entry: usize,
        kind: AssetKind,
    ) -> view::ViewOptions {
        let member = a.paths.get(entry).cloned().unwrap_or_default();
        let mut opts = self.options_for(&format!("{}/{member}", a.name));
        if kind == AssetKind::Gaf {
            let e = a.archive.entries.get(entry);
            let beside =
                e.and_then(|e| view::archive::beside_pcx(&a.archive, &a.paths, e, &member));
            if let Some((name, f)) = beside {
                let pcx = self.read_member(a, f, &name).ok();
                let pal = pcx.and_then(|p| {
                    crate::formats::palette::Palette::from_file_bytes(&name, &p).ok()
                });
                if let Some(pal) = pal {
                    let dir = opts.asset_path.as_deref().and_then(|p| p.rsplit_once('/'));
                    opts.palette_source = match dir {
                        Some((d, _)) => format!("{d}/{name}"),
                        None => name.clone(),
                    };
                    opts.palette = pal;
                }
            }
        }
        opts
    }
}

/// The watch thread of a merged view: each change (events settled for 50 ms, so a burst is
/// one change) scans the sources again and invalidates what the kernel holds
/// ([`MergedCore::changed_on_disk`]). Ends with the view.
pub(in crate::fs) fn run_watch(core: std::sync::Weak<MergedCore>) {
    let Some(w) = core
        .upgrade()
        .and_then(|c| c.watch.as_ref().map(|(w, _)| w.clone()))
    else {
        return;
    };
    loop {
        let changed = w.wait_changed(Duration::from_millis(500));
        if changed {
            std::thread::sleep(Duration::from_millis(50));
            let _ = w.wait_changed(Duration::ZERO);
        }
        let Some(core) = core.upgrade() else { return };
        if changed {
            core.changed_on_disk();
        }
    }
}
