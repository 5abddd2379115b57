//! An HPI archive (`.hpi .ufo .ccx .gp3 .gpf`) as a directory of its members, each GAF/TNT
//! member shown as its own exploded view.
//!
//! Everything is on demand: [`ArchiveView::new`] parses only the archive's directory
//! ([`ArchiveView::from_file`] reads only it from the file, and each member's chunks when the
//! member is needed, by `pread`: the archive is never read whole); a
//! GAF/TNT member (a *part*) is decompressed and decoded the first time something inside it
//! is asked for ([`View::part_entries`], [`View::render`]); a plain member is decompressed
//! when rendered. Listing needs no decompression (sizes come from the archive's directory,
//! [`View::size_hint`]); [`View::shallow`] gives the directory with every part listed as a
//! folder, so a caller can expand parts one by one.

use super::{lock, safe_component, AssetKind, Entry, View, ViewError};
use crate::formats::hpi::{self, Archive, FileInfo, HpiLimits, Source};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, TryLockError};

/// A writer that compares what is written with what `other` reads, failing the write at the
/// first difference: a stream (a member as it decompresses) compared with another without
/// holding either whole. `other` is read only while they agree.
pub(crate) struct SameAs<'a> {
    other: &'a mut dyn Read,
    buf: Vec<u8>,
    differs: bool,
    err: Option<std::io::Error>,
}

impl<'a> SameAs<'a> {
    /// Compares with `other`.
    pub(crate) fn new(other: &'a mut dyn Read) -> SameAs<'a> {
        SameAs {
            other,
            buf: Vec::new(),
            differs: false,
            err: None,
        }
    }

    /// Whether the stream written (`wrote`: how writing it ended) was exactly `other`: the
    /// same bytes and nothing left in `other`. Errors: reading `other` (`Err(Ok(_))`), or
    /// the writing's own (`Err(Err(_))`).
    pub(crate) fn verdict<T, E>(
        self,
        wrote: Result<T, E>,
    ) -> Result<bool, Result<std::io::Error, E>> {
        if self.differs {
            return Ok(false);
        }
        if let Some(e) = self.err {
            return Err(Ok(e));
        }
        wrote.map_err(Err)?;
        // nothing may follow
        let mut one = [0u8; 1];
        loop {
            match self.other.read(&mut one) {
                Ok(0) => return Ok(true),
                Ok(_) => return Ok(false),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Ok(e)),
            }
        }
    }
}

impl Write for SameAs<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.resize(b.len(), 0);
        match self.other.read_exact(&mut self.buf) {
            Ok(()) if self.buf == b => Ok(b.len()),
            Ok(()) => {
                self.differs = true;
                Err(std::io::Error::other("differs"))
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                self.differs = true;
                Err(std::io::Error::other("differs"))
            }
            Err(e) => {
                let copy = std::io::Error::new(e.kind(), e.to_string());
                self.err = Some(e);
                Err(copy)
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// An archive file read by range (`pread`): the [`Source`] the CLI, the mount and the
/// merged view read archives through. The length is the file's when it was opened.
#[derive(Debug)]
pub struct FileSource {
    file: File,
    len: u64,
}

impl FileSource {
    /// Opens `path` for reading by range.
    pub fn open(path: &Path) -> std::io::Result<FileSource> {
        FileSource::new(File::open(path)?)
    }

    /// Reads `file` by range.
    pub fn new(file: File) -> std::io::Result<FileSource> {
        let len = file.metadata()?.len();
        Ok(FileSource { file, len })
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl Source for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }
}

/// A [`Source`] read through one window of [`ReadAhead::WINDOW`] bytes: the small reads a
/// directory parse makes in file order (a v1 archive's chunk table of each member) cost one
/// `pread` per window instead of one each. Reads of a window or more go straight through.
struct ReadAhead<'a> {
    src: &'a dyn Source,
    /// The window's first offset and bytes.
    window: std::cell::RefCell<(u64, Vec<u8>)>,
}

impl<'a> ReadAhead<'a> {
    const WINDOW: u64 = 256 << 10;

    fn new(src: &'a dyn Source) -> ReadAhead<'a> {
        ReadAhead {
            src,
            window: std::cell::RefCell::new((0, Vec::new())),
        }
    }
}

impl Source for ReadAhead<'_> {
    fn len(&self) -> u64 {
        self.src.len()
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let want = buf.len() as u64;
        if want >= Self::WINDOW {
            return self.src.read_at(offset, buf);
        }
        let mut w = self.window.borrow_mut();
        let inside = |w: &(u64, Vec<u8>)| offset >= w.0 && offset + want <= w.0 + w.1.len() as u64;
        if !inside(&w) {
            let len = Self::WINDOW.min(self.src.len().saturating_sub(offset));
            if len < want {
                // past the end: the source's own error
                return self.src.read_at(offset, buf);
            }
            w.1.resize(len as usize, 0);
            w.0 = offset;
            let (_, bytes) = &mut *w;
            if let Err(e) = self.src.read_at(offset, bytes) {
                w.1.clear();
                return Err(e);
            }
        }
        let from = (offset - w.0) as usize;
        match w.1.get(from..from + buf.len()) {
            Some(b) => {
                buf.copy_from_slice(b);
                Ok(())
            }
            None => self.src.read_at(offset, buf),
        }
    }
}

/// Where an [`ArchiveView`] reads the archive from.
enum Backing {
    /// The whole archive in memory.
    Bytes(Vec<u8>),
    /// The archive file, read by range.
    File(FileSource),
}

impl Backing {
    fn source(&self) -> &dyn Source {
        match self {
            Backing::Bytes(b) => b,
            Backing::File(f) => f,
        }
    }
}

/// True for the file names shown as archive directories (any letter case).
pub fn is_archive_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".hpi", ".ufo", ".ccx", ".gp3", ".gpf"]
        .iter()
        .any(|e| lower.ends_with(e))
}

/// The path of every entry of `a` as shown: components made with [`safe_component`]; a
/// name that collides with an earlier sibling (exactly or in another letter case) gets `~N`
/// appended (N = 2, 3, …), as `tafs hpi extract` does for exact collisions.
pub fn shown_paths(a: &Archive) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(a.entries.len());
    let mut taken: HashSet<String> = HashSet::with_capacity(a.entries.len());
    for e in &a.entries {
        let base = e
            .parent
            .and_then(|p| out.get(p).cloned())
            .unwrap_or_default();
        let name = safe_component(&e.name);
        let join = |n: &str| {
            if base.is_empty() {
                n.to_string()
            } else {
                format!("{base}/{n}")
            }
        };
        let mut p = join(&name);
        let mut n = 2;
        let mut key = p.to_ascii_lowercase();
        while taken.contains(&key) {
            p = join(&format!("{name}~{n}"));
            key = p.to_ascii_lowercase();
            n += 1;
        }
        taken.insert(key);
        out.push(p);
    }
    out
}

/// Opens the view of a GAF/TNT member: kind, decompressed bytes (which the view may keep),
/// the member's shown path,
/// and for a GAF the same-named `.pcx` member beside it (shown name, bytes) if there is one
/// (the first candidate of [`crate::game::palette::resolve`], which only sees real files).
pub type MemberOpener = Box<
    dyn Fn(
            AssetKind,
            &crate::view::SharedBytes,
            &str,
            Option<(&str, &[u8])>,
        ) -> Result<Box<dyn View>, ViewError>
        + Send
        + Sync,
>;

/// Why a part gets no room to be decoded in.
#[derive(Debug)]
pub enum NoRoom {
    /// It alone needs more than the whole budget: shown as the plain file it is, for good.
    Never(String),
    /// Not now (the budget is held by views in use): refused for this request only, tried
    /// again at the next.
    Now,
}

/// Room to decode a part in, asked before it is decoded: given its kind, its decompressed
/// bytes (the headers say what decoding them holds), whether it may wait for room held by
/// views in use, and a way to drop a part this archive keeps (false when none is left), the
/// lease of what the decode and the view hold, given back when the view is dropped.
pub type PartLeaser = Box<
    dyn Fn(
            AssetKind,
            &[u8],
            bool,
            &mut dyn FnMut() -> bool,
        ) -> Result<Box<dyn std::any::Any + Send + Sync>, NoRoom>
        + Send
        + Sync,
>;

/// A GAF/TNT member of an archive view.
#[derive(Default)]
struct Part {
    /// The entries inside it once decoded; `None` when it does not decode (it is then the
    /// plain member file). Kept for the view's life: names only.
    entries: OnceLock<Option<Vec<Entry>>>,
    /// Its decoded view while kept, with the lease of what it holds.
    view: Mutex<Option<KeptPart>>,
}

type KeptPart = (Arc<dyn View>, Option<Box<dyn std::any::Any + Send + Sync>>);

/// A decoded part and a path inside it.
type Nested<'p> = (Arc<dyn View>, &'p str);

/// The sibling of GAF member `e` (shown at `p`) named like it with `.pcx` (any case): its
/// shown name and record; the first by name when several match.
pub fn beside_pcx<'a>(
    archive: &'a Archive,
    paths: &[String],
    e: &hpi::Entry,
    p: &str,
) -> Option<(String, &'a FileInfo)> {
    let name = p.rsplit('/').next().unwrap_or(p);
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let want = format!("{stem}.pcx");
    let mut hits: Vec<(String, &FileInfo)> = archive
        .children(e.parent)
        .filter_map(|j| {
            let hpi::EntryKind::File(f) = &archive.entries.get(j)?.kind else {
                return None;
            };
            let shown = paths.get(j)?;
            let n = shown.rsplit('/').next().unwrap_or(shown);
            n.eq_ignore_ascii_case(&want).then(|| (n.to_string(), f))
        })
        .collect();
    hits.sort_by(|a, b| a.0.cmp(&b.0));
    hits.into_iter().next()
}

/// The view of one archive. Holds the archive's bytes or its open file; members are read,
/// decompressed, and GAF/TNT members decoded, on demand.
pub struct ArchiveView {
    backing: Backing,
    archive: Archive,
    limits: HpiLimits,
    /// Shown path of every entry, in directory order.
    paths: Vec<String>,
    /// The directory with every part listed as a folder.
    shallow: Vec<Entry>,
    /// Shown path of every file member → its index in the archive's entries.
    files: HashMap<String, usize>,
    /// Shown path of every GAF/TNT member (by name) → its entries and, while kept, its view.
    parts: HashMap<String, Part>,
    open_member: MemberOpener,
    /// Room for decoded parts (none given: every part is kept once decoded).
    leaser: Option<PartLeaser>,
    /// The parts kept, least recently used first.
    kept: Mutex<lru::LruCache<String, ()>>,
    /// Every entry with every part expanded (decodes every part; [`View::entries`]).
    full: OnceLock<Vec<Entry>>,
}

impl ArchiveView {
    /// Parses the archive's directory; nothing is decompressed. GAF/TNT members are decoded
    /// with `open_member` when first needed; one that does not decode is shown as the plain
    /// file it is.
    pub fn new(
        data: Vec<u8>,
        limits: HpiLimits,
        open_member: MemberOpener,
    ) -> Result<ArchiveView, ViewError> {
        ArchiveView::with_backing(Backing::Bytes(data), limits, open_member)
    }

    /// Like [`Self::new`], reading the archive file by range: only the header and directory
    /// now, each member's chunks when the member is needed. Members above
    /// `limits.max_member_size` are refused with an error naming the limit.
    pub fn from_file(
        file: FileSource,
        limits: HpiLimits,
        open_member: MemberOpener,
    ) -> Result<ArchiveView, ViewError> {
        ArchiveView::with_backing(Backing::File(file), limits, open_member)
    }

    fn with_backing(
        backing: Backing,
        limits: HpiLimits,
        open_member: MemberOpener,
    ) -> Result<ArchiveView, ViewError> {
        let archive = hpi::parse_from(&ReadAhead::new(backing.source()), &limits)
            .map_err(|e| ViewError::invalid("archive", e.to_string()))?;
        let paths = shown_paths(&archive);
        let mut shallow = Vec::with_capacity(paths.len());
        let mut files = HashMap::with_capacity(paths.len());
        let mut parts = HashMap::new();
        for (i, (e, p)) in archive.entries.iter().zip(&paths).enumerate() {
            match &e.kind {
                hpi::EntryKind::Dir => shallow.push(Entry::dir(p.clone())),
                hpi::EntryKind::File(_) => {
                    files.insert(p.clone(), i);
                    let name = p.rsplit('/').next().unwrap_or(p);
                    if AssetKind::from_name(name).is_some() {
                        parts.insert(p.clone(), Part::default());
                        shallow.push(Entry::dir(p.clone()));
                    } else {
                        shallow.push(Entry::file(p.clone()));
                    }
                }
            }
        }
        Ok(ArchiveView {
            backing,
            archive,
            limits,
            paths,
            shallow,
            files,
            parts,
            open_member,
            leaser: None,
            kept: Mutex::new(lru::LruCache::unbounded()),
            full: OnceLock::new(),
        })
    }

    /// Decodes parts only with room from `leaser`, leased before decoding: when it gives
    /// none, the parts this view kept longest ago are dropped (decoded again when needed)
    /// until it does; a part that alone needs more than the budget is shown as the plain
    /// file it is, and one that finds no room now is refused for the request
    /// ([`ViewError::NoRoom`]) and tried again at the next. Memory then stays bounded
    /// whatever the archive holds.
    pub fn with_leaser(mut self, leaser: PartLeaser) -> ArchiveView {
        self.leaser = Some(leaser);
        self
    }

    /// Room to decode a part of `kind` from `bytes`, dropping kept parts (least recently
    /// used first) while there is none; `Ok(None)` without a leaser.
    fn room(
        &self,
        kind: AssetKind,
        bytes: &[u8],
        wait: bool,
    ) -> Result<Option<Box<dyn std::any::Any + Send + Sync>>, NoRoom> {
        let Some(leaser) = &self.leaser else {
            return Ok(None);
        };
        // each kept part is tried once a call; one in use (locked, or its view held by a
        // request: dropping it would free nothing) stays kept and is tried last
        let mut drop_one = || {
            let n = lock(&self.kept).len();
            for _ in 0..n {
                let Some((victim, ())) = lock(&self.kept).pop_lru() else {
                    return false;
                };
                let Some(part) = self.parts.get(&victim) else {
                    continue;
                };
                let held = match part.view.try_lock() {
                    Ok(mut g) if g.as_ref().is_some_and(|k| Arc::strong_count(&k.0) == 1) => {
                        g.take()
                    }
                    Ok(g) if g.is_none() => continue,
                    Err(TryLockError::Poisoned(p)) => p.into_inner().take(),
                    Ok(_) | Err(TryLockError::WouldBlock) => {
                        lock(&self.kept).push(victim, ());
                        continue;
                    }
                };
                // (dropped here, after the part's lock: its lease is given back)
                if held.is_some() {
                    return true;
                }
            }
            false
        };
        leaser(kind, bytes, wait, &mut drop_one).map(Some)
    }

    /// The number of parts whose view is kept now.
    pub fn kept_parts(&self) -> usize {
        lock(&self.kept).len()
    }

    /// The parsed archive.
    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// The archive's bytes when the view holds them ([`Self::new`]); empty for a view that
    /// reads its file by range ([`Self::from_file`]).
    pub fn data(&self) -> &[u8] {
        match &self.backing {
            Backing::Bytes(b) => b,
            Backing::File(_) => &[],
        }
    }

    /// Where the archive's bytes are read from (memory or the file).
    pub fn source(&self) -> &dyn Source {
        self.backing.source()
    }

    /// The archive file the view reads by range ([`Self::from_file`]); `None` for a view
    /// of bytes.
    pub fn file(&self) -> Option<&File> {
        match &self.backing {
            Backing::Bytes(_) => None,
            Backing::File(f) => Some(f.file()),
        }
    }

    /// The decompressed size of the member shown at `path`, from the directory.
    pub fn member_size(&self, path: &str) -> Option<u64> {
        self.info(path).map(|f| u64::from(f.size))
    }

    /// Whether the member shown at `path` holds exactly the bytes `other` gives, compared
    /// chunk by chunk as it is decompressed (neither is held whole; compare
    /// [`Self::member_size`] first to skip the work). `other` is read only while they agree.
    pub fn member_equals(&self, path: &str, other: &mut dyn Read) -> Result<bool, ViewError> {
        let mut same = SameAs::new(other);
        let wrote = self.member_to(path, &mut same);
        same.verdict(wrote).map_err(|e| match e {
            Ok(source) => ViewError::Io {
                path: path.into(),
                source,
            },
            Err(e) => e,
        })
    }

    /// The stored bytes of member `f` of [`Self::archive`] (for a repack that keeps it).
    pub fn stored_member(&self, f: &FileInfo) -> Result<hpi::StoredMember, hpi::HpiError> {
        self.archive.stored_member_from(self.source(), f)
    }

    /// The shown path of every entry of [`Self::archive`], index for index.
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// The index in the archive's entries of the member or folder shown at `path`.
    pub fn index_of(&self, path: &str) -> Option<usize> {
        self.files
            .get(path)
            .copied()
            .or_else(|| self.paths.iter().position(|p| p == path))
    }

    fn info(&self, path: &str) -> Option<&FileInfo> {
        let i = *self.files.get(path)?;
        match &self.archive.entries.get(i)?.kind {
            hpi::EntryKind::File(f) => Some(f),
            hpi::EntryKind::Dir => None,
        }
    }

    /// The decompressed bytes of the member shown at `path`.
    pub fn member_bytes(&self, path: &str) -> Result<Vec<u8>, ViewError> {
        let f = self
            .info(path)
            .ok_or_else(|| ViewError::NotFound(path.to_string()))?;
        self.archive
            .read_from(self.source(), f, &self.limits)
            .map_err(|e| ViewError::invalid(path, e.to_string()))
    }

    /// Writes the member shown at `path` to `out` chunk by chunk (each chunk verified first).
    fn member_to(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        let f = self
            .info(path)
            .ok_or_else(|| ViewError::NotFound(path.to_string()))?;
        // keeps the writer's own error, so that it is reported as I/O, not as the archive's
        struct Keep<'a> {
            out: &'a mut dyn Write,
            err: Option<std::io::Error>,
        }
        impl Write for Keep<'_> {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.out.write(buf).inspect_err(|e| {
                    self.err = Some(std::io::Error::new(e.kind(), e.to_string()));
                })
            }
            fn flush(&mut self) -> std::io::Result<()> {
                self.out.flush()
            }
        }
        let mut keep = Keep { out, err: None };
        let res = self
            .archive
            .read_to(self.source(), f, &self.limits, &mut keep);
        match (res, keep.err) {
            (Ok(_), _) => Ok(()),
            (Err(_), Some(source)) => Err(ViewError::Io {
                path: path.into(),
                source,
            }),
            (Err(e), None) => Err(ViewError::invalid(path, e.to_string())),
        }
    }

    /// For the GAF member shown at `path`: the same-named `.pcx` member beside it (shown
    /// name, bytes), the first link of its palette chain.
    pub fn beside_pcx(&self, path: &str) -> Option<(String, Vec<u8>)> {
        let i = *self.files.get(path)?;
        let e = self.archive.entries.get(i)?;
        let (name, f) = beside_pcx(&self.archive, &self.paths, e, path)?;
        let bytes = self
            .archive
            .read_from(self.source(), f, &self.limits)
            .ok()?;
        Some((name, bytes))
    }

    /// True when `path` is a GAF/TNT member (by name), decoded or not.
    pub fn is_part(&self, path: &str) -> bool {
        self.parts.contains_key(path)
    }

    /// The view of part `path`, decoding it when it is not kept (see
    /// [`ArchiveView::with_leaser`]); `None` when `path` is no part, does not decode, or
    /// finds no room now ([`ArchiveView::try_part`] tells these apart).
    pub fn part(&self, path: &str) -> Option<Arc<dyn View>> {
        self.try_part(path).ok().flatten()
    }

    /// [`ArchiveView::part`]: `Ok(None)` when `path` is no part or does not decode (the
    /// plain member file), `Err(ViewError::NoRoom)` when there is no room to decode it now.
    pub fn try_part(&self, path: &str) -> Result<Option<Arc<dyn View>>, ViewError> {
        self.part_within(path, true)
    }

    /// [`ArchiveView::try_part`] without waiting for room held by views in use (for a
    /// caller holding a lock others may need meanwhile: a commit).
    pub fn part_now(&self, path: &str) -> Result<Option<Arc<dyn View>>, ViewError> {
        self.part_within(path, false)
    }

    fn part_within(&self, path: &str, wait: bool) -> Result<Option<Arc<dyn View>>, ViewError> {
        let Some(part) = self.parts.get(path) else {
            return Ok(None);
        };
        if matches!(part.entries.get(), Some(None)) {
            return Ok(None);
        }
        // one decode of a part at a time: others asking for it wait for this one
        let mut g = lock(&part.view);
        if let Some((v, _)) = g.as_ref() {
            let v = v.clone();
            drop(g);
            lock(&self.kept).promote(path);
            return Ok(Some(v));
        }
        let plain = |why: &dyn std::fmt::Display| {
            log::warn!("{path}: shown as a plain file: {why}");
            let _ = part.entries.set(None);
            Ok(None)
        };
        let name = path.rsplit('/').next().unwrap_or(path);
        let Some(kind) = AssetKind::from_name(name) else {
            return Ok(None);
        };
        let bytes = match self.member_bytes(path) {
            Ok(b) => b,
            Err(err) => return plain(&err),
        };
        // leased before decoding, from the headers: the decode never holds more
        let lease = match self.room(kind, &bytes, wait) {
            Ok(l) => l,
            Err(NoRoom::Never(why)) => return plain(&why),
            Err(NoRoom::Now) => {
                log::warn!("{path}: no room to decode it now");
                return Err(ViewError::NoRoom(path.to_string()));
            }
        };
        let beside = (kind == AssetKind::Gaf)
            .then(|| self.beside_pcx(path))
            .flatten();
        let beside = beside.as_ref().map(|(n, b)| (n.as_str(), b.as_slice()));
        let bytes = crate::view::SharedBytes::from(bytes);
        let view: Arc<dyn View> = match (self.open_member)(kind, &bytes, path, beside) {
            Ok(v) => Arc::from(v),
            Err(err) => return plain(&err),
        };
        let _ = part.entries.set(Some(view.entries().to_vec()));
        *g = Some((view.clone(), lease));
        drop(g);
        lock(&self.kept).put(path.to_string(), ());
        Ok(Some(view))
    }

    /// Whether part `path` is still to be decoded: not tried yet, or refused for lack of
    /// room at the last try (never true once it decoded or showed itself a plain file).
    pub fn part_waits(&self, path: &str) -> bool {
        self.parts
            .get(path)
            .is_some_and(|p| p.entries.get().is_none())
    }

    /// The decoded part holding `path` and the path inside it.
    fn nested_of<'p>(&self, path: &'p str) -> Result<Option<Nested<'p>>, ViewError> {
        for (i, _) in path.match_indices('/') {
            let (Some(prefix), Some(inner)) = (path.get(..i), path.get(i + 1..)) else {
                continue;
            };
            if !self.parts.contains_key(prefix) {
                continue;
            }
            if let Some(v) = self.try_part(prefix)? {
                return Ok(Some((v, inner)));
            }
        }
        Ok(None)
    }

    /// [`ArchiveView::nested_of`] for a part kept decoded, without waiting or decoding.
    fn kept_nested_of<'p>(&self, path: &'p str) -> Option<Nested<'p>> {
        path.match_indices('/').find_map(|(i, _)| {
            let part = self.parts.get(path.get(..i)?)?;
            let v = part.view.try_lock().ok()?.as_ref()?.0.clone();
            Some((v, path.get(i + 1..)?))
        })
    }

    /// A plain member: a file member that is no part, or a part that does not decode (one
    /// refused for lack of room now is not).
    fn plain(&self, path: &str) -> Option<&FileInfo> {
        let f = self.info(path)?;
        (!self.parts.contains_key(path) || matches!(self.try_part(path), Ok(None))).then_some(f)
    }
}

impl View for ArchiveView {
    fn entries(&self) -> &[Entry] {
        self.full.get_or_init(|| {
            // sequential: a part being decoded by another thread is waited for, which must
            // never happen on rayon's pool (the decoder may need the pool itself)
            let mut out = Vec::new();
            for e in &self.shallow {
                match self.part_entries(&e.path) {
                    Some(inner) => {
                        out.push(Entry::dir(e.path.clone()));
                        out.extend(inner.iter().map(|inner| Entry {
                            path: format!("{}/{}", e.path, inner.path),
                            kind: inner.kind,
                        }));
                    }
                    None if self.parts.contains_key(&e.path) => {
                        out.push(Entry::file(e.path.clone()))
                    }
                    None => out.push(e.clone()),
                }
            }
            out
        })
    }

    fn shallow(&self) -> Option<(&[Entry], Vec<&str>)> {
        Some((
            &self.shallow,
            self.parts.keys().map(String::as_str).collect(),
        ))
    }

    fn part_entries(&self, path: &str) -> Option<&[Entry]> {
        let part = self.parts.get(path)?;
        if part.entries.get().is_none() {
            self.part(path)?;
        }
        part.entries.get()?.as_deref()
    }

    fn part_waits(&self, path: &str) -> bool {
        ArchiveView::part_waits(self, path)
    }

    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        if self.plain(path).is_some() {
            return self.member_to(path, out);
        }
        match self.nested_of(path)? {
            Some((v, inner)) => v.render(inner, out),
            None => Err(ViewError::NotFound(path.to_string())),
        }
    }

    /// Inside a part, only a part kept decoded is asked: a hint never decodes one (listing
    /// a part's folder would decode it again for hints its views rarely have).
    fn size_hint(&self, path: &str) -> Option<u64> {
        if let Some(f) = self.plain(path) {
            return Some(u64::from(f.size));
        }
        let (v, inner) = self.kept_nested_of(path)?;
        v.size_hint(inner)
    }
}

impl std::fmt::Debug for ArchiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveView")
            .field("entries", &self.paths.len())
            .field("parts", &self.parts.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_names_any_case() {
        for n in ["a.hpi", "B.UFO", "c.Ccx", "rev31.gp3", "x.GPF"] {
            assert!(is_archive_name(n), "{n}");
        }
        for n in ["a.gaf", "hpi", "a.hpix", "a.zip"] {
            assert!(!is_archive_name(n), "{n}");
        }
    }

    #[test]
    fn paths_sanitised_and_case_duplicates_unique() {
        // The writer refuses case duplicates, so the directory model is made by hand.
        let tree = vec![hpi::Node::dir(
            b"Anims".to_vec(),
            vec![hpi::Node::file(b"a:b".to_vec(), b"1".to_vec())],
        )];
        let data = hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap();
        let mut a = hpi::parse(&data, &HpiLimits::default()).unwrap();
        a.entries.push(hpi::Entry {
            name: b"..".to_vec(),
            parent: None,
            depth: 0,
            kind: hpi::EntryKind::Dir,
        });
        a.entries.push(hpi::Entry {
            name: b"anims".to_vec(),
            parent: None,
            depth: 0,
            kind: hpi::EntryKind::Dir,
        });
        let mut got = shown_paths(&a);
        got.sort();
        assert_eq!(got, ["Anims", "Anims/a_b", "_..", "anims~2"]);
    }

    #[test]
    fn decoded_members_are_kept_only_while_there_is_room() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let gaf = crate::formats::gaf::write(&crate::sample::animated_gaf()).unwrap();
        let tree = vec![hpi::Node::dir(
            b"anims".to_vec(),
            (0..6)
                .map(|i| hpi::Node::file(format!("m{i}.gaf").into_bytes(), gaf.clone()))
                .collect(),
        )];
        let data = hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap();
        let opener: MemberOpener = Box::new(|kind, b, _, _| {
            crate::view::open_shared(kind, b, &crate::view::ViewOptions::default())
        });
        // room for two members' bytes
        struct Held(Arc<AtomicU64>, u64);
        impl Drop for Held {
            fn drop(&mut self) {
                self.0.fetch_sub(self.1, Ordering::SeqCst);
            }
        }
        let used = Arc::new(AtomicU64::new(0));
        let cap = 2 * gaf.len() as u64;
        let u = used.clone();
        let leaser: PartLeaser = Box::new(move |_, bytes, _, drop_own| {
            let n = bytes.len() as u64;
            loop {
                let now = u.fetch_add(n, Ordering::SeqCst);
                if now + n <= cap {
                    return Ok(Box::new(Held(u.clone(), n)));
                }
                u.fetch_sub(n, Ordering::SeqCst);
                if !drop_own() {
                    return Err(NoRoom::Now);
                }
            }
        });
        let v = ArchiveView::new(data, HpiLimits::default(), opener)
            .unwrap()
            .with_leaser(leaser);
        let first = v.part_entries("anims/m0.gaf").unwrap().to_vec();
        for i in 0..6 {
            let p = format!("anims/m{i}.gaf");
            assert_eq!(v.part_entries(&p).unwrap(), &first[..], "{p}");
            assert!(v.kept_parts() <= 2, "{} kept", v.kept_parts());
            assert!(used.load(Ordering::SeqCst) <= cap);
        }
        // a member dropped long ago is decoded again to render its files, the same bytes
        let file = first
            .iter()
            .find(|e| e.kind == crate::view::EntryKind::File)
            .unwrap();
        let a = v
            .render_vec(&format!("anims/m0.gaf/{}", file.path))
            .unwrap();
        let b = v
            .render_vec(&format!("anims/m5.gaf/{}", file.path))
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(v.kept_parts(), 2);
        drop(v);
        assert_eq!(used.load(Ordering::SeqCst), 0, "every lease given back");
    }

    #[test]
    fn size_hints_inside_a_part_never_decode_it() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let gaf = crate::formats::gaf::write(&crate::sample::animated_gaf()).unwrap();
        let pcx = crate::sample::unit_picture_pcx();
        let tree = vec![hpi::Node::dir(
            b"anims".to_vec(),
            vec![
                hpi::Node::file(b"m.gaf".to_vec(), gaf),
                hpi::Node::file(b"p.pcx".to_vec(), pcx),
            ],
        )];
        let data = hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap();
        for room in [false, true] {
            let decodes = Arc::new(AtomicUsize::new(0));
            let d = decodes.clone();
            let opener: MemberOpener = Box::new(move |kind, b, _, _| {
                d.fetch_add(1, Ordering::SeqCst);
                crate::view::open_shared(kind, b, &crate::view::ViewOptions::default())
            });
            // without room for two, each decode drops the one kept before
            let leaser: PartLeaser = Box::new(move |_, _, _, drop_own| {
                if !room {
                    while drop_own() {}
                }
                Ok(Box::new(()) as Box<dyn std::any::Any + Send + Sync>)
            });
            let v = ArchiveView::new(data.clone(), HpiLimits::default(), opener)
                .unwrap()
                .with_leaser(leaser);
            let files: Vec<String> = ["anims/m.gaf", "anims/p.pcx"]
                .iter()
                .flat_map(|p| {
                    let es = v.part_entries(p).unwrap().to_vec();
                    es.into_iter()
                        .filter(|e| e.kind == crate::view::EntryKind::File)
                        .map(move |e| format!("{p}/{}", e.path))
                })
                .collect();
            assert_eq!(
                decodes.load(Ordering::SeqCst),
                2,
                "listed: each decoded once"
            );
            let hints: Vec<Option<u64>> = files.iter().map(|f| v.size_hint(f)).collect();
            assert_eq!(decodes.load(Ordering::SeqCst), 2, "hints decode nothing");
            for (f, hint) in files.iter().zip(hints) {
                // a kept part answers with its own hints (the PCX view knows its sizes;
                // decoded last, it is kept in both cases)
                assert_eq!(hint.is_some(), f.starts_with("anims/p.pcx"), "{f}");
                let n = v.render_vec(f).unwrap().len() as u64;
                assert!(hint.is_none_or(|h| h == n), "{f}");
            }
            // a part that is not kept is decoded again to render (once: then it is kept)
            let rendered = if room { 2 } else { 4 };
            assert_eq!(decodes.load(Ordering::SeqCst), rendered, "room {room}");
        }
    }

    #[test]
    fn a_part_without_room_now_is_refused_and_decodes_later_one_too_large_is_plain() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let pcx = crate::sample::unit_picture_pcx();
        let data = hpi::write(
            &[hpi::Node::file(b"p.pcx".to_vec(), pcx.clone())],
            &hpi::WriteOptions::v1(),
        )
        .unwrap();
        let opener: MemberOpener = Box::new(|kind, b, _, _| {
            crate::view::open_shared(kind, b, &crate::view::ViewOptions::default())
        });
        let full = Arc::new(AtomicBool::new(true));
        let f = full.clone();
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let d = asked.clone();
        // no room while `full`
        let leaser: PartLeaser = Box::new(move |_, _, _, _| {
            d.fetch_add(1, Ordering::SeqCst);
            if f.load(Ordering::SeqCst) {
                return Err(NoRoom::Now);
            }
            Ok(Box::new(()) as Box<dyn std::any::Any + Send + Sync>)
        });
        let v = ArchiveView::new(data, HpiLimits::default(), opener)
            .unwrap()
            .with_leaser(leaser);
        assert!(v.part_waits("p.pcx"));
        assert!(v.part_entries("p.pcx").is_none());
        assert!(v.part_waits("p.pcx"), "not taken for a plain file");
        let e = v.render_vec("p.pcx/image.png").unwrap_err();
        assert!(matches!(e, ViewError::NoRoom(_)), "{e}");
        assert_eq!(v.size_hint("p.pcx"), None, "not served as the plain member");
        assert!(v.part("p.pcx").is_none());
        assert!(matches!(v.try_part("p.pcx"), Err(ViewError::NoRoom(_))));
        // room again: the same member decodes and renders
        full.store(false, Ordering::SeqCst);
        let png = v.render_vec("p.pcx/image.png").unwrap();
        let direct = crate::view::open_shared(
            AssetKind::Pcx,
            &crate::view::SharedBytes::from(pcx.clone()),
            &crate::view::ViewOptions::default(),
        )
        .unwrap()
        .render_vec("image.png")
        .unwrap();
        assert_eq!(png, direct);
        assert!(!v.part_waits("p.pcx"));
        assert!(v.part_entries("p.pcx").is_some());
        assert!(
            asked.load(Ordering::SeqCst) >= 4,
            "asked again at each request"
        );

        // too large for the budget: the plain member, for good
        let data = hpi::write(
            &[hpi::Node::file(b"huge.pcx".to_vec(), pcx.clone())],
            &hpi::WriteOptions::v1(),
        )
        .unwrap();
        let opener: MemberOpener = Box::new(|kind, b, _, _| {
            crate::view::open_shared(kind, b, &crate::view::ViewOptions::default())
        });
        let leaser: PartLeaser = Box::new(|_, _, _, _| Err(NoRoom::Never("needs 99 MiB".into())));
        let v = ArchiveView::new(data, HpiLimits::default(), opener)
            .unwrap()
            .with_leaser(leaser);
        assert!(v.part_entries("huge.pcx").is_none());
        assert!(!v.part_waits("huge.pcx"));
        assert_eq!(v.render_vec("huge.pcx").unwrap(), pcx);
        assert_eq!(v.size_hint("huge.pcx"), Some(pcx.len() as u64));
    }

    #[test]
    fn read_ahead_reads_what_the_source_holds() {
        let data: Vec<u8> = (0..700_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let ra = ReadAhead::new(&data);
        assert_eq!(ra.len(), data.len() as u64);
        // in order, backwards, across a window's end, big, at the very end, past it
        for (at, n) in [
            (0u64, 4usize),
            (10, 100),
            (5, 3),
            (262_140, 8),
            (300_000, 300_000),
            (699_990, 10),
            (699_999, 1),
            (1000, 0),
        ] {
            let mut buf = vec![0; n];
            ra.read_at(at, &mut buf).unwrap();
            assert_eq!(buf, &data[at as usize..at as usize + n], "{at} {n}");
        }
        assert!(ra.read_at(699_995, &mut [0; 10]).is_err());
        // a parse through it reads the same archive
        let tree = vec![hpi::Node::dir(
            b"d".to_vec(),
            (0..300)
                .map(|i| hpi::Node::file(format!("m{i}.txt").into_bytes(), vec![i as u8; 100]))
                .collect(),
        )];
        let bytes = hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap();
        let lim = HpiLimits::default();
        let direct = hpi::parse(&bytes, &lim).unwrap();
        assert_eq!(
            hpi::parse_from(&ReadAhead::new(&bytes), &lim).unwrap(),
            direct
        );
    }

    fn no_parts() -> MemberOpener {
        Box::new(|_, _, p, _| Err(ViewError::invalid(p, "not decoded in this test")))
    }

    #[test]
    fn file_backed_view_reads_like_the_bytes_and_refuses_big_members() {
        let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let tree = vec![
            hpi::Node::file(b"big.bin".to_vec(), big.clone()),
            hpi::Node::dir(
                b"d".to_vec(),
                vec![hpi::Node::file(b"x.tdf".to_vec(), b"[x]".to_vec())],
            ),
        ];
        let data = hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.hpi");
        std::fs::write(&path, &data).unwrap();
        let lim = HpiLimits::default();
        let mem = ArchiveView::new(data.clone(), lim, no_parts()).unwrap();
        let file =
            ArchiveView::from_file(FileSource::open(&path).unwrap(), lim, no_parts()).unwrap();
        assert_eq!(file.archive(), mem.archive());
        assert!(file.data().is_empty());
        for p in ["big.bin", "d/x.tdf"] {
            let mut out = Vec::new();
            file.render(p, &mut out).unwrap();
            assert_eq!(out, mem.member_bytes(p).unwrap());
        }
        assert_eq!(file.member_bytes("big.bin").unwrap(), big);
        assert!(file.file().is_some() && mem.file().is_none());
        assert_eq!(file.member_size("big.bin"), Some(200_000));
        assert!(file.member_equals("big.bin", &mut &big[..]).unwrap());
        let mut other = big.clone();
        other[150_000] ^= 1;
        assert!(!file.member_equals("big.bin", &mut &other[..]).unwrap());
        assert!(!file.member_equals("big.bin", &mut &big[..199_999]).unwrap());
        other[150_000] ^= 1;
        other.push(0);
        assert!(!file.member_equals("big.bin", &mut &other[..]).unwrap());
        assert!(mem.member_equals("d/x.tdf", &mut &b"[x]"[..]).unwrap());
        let small = HpiLimits {
            max_member_size: 100_000,
            ..lim
        };
        let file =
            ArchiveView::from_file(FileSource::open(&path).unwrap(), small, no_parts()).unwrap();
        let e = file.render("big.bin", &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("max_member_size 100000"), "{e}");
        assert_eq!(file.size_hint("big.bin"), Some(200_000));
        file.render("d/x.tdf", &mut Vec::new()).unwrap();
    }
}
