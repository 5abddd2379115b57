//! The commit pipeline: one path for loose binaries and archives. Under the asset's stage
//! lock: nothing dirty or being removed → nothing to do; a conflict, or a binary that changed
//! outside the mount → `ESTALE`; else build (a loose GAF/TNT from its overlay, in memory; an
//! archive by rebuilding its edited members and repacking it by range into the temporary
//! file beside it, never holding it whole), validate, and — if the bytes changed — replace
//! the binary atomically with the old one in the history, drop staged files the build made
//! outdated and record the result in the status.

use super::archive::{finish_archive_stage, removed_entries};
use super::error_file;
use crate::fs::budget::Leased;
use crate::fs::core::assets::Given;
use crate::fs::core::view_options_for;
use crate::fs::core::{is_archive_path, Core};
use crate::fs::layout::Layout;
use crate::fs::shared::{join, lock};
use crate::fs::stage::{Ident, Stage, Status, Version, Written};
use crate::fs::staging::overlay::{
    builds, record_cob_renderings, record_flattenings, record_renderings, record_sequence_names,
    release_filled, Overlay,
};
use crate::fs::FsError;
use crate::view::archive::{ArchiveView, FileSource};
use crate::view::{
    AssetKind, EntryKind, FileSet, RebuildBase, SharedBytes, View, ViewError, ViewOptions,
};
use std::fs::{self, Metadata};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What building a commit gave.
pub(in crate::fs::writeback) enum Built {
    /// The new binary, whether it is the binary's bytes again (when known without them),
    /// the staged files (paths in the staging area) it makes outdated, and how long each
    /// phase took.
    Bytes {
        bytes: SharedBytes,
        unchanged: Option<bool>,
        outdated: Outdated,
        phases: Vec<(&'static str, Duration)>,
    },
    /// The new archive, written and synced in the temporary file beside it (not renamed
    /// yet), its record, the staged files it makes outdated and the phases' times.
    File {
        file: crate::atomic::Prepared,
        written: Written,
        outdated: Vec<String>,
        phases: Vec<(&'static str, Duration)>,
    },
    /// The build gives the binary as it is (an archive: nothing to write).
    Same,
    /// Something the build needs is not staged yet.
    Pending(String),
    /// The staged files do not build: the call that saved `file` fails (every call, when no
    /// file is named).
    Refused {
        file: Option<String>,
        message: String,
    },
    /// The commit failed for another reason (recorded in the status and returned).
    Failed(FsError),
    /// The commit could not start (returned as it is, the status unchanged).
    Aborted(FsError),
}

/// The staged files a commit makes outdated: known, or to be worked out once the new binary
/// is known to differ ([`outdated_staged`], maps only).
pub(in crate::fs::writeback) enum Outdated {
    Known(Vec<String>),
    Check {
        kind: AssetKind,
        /// The new binary, decoded: once it replaced the binary, leased from the budget of
        /// decoded views (`need` bytes) when there is room and handed to the cache as the
        /// new generation's view.
        view: Arc<Leased>,
        need: u64,
        opts: Box<ViewOptions>,
        /// `metadata.json` and the CRC-32 of `tilemap.csv` of the version being replaced
        /// (maps: the checksums of its renderings are recorded, see `record_renderings`).
        old_meta: Option<(Vec<u8>, Option<u32>)>,
        /// The version being replaced, decoded (its files' times carry over where the new
        /// version's are the same, see `times`).
        old: Option<Arc<dyn View>>,
        /// The new binary is known to build again from itself with the staged files on top
        /// ([`images_only`]): the second build of [`outdated_staged`] is not needed.
        stable: bool,
    },
}

/// The binary a commit starts from.
pub(in crate::fs::writeback) enum Base {
    /// There is none (a new asset).
    None,
    /// A loose GAF/TNT, read.
    Loose(SharedBytes, Metadata),
    /// A loose GAF as the mount holds it decoded (the view of the binary's identity as it is
    /// now, so its bytes are not read), and the binary open.
    Decoded(Arc<dyn View>, fs::File, Metadata),
    /// An archive, its directory parsed, read by range from its open file.
    Archive(Box<ArchiveView>, Metadata),
}

impl Base {
    /// The version a replace keeps in the history: the bytes, or the open file.
    fn version(&self) -> Option<Version<'_>> {
        match self {
            Base::None => None,
            Base::Loose(b, _) => Some(Version::Bytes(b)),
            Base::Decoded(_, f, _) => Some(Version::File(f)),
            Base::Archive(av, _) => av.file().map(Version::File),
        }
    }

    pub(in crate::fs::writeback) fn meta(&self) -> Option<&Metadata> {
        match self {
            Base::None => None,
            Base::Loose(_, m) | Base::Decoded(_, _, m) | Base::Archive(_, m) => Some(m),
        }
    }

    /// What a loose build starts from.
    fn loose(&self) -> LooseBase<'_> {
        match self {
            Base::Loose(b, _) => LooseBase::Bytes(b),
            Base::Decoded(v, _, _) => LooseBase::View(v),
            Base::None | Base::Archive(..) => LooseBase::None,
        }
    }
}

/// What [`Core::build_loose`] starts from: nothing (a new asset), the binary's bytes, or its
/// decoded view (a GAF's or a map's, [`View::gaf_model`], [`View::tnt_model`]).
#[derive(Clone, Copy)]
pub(in crate::fs::writeback) enum LooseBase<'a> {
    None,
    Bytes(&'a SharedBytes),
    View(&'a Arc<dyn View>),
}

impl Core {
    /// Rebuilds the binary of `rel` (a loose GAF/TNT or an archive) from its view and the
    /// staged files and replaces it if it changed. `trigger` is the path being saved (errors
    /// in it fail the call); `moved`: an archive entry renamed by this commit (from, to).
    pub(in crate::fs::writeback) fn commit_moved(
        &self,
        rel: &Path,
        trigger: &str,
        moved: Option<(&str, &str)>,
    ) -> Result<(), FsError> {
        let _m = self.mutating();
        let archive = is_archive_path(rel);
        let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let kind = AssetKind::from_name(name);
        if !archive && kind.is_none() {
            return Ok(());
        }
        let what = if archive { "archive" } else { "binary" };
        let staged = self.staging(rel);
        let mut g = lock(&staged.stage);
        let Some(s) = g.as_mut() else {
            return Ok(());
        };
        if s.meta.dirty.is_empty() {
            return Ok(());
        }
        if s.meta.conflict {
            return Err(FsError::Stale);
        }
        if s.meta.removing {
            return Ok(());
        }
        // phases 1 and 2: the binary as it is now, unless it changed outside the mount
        let base = self.read_base(rel, archive, kind, s, trigger)?;
        // phase 3: the build
        let t0 = std::time::Instant::now();
        let built = match (&base, kind) {
            (Base::Archive(av, m), _) => self.build_archive(rel, m, s, av, moved),
            (_, Some(kind)) => self.build_loose(rel, kind, s, base.loose(), trigger),
            (_, None) => return Ok(()),
        };
        let ToWrite {
            new,
            unchanged,
            outdated,
            phases,
        } = match self.to_write(rel, s, built, trigger) {
            ControlFlow::Continue(w) => w,
            ControlFlow::Break(ended) => return ended,
        };
        let t_built = t0.elapsed();
        if let Outdated::Check { view, .. } = &outdated {
            release_filled(s, &Layout::new(&**view));
        }
        let new = match new {
            Some(New::Bytes(b)) if unchanged == Some(true) => {
                drop(b);
                None
            }
            // not known from the build: compared with the binary (a held view's file)
            Some(New::Bytes(b)) if unchanged.is_none() && same_as_file(&base, &b) => None,
            n => n,
        };
        let Some(new) = new else {
            let replaced = self.keep_binary(rel, s, &outdated, what)?;
            drop(g);
            // the binary is the same, so are the inodes: the kernel's pages of the staged
            // bytes (written through the very inode now showing the generated file) go
            self.invalidate_files(rel, &replaced);
            return Ok(());
        };
        // phase 4: the staged files the new binary makes outdated
        let Checked {
            outdated,
            refreshed,
            old_view,
            new_view,
            t_check,
        } = self.check_outdated(s, &new, outdated);
        // phase 5: the new binary replaces the old one, which goes to the history
        let size = new.size();
        let written = self.write_binary(rel, s, &base, new, what)?;
        // phase 6: the new generation, the staging area and the status follow
        let given = self.hand_over(old_view.as_ref(), new_view, written, s.meta.base.clone());
        if archive {
            // what the members showed goes along to the version written
            if let (Some(from), Some(to)) = (base.meta().map(Ident::of), &s.meta.base) {
                let removed = removed_entries(s);
                lock(&staged.times)
                    .members
                    .committed(&from, to, &removed, moved);
            }
        }
        self.settle_stage(rel, s);
        drop_outdated(rel, s, &outdated);
        refresh_outdated(rel, s, &refreshed);
        if let Some(by) = s.meta.base.clone() {
            self.committed_times(rel, old_view, base.meta(), by);
        }
        s.meta.status = committed(size, trigger, &phases, t_check, t0, t_built);
        s.note_commit();
        s.save()?;
        log::info!("{}: {}", rel.display(), s.meta.status);
        drop(g);
        // the version replaced is often the last holder of its view (every frame's stored
        // bytes): freed off the path of the reply
        drop_later(base);
        // the new binary gets a new generation; the staged files stay on top of it
        let _ = self.resolve_given(rel, given);
        Ok(())
    }

    /// Phases 1 and 2 of a commit of `rel` (an archive or a binary of `kind`): the binary
    /// as it is now (`Base::None` for a new asset), refused (`Stale`, the stage marked in
    /// conflict) when it changed outside the mount since `trigger` was staged.
    fn read_base(
        &self,
        rel: &Path,
        archive: bool,
        kind: Option<AssetKind>,
        s: &mut Stage,
        trigger: &str,
    ) -> Result<Base, FsError> {
        let what = if archive { "archive" } else { "binary" };
        let cur = match self.read_current(rel, archive, kind) {
            Ok(x) => Some(x),
            // an archive is never new
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && archive => {
                return Err(FsError::Stale)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        if moved_outside(cur.as_ref().map(|(_, m)| m), s) {
            s.meta.conflict = true;
            s.meta.status = Status::Conflict(format!(
                "the {what} changed outside the mount after {trigger} was staged; delete the \
                 staged files to take the new {what}"
            ));
            let _ = s.save();
            log::warn!("{}: {}", rel.display(), s.meta.status);
            return Err(FsError::Stale);
        }
        Ok(match cur {
            None => Base::None,
            Some((Cur::File(f), m)) => Base::Archive(
                Box::new(self.archive_view_file(rel, FileSource::new(f)?)?),
                m,
            ),
            Some((Cur::Bytes(b), m)) => Base::Loose(b.into(), m),
            Some((Cur::Held(v, f), m)) => Base::Decoded(v, f, m),
        })
    }

    /// A commit whose build gives the binary as it is: the staging area settles and says
    /// clean. Returns the staged files replaced, whose kernel pages go once the stage is
    /// released.
    fn keep_binary(
        &self,
        rel: &Path,
        s: &mut Stage,
        outdated: &Outdated,
        what: &str,
    ) -> Result<Vec<String>, FsError> {
        // copies of earlier renderings arriving now stay as written (no build reads them):
        // a second rsync of the tree they came from must find them as it left them; a
        // [`regenerated`] file is replaced all the same, so what it shows never depends on
        // whether the commit that changed the binary ran before or after it arrived
        let mut replaced = Vec::new();
        if let Outdated::Check { kind, view, .. } = outdated {
            let out = regenerated_outdated(*kind, s, &**view);
            let (refreshed, out) = refresh_or_drop(s, &**view, out);
            drop_outdated(rel, s, &out);
            refresh_outdated(rel, s, &refreshed);
            replaced = out;
            replaced.extend(refreshed.into_iter().map(|(p, _)| p));
        }
        self.settle_stage(rel, s);
        s.meta.status = s.clean_status(what, self.opts.operation_gap);
        s.save()?;
        Ok(replaced)
    }

    /// Phase 5 of a commit: `new` replaces the binary of `rel` (`base`), which goes to the
    /// history; a failure is the stage's status.
    fn write_binary(
        &self,
        rel: &Path,
        s: &mut Stage,
        base: &Base,
        new: New,
        what: &str,
    ) -> Result<(Written, Option<SharedBytes>), FsError> {
        let old = base.version().zip(base.meta());
        // the binary's folder, opened beneath the game folder with no symlink followed: the
        // new binary is written and renamed in that very folder, even if its path is swapped
        // for a symlink meanwhile
        let replaced = self
            .parent_fd(rel)
            .map_err(FsError::from)
            .and_then(|(dir, name)| {
                use std::os::fd::AsFd;
                replace_binary(
                    rel,
                    &self.abs(rel),
                    (dir.as_fd(), &name),
                    s,
                    old,
                    new,
                    self.opts.operation_gap,
                )
            });
        replaced.inspect_err(|e| {
            s.meta.status = Status::Error(format!("writing the {what}: {e}"));
            let _ = s.save();
            log::warn!("{}: {}", rel.display(), s.meta.status);
        })
    }

    /// Invalidates the kernel's caches of files `vpaths` of asset `rel` (the inodes it was
    /// given for them, when it was given any).
    fn invalidate_files(&self, rel: &Path, vpaths: &[String]) {
        if vpaths.is_empty() {
            return;
        }
        let Some(root) = lock(&self.slot(rel).state).root else {
            return;
        };
        let inos: Vec<u64> = {
            let t = self.table();
            vpaths
                .iter()
                .filter_map(|p| {
                    p.split('/')
                        .try_fold(root, |at, name| t.child_of(at, std::ffi::OsStr::new(name)))
                })
                .collect()
        };
        for ino in inos {
            self.send(crate::fs::Inval::Inode { ino });
        }
    }

    /// [`Core::commit_moved`] with nothing moved.
    pub(in crate::fs::writeback) fn commit(
        &self,
        rel: &Path,
        trigger: &str,
    ) -> Result<(), FsError> {
        self.commit_moved(rel, trigger, None)
    }

    /// The binary `rel` as a commit starts from it, opened beneath the game folder (never
    /// through a symlink swapped in): a loose binary read (bounded by the limits of its
    /// format) or held decoded, an archive only opened.
    fn read_current(
        &self,
        rel: &Path,
        archive: bool,
        kind: Option<AssetKind>,
    ) -> std::io::Result<(Cur, fs::Metadata)> {
        use std::io::Read;
        let mut f = self.open_rel(rel, libc::O_RDONLY | libc::O_CLOEXEC, 0)?;
        let m = f.metadata()?;
        if archive {
            return Ok((Cur::File(f), m));
        }
        // the mount holds this very binary decoded (same identity): its bytes are not read
        if matches!(kind, Some(AssetKind::Gaf | AssetKind::Tnt)) {
            if let Some(v) = self.held_view(rel, &Ident::of(&m)) {
                return Ok((Cur::Held(v, f), m));
            }
        }
        if m.len() > self.opts.max_asset_bytes {
            // (EFBIG; the commit's status says why)
            log::warn!(
                "{}: binary over {} bytes",
                rel.display(),
                self.opts.max_asset_bytes
            );
            return Err(std::io::Error::from_raw_os_error(libc::EFBIG));
        }
        let mut b = Vec::with_capacity(m.len() as usize);
        f.read_to_end(&mut b)?;
        Ok((Cur::Bytes(b), m))
    }

    /// What a build leaves to write, or how the commit ends here (`Break`: pending, refused
    /// or failed, with the status recorded).
    fn to_write(
        &self,
        rel: &Path,
        s: &mut Stage,
        built: Built,
        trigger: &str,
    ) -> ControlFlow<Result<(), FsError>, ToWrite> {
        let (new, unchanged, outdated, phases) = match built {
            Built::Bytes {
                bytes,
                unchanged,
                outdated,
                phases,
            } => (Some(New::Bytes(bytes)), unchanged, outdated, phases),
            Built::File {
                file,
                written,
                outdated,
                phases,
            } => (
                Some(New::File(file, written)),
                None,
                Outdated::Known(outdated),
                phases,
            ),
            Built::Same => (None, None, Outdated::Known(Vec::new()), Vec::new()),
            Built::Pending(why) => {
                s.meta.status = Status::Pending(why);
                s.note_save(self.opts.operation_gap);
                let _ = s.save();
                log::info!("{}: {}", rel.display(), s.meta.status);
                return ControlFlow::Break(Ok(()));
            }
            Built::Refused { file, message } => {
                s.meta.status = Status::Error(message.clone());
                let _ = s.save();
                log::warn!("{}: commit refused: {message}", rel.display());
                if file.as_deref().map_or(true, |f| names_the_save(f, trigger)) {
                    return ControlFlow::Break(Err(FsError::Commit(format!(
                        "{}: {message}",
                        rel.display()
                    ))));
                }
                return ControlFlow::Break(Ok(()));
            }
            Built::Aborted(e) => return ControlFlow::Break(Err(e)),
            Built::Failed(e) => {
                s.meta.status = Status::Error(e.to_string());
                let _ = s.save();
                log::warn!("{}: commit refused: {e}", rel.display());
                return ControlFlow::Break(Err(e));
            }
        };
        ControlFlow::Continue(ToWrite {
            new,
            unchanged,
            outdated,
            phases,
        })
    }

    /// The binary a commit wrote, as written and decoded, for the resolve that follows
    /// while it is the file the commit left (not read or decoded again). The version replaced
    /// (`old_view`) is kept for the times only (`committed_times`): no longer counted in the
    /// budget of decoded views, as a decode made for that is not; the new one is leased in
    /// its place when there is room without waiting (else it is decoded again, as a look-up
    /// would).
    fn hand_over(
        &self,
        old_view: Option<&Arc<dyn View>>,
        new_view: Option<(Arc<Leased>, u64)>,
        written: (Written, Option<SharedBytes>),
        base: Option<Ident>,
    ) -> Option<Given> {
        if let Some(v) = old_view {
            v.unlease();
        }
        let new_view = new_view.and_then(|(v, need)| {
            let lease = self.cache.try_admit(need).ok()?;
            v.set_lease(lease);
            Some(v as Arc<dyn View>)
        });
        match (written, base) {
            ((w, Some(bytes)), Some(ident)) => Some(Given {
                // the bytes only when there is no view to hand over (then no view shares
                // them either: taken without a copy)
                bytes: new_view.is_none().then(|| Vec::from(bytes)),
                view: new_view,
                written: w,
                ident,
            }),
            _ => None,
        }
    }

    /// The staged files binary `new` makes outdated: known from the build, or worked out
    /// from its decoded view (maps, [`outdated_after`]).
    fn check_outdated(&self, s: &mut Stage, new: &New, outdated: Outdated) -> Checked {
        let (kind, view, need, opts, old_meta, old, stable) = match outdated {
            Outdated::Known(v) => {
                return Checked {
                    outdated: v,
                    refreshed: Vec::new(),
                    old_view: None,
                    new_view: None,
                    t_check: None,
                }
            }
            Outdated::Check {
                kind,
                view,
                need,
                opts,
                old_meta,
                old,
                stable,
            } => (kind, view, need, opts, old_meta, old, stable),
        };
        let new_view = Some((view.clone(), need));
        let view: Arc<dyn View> = view;
        if let (AssetKind::Cob, Some(v)) = (kind, &old) {
            record_cob_renderings(s, &**v);
        }
        match &old_meta {
            _ if kind == AssetKind::Cob => {}
            Some((m, t)) if kind == AssetKind::Tnt => record_renderings(s, m, *t),
            Some((m, _)) => record_flattenings(s, m),
            None => {}
        }
        if let Some(g) = old.as_ref().and_then(|v| v.gaf_model()) {
            record_sequence_names(s, g);
        }
        // deletions the new binary applied are no longer needed
        let layout = Layout::new(&*view);
        s.meta.whiteouts.retain(|w| layout.is_dir(w).is_some());
        let bytes = match new {
            New::Bytes(b) => &b[..],
            New::File(..) => &[],
        };
        let t = std::time::Instant::now();
        let (out, rebuilt) =
            outdated_after(&self.opts.packer, kind, s, &*view, bytes, &opts, stable);
        let t_check = rebuilt.then(|| t.elapsed());
        let (refreshed, out) = refresh_or_drop(s, &*view, out);
        Checked {
            outdated: out,
            refreshed,
            old_view: old,
            new_view,
            t_check,
        }
    }

    /// After a commit (or one that changed nothing): nothing is uncommitted any more; in an
    /// archive, what was committed leaves the staging area.
    pub(in crate::fs::writeback) fn settle_stage(&self, rel: &Path, s: &mut Stage) {
        if is_archive_path(rel) {
            let left = finish_archive_stage(s, &self.open_for_writing(rel));
            if let Some(of) = &s.meta.base {
                lock(&self.staging(rel).times).members.left(of, left);
            }
        } else {
            s.meta.dirty.clear();
            s.meta.conflict = false;
            s.meta.new_asset = false;
        }
    }

    /// Builds loose GAF/TNT `rel` from its overlay (`cur`: the binary now, if any, as bytes
    /// or as the view the mount holds of it) and checks the result decodes (and, for a new
    /// asset, is complete).
    pub(in crate::fs::writeback) fn build_loose(
        &self,
        rel: &Path,
        kind: AssetKind,
        s: &Stage,
        cur: LooseBase<'_>,
        trigger: &str,
    ) -> Built {
        let t0 = std::time::Instant::now();
        let rel_str = rel.to_string_lossy().replace('\\', "/");
        let opts = view_options_for(&self.game_dir, &rel_str);
        let view: Option<Arc<dyn View>> = match cur {
            LooseBase::None => None,
            LooseBase::Bytes(b) => match (self.opts.opener)(kind, b, &opts) {
                Ok(v) => Some(Arc::from(v)),
                Err(e) => return Built::Failed(e.into()),
            },
            LooseBase::View(v) => Some(v.clone()),
        };
        let t_decode = t0.elapsed();
        let old_meta = match view.as_deref() {
            Some(v) if kind == AssetKind::Tnt => v.render_vec("metadata.json").ok().map(|m| {
                let crc = match v.tnt_view() {
                    Some(t) => Some(t.tilemap_crc()),
                    None => v
                        .render_vec("tilemap.csv")
                        .ok()
                        .map(|b| crc32fast::hash(&b)),
                };
                (m, crc)
            }),
            Some(v) => v.render_vec("metadata.json").ok().map(|m| (m, None)),
            _ => None,
        };
        let overlay = Overlay {
            stage: s,
            layout: view.as_deref().map(Layout::new),
            view: view.as_deref(),
            kind,
            staged: Some(crate::fs::stage::StagedTree::of(&s.files)),
        };
        // a map's renderings are taken from its decoded view (every tile decoded again
        // otherwise); whether its bytes changed is then told from the bytes read
        let tnt = view.as_deref().and_then(|v| v.tnt_model());
        let own = view.as_deref().and_then(|v| v.base_bytes());
        let base = match (cur, view.as_deref().and_then(|v| v.gaf_model()), tnt) {
            (_, _, Some(t)) => RebuildBase::Tnt(t),
            (LooseBase::Bytes(b), _, _) => RebuildBase::Bytes(b),
            (LooseBase::View(_), _, _) if own.is_some() => {
                own.map_or(RebuildBase::None, RebuildBase::Bytes)
            }
            (LooseBase::View(_), Some(g), _) => RebuildBase::Gaf(g),
            (LooseBase::View(_) | LooseBase::None, _, _) => RebuildBase::None,
        };
        let mut t_build = Duration::ZERO;
        let built = (self.opts.packer)(kind, &overlay, base, &opts).and_then(|mut r| {
            t_build = t0.elapsed();
            if let (RebuildBase::Tnt(_), LooseBase::Bytes(b)) = (base, cur) {
                r.unchanged = Some(r.bytes[..] == b[..]);
            }
            // the new view shares the bytes written (a GAF's frames slice them)
            let bytes = SharedBytes::from(std::mem::take(&mut r.bytes));
            let v = (self.opts.opener)(kind, &bytes, &opts).map_err(|e| {
                ViewError::invalid(trigger, format!("the rebuilt binary does not decode: {e}"))
            })?;
            // a map's checksums of what did not change carry over
            if let (Some(new), Some(old)) =
                (v.tnt_view(), view.as_deref().and_then(|o| o.tnt_view()))
            {
                new.inherit(old);
            }
            if s.meta.new_asset {
                complete_new(kind, &overlay, &*v)?;
            }
            Ok((bytes, r.unchanged, v))
        });
        let t_valid = t0.elapsed();
        let stable = images_only(kind, s, overlay.layout.as_ref());
        drop(overlay);
        let old = view;
        match built {
            Ok((bytes, unchanged, view)) => {
                // what the new view holds, as its decode would lease it
                // (and the version before's map.png a map view holds to copy bands from)
                let need = crate::fs::budget::estimate(kind, &bytes, &opts.limits)
                    + view.tnt_view().map_or(0, |t| t.seed_bytes());
                let view = Arc::new(Leased::new(view, None));
                Built::Bytes {
                    bytes,
                    unchanged,
                    outdated: Outdated::Check {
                        kind,
                        view,
                        need,
                        opts: Box::new(opts),
                        old_meta,
                        old,
                        stable,
                    },
                    phases: vec![
                        ("decode", t_decode),
                        ("build", t_build.saturating_sub(t_decode)),
                        ("validate", t_valid.saturating_sub(t_build)),
                    ],
                }
            }
            Err(e @ ViewError::Missing { .. }) => Built::Pending(e.to_string()),
            Err(e) => Built::Refused {
                file: error_file(&e).map(str::to_string),
                message: e.to_string(),
            },
        }
    }
}

/// Drops `v` on a thread of its own (a big view's frames take milliseconds to free), or
/// here when no thread can be started.
fn drop_later<T: Send + 'static>(v: T) {
    // (a failed spawn drops the closure, and `v` with it, here)
    let _ = std::thread::Builder::new()
        .name("tafs-free".into())
        .spawn(move || drop(v));
}

/// What the binary was read as for a commit: a loose binary's bytes, an archive's open file,
/// or a loose GAF's open file and the view the mount holds of it.
/// What a build leaves to write ([`Core::to_write`]).
struct ToWrite {
    /// The new binary (`None`: the build gives the binary as it is).
    new: Option<New>,
    /// Whether `new` is the binary's bytes again, when the build knows.
    unchanged: Option<bool>,
    outdated: Outdated,
    /// How long each phase of the build took.
    phases: Vec<(&'static str, Duration)>,
}

/// The staged files a new binary makes outdated, worked out ([`Core::check_outdated`]).
struct Checked {
    /// Staged files to drop.
    outdated: Vec<String>,
    /// Outdated files of folders still being filled, with the new binary's bytes.
    refreshed: Vec<(String, Vec<u8>)>,
    /// The version being replaced, decoded.
    old_view: Option<Arc<dyn View>>,
    /// The new binary's view (handed to the cache as the new generation's) and the bytes
    /// its lease needs.
    new_view: Option<(Arc<Leased>, u64)>,
    /// How long the second build of [`outdated_staged`] took, when it ran.
    t_check: Option<Duration>,
}

/// Whether the binary (`cur`: its metadata now, if it is there) is not the one the staged
/// files are based on.
fn moved_outside(cur: Option<&fs::Metadata>, s: &Stage) -> bool {
    match (cur, &s.meta.base) {
        (Some(m), Some(b)) => Ident::of(m) != *b,
        (Some(_), None) => true,
        (None, Some(_)) => true,
        (None, None) => !s.meta.new_asset,
    }
}

/// The status of a commit that wrote `size` bytes after saving `trigger`, with the time of
/// each phase (`t0`: the build's start; `t_built`: its length).
fn committed(
    size: u64,
    trigger: &str,
    phases: &[(&'static str, Duration)],
    t_check: Option<Duration>,
    t0: std::time::Instant,
    t_built: Duration,
) -> Status {
    let ms = |d: Duration| d.as_millis();
    let mut steps: Vec<String> = phases
        .iter()
        .map(|(name, d)| format!("{name} {}", ms(*d)))
        .collect();
    if let Some(d) = t_check {
        steps.push(format!("check {}", ms(d)));
    }
    let rest = t0.elapsed().saturating_sub(t_built);
    steps.push(format!(
        "history + replace {}",
        ms(rest.saturating_sub(t_check.unwrap_or_default()))
    ));
    Status::Committed(format!(
        "{size} bytes after saving {trigger} ({} ms: {})",
        ms(t0.elapsed()),
        steps.join(", ")
    ))
}

enum Cur {
    Bytes(Vec<u8>),
    File(fs::File),
    Held(Arc<dyn View>, fs::File),
}

/// Whether `bytes` are those of the binary `base` holds open (a held view's). The bytes of a
/// read binary are compared by the build.
fn same_as_file(base: &Base, bytes: &[u8]) -> bool {
    let Base::Decoded(_, f, m) = base else {
        return false;
    };
    m.len() == bytes.len() as u64 && crate::sys::file_holds(f, bytes).unwrap_or(false)
}

/// A new binary a commit replaces the old one with.
pub(in crate::fs::writeback) enum New {
    /// In memory (a loose GAF/TNT, bounded by its format's limits; shared with the view
    /// decoded from it).
    Bytes(SharedBytes),
    /// In the temporary file beside the binary (an archive), synced, with its record.
    File(crate::atomic::Prepared, Written),
}

impl New {
    /// The record of what is written.
    pub(in crate::fs::writeback) fn written(&self) -> Written {
        match self {
            New::Bytes(b) => Written::of(b),
            New::File(_, w) => *w,
        }
    }

    /// Its size in bytes.
    fn size(&self) -> u64 {
        match self {
            New::Bytes(b) => b.len() as u64,
            New::File(_, w) => w.size,
        }
    }
}

/// Replaces binary `abs` (`old`: its version and metadata, if it exists) with `new`, the way
/// every commit does: a record of what is being written (so a commit killed after the rename
/// is recognised at the next start), the old version to the history (a hard link where it
/// can be, else a copy — file to file for an archive — unless the commit continues an
/// operation, `gap`), leftovers of an interrupted commit removed (a new archive's own
/// temporary file was made after that, see `build_archive`), atomic replace; the staging
/// area is based on the new file. Gives back the record of what was written and the bytes of
/// a loose binary, as written.
pub(in crate::fs::writeback) fn replace_binary(
    rel: &Path,
    abs: &Path,
    (dir, name): (std::os::fd::BorrowedFd<'_>, &std::ffi::OsStr),
    s: &mut Stage,
    old: Option<(Version<'_>, &Metadata)>,
    new: New,
    gap: Duration,
) -> Result<(Written, Option<SharedBytes>), FsError> {
    let written = new.written();
    s.meta.committing = Some(written);
    let record = s.dir.clone();
    s.save_durable()
        .map_err(|e| in_state_folder("recording the commit in", &record, e))?;
    let linked = match old {
        Some((v, m)) => {
            let history = s.history.clone();
            s.keep_replaced(abs, v, m, written, gap)
                .inspect_err(|_| s.meta.committing = None)
                .map_err(|e| {
                    in_state_folder(
                        "keeping the version it replaces in the history of",
                        &history,
                        e,
                    )
                })?
        }
        None => None,
    };
    let (replaced, written_bytes) = match new {
        New::Bytes(bytes) => {
            let n = crate::atomic::remove_leftovers_at(dir, name);
            if n > 0 {
                log::info!(
                    "{}: removed {n} temporary file(s) of an interrupted commit",
                    rel.display()
                );
            }
            (
                crate::atomic::write_at(dir, name, &bytes, old.map(|(_, m)| m)),
                Some(bytes),
            )
        }
        New::File(file, _) => (file.commit(), None),
    };
    if let Err(e) = replaced {
        // the binary stays: a link of it in the history goes (a later change made to the
        // binary in place would change the version)
        s.meta.committing = None;
        if let Some(p) = linked {
            s.unkeep(&p);
        }
        return Err(with_errno(e));
    }
    if let (None, Some((uid, gid))) = (&old, s.meta.owner) {
        // a new asset's first binary belongs to whoever made the asset
        if let Err(e) = crate::sys::chown_at(dir, name, Some(uid), Some(gid)) {
            log::warn!("{}: giving it to {uid}:{gid}: {e}", rel.display());
        }
    }
    let now = Ident::of(&crate::sys::lstat_at(dir, name)?);
    if old.is_some() {
        s.note_replaced(&now);
    }
    s.meta.base = Some(now);
    s.meta.committing = None;
    Ok((written, written_bytes))
}

/// An error of the state folder while committing (`what` … `path`): the state folder's
/// fault, not the game folder's, and the status says so (with the errno of its kind).
fn in_state_folder(what: &str, path: &Path, e: std::io::Error) -> FsError {
    let errno = e.raw_os_error();
    let e = std::io::Error::new(
        e.kind(),
        format!(
            "{what} the state folder ({}): {e}; the binary is unchanged",
            path.display()
        ),
    );
    FsError::InStateFolder(e, errno.unwrap_or(libc::EIO))
}

/// [`with_errno`] of an I/O error; other errors as they are.
pub(in crate::fs::writeback) fn with_errno_fs(e: FsError) -> FsError {
    match e {
        FsError::Io(e) => with_errno(e),
        e => e,
    }
}

/// An I/O error with the errno its kind stands for when it carries none (the temporary file's
/// errors come wrapped with its path): a full folder is `ENOSPC` to the writer, not `EIO`.
fn with_errno(e: std::io::Error) -> FsError {
    use std::io::ErrorKind as K;
    if e.raw_os_error().is_some() {
        return e.into();
    }
    let errno = match e.kind() {
        K::StorageFull => libc::ENOSPC,
        K::PermissionDenied => libc::EACCES,
        K::ReadOnlyFilesystem => libc::EROFS,
        K::NotFound => libc::ENOENT,
        K::FileTooLarge => libc::EFBIG,
        _ => return e.into(),
    };
    std::io::Error::from_raw_os_error(errno).into()
}

/// Removes the staged files `outdated` (paths in the staging area) after a commit.
pub(in crate::fs::writeback) fn drop_outdated(rel: &Path, s: &Stage, outdated: &[String]) {
    for p in outdated {
        // the generated file of the same name shows in its place: its folder is unchanged
        let staged = s.path(p);
        super::keeping_times(staged.parent(), || fs::remove_file(&staged)).ok();
    }
    if !outdated.is_empty() {
        log::info!(
            "{}: staged files that no longer describe the binary dropped: {}",
            rel.display(),
            outdated.join(", ")
        );
    }
}

/// Replaces staged files `files` (paths and the new binary's bytes) after a commit, in place
/// (the inode the kernel holds stays at its name), keeping their folders' times; a file that
/// cannot be written is dropped.
fn refresh_outdated(rel: &Path, s: &Stage, files: &[(String, Vec<u8>)]) {
    for (p, bytes) in files {
        let staged = s.path(p);
        let r = super::keeping_times(staged.parent(), || {
            fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&staged)
                .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
        });
        if let Err(e) = r {
            log::warn!("{}: {p}: {e}; dropped", rel.display());
            drop_outdated(rel, s, std::slice::from_ref(p));
        }
    }
    if !files.is_empty() {
        let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        log::info!(
            "{}: staged files of folders being filled take the binary's: {}",
            rel.display(),
            names.join(", ")
        );
    }
}

/// Outdated staged files `out` split into those refreshed in place with the binary's bytes
/// (`view`) and those dropped: a folder being filled shows its staged files only, so a dropped
/// one would vanish from it (a `cp -r` of a sequence folder losing its `sequence.csv` until
/// the folder is listed); it takes the binary's bytes instead.
fn refresh_or_drop(
    s: &Stage,
    view: &dyn View,
    out: Vec<String>,
) -> (Vec<(String, Vec<u8>)>, Vec<String>) {
    let (refresh, out): (Vec<String>, Vec<String>) = out.into_iter().partition(|p| {
        let dir = p.rsplit_once('/').map_or("", |(d, _)| d);
        crate::fs::staging::overlay::filling(Some(s), dir)
    });
    let mut refreshed = Vec::new();
    for p in refresh {
        match view.render_vec(&p) {
            Ok(b) => refreshed.push((p, b)),
            Err(e) => log::debug!("{p}: not rendered ({e}); dropped"),
        }
    }
    (refreshed, out)
}

/// Staged [`regenerated`] files of a commit that left the binary as it was (`view`, the
/// binary decoded) whose bytes are not the binary's: a `sequence.csv` copied with its folder
/// arriving after the commit that already built that folder's sequence (rsync sends it last,
/// after the folder's `frames.csv` committed the renamed sequence) builds the same binary, and
/// would otherwise keep the name and index it was copied with.
fn regenerated_outdated(kind: AssetKind, s: &Stage, view: &dyn View) -> Vec<String> {
    if kind != AssetKind::Gaf || !s.has_files() {
        return Vec::new();
    }
    let layout = Layout::new(view);
    let Ok(rd) = fs::read_dir(s.path("")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Ok(dir) = e.file_name().into_string() else {
            continue;
        };
        let p = join(&dir, "sequence.csv");
        if !regenerated(kind, &p) || layout.is_dir(&p) != Some(false) {
            continue;
        }
        let Ok(staged) = fs::read(s.path(&p)) else {
            continue;
        };
        if view.render_vec(&p).ok().is_some_and(|g| g != staged) {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Staged layout files that must be dropped after committing `bytes` (decoded as `view`)
/// because they no longer describe it. A commit can transform what it was given: a map whose
/// `map.png` was edited is re-tiled, which renumbers `tilemap.csv` and changes the mosaic
/// checksum in `metadata.json`. When building again from the new binary with the staged
/// files on top does not give the same bytes, every staged layout file that differs from the
/// new binary's generated one is outdated (so the next commit cannot undo this one); files the
/// view does not have are kept. A GAF build names a copied or renamed sequence folder after
/// the folder and renumbers the sequences, so the copied `sequence.csv` is outdated the same
/// way (without this, every later commit would add the copy again): staged
/// [`regenerated`] files and copies of earlier renderings of map files are outdated after
/// every commit.
pub(in crate::fs::writeback) fn outdated_staged(
    packer: &crate::fs::stage::Packer,
    kind: AssetKind,
    stage: &Stage,
    view: &dyn View,
    bytes: &[u8],
    opts: &ViewOptions,
) -> Vec<String> {
    outdated_after(packer, kind, stage, view, bytes, opts, false).0
}

/// [`outdated_staged`], and whether it built again; `stable`: the build is known to be
/// stable ([`images_only`]), so it is not built again (debug builds build it again all
/// the same to check that claim, not counted as built again).
fn outdated_after(
    packer: &crate::fs::stage::Packer,
    kind: AssetKind,
    stage: &Stage,
    view: &dyn View,
    bytes: &[u8],
    opts: &ViewOptions,
    stable: bool,
) -> (Vec<String>, bool) {
    // (debug builds check a stable build without the snapshot: asking the file system)
    let overlay = Overlay {
        stage,
        layout: Some(Layout::new(view)),
        view: Some(view),
        kind,
        staged: (!stable).then(|| crate::fs::stage::StagedTree::of(&stage.files)),
    };
    // from the new binary as decoded (its renderings taken from it), else its bytes
    let base = match (view.tnt_model(), view.gaf_model()) {
        (Some(t), _) => RebuildBase::Tnt(t),
        (None, Some(g)) => RebuildBase::Gaf(g),
        (None, None) => RebuildBase::Bytes(bytes),
    };
    let again = || packer(kind, &overlay, base, opts).is_ok_and(|r| r.bytes == bytes);
    debug_assert!(
        !stable || again(),
        "a commit of frame images only did not build the same binary again: {:?}",
        stage.meta.dirty
    );
    let rebuilt = !stable;
    let stable = stable || again();
    // copies of earlier renderings of derived map files give way to the new binary's (a
    // file this commit made outdated, such as the tilemap.csv a re-tiling renumbered; a
    // copy arriving stale, by a commit that changes nothing, stays as written)
    let stale = overlay.stale_copies();
    let mut out = Vec::new();
    let mut stack = vec![String::new()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = fs::read_dir(stage.path(&dir)) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            let p = join(&dir, &name);
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if stack.len() < 4096 {
                    stack.push(p);
                }
            } else if builds(&p) && (!stable || regenerated(kind, &p) || stale.contains(&p)) {
                // files the view does not have (the user's own) are kept
                let in_view = overlay.layout.as_ref().and_then(|l| l.is_dir(&p)) == Some(false);
                if in_view && fs::read(e.path()).ok() != view.render_vec(&p).ok() {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    (out, rebuilt)
}

/// A map's files a build takes as they are (the grid, the placements, the heights, the
/// minimap's pixels): built again from the binary they made, they give it again.
const TAKEN_AS_THEY_ARE: [&str; 4] = [
    "tilemap.csv",
    "features.csv",
    "heightmap.png",
    "minimap.png",
];

/// Whether the staged edits are files a build takes as they are: for a GAF, frame images
/// only (every dirty file a `<n>.png` of a sequence folder that `layout`, the version being
/// replaced, has, of a frame that is no composite, no folder being filled); for a map, tile
/// images (`tiles/<n>.png` of tiles `layout` has) and [`TAKEN_AS_THEY_ARE`], with no staged
/// `metadata.json` or `map.png` (their renderings hold the mosaic and the checksums these
/// change: a staged copy would be outdated). Nothing deleted, the asset not new.
/// Building from the new binary with the same staged files on top then gives that binary
/// again: the unedited frames or tiles are its stored bytes, the edited images decode to
/// the pixels it now holds (GAF: and those find their own stored bytes again,
/// `reuse_payloads`; the indices kept from the base are the ones it now has,
/// `keep_base_indices`), in the same places.
fn images_only(kind: AssetKind, s: &Stage, layout: Option<&Layout>) -> bool {
    let Some(layout) = layout else {
        return false;
    };
    if s.meta.new_asset || !s.meta.whiteouts.is_empty() || s.meta.dirty.is_empty() {
        return false;
    }
    let numbered = |stem: &str| !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit());
    match kind {
        AssetKind::Gaf => s.meta.dirty.iter().all(|p| {
            let Some((dir, file)) = p.split_once('/') else {
                return false;
            };
            let Some(stem) = file.strip_suffix(".png") else {
                return false;
            };
            let layers = format!("{dir}/{stem}.layers");
            numbered(stem)
                && layout.is_dir(p) == Some(false)
                && layout.is_dir(&layers).is_none()
                && s.path(&layers).symlink_metadata().is_err()
                && !crate::fs::staging::overlay::filling(Some(s), dir)
        }),
        AssetKind::Tnt => {
            s.meta.dirty.iter().all(|p| {
                let tile = p
                    .strip_prefix("tiles/")
                    .and_then(|f| f.strip_suffix(".png"))
                    .is_some_and(numbered)
                    && !crate::fs::staging::overlay::filling(Some(s), "tiles");
                (tile || TAKEN_AS_THEY_ARE.contains(&p.as_str())) && layout.is_dir(p) == Some(false)
            }) && ["metadata.json", "map.png"]
                .iter()
                .all(|f| s.path(f).symlink_metadata().is_err())
        }
        _ => false,
    }
}

/// Whether a commit error in `file` is the save of `trigger`'s: the same file, or (GAF) a file
/// in the `<n>.layers/` folder of frame image `<n>.png` (an edit of the layers conflicting
/// with an edit of the image fails whichever save makes it one).
fn names_the_save(file: &str, trigger: &str) -> bool {
    file == trigger
        || file
            .strip_suffix(".png")
            .is_some_and(|stem| trigger.starts_with(&format!("{stem}.layers/")))
}

/// Staged files replaced by the new binary's after every commit when they differ: a GAF
/// sequence's `sequence.csv` (everything it says is in the binary, and a copied folder's
/// names and indexes another sequence). Other staged files that build the same binary stay as
/// written (their bytes can differ from the generated ones and still mean the same pixels or
/// rows, a second `rsync -a` must find them as it left them, and a new asset arriving file by
/// file still needs its `metadata.json`).
fn regenerated(kind: AssetKind, path: &str) -> bool {
    kind == AssetKind::Gaf && path.split('/').nth(1) == Some("sequence.csv")
}

/// Generated files no build reads (a sequence's `animated.png`): a renamed folder leaves
/// them to be generated again rather than staging copies that would go stale.
pub(in crate::fs::writeback) fn derived_only(kind: AssetKind, path: &str) -> bool {
    kind == AssetKind::Gaf && path.rsplit('/').next() == Some("animated.png")
}

/// A new asset commits only once it has a sequence, its metadata.json, and every sequence
/// its metadata.json lists.
pub(in crate::fs::writeback) fn complete_new(
    kind: AssetKind,
    files: &dyn FileSet,
    v: &dyn View,
) -> Result<(), ViewError> {
    if kind != AssetKind::Gaf {
        return Ok(());
    }
    if !v.entries().iter().any(|e| e.kind == EntryKind::Dir) {
        return Err(ViewError::Missing {
            file: "<sequence>/frames.csv".into(),
            why: "a new asset needs at least one complete sequence".into(),
        });
    }
    // a copy of a dump brings metadata.json (raw name bytes, trailing bytes, block layout):
    // building before it is there would commit a binary without them
    let Some(b) = files.read("metadata.json")? else {
        return Err(ViewError::Missing {
            file: "metadata.json".into(),
            why: "a new GAF commits once its metadata.json is there".into(),
        });
    };
    {
        let meta: serde_json::Value = serde_json::from_slice(&b)
            .map_err(|e| ViewError::invalid("metadata.json", e.to_string()))?;
        let root = files.list("")?.unwrap_or_default();
        // (a dump's folders hold both CSVs; a sequence built without its sequence.csv would
        // take another place)
        let complete = |dir: &str| -> Result<bool, ViewError> {
            Ok(files.read(&format!("{dir}/frames.csv"))?.is_some()
                && files.read(&format!("{dir}/sequence.csv"))?.is_some())
        };
        let listed: Vec<&str> = meta
            .get("sequences")
            .and_then(|s| s.as_array())
            .into_iter()
            .flatten()
            .filter_map(|s| s.get("dir").and_then(|d| d.as_str()))
            .collect();
        let mut held = 0;
        for (n, d) in &root {
            if *d && complete(n)? {
                held += 1;
            }
        }
        // as many complete sequence folders as metadata.json lists: the dump is there (a
        // folder renamed since it was dumped stands for the name it lists, as in `tafs gaf
        // build`); fewer: a listed one still to come
        if held < listed.len() {
            for dir in listed {
                if !(root.iter().any(|(n, d)| *d && n == dir) && complete(dir)?) {
                    return Err(ViewError::Missing {
                        file: format!("{dir}/"),
                        why: "listed in metadata.json".into(),
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::formats::gaf::{self, Content};
    use crate::fs::core::{view_options_for, Core, MountOptions, Resolved};
    use crate::fs::stage::Ident;
    use crate::view::image::{decode_png, write_indexed_png, PngPixels};
    use crate::view::AssetKind;
    use std::path::Path;

    /// The sample GAF with the first drawn pixel of frame `fi` of "pulse" set to `to`.
    fn sample_with(fi: usize, to: u8) -> Vec<u8> {
        let mut g = crate::sample::animated_gaf();
        let s = g
            .sequences
            .iter_mut()
            .find(|s| s.name_str() == "pulse")
            .unwrap();
        if let Content::Pixels(p) = &mut s.frames[fi].frame.content {
            let k = p.opaque.iter().position(|o| *o).unwrap();
            p.indices[k] = to;
            p.payload = None;
        }
        gaf::write(&g).unwrap()
    }

    /// The first drawn pixel's index of frame `fi` of "pulse" in GAF `bytes`.
    fn first_drawn(bytes: &[u8], fi: usize) -> u8 {
        let g = gaf::parse(bytes, &Default::default()).unwrap();
        let s = g
            .sequences
            .iter()
            .find(|s| s.name_str() == "pulse")
            .unwrap();
        let p = s.frames[fi].frame.pixels().unwrap();
        p.indices[p.opaque.iter().position(|o| *o).unwrap()]
    }

    #[test]
    fn a_binary_changed_after_its_view_was_decoded_is_built_from_its_bytes() {
        let game = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(game.path().join("anims")).unwrap();
        let bin = game.path().join("anims/fx.gaf");
        std::fs::write(&bin, sample_with(0, 0xC0)).unwrap();
        let opts = MountOptions {
            state_dir: Some(state.path().to_path_buf()),
            ..MountOptions::default()
        };
        let core = Core::new(game.path(), opts, None).unwrap();
        let rel = Path::new("anims/fx.gaf");
        assert!(matches!(core.resolve(rel).unwrap(), Resolved::Asset { .. }));
        let a = Ident::of(&std::fs::metadata(&bin).unwrap());
        assert!(core.held_view(rel, &a).is_some(), "the view of A is held");
        // B written behind the mount's back: nothing has looked it up since
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b_bytes = sample_with(0, 0xC1);
        std::fs::write(&bin, &b_bytes).unwrap();
        let b_meta = std::fs::metadata(&bin).unwrap();
        assert!(core.held_view(rel, &Ident::of(&b_meta)).is_none());
        // frame 2 edited, staged on B (as a save after a look-up of B stages it)
        let opts = view_options_for(game.path(), "anims/fx.gaf");
        let view = crate::view::open(AssetKind::Gaf, &b_bytes, &opts).unwrap();
        let d = decode_png(&view.render_vec("pulse/2.png").unwrap()).unwrap();
        let PngPixels::Indexed {
            mut indices, trns, ..
        } = d.pixels
        else {
            panic!("dump PNGs are indexed")
        };
        let transparent = trns.iter().position(|a| *a == 0).map(|i| i as u8);
        let k = indices
            .iter()
            .position(|i| Some(*i) != transparent)
            .unwrap();
        indices[k] = if indices[k] == 0xB5 { 0xB6 } else { 0xB5 };
        let mut png = Vec::new();
        write_indexed_png(
            &mut png,
            d.width,
            d.height,
            &indices,
            &opts.palette,
            transparent,
        )
        .unwrap();
        core.with_stage(rel, &b_meta, |s| {
            std::fs::create_dir_all(s.path("pulse"))?;
            std::fs::write(s.path("pulse/2.png"), &png)?;
            Core::mark_dirty(s, "pulse/2.png");
            Ok(())
        })
        .unwrap();
        core.commit(rel, "pulse/2.png").unwrap();
        // built from B's bytes: B's frame 0, the edited frame 2 (from A's view, frame 0
        // would be A's)
        let out = std::fs::read(&bin).unwrap();
        assert_eq!(first_drawn(&out, 0), 0xC1);
        assert_eq!(first_drawn(&out, 2), indices[k]);
    }
}
