//! What the core asks of write-back: the one interface through which the core's operations
//! reach the write-back operations. `writeback` implements it for `Core`; its inherent
//! methods are private to `writeback`, so the core cannot call them around the trait.

use crate::fs::core::{Attr, Opened, Resolved, SetAttr};
use crate::fs::shared::NewNode;
use crate::fs::stage::{Ident, Stage, Written};
use crate::fs::{Caller, FsError};
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::path::Path;

/// The write-back operations the core's requests, status files and open-file hooks call.
pub(in crate::fs) trait WritebackOps {
    // Requests of `FsOps` that change an asset directory.
    fn wb_mknod(&self, c: Caller, n: NewNode) -> Result<Attr, FsError>;
    fn wb_mkdir(&self, c: Caller, n: NewNode) -> Result<Attr, FsError>;
    fn wb_create(&self, c: Caller, n: NewNode, flags: i32) -> Result<(Attr, Opened), FsError>;
    fn wb_open(
        &self,
        ino: u64,
        root: u64,
        gen: u64,
        vpath: &str,
        flags: i32,
    ) -> Result<Option<Opened>, FsError>;
    fn wb_setattr(&self, ino: u64, set: SetAttr, fh: Option<u64>) -> Result<Attr, FsError>;
    fn wb_unlink(&self, parent: u64, name: &OsStr) -> Result<(), FsError>;
    fn wb_rmdir(&self, parent: u64, name: &OsStr) -> Result<(), FsError>;
    fn wb_rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<(), FsError>;

    // New assets (a binary created inside the mount) and their removal.
    fn new_asset(&self, c: Caller, n: NewNode) -> Result<Option<Attr>, FsError>;
    fn remove_asset(&self, parent: u64, name: &OsStr) -> Result<bool, FsError>;
    fn new_assets_in(&self, rel: &Path) -> Vec<OsString>;
    fn resolve_new(&self, rel: &Path) -> Option<Result<Resolved, FsError>>;

    // The stage of an asset whose binary changed outside the mount.
    fn rebase(
        &self,
        rel: &Path,
        stage: &mut Stage,
        ident: &Ident,
        written: &dyn Fn() -> std::io::Result<Written>,
    );

    // The status file of an asset directory.
    fn status_node(&self, parent: u64, root: u64) -> Result<Attr, FsError>;
    fn status_attr(&self, ino: u64, root: u64) -> Result<Attr, FsError>;
    fn status_bytes(&self, root: u64, c: Caller) -> Result<Vec<u8>, FsError>;

    // Hooks of open staged files: written, failed, flushed or synced, released.
    fn staged_written(&self, rel: &Path, ino: u64);
    fn staged_write_failed(&self, rel: &Path, ino: u64, file: &File, e: &std::io::Error);
    fn staged_save(&self, rel: &Path, ino: u64, synced: bool) -> Result<(), FsError>;
    fn archive_released(&self, rel: &Path, ino: u64);
    fn commits(&self, rel: &Path, vpath: &str) -> bool;

    // The times an archive member shows.
    fn with_member_shown(
        &self,
        a: &mut Attr,
        rel: &Path,
        archive: &Metadata,
        vpath: &str,
        dir: bool,
    );

    /// Commits what is pending (`settle`: also what waits for a quiet period) at unmount.
    fn finish_writeback(&self, settle: bool);
}
