//! `WritebackOps` for `Core`: the core's way into the operations of this room.

use crate::fs::core::writeback_ops::WritebackOps;
use crate::fs::core::{Attr, Core, Opened, Resolved, SetAttr};
use crate::fs::shared::NewNode;
use crate::fs::stage::{Ident, Stage, Written};
use crate::fs::{Caller, FsError};
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::path::Path;

impl WritebackOps for Core {
    fn wb_mknod(&self, c: Caller, n: NewNode) -> Result<Attr, FsError> {
        Core::wb_mknod(self, c, n)
    }
    fn wb_mkdir(&self, c: Caller, n: NewNode) -> Result<Attr, FsError> {
        Core::wb_mkdir(self, c, n)
    }
    fn wb_create(&self, c: Caller, n: NewNode, flags: i32) -> Result<(Attr, Opened), FsError> {
        Core::wb_create(self, c, n, flags)
    }
    fn wb_open(
        &self,
        ino: u64,
        root: u64,
        gen: u64,
        vpath: &str,
        flags: i32,
    ) -> Result<Option<Opened>, FsError> {
        Core::wb_open(self, ino, root, gen, vpath, flags)
    }
    fn wb_setattr(&self, ino: u64, set: SetAttr, fh: Option<u64>) -> Result<Attr, FsError> {
        Core::wb_setattr(self, ino, set, fh)
    }
    fn wb_unlink(&self, parent: u64, name: &OsStr) -> Result<(), FsError> {
        Core::wb_unlink(self, parent, name)
    }
    fn wb_rmdir(&self, parent: u64, name: &OsStr) -> Result<(), FsError> {
        Core::wb_rmdir(self, parent, name)
    }
    fn wb_rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<(), FsError> {
        Core::wb_rename(self, parent, name, newparent, newname, flags)
    }
    fn new_asset(&self, c: Caller, n: NewNode) -> Result<Option<Attr>, FsError> {
        Core::new_asset(self, c, n)
    }
    fn remove_asset(&self, parent: u64, name: &OsStr) -> Result<bool, FsError> {
        Core::remove_asset(self, parent, name)
    }
    fn new_assets_in(&self, rel: &Path) -> Vec<OsString> {
        Core::new_assets_in(self, rel)
    }
    fn resolve_new(&self, rel: &Path) -> Option<Result<Resolved, FsError>> {
        Core::resolve_new(self, rel)
    }
    fn rebase(
        &self,
        rel: &Path,
        stage: &mut Stage,
        ident: &Ident,
        written: &dyn Fn() -> std::io::Result<Written>,
    ) {
        Core::rebase(self, rel, stage, ident, written)
    }
    fn status_node(&self, parent: u64, root: u64) -> Result<Attr, FsError> {
        Core::status_node(self, parent, root)
    }
    fn status_attr(&self, ino: u64, root: u64) -> Result<Attr, FsError> {
        Core::status_attr(self, ino, root)
    }
    fn status_bytes(&self, root: u64, c: Caller) -> Result<Vec<u8>, FsError> {
        Core::status_bytes(self, root, c)
    }
    fn staged_written(&self, rel: &Path, ino: u64) {
        Core::staged_written(self, rel, ino)
    }
    fn staged_write_failed(&self, rel: &Path, ino: u64, file: &File, e: &std::io::Error) {
        Core::staged_write_failed(self, rel, ino, file, e)
    }
    fn staged_save(&self, rel: &Path, ino: u64, synced: bool) -> Result<(), FsError> {
        Core::staged_save(self, rel, ino, synced)
    }
    fn archive_released(&self, rel: &Path, ino: u64) {
        Core::archive_released(self, rel, ino)
    }
    fn commits(&self, rel: &Path, vpath: &str) -> bool {
        Core::commits(self, rel, vpath)
    }
    fn with_member_shown(
        &self,
        a: &mut Attr,
        rel: &Path,
        archive: &Metadata,
        vpath: &str,
        dir: bool,
    ) {
        Core::with_member_shown(self, a, rel, archive, vpath, dir)
    }
    fn finish_writeback(&self, settle: bool) {
        Core::finish_writeback(self, settle)
    }
}
