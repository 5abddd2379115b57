//! Archives in the mount: their members decoded on demand (parts of the archive's layout
//! expanded when something inside them, or the folder listing them, is asked for) and
//! write-back into them (SEMANTICS.md, "Archives").

use super::*;
use crate::view::archive::ArchiveView;
use rayon::prelude::*;

/// The options the view of member `member` (shown path) of the archive at `rel_str` is
/// opened with: those of a loose file at that path (game folder found from the path, palette
/// chain resolved in it), except that a same-named `.pcx` beside a GAF, the first link of
/// the chain, is looked up among the archive's members (`beside`).
pub(super) fn member_options(
    game_dir: &Path,
    rel_str: &str,
    kind: AssetKind,
    member: &str,
    beside: Option<(&str, &[u8])>,
) -> ViewOptions {
    let beside_pcx = beside.filter(|_| kind == AssetKind::Gaf);
    let overrides = view::Overrides {
        beside_pcx,
        ..Default::default()
    };
    view::options_for(
        Path::new(&format!("{rel_str}/{member}")),
        Some(game_dir),
        &overrides,
    )
}

impl Core {
    /// The view of archive `rel` from its bytes: only the directory is parsed.
    pub(super) fn archive_view(
        &self,
        rel: &Path,
        bytes: Vec<u8>,
    ) -> Result<ArchiveView, ViewError> {
        let rel_str = rel.to_string_lossy().replace('\\', "/");
        let game_dir = self.game_dir.clone();
        let opener = self.opts.opener.clone();
        let open_member = Box::new(
            move |kind: AssetKind, data: &[u8], member: &str, beside: Option<(&str, &[u8])>| {
                let opts = member_options(&game_dir, &rel_str, kind, member, beside);
                opener(kind, data, &opts)
            },
        );
        let limits = crate::formats::hpi::HpiLimits::default();
        ArchiveView::new(bytes, limits, open_member)
    }

    /// Expands the parts of `layout` (asset `rel`) that locating `vpath` needs (and with
    /// `list`, the parts directly in folder `vpath`), decoding them in parallel. Nothing to
    /// do for views without parts.
    pub(super) fn expand(&self, rel: &Path, layout: &Layout, vpath: &str, list: bool) {
        let todo = layout.pending_for(vpath, list);
        if todo.is_empty() {
            return;
        }
        let asset = self.slot(rel);
        let gen = {
            let st = lock(&asset.state);
            match &st.outcome {
                Outcome::Ready(l) if std::ptr::eq(Arc::as_ptr(l), layout) => st.gen,
                _ => return,
            }
        };
        let Ok((view, _)) = self.view_of(rel, gen) else {
            return;
        };
        // plain threads, not rayon: decoding a part may wait for another thread decoding the
        // same part (see the module's "Threads" in core.rs)
        let done: Vec<Option<&[view::Entry]>> = crate::fs::fan_out(&todo, |p| view.part_entries(p));
        for (p, entries) in todo.iter().zip(done) {
            layout.expand_part(&*view, p, entries);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Write-back into archives

use crate::formats::hpi::{self, Member};
use crate::fs::stage::{is_layout_name, Stage, StageMeta};
use std::collections::{BTreeSet, HashSet};

/// True when the staging area `s` belongs to an archive.
pub(super) fn is_archive_stage(s: &Stage) -> bool {
    s.meta
        .binary
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(view::archive::is_archive_name)
}

/// The GAF/TNT member (by name) that path `vpath` of an archive directory is inside of, if
/// any: the components up to the first one named like an asset, when more follow.
pub(super) fn part_of(vpath: &str) -> Option<&str> {
    let mut start = 0;
    while let Some(off) = vpath.get(start..).and_then(|r| r.find('/')) {
        let end = start + off;
        if vpath
            .get(start..end)
            .is_some_and(|c| AssetKind::from_name(c).is_some())
        {
            return vpath.get(..end);
        }
        start = end + 1;
    }
    None
}

/// Whether saving `vpath` of an archive directory commits (and whether it is part of a
/// commit): inside a GAF/TNT member, its layout files (as in loose asset directories);
/// elsewhere, member files: no component starting with `.`, and a name with an extension of
/// 1 to 4 letters or digits (`sidedata.tdf`, `ARMCOM.FBI`), which leaves out the temporary
/// names of editors and tools (`sedAb12Cd`, `tmpk2j4l1x0`, `x.tdf.Ab1234`, `x~`).
pub(super) fn archive_commits(vpath: &str) -> bool {
    if let Some(part) = part_of(vpath) {
        return vpath.get(part.len() + 1..).is_some_and(is_layout_name);
    }
    if vpath.is_empty() || vpath.split('/').any(|c| c.is_empty() || c.starts_with('.')) {
        return false;
    }
    let name = vpath.rsplit('/').next().unwrap_or(vpath);
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=4).contains(&ext.len())
                && ext.bytes().all(|b| b.is_ascii_alphanumeric())
        }
        None => false,
    }
}

/// The staging area of part `part`, seen from inside it: its staged files and whiteouts
/// relative to the member's exploded view (what a loose asset's stage is to its binary).
fn part_stage(s: &Stage, part: &str) -> Stage {
    let prefix = format!("{part}/");
    let strip = |set: &BTreeSet<String>| -> BTreeSet<String> {
        set.iter()
            .filter_map(|p| p.strip_prefix(&prefix).map(str::to_string))
            .collect()
    };
    Stage {
        dir: s.dir.clone(),
        files: s.files.join(part),
        history: s.history.clone(),
        meta: StageMeta {
            binary: s.meta.binary.join(part),
            dirty: strip(&s.meta.dirty),
            whiteouts: strip(&s.meta.whiteouts),
            ..StageMeta::default()
        },
    }
}

/// The archive's tree being edited: every entry by shown path, new content where changed.
struct Edit {
    nodes: Vec<ENode>,
    by_path: HashMap<String, usize>,
    roots: Vec<usize>,
}

struct ENode {
    raw: Vec<u8>,
    kind: EKind,
    removed: bool,
}

enum EKind {
    Dir(Vec<usize>),
    /// An archive entry kept as stored (index in the archive's entries).
    Kept(usize),
    New(Vec<u8>),
}

/// Deepest nesting written (the reader's default limit).
const MAX_DEPTH: usize = 64;

impl Edit {
    fn of(av: &ArchiveView) -> Edit {
        let a = av.archive();
        let mut e = Edit {
            nodes: Vec::with_capacity(a.entries.len()),
            by_path: HashMap::new(),
            roots: Vec::new(),
        };
        for (i, (entry, p)) in a.entries.iter().zip(av.paths()).enumerate() {
            let kind = match entry.kind {
                hpi::EntryKind::Dir => EKind::Dir(Vec::new()),
                hpi::EntryKind::File(_) => EKind::Kept(i),
            };
            let parent = entry.parent.and_then(|p| av.paths().get(p)).cloned();
            e.push(parent.as_deref(), p, entry.name.clone(), kind);
        }
        e
    }

    fn push(&mut self, parent: Option<&str>, path: &str, raw: Vec<u8>, kind: EKind) -> usize {
        let i = self.nodes.len();
        self.nodes.push(ENode {
            raw,
            kind,
            removed: false,
        });
        match parent.and_then(|p| self.by_path.get(p).copied()) {
            Some(pi) => {
                if let Some(EKind::Dir(kids)) = self.nodes.get_mut(pi).map(|n| &mut n.kind) {
                    kids.push(i);
                }
            }
            None => self.roots.push(i),
        }
        self.by_path.insert(path.to_string(), i);
        i
    }

    fn live(&self, path: &str) -> Option<usize> {
        let i = *self.by_path.get(path)?;
        (!self.nodes.get(i)?.removed).then_some(i)
    }

    /// The folder at `path`, made (with its parents) if missing.
    fn dir(&mut self, path: &str) -> Result<(), FsError> {
        if path.is_empty() {
            return Ok(());
        }
        if let Some(i) = self.live(path) {
            return match self.nodes.get(i).map(|n| &n.kind) {
                Some(EKind::Dir(_)) => Ok(()),
                _ => Err(FsError::NotDir),
            };
        }
        let (parent, name) = match path.rsplit_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, path),
        };
        if let Some(p) = parent {
            self.dir(p)?;
        }
        self.push(
            parent,
            path,
            name.as_bytes().to_vec(),
            EKind::Dir(Vec::new()),
        );
        Ok(())
    }

    fn set_file(&mut self, path: &str, bytes: Vec<u8>) -> Result<(), FsError> {
        if let Some(i) = self.live(path) {
            if let Some(n) = self.nodes.get_mut(i) {
                if matches!(n.kind, EKind::Dir(_)) {
                    return Err(FsError::IsDir);
                }
                n.kind = EKind::New(bytes);
            }
            return Ok(());
        }
        let (parent, name) = match path.rsplit_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, path),
        };
        if let Some(p) = parent {
            self.dir(p)?;
        }
        self.push(parent, path, name.as_bytes().to_vec(), EKind::New(bytes));
        Ok(())
    }

    /// Moves the entry at `src` (with everything under it) to `dst`, named by its last
    /// component; folders of `dst` are made if missing.
    fn rename(&mut self, src: &str, dst: &str) -> Result<(), FsError> {
        let i = self.live(src).ok_or(FsError::NotFound)?;
        let parent_of = |p: &str| p.rsplit_once('/').map(|(d, _)| d.to_string());
        match parent_of(src).and_then(|p| self.live(&p)) {
            Some(pi) => {
                if let Some(EKind::Dir(kids)) = self.nodes.get_mut(pi).map(|n| &mut n.kind) {
                    kids.retain(|&k| k != i);
                }
            }
            None => self.roots.retain(|&k| k != i),
        }
        let dparent = parent_of(dst);
        if let Some(d) = &dparent {
            self.dir(d)?;
        }
        let name = dst.rsplit('/').next().unwrap_or(dst);
        if let Some(n) = self.nodes.get_mut(i) {
            n.raw = name.as_bytes().to_vec();
        }
        match dparent.and_then(|d| self.live(&d)) {
            Some(pi) => {
                if let Some(EKind::Dir(kids)) = self.nodes.get_mut(pi).map(|n| &mut n.kind) {
                    kids.push(i);
                }
            }
            None => self.roots.push(i),
        }
        let under = format!("{src}/");
        let keys: Vec<String> = self
            .by_path
            .keys()
            .filter(|k| *k == src || k.starts_with(&under))
            .cloned()
            .collect();
        for k in keys {
            if let Some(v) = self.by_path.remove(&k) {
                let rest = k.get(src.len()..).unwrap_or_default();
                self.by_path.insert(format!("{dst}{rest}"), v);
            }
        }
        Ok(())
    }

    fn remove(&mut self, path: &str) {
        if let Some(i) = self.live(path) {
            if let Some(n) = self.nodes.get_mut(i) {
                n.removed = true;
            }
        }
    }

    /// The tree to write: kept members with their stored bytes, new ones as data.
    fn tree(&self, av: &ArchiveView, date: u32) -> Result<Vec<hpi::Node>, FsError> {
        self.build(&self.roots, av, date, 0)
    }

    fn build(
        &self,
        list: &[usize],
        av: &ArchiveView,
        date: u32,
        depth: usize,
    ) -> Result<Vec<hpi::Node>, FsError> {
        if depth > MAX_DEPTH {
            return Err(FsError::Commit(format!(
                "folders nested deeper than {MAX_DEPTH} levels"
            )));
        }
        let a = av.archive();
        let mut out = Vec::new();
        for n in list.iter().filter_map(|&i| self.nodes.get(i)) {
            if n.removed {
                continue;
            }
            let kind = match &n.kind {
                EKind::Dir(kids) => hpi::NodeKind::Dir(self.build(kids, av, date, depth + 1)?),
                EKind::New(b) => hpi::NodeKind::File(Member::Data {
                    bytes: b.clone(),
                    date,
                }),
                EKind::Kept(i) => {
                    let Some(hpi::EntryKind::File(f)) = a.entries.get(*i).map(|e| &e.kind) else {
                        continue;
                    };
                    let stored = a
                        .stored_member(av.data(), f)
                        .map_err(|e| FsError::Commit(e.to_string()))?;
                    hpi::NodeKind::File(Member::Stored(stored))
                }
            };
            out.push(hpi::Node {
                name: n.raw.clone(),
                kind,
            });
        }
        Ok(out)
    }
}

/// A member rebuilt: new bytes, `None` when unchanged.
/// A member's new bytes (`None`: unchanged) and the staged files of it that the build made
/// outdated (see `outdated_staged`), relative to the member.
type PartBuild = Result<Option<(Vec<u8>, Vec<String>)>, ViewError>;

/// How building the edited members went.
enum Built {
    /// Ready to write; the staged files (archive paths) to drop once written.
    Ok(Vec<String>),
    Pending(String),
    Error {
        file: Option<String>,
        message: String,
    },
}

impl Core {
    /// Whether saving `vpath` of asset `rel` commits: layout files in loose asset
    /// directories ([`is_layout_name`]), [`archive_commits`] in archives.
    pub(super) fn commits(&self, rel: &Path, vpath: &str) -> bool {
        if is_archive_path(rel) {
            archive_commits(vpath)
        } else {
            is_layout_name(vpath)
        }
    }

    /// `EEXIST` when `name` would sit in archive folder `dir` beside an entry whose name
    /// differs from it only in letter case (archives' directories are case-insensitive).
    pub(super) fn case_clash(
        &self,
        rel: &Path,
        layout: &Layout,
        dir: &str,
        name: &str,
    ) -> Result<(), FsError> {
        if !is_archive_path(rel) || part_of(&writeback_join(dir, name)).is_some() {
            return Ok(());
        }
        let asset = self.slot(rel);
        let kids = {
            let g = lock(&asset.stage);
            writeback::merged_children(g.as_ref(), Some(layout), dir).unwrap_or_default()
        };
        if kids
            .iter()
            .any(|(n, _)| n != name && n.eq_ignore_ascii_case(name))
        {
            return Err(FsError::Io(std::io::Error::from_raw_os_error(libc::EEXIST)));
        }
        Ok(())
    }

    /// Paths of archive `rel` whose staged files are open for writing.
    fn open_for_writing(&self, rel: &Path) -> HashSet<String> {
        let inos: Vec<u64> = lock(&self.handles)
            .values()
            .filter_map(|h| match &**h {
                Handle::Staged {
                    ino,
                    rel: r,
                    writable: true,
                    ..
                } if r == rel => Some(*ino),
                _ => None,
            })
            .collect();
        inos.into_iter().filter_map(|i| self.vpath_of(i)).collect()
    }

    /// The last descriptor writing staged file `ino` of archive `rel` was closed: once
    /// committed (not dirty), a member file outside GAF/TNT members leaves the staging area,
    /// so the archive's member shows (a GAF copied in shows as its exploded view).
    pub(super) fn archive_released(&self, rel: &Path, ino: u64) {
        let Some(vpath) = self.vpath_of(ino) else {
            return;
        };
        if part_of(&vpath).is_some() || !archive_commits(&vpath) {
            return;
        }
        if self.open_for_writing(rel).contains(&vpath) {
            return;
        }
        let asset = self.slot(rel);
        let removed = {
            let g = lock(&asset.stage);
            let Some(s) = g.as_ref() else {
                return;
            };
            if s.meta.dirty.contains(&vpath) || fs::remove_file(s.path(&vpath)).is_err() {
                return;
            }
            // detached with the staged file, under the stage lock (`stands_at`)
            let mut t = self.table_mut();
            let at = t.nodes.get(&ino).map(|n| (n.parent, n.name.clone()));
            t.detach(ino);
            at
        };
        if let Some((parent, name)) = removed.filter(|(p, _)| *p != DETACHED) {
            self.send(Inval::Entry { parent, name });
        }
        self.send(Inval::Inode { ino });
    }

    /// Rebuilds the edited members of archive `rel` from its staging area and repacks the
    /// archive (unchanged members keep their stored bytes), replacing it atomically if it
    /// changed. `trigger` is the path being saved (errors in it fail the call).
    pub(super) fn commit_archive(
        &self,
        rel: &Path,
        trigger: &str,
        moved: Option<(&str, &str)>,
    ) -> Result<(), FsError> {
        let asset = self.slot(rel);
        let abs = self.abs(rel);
        let mut g = lock(&asset.stage);
        let Some(s) = g.as_mut() else {
            return Ok(());
        };
        if s.meta.dirty.is_empty() {
            return Ok(());
        }
        if s.meta.conflict {
            return Err(FsError::Stale);
        }
        let (cur, cur_meta) = match fs::read(&abs) {
            Ok(b) => (b, fs::metadata(&abs)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(FsError::Stale);
            }
            Err(e) => return Err(e.into()),
        };
        if s.meta.base.as_ref() != Some(&Ident::of(&cur_meta)) {
            s.meta.conflict = true;
            s.meta.status = format!(
                "conflict: the archive changed outside the mount after {trigger} was staged; \
                 delete the staged files to take the new archive"
            );
            let _ = s.save();
            log::warn!("{}: {}", rel.display(), s.meta.status);
            return Err(FsError::Stale);
        }
        let t0 = std::time::Instant::now();
        let av = self.archive_view(rel, cur)?;
        let mut edit = Edit::of(&av);
        if let Some((from, to)) = moved {
            edit.rename(from, to)?;
        }
        let built = self.apply_stage(rel, s, &av, &mut edit);
        let t_build = t0.elapsed();
        let outdated = match built {
            Ok(Built::Ok(outdated)) => outdated,
            Ok(Built::Pending(why)) => {
                s.meta.status = format!("pending: {why}");
                let _ = s.save();
                log::info!("{}: {}", rel.display(), s.meta.status);
                return Ok(());
            }
            Ok(Built::Error { file, message }) => {
                s.meta.status = format!("error: {message}");
                let _ = s.save();
                log::warn!("{}: commit refused: {message}", rel.display());
                if file.as_deref().map_or(true, |f| f == trigger) {
                    return Err(FsError::Commit(format!("{}: {message}", rel.display())));
                }
                return Ok(());
            }
            Err(e) => {
                s.meta.status = format!("error: {e}");
                let _ = s.save();
                log::warn!("{}: commit refused: {e}", rel.display());
                return Err(e);
            }
        };
        let date = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs().min(u64::from(u32::MAX)) as u32);
        let written = edit.tree(&av, date).and_then(|tree| {
            let bytes = hpi::write(&tree, &hpi::WriteOptions::like(av.archive()))
                .map_err(|e| FsError::Commit(e.to_string()))?;
            // validate: the new archive parses
            hpi::parse(&bytes, &hpi::HpiLimits::default()).map_err(|e| {
                FsError::Commit(format!("the repacked archive does not parse: {e}"))
            })?;
            Ok(bytes)
        });
        let bytes = match written {
            Ok(b) => b,
            Err(e) => {
                s.meta.status = format!("error: {e}");
                let _ = s.save();
                log::warn!("{}: commit refused: {e}", rel.display());
                return Err(e);
            }
        };
        let t_pack = t0.elapsed();
        if bytes == av.data() {
            finish_archive_stage(s, &self.open_for_writing(rel));
            s.meta.status = "clean: the last save changed nothing in the archive".into();
            s.save()?;
            return Ok(());
        }
        writeback::replace_binary(rel, &abs, s, Some((av.data(), &cur_meta)), &bytes)?;
        finish_archive_stage(s, &self.open_for_writing(rel));
        writeback::drop_outdated(rel, s, &outdated);
        let ms = |d: Duration| d.as_millis();
        s.meta.status = format!(
            "committed {} bytes after saving {trigger} ({} ms: members {}, repack {}, \
             history + replace {})",
            bytes.len(),
            ms(t0.elapsed()),
            ms(t_build),
            ms(t_pack.saturating_sub(t_build)),
            ms(t0.elapsed().saturating_sub(t_pack)),
        );
        s.save()?;
        log::info!("{}: {}", rel.display(), s.meta.status);
        drop(g);
        drop(av);
        let _ = self.resolve(rel);
        Ok(())
    }

    /// Applies the staging area to `edit`: deleted entries removed, staged member files and
    /// folders added or replacing, each GAF/TNT member with uncommitted changes rebuilt
    /// through the same build/pack as a loose binary.
    fn apply_stage(
        &self,
        rel: &Path,
        s: &Stage,
        av: &ArchiveView,
        edit: &mut Edit,
    ) -> Result<Built, FsError> {
        // deleted entries outside members
        for w in &s.meta.whiteouts {
            if part_of(w).is_none() {
                edit.remove(w);
            }
        }
        // staged folders and member files outside members
        let mut stack = vec![String::new()];
        let mut seen = 0usize;
        while let Some(dir) = stack.pop() {
            let Ok(rd) = fs::read_dir(s.path(&dir)) else {
                continue;
            };
            for e in rd.flatten() {
                let Ok(name) = e.file_name().into_string() else {
                    continue;
                };
                let p = writeback_join(&dir, &name);
                seen += 1;
                if seen > 1 << 20 {
                    return Err(FsError::Commit("too many staged files".into()));
                }
                let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                if av.is_part(&p) && is_dir {
                    continue; // a member's exploded view: built below
                }
                if is_dir {
                    // hidden folders are not written; folders named like a GAF/TNT member
                    // that the archive does not have are new members, built below
                    if name.starts_with('.') || AssetKind::from_name(&name).is_some() {
                        continue;
                    }
                    edit.dir(&p)?;
                    stack.push(p);
                } else if archive_commits(&p) {
                    let bytes = fs::read(e.path())?;
                    let same = edit.live(&p).is_some()
                        && av.member_bytes(&p).ok().as_ref() == Some(&bytes);
                    if !same {
                        edit.set_file(&p, bytes)?;
                    }
                }
            }
        }
        // members with uncommitted changes inside (deletions are in `dirty` too)
        let parts: BTreeSet<&str> = s
            .meta
            .dirty
            .iter()
            .filter_map(|p| part_of(p))
            .filter(|p| edit.live(p).is_some() && !s.hidden(p))
            .collect();
        // new members: a folder named like a GAF/TNT member that the archive does not have,
        // holding an exploded view (`mkdir X.hpi/anims/new.gaf`, rsync of a dump into it)
        let new_parts: BTreeSet<&str> = s
            .meta
            .dirty
            .iter()
            .filter_map(|p| part_of(p))
            .filter(|p| edit.live(p).is_none() && !s.hidden(p) && s.path(p).is_dir())
            .collect();
        let rel_str = rel.to_string_lossy().replace('\\', "/");
        // rayon is fine here: building waits for no lock (the archive view is this commit's own)
        let results: Vec<(&str, PartBuild)> = parts
            .par_iter()
            .map(|&part| (part, self.build_part(&rel_str, s, av, part)))
            .chain(
                new_parts
                    .par_iter()
                    .map(|&part| (part, self.build_new_part(&rel_str, s, part))),
            )
            .collect();
        let mut pending = Vec::new();
        let mut outdated = Vec::new();
        for (part, r) in results {
            match r {
                Ok(Some((bytes, old))) => {
                    edit.set_file(part, bytes)?;
                    outdated.extend(old.into_iter().map(|p| format!("{part}/{p}")));
                }
                Ok(None) => {}
                Err(e @ ViewError::Missing { .. }) => pending.push(format!("{part}: {e}")),
                Err(e) => {
                    let file = writeback::error_file(&e)
                        .filter(|f| !f.is_empty())
                        .map(|f| format!("{part}/{f}"));
                    return Ok(Built::Error {
                        file,
                        message: format!("{part}: {e}"),
                    });
                }
            }
        }
        if !pending.is_empty() {
            return Ok(Built::Pending(pending.join("; ")));
        }
        Ok(Built::Ok(outdated))
    }

    /// The new bytes of GAF/TNT member `part` built from its exploded view with the staged
    /// files on top; `None` when unchanged, or while it is being removed (its
    /// `metadata.json` deleted).
    fn build_part(&self, rel_str: &str, s: &Stage, av: &ArchiveView, part: &str) -> PartBuild {
        let name = part.rsplit('/').next().unwrap_or(part);
        let Some(kind) = AssetKind::from_name(name) else {
            return Ok(None);
        };
        let Some(view) = av.part(part) else {
            return Ok(None); // shown as the plain member
        };
        let sub = part_stage(s, part);
        if sub.meta.whiteouts.contains("metadata.json") && !sub.path("metadata.json").exists() {
            return Ok(None);
        }
        let original = av.member_bytes(part)?;
        let beside = (kind == AssetKind::Gaf)
            .then(|| av.beside_pcx(part))
            .flatten();
        let beside = beside.as_ref().map(|(n, b)| (n.as_str(), b.as_slice()));
        let opts = member_options(&self.game_dir, rel_str, kind, part, beside);
        let overlay = writeback::Overlay {
            stage: &sub,
            layout: Some(Layout::new(view)),
            view: Some(view),
            kind,
        };
        let bytes = (self.opts.packer)(kind, &overlay, Some(&original), &opts)?;
        let new_view = (self.opts.opener)(kind, &bytes, &opts).map_err(|e| {
            // no file named: the call that saved fails
            ViewError::invalid("", format!("the rebuilt member does not decode: {e}"))
        })?;
        if bytes == original {
            return Ok(None);
        }
        let old =
            writeback::outdated_staged(&self.opts.packer, kind, &sub, &*new_view, &bytes, &opts);
        Ok(Some((bytes, old)))
    }
}

impl Core {
    /// The bytes of new GAF/TNT member `part`, built from its staged exploded view alone (as
    /// a new loose asset is); `Missing` until every file it needs is there.
    fn build_new_part(&self, rel_str: &str, s: &Stage, part: &str) -> PartBuild {
        let name = part.rsplit('/').next().unwrap_or(part);
        let Some(kind) = AssetKind::from_name(name) else {
            return Ok(None);
        };
        let sub = part_stage(s, part);
        let opts = member_options(&self.game_dir, rel_str, kind, part, None);
        let overlay = writeback::Overlay {
            stage: &sub,
            layout: None,
            view: None,
            kind,
        };
        let bytes = (self.opts.packer)(kind, &overlay, None, &opts)?;
        let v = (self.opts.opener)(kind, &bytes, &opts).map_err(|e| {
            ViewError::invalid("", format!("the built member does not decode: {e}"))
        })?;
        writeback::complete_new(kind, &overlay, &*v)?;
        let old = writeback::outdated_staged(&self.opts.packer, kind, &sub, &*v, &bytes, &opts);
        Ok(Some((bytes, old)))
    }
}

/// After a commit of an archive: staged member files (except those in `open`, still open for
/// writing: they go when closed, [`Core::archive_released`]) and folders outside GAF/TNT members are
/// in the archive now and dropped from the staging area (so the archive shows them, and a
/// member copied in as a binary shows as its exploded view); staged files inside members stay
/// (as in loose asset directories). Nothing is uncommitted any more.
fn finish_archive_stage(s: &mut Stage, open: &HashSet<String>) {
    let mut stack = vec![String::new()];
    let mut dirs = Vec::new();
    while let Some(dir) = stack.pop() {
        let Ok(rd) = fs::read_dir(s.path(&dir)) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            let p = writeback_join(&dir, &name);
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && part_of(&format!("{p}/x")).is_some() {
                continue; // a member's exploded view
            }
            if is_dir {
                if stack.len() < 4096 {
                    stack.push(p.clone());
                }
                dirs.push(p);
            } else if archive_commits(&p) && !open.contains(&p) {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    // deepest first; only empty ones go
    dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    for d in dirs {
        let _ = fs::remove_dir(s.path(&d));
    }
    // whiteouts outside members are done; those inside a removed member too
    let removed: Vec<String> = s
        .meta
        .whiteouts
        .iter()
        .filter(|w| part_of(w).is_none())
        .cloned()
        .collect();
    s.meta.whiteouts.retain(|w| {
        part_of(w).is_some_and(|q| {
            !removed
                .iter()
                .any(|r| q == r || q.starts_with(&format!("{r}/")))
        })
    });
    s.meta.dirty.clear();
    s.meta.conflict = false;
}

/// The deletions staged under folder `from` now stand under `to` (a folder moved).
fn move_whiteouts(s: &mut Stage, from: &str, to: &str) {
    let under = format!("{from}/");
    let moved: Vec<String> = s
        .meta
        .whiteouts
        .iter()
        .filter(|w| w.starts_with(&under))
        .cloned()
        .collect();
    for x in moved {
        s.meta.whiteouts.remove(&x);
        let rest = x.get(from.len()..).unwrap_or_default();
        s.meta.whiteouts.insert(format!("{to}{rest}"));
    }
}

fn writeback_join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

impl Core {
    /// `rename` of a folder, or of a GAF/TNT member's folder, of archive `rel` (outside
    /// members): the entry and everything under it move in the archive, committed at once.
    /// Uncommitted edits of the archive are committed first; if some stay uncommitted
    /// (pending, invalid), `EBUSY`. An existing destination: `EEXIST`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn archive_rename(
        &self,
        parent: u64,
        name: &str,
        newparent: u64,
        newname: &str,
        rel: &Path,
        layout: &Layout,
        meta: &Metadata,
        gen: u64,
        src: &str,
        dst: &str,
    ) -> Result<(), FsError> {
        let errno = |e| FsError::Io(std::io::Error::from_raw_os_error(e));
        if part_of(dst).is_some() || dst == src || dst.starts_with(&format!("{src}/")) {
            return Err(errno(libc::EXDEV));
        }
        if !matches!(self.locate(rel, layout, dst), writeback::Loc::None) {
            return Err(errno(libc::EEXIST));
        }
        let ddir = dst.rsplit_once('/').map_or("", |(d, _)| d);
        self.case_clash(rel, layout, ddir, newname)?;
        let dirty = || {
            lock(&self.slot(rel).stage)
                .as_ref()
                .is_some_and(|s| !s.meta.dirty.is_empty())
        };
        if dirty() {
            self.commit(rel, src)?;
            if dirty() {
                return Err(errno(libc::EBUSY));
            }
        }
        if !ddir.is_empty() {
            self.materialize(rel, gen, layout, meta, ddir, true)?;
        }
        let moved_stage = self.with_stage(rel, meta, |s| {
            let from = s.path(src);
            let moved = from.symlink_metadata().is_ok();
            if moved {
                fs::rename(&from, s.path(dst))?;
            }
            move_whiteouts(s, src, dst);
            s.meta.dirty.insert(dst.to_string());
            Ok(moved)
        })?;
        if let Err(e) = self.commit_archive(rel, dst, Some((src, dst))) {
            // put the staging area back as it was
            let _ = self.with_stage(rel, meta, |s| {
                if moved_stage {
                    fs::rename(s.path(dst), s.path(src))?;
                }
                move_whiteouts(s, dst, src);
                s.meta.dirty.remove(dst);
                Ok(())
            });
            return Err(e);
        }
        let mut t = self.table_mut();
        t.move_child(parent, OsStr::new(name), newparent, OsStr::new(newname));
        if let Some(&ino) = t.children.get(&(newparent, OsString::from(newname))) {
            if let Some(NodeKind::View { vpath, .. }) = t.nodes.get_mut(&ino).map(|n| &mut n.kind) {
                *vpath = dst.to_string();
            }
            drop(t);
            self.send(Inval::Inode { ino });
        }
        Ok(())
    }
}
