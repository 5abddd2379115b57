//! The children of asset folders, remembered between requests, so that a folder's attributes
//! (its `nlink` and size count its children) cost O(1) while the folder is being filled or
//! emptied, whatever number of entries it holds.
//!
//! Every create or unlink invalidates the parent's attributes in the kernel, which asks for
//! them again before the next operation: listing the folder for each of those requests makes
//! filling or emptying a folder of n files cost O(n²). Here a listing is kept per folder inode
//! and version with the *epoch* it was made at; every write-back operation advances the epoch
//! when it begins and when it ends (see [`Core::mutating`](super::Core)), so a kept listing is
//! used only while no operation has changed anything since it was made. A create, mkdir,
//! unlink or rmdir that was the only operation since adds or removes its name in the kept
//! listing instead of dropping it, so the next request does not list the folder again. Names
//! are a set, so a create that opened an existing file changes nothing.
//!
//! Memory is bounded by the names kept in all folders together ([`MAX_KEPT_NAMES`]), not per
//! folder: a folder of any size is kept while it fits, others are dropped to make room.

use crate::fs::shared::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Folders whose listings are kept at most; more drop them all (they are rebuilt on demand).
const MAX_DIRS: usize = 64;
/// Names kept in all folders together at most (about 60 bytes each, so about 64 MiB): a
/// listing that does not fit is dropped and the folder listed on each request.
pub(in crate::fs) const MAX_KEPT_NAMES: usize = 1 << 20;

/// A kept listing of one folder.
struct Kept {
    epoch: u64,
    gen: u64,
    /// Child names, and whether each is a folder.
    names: HashMap<String, bool>,
    subdirs: u32,
}

impl Kept {
    fn insert(&mut self, name: &str, is_dir: bool) {
        if self.names.insert(name.to_owned(), is_dir) == Some(true) {
            self.subdirs = self.subdirs.saturating_sub(1);
        }
        if is_dir {
            self.subdirs = self.subdirs.saturating_add(1);
        }
    }

    fn remove(&mut self, name: &str) {
        if self.names.remove(name) == Some(true) {
            self.subdirs = self.subdirs.saturating_sub(1);
        }
    }
}

/// What an operation did to one folder's children.
enum Change<'a> {
    Created(&'a str, bool),
    Removed(&'a str),
}

/// Kept listings of asset folders, by folder inode.
#[derive(Default)]
pub(in crate::fs) struct DirCounts {
    epoch: AtomicU64,
    kept: Mutex<KeptDirs>,
}

#[derive(Default)]
struct KeptDirs {
    dirs: HashMap<u64, Kept>,
    /// Names in all of `dirs`.
    names: usize,
}

impl KeptDirs {
    fn drop_dir(&mut self, dir: u64) {
        if let Some(k) = self.dirs.remove(&dir) {
            self.names -= k.names.len();
        }
    }

    /// Room for `n` more names in a listing of `dir` (others dropped when needed): false when
    /// it cannot fit at all.
    fn make_room(&mut self, dir: u64, n: usize) -> bool {
        if n > MAX_KEPT_NAMES {
            return false;
        }
        if (self.dirs.len() >= MAX_DIRS && !self.dirs.contains_key(&dir))
            || self.names + n > MAX_KEPT_NAMES
        {
            // (every other listing: a folder this big is the one being worked on)
            let keep = self.dirs.remove(&dir);
            self.dirs.clear();
            self.names = 0;
            if let Some(k) = keep {
                self.names = k.names.len();
                self.dirs.insert(dir, k);
            }
        }
        self.names + n <= MAX_KEPT_NAMES
    }
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
        self.end_with(e0, dir, Change::Created(name, is_dir));
    }

    /// The operation begun at `e0` removed `name` (file or folder) from folder `dir`: as
    /// [`Self::end_created`], with the name taken out.
    pub(in crate::fs) fn end_removed(&self, e0: u64, dir: u64, name: &str) {
        self.end_with(e0, dir, Change::Removed(name));
    }

    fn end_with(&self, e0: u64, dir: u64, change: Change<'_>) {
        let mut kept = lock(&self.kept);
        let alone = self
            .epoch
            .compare_exchange(e0 + 1, e0 + 2, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok();
        if !alone {
            self.epoch.fetch_add(1, Ordering::SeqCst);
            return;
        }
        let Some(k) = kept.dirs.get_mut(&dir).filter(|k| k.epoch == e0) else {
            return;
        };
        let before = k.names.len();
        match change {
            Change::Created(name, is_dir) => k.insert(name, is_dir),
            Change::Removed(name) => k.remove(name),
        }
        k.epoch = e0 + 2;
        let after = k.names.len();
        kept.names = kept.names + after - before;
        if kept.names > MAX_KEPT_NAMES && !kept.make_room(dir, 0) {
            kept.drop_dir(dir);
        }
    }

    /// Number of children and of child folders of folder `dir` at version `gen`, from the
    /// kept listing when it is current, else from `list` (then kept when it fits).
    pub(in crate::fs) fn counts(
        &self,
        dir: u64,
        gen: u64,
        list: impl FnOnce() -> Vec<(String, bool)>,
    ) -> (u64, u32) {
        let e = self.epoch.load(Ordering::SeqCst);
        if let Some(k) = lock(&self.kept).dirs.get(&dir) {
            if k.epoch == e && k.gen == gen {
                return (k.names.len() as u64, k.subdirs);
            }
        }
        let kids = list();
        let mut k = Kept {
            epoch: e,
            gen,
            names: HashMap::with_capacity(kids.len()),
            subdirs: 0,
        };
        for (name, is_dir) in kids {
            let new = k.names.insert(name, is_dir).is_none();
            k.subdirs += u32::from(new && is_dir);
        }
        let counts = (k.names.len() as u64, k.subdirs);
        let mut kept = lock(&self.kept);
        kept.drop_dir(dir);
        if kept.make_room(dir, k.names.len()) {
            kept.names += k.names.len();
            kept.dirs.insert(dir, k);
        }
        counts
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

    /// Past 65,536 names the listing used to be dropped, and the folder listed again on
    /// every request: filling a big folder cost O(n²).
    #[test]
    fn a_folder_past_65536_names_is_kept_through_creates_and_unlinks() {
        let c = DirCounts::default();
        let n = 70_000;
        assert_eq!(c.counts(7, 1, || kids(3)), (3, 1));
        for i in 0..n {
            let e0 = c.begin();
            c.end_created(e0, 7, &format!("n{i}"), false);
            assert_eq!(
                c.counts(7, 1, || panic!("listed again at {i}")).0,
                4 + i as u64
            );
        }
        let e0 = c.begin();
        c.end_created(e0, 7, "d", true);
        assert_eq!(c.counts(7, 1, || panic!("listed again")), (n as u64 + 4, 2));
        let e0 = c.begin();
        c.end_removed(e0, 7, "d");
        assert_eq!(c.counts(7, 1, || panic!("listed again")), (n as u64 + 3, 1));
        for i in 0..n {
            let e0 = c.begin();
            c.end_removed(e0, 7, &format!("n{i}"));
            assert_eq!(
                c.counts(7, 1, || panic!("listed again at {i}")).0,
                (n - i + 2) as u64
            );
        }
        // a name that is not there changes nothing
        let e0 = c.begin();
        c.end_removed(e0, 7, "absent");
        assert_eq!(c.counts(7, 1, || panic!("listed again")), (3, 1));
    }

    #[test]
    fn kept_names_stay_within_the_budget() {
        let c = DirCounts::default();
        let big = MAX_KEPT_NAMES / 2 + 1;
        assert_eq!(c.counts(1, 1, || kids(big)).0, big as u64);
        assert_eq!(c.counts(1, 1, || panic!("kept")).0, big as u64);
        // a second folder that does not fit beside it drops the first
        assert_eq!(c.counts(2, 1, || kids(big)).0, big as u64);
        assert_eq!(c.counts(2, 1, || panic!("kept")).0, big as u64);
        assert_eq!(c.counts(1, 1, || kids(5)).0, 5);
        assert!(lock(&c.kept).names <= MAX_KEPT_NAMES);
        // a folder bigger than the budget is listed on every request
        let huge = MAX_KEPT_NAMES + 1;
        assert_eq!(c.counts(3, 1, || kids(huge)).0, huge as u64);
        assert_eq!(c.counts(3, 1, || kids(4)).0, 4);
        assert!(lock(&c.kept).names <= MAX_KEPT_NAMES);
    }
}
