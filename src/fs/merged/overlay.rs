//! The writable merged view (`tafs mount --merged --into TARGET`): the mod TARGET (a folder,
//! or an archive served as the normal mount serves an archive directory) on top of the
//! read-only merged stock view.
//!
//! [`OverlayCore`] is a union of two file systems: a normal write-back [`Core`] serving
//! TARGET (the *top*) and a [`MergedCore`] of the game folder without TARGET (the *stock*
//! view). Every name the top holds wins (ignoring letter case); folders of both are merged;
//! a file or an exploded GAF/TNT comes whole from one layer. The first write to a stock path
//! *copies it up*: the winning file's bytes (a loose file or an archive member; for a path
//! inside an exploded GAF/TNT, the whole binary) are written through the top at the same
//! path, spelled as the stock view shows it, and the operation is forwarded to the top, so
//! write-back of that GAF/TNT is exactly the normal one. Stock sources are never written:
//! deleting or renaming a file only the stock view holds fails with `EROFS` (logged, and
//! listed in the root `.tafs-status`). The union has its own inode numbers (a folder one per
//! path, a file one per inode of the layer serving it) and translates the top's kernel
//! invalidations to them. The contract is `SEMANTICS.md`, "Merged game view".

use super::MergedCore;
use crate::fs::core::{Attr, Core, DirItem, FileKind, Inval, MountOptions, ROOT};
use crate::fs::ops::FsOps;
use crate::fs::shared::{join, lock};
use crate::fs::{Caller, FsError, NewNode};
use crate::view::archive::FileSource;
use crate::view::merged::Priority;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

/// Name of the generated root file listing what the mod changes (`tafs diff`).
pub const MOD_DIFF_NAME: &str = ".tafs-diff";
/// Inode of the root `.tafs-status`.
pub(super) const STATUS_INO: u64 = 2;
/// Inode of the root [`MOD_DIFF_NAME`].
pub(super) const DIFF_INO: u64 = 3;
/// Deepest folder chain resolved (a guard: the kernel's paths are shorter).
const MAX_DEPTH: usize = 2048;
/// Refused operations kept for `.tafs-status`.
const MAX_REFUSED: usize = 64;

/// The lowercase names of a folder of the mod.
pub(super) type LowerNames = Arc<std::collections::HashSet<String>>;

/// The mod a writable merged view writes into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A folder (absolute path).
    Folder(PathBuf),
    /// An archive (`.hpi .ufo .ccx .gp3 .gpf`; absolute path).
    Archive(PathBuf),
}

impl Target {
    /// The absolute path of TARGET.
    pub fn path(&self) -> &Path {
        match self {
            Target::Folder(p) | Target::Archive(p) => p,
        }
    }

    /// The folder the top [`Core`] serves: TARGET itself, or the archive's folder.
    fn core_dir(&self) -> &Path {
        match self {
            Target::Folder(p) => p,
            Target::Archive(p) => p.parent().unwrap_or(Path::new("/")),
        }
    }
}

/// Makes TARGET usable: an existing folder or archive is taken as it is; a missing one is
/// created (a folder, or an empty archive when the name has an archive extension, with its
/// missing parent folders). Returns the absolute TARGET.
pub fn prepare_target(path: &Path) -> Result<Target, FsError> {
    let abs = std::path::absolute(path)?;
    let name = abs
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| FsError::Invalid(format!("{}: no file name", abs.display())))?;
    let archive = crate::view::archive::is_archive_name(name);
    match std::fs::symlink_metadata(&abs) {
        Ok(m) if m.is_dir() => Ok(Target::Folder(abs)),
        Ok(m) if m.is_file() && archive => {
            open_archive(&abs, &Default::default()).map_err(|e| {
                FsError::Invalid(format!("{}: not a readable archive: {e}", abs.display()))
            })?;
            Ok(Target::Archive(abs))
        }
        Ok(_) => Err(FsError::Invalid(format!(
            "{}: neither a folder nor an archive (.hpi .ufo .ccx .gp3 .gpf)",
            abs.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if archive {
                let dir = make_dirs(abs.parent().unwrap_or(Path::new("/")))?;
                let empty =
                    crate::formats::hpi::write(&[], &crate::formats::hpi::WriteOptions::v1())
                        .map_err(|e| FsError::Invalid(format!("empty archive: {e}")))?;
                create_new_at(dir.as_fd(), OsStr::new(name), &empty).map_err(|e| {
                    FsError::Invalid(format!("{}: cannot create: {e}", abs.display()))
                })?;
                log::info!("{}: created (an empty archive)", abs.display());
                Ok(Target::Archive(abs))
            } else {
                make_dirs(&abs)?;
                log::info!("{}: created (a folder)", abs.display());
                Ok(Target::Folder(abs))
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// The folder `abs` (absolute), made with its missing parents: the part that exists is
/// taken as given (as GAME_DIR is), and each folder made is made and entered relative to
/// the one above it, with no symlink followed, so one put in its place meanwhile stops the
/// walk (`ELOOP`) instead of leading elsewhere. Returns a descriptor of it.
fn make_dirs(abs: &Path) -> Result<std::os::fd::OwnedFd, FsError> {
    use crate::sys;
    let mut existing = abs.to_path_buf();
    let mut missing: Vec<OsString> = Vec::new();
    while std::fs::symlink_metadata(&existing).is_err() {
        let Some(name) = existing.file_name().map(OsStr::to_os_string) else {
            break;
        };
        missing.push(name);
        existing.pop();
    }
    let mut dir = sys::open_dir_path(&existing)?;
    for name in missing.iter().rev() {
        match sys::mkdir_at(dir.as_fd(), name, 0o777) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e.into()),
            _ => {}
        }
        dir = sys::open_dir_beneath(dir.as_fd(), Path::new(name)).map_err(|e| {
            FsError::Invalid(format!(
                "{}: cannot enter {}: {e}",
                abs.display(),
                name.to_string_lossy()
            ))
        })?;
    }
    Ok(dir)
}

/// Writes `bytes` as the new entry `name` of folder `dir` (a temporary file, synced, renamed
/// into place only if `name` still does not exist: nothing is replaced).
fn create_new_at(dir: std::os::fd::BorrowedFd, name: &OsStr, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    crate::atomic::prepare_seekable_at(dir, name, None, |w| w.write_all(bytes))?.commit_new()
}

/// An archive TARGET read by range: the open file and its parsed header and directory
/// (no member is read).
pub(super) fn open_archive(
    path: &Path,
    limits: &crate::formats::hpi::HpiLimits,
) -> Result<(FileSource, crate::formats::hpi::Archive), String> {
    let src = FileSource::open(path).map_err(|e| e.to_string())?;
    let a = crate::formats::hpi::parse_from(&src, limits).map_err(|e| e.to_string())?;
    Ok((src, a))
}

/// Where `target` lies in `game_dir` (a path relative to it, as spelled on disk), if it
/// does: that path is no source of the stock view. TARGET cannot be the game folder.
pub fn exclude_of(game_dir: &Path, target: &Target) -> Result<Option<String>, FsError> {
    let game = std::fs::canonicalize(game_dir)?;
    let t = std::fs::canonicalize(target.path()).ok();
    if t.as_deref() == Some(game.as_path()) {
        return Err(FsError::Invalid(
            "--into: TARGET cannot be the game folder itself".into(),
        ));
    }
    Ok(
        t.and_then(|t| t.strip_prefix(&game).ok().map(Path::to_path_buf))
            .and_then(|r| r.to_str().map(str::to_string))
            .filter(|r| !r.is_empty()),
    )
}

/// How `user.tafs.source` names `path` (any letter case) when `target` holds it:
/// `mod:TARGET:PATH` with TARGET's spelling (inside an exploded GAF/TNT: the binary's path);
/// `None` when TARGET does not hold it. Reads TARGET only (no mount needed).
pub fn mod_source(target: &Target, path: &str) -> Option<String> {
    let comps: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let mut found = String::new();
    match target {
        Target::Folder(dir) => {
            let mut cur = dir.clone();
            for comp in comps {
                let name = std::fs::read_dir(&cur)
                    .ok()?
                    .flatten()
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .find(|n| n.eq_ignore_ascii_case(comp))?;
                cur.push(&name);
                found = join(&found, &name);
                if !cur.is_dir() {
                    break;
                }
            }
        }
        Target::Archive(p) => {
            let (_, a) = open_archive(p, &Default::default()).ok()?;
            let paths = crate::view::archive::shown_paths(&a);
            let mut prefix = String::new();
            for comp in comps {
                prefix = join(&prefix, comp);
                let i = paths.iter().position(|s| s.eq_ignore_ascii_case(&prefix))?;
                found = paths.get(i)?.clone();
                let is_dir = matches!(
                    a.entries.get(i).map(|e| &e.kind),
                    Some(crate::formats::hpi::EntryKind::Dir)
                );
                if !is_dir {
                    break;
                }
            }
        }
    }
    Some(format!("mod:{}:{found}", target.path().display()))
}

/// What a union inode stands for. Folders of the merged tree (and GAF/TNT directories at
/// their level) have one per path; everything else one per inode of the layer serving it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Key {
    /// A folder or asset directory of the merged tree (lowercase shown path).
    Dir(String),
    /// A node served by the top (its inode there).
    Top(u64),
    /// A node served by the stock view (its inode there).
    Stock(u64),
}

/// A union inode.
#[derive(Debug, Clone)]
pub(super) struct UNode {
    pub(super) key: Key,
    pub(super) parent: u64,
    pub(super) name: OsString,
    /// Shown path (`/`-separated, "" for the root).
    pub(super) path: String,
    /// Inode in the top, with the lookups of it this node made.
    pub(super) top: Option<(u64, u64)>,
    /// Inode in the stock view, with the lookups of it this node made.
    pub(super) stock: Option<(u64, u64)>,
    /// Lookups the kernel holds.
    pub(super) lookups: u64,
    /// The change count of the top this node was last checked against.
    pub(super) epoch: u64,
}

#[derive(Default)]
pub(super) struct Nodes {
    pub(super) by_key: HashMap<Key, u64>,
    pub(super) map: HashMap<u64, UNode>,
    /// Top inode → union inode (for the top's kernel invalidations).
    pub(super) top_rev: HashMap<u64, u64>,
    pub(super) next: u64,
}

/// How [`OverlayCore::intern`] sets a layer inode of a node.
#[derive(Debug, Clone, Copy)]
pub(super) enum Slot {
    /// Left as it is.
    Keep,
    /// The layer has no such node.
    Clear,
    /// This inode.
    Set(u64),
}

/// An open file of the union.
pub(super) enum Handle {
    /// A handle of the top, for top inode `ino`, opened for writing or not.
    Top { fh: u64, ino: u64, writing: bool },
    /// A handle of the stock view, for stock inode `ino`.
    Stock { fh: u64, ino: u64 },
    /// A generated root file.
    Text(Arc<Vec<u8>>, Attr),
}

/// The writable merged view: TARGET over the merged stock view (see the module comment).
pub struct OverlayCore {
    pub(super) top: Arc<Core>,
    pub(super) stock: MergedCore,
    pub(super) target: Target,
    pub(super) nodes: Arc<Mutex<Nodes>>,
    pub(super) handles: Mutex<HashMap<u64, Arc<Handle>>>,
    pub(super) dirs: super::dirs::DirHandles,
    pub(super) next_fh: AtomicU64,
    /// Changes made through the top (copy-ups, creations, removals, renames).
    pub(super) epoch: AtomicU64,
    /// Operations refused on stock content, newest last.
    pub(super) refused: Mutex<Vec<String>>,
    /// One copy-up at a time.
    pub(super) copying: Mutex<()>,
    /// Lowercase names of top folders, by top inode, with the change count they were read at.
    pub(super) names: Mutex<HashMap<u64, (u64, LowerNames)>>,
}

/// A top inode an operation is forwarded to; a lookup taken for it (`held`) is given back
/// when dropped (an open handle or a child made in it keeps the top's node meanwhile).
pub(super) struct TopIno<'a> {
    core: &'a OverlayCore,
    /// The inode.
    pub(super) ino: u64,
    held: bool,
}

impl Drop for TopIno<'_> {
    fn drop(&mut self) {
        if self.held {
            self.core.top.forget(self.ino, 1);
        }
    }
}

/// Errors of the top that mean "this inode is no longer what the path shows".
pub(super) fn gone(e: &FsError) -> bool {
    matches!(e, FsError::Stale | FsError::UnknownInode(_)) || crate::fs::core::is_not_found(e)
}

impl OverlayCore {
    /// A union of `target` (served with `opts`: write-back as in the normal mount) over the
    /// merged view of `game_dir` in `priority` order, TARGET left out of the sources.
    /// The top's kernel invalidations are translated and sent to `inval`.
    pub fn new(
        game_dir: &Path,
        target: Target,
        opts: MountOptions,
        priority: Priority,
        inval: Option<Sender<Inval>>,
    ) -> Result<OverlayCore, FsError> {
        let exclude = exclude_of(game_dir, &target)?;
        if let Some(x) = &exclude {
            log::info!("{x}: the mod, not a source of the stock view");
        }
        let stock = MergedCore::new_excluding(game_dir, opts.clone(), priority, exclude)?;
        let nodes = Arc::new(Mutex::new(Nodes {
            next: 4,
            ..Nodes::default()
        }));
        let (top_inval, to_translate) = match inval {
            Some(out) => {
                let (tx, rx) = mpsc::channel::<Inval>();
                (Some(tx), Some((rx, out)))
            }
            None => (None, None),
        };
        let top = Arc::new(Core::new(target.core_dir(), opts, top_inval)?);
        Core::start_committer(&top)?;
        if let Some((rx, out)) = to_translate {
            // the top's invalidations, in the union's inode numbers; each is counted as
            // handled once passed on, so the top's close/fsync barrier does not wait for it
            let nodes = nodes.clone();
            let progress = top.inval_progress.clone();
            let spawned = std::thread::Builder::new()
                .name("tafs-overlay-inval".into())
                .spawn(move || {
                    for m in rx {
                        let n = lock(&nodes);
                        let t = match m {
                            Inval::Entry { parent, name } => n
                                .top_rev
                                .get(&parent)
                                .map(|&p| Inval::Entry { parent: p, name }),
                            Inval::Inode { ino } => {
                                n.top_rev.get(&ino).map(|&i| Inval::Inode { ino: i })
                            }
                        };
                        drop(n);
                        if let Some(t) = t {
                            let _ = out.send(t);
                        }
                        progress.done(1);
                    }
                });
            if let Err(e) = spawned {
                log::warn!("no invalidation thread for the mod: {e}");
            }
        }
        let top_root = match &target {
            Target::Folder(_) => ROOT,
            Target::Archive(p) => {
                let name = p.file_name().unwrap_or_default();
                // (at start, before any request: as the daemon)
                let a = top.lookup(Caller::root(), ROOT, name)?;
                if a.kind != FileKind::Dir {
                    return Err(FsError::Invalid(format!(
                        "{}: not shown as an archive directory",
                        p.display()
                    )));
                }
                a.ino
            }
        };
        {
            let mut n = lock(&nodes);
            n.by_key.insert(Key::Dir(String::new()), ROOT);
            n.top_rev.insert(top_root, ROOT);
            n.map.insert(
                ROOT,
                UNode {
                    key: Key::Dir(String::new()),
                    parent: ROOT,
                    name: OsString::new(),
                    path: String::new(),
                    top: Some((top_root, 0)),
                    stock: Some((ROOT, 0)),
                    lookups: 1,
                    epoch: 0,
                },
            );
        }
        Ok(OverlayCore {
            top,
            stock,
            target,
            nodes,
            handles: Mutex::new(HashMap::new()),
            dirs: super::dirs::DirHandles::default(),
            next_fh: AtomicU64::new(1),
            epoch: AtomicU64::new(1),
            refused: Mutex::new(Vec::new()),
            copying: Mutex::new(()),
            names: Mutex::new(HashMap::new()),
        })
    }

    /// The mod.
    pub fn target(&self) -> &Target {
        &self.target
    }

    pub(super) fn node(&self, ino: u64) -> Result<UNode, FsError> {
        lock(&self.nodes)
            .map
            .get(&ino)
            .cloned()
            .ok_or(FsError::UnknownInode(ino))
    }

    pub(super) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Something changed in the top: nodes of the stock view check again whether the top
    /// now holds their path.
    pub(super) fn bump(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Records (and logs) an operation refused on stock content.
    pub(super) fn refuse(&self, path: &str, what: &str) -> FsError {
        let text = format!(
            "{path}: {what} refused: only the stock game holds it, and a mod cannot remove stock content"
        );
        log::warn!("{text}");
        let mut r = lock(&self.refused);
        if r.len() >= MAX_REFUSED {
            r.remove(0);
        }
        r.push(text);
        FsError::ReadOnly("stock content cannot be removed or renamed by a mod")
    }

    /// The union inode of `key` (a node named `name` in union folder `parent`), made when
    /// new; its layer inodes set as `top` and `stock` say (a lookup of each inode set is
    /// recorded when `counted`, and given back when the node goes).
    pub(super) fn intern(
        &self,
        key: Key,
        parent: u64,
        name: &OsStr,
        top: Slot,
        stock: Slot,
        counted: bool,
    ) -> u64 {
        let pnode = self.node(parent).ok();
        let path = join(
            pnode.as_ref().map_or("", |p| p.path.as_str()),
            &name.to_string_lossy(),
        );
        let epoch = self.epoch();
        let c = u64::from(counted);
        let mut stale: Vec<(bool, u64, u64)> = Vec::new();
        let ino = {
            let mut n = lock(&self.nodes);
            let ino = match n.by_key.get(&key) {
                Some(&i) => i,
                None => {
                    let i = n.next;
                    n.next += 1;
                    n.by_key.insert(key.clone(), i);
                    n.map.insert(
                        i,
                        UNode {
                            key,
                            parent,
                            name: name.to_os_string(),
                            path,
                            top: None,
                            stock: None,
                            lookups: 0,
                            epoch,
                        },
                    );
                    i
                }
            };
            let mut rev = None;
            if let Some(u) = n.map.get_mut(&ino) {
                u.parent = parent;
                u.name = name.to_os_string();
                u.epoch = epoch;
                for (is_top, slot, new) in [(true, &mut u.top, top), (false, &mut u.stock, stock)] {
                    match (slot.as_mut(), new) {
                        (_, Slot::Keep) => {}
                        (Some((old, looks)), Slot::Set(x)) if *old == x => *looks += c,
                        (old, Slot::Set(x)) => {
                            if let Some((o, l)) = old {
                                stale.push((is_top, *o, *l));
                            }
                            *slot = Some((x, c));
                            if is_top {
                                rev = Some(x);
                            }
                        }
                        (Some((o, l)), Slot::Clear) => {
                            stale.push((is_top, *o, *l));
                            *slot = None;
                        }
                        (None, Slot::Clear) => {}
                    }
                }
            }
            if let Some(x) = rev {
                n.top_rev.insert(x, ino);
            }
            ino
        };
        self.forget_layers(&stale);
        ino
    }

    /// Gives back layer lookups a union node made.
    pub(super) fn forget_layers(&self, list: &[(bool, u64, u64)]) {
        for &(is_top, ino, looks) in list {
            if looks == 0 {
                continue;
            }
            if is_top {
                self.top.forget(ino, looks);
            } else {
                self.stock.forget(ino, looks);
            }
        }
    }

    /// Looks `name` up in the top folder `pt` and gives the lookup straight back (the
    /// caller keeps no reference): the attributes, or `None` when the top has no such name.
    pub(super) fn peek_top(
        &self,
        c: Caller,
        pt: u64,
        name: &OsStr,
    ) -> Result<Option<Attr>, FsError> {
        match self.top.lookup(c, pt, name) {
            Ok(a) => {
                self.top.forget(a.ino, 1);
                Ok(Some(a))
            }
            Err(e) if crate::fs::core::is_not_found(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The top's attributes at `path`, walked from its root: the lookups on the way are
    /// given back, the one of the result is the caller's (to forget).
    pub(super) fn top_walk(&self, c: Caller, path: &str) -> Result<Option<Attr>, FsError> {
        let root = self.top_root()?;
        let mut cur: Option<Attr> = None;
        for comp in path.split('/').filter(|c| !c.is_empty()) {
            let at = cur.as_ref().map_or(root, |a| a.ino);
            let next = self.top.lookup(c, at, OsStr::new(comp));
            if let Some(a) = cur.take() {
                // the child holds its parent in the top's table while it is known
                let forget_later = a.ino;
                match next {
                    Ok(n) => {
                        self.top.forget(forget_later, 1);
                        cur = Some(n);
                        continue;
                    }
                    Err(e) => {
                        self.top.forget(forget_later, 1);
                        return if crate::fs::core::is_not_found(&e) || gone(&e) {
                            Ok(None)
                        } else {
                            Err(e)
                        };
                    }
                }
            }
            match next {
                Ok(n) => cur = Some(n),
                Err(e) if crate::fs::core::is_not_found(&e) || gone(&e) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(cur)
    }

    /// The top's attributes at `path` (no lookup kept: for checks only).
    pub(super) fn top_at(&self, c: Caller, path: &str) -> Result<Option<Attr>, FsError> {
        let a = self.top_walk(c, path)?;
        if let Some(a) = &a {
            self.top.forget(a.ino, 1);
        }
        Ok(a)
    }

    /// The top inode of TARGET's root.
    pub(super) fn top_root(&self) -> Result<u64, FsError> {
        self.node(ROOT)?.top.map(|t| t.0).ok_or(FsError::NotFound)
    }

    /// The names of top folder `pt`.
    pub(super) fn top_names(&self, c: Caller, pt: u64) -> Result<Vec<DirItem>, FsError> {
        let fh = self.top.opendir(c, pt)?;
        let mut out = Vec::new();
        let r = (|| {
            let mut off = 0;
            loop {
                let batch = self.top.readdir(c, fh, off)?;
                if batch.is_empty() {
                    return Ok(());
                }
                for (next, it) in batch {
                    off = next;
                    if it.name != "." && it.name != ".." {
                        out.push(it);
                    }
                }
            }
        })();
        let _ = self.top.releasedir(c, fh);
        r.map(|()| out)
    }

    /// True when the node at union folder `ino` is an exploded GAF/TNT (or another asset)
    /// rather than a folder of the merged tree: its contents come from one layer only.
    pub(super) fn opaque(u: &UNode) -> bool {
        match &u.key {
            Key::Dir(_) => u.name.to_str().is_some_and(crate::fs::core::is_asset_name),
            _ => true,
        }
    }

    /// The current layer inodes of union folder-or-asset `ino`: refreshed from its parent
    /// when the top changed since it was last checked (or `force`). `Stale` when the path
    /// no longer shows a folder.
    pub(super) fn dir_layers(
        &self,
        c: Caller,
        ino: u64,
        force: bool,
    ) -> Result<(Option<u64>, Option<u64>), FsError> {
        self.dir_layers_at(c, ino, force, 0)
    }

    fn dir_layers_at(
        &self,
        c: Caller,
        ino: u64,
        force: bool,
        depth: usize,
    ) -> Result<(Option<u64>, Option<u64>), FsError> {
        if depth > MAX_DEPTH {
            return Err(FsError::Invalid("folders nested too deeply".into()));
        }
        let u = self.node(ino)?;
        let (t, s) = (u.top.map(|x| x.0), u.stock.map(|x| x.0));
        if ino == ROOT {
            if force {
                self.refresh_root(c)?;
                let r = self.node(ROOT)?;
                return Ok((r.top.map(|x| x.0), r.stock.map(|x| x.0)));
            }
            return Ok((t, s));
        }
        let Key::Dir(_) = u.key else {
            return Err(FsError::Invalid("not a folder of the merged tree".into()));
        };
        if !force && (u.epoch == self.epoch() || t.is_some()) {
            return Ok((t, s));
        }
        let (pt, ps) = self.dir_layers_at(c, u.parent, false, depth + 1)?;
        let top_child = match pt {
            Some(pt) => match self.top.lookup(c, pt, &u.name) {
                Ok(a) if a.kind == FileKind::Dir => Some(a.ino),
                Ok(a) => {
                    self.top.forget(a.ino, 1);
                    return Err(FsError::Stale);
                }
                Err(e) if gone(&e) => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        let again = force || s.is_none();
        let stock_child = match (ps, again) {
            (Some(ps), true) => match self.stock.lookup(c, ps, &u.name) {
                Ok(a) if a.kind == FileKind::Dir => Some(a.ino),
                Ok(a) => {
                    self.stock.forget(a.ino, 1);
                    None
                }
                Err(_) => None,
            },
            (_, false) => s,
            (None, true) => None,
        };
        if top_child.is_none() && stock_child.is_none() {
            return Err(FsError::Stale);
        }
        let slot = |x: Option<u64>| x.map_or(Slot::Clear, Slot::Set);
        self.intern(
            u.key.clone(),
            u.parent,
            &u.name,
            slot(top_child),
            if again { slot(stock_child) } else { Slot::Keep },
            true,
        );
        Ok((top_child, stock_child))
    }

    /// Looks TARGET's root up again in the top (an archive TARGET's directory after a
    /// change of generation).
    fn refresh_root(&self, c: Caller) -> Result<(), FsError> {
        let Target::Archive(p) = &self.target else {
            return Ok(());
        };
        let a = self
            .top
            .lookup(c, ROOT, p.file_name().unwrap_or_default())?;
        let mut n = lock(&self.nodes);
        if let Some(r) = n.map.get_mut(&ROOT) {
            r.top = Some((a.ino, 0));
        }
        n.top_rev.insert(a.ino, ROOT);
        Ok(())
    }

    /// Whether the top now holds the path of stock node `u` (checked once per change of
    /// the top): `Stale` when it does (the kernel looks the path up again and finds the
    /// mod's version).
    pub(super) fn check_stock(&self, c: Caller, ino: u64, u: &UNode) -> Result<(), FsError> {
        let now = self.epoch();
        if u.epoch == now {
            return Ok(());
        }
        if self.top_at(c, &u.path)?.is_some() {
            return Err(FsError::Stale);
        }
        if let Some(x) = lock(&self.nodes).map.get_mut(&ino) {
            x.epoch = now;
        }
        Ok(())
    }

    /// The layer serving union node `ino` now: `(true, top inode)` or `(false, stock
    /// inode)`.
    pub(super) fn layer(&self, c: Caller, ino: u64) -> Result<(bool, u64), FsError> {
        let u = self.node(ino)?;
        match &u.key {
            Key::Top(t) => Ok((true, *t)),
            Key::Stock(s) => match self.check_stock(c, ino, &u) {
                Ok(()) => Ok((false, *s)),
                // copied up since (the GAF it lies in, by a write beside it)
                Err(FsError::Stale) => self.reroute_to_top(c, ino, &u),
                Err(e) => Err(e),
            },
            Key::Dir(_) => match self.dir_layers(c, ino, false)? {
                (Some(t), _) => Ok((true, t)),
                (None, Some(s)) => Ok((false, s)),
                (None, None) => Err(FsError::Stale),
            },
        }
    }

    /// Stock node `ino` whose path the top holds now (copied up: a write into the GAF or
    /// map it lies in): served by the top from now on under the same union inode, so an
    /// inode the kernel holds (a process's working folder, an open file) stays valid.
    /// `Stale` when the path is gone, or the top's inode has a union node of its own (the
    /// kernel then looks the name up again).
    fn reroute_to_top(&self, c: Caller, ino: u64, u: &UNode) -> Result<(bool, u64), FsError> {
        let Some(a) = self.top_walk(c, &u.path)? else {
            return Err(FsError::Stale);
        };
        let t = a.ino;
        let mut stale: Vec<(bool, u64, u64)> = Vec::new();
        {
            let mut n = lock(&self.nodes);
            let taken = n.by_key.get(&Key::Top(t)).is_some_and(|&o| o != ino);
            let same = n.map.get(&ino).is_some_and(|x| x.key == u.key);
            if taken || !same {
                drop(n);
                self.top.forget(t, 1);
                return Err(FsError::Stale);
            }
            n.by_key.remove(&u.key);
            n.by_key.insert(Key::Top(t), ino);
            n.top_rev.insert(t, ino);
            if let Some(x) = n.map.get_mut(&ino) {
                x.key = Key::Top(t);
                if let Some((o, l)) = x.top.replace((t, 1)) {
                    stale.push((true, o, l));
                }
                if let Some((o, l)) = x.stock.take() {
                    stale.push((false, o, l));
                }
            }
        }
        self.forget_layers(&stale);
        log::debug!("{}: served by the mod now", u.path);
        Ok((true, t))
    }

    /// Makes sure folder `path` (shown spelling) exists in the top, creating what is
    /// missing (with the spelling the top already has for a component, if any); returns
    /// its top inode with one lookup the caller owns (`None`: the root, nothing to forget).
    /// The folders made belong to `c`, the caller of the request.
    pub(super) fn mkdir_top(&self, c: Caller, path: &str) -> Result<Option<u64>, FsError> {
        let root = self.top_root()?;
        let mut cur: Option<u64> = None;
        for comp in path.split('/').filter(|c| !c.is_empty()) {
            let at = cur.unwrap_or(root);
            let name = OsStr::new(comp);
            let mut found = match self.top.lookup(c, at, name) {
                Ok(a) => Some(a),
                Err(e) if crate::fs::core::is_not_found(&e) => None,
                Err(e) => return Err(e),
            };
            if found.is_none() {
                // another spelling the top already has
                let twin = self.top_names(c, at)?.into_iter().find(|d| {
                    d.name
                        .to_str()
                        .is_some_and(|n| n.eq_ignore_ascii_case(comp))
                });
                if let Some(d) = twin {
                    found = self.top.lookup(c, at, &d.name).ok();
                }
            }
            let next = match found {
                Some(a) if a.kind == FileKind::Dir => a.ino,
                Some(a) => {
                    self.top.forget(a.ino, 1);
                    if let Some(c) = cur {
                        self.top.forget(c, 1);
                    }
                    return Err(FsError::NotDir);
                }
                None => {
                    let a = self.top.mkdir(c, NewNode::new(at, name, 0o755, 0o022))?;
                    self.bump();
                    a.ino
                }
            };
            if let Some(c) = cur {
                self.top.forget(c, 1);
            }
            cur = Some(next);
        }
        Ok(cur)
    }

    /// Copies the stock file at or above `path` (the file itself, or the GAF/TNT a path of
    /// its exploded view lies in) into the top, at the stock view's spelling; a stock-only
    /// folder is made in the top. Nothing is done when the top already holds the path.
    /// What is made belongs to `c`, the caller of the request.
    pub(super) fn copy_up(&self, c: Caller, path: &str) -> Result<(), FsError> {
        let _one = lock(&self.copying);
        if self.top_at(c, path)?.is_some() {
            return Ok(());
        }
        let Some(file) = self.stock.file_at(path) else {
            // a folder of the stock view only
            let shown = self
                .stock
                .shown_path(path)
                .unwrap_or_else(|| path.to_string());
            if let Some(d) = self.mkdir_top(c, &shown)? {
                self.top.forget(d, 1);
            }
            return Ok(());
        };
        if self.top_at(c, &file)?.is_some() {
            return Ok(());
        }
        let (bytes, meta) = self.stock.raw_file(&file)?;
        let (dir, name) = file.rsplit_once('/').unwrap_or(("", file.as_str()));
        let held = self.mkdir_top(c, dir)?;
        let pt = match held {
            Some(p) => p,
            None => self.top_root()?,
        };
        let r = self.write_top(c, pt, name, &bytes, &meta);
        if let Some(p) = held {
            self.top.forget(p, 1);
        }
        r?;
        log::info!(
            "{file}: copied into the mod {} (from {})",
            self.target.path().display(),
            self.stock
                .sources_at(&file)
                .first()
                .cloned()
                .unwrap_or_default()
        );
        Ok(())
    }

    /// Writes `bytes` as new file `name` of top folder `pt` (a copy-up of a stock file
    /// whose source has `meta`).
    fn write_top(
        &self,
        c: Caller,
        pt: u64,
        name: &str,
        bytes: &[u8],
        meta: &std::fs::Metadata,
    ) -> Result<(), FsError> {
        use std::os::unix::fs::PermissionsExt;
        let mode = (meta.permissions().mode() & 0o555) | 0o644;
        let (a, o) = self.top.create(
            c,
            NewNode::new(pt, OsStr::new(name), libc::S_IFREG | mode, 0),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
        )?;
        let written = (|| {
            let mut off = 0usize;
            while off < bytes.len() {
                let end = (off + (1 << 20)).min(bytes.len());
                let chunk = bytes.get(off..end).unwrap_or_default();
                let n = self.top.write(c, o.fh, off as u64, chunk)? as usize;
                if n == 0 {
                    return Err(FsError::Invalid("short write".into()));
                }
                off += n;
            }
            self.top.flush(c, o.fh)
        })();
        let closed = self.top.release(c, o.fh);
        self.top.forget(a.ino, 1);
        self.bump();
        written?;
        closed
    }

    /// Copies union node `ino` up (see [`OverlayCore::copy_up`]) and returns its top
    /// inode.
    pub(super) fn up(&self, c: Caller, ino: u64) -> Result<TopIno<'_>, FsError> {
        let u = self.node(ino)?;
        let own = |ino| TopIno {
            core: self,
            ino,
            held: false,
        };
        if let Key::Top(t) = u.key {
            return Ok(own(t));
        }
        if let Key::Dir(_) = u.key {
            if let (Some(t), _) = self.dir_layers(c, ino, false)? {
                return Ok(own(t));
            }
        }
        self.copy_up(c, &u.path)?;
        if let Key::Dir(_) = u.key {
            if let (Some(t), _) = self.dir_layers(c, ino, true)? {
                return Ok(own(t));
            }
            return Err(FsError::Stale);
        }
        // a stock file or a node inside a stock GAF/TNT: its inode in the top now, held
        // while the operation forwarded uses it
        let t = self.top_walk(c, &u.path)?.ok_or(FsError::Stale)?;
        Ok(TopIno {
            core: self,
            ino: t.ino,
            held: true,
        })
    }

    /// `ino` as a [`TopIno`] a union node holds (nothing to give back).
    pub(super) fn up_own(&self, ino: u64) -> TopIno<'_> {
        TopIno {
            core: self,
            ino,
            held: false,
        }
    }

    /// The top folder to create `name`'s siblings in for union folder `parent`, made (or
    /// copied up) when the top has none yet. `EEXIST` when the merged folder shows a name
    /// that differs from `name` only in letter case (TA would see them as one file).
    pub(super) fn parent_for_new(
        &self,
        c: Caller,
        parent: u64,
        name: &OsStr,
    ) -> Result<TopIno<'_>, FsError> {
        let u = self.node(parent)?;
        // nothing is copied into the mod for a name no build reads
        let path = join(&u.path, &name.to_string_lossy());
        if !crate::view::accepts_writes_within(&path, true) {
            return Err(FsError::ReadOnly("no build reads this file"));
        }
        if !Self::opaque(&u) {
            if let (Some(n), Ok((_, ps))) = (name.to_str(), self.dir_layers(c, parent, false)) {
                let twin_stock = ps.and_then(|ps| {
                    let a = self.stock.lookup(c, ps, name).ok();
                    if let Some(a) = a {
                        self.stock.forget(a.ino, 1);
                        return None;
                    }
                    self.stock
                        .shown_path(&join(&u.path, n))
                        .filter(|shown| shown.rsplit('/').next() != Some(n))
                });
                if let Some(t) = twin_stock {
                    log::info!("{}: the view shows {t} (letter case)", join(&u.path, n));
                    return Err(FsError::Exists);
                }
            }
        }
        self.up(c, parent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The folders a copy-up makes in the mod belong to the caller of the request that
    /// caused it, whatever the request (here a `create` beside a stock file).
    #[test]
    fn a_copy_up_makes_its_folders_as_the_caller_of_the_request() {
        use std::os::unix::fs::MetadataExt;
        if crate::sys::euid() != 0 {
            eprintln!("skipped: only root can make files for another user");
            return;
        }
        let g = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(g.path().join("units")).unwrap();
        std::fs::write(g.path().join("units/ARMCOM.FBI"), b"[UNITINFO]{}").unwrap();
        let m = g.path().join("mymod");
        std::fs::create_dir(&m).unwrap();
        let o = OverlayCore::new(
            g.path(),
            Target::Folder(m.clone()),
            MountOptions::default(),
            Priority::default(),
            None,
        )
        .unwrap();
        let units = o.lookup(Caller::root(), ROOT, OsStr::new("units")).unwrap();
        let user = Caller::of(4321, 4322);
        let n = NewNode::new(
            units.ino,
            OsStr::new("NEW.FBI"),
            libc::S_IFREG | 0o644,
            0o022,
        );
        let (_, h) = o.create(user, n, libc::O_WRONLY).unwrap();
        o.release(user, h.fh).unwrap();
        for made in [m.join("units"), m.join("units/NEW.FBI")] {
            let md = std::fs::metadata(&made).unwrap();
            assert_eq!((md.uid(), md.gid()), (4321, 4322), "{}", made.display());
        }
    }

    #[test]
    fn a_missing_target_is_made_below_what_exists_and_nothing_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let t = prepare_target(&d.path().join("a/b/mods/x.ufo")).unwrap();
        assert!(matches!(t, Target::Archive(_)));
        let made = std::fs::read(d.path().join("a/b/mods/x.ufo")).unwrap();
        crate::formats::hpi::parse(&made, &Default::default()).unwrap();
        let t = prepare_target(&d.path().join("a/c/folder")).unwrap();
        assert!(matches!(t, Target::Folder(_)));
        assert!(d.path().join("a/c/folder").is_dir());
        // an entry that appeared meanwhile is kept, and no temporary file is left
        let dir = crate::sys::open_dir_path(&d.path().join("a/b/mods")).unwrap();
        std::fs::write(d.path().join("a/b/mods/y.ufo"), b"theirs").unwrap();
        let e = create_new_at(dir.as_fd(), OsStr::new("y.ufo"), b"ours").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
        assert_eq!(
            std::fs::read(d.path().join("a/b/mods/y.ufo")).unwrap(),
            b"theirs"
        );
        let names: Vec<_> = std::fs::read_dir(d.path().join("a/b/mods"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // a symlink where a folder is to be entered is not followed
        std::os::unix::fs::symlink(d.path().join("a/c"), d.path().join("a/link")).unwrap();
        let top = crate::sys::open_dir_path(&d.path().join("a")).unwrap();
        let e = crate::sys::open_dir_beneath(top.as_fd(), Path::new("link")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
    }
}
