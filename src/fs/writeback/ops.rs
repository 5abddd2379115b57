//! The operations inside asset directories with write-back on: create, open for writing,
//! writes and saves of staged files, setattr, mkdir, unlink, rmdir, rename; `mkdir X.gaf`
//! (a new asset) and `rmdir` of an asset directory.

use super::archive::{is_archive_stage, part_of};
use crate::fs::core::handles::Handle;
use crate::fs::core::inode::NodeKind;
use crate::fs::core::{is_archive_path, AssetAt, Attr, Core, Inval, Opened, Resolved, SetAttr};
use crate::fs::shared::{join, lock, Loc, NewNode};
use crate::fs::stage::Status;
use crate::fs::staging::merged_children;
use crate::fs::staging::overlay::FILLING;
use crate::fs::Caller;
use crate::fs::FsError;
use crate::view::AssetKind;
use std::ffi::OsStr;
use std::fs::{self};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// A `rename` inside asset directories: `name` in `parent` to `newname` in `newparent`, and
/// the view paths `src` and `dst` they stand for.
#[derive(Clone, Copy)]
pub(in crate::fs::writeback) struct Move<'a> {
    pub(in crate::fs::writeback) parent: u64,
    pub(in crate::fs::writeback) name: &'a str,
    pub(in crate::fs::writeback) newparent: u64,
    pub(in crate::fs::writeback) newname: &'a str,
    pub(in crate::fs::writeback) src: &'a str,
    pub(in crate::fs::writeback) dst: &'a str,
}

impl Core {
    /// `mknod` in an asset folder: regular files only, created as by `create`.
    pub(in crate::fs::writeback) fn wb_mknod(
        &self,
        c: Caller,
        n: NewNode,
    ) -> Result<Attr, FsError> {
        if n.mode & libc::S_IFMT != libc::S_IFREG {
            return Err(FsError::NotSupported(
                "only regular files in asset directories",
            ));
        }
        let (attr, o) = self.wb_create(c, n, libc::O_EXCL)?;
        self.release_handle(o.fh)?;
        Ok(attr)
    }

    /// `create` in an asset folder.
    pub(in crate::fs::writeback) fn wb_create(
        &self,
        c: Caller,
        n: NewNode,
        flags: i32,
    ) -> Result<(Attr, Opened), FsError> {
        let NewNode {
            parent,
            name,
            mode,
            umask,
        } = n;
        let Caller { uid, gid, .. } = c;
        self.check_writable()?;
        let (root, rel, gen, layout, meta, dir) = self.in_asset(parent)?.ok_or(FsError::NotDir)?;
        let name = Self::name_str(name)?;
        let vpath = join(&dir, name);
        let loc = self.locate(&rel, &layout, &vpath);
        let exists = !matches!(loc, Loc::None);
        if exists && flags & libc::O_EXCL != 0 {
            return Err(FsError::Exists);
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
            failed: AtomicBool::new(false),
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
    pub(in crate::fs::writeback) fn wb_open(
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
        let staged = self.staging(&rel);
        let file = {
            let mut g = lock(&staged.stage);
            // Under the stage lock (see `stands_at`): a rename over this name or an unlink
            // since the kernel looked it up answers ESTALE here, never the file now there.
            if !self.stands_at(ino, vpath) {
                return Err(FsError::Stale);
            }
            let Some(s) = g.as_mut() else {
                return Ok(None);
            };
            let path = s.path(vpath);
            if s.lstat(vpath).is_none() {
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
            failed: AtomicBool::new(false),
        });
        Ok(Some(Opened {
            fh,
            keep_cache: false,
        }))
    }

    /// A write to staged file `ino` (open as `file`) failed with `e` (a full state
    /// directory): the partial file is removed, so the path shows what it showed before it
    /// was staged (the generated file; nothing for a name the write created) and frees its
    /// room, and the asset's status names the failure. A file renamed there since is left.
    pub(in crate::fs::writeback) fn staged_write_failed(
        &self,
        rel: &Path,
        ino: u64,
        file: &fs::File,
        e: &std::io::Error,
    ) {
        use std::os::unix::fs::MetadataExt;
        let Some(node) = self.table().get(ino).cloned() else {
            return;
        };
        let Some(vpath) = self.vpath_of(ino) else {
            return;
        };
        let staged = self.staging(rel);
        let mut g = lock(&staged.stage);
        let Some(s) = g.as_mut() else {
            return;
        };
        let p = s.path(&vpath);
        let same = match (file.metadata(), p.symlink_metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        };
        if !same || !self.stands_at(ino, &vpath) {
            return;
        }
        if let Err(r) = fs::remove_file(&p) {
            log::warn!("{}: {vpath}: removing a partial file: {r}", rel.display());
            return;
        }
        s.meta.dirty.remove(&vpath);
        s.meta.status = Status::Error(format!(
            "writing {vpath} failed ({e}); it shows what it showed before the write; save it \
             again once the state folder has room"
        ));
        log::warn!("{}: {}", rel.display(), s.meta.status);
        let _ = s.save();
        // under the stage lock, with the staged file (`stands_at`)
        self.table_mut().detach_child(node.parent, &node.name);
        drop(g);
        self.send(Inval::Entry {
            parent: node.parent,
            name: node.name,
        });
    }

    /// A write went to staged file `ino`.
    pub(in crate::fs::writeback) fn staged_written(&self, rel: &Path, ino: u64) {
        let Some(vpath) = self.vpath_of(ino) else {
            return;
        };
        let staged = self.staging(rel);
        let mut g = lock(&staged.stage);
        if let Some(s) = g.as_mut() {
            if self.commits(rel, &vpath) && !s.meta.dirty.contains(&vpath) {
                Self::mark_dirty(s, &vpath);
                let _ = s.save();
            }
        }
    }

    /// `close` (`fsync`: `synced`) of a staged file: commits if it is a layout file and
    /// something is uncommitted (a close of an archive's plain member: soon, with the saves
    /// that follow it, [`Core::commit_after`]; an `fsync`: at once).
    pub(in crate::fs::writeback) fn staged_save(
        &self,
        rel: &Path,
        ino: u64,
        synced: bool,
    ) -> Result<(), FsError> {
        let Some(vpath) = self.vpath_of(ino) else {
            return Ok(());
        };
        if !self.commits(rel, &vpath) {
            return Ok(());
        }
        self.refuse_while_removing(rel, &vpath)?;
        if synced {
            self.undefer(rel);
            self.commit(rel, &vpath)
        } else {
            self.commit_after(rel, &vpath)
        }
    }

    /// A save into a loose asset whose `metadata.json` was deleted (marked for removal)
    /// cannot be applied: the call fails (`EIO`) and the status says why, so that a push
    /// from a tree without `metadata.json` (`rsync -a --delete`) does not silently commit
    /// nothing.
    pub(in crate::fs::writeback) fn refuse_while_removing(
        &self,
        rel: &Path,
        vpath: &str,
    ) -> Result<(), FsError> {
        if is_archive_path(rel) {
            return Ok(());
        }
        let staged = self.staging(rel);
        let mut g = lock(&staged.stage);
        let Some(s) = g.as_mut().filter(|s| s.meta.removing) else {
            return Ok(());
        };
        s.meta.status = Status::Error(format!(
            "{vpath} was saved but metadata.json is deleted (the asset is marked for removal), \
             so nothing is applied; write metadata.json again to commit, or `rmdir` the asset \
             directory to delete the binary"
        ));
        let _ = s.save();
        log::warn!("{}: {}", rel.display(), s.meta.status);
        Err(FsError::Commit(format!(
            "{}: {vpath} not applied: metadata.json is deleted",
            rel.display()
        )))
    }

    /// `setattr` of a node inside an asset directory.
    pub(in crate::fs::writeback) fn wb_setattr(
        &self,
        ino: u64,
        set: SetAttr,
        fh: Option<u64>,
    ) -> Result<Attr, FsError> {
        let node = self.node(ino)?;
        self.check_writable()?;
        let (root, gen, vpath, dir) = match &node.kind {
            NodeKind::AssetRoot => (
                ino,
                self.table_gen(ino).ok_or(FsError::Stale)?,
                String::new(),
                true,
            ),
            // a folder's generation is the asset's current one (`folder`)
            NodeKind::ViewDir { root, vpath } => (*root, 0, vpath.clone(), true),
            NodeKind::ViewFile { root, gen, vpath } => (*root, *gen, vpath.clone(), false),
            _ => return Err(FsError::ReadOnly("read-only")),
        };
        let rel = self.rel_path(root)?;
        let path = match self.staged_path(&rel, &vpath) {
            Some(p) if !vpath.is_empty() || self.staging(&rel).stage_active() => p,
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
        crate::fs::core::apply_setattr(&path, &set, false, open)?;
        if set.size.is_some() {
            let staged = self.staging(&rel);
            let mut g = lock(&staged.stage);
            if let Some(s) = g.as_mut() {
                Self::mark_dirty(s, &vpath);
                let _ = s.save();
            }
        }
        let m = fs::symlink_metadata(&path)?;
        Ok(self.staged_attr(ino, &m, 0))
    }

    /// `mkdir` in an asset folder.
    pub(in crate::fs::writeback) fn wb_mkdir(
        &self,
        c: Caller,
        n: NewNode,
    ) -> Result<Attr, FsError> {
        let NewNode {
            parent,
            name,
            mode,
            umask,
        } = n;
        let Caller { uid, gid, .. } = c;
        self.check_writable()?;
        let (root, rel, gen, layout, meta, dir) = self.in_asset(parent)?.ok_or(FsError::NotDir)?;
        let name = Self::name_str(name)?;
        let vpath = join(&dir, name);
        if !matches!(self.locate(&rel, &layout, &vpath), Loc::None) {
            return Err(FsError::Exists);
        }
        self.case_clash(&rel, &layout, &dir, name)?;
        if !dir.is_empty() {
            self.materialize(&rel, gen, &layout, &meta, &dir, true)?;
        }
        // a folder of an archive (outside its GAF/TNT members) is an entry of its own
        let archive_dir = is_archive_path(&rel) && part_of(&vpath).is_none();
        let p = self.with_stage(&rel, &meta, |s| {
            let p = s.path(&vpath);
            fs::DirBuilder::new()
                .mode(mode & 0o7777 & !umask)
                .create(&p)?;
            self.chown_new(&p, uid, gid)?;
            if !is_archive_path(&rel) {
                fs::write(p.join(FILLING), b"")?;
            }
            if archive_dir {
                s.meta.dirty.insert(vpath.clone());
            }
            Ok(p)
        })?;
        let ino = self.new_view_node(parent, root, gen, name, &vpath, true);
        let attr = self.staged_attr(ino, &fs::metadata(p)?, 0);
        if archive_dir {
            self.commit_soon(&rel, &vpath)?;
        }
        Ok(attr)
    }

    /// `unlink` in an asset folder: deletes the staged file and hides the generated one.
    pub(in crate::fs::writeback) fn wb_unlink(
        &self,
        parent: u64,
        name: &OsStr,
    ) -> Result<(), FsError> {
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
            if vpath == "metadata.json" && !is_archive_stage(s) {
                s.meta.removing = true;
                s.meta.status = Status::Removing(
                    "metadata.json was deleted; nothing commits until it is written again, \
                     `rmdir` of the asset directory deletes the binary"
                        .into(),
                );
            }
            // under the stage lock, with the staged file (`stands_at`)
            self.table_mut().detach_child(parent, OsStr::new(name));
            Ok(())
        })?;
        self.after_delete(&rel);
        if is_archive_path(&rel) && part_of(&vpath).is_none() {
            // deleting a member of an archive commits (soon, with the saves that follow it;
            // inside a GAF/TNT member it is part of the next commit, as in loose asset
            // directories)
            return self.commit_soon(&rel, &vpath);
        }
        Ok(())
    }

    /// A conflict clears once no dirty staged file is left.
    pub(in crate::fs::writeback) fn after_delete(&self, rel: &Path) {
        let asset = self.slot(rel);
        let staged = self.staging(rel);
        let mut g = lock(&staged.stage);
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
    pub(in crate::fs::writeback) fn wb_rmdir(
        &self,
        parent: u64,
        name: &OsStr,
    ) -> Result<(), FsError> {
        self.check_writable()?;
        let (_, rel, _, layout, meta, dir) = self.in_asset(parent)?.ok_or(FsError::NotDir)?;
        let name = Self::name_str(name)?;
        let vpath = join(&dir, name);
        match self.locate(&rel, &layout, &vpath) {
            Loc::None => return Err(FsError::NotFound),
            Loc::Dir => {}
            _ => return Err(FsError::NotDir),
        }
        let staged = self.staging(&rel);
        let empty = {
            let g = lock(&staged.stage);
            merged_children(g.as_ref(), Some(&layout), &vpath)
                .unwrap_or_default()
                .is_empty()
        };
        if !empty {
            return Err(FsError::NotEmpty);
        }
        self.with_stage(&rel, &meta, |s| {
            let p = s.path(&vpath);
            if p.is_dir() {
                let _ = fs::remove_file(p.join(FILLING));
                fs::remove_dir(&p)?;
            }
            if layout.is_dir(&vpath) == Some(true) && !s.hidden(&vpath) {
                s.meta.whiteouts.insert(vpath.clone());
                s.meta.dirty.insert(vpath.clone());
            }
            Ok(())
        })?;
        self.table_mut().detach_child(parent, OsStr::new(name));
        self.commit_after(&rel, &vpath)
    }

    /// `rename` where either side is in an asset folder.
    pub(in crate::fs::writeback) fn wb_rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<(), FsError> {
        self.check_writable()?;
        let exdev = || FsError::CrossDevice("only within one asset directory");
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
        let mv = Move {
            parent,
            name,
            newparent,
            newname,
            src: &src,
            dst: &dst,
        };
        match self.locate(&rel, &layout, &src) {
            Loc::None => return Err(FsError::NotFound),
            Loc::Dir if is_archive_path(&rel) && part_of(&src).is_none() => {
                // a folder or a member of an archive: moved in the archive
                return self.archive_rename(mv, AssetAt::of(&rel, gen, &layout, &meta));
            }
            Loc::Dir => return self.rename_dir(mv, AssetAt::of(&rel, gen, &layout, &meta)),
            _ => {}
        }
        match self.locate(&rel, &layout, &dst) {
            Loc::Dir => return Err(FsError::IsDir),
            Loc::None => self.case_clash(&rel, &layout, &ddir, newname)?,
            _ if flags & libc::RENAME_NOREPLACE != 0 => return Err(FsError::Exists),
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
            if let Some(ino) =
                t.move_child(parent, OsStr::new(name), newparent, OsStr::new(newname))
            {
                t.set_vpath(ino, &dst);
            }
            Ok(())
        })?;
        if self.commits(&rel, &dst) {
            self.refuse_while_removing(&rel, &dst)?;
            return Self::renamed(self.commit_after(&rel, &dst));
        }
        Ok(())
    }

    /// What a rename that took effect in the staging area answers for the commit after it:
    /// the rename stands, so files that do not build yet (a frame swap half done) or a
    /// conflict are in the status only; an I/O error (`ENOSPC`) is returned.
    fn renamed(commit: Result<(), FsError>) -> Result<(), FsError> {
        match commit {
            Err(FsError::Commit(m)) => {
                log::info!("rename done, not committed: {m}");
                Ok(())
            }
            Err(FsError::Stale) => Ok(()),
            r => r,
        }
    }

    /// `rename` of a folder of a loose asset directory (a sequence folder, `<n>.layers/`,
    /// `tiles/`): its files are staged under the new name, the old folder is deleted, and the
    /// asset commits (a renamed sequence folder renames the sequence). The destination must
    /// not exist (`EEXIST`; `ENOTEMPTY` for a non-empty folder), nor be inside the source
    /// (`EINVAL`).
    fn rename_dir(&self, mv: Move, at: AssetAt) -> Result<(), FsError> {
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
        if dst == src {
            return Ok(());
        }
        if dst.starts_with(&format!("{src}/")) {
            return Err(FsError::Invalid(format!("{src}: cannot move into itself")));
        }
        match self.locate(rel, layout, dst) {
            Loc::None => {
                let ddir = dst.rsplit_once('/').map_or("", |(d, _)| d);
                self.case_clash(rel, layout, ddir, newname)?;
            }
            Loc::Dir => {
                let staged = self.staging(rel);
                let g = lock(&staged.stage);
                let empty = merged_children(g.as_ref(), Some(layout), dst)
                    .unwrap_or_default()
                    .is_empty();
                if !empty {
                    return Err(FsError::NotEmpty);
                }
            }
            _ => return Err(FsError::NotDir),
        }
        // every file under the folder is staged (generated ones copied), then moved at once
        let kind = AssetKind::from_name(&rel.to_string_lossy());
        let mut files = Vec::new();
        let mut stack = vec![src.to_string()];
        while let Some(dir) = stack.pop() {
            self.materialize(rel, gen, layout, meta, &dir, true)?;
            let kids = {
                let staged = self.staging(rel);
                let g = lock(&staged.stage);
                merged_children(g.as_ref(), Some(layout), &dir).unwrap_or_default()
            };
            for (n, d) in kids {
                let p = join(&dir, &n);
                if d {
                    if stack.len() > 4096 {
                        return Err(FsError::Invalid(format!("{src}: too many folders")));
                    }
                    stack.push(p);
                } else if self.staged_path(rel, &p).is_some()
                    || !kind.is_some_and(|k| super::commit::derived_only(k, &p))
                {
                    // (generated previews are not taken along: they are generated again)
                    self.materialize(rel, gen, layout, meta, &p, false)?;
                    files.push(p);
                }
            }
        }
        let ddir = dst.rsplit_once('/').map_or("", |(d, _)| d);
        if !ddir.is_empty() {
            self.materialize(rel, gen, layout, meta, ddir, true)?;
        }
        self.with_stage(rel, meta, |s| {
            let to = s.path(dst);
            if to.is_dir() {
                let _ = fs::remove_file(to.join(FILLING));
                fs::remove_dir(&to)?;
            }
            fs::rename(s.path(src), &to)?;
            let under = format!("{src}/");
            s.meta.dirty.retain(|d| d != src && !d.starts_with(&under));
            s.meta
                .whiteouts
                .retain(|d| d != src && !d.starts_with(&under));
            if layout.is_dir(src).is_some() {
                s.meta.whiteouts.insert(src.to_string());
            }
            for f in &files {
                let moved = format!("{dst}{}", f.get(src.len()..).unwrap_or_default());
                Self::mark_dirty(s, &moved);
            }
            s.meta.dirty.insert(src.to_string());
            // the table changes with the staged files, under the stage lock (`stands_at`)
            let mut t = self.table_mut();
            if let Some(ino) =
                t.move_child(parent, OsStr::new(name), newparent, OsStr::new(newname))
            {
                t.set_vpath(ino, dst);
            }
            Ok(())
        })?;
        self.refuse_while_removing(rel, dst)?;
        Self::renamed(self.commit(rel, dst))
    }

    /// `mkdir NAME.gaf` in a real folder: a new asset, staged only.
    pub(in crate::fs::writeback) fn new_asset(
        &self,
        c: Caller,
        n: NewNode,
    ) -> Result<Option<Attr>, FsError> {
        let NewNode {
            parent,
            name,
            mode,
            umask,
        } = n;
        let Caller { uid, gid, .. } = c;
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
            return Err(FsError::Exists);
        }
        let staged = self.staging(&rel);
        {
            let mut g = lock(&staged.stage);
            let s = g.as_mut().ok_or(FsError::ReadOnly("write-back is off"))?;
            if s.meta.new_asset {
                return Err(FsError::Exists);
            }
            s.clear()?;
            s.meta.new_asset = true;
            s.meta.base = None;
            fs::create_dir_all(&s.dir)?;
            s.creating_files();
            fs::DirBuilder::new()
                .mode(mode & 0o7777 & !umask)
                .create(&s.files)?;
            // the caller's, as a folder they made beside it would be (a root daemon's
            // other users), and so is the binary it becomes (`replace_binary`)
            self.chown_new(&s.files, uid, gid)?;
            if self.root_owner && (uid != 0 || gid != 0) {
                s.meta.owner = Some((uid, gid));
            }
            // nothing generated shows while a copy fills it (see `FILLING`)
            fs::write(s.files.join(FILLING), b"")?;
            s.meta.status = Status::NewAsset("waiting for files".into());
            s.save()?;
        }
        self.lookup_node(parent, name).map(Some)
    }

    /// `rmdir` of an asset directory: allowed once it is empty; the binary goes to the history
    /// and is deleted.
    pub(in crate::fs::writeback) fn remove_asset(
        &self,
        parent: u64,
        name: &OsStr,
    ) -> Result<bool, FsError> {
        let rel = self.rel_path(parent)?.join(name);
        let Ok(Resolved::Asset { layout, .. }) = self.resolve(&rel) else {
            return Ok(false);
        };
        self.check_writable()?;
        let staged = self.staging(&rel);
        let mut g = lock(&staged.stage);
        let s = g.as_mut().ok_or(FsError::ReadOnly("write-back is off"))?;
        let kids = merged_children(Some(s), Some(&layout), "").unwrap_or_default();
        if !kids.is_empty() {
            return Err(FsError::NotEmpty);
        }
        let abs = self.abs(&rel);
        // opened and removed beneath the game folder (never through a symlink swapped in);
        // kept in the history as a hard link where it can be (it is removed next), else
        // copied file to file
        match self.open_rel(&rel, libc::O_RDONLY | libc::O_CLOEXEC, 0) {
            Ok(f) => {
                let m = f.metadata()?;
                s.push_history_file(&f, Some((&abs, &m)))?;
                let (dir, name) = self.parent_fd(&rel)?;
                crate::sys::unlink_at(std::os::fd::AsFd::as_fd(&dir), &name, false)?;
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
}
