//! The children of asset folders, remembered between requests, so that a folder's attributes
//! (its `nlink` and size count its children) cost O(1) while the folder is being filled.
//!
//! Every create invalidates the parent's attributes in the kernel, which asks for them again
//! before the next create: listing the folder for each of those requests makes filling a
//! folder of n files cost O(n²). Here a listing is kept per folder inode and version with the
//! *epoch* it was made at; every write-back operation advances the epoch when it begins and
//! when it ends (see [`Core::mutating`](super::Core)), so a kept listing is used only while no
//! operation has changed anything since it was made. A create or mkdir that was the only
//! operation since adds its name to the kept listing instead of dropping it, so the next
//! request does not list the folder again. Names are a set, so a create that opened an
//! existing file changes nothing.

use crate::fs::shared::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Folders whose listings are kept at most; more drop them all (they are rebuilt on demand).
const MAX_DIRS: usize = 64;
/// A folder with more children than this is listed on every request instead of being kept.
const MAX_NAMES: usize = 1 << 16;

/// A kept listing of one folder.
struct Kept {
    epoch: u64,
    gen: u64,
    /// Child names, and whether each is a folder.
    names: HashMap<String, bool>,
    subdirs: u32,
}

/// Kept listings of asset folders, by folder inode.
#[derive(Default)]
pub(in crate::fs) struct DirCounts {
    epoch: AtomicU64,
    kept: Mutex<HashMap<u64, Kept>>,
}

impl DirCounts {
    /// An operation that may change asset folders begins: returns the epoch before it.
    pub(in crate::fs) fn begin(&self) -> u64 {
        self.epoch.fetch_add(1, Ordering::SeqCst)
    }

    /// An operation ended (what it changed is not followed: kept listings are dropped).
    pub(in crate::fs) fn end(&self) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// The operation begun at `e0` created `name` (a folder when `is_dir`) in folder `dir`:
    /// a listing of `dir` kept from before it stays valid with the name added, provided no
    /// other operation began or ended in between.
    pub(in crate::fs) fn end_created(&self, e0: u64, dir: u64, name: &str, is_dir: bool) {
        let mut kept = lock(&self.kept);
        let alone = self
            .epoch
            .compare_exchange(e0 + 1, e0 + 2, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if !alone {
            self.epoch.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if let Some(k) = kept.get_mut(&dir).filter(|k| k.epoch == e0) {
            if k.names.len() < MAX_NAMES {
                if k.names.insert(name.to_owned(), is_dir) != Some(is_dir) {
                    k.subdirs = k.names.values().filter(|d| **d).count() as u32;
                }
                k.epoch = e0 + 2;
            }
        }
    }

    /// Number of children and of child folders of folder `dir` at version `gen`, from the
    /// kept listing when it is current, else from `list` (then kept).
    pub(in crate::fs) fn counts(
        &self,
        dir: u64,
        gen: u64,
        list: impl FnOnce() -> Vec<(String, bool)>,
    ) -> (u64, u32) {
        let e = self.epoch.load(Ordering::SeqCst);
        if let Some(k) = lock(&self.kept).get(&dir) {
            if k.epoch == e && k.gen == gen {
                return (k.names.len() as u64, k.subdirs);
            }
        }
        let kids = list();
        let subdirs = kids.iter().filter(|(_, d)| *d).count() as u32;
        let n = kids.len() as u64;
        if kids.len() <= MAX_NAMES {
            let mut kept = lock(&self.kept);
            if kept.len() >= MAX_DIRS && !kept.contains_key(&dir) {
                kept.clear();
            }
            let names = kids.into_iter().collect();
            kept.insert(
                dir,
                Kept {
                    epoch: e,
                    gen,
                    names,
                    subdirs,
                },
            );
        }
        (n, subdirs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kids(n: usize) -> Vec<(String, bool)> {
        (0..n).map(|i| (format!("f{i}"), i == 0)).collect()
    }

    #[test]
    fn a_kept_listing_is_used_until_an_operation_changes_anything() {
        let c = DirCounts::default();
        assert_eq!(c.counts(7, 1, || kids(3)), (3, 1));
        // kept: the listing is not asked for again
        assert_eq!(c.counts(7, 1, || panic!("listed again")), (3, 1));
        // another version of the asset lists again
        assert_eq!(c.counts(7, 2, || kids(5)), (5, 1));
        // an operation that is not a create drops it
        c.begin();
        c.end();
        assert_eq!(c.counts(7, 2, || kids(4)), (4, 1));
    }

    #[test]
    fn a_create_alone_adds_its_name_and_a_repeated_name_counts_once() {
        let c = DirCounts::default();
        assert_eq!(c.counts(7, 1, || kids(3)), (3, 1));
        let e0 = c.begin();
        c.end_created(e0, 7, "new", false);
        assert_eq!(c.counts(7, 1, || panic!("listed again")), (4, 1));
        let e0 = c.begin();
        c.end_created(e0, 7, "sub", true);
        assert_eq!(c.counts(7, 1, || panic!("listed again")), (5, 2));
        let e0 = c.begin();
        c.end_created(e0, 7, "new", false);
        assert_eq!(c.counts(7, 1, || panic!("listed again")), (5, 2));
    }

    #[test]
    fn a_create_overlapping_another_operation_drops_the_listing() {
        let c = DirCounts::default();
        assert_eq!(c.counts(7, 1, || kids(3)), (3, 1));
        let e0 = c.begin();
        let other = c.begin();
        c.end_created(e0, 7, "new", false);
        let _ = other;
        c.end();
        assert_eq!(c.counts(7, 1, || kids(9)), (9, 1));
        // a listing made while an operation was under way is dropped when it ends
        let e0 = c.begin();
        assert_eq!(c.counts(7, 1, || kids(2)), (2, 1));
        c.end_created(e0, 7, "x", false);
        assert_eq!(c.counts(7, 1, || kids(6)), (6, 1));
    }
}
