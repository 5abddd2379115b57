//! Write-back into archives: which paths commit, members built from their exploded views,
//! the staging area applied to the archive's tree, what leaves the stage after a commit, and
//! renames of folders and members (moved in the archive, committed at once).

use super::commit::Built;
use super::edit::Edit;
use super::ops::Move;
use crate::formats::hpi;
use crate::fs::core::assets::member_options;
use crate::fs::core::handles::Handle;
use crate::fs::core::inode::DETACHED;
use crate::fs::core::{is_archive_path, AssetAt, Core, Inval};
use crate::fs::layout::Layout;
use crate::fs::shared::{join, lock, time, Loc};
use crate::fs::stage::Stage;
use crate::fs::stage::StageMeta;
use crate::fs::stage::Written;
use crate::fs::staging::member_times::Shown;
use crate::fs::staging::merged_children;
use crate::fs::staging::overlay::Overlay;
use crate::fs::FsError;
use crate::sys::{self, SetTime};
use crate::view::archive::{ArchiveView, FileSource};
use crate::view::{AssetKind, RebuildBase, SharedBytes, ViewError};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashSet};
use std::ffi::OsStr;
use std::fs::{self, Metadata};
use std::io::{Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// True when the staging area `s` belongs to an archive.
pub(in crate::fs::writeback) fn is_archive_stage(s: &Stage) -> bool {
    s.meta
        .binary
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(crate::view::archive::is_archive_name)
}

pub(in crate::fs::writeback) use crate::fs::shared::part_of;

/// Whether saving `vpath` of an archive directory commits (and whether it is part of a
/// commit): inside a GAF/TNT member, its layout files (as in loose asset directories);
/// elsewhere, member files: no component starting with `.`, and a name with an extension of
/// 1 to 4 letters or digits (`sidedata.tdf`, `ARMCOM.FBI`), possibly followed by the `~<n>`
/// that keeps shown names unique (`a_b.tdf~2`, a member whose name had to be made safe or
/// differs from another only in letter case), which leaves out the temporary names of
/// editors and tools (`sedAb12Cd`, `tmpk2j4l1x0`, `x.tdf.Ab1234`, `x~`, `x.tdf.~1~`).
pub(in crate::fs::writeback) fn archive_commits(vpath: &str) -> bool {
    if let Some(part) = part_of(vpath) {
        return vpath
            .get(part.len() + 1..)
            .is_some_and(crate::fs::staging::overlay::builds);
    }
    if vpath.is_empty() || vpath.split('/').any(|c| c.is_empty() || c.starts_with('.')) {
        return false;
    }
    let name = vpath.rsplit('/').next().unwrap_or(vpath);
    let name = match name.rsplit_once('~') {
        Some((n, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => name,
    };
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
pub(in crate::fs::writeback) fn part_stage(s: &Stage, part: &str) -> Stage {
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
        files_absent: Default::default(),
        writes: s.writes.clone(),
    }
}

/// A member rebuilt: new bytes, `None` when unchanged.
/// A member's new bytes (`None`: unchanged) and the staged files of it that the build made
/// outdated (see `outdated_staged`), relative to the member.
pub(in crate::fs::writeback) type PartBuild = Result<Option<(Vec<u8>, Vec<String>)>, ViewError>;

/// How building the edited members went.
pub(in crate::fs::writeback) enum MembersBuilt {
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
    /// directories ([`crate::fs::staging::overlay::builds`]), [`archive_commits`] in archives.
    pub(in crate::fs::writeback) fn commits(&self, rel: &Path, vpath: &str) -> bool {
        if is_archive_path(rel) {
            archive_commits(vpath)
        } else {
            crate::fs::staging::overlay::builds(vpath)
        }
    }

    /// `EEXIST` when `name` would sit in archive folder `dir` beside an entry whose name
    /// differs from it only in letter case (archives' directories are case-insensitive).
    pub(in crate::fs::writeback) fn case_clash(
        &self,
        rel: &Path,
        layout: &Layout,
        dir: &str,
        name: &str,
    ) -> Result<(), FsError> {
        if !is_archive_path(rel) || part_of(&join(dir, name)).is_some() {
            return Ok(());
        }
        let staged = self.staging(rel);
        let kids = {
            let g = lock(&staged.stage);
            merged_children(g.as_ref(), Some(layout), dir).unwrap_or_default()
        };
        if kids
            .iter()
            .any(|(n, _)| n != name && n.eq_ignore_ascii_case(name))
        {
            return Err(FsError::Exists);
        }
        Ok(())
    }

    /// Paths of archive `rel` whose staged files are open for writing.
    pub(in crate::fs::writeback) fn open_for_writing(&self, rel: &Path) -> HashSet<String> {
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
    pub(in crate::fs::writeback) fn archive_released(&self, rel: &Path, ino: u64) {
        let Some(vpath) = self.vpath_of(ino) else {
            return;
        };
        if part_of(&vpath).is_some() || !archive_commits(&vpath) {
            return;
        }
        if self.open_for_writing(rel).contains(&vpath) {
            return;
        }
        let staged = self.staging(rel);
        let removed = {
            let g = lock(&staged.stage);
            let Some(s) = g.as_ref() else {
                return;
            };
            if s.meta.dirty.contains(&vpath) {
                return;
            }
            let p = s.path(&vpath);
            let shown = fs::symlink_metadata(&p).ok().map(|m| Shown::of(&m));
            // its folder keeps its time: the member showing in its place is no change of it
            let above = p.parent().map(Path::to_path_buf);
            if super::keeping_times(above.as_deref(), || fs::remove_file(&p)).is_err() {
                return;
            }
            let mut left: Vec<(String, Shown)> =
                shown.map(|m| (vpath.clone(), m)).into_iter().collect();
            // its folders, committed with it, leave too once empty (as after a commit)
            let mut dir = vpath.rsplit_once('/').map(|(d, _)| d.to_string());
            while let Some(d) = dir {
                let p = s.path(&d);
                let Ok(before) = fs::symlink_metadata(&p) else {
                    break;
                };
                let above = p.parent().map(Path::to_path_buf);
                if super::keeping_times(above.as_deref(), || fs::remove_dir(&p)).is_err() {
                    break;
                }
                dir = d.rsplit_once('/').map(|(d, _)| d.to_string());
                left.push((d, Shown::of(&before)));
            }
            if let Some(of) = &s.meta.base {
                lock(&staged.times).members.left(of, left);
            }
            // detached with the staged file, under the stage lock (`stands_at`)
            let mut t = self.table_mut();
            let at = t.get(ino).map(|n| (n.parent, n.name.clone()));
            t.detach(ino);
            at
        };
        if let Some((parent, name)) = removed.filter(|(p, _)| *p != DETACHED) {
            self.send(Inval::Entry { parent, name });
        }
        self.send(Inval::Inode { ino });
    }

    /// Rebuilds the edited members of archive `rel` (its view `av`, read by range from its
    /// open file, whose metadata is `like`) from its staging area and writes the new archive
    /// into the temporary file beside it ([`crate::atomic::prepare_seekable_at`]): unchanged
    /// members copied range by range from the archive, staged files read as they are
    /// written, so nothing holds the archive whole. The temporary file is checked (its
    /// directory parsed from it, by range) and compared with the archive; `moved`: an entry
    /// this commit renames (from, to). The commit step of [`Core::commit_moved`] for archives.
    pub(in crate::fs::writeback) fn build_archive(
        &self,
        rel: &Path,
        like: &Metadata,
        s: &Stage,
        av: &ArchiveView,
        moved: Option<(&str, &str)>,
    ) -> Built {
        let t0 = std::time::Instant::now();
        let mut edit = Edit::of(av);
        if let Some((from, to)) = moved {
            if let Err(e) = edit.rename(from, to) {
                return Built::Aborted(e);
            }
        }
        let outdated = match self.apply_stage(rel, s, av, &mut edit) {
            Ok(MembersBuilt::Ok(outdated)) => outdated,
            Ok(MembersBuilt::Pending(why)) => return Built::Pending(why),
            Ok(MembersBuilt::Error { file, message }) => return Built::Refused { file, message },
            Err(e) => return Built::Failed(e),
        };
        if !edit.changed() {
            // every member as it is: the archive would be written again as it is
            return Built::Same;
        }
        let t_build = t0.elapsed();
        let date = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs().min(u64::from(u32::MAX)) as u32);
        let Some(cur) = av.file() else {
            return Built::Failed(FsError::Commit("the archive is not open as a file".into()));
        };
        let tree = match edit.tree(av, date) {
            Ok(t) => t,
            Err(e) => return Built::Failed(e),
        };
        // the archive's folder, opened beneath the game folder with no symlink followed: the
        // new archive is written and renamed in that very folder
        let (dir, name) = match self.parent_fd(rel) {
            Ok(x) => x,
            Err(e) => return Built::Failed(e.into()),
        };
        use std::os::fd::AsFd;
        let n = crate::atomic::remove_leftovers_at(dir.as_fd(), &name);
        if n > 0 {
            log::info!(
                "{}: removed {n} temporary file(s) of an interrupted commit",
                rel.display()
            );
        }
        let opts = hpi::WriteOptions::like(av.archive());
        let prepared = crate::atomic::prepare_seekable_at(dir.as_fd(), &name, Some(like), |w| {
            let mut out = KeepIo { out: w, err: None };
            match hpi::write_to(&tree, &opts, Some(av.source()), &mut out) {
                Ok(_) => Ok(()),
                // the file's own error (ENOSPC) as it is, not as the archive's
                Err(e) => Err(match out.err.take() {
                    Some(io) => FsError::from(io),
                    None => FsError::Commit(e.to_string()),
                }),
            }
        });
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => return Built::Failed(super::commit::with_errno_fs(e)),
        };
        drop(tree);
        let t_write = t0.elapsed();
        // validate: the new archive's directory parses, read from the file by range
        let parsed = prepared
            .file()
            .try_clone()
            .and_then(FileSource::new)
            .map_err(FsError::from)
            .and_then(|f| {
                hpi::parse_from(&f, &hpi::HpiLimits::default()).map_err(|e| {
                    FsError::Commit(format!("the repacked archive does not parse: {e}"))
                })
            });
        if let Err(e) = parsed {
            return Built::Failed(e);
        }
        let (written, same) = match Written::of_file_comparing(prepared.file(), cur) {
            Ok(x) => x,
            Err(e) => return Built::Failed(e.into()),
        };
        if same {
            return Built::Same;
        }
        Built::File {
            file: prepared,
            written,
            outdated,
            phases: vec![
                ("members", t_build),
                ("repack", t_write.saturating_sub(t_build)),
                ("validate", t0.elapsed().saturating_sub(t_write)),
            ],
        }
    }

    /// Applies the staging area to `edit`: deleted entries removed, staged member files and
    /// folders added or replacing, each GAF/TNT member with uncommitted changes rebuilt
    /// through the same build/pack as a loose binary.
    pub(in crate::fs::writeback) fn apply_stage(
        &self,
        rel: &Path,
        s: &Stage,
        av: &ArchiveView,
        edit: &mut Edit,
    ) -> Result<MembersBuilt, FsError> {
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
                let p = join(&dir, &name);
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
                    // compared and later written from the staged file, never held whole
                    let len = e.metadata()?.len();
                    let same = edit.live(&p).is_some()
                        && av.member_size(&p) == Some(len)
                        && fs::File::open(e.path())
                            .ok()
                            .is_some_and(|mut f| av.member_equals(&p, &mut f).unwrap_or(false));
                    if !same {
                        edit.set_staged(&p, e.path(), len)?;
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
                    let file = super::error_file(&e)
                        .filter(|f| !f.is_empty())
                        .map(|f| format!("{part}/{f}"));
                    return Ok(MembersBuilt::Error {
                        file,
                        message: format!("{part}: {e}"),
                    });
                }
            }
        }
        if !pending.is_empty() {
            return Ok(MembersBuilt::Pending(pending.join("; ")));
        }
        Ok(MembersBuilt::Ok(outdated))
    }

    /// The new bytes of GAF/TNT member `part` built from its exploded view with the staged
    /// files on top; `None` when unchanged, or while it is being removed (its
    /// `metadata.json` deleted).
    pub(in crate::fs::writeback) fn build_part(
        &self,
        rel_str: &str,
        s: &Stage,
        av: &ArchiveView,
        part: &str,
    ) -> PartBuild {
        let name = part.rsplit('/').next().unwrap_or(part);
        let Some(kind) = AssetKind::from_name(name) else {
            return Ok(None);
        };
        // (no room to decode it now: the save is refused, not taken as unchanged; never
        // waited for under the stage's lock, see fs/LOCKING.md)
        let Some(view) = av.part_now(part)? else {
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
        let overlay = Overlay {
            stage: &sub,
            layout: Some(Layout::new(&*view)),
            view: Some(&*view),
            kind,
            staged: None,
        };
        // a map member's renderings are taken from its decoded view
        let base = view
            .tnt_model()
            .map_or(RebuildBase::Bytes(&original), RebuildBase::Tnt);
        let bytes = SharedBytes::from((self.opts.packer)(kind, &overlay, base, &opts)?.bytes);
        let new_view = (self.opts.opener)(kind, &bytes, &opts).map_err(|e| {
            // no file named: the call that saved fails
            ViewError::invalid("", format!("the rebuilt member does not decode: {e}"))
        })?;
        if bytes[..] == original[..] {
            return Ok(None);
        }
        let old = super::commit::outdated_staged(
            &self.opts.packer,
            kind,
            &sub,
            &*new_view,
            &bytes,
            &opts,
        );
        // (the view gone, the bytes are taken back without a copy)
        drop(new_view);
        Ok(Some((Vec::from(bytes), old)))
    }
}

impl Core {
    /// The bytes of new GAF/TNT member `part`, built from its staged exploded view alone (as
    /// a new loose asset is); `Missing` until every file it needs is there.
    pub(in crate::fs::writeback) fn build_new_part(
        &self,
        rel_str: &str,
        s: &Stage,
        part: &str,
    ) -> PartBuild {
        let name = part.rsplit('/').next().unwrap_or(part);
        let Some(kind) = AssetKind::from_name(name) else {
            return Ok(None);
        };
        let sub = part_stage(s, part);
        let opts = member_options(&self.game_dir, rel_str, kind, part, None);
        let overlay = Overlay {
            stage: &sub,
            layout: None,
            view: None,
            kind,
            staged: None,
        };
        let bytes =
            SharedBytes::from((self.opts.packer)(kind, &overlay, RebuildBase::None, &opts)?.bytes);
        let v = (self.opts.opener)(kind, &bytes, &opts).map_err(|e| {
            ViewError::invalid("", format!("the built member does not decode: {e}"))
        })?;
        super::commit::complete_new(kind, &overlay, &*v)?;
        let old = super::commit::outdated_staged(&self.opts.packer, kind, &sub, &*v, &bytes, &opts);
        // (the view gone, the bytes are taken back without a copy)
        drop(v);
        Ok(Some((Vec::from(bytes), old)))
    }
}

/// A writer that keeps its own I/O error, so that a full disk reaches the caller as
/// `ENOSPC` rather than as a message of the archive writer.
struct KeepIo<'a, W> {
    out: &'a mut W,
    err: Option<std::io::Error>,
}

impl<W: Write> Write for KeepIo<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.out.write(buf).inspect_err(|e| self.keep(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush().inspect_err(|e| self.keep(e))
    }
}

impl<W: Seek> Seek for KeepIo<'_, W> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.out.seek(pos).inspect_err(|e| {
            self.err = Some(copy_io(e));
        })
    }
}

impl<W> KeepIo<'_, W> {
    fn keep(&mut self, e: &std::io::Error) {
        self.err = Some(copy_io(e));
    }
}

/// An I/O error like `e` (its errno kept where it has one).
fn copy_io(e: &std::io::Error) -> std::io::Error {
    match e.raw_os_error() {
        Some(n) => std::io::Error::from_raw_os_error(n),
        None => std::io::Error::new(e.kind(), e.to_string()),
    }
}

/// After a commit of an archive: staged member files (except those in `open`, still open for
/// writing: they go when closed, [`Core::archive_released`]) and folders outside GAF/TNT members are
/// in the archive now and dropped from the staging area (so the archive shows them, and a
/// member copied in as a binary shows as its exploded view); staged files inside members stay
/// (as in loose asset directories). Nothing is uncommitted any more. Returns what the files
/// and folders that left showed (their record, [`super::member_times`]); the staged folders
/// that stay keep their times (a member showing in place of its staged copy is no change).
pub(in crate::fs::writeback) fn finish_archive_stage(
    s: &mut Stage,
    open: &HashSet<String>,
) -> Vec<(String, Shown)> {
    let mut left = Vec::new();
    let mut stack = vec![String::new()];
    // every staged folder with what it showed before anything in it went
    let mut dirs: Vec<(String, Option<fs::Metadata>)> = Vec::new();
    while let Some(dir) = stack.pop() {
        let before = fs::symlink_metadata(s.path(&dir)).ok();
        let Ok(rd) = fs::read_dir(s.path(&dir)) else {
            continue;
        };
        dirs.push((dir.clone(), before));
        for e in rd.flatten() {
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            let p = join(&dir, &name);
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && part_of(&format!("{p}/x")).is_some() {
                continue; // a member's exploded view
            }
            if is_dir {
                if stack.len() < 4096 {
                    stack.push(p);
                }
            } else if archive_commits(&p) && !open.contains(&p) {
                let shown = e.metadata().ok().map(|m| Shown::of(&m));
                if fs::remove_file(e.path()).is_ok() {
                    left.extend(shown.map(|m| (p, m)));
                }
            }
        }
    }
    // deepest first; only empty ones go, the others keep their times
    dirs.sort_by_key(|(d, _)| {
        std::cmp::Reverse(if d.is_empty() {
            0
        } else {
            1 + d.matches('/').count()
        })
    });
    for (d, before) in dirs {
        if !d.is_empty() && fs::remove_dir(s.path(&d)).is_ok() {
            left.extend(before.map(|m| (d, Shown::of(&m))));
        } else if let Some(m) = before {
            let _ = sys::set_times(
                &s.path(&d),
                SetTime::At(time(m.atime(), m.atime_nsec())),
                SetTime::At(time(m.mtime(), m.mtime_nsec())),
            );
        }
    }
    // whiteouts outside members are done; those inside a removed member too
    let removed = removed_entries(s);
    s.meta.whiteouts.retain(|w| {
        part_of(w).is_some_and(|q| {
            !removed
                .iter()
                .any(|r| q == r || q.starts_with(&format!("{r}/")))
        })
    });
    s.meta.dirty.clear();
    s.meta.conflict = false;
    left
}

/// The entries of the archive (outside GAF/TNT members) that staging area `s` deletes.
pub(in crate::fs::writeback) fn removed_entries(s: &Stage) -> Vec<String> {
    s.meta
        .whiteouts
        .iter()
        .filter(|w| part_of(w).is_none())
        .cloned()
        .collect()
}

/// The deletions staged under folder `from` now stand under `to` (a folder moved).
pub(in crate::fs::writeback) fn move_whiteouts(s: &mut Stage, from: &str, to: &str) {
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

impl Core {
    /// `rename` of a folder, or of a GAF/TNT member's folder, of archive `rel` (outside
    /// members): the entry and everything under it move in the archive, committed at once.
    /// Uncommitted edits of the archive are committed first; if some stay uncommitted
    /// (pending, invalid), `EBUSY`. An existing destination: `EEXIST`.
    pub(in crate::fs::writeback) fn archive_rename(
        &self,
        mv: Move,
        at: AssetAt,
    ) -> Result<(), FsError> {
        let Move {
            parent,
            name,
            newparent,
            newname,
            src,
            dst,
        } = mv;
        let AssetAt {
            rel,
            gen,
            layout,
            meta,
        } = at;
        if part_of(dst).is_some() || dst == src || dst.starts_with(&format!("{src}/")) {
            return Err(FsError::CrossDevice("into a member or into itself"));
        }
        if !matches!(self.locate(rel, layout, dst), Loc::None) {
            return Err(FsError::Exists);
        }
        let ddir = dst.rsplit_once('/').map_or("", |(d, _)| d);
        self.case_clash(rel, layout, ddir, newname)?;
        let dirty = || {
            lock(&self.staging(rel).stage)
                .as_ref()
                .is_some_and(|s| !s.meta.dirty.is_empty())
        };
        if dirty() {
            self.commit(rel, src)?;
            if dirty() {
                return Err(FsError::Busy("uncommitted edits in the archive"));
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
        if let Err(e) = self.commit_moved(rel, dst, Some((src, dst))) {
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
        let moved = t.move_child(parent, OsStr::new(name), newparent, OsStr::new(newname));
        if let Some(ino) = moved {
            t.set_vpath(ino, dst);
            drop(t);
            self.send(Inval::Inode { ino });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::archive_commits;

    #[test]
    fn member_names_commit_and_temporary_names_do_not() {
        for n in [
            "side.tdf",
            "u/ARMCOM.FBI",
            "a_b.tdf~2",
            "x.gaf~13",
            "d/a.b~3",
        ] {
            assert!(archive_commits(n), "{n}");
        }
        for n in [
            "sedAb12Cd",
            "x~",
            "x.tdf~",
            "x.tdf~a",
            "x.tdf.~1~",
            "x.tdf.Ab1234",
            ".x.tdf",
            "~2",
            "a/.b/c.tdf",
        ] {
            assert!(!archive_commits(n), "{n}");
        }
    }
}
