//! Write-back: staged files in asset directories (loose binaries and archives) and the
//! commits that rebuild the binary (SEMANTICS.md, "Writing inside asset directories",
//! "Archives").
//!
//! * this file: the staging area as the core sees it — where a path of an asset directory
//!   is (staged, generated, hidden), starting a stage, copying a generated file into it,
//!   rebasing it when the binary changed;
//! * `ops`: the operations inside asset directories (create, open for writing, setattr,
//!   mkdir, unlink, rmdir, rename, new and removed assets);
//! * `commit`: the one commit pipeline of loose binaries and archives;
//! * `archive`, `edit`: what is particular to archives (members, the edited tree, renames);
//! * `status`: the `.tafs-status` files;
//! * `times`: the mtimes generated files keep across commits that did not change them;
//! * `member_times`: the times and permission bits an archive's members keep across commits;
//! * `deferred`: archive commits put off while saves keep coming.
//!
//! What it keeps (per asset the staging area, the records of times, the save put off; the
//! queue of put-off commits; the staged overlay) is `fs::staging`'s, which the core owns.

mod api;
mod archive;
mod commit;
mod deferred;
mod edit;
mod member_times;
mod ops;
mod status;
mod times;

use crate::fs::staging::overlay;

use crate::fs::core::assets::{AssetLock, Outcome};
use crate::fs::core::inode::NodeKind;
use crate::fs::core::{Core, Resolved};
use crate::fs::layout::Layout;
use crate::fs::shared::{fingerprint, folder_fingerprint, lock, time, STATUS_NAME};
use crate::fs::stage::{Ident, Stage, StagedIndex, Status};
use crate::fs::FsError;
use crate::sys::{self, SetTime};
use crate::view::{AssetKind, ViewError};
use std::ffi::{OsStr, OsString};
use std::fs::{self, Metadata};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The file named by a view error, if any.
pub(in crate::fs::writeback) fn error_file(e: &ViewError) -> Option<&str> {
    match e {
        ViewError::Missing { file, .. }
        | ViewError::Invalid { file, .. }
        | ViewError::Csv { file, .. } => Some(file),
        ViewError::Io { path, .. } => Some(path),
        _ => None,
    }
}

impl Core {
    /// A game-folder path with no binary: a new asset if one is staged there.
    pub(in crate::fs::writeback) fn resolve_new(
        &self,
        rel: &Path,
    ) -> Option<Result<Resolved, FsError>> {
        self.opts.state_dir.as_ref()?;
        let name = rel.file_name()?.to_str()?;
        AssetKind::from_name(name)?;
        let asset = self.slot(rel);
        let staged = self.staging(rel);
        let mut st = AssetLock::new(&asset, &staged);
        let meta = {
            let g = st.stage();
            let s = g.as_ref()?;
            if !s.meta.new_asset {
                return None;
            }
            fs::metadata(&s.files).ok()?
        };
        let fresh = st.ident.is_some() || !matches!(st.outcome, Outcome::Ready(_));
        if fresh {
            let old_gen = st.gen;
            let was_ready = matches!(st.outcome, Outcome::Ready(_));
            st.gen = self.next_gen.fetch_add(1, Ordering::Relaxed);
            st.ident = None;
            st.outcome = Outcome::Ready(Arc::new(Layout::empty()));
            let root = st.root;
            if was_ready {
                drop(st);
                self.invalidate_gen(old_gen, root);
                st = AssetLock::new(&asset, &staged);
            }
        }
        match &st.outcome {
            Outcome::Ready(layout) => Some(Ok(Resolved::Asset {
                gen: st.gen,
                layout: layout.clone(),
                meta,
            })),
            _ => None,
        }
    }

    /// The binary of `rel` is now `ident`: if the staged files were based on another
    /// version, clean ones are dropped and dirty ones are in conflict. `written` gives the
    /// binary's record (size and CRC, read by streaming), asked for only to recognise an
    /// interrupted commit of ours.
    pub(in crate::fs::writeback) fn rebase(
        &self,
        rel: &Path,
        stage: &mut Stage,
        ident: &Ident,
        written: &dyn Fn() -> std::io::Result<crate::fs::stage::Written>,
    ) {
        let based_elsewhere = match &stage.meta.base {
            Some(b) => b != ident,
            None => stage.meta.new_asset,
        };
        if !based_elsewhere || !stage.active() {
            return;
        }
        if stage.meta.committing.is_some() && written().ok() == stage.meta.committing {
            // our own commit, interrupted between the rename and the record of it
            stage.meta.base = Some(ident.clone());
            stage.meta.committing = None;
            stage.meta.dirty.clear();
            stage.meta.conflict = false;
            stage.meta.new_asset = false;
            stage.meta.status =
                Status::Committed("(an interrupted commit was completed at start)".into());
            log::info!("{}: {}", rel.display(), stage.meta.status);
            let _ = stage.save();
            return;
        }
        if stage.resume_unreplaced(ident) {
            log::info!(
                "{}: a commit interrupted before replacing the binary left it as it was",
                rel.display()
            );
            let _ = stage.save();
            return;
        }
        if stage.meta.dirty.is_empty() {
            log::info!(
                "{}: changed outside the mount; staged files dropped",
                rel.display()
            );
            if let Err(e) = stage.clear() {
                log::warn!("{}: clearing staged files: {e}", rel.display());
            }
        } else if !stage.meta.conflict {
            stage.meta.conflict = true;
            stage.meta.status = Status::Conflict(format!(
                "the binary changed outside the mount while these were staged: {}; commits are \
                 refused (ESTALE) until they are deleted (copy them elsewhere first)",
                stage
                    .meta
                    .dirty
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            log::warn!("{}: {}", rel.display(), stage.meta.status);
            let _ = stage.save();
        }
    }

    pub(in crate::fs::writeback) fn table_gen(&self, root: u64) -> Option<u64> {
        let rel = self.rel_path(root).ok()?;
        match self.resolve(&rel) {
            Ok(Resolved::Asset { gen, .. }) => Some(gen),
            _ => None,
        }
    }

    /// The staged real path of `vpath` if it exists.
    pub(in crate::fs::writeback) fn staged_path(&self, rel: &Path, vpath: &str) -> Option<PathBuf> {
        let staged = self.staging(rel);
        let g = lock(&staged.stage);
        let s = g.as_ref()?;
        s.lstat(vpath).map(|_| s.path(vpath))
    }

    /// Runs `f` on the staging area of `rel` (started if needed, based on the binary
    /// `meta`), then saves it.
    pub(in crate::fs::writeback) fn with_stage<T>(
        &self,
        rel: &Path,
        meta: &Metadata,
        f: impl FnOnce(&mut Stage) -> Result<T, FsError>,
    ) -> Result<T, FsError> {
        self.with_stage_at(rel, meta, None::<fn() -> std::time::SystemTime>, f)
    }

    /// [`Core::with_stage`]; `root`: the time the asset directory shows, asked for and given
    /// to the staged copy of it only when this creates it (else it takes the time it is
    /// created at).
    fn with_stage_at<T>(
        &self,
        rel: &Path,
        meta: &Metadata,
        root: Option<impl FnOnce() -> std::time::SystemTime>,
        f: impl FnOnce(&mut Stage) -> Result<T, FsError>,
    ) -> Result<T, FsError> {
        let staged = self.staging(rel);
        let mut g = lock(&staged.stage);
        let s = g.as_mut().ok_or(FsError::ReadOnly("write-back is off"))?;
        if s.meta.base.is_none() && !s.meta.new_asset {
            s.meta.base = Some(Ident::of(meta));
        }
        if !s.files.exists() {
            s.creating_files();
            fs::create_dir_all(&s.files)?;
            own_like(&s.files, meta)?;
            // the mode the asset directory shows (never the daemon's umask: a private
            // binary's directory stays private once something is staged in it)
            let r = meta.mode() & 0o444;
            let perm = match self.member_shown(rel, meta, "", true) {
                Some(m) => self.member_perm(meta, "", m.mode),
                None => r | self.write_bits(meta.mode()) | (r >> 2),
            };
            fs::set_permissions(&s.files, fs::Permissions::from_mode(perm))?;
            if let Some(t) = root.map(|r| r()) {
                sys::set_times(&s.files, SetTime::At(t), SetTime::At(t))?;
            }
        }
        let r = f(s)?;
        s.save()?;
        Ok(r)
    }

    /// Copies generated `vpath` into the staging area (with the binary's mode and the
    /// mtime it shows) if it is not staged yet, its parents first; the staged folders it is
    /// copied into keep their times (copying is no change of them). Returns the staged path.
    pub(in crate::fs::writeback) fn materialize(
        &self,
        rel: &Path,
        gen: u64,
        layout: &Layout,
        meta: &Metadata,
        vpath: &str,
        dir: bool,
    ) -> Result<PathBuf, FsError> {
        if let Some(p) = self.staged_path(rel, vpath) {
            return Ok(p);
        }
        // the time the asset directory shows, should its staged copy be made now
        let root_time = || match self.member_shown(rel, meta, "", true) {
            Some(m) => m.mtime(),
            None => self.kept_mtime(rel, meta, "", true, || {
                layout.children("").map(|k| folder_fingerprint(&k))
            }),
        };
        if vpath.is_empty() {
            return self.with_stage_at(rel, meta, Some(root_time), |s| Ok(s.files.clone()));
        }
        // parents first (they become staged folders with the generated attributes)
        if let Some((parent, _)) = vpath.rsplit_once('/') {
            self.materialize(rel, gen, layout, meta, parent, true)?;
        }
        let bytes = if dir {
            None
        } else {
            Some(self.render(rel, gen, layout, vpath)?)
        };
        let mut perm = (meta.mode() & 0o444) | self.write_bits(meta.mode());
        if dir {
            perm |= (perm & 0o444) >> 2;
        }
        let mut t = self.kept_mtime(rel, meta, vpath, dir, || match &bytes {
            None => layout.children(vpath).map(|k| folder_fingerprint(&k)),
            Some(b) => Some(fingerprint(b)),
        });
        // an archive member's recorded time and mode (what its generated node shows)
        if let Some(m) = self.member_shown(rel, meta, vpath, dir) {
            t = m.mtime();
            perm = self.member_perm(meta, vpath, m.mode);
        }
        self.with_stage_at(rel, meta, Some(root_time), |s| {
            let p = s.path(vpath);
            // the staged folder it is copied into keeps its times: a copy made by the first
            // write inside is no change of that folder (rsync may have set its time already)
            let above = p.parent().map(Path::to_path_buf);
            keeping_times(above.as_deref(), || -> Result<(), FsError> {
                match &bytes {
                    None => {
                        fs::DirBuilder::new().mode(perm).create(&p)?;
                        // as shown, whatever the daemon's umask
                        fs::set_permissions(&p, fs::Permissions::from_mode(perm))?;
                    }
                    Some(b) => {
                        if let Err(e) = fs::write(&p, &***b) {
                            // a copy cut short (a full state folder) must not shadow the
                            // generated file
                            let _ = fs::remove_file(&p);
                            return Err(e.into());
                        }
                        fs::set_permissions(&p, fs::Permissions::from_mode(perm))?;
                    }
                }
                own_like(&p, meta)?;
                sys::set_times(&p, SetTime::At(t), SetTime::At(t))?;
                Ok(())
            })?;
            Ok(p)
        })
    }

    /// Marks `vpath` changed (not committed yet) if it is a layout name.
    pub(in crate::fs::writeback) fn mark_dirty(s: &mut Stage, vpath: &str) {
        let archive = archive::is_archive_stage(s);
        let commits = if archive {
            archive::archive_commits(vpath)
        } else {
            overlay::builds(vpath)
        };
        if commits {
            s.meta.dirty.insert(vpath.to_string());
            if vpath == "metadata.json" && !archive {
                s.meta.removing = false;
            }
        }
    }

    /// The asset folder `parent` is in (root inode, relative path of the binary, generation,
    /// layout, binary metadata, folder path), or `None` for real folders.
    #[allow(clippy::type_complexity)]
    pub(in crate::fs::writeback) fn in_asset(
        &self,
        parent: u64,
    ) -> Result<Option<(u64, PathBuf, u64, Arc<Layout>, Metadata, String)>, FsError> {
        let node = self.node(parent)?;
        match node.kind {
            NodeKind::Real { .. } | NodeKind::Status { .. } => Ok(None),
            NodeKind::AssetRoot => {
                let (rel, gen, layout, meta) = self.root_asset(parent)?;
                Ok(Some((parent, rel, gen, layout, meta, String::new())))
            }
            NodeKind::ViewFile { .. } => Err(FsError::NotDir),
            NodeKind::ViewDir { root, vpath } => {
                let (rel, gen, layout, meta) = self.folder(root, &vpath)?;
                Ok(Some((root, rel, gen, layout, meta, vpath)))
            }
        }
    }

    pub(in crate::fs::writeback) fn check_writable(&self) -> Result<(), FsError> {
        if self.opts.read_only {
            return Err(FsError::ReadOnly("mounted read-only"));
        }
        if self.opts.state_dir.is_none() {
            return Err(FsError::ReadOnly("asset directories are read-only"));
        }
        Ok(())
    }

    pub(in crate::fs::writeback) fn name_str(name: &OsStr) -> Result<&str, FsError> {
        let n = name
            .to_str()
            .ok_or_else(|| FsError::Invalid("names in asset directories must be UTF-8".into()))?;
        if n.is_empty()
            || n == "."
            || n == ".."
            || n.contains('/')
            || n == STATUS_NAME
            || n == overlay::FILLING
        {
            return Err(FsError::Invalid(format!("{n:?}: not allowed here")));
        }
        Ok(n)
    }

    /// New assets (staged only) directly in real folder `rel`: their names.
    pub(in crate::fs::writeback) fn new_assets_in(&self, rel: &Path) -> Vec<OsString> {
        let Some(sd) = &self.opts.state_dir else {
            return Vec::new();
        };
        let abs = std::path::absolute(self.abs(rel)).unwrap_or_else(|_| self.abs(rel));
        self.staged_index(sd)
            .new_assets
            .iter()
            .filter(|b| b.parent() == Some(abs.as_path()) && !b.exists())
            .filter_map(|b| b.file_name().map(|n| n.to_os_string()))
            .collect()
    }

    /// The staging areas under state folder `sd` ([`StagedIndex`]), read again only after
    /// this process changed one.
    pub(in crate::fs::writeback) fn staged_index(&self, sd: &Path) -> Arc<StagedIndex> {
        let mut kept = lock(&self.staged);
        match &*kept {
            Some(ix) if !ix.outdated() => ix.clone(),
            _ => {
                let game =
                    std::path::absolute(&self.game_dir).unwrap_or_else(|_| self.game_dir.clone());
                let ix = Arc::new(StagedIndex::read(sd, &game));
                *kept = Some(ix.clone());
                ix
            }
        }
    }
}

/// Runs `f`, which changes entries of staged folder `dir` on the file system's own account
/// (a copy made on the first write inside, a staged file giving way to the generated one of
/// the same name), and gives `dir` back the times it had: as seen through the mount, its
/// entries did not change.
pub(in crate::fs::writeback) fn keeping_times<T>(dir: Option<&Path>, f: impl FnOnce() -> T) -> T {
    let before = dir.and_then(|d| fs::symlink_metadata(d).ok());
    let r = f();
    if let (Some(d), Some(m)) = (dir, before) {
        let _ = sys::set_times(
            d,
            SetTime::At(time(m.atime(), m.atime_nsec())),
            SetTime::At(time(m.mtime(), m.mtime_nsec())),
        );
    }
    r
}

/// Gives staged `p` (a copy of a generated file or folder) the owner and group of the binary
/// `meta`, the owner the generated node showed: a root daemon would otherwise make it
/// `root:root` and lock the asset's owner out of their own asset. A daemon that may not
/// change owners leaves it its own.
fn own_like(p: &Path, meta: &Metadata) -> Result<(), FsError> {
    match std::os::unix::fs::lchown(p, Some(meta.uid()), Some(meta.gid())) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Ok(()),
        r => Ok(r?),
    }
}
