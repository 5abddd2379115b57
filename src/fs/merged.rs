//! The merged game view (`tafs mount --merged`): one read-only tree as the game sees it,
//! loose files and the members of every archive of the game folder overlaid.
//!
//! [`scan`] lists the sources (the loose files of the game folder and every archive at its
//! top level that parses) and overlays them with [`MergedIndex`] in the order of a
//! [`Priority`]; [`MergedCore`] serves that index as a file system ([`FsOps`]): folders of the
//! index, plain files read from the winning source, and GAF/TNT files (loose or members)
//! exploded exactly as in the normal mount (same [`view_options_for`], same opener). Every
//! entry carries the extended attributes `user.tafs.source` (the winner) and
//! `user.tafs.sources` (every source holding the path, winner first), see
//! [`SOURCE_XATTR`]. The contract is the "Merged game view" section of `SEMANTICS.md`.

use super::cache::ByteCache;
use super::core::{view_options_for, Attr, DirItem, FileKind, MountOptions, Opened};
use super::layout::Layout;
use super::ops::FsOps;
use super::stage::Ident;
use super::{FsError, StatFs};
use crate::formats::hpi::{self, Archive, FileInfo, HpiLimits};
use crate::view::merged::{MergedIndex, Priority, Slot, SourceEntry, SourceList, ROOT_NODE};
use crate::view::{self, AssetKind, View, ViewError};
use lru::LruCache;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{self, File, Metadata};
use std::io::Read;
use std::num::NonZeroUsize;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Extended attribute naming the source an entry is read from: `loose:PATH` (a file of the
/// game folder) or `archive:NAME:PATH` (member PATH of archive NAME), PATH as the source
/// spells it. Inside an exploded GAF/TNT: the binary's source. The root: `loose:`.
pub const SOURCE_XATTR: &str = "user.tafs.source";
/// Extended attribute listing every source that holds the path, one per line, highest
/// priority first (the first is [`SOURCE_XATTR`]; for a file the others are shadowed, for a
/// folder they are merged into it, except files, which are shadowed). The root lists every
/// source of the view in priority order.
pub const SOURCES_XATTR: &str = "user.tafs.sources";

/// Most loose files and folders scanned.
const MAX_LOOSE_ENTRIES: usize = 1 << 20;
/// Deepest loose folder scanned.
const MAX_LOOSE_DEPTH: usize = 64;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn time(sec: i64, nsec: i64) -> SystemTime {
    let nsec = nsec.clamp(0, 999_999_999) as u32;
    if sec >= 0 {
        UNIX_EPOCH + Duration::new(sec as u64, nsec)
    } else {
        UNIX_EPOCH - Duration::from_secs(sec.unsigned_abs()) + Duration::new(0, nsec)
    }
}

/// One archive of the game folder.
pub struct ArchiveSource {
    /// File name in the game folder.
    pub name: String,
    /// Identity of the archive file the directory was read from.
    pub ident: Ident,
    meta: Metadata,
    archive: Archive,
    /// Shown path of every entry of `archive` (see [`view::archive::shown_paths`]).
    paths: Vec<String>,
    /// Version number of its members (changes when the archive changes).
    ver: u64,
}

/// A source of the merged view.
pub enum Source {
    /// The loose files of the game folder.
    Loose,
    /// An archive.
    Archive(Arc<ArchiveSource>),
}

impl Source {
    /// How a path of this source is named in [`SOURCE_XATTR`]: `loose:PATH` or
    /// `archive:NAME:PATH`.
    pub fn describe(&self, path: &str) -> String {
        match self {
            Source::Loose => format!("loose:{path}"),
            Source::Archive(a) => format!("archive:{}:{path}", a.name),
        }
    }
}

/// The sources of a game folder overlaid: what [`scan`] finds.
pub struct Snapshot {
    /// The overlay; hit `source` numbers index `sources`.
    pub index: MergedIndex,
    /// The sources, highest priority first.
    pub sources: Vec<Source>,
    loose: Vec<SourceEntry>,
    archives: Vec<(String, Ident)>,
}

impl Snapshot {
    /// Every source holding `node`, described, winner first.
    pub fn sources_of(&self, node: usize) -> Vec<String> {
        if node == ROOT_NODE {
            return self.sources.iter().map(|s| s.describe("")).collect();
        }
        self.index
            .hits(node)
            .iter()
            .filter_map(|h| Some(self.sources.get(h.source)?.describe(&h.path)))
            .collect()
    }

    fn archive_of(&self, source: usize) -> Option<&Arc<ArchiveSource>> {
        match self.sources.get(source)? {
            Source::Archive(a) => Some(a),
            Source::Loose => None,
        }
    }
}

/// Lists the loose files of `game_dir` (not the archives in `skip`), folders first in each
/// folder, sorted by name. Symlinks to files are files; symlinks to folders, sockets and
/// other special files and names that are not UTF-8 are left out.
fn walk_loose(game_dir: &Path, skip: &[String]) -> Vec<SourceEntry> {
    let mut out = Vec::new();
    let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let abs = if dir.is_empty() {
            game_dir.to_path_buf()
        } else {
            game_dir.join(&dir)
        };
        let Ok(rd) = fs::read_dir(&abs) else {
            continue;
        };
        let mut names: Vec<(String, bool)> = Vec::new();
        for ent in rd.flatten() {
            let Some(name) = ent.file_name().to_str().map(str::to_string) else {
                log::debug!("{}: name is not UTF-8, left out", ent.path().display());
                continue;
            };
            if dir.is_empty() && skip.contains(&name) {
                continue;
            }
            let Ok(t) = ent.file_type() else { continue };
            let is_dir = if t.is_symlink() {
                match fs::metadata(ent.path()) {
                    Ok(m) if m.is_file() => false,
                    _ => continue,
                }
            } else if t.is_dir() {
                true
            } else if t.is_file() {
                false
            } else {
                continue;
            };
            names.push((name, is_dir));
        }
        names.sort();
        for (name, is_dir) in names {
            if out.len() >= MAX_LOOSE_ENTRIES {
                log::warn!("more than {MAX_LOOSE_ENTRIES} loose files: the rest left out");
                return out;
            }
            let path = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            if is_dir && depth < MAX_LOOSE_DEPTH {
                stack.push((path.clone(), depth + 1));
            }
            out.push(SourceEntry { path, dir: is_dir });
        }
    }
    out
}

/// Scans `game_dir`: every regular file (or symlink to one) at its top level whose name ends
/// in `.hpi .ufo .ccx .gp3 .gpf` (any case) and that parses is an archive source; one that
/// does not parse stays a loose file (warning logged). Archives whose identity equals one in
/// `old` are not read again; `None` when the sources are those of `old`. `next_ver`
/// numbers new archive versions.
fn scan(
    game_dir: &Path,
    priority: &Priority,
    max_bytes: u64,
    old: Option<&Snapshot>,
    next_ver: &AtomicU64,
) -> Result<Option<Snapshot>, FsError> {
    let limits = HpiLimits::default();
    let mut archives: Vec<Arc<ArchiveSource>> = Vec::new();
    let mut idents = Vec::new();
    let mut names: Vec<String> = fs::read_dir(game_dir)?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| view::archive::is_archive_name(n))
        .collect();
    names.sort();
    for name in names {
        let abs = game_dir.join(&name);
        let Ok(meta) = fs::metadata(&abs) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let ident = Ident::of(&meta);
        let reuse = old.and_then(|o| {
            o.sources.iter().find_map(|s| match s {
                Source::Archive(a) if a.name == name && a.ident == ident => Some(a.clone()),
                _ => None,
            })
        });
        if let Some(a) = reuse {
            idents.push((name, ident));
            archives.push(a);
            continue;
        }
        if meta.len() > max_bytes {
            log::warn!("{name}: too large, shown as a plain file");
            continue;
        }
        let parsed = File::open(&abs).and_then(|mut f| {
            let meta = f.metadata()?;
            let mut data = Vec::with_capacity(meta.len() as usize);
            f.read_to_end(&mut data)?;
            Ok((data, meta))
        });
        let (data, meta) = match parsed {
            Ok(x) => x,
            Err(e) => {
                log::warn!("{name}: cannot be read ({e}), shown as a plain file");
                continue;
            }
        };
        match hpi::parse(&data, &limits) {
            Ok(archive) => {
                let paths = view::archive::shown_paths(&archive);
                let ident = Ident::of(&meta);
                idents.push((name.clone(), ident.clone()));
                archives.push(Arc::new(ArchiveSource {
                    name,
                    ident,
                    meta,
                    archive,
                    paths,
                    ver: next_ver.fetch_add(1, Ordering::Relaxed),
                }));
            }
            Err(e) => log::warn!("{name}: not a readable archive ({e}), shown as a plain file"),
        }
    }
    let consumed: Vec<String> = archives.iter().map(|a| a.name.clone()).collect();
    let loose = walk_loose(game_dir, &consumed);
    if let Some(o) = old {
        if o.loose == loose && o.archives == idents {
            // Same sources: the caller keeps the old snapshot (same versions, same inodes).
            return Ok(None);
        }
    }
    let order = priority.order(&consumed);
    let mut sources = Vec::new();
    let mut lists = Vec::new();
    for slot in order {
        match slot {
            Slot::Loose => {
                lists.push(SourceList {
                    entries: loose.clone(),
                });
                sources.push(Source::Loose);
            }
            Slot::Archive(i) => {
                let Some(a) = archives.get(i) else { continue };
                let entries = a
                    .archive
                    .entries
                    .iter()
                    .zip(&a.paths)
                    .map(|(e, p)| SourceEntry {
                        path: p.clone(),
                        dir: matches!(e.kind, hpi::EntryKind::Dir),
                    })
                    .collect();
                lists.push(SourceList { entries });
                sources.push(Source::Archive(a.clone()));
            }
        }
    }
    Ok(Some(Snapshot {
        index: MergedIndex::build(&lists),
        sources,
        loose,
        archives: idents,
    }))
}

/// Scans `game_dir` and overlays its sources in `priority` order (what `tafs which` and
/// the mount use): archives at the top level of the game folder, loose files everywhere.
pub fn scan_once(game_dir: &Path, priority: &Priority) -> Result<Snapshot, FsError> {
    scan(game_dir, priority, 1 << 30, None, &AtomicU64::new(1))?.ok_or(FsError::NotFound)
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

struct Inodes {
    by_id: HashMap<NodeId, u64>,
    by_ino: HashMap<u64, NodeId>,
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
}

enum Outcome {
    Unknown,
    Broken,
    Ready(Arc<Layout>),
}

struct AssetState {
    outcome: Outcome,
    view: Option<Arc<dyn View>>,
}

type AssetKey = (String, u64);

/// A decoded GAF/TNT: the shape of its view and the view.
type Decoded = (Arc<Layout>, Arc<dyn View>);

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

struct Refresh {
    snap: Arc<Snapshot>,
    checked: Instant,
    /// A thread is scanning the sources right now.
    scanning: bool,
    /// A source was seen changed: scan at the next request, whatever the TTL.
    expired: bool,
}

/// The read-only file system of the merged game view.
pub struct MergedCore {
    game_dir: PathBuf,
    opts: MountOptions,
    priority: Priority,
    dir_meta: Metadata,
    state: Mutex<Refresh>,
    inodes: Mutex<Inodes>,
    loose_vers: Mutex<HashMap<(String, Ident), u64>>,
    next_ver: AtomicU64,
    assets: Mutex<HashMap<AssetKey, Arc<Mutex<AssetState>>>>,
    views: Mutex<LruCache<AssetKey, ()>>,
    cache: ByteCache<(String, u64, String)>,
    handles: Mutex<HashMap<u64, Arc<Handle>>>,
    dirs: Mutex<HashMap<u64, Arc<Vec<DirItem>>>>,
    next_fh: AtomicU64,
}

/// The root inode.
const ROOT_INO: u64 = 1;

impl MergedCore {
    /// Scans `game_dir` and serves its merged view with sources ordered by `priority`.
    /// Of `opts`, the cache size, TTL, owner, decoded-view budget, size limit and opener
    /// apply; write-back does not (the view is read-only).
    pub fn new(
        game_dir: impl Into<PathBuf>,
        opts: MountOptions,
        priority: Priority,
    ) -> Result<MergedCore, FsError> {
        let game_dir = game_dir.into();
        let dir_meta = fs::metadata(&game_dir)?;
        if !dir_meta.is_dir() {
            return Err(FsError::NotDir);
        }
        let next_ver = AtomicU64::new(1);
        let snap = scan(&game_dir, &priority, opts.max_asset_bytes, None, &next_ver)?
            .ok_or(FsError::NotFound)?;
        let mut inodes = Inodes {
            by_id: HashMap::new(),
            by_ino: HashMap::new(),
            next: ROOT_INO,
        };
        inodes.ino(NodeId::Dir(String::new()));
        let views = NonZeroUsize::new(opts.max_views.max(1)).unwrap_or(NonZeroUsize::MIN);
        Ok(MergedCore {
            cache: ByteCache::new(opts.cache_size),
            game_dir,
            priority,
            dir_meta,
            state: Mutex::new(Refresh {
                snap: Arc::new(snap),
                checked: Instant::now(),
                scanning: false,
                expired: false,
            }),
            inodes: Mutex::new(inodes),
            loose_vers: Mutex::new(HashMap::new()),
            next_ver,
            assets: Mutex::new(HashMap::new()),
            views: Mutex::new(LruCache::new(views)),
            handles: Mutex::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            opts,
        })
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
            if st.scanning || (st.checked.elapsed() < every && !st.expired) {
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
                st.snap = Arc::new(s);
            }
            Ok(None) => {}
            Err(e) => log::warn!("merged view: scan failed: {e}"),
        }
        st.scanning = false;
        st.checked = Instant::now();
        st.snap.clone()
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
        let meta = match fs::metadata(self.game_dir.join(&hit.path)) {
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
        let ck = (key.to_string(), ver, String::new());
        if let Some(b) = self.cache.get(&ck) {
            return Ok(b);
        }
        let bytes = match c {
            Content::Loose { rel, meta } => {
                if meta.len() > self.opts.max_asset_bytes {
                    return Err(FsError::Invalid("file too large".into()));
                }
                let mut f = File::open(self.game_dir.join(rel))?;
                if Ident::of(&f.metadata()?) != Ident::of(meta) {
                    self.expire();
                    return Err(FsError::Stale);
                }
                let mut v = Vec::with_capacity(meta.len() as usize);
                f.read_to_end(&mut v)?;
                v
            }
            Content::Member { archive, info, .. } => self.read_member(archive, info, key)?,
        };
        let bytes = Arc::new(bytes);
        self.cache.insert(ck, bytes.clone());
        Ok(bytes)
    }

    /// Decompresses one member, reading only its stored bytes from the archive file.
    fn read_member(
        &self,
        a: &ArchiveSource,
        info: &FileInfo,
        what: &str,
    ) -> Result<Vec<u8>, FsError> {
        let f = File::open(self.game_dir.join(&a.name))?;
        let meta = f.metadata()?;
        if Ident::of(&meta) != a.ident {
            self.expire();
            return Err(FsError::Stale);
        }
        let end = u64::from(info.offset).saturating_add(info.stored_len);
        if end > meta.len() {
            return Err(ViewError::invalid(what, "member beyond the end of the archive").into());
        }
        let mut stored = vec![0u8; info.stored_len as usize];
        f.read_exact_at(&mut stored, u64::from(info.offset))?;
        a.archive
            .decode_member(&stored, info, &HpiLimits::default())
            .map_err(|e| FsError::View(ViewError::invalid(what, e.to_string())))
    }

    /// Decodes the GAF/TNT of file node `n` (key `key`) at version `ver` if not done yet.
    fn asset(
        &self,
        snap: &Snapshot,
        key: &str,
        ver: u64,
        c: &Content,
    ) -> Result<Option<Decoded>, FsError> {
        let name = key.rsplit('/').next().unwrap_or(key);
        let Some(kind) = AssetKind::from_name(name) else {
            return Ok(None);
        };
        let slot = lock(&self.assets)
            .entry((key.to_string(), ver))
            .or_insert_with(|| {
                Arc::new(Mutex::new(AssetState {
                    outcome: Outcome::Unknown,
                    view: None,
                }))
            })
            .clone();
        let mut st = lock(&slot);
        match (&st.outcome, &st.view) {
            (Outcome::Broken, _) => return Ok(None),
            (Outcome::Ready(l), Some(v)) => {
                let r = (l.clone(), v.clone());
                drop(st);
                lock(&self.views).get(&(key.to_string(), ver));
                return Ok(Some(r));
            }
            _ => {}
        }
        let bytes = self.bytes_of(key, ver, c)?;
        let opened = match c {
            Content::Loose { rel, .. } => {
                let opts = view_options_for(&self.game_dir, rel);
                (self.opts.opener)(kind, &bytes, &opts)
            }
            Content::Member { archive, entry, .. } => {
                self.open_member(snap, archive, *entry, kind, &bytes)
            }
        };
        match opened {
            Ok(v) => {
                let v: Arc<dyn View> = Arc::from(v);
                let layout = match &st.outcome {
                    Outcome::Ready(l) => l.clone(),
                    _ => Arc::new(Layout::new(&*v)),
                };
                st.outcome = Outcome::Ready(layout.clone());
                st.view = Some(v.clone());
                drop(st);
                let evicted = lock(&self.views).push((key.to_string(), ver), ());
                if let Some((old, ())) = evicted.filter(|(k, _)| k.0 != key || k.1 != ver) {
                    if let Some(s) = lock(&self.assets).get(&old).cloned() {
                        lock(&s).view = None;
                    }
                }
                Ok(Some((layout, v)))
            }
            Err(e) => {
                log::warn!("{key}: shown as a plain file: {e}");
                st.outcome = Outcome::Broken;
                Ok(None)
            }
        }
    }

    /// The view of member `entry` of `a`, with the options the normal mount gives it at
    /// `ARCHIVE/MEMBER` (same palette chain, same-named `.pcx` member beside a GAF first).
    fn open_member(
        &self,
        _snap: &Snapshot,
        a: &ArchiveSource,
        entry: usize,
        kind: AssetKind,
        bytes: &[u8],
    ) -> Result<Box<dyn View>, ViewError> {
        let member = a.paths.get(entry).cloned().unwrap_or_default();
        let mut opts = view_options_for(&self.game_dir, &format!("{}/{member}", a.name));
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
        (self.opts.opener)(kind, bytes, &opts)
    }

    // -----------------------------------------------------------------------------------
    // Attributes

    fn owner(&self, m: &Metadata) -> (u32, u32) {
        (
            self.opts.uid.unwrap_or(m.uid()),
            self.opts.gid.unwrap_or(m.gid()),
        )
    }

    fn attr(&self, ino: u64, m: &Metadata, dir: bool, size: u64, nlink: u32) -> Attr {
        let (uid, gid) = self.owner(m);
        let r = m.mode() & 0o444;
        let perm = if dir { r | (r >> 2) } else { r };
        Attr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: time(m.atime(), m.atime_nsec()),
            mtime: time(m.mtime(), m.mtime_nsec()),
            ctime: time(m.ctime(), m.ctime_nsec()),
            kind: if dir { FileKind::Dir } else { FileKind::File },
            perm: perm as u16,
            nlink,
            uid,
            gid,
            rdev: 0,
            blksize: 4096,
        }
    }

    /// Metadata shown for folder `n`: the winning source's folder (loose) or archive file.
    fn dir_meta(&self, snap: &Snapshot, n: usize) -> Metadata {
        let hit = snap.index.winner(n);
        match hit.map(|h| (h, snap.archive_of(h.source))) {
            Some((_, Some(a))) => a.meta.clone(),
            Some((h, None)) => {
                fs::metadata(self.game_dir.join(&h.path)).unwrap_or_else(|_| self.dir_meta.clone())
            }
            None => fs::metadata(&self.game_dir).unwrap_or_else(|_| self.dir_meta.clone()),
        }
    }

    /// What file node `n` is shown as: its id and attributes.
    fn file_node(&self, snap: &Snapshot, key: &str, n: usize) -> Result<(NodeId, Attr), FsError> {
        let (ver, c) = self.content(snap, n)?;
        if let Some((layout, _)) = self.asset(snap, key, ver, &c)? {
            let id = NodeId::Asset {
                key: key.to_string(),
                ver,
                vpath: String::new(),
                dir: true,
            };
            let ino = self.ino(id.clone());
            let a = self.attr(ino, c.meta(), true, 0, 2 + layout.subdirs(""));
            return Ok((id, a));
        }
        let size = match &c {
            Content::Loose { meta, .. } => meta.len(),
            Content::Member { info, .. } => u64::from(info.size),
        };
        let id = NodeId::File(key.to_string(), ver);
        let ino = self.ino(id.clone());
        Ok((id, self.attr(ino, c.meta(), false, size, 1)))
    }

    fn dir_node(&self, snap: &Snapshot, key: &str, n: usize) -> (NodeId, Attr) {
        let id = NodeId::Dir(key.to_string());
        let ino = self.ino(id.clone());
        let subdirs = snap
            .index
            .children_unordered(n)
            .filter(|&c| snap.index.is_dir(c) || AssetKind::from_name(snap.index.name(c)).is_some())
            .count() as u32;
        let m = self.dir_meta(snap, n);
        (id, self.attr(ino, &m, true, 0, 2 + subdirs))
    }

    /// Id and attributes of index node `n`.
    fn index_node(&self, snap: &Snapshot, n: usize) -> Result<(NodeId, Attr), FsError> {
        let key = snap.index.path(n).to_ascii_lowercase();
        if snap.index.is_dir(n) {
            Ok(self.dir_node(snap, &key, n))
        } else {
            self.file_node(snap, &key, n)
        }
    }

    /// The decoded asset of `key` at `ver`, if that is still what the path shows.
    fn current_asset(
        &self,
        snap: &Snapshot,
        key: &str,
        ver: u64,
    ) -> Result<(Decoded, Content), FsError> {
        let n = Self::node(snap, key)?;
        let (now, c) = self.content(snap, n)?;
        if now != ver {
            return Err(FsError::Stale);
        }
        let d = self.asset(snap, key, ver, &c)?.ok_or(FsError::Stale)?;
        Ok((d, c))
    }

    fn render(
        &self,
        key: &str,
        ver: u64,
        layout: &Layout,
        view: &dyn View,
        vpath: &str,
    ) -> Result<Arc<Vec<u8>>, FsError> {
        let ck = (key.to_string(), ver, vpath.to_string());
        if let Some(b) = self.cache.get(&ck) {
            return Ok(b);
        }
        let bytes = Arc::new(view.render_vec(vpath)?);
        layout.set_size(vpath, bytes.len() as u64);
        self.cache.insert(ck, bytes.clone());
        Ok(bytes)
    }

    fn attr_of(&self, ino: u64, id: &NodeId) -> Result<Attr, FsError> {
        let snap = self.snapshot();
        match id {
            NodeId::Dir(key) => {
                let n = Self::node(&snap, key)?;
                if !snap.index.is_dir(n) {
                    return Err(FsError::Stale);
                }
                Ok(self.dir_node(&snap, key, n).1)
            }
            NodeId::File(key, _) => {
                let n = Self::node(&snap, key)?;
                if snap.index.is_dir(n) {
                    return Err(FsError::Stale);
                }
                let (got, a) = self.file_node(&snap, key, n)?;
                if got != *id {
                    return Err(FsError::Stale);
                }
                Ok(a)
            }
            NodeId::Asset {
                key,
                ver,
                vpath,
                dir,
            } => {
                let ((layout, view), c) = self.current_asset(&snap, key, *ver)?;
                if layout.is_dir(vpath) != Some(*dir) && !vpath.is_empty() {
                    return Err(FsError::Stale);
                }
                if *dir {
                    return Ok(self.attr(ino, c.meta(), true, 0, 2 + layout.subdirs(vpath)));
                }
                let known = layout.size(vpath);
                let size = match known {
                    Some(s) => s,
                    None => self.render(key, *ver, &layout, &*view, vpath)?.len() as u64,
                };
                Ok(self.attr(ino, c.meta(), false, size, 1))
            }
        }
    }

    fn describe(&self, id: &NodeId) -> Result<Vec<String>, FsError> {
        let snap = self.snapshot();
        let n = Self::node(&snap, id.key())?;
        Ok(snap.sources_of(n))
    }

    fn list(&self, ino: u64, id: &NodeId) -> Result<Vec<DirItem>, FsError> {
        let snap = self.snapshot();
        let parent = self.ino(id.parent());
        let mut items = vec![
            DirItem {
                ino,
                name: ".".into(),
                kind: FileKind::Dir,
                attr: None,
            },
            DirItem {
                ino: if ino == ROOT_INO { ROOT_INO } else { parent },
                name: "..".into(),
                kind: FileKind::Dir,
                attr: None,
            },
        ];
        match id {
            NodeId::Dir(key) => {
                let n = Self::node(&snap, key)?;
                if !snap.index.is_dir(n) {
                    return Err(FsError::NotDir);
                }
                // GAF/TNT children are decoded (in parallel) to know whether they are
                // directories; nothing else is read.
                type Kid = (usize, Result<(NodeId, Attr), FsError>);
                let children = snap.index.children(n);
                let kids: Vec<Kid> = super::fan_out(&children, |&c| (c, self.index_node(&snap, c)));
                for (c, r) in kids {
                    match r {
                        Ok((_, a)) => items.push(DirItem {
                            ino: a.ino,
                            name: snap.index.name(c).into(),
                            kind: a.kind,
                            attr: Some(a),
                        }),
                        Err(e) => {
                            log::debug!("{}: left out of the listing: {e}", snap.index.path(c))
                        }
                    }
                }
            }
            NodeId::File(..) => return Err(FsError::NotDir),
            NodeId::Asset {
                key,
                ver,
                vpath,
                dir,
            } => {
                if !dir {
                    return Err(FsError::NotDir);
                }
                let ((layout, _), _) = self.current_asset(&snap, key, *ver)?;
                for (name, d) in layout.children(vpath).unwrap_or_default() {
                    let vp = if vpath.is_empty() {
                        name.clone()
                    } else {
                        format!("{vpath}/{name}")
                    };
                    let ino = self.ino(NodeId::Asset {
                        key: key.clone(),
                        ver: *ver,
                        vpath: vp,
                        dir: d,
                    });
                    items.push(DirItem {
                        ino,
                        name: name.into(),
                        kind: if d { FileKind::Dir } else { FileKind::File },
                        attr: None,
                    });
                }
            }
        }
        Ok(items)
    }
}

impl FsOps for MergedCore {
    fn ttl(&self) -> Duration {
        self.opts.ttl
    }

    fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        let pid = self.id(parent)?;
        let name = name.to_str().ok_or(FsError::NotFound)?;
        match &pid {
            NodeId::Dir(pkey) => {
                let snap = self.snapshot();
                let p = Self::node(&snap, pkey)?;
                if !snap.index.is_dir(p) {
                    return Err(FsError::NotDir);
                }
                let c = snap.index.child(p, name).ok_or(FsError::NotFound)?;
                // Only the shown spelling: another spelling would be a second name of the
                // same folder inode, which the kernel refuses (directory aliasing).
                if snap.index.name(c) != name {
                    return Err(FsError::NotFound);
                }
                Ok(self.index_node(&snap, c)?.1)
            }
            NodeId::File(..) => Err(FsError::NotDir),
            NodeId::Asset {
                key,
                ver,
                vpath,
                dir,
            } => {
                if !dir {
                    return Err(FsError::NotDir);
                }
                let snap = self.snapshot();
                let ((layout, _), _) = self.current_asset(&snap, key, *ver)?;
                let vp = if vpath.is_empty() {
                    name.to_string()
                } else {
                    format!("{vpath}/{name}")
                };
                let d = layout.is_dir(&vp).ok_or(FsError::NotFound)?;
                let id = NodeId::Asset {
                    key: key.clone(),
                    ver: *ver,
                    vpath: vp,
                    dir: d,
                };
                let ino = self.ino(id.clone());
                self.attr_of(ino, &id)
            }
        }
    }

    fn getattr(&self, ino: u64, fh: Option<u64>) -> Result<Attr, FsError> {
        if let Some(fh) = fh {
            let h = lock(&self.handles).get(&fh).cloned();
            if let Some(Handle::Bytes(_, a)) = h.as_deref() {
                if a.ino == ino {
                    return Ok(*a);
                }
            }
        }
        let id = self.id(ino)?;
        self.attr_of(ino, &id)
    }

    fn readlink(&self, _ino: u64) -> Result<Vec<u8>, FsError> {
        Err(FsError::Invalid("not a symbolic link".into()))
    }

    fn open(&self, ino: u64, flags: i32) -> Result<Opened, FsError> {
        if flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0 {
            return Err(FsError::ReadOnly("the merged game view is read-only"));
        }
        let id = self.id(ino)?;
        let snap = self.snapshot();
        let handle = match &id {
            NodeId::Dir(_) | NodeId::Asset { dir: true, .. } => return Err(FsError::IsDir),
            NodeId::File(key, ver) => {
                let n = Self::node(&snap, key)?;
                let (now, c) = self.content(&snap, n)?;
                if now != *ver {
                    return Err(FsError::Stale);
                }
                match &c {
                    Content::Loose { rel, meta } => {
                        let f = File::open(self.game_dir.join(rel))?;
                        if Ident::of(&f.metadata()?) != Ident::of(meta) {
                            return Err(FsError::Stale);
                        }
                        Handle::File(f)
                    }
                    Content::Member { .. } => {
                        let b = self.bytes_of(key, *ver, &c)?;
                        let a = self.attr(ino, c.meta(), false, b.len() as u64, 1);
                        Handle::Bytes(b, a)
                    }
                }
            }
            NodeId::Asset {
                key, ver, vpath, ..
            } => {
                let ((layout, view), c) = self.current_asset(&snap, key, *ver)?;
                let b = self.render(key, *ver, &layout, &*view, vpath)?;
                let a = self.attr(ino, c.meta(), false, b.len() as u64, 1);
                Handle::Bytes(b, a)
            }
        };
        let keep_cache = matches!(handle, Handle::Bytes(..));
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, Arc::new(handle));
        Ok(Opened { fh, keep_cache })
    }

    fn read(&self, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
        let h = lock(&self.handles)
            .get(&fh)
            .cloned()
            .ok_or(FsError::BadHandle(fh))?;
        match &*h {
            Handle::Bytes(b, _) => Ok(super::slice_at(b, offset, size)),
            Handle::File(f) => Ok(super::read_at(f, offset, size)?),
        }
    }

    fn release(&self, fh: u64) -> Result<(), FsError> {
        lock(&self.handles)
            .remove(&fh)
            .map(|_| ())
            .ok_or(FsError::BadHandle(fh))
    }

    fn opendir(&self, ino: u64) -> Result<u64, FsError> {
        let id = self.id(ino)?;
        let items = self.list(ino, &id)?;
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.dirs).insert(fh, Arc::new(items));
        Ok(fh)
    }

    fn readdir(&self, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        let items = lock(&self.dirs)
            .get(&fh)
            .cloned()
            .ok_or(FsError::BadHandle(fh))?;
        Ok(items
            .iter()
            .enumerate()
            .skip(offset as usize)
            .map(|(i, it)| (i as u64 + 1, it.clone()))
            .collect())
    }

    fn readdirplus(&self, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        let items = self.readdir(fh, offset)?;
        let with_attrs = super::fan_out(&items, |(next, it)| {
            let mut it = it.clone();
            if it.name == "." || it.name == ".." {
                // ignored by the kernel; `..` of every subfolder would count the parent's
                // children once per subfolder
                it.attr = Some(Attr::dot(it.ino));
            } else if it.attr.is_none() {
                let id = self.id(it.ino).ok()?;
                it.attr = Some(self.attr_of(it.ino, &id).ok()?);
            }
            Some((*next, it))
        });
        Ok(with_attrs.into_iter().flatten().collect())
    }

    fn releasedir(&self, fh: u64) -> Result<(), FsError> {
        lock(&self.dirs)
            .remove(&fh)
            .map(|_| ())
            .ok_or(FsError::BadHandle(fh))
    }

    fn statfs(&self) -> Result<StatFs, FsError> {
        Ok(super::sys::statvfs(&self.game_dir)?)
    }

    fn access(&self, ino: u64, mask: i32) -> Result<(), FsError> {
        if mask & libc::W_OK != 0 {
            return Err(FsError::ReadOnly("the merged game view is read-only"));
        }
        self.getattr(ino, None).map(|_| ())
    }

    fn has_xattrs(&self) -> bool {
        true
    }

    fn getxattr(&self, ino: u64, name: &OsStr) -> Result<Vec<u8>, FsError> {
        let id = self.id(ino)?;
        let all = self.describe(&id)?;
        if name == SOURCE_XATTR {
            Ok(all.into_iter().next().unwrap_or_default().into_bytes())
        } else if name == SOURCES_XATTR {
            Ok(all
                .iter()
                .map(|s| format!("{s}\n"))
                .collect::<String>()
                .into_bytes())
        } else {
            Err(FsError::NoAttr)
        }
    }

    fn listxattr(&self, ino: u64) -> Result<Vec<u8>, FsError> {
        self.id(ino)?;
        Ok(format!("{SOURCE_XATTR}\0{SOURCES_XATTR}\0").into_bytes())
    }
}
