//! The open-folder handles of both merged views ([`MergedCore`](super::MergedCore) and
//! [`OverlayCore`](super::OverlayCore)): the listing each `opendir` took, paged by `readdir`
//! and `readdirplus` until `releasedir`.

use crate::fs::core::DirItem;
use crate::fs::shared::lock;
use crate::fs::FsError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The listings of the open folders, by handle.
#[derive(Default)]
pub(super) struct DirHandles(Mutex<HashMap<u64, Arc<Vec<DirItem>>>>);

impl DirHandles {
    /// Keeps `items` (a folder's listing, its `.` first) under handle `fh`; returns `fh`.
    pub(super) fn open(&self, fh: u64, items: Vec<DirItem>) -> u64 {
        lock(&self.0).insert(fh, Arc::new(items));
        fh
    }

    /// The entries of handle `fh` from `offset` on (at most `max`, see
    /// [`DirItem::numbered_from`]), each with the offset of the next.
    pub(super) fn page(
        &self,
        fh: u64,
        offset: u64,
        max: usize,
    ) -> Result<Vec<(u64, DirItem)>, FsError> {
        let items = lock(&self.0)
            .get(&fh)
            .cloned()
            .ok_or(FsError::BadHandle(fh))?;
        Ok(DirItem::numbered_from(&items, offset, max))
    }

    /// The inode of the folder handle `fh` lists (the inode of its `.`).
    pub(super) fn dir_ino(&self, fh: u64) -> Result<u64, FsError> {
        lock(&self.0)
            .get(&fh)
            .and_then(|v| v.first().map(|d| d.ino))
            .ok_or(FsError::BadHandle(fh))
    }

    /// Forgets handle `fh`.
    pub(super) fn release(&self, fh: u64) -> Result<(), FsError> {
        lock(&self.0)
            .remove(&fh)
            .map(|_| ())
            .ok_or(FsError::BadHandle(fh))
    }
}
