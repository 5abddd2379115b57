//! Write-back: staged files in asset directories and commits that rebuild the binary
//! (SEMANTICS.md, "Writing inside asset directories").

use super::*;
use crate::fs::stage::{is_layout_name, Stage};
use crate::view::FileSet;

/// Name of the hidden status file.
pub(super) const STATUS_NAME: &str = ".tafs-status";

/// Where a path of an asset directory is, staged state on top of the generated view.
pub(super) enum Loc {
    None,
    Dir,
    Staged(Metadata),
    Gen,
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// The file named by a view error, if any.
pub(super) fn error_file(e: &ViewError) -> Option<&str> {
    match e {
        ViewError::Missing { file, .. }
        | ViewError::Invalid { file, .. }
        | ViewError::Csv { file, .. } => Some(file),
        ViewError::Io { path, .. } => Some(path),
        _ => None,
    }
}

/// Children of `dir`: the generated ones not deleted, then staged ones (a staged entry
/// replaces a generated one of the same name). `None` if the folder does not exist.
pub(super) fn merged_children(
    stage: Option<&Stage>,
    layout: Option<&Layout>,
    dir: &str,
) -> Option<Vec<(String, bool)>> {
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut exists = dir.is_empty();
    let hidden = |p: &str| stage.is_some_and(|s| s.hidden(p));
    if let Some(gen) = layout.and_then(|l| l.children(dir)) {
        if dir.is_empty() || !hidden(dir) {
            exists = true;
            for (n, d) in gen {
                if !hidden(&join(dir, &n)) {
                    out.push((n, d));
                }
            }
        }
    }
    if let Some(s) = stage {
        if let Ok(rd) = fs::read_dir(s.path(dir)) {
            exists = true;
            let mut staged: Vec<(String, bool)> = rd
                .flatten()
                .filter_map(|e| {
                    let d = e.file_type().is_ok_and(|t| t.is_dir());
                    e.file_name().into_string().ok().map(|n| (n, d))
                })
                .collect();
            staged.sort();
            for (n, d) in staged {
                if let Some(x) = out.iter_mut().find(|(m, _)| *m == n) {
                    x.1 = d;
                } else {
                    out.push((n, d));
                }
            }
        }
    }
    exists.then_some(out)
}

/// The file set a commit builds from: the generated view with the staged layout files and
/// whiteouts on top. Names that are not layout names are not part of it.
pub(super) struct Overlay<'a> {
    pub(super) stage: &'a Stage,
    pub(super) view: Option<&'a dyn View>,
    pub(super) layout: Option<Layout>,
    pub(super) kind: AssetKind,
}

/// Generated files a commit does not need to render: an unedited `map.png` is the mosaic
/// `metadata.json` holds the checksum of, so pack would find it unedited (rendering and
/// reading it back is most of a big map's commit time).
fn skip_generated(kind: AssetKind, path: &str) -> bool {
    kind == AssetKind::Tnt && path == "map.png"
}

impl FileSet for Overlay<'_> {
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, ViewError> {
        if !is_layout_name(path) {
            return Ok(None);
        }
        let p = self.stage.path(path);
        match fs::read(&p) {
            Ok(b) => return Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) if p.is_dir() => return Ok(None),
            Err(e) => {
                return Err(ViewError::Io {
                    path: path.to_string(),
                    source: e,
                })
            }
        }
        if self.stage.hidden(path) || skip_generated(self.kind, path) {
            return Ok(None);
        }
        match (&self.layout, self.view) {
            (Some(l), Some(v)) if l.is_dir(path) == Some(false) => Ok(Some(v.render_vec(path)?)),
            _ => Ok(None),
        }
    }

    fn list(&self, dir: &str) -> Result<Option<Vec<(String, bool)>>, ViewError> {
        Ok(
            merged_children(Some(self.stage), self.layout.as_ref(), dir).map(|v| {
                let mut v: Vec<(String, bool)> = v
                    .into_iter()
                    .filter(|(n, d)| {
                        if *d {
                            !n.starts_with('.')
                        } else {
                            is_layout_name(&join(dir, n))
                        }
                    })
                    .collect();
                v.sort();
                v
            }),
        )
    }
}

impl Core {
    pub(super) fn writeback(&self) -> bool {
        self.opts.state_dir.is_some() && !self.opts.read_only
    }

    /// A game-folder path with no binary: a new asset if one is staged there.
    pub(super) fn resolve_new(&self, rel: &Path) -> Option<Result<Resolved, FsError>> {
        self.opts.state_dir.as_ref()?;
        let name = rel.file_name()?.to_str()?;
        AssetKind::from_name(name)?;
        let asset = self.slot(rel);
        let mut st = lock(&asset.state);
        let meta = {
            let g = lock(&asset.stage);
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
            st.view = None;
            st.outcome = Outcome::Ready(Arc::new(Layout::empty()));
            let root = st.root;
            if was_ready {
                drop(st);
                self.invalidate_gen(old_gen, root);
                st = lock(&asset.state);
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
    /// version, clean ones are dropped and dirty ones are in conflict.
    pub(super) fn rebase(&self, rel: &Path, stage: &mut Stage, ident: &Ident, bytes: &[u8]) {
        let based_elsewhere = match &stage.meta.base {
            Some(b) => b != ident,
            None => stage.meta.new_asset,
        };
        if !based_elsewhere || !stage.active() {
            return;
        }
        if stage.meta.committing.is_some()
            && stage.meta.committing == Some(crate::fs::stage::Written::of(bytes))
        {
            // our own commit, interrupted between the rename and the record of it
            stage.meta.base = Some(ident.clone());
            stage.meta.committing = None;
            stage.meta.dirty.clear();
            stage.meta.conflict = false;
            stage.meta.new_asset = false;
            stage.meta.status = "committed (an interrupted commit was completed at start)".into();
            log::info!("{}: {}", rel.display(), stage.meta.status);
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
            stage.meta.status = format!(
                "conflict: the binary changed outside the mount while these were staged: {}; \
                 commits are refused (ESTALE) until they are deleted (copy them elsewhere first)",
                stage
                    .meta
                    .dirty
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            log::warn!("{}: {}", rel.display(), stage.meta.status);
            let _ = stage.save();
        }
    }

    fn table_gen(&self, root: u64) -> Option<u64> {
        let rel = self.rel_path(root).ok()?;
        match self.resolve(&rel) {
            Ok(Resolved::Asset { gen, .. }) => Some(gen),
            _ => None,
        }
    }

    /// Where `vpath` of asset `rel` (layout `layout`) is.
    pub(super) fn locate(&self, rel: &Path, layout: &Layout, vpath: &str) -> Loc {
        if vpath.is_empty() {
            return Loc::Dir;
        }
        self.expand(rel, layout, vpath, false);
        let asset = self.slot(rel);
        let g = lock(&asset.stage);
        if let Some(s) = g.as_ref() {
            if let Ok(m) = fs::symlink_metadata(s.path(vpath)) {
                return if m.is_dir() { Loc::Dir } else { Loc::Staged(m) };
            }
            if s.hidden(vpath) {
                return Loc::None;
            }
        }
        match layout.is_dir(vpath) {
            Some(true) => Loc::Dir,
            Some(false) => Loc::Gen,
            None => Loc::None,
        }
    }

    /// The staged real path of `vpath` if it exists.
    pub(super) fn staged_path(&self, rel: &Path, vpath: &str) -> Option<PathBuf> {
        let asset = self.slot(rel);
        let g = lock(&asset.stage);
        let p = g.as_ref()?.path(vpath);
        p.symlink_metadata().is_ok().then_some(p)
    }

    pub(super) fn staged_attr(&self, ino: u64, m: &Metadata, subdirs: u32) -> Attr {
        let dir = m.is_dir();
        let (uid, gid) = self.owner(m);
        Attr {
            ino,
            size: m.len(),
            blocks: m.blocks(),
            atime: time(m.atime(), m.atime_nsec()),
            mtime: time(m.mtime(), m.mtime_nsec()),
            ctime: time(m.ctime(), m.ctime_nsec()),
            kind: if dir { FileKind::Dir } else { FileKind::File },
            perm: (m.mode() & 0o777) as u16,
            nlink: if dir { 2 + subdirs } else { 1 },
            uid,
            gid,
            rdev: 0,
            blksize: 4096,
        }
    }

    /// Attributes of a folder of an asset directory (staged folder or generated).
    pub(super) fn asset_dir_attr(
        &self,
        ino: u64,
        rel: &Path,
        layout: &Layout,
        meta: &Metadata,
        vpath: &str,
    ) -> Attr {
        let asset = self.slot(rel);
        let (kids, staged) = {
            let g = lock(&asset.stage);
            let kids = merged_children(g.as_ref(), Some(layout), vpath).unwrap_or_default();
            let staged = g
                .as_ref()
                .filter(|s| s.active())
                .and_then(|s| fs::metadata(s.path(vpath)).ok());
            (kids, staged)
        };
        let subdirs = kids.iter().filter(|(_, d)| *d).count() as u32;
        match staged {
            Some(m) if m.is_dir() => self.staged_attr(ino, &m, subdirs),
            _ => {
                let n = kids.len() as u64;
                self.gen_attr(ino, meta, true, 4096.max(n * 32), subdirs)
            }
        }
    }

    /// The status text of asset `rel`.
    fn asset_status(&self, rel: &Path) -> String {
        let asset = self.slot(rel);
        let g = lock(&asset.stage);
        let Some(s) = g.as_ref() else {
            return "write-back off\n".into();
        };
        let state = if s.meta.conflict {
            "conflict"
        } else if s.meta.removing {
            "removing"
        } else if s.meta.status.starts_with("error") {
            "error"
        } else if !s.meta.dirty.is_empty() {
            "pending"
        } else {
            "clean"
        };
        let mut t = format!("{}: {state}\n", rel.display());
        if !s.meta.status.is_empty() {
            t.push_str(&format!("  {}\n", s.meta.status));
        }
        if !s.meta.dirty.is_empty() {
            let d: Vec<&str> = s.meta.dirty.iter().map(String::as_str).collect();
            t.push_str(&format!("  uncommitted: {}\n", d.join(", ")));
        }
        t
    }

    /// The bytes of a status file (`root` = an asset root, or [`ROOT`] for all assets).
    pub(super) fn status_bytes(&self, root: u64) -> Result<Vec<u8>, FsError> {
        if root != ROOT {
            let rel = self.rel_path(root)?;
            return Ok(self.asset_status(&rel).into_bytes());
        }
        let assets: Vec<PathBuf> = {
            let all = lock(&self.assets);
            let mut v: Vec<PathBuf> = all
                .iter()
                .filter(|(_, a)| lock(&a.stage).as_ref().is_some_and(|s| s.active()))
                .map(|(p, _)| p.clone())
                .collect();
            v.sort();
            v
        };
        let mut t = String::new();
        for rel in assets {
            t.push_str(&self.asset_status(&rel));
        }
        if t.is_empty() {
            t.push_str("nothing staged\n");
        }
        Ok(t.into_bytes())
    }

    pub(super) fn status_attr(&self, ino: u64, root: u64) -> Result<Attr, FsError> {
        let size = self.status_bytes(root)?.len() as u64;
        let m = fs::metadata(&self.game_dir)?;
        let mut a = self.gen_attr(ino, &m, false, size, 0);
        a.perm = 0o444;
        a.mtime = SystemTime::now();
        Ok(a)
    }

    pub(super) fn status_node(&self, parent: u64, root: u64) -> Result<Attr, FsError> {
        let ino = self.table_mut().child(
            parent,
            OsStr::new(STATUS_NAME),
            |k| matches!(k, NodeKind::Status { root: r } if *r == root),
            NodeKind::Status { root },
        );
        self.status_attr(ino, root)
    }

    /// Runs `f` on the staging area of `rel` (started if needed, based on the binary
    /// `meta`), then saves it.
    pub(super) fn with_stage<T>(
        &self,
        rel: &Path,
        meta: &Metadata,
        f: impl FnOnce(&mut Stage) -> Result<T, FsError>,
    ) -> Result<T, FsError> {
        let asset = self.slot(rel);
        let mut g = lock(&asset.stage);
        let s = g.as_mut().ok_or(FsError::ReadOnly("write-back is off"))?;
        if s.meta.base.is_none() && !s.meta.new_asset {
            s.meta.base = Some(Ident::of(meta));
        }
        fs::create_dir_all(&s.files)?;
        let r = f(s)?;
        s.save()?;
        Ok(r)
    }

    /// Copies generated `vpath` into the staging area (with the binary's mode and mtime) if
    /// it is not staged yet. Returns the staged path.
    pub(super) fn materialize(
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
        if vpath.is_empty() {
            return self.with_stage(rel, meta, |s| Ok(s.files.clone()));
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
        let perm = (meta.mode() & 0o444) | self.write_bits(meta.mode());
        self.with_stage(rel, meta, |s| {
            let p = s.path(vpath);
            match &bytes {
                None => fs::DirBuilder::new()
                    .mode(perm | ((perm & 0o444) >> 2))
                    .create(&p)?,
                Some(b) => {
                    fs::write(&p, &***b)?;
                    fs::set_permissions(&p, fs::Permissions::from_mode(perm))?;
                }
            }
            let t = time(meta.mtime(), meta.mtime_nsec());
            sys::set_times(&p, SetTime::At(t), SetTime::At(t))?;
            Ok(p)
        })
    }

    /// Marks `vpath` changed (not committed yet) if it is a layout name.
    fn mark_dirty(s: &mut Stage, vpath: &str) {
        let archive = archive::is_archive_stage(s);
        let commits = if archive {
            archive::archive_commits(vpath)
        } else {
            is_layout_name(vpath)
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
    pub(super) fn in_asset(
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
            NodeKind::View {
                root, vpath, dir, ..
            } => {
                if !dir {
                    return Err(FsError::NotDir);
                }
                let (rel, gen, layout, meta) = self.folder(root, &vpath)?;
                Ok(Some((root, rel, gen, layout, meta, vpath)))
            }
        }
    }

    fn check_writable(&self) -> Result<(), FsError> {
        if self.opts.read_only {
            return Err(FsError::ReadOnly("mounted read-only"));
        }
        if self.opts.state_dir.is_none() {
            return Err(FsError::ReadOnly("asset directories are read-only"));
        }
        Ok(())
    }

    fn name_str(name: &OsStr) -> Result<&str, FsError> {
        let n = name
            .to_str()
            .ok_or_else(|| FsError::Invalid("names in asset directories must be UTF-8".into()))?;
        if n.is_empty() || n == "." || n == ".." || n.contains('/') || n == STATUS_NAME {
            return Err(FsError::Invalid(format!("{n:?}: not allowed here")));
        }
        Ok(n)
    }

    fn new_view_node(
        &self,
        parent: u64,
        root: u64,
        gen: u64,
        name: &str,
        vpath: &str,
        dir: bool,
    ) -> u64 {
        let mut t = self.table_mut();
        t.detach_child(parent, OsStr::new(name));
        let ino = t.child(
            parent,
            OsStr::new(name),
            |_| false,
            NodeKind::View {
                root,
                gen,
                vpath: vpath.to_string(),
                dir,
            },
        );
        ino
    }

    /// `create` in an asset folder.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn wb_create(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        uid: u32,
        gid: u32,
    ) -> Result<(Attr, Opened), FsError> {
        self.check_writable()?;
        let (root, rel, gen, layout, meta, dir) = self.in_asset(parent)?.ok_or(FsError::NotDir)?;
        let name = Self::name_str(name)?;
        let vpath = join(&dir, name);
        let exists = !matches!(self.locate(&rel, &layout, &vpath), Loc::None);
        if exists && flags & libc::O_EXCL != 0 {
            return Err(FsError::Io(std::io::Error::from_raw_os_error(libc::EEXIST)));
        }
        if !exists {
            self.case_clash(&rel, &layout, &dir, name)?;
        }
        if exists {
            // an existing name: open it for writing (O_TRUNC honoured)
            let m = self.materialize(&rel, gen, &layout, &meta, &vpath, false)?;
            let _ = m;
        } else if !dir.is_empty() {
            self.materialize(&rel, gen, &layout, &meta, &dir, true)?;
        }
        let (file, ino) = self.with_stage(&rel, &meta, |s| {
            let p = s.path(&vpath);
            let mut o = Self::open_options(flags);
            o.create(true);
            if flags & libc::O_ACCMODE == libc::O_RDONLY {
                o.write(true);
            }
            o.mode(mode & 0o7777 & !umask);
            let file = o.open(&p)?;
            self.chown_new(&p, uid, gid)?;
            s.meta.whiteouts.remove(&vpath);
            Self::mark_dirty(s, &vpath);
            // the old node of this name (if any) stops standing here with the file change
            let ino = self.new_view_node(parent, root, gen, name, &vpath, false);
            Ok((file, ino))
        })?;
        let m = file.metadata()?;
        let fh = self.add_handle(Handle::Staged {
            file,
            ino,
            rel,
            writable: true,
            written: AtomicBool::new(false),
        });
        Ok((
            self.staged_attr(ino, &m, 0),
            Opened {
                fh,
                keep_cache: false,
            },
        ))
    }

    /// Opens a file of an asset directory that is staged or is opened for writing.
    pub(super) fn wb_open(
        &self,
        ino: u64,
        root: u64,
        gen: u64,
        vpath: &str,
        flags: i32,
    ) -> Result<Option<Opened>, FsError> {
        let write = Self::wants_write(flags);
        let rel = self.rel_path(root)?;
        if write {
            self.check_writable()?;
            if self.staged_path(&rel, vpath).is_none() {
                let (rel2, layout, meta) = self.current(root, gen)?;
                self.materialize(&rel2, gen, &layout, &meta, vpath, false)?;
                self.send(Inval::Inode { ino });
            }
        }
        let asset = self.slot(&rel);
        let file = {
            let mut g = lock(&asset.stage);
            // Under the stage lock (see `stands_at`): a rename over this name or an unlink
            // since the kernel looked it up answers ESTALE here, never the file now there.
            if !self.stands_at(ino, vpath) {
                return Err(FsError::Stale);
            }
            let Some(s) = g.as_mut() else {
                return Ok(None);
            };
            let path = s.path(vpath);
            if path.symlink_metadata().is_err() {
                // not staged (or dropped by a commit meanwhile): the generated file
                return if write { Err(FsError::Stale) } else { Ok(None) };
            }
            let file = Self::open_options(flags).open(&path)?;
            if write && flags & libc::O_TRUNC != 0 {
                Self::mark_dirty(s, vpath);
                let _ = s.save();
            }
            file
        };
        let fh = self.add_handle(Handle::Staged {
            file,
            ino,
            rel,
            writable: write,
            written: AtomicBool::new(false),
        });
        Ok(Some(Opened {
            fh,
            keep_cache: false,
        }))
    }

    /// The path in its asset of a file node (follows renames).
    pub(super) fn vpath_of(&self, ino: u64) -> Option<String> {
        match &self.table().nodes.get(&ino)?.kind {
            NodeKind::View { vpath, .. } => Some(vpath.clone()),
            _ => None,
        }
    }

    /// A write went to staged file `ino`.
    pub(super) fn staged_written(&self, rel: &Path, ino: u64) {
        let Some(vpath) = self.vpath_of(ino) else {
            return;
        };
        let asset = self.slot(rel);
        let mut g = lock(&asset.stage);
        if let Some(s) = g.as_mut() {
            if self.commits(rel, &vpath) && !s.meta.dirty.contains(&vpath) {
                Self::mark_dirty(s, &vpath);
                let _ = s.save();
            }
        }
    }

    /// `close`/`fsync` of a staged file: commits if it is a layout file and something is
    /// uncommitted.
    pub(super) fn staged_save(&self, rel: &Path, ino: u64) -> Result<(), FsError> {
        let Some(vpath) = self.vpath_of(ino) else {
            return Ok(());
        };
        if !self.commits(rel, &vpath) {
            return Ok(());
        }
        self.commit(rel, &vpath)
    }

    /// `setattr` of a node inside an asset directory.
    pub(super) fn wb_setattr(
        &self,
        ino: u64,
        node: &Node,
        set: SetAttr,
        fh: Option<u64>,
    ) -> Result<Attr, FsError> {
        self.check_writable()?;
        let (root, gen, vpath, dir) = match &node.kind {
            NodeKind::AssetRoot => (
                ino,
                self.table_gen(ino).ok_or(FsError::Stale)?,
                String::new(),
                true,
            ),
            NodeKind::View {
                root,
                gen,
                vpath,
                dir,
            } => (*root, *gen, vpath.clone(), *dir),
            _ => return Err(FsError::ReadOnly("read-only")),
        };
        let rel = self.rel_path(root)?;
        let path = match self.staged_path(&rel, &vpath) {
            Some(p) if !vpath.is_empty() || self.slot(&rel).stage_active() => p,
            _ => {
                let (rel2, gen, layout, meta) = if dir {
                    self.folder(root, &vpath)?
                } else {
                    let (r, l, m) = self.current(root, gen)?;
                    (r, gen, l, m)
                };
                let p = self.materialize(&rel2, gen, &layout, &meta, &vpath, dir)?;
                self.send(Inval::Inode { ino });
                p
            }
        };
        let handle = fh.and_then(|fh| lock(&self.handles).get(&fh).cloned());
        let open = match handle.as_deref() {
            Some(Handle::Staged { file, .. }) => Some(file),
            _ => None,
        };
        apply_setattr(&path, &set, false, open)?;
        if set.size.is_some() {
            let asset = self.slot(&rel);
            let mut g = lock(&asset.stage);
            if let Some(s) = g.as_mut() {
                Self::mark_dirty(s, &vpath);
                let _ = s.save();
            }
        }
        let m = fs::symlink_metadata(&path)?;
        Ok(self.staged_attr(ino, &m, 0))
    }

    /// `mkdir` in an asset folder.
    pub(super) fn wb_mkdir(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        uid: u32,
        gid: u32,
    ) -> Result<Attr, FsError> {
        self.check_writable()?;
        let (root, rel, gen, layout, meta, dir) = self.in_asset(parent)?.ok_or(FsError::NotDir)?;
        let name = Self::name_str(name)?;
        let vpath = join(&dir, name);
        if !matches!(self.locate(&rel, &layout, &vpath), Loc::None) {
            return Err(FsError::Io(std::io::Error::from_raw_os_error(libc::EEXIST)));
        }
        self.case_clash(&rel, &layout, &dir, name)?;
        if !dir.is_empty() {
            self.materialize(&rel, gen, &layout, &meta, &dir, true)?;
        }
        // a folder of an archive (outside its GAF/TNT members) is an entry of its own
        let archive_dir = is_archive_path(&rel) && archive::part_of(&vpath).is_none();
        let p = self.with_stage(&rel, &meta, |s| {
            let p = s.path(&vpath);
            fs::DirBuilder::new()
                .mode(mode & 0o7777 & !umask)
                .create(&p)?;
            self.chown_new(&p, uid, gid)?;
            if archive_dir {
                s.meta.dirty.insert(vpath.clone());
            }
            Ok(p)
        })?;
        let ino = self.new_view_node(parent, root, gen, name, &vpath, true);
        let attr = self.staged_attr(ino, &fs::metadata(p)?, 0);
        if archive_dir {
            self.commit(&rel, &vpath)?;
        }
        Ok(attr)
    }

    /// `unlink` in an asset folder: deletes the staged file and hides the generated one.
    pub(super) fn wb_unlink(&self, parent: u64, name: &OsStr) -> Result<(), FsError> {
        self.check_writable()?;
        let (_, rel, _, layout, meta, dir) = self.in_asset(parent)?.ok_or(FsError::NotDir)?;
        let name = Self::name_str(name)?;
        let vpath = join(&dir, name);
        match self.locate(&rel, &layout, &vpath) {
            Loc::None => return Err(FsError::NotFound),
            Loc::Dir => return Err(FsError::IsDir),
            _ => {}
        }
        self.with_stage(&rel, &meta, |s| {
            let p = s.path(&vpath);
            if p.symlink_metadata().is_ok() {
                fs::remove_file(&p)?;
            }
            s.meta.dirty.remove(&vpath);
            if layout.is_dir(&vpath) == Some(false) && !s.hidden(&vpath) {
                s.meta.whiteouts.insert(vpath.clone());
                Self::mark_dirty(s, &vpath);
            }
            if vpath == "metadata.json" && !archive::is_archive_stage(s) {
                s.meta.removing = true;
                s.meta.status = "removing: metadata.json was deleted; nothing commits until it \
                                 is written again, `rmdir` of the asset directory deletes the binary"
                    .into();
            }
            // under the stage lock, with the staged file (`stands_at`)
            self.table_mut().detach_child(parent, OsStr::new(name));
            Ok(())
        })?;
        self.after_delete(&rel);
        if is_archive_path(&rel) && archive::part_of(&vpath).is_none() {
            // deleting a member of an archive commits (inside a GAF/TNT member it is part of
            // the next commit, as in loose asset directories)
            return self.commit(&rel, &vpath);
        }
        Ok(())
    }

    /// A conflict clears once no dirty staged file is left.
    fn after_delete(&self, rel: &Path) {
        let asset = self.slot(rel);
        let mut g = lock(&asset.stage);
        if let Some(s) = g.as_mut() {
            s.meta
                .dirty
                .retain(|d| s.files.join(d).exists() || s.meta.whiteouts.contains(d));
            if s.meta.conflict && s.meta.dirty.is_empty() {
                log::info!("{}: conflict resolved; staged files dropped", rel.display());
                let _ = s.clear();
                drop(g);
                // show the binary as it is now
                let st = lock(&asset.state);
                let (gen, root) = (st.gen, st.root);
                drop(st);
                {
                    let mut st = lock(&asset.state);
                    st.ident = None;
                }
                self.invalidate_gen(gen, root);
            }
        }
    }

    /// `rmdir` in an asset folder; commits (a deleted sequence) unless the asset is being
    /// removed.
    pub(super) fn wb_rmdir(&self, parent: u64, name: &OsStr) -> Result<(), FsError> {
        self.check_writable()?;
        let (_, rel, _, layout, meta, dir) = self.in_asset(parent)?.ok_or(FsError::NotDir)?;
        let name = Self::name_str(name)?;
        let vpath = join(&dir, name);
        match self.locate(&rel, &layout, &vpath) {
            Loc::None => return Err(FsError::NotFound),
            Loc::Dir => {}
            _ => return Err(FsError::NotDir),
        }
        let asset = self.slot(&rel);
        let empty = {
            let g = lock(&asset.stage);
            merged_children(g.as_ref(), Some(&layout), &vpath)
                .unwrap_or_default()
                .is_empty()
        };
        if !empty {
            return Err(FsError::Io(std::io::Error::from_raw_os_error(
                libc::ENOTEMPTY,
            )));
        }
        self.with_stage(&rel, &meta, |s| {
            let p = s.path(&vpath);
            if p.is_dir() {
                fs::remove_dir(&p)?;
            }
            if layout.is_dir(&vpath) == Some(true) && !s.hidden(&vpath) {
                s.meta.whiteouts.insert(vpath.clone());
                s.meta.dirty.insert(vpath.clone());
            }
            Ok(())
        })?;
        self.table_mut().detach_child(parent, OsStr::new(name));
        self.commit(&rel, &vpath)
    }

    /// `rename` where either side is in an asset folder.
    pub(super) fn wb_rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<(), FsError> {
        self.check_writable()?;
        let exdev = || FsError::Io(std::io::Error::from_raw_os_error(libc::EXDEV));
        let from = self.in_asset(parent)?.ok_or_else(exdev)?;
        let to = self.in_asset(newparent)?.ok_or_else(exdev)?;
        if from.0 != to.0 || flags & libc::RENAME_EXCHANGE != 0 {
            return Err(exdev());
        }
        let (_, rel, gen, layout, meta, sdir) = from;
        let ddir = to.5;
        let name = Self::name_str(name)?;
        let newname = Self::name_str(newname)?;
        let src = join(&sdir, name);
        let dst = join(&ddir, newname);
        match self.locate(&rel, &layout, &src) {
            Loc::None => return Err(FsError::NotFound),
            Loc::Dir if is_archive_path(&rel) && archive::part_of(&src).is_none() => {
                // a folder or a member of an archive: moved in the archive
                return self.archive_rename(
                    parent, name, newparent, newname, &rel, &layout, &meta, gen, &src, &dst,
                );
            }
            Loc::Dir => return Err(exdev()),
            _ => {}
        }
        match self.locate(&rel, &layout, &dst) {
            Loc::Dir => return Err(FsError::IsDir),
            Loc::None => self.case_clash(&rel, &layout, &ddir, newname)?,
            _ if flags & libc::RENAME_NOREPLACE != 0 => {
                return Err(FsError::Io(std::io::Error::from_raw_os_error(libc::EEXIST)))
            }
            _ => {}
        }
        self.materialize(&rel, gen, &layout, &meta, &src, false)?;
        if !ddir.is_empty() {
            self.materialize(&rel, gen, &layout, &meta, &ddir, true)?;
        }
        self.with_stage(&rel, &meta, |s| {
            fs::rename(s.path(&src), s.path(&dst))?;
            let was_dirty = s.meta.dirty.remove(&src);
            if layout.is_dir(&src) == Some(false) && !s.hidden(&src) {
                s.meta.whiteouts.insert(src.clone());
                Self::mark_dirty(s, &src);
            }
            s.meta.whiteouts.remove(&dst);
            let _ = was_dirty;
            Self::mark_dirty(s, &dst);
            // the table changes with the staged files, under the stage lock (`stands_at`)
            let mut t = self.table_mut();
            t.move_child(parent, OsStr::new(name), newparent, OsStr::new(newname));
            if let Some(&ino) = t.children.get(&(newparent, OsString::from(newname))) {
                if let Some(NodeKind::View { vpath, .. }) =
                    t.nodes.get_mut(&ino).map(|n| &mut n.kind)
                {
                    *vpath = dst.clone();
                }
            }
            Ok(())
        })?;
        if self.commits(&rel, &dst) {
            // a rename that fails to commit is reported as EIO (the kernel would retry a
            // rename that failed with ESTALE, and find the source gone)
            return self.commit(&rel, &dst).map_err(|e| match e {
                FsError::Stale => {
                    FsError::Commit("conflict: the binary changed outside the mount".into())
                }
                e => e,
            });
        }
        Ok(())
    }

    /// `mkdir NAME.gaf` in a real folder: a new asset, staged only.
    pub(super) fn new_asset(
        &self,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
    ) -> Result<Option<Attr>, FsError> {
        if !self.writeback() {
            return Ok(None);
        }
        let Some(n) = name.to_str() else {
            return Ok(None);
        };
        if AssetKind::from_name(n).is_none() {
            return Ok(None);
        }
        let rel = self.rel_path(parent)?.join(name);
        if fs::symlink_metadata(self.abs(&rel)).is_ok() {
            return Err(FsError::Io(std::io::Error::from_raw_os_error(libc::EEXIST)));
        }
        let asset = self.slot(&rel);
        {
            let mut g = lock(&asset.stage);
            let s = g.as_mut().ok_or(FsError::ReadOnly("write-back is off"))?;
            if s.meta.new_asset {
                return Err(FsError::Io(std::io::Error::from_raw_os_error(libc::EEXIST)));
            }
            s.clear()?;
            s.meta.new_asset = true;
            s.meta.base = None;
            fs::create_dir_all(&s.dir)?;
            fs::DirBuilder::new()
                .mode(mode & 0o7777 & !umask)
                .create(&s.files)?;
            s.meta.status = "new asset: waiting for files".into();
            s.save()?;
        }
        self.lookup(parent, name).map(Some)
    }

    /// `rmdir` of an asset directory: allowed once it is empty; the binary goes to the history
    /// and is deleted.
    pub(super) fn remove_asset(&self, parent: u64, name: &OsStr) -> Result<bool, FsError> {
        let rel = self.rel_path(parent)?.join(name);
        let Ok(Resolved::Asset { layout, .. }) = self.resolve(&rel) else {
            return Ok(false);
        };
        self.check_writable()?;
        let asset = self.slot(&rel);
        let mut g = lock(&asset.stage);
        let s = g.as_mut().ok_or(FsError::ReadOnly("write-back is off"))?;
        let kids = merged_children(Some(s), Some(&layout), "").unwrap_or_default();
        if !kids.is_empty() {
            return Err(FsError::Io(std::io::Error::from_raw_os_error(
                libc::ENOTEMPTY,
            )));
        }
        let abs = self.abs(&rel);
        match fs::read(&abs) {
            Ok(bytes) => {
                s.push_history(&bytes)?;
                fs::remove_file(&abs)?;
                log::info!("{}: deleted (kept in the history)", rel.display());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        s.clear()?;
        drop(g);
        self.table_mut().detach_child(parent, name);
        let _ = self.resolve(&rel);
        Ok(true)
    }

    /// New assets (staged only) directly in real folder `rel`: their names.
    pub(super) fn new_assets_in(&self, rel: &Path) -> Vec<OsString> {
        let Some(sd) = &self.opts.state_dir else {
            return Vec::new();
        };
        let abs = std::path::absolute(self.abs(rel)).unwrap_or_else(|_| self.abs(rel));
        let game = std::path::absolute(&self.game_dir).unwrap_or_else(|_| self.game_dir.clone());
        crate::fs::stage::new_assets(sd, &game)
            .into_iter()
            .filter(|b| b.parent() == Some(abs.as_path()))
            .filter_map(|b| b.file_name().map(|n| n.to_os_string()))
            .collect()
    }

    /// Rebuilds the binary of `rel` from the view and the staged files and replaces it if
    /// it changed. `trigger` is the path being saved (errors in it fail the call).
    pub(super) fn commit(&self, rel: &Path, trigger: &str) -> Result<(), FsError> {
        if is_archive_path(rel) {
            return self.commit_archive(rel, trigger, None);
        }
        let name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(kind) = AssetKind::from_name(name) else {
            return Ok(());
        };
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
        if s.meta.removing {
            return Ok(());
        }
        let cur = match fs::read(&abs) {
            Ok(b) => Some((b, fs::metadata(&abs)?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e.into()),
        };
        let moved = match (&cur, &s.meta.base) {
            (Some((_, m)), Some(b)) => Ident::of(m) != *b,
            (Some(_), None) => true,
            (None, Some(_)) => true,
            (None, None) => !s.meta.new_asset,
        };
        if moved {
            s.meta.conflict = true;
            s.meta.status = format!(
                "conflict: the binary changed outside the mount after {} was staged; \
                 delete the staged files to take the new binary",
                trigger
            );
            let _ = s.save();
            log::warn!("{}: {}", rel.display(), s.meta.status);
            return Err(FsError::Stale);
        }
        let t0 = std::time::Instant::now();
        let rel_str = rel.to_string_lossy().replace('\\', "/");
        let opts = view_options_for(&self.game_dir, &rel_str);
        let view = match &cur {
            Some((b, _)) => Some((self.opts.opener)(kind, b, &opts)?),
            None => None,
        };
        let t_decode = t0.elapsed();
        let overlay = Overlay {
            stage: s,
            layout: view.as_deref().map(Layout::new),
            view: view.as_deref(),
            kind,
        };
        let mut t_build = Duration::ZERO;
        let built = (self.opts.packer)(kind, &overlay, cur.as_ref().map(|c| c.0.as_slice()), &opts)
            .and_then(|bytes| {
                t_build = t0.elapsed();
                let v = (self.opts.opener)(kind, &bytes, &opts).map_err(|e| {
                    ViewError::invalid(trigger, format!("the rebuilt binary does not decode: {e}"))
                })?;
                if s.meta.new_asset {
                    complete_new(kind, &overlay, &*v)?;
                }
                Ok((bytes, v))
            });
        drop(overlay);
        let t_valid = t0.elapsed();
        let (bytes, new_view) = match built {
            Ok(b) => b,
            Err(e @ ViewError::Missing { .. }) => {
                s.meta.status = format!("pending: {e}");
                let _ = s.save();
                log::info!("{}: {}", rel.display(), s.meta.status);
                return Ok(());
            }
            Err(e) => {
                s.meta.status = format!("error: {e}");
                let _ = s.save();
                log::warn!("{}: commit refused: {e}", rel.display());
                if error_file(&e).map_or(true, |f| f == trigger) {
                    return Err(FsError::Commit(format!("{}: {e}", rel.display())));
                }
                return Ok(());
            }
        };
        if cur.as_ref().is_some_and(|c| c.0 == bytes) {
            s.meta.dirty.clear();
            s.meta.status = "clean: the last save changed nothing in the binary".into();
            s.save()?;
            return Ok(());
        }
        let outdated = outdated_staged(&self.opts.packer, kind, s, &*new_view, &bytes, &opts);
        let old = cur.as_ref().map(|(b, m)| (b.as_slice(), m));
        replace_binary(rel, &abs, s, old, &bytes)?;
        drop_outdated(rel, s, &outdated);
        s.meta.dirty.clear();
        s.meta.conflict = false;
        let was_new = std::mem::take(&mut s.meta.new_asset);
        let ms = |d: Duration| d.as_millis();
        s.meta.status = format!(
            "committed {} bytes after saving {trigger} ({} ms: decode {}, build {}, validate {}, \
             history + replace {})",
            bytes.len(),
            ms(t0.elapsed()),
            ms(t_decode),
            ms(t_build.saturating_sub(t_decode)),
            ms(t_valid.saturating_sub(t_build)),
            ms(t0.elapsed().saturating_sub(t_valid)),
        );
        s.save()?;
        log::info!("{}: {}", rel.display(), s.meta.status);
        drop(g);
        // the new binary gets a new generation; the staged files stay on top of it
        let _ = was_new;
        let _ = self.resolve(rel);
        Ok(())
    }
}

/// Replaces binary `abs` (`old`: its bytes and metadata, if it exists) with `bytes`, the way
/// every commit does: the old version to the history, a record of what is being written (so
/// a commit killed after the rename is recognised at the next start), leftovers of an
/// interrupted commit removed, atomic replace; the staging area is based on the new file.
pub(super) fn replace_binary(
    rel: &Path,
    abs: &Path,
    s: &mut Stage,
    old: Option<(&[u8], &Metadata)>,
    bytes: &[u8],
) -> Result<(), FsError> {
    if let Some((b, _)) = old {
        s.push_history(b)?;
    }
    s.meta.committing = Some(crate::fs::stage::Written::of(bytes));
    s.save()?;
    let n = crate::atomic::remove_leftovers(abs);
    if n > 0 {
        log::info!(
            "{}: removed {n} temporary file(s) of an interrupted commit",
            rel.display()
        );
    }
    crate::atomic::write(abs, bytes, old.map(|(_, m)| m))?;
    s.meta.base = Some(Ident::of(&fs::metadata(abs)?));
    s.meta.committing = None;
    Ok(())
}

/// Removes the staged files `outdated` (paths in the staging area) after a commit.
pub(super) fn drop_outdated(rel: &Path, s: &Stage, outdated: &[String]) {
    for p in outdated {
        let _ = fs::remove_file(s.path(p));
    }
    if !outdated.is_empty() {
        log::info!(
            "{}: staged files that no longer describe the binary dropped: {}",
            rel.display(),
            outdated.join(", ")
        );
    }
}

/// Staged layout files that must be dropped after committing `bytes` (decoded as `view`)
/// because they no longer describe it. A commit can transform what it was given: a map whose
/// `map.png` was edited is re-tiled, which renumbers `tilemap.csv` and changes the mosaic
/// checksum in `metadata.json`. When building again from the new binary with the staged
/// files on top does not give the same bytes, every staged layout file that differs from the
/// new binary's generated one is outdated (so the next commit cannot undo this one); files the
/// view does not have are kept. Maps
/// only: GAF builds take every staged file as it is.
pub(super) fn outdated_staged(
    packer: &crate::fs::stage::Packer,
    kind: AssetKind,
    stage: &Stage,
    view: &dyn View,
    bytes: &[u8],
    opts: &ViewOptions,
) -> Vec<String> {
    if kind != AssetKind::Tnt {
        return Vec::new();
    }
    let overlay = Overlay {
        stage,
        layout: Some(Layout::new(view)),
        view: Some(view),
        kind,
    };
    if packer(kind, &overlay, Some(bytes), opts).is_ok_and(|again| again == bytes) {
        return Vec::new();
    }
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
            } else if is_layout_name(&p) {
                // files the view does not have (the user's own) are kept
                let in_view = overlay.layout.as_ref().and_then(|l| l.is_dir(&p)) == Some(false);
                if in_view && fs::read(e.path()).ok() != view.render_vec(&p).ok() {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// A new asset commits only once it has a sequence and every sequence its metadata.json
/// lists is there.
pub(super) fn complete_new(
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
    if let Some(b) = files.read("metadata.json")? {
        let meta: serde_json::Value = serde_json::from_slice(&b)
            .map_err(|e| ViewError::invalid("metadata.json", e.to_string()))?;
        let root = files.list("")?.unwrap_or_default();
        for s in meta
            .get("sequences")
            .and_then(|s| s.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(dir) = s.get("dir").and_then(|d| d.as_str()) {
                let has = root.iter().any(|(n, d)| *d && n == dir)
                    && files.read(&format!("{dir}/frames.csv"))?.is_some();
                if !has {
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

impl Asset {
    fn stage_active(&self) -> bool {
        lock(&self.stage).as_ref().is_some_and(|s| s.active())
    }
}
