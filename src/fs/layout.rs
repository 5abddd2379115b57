//! The shape of an exploded view, shared by the mount's core and the merged game view:
//! which paths are folders, each folder's children in view order, file sizes once known,
//! and (for archives) the GAF/TNT members not expanded yet.
//!
//! A real install shows about 94,000 generated files, every one with an entry here for as
//! long as the mount lasts, so an entry is small: its name is kept once, in one string per
//! layout, with its parent's number, its size and a few flags; a folder's children are the
//! numbers of their entries; one hash table of entry numbers finds a name in a folder.

use crate::fs::shared::join;
use crate::view::{self, EntryKind, View};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::RwLock;

/// The shape of one view: which paths are folders, the children of each folder in view
/// order, and the sizes of files once rendered. The parts of a view that decodes parts on
/// demand (an archive's GAF/TNT members, [`View::shallow`]) are folders without children
/// until expanded ([`Core::expand`]); an expanded part that does not decode becomes a file.
pub(super) struct Layout {
    tree: RwLock<Tree>,
}

/// Bytes an entry takes on average with its share of the names, the children's lists and
/// the table (measured on a real install: 7.8 MiB for 123,232 entries), counted as held
/// outside the budgets ([`crate::fs::shared::metadata_add`]).
const ENTRY_BYTES: u64 = 66;

/// No size known (a folder, or a file not rendered yet).
const NO_SIZE: u64 = u64::MAX;
/// No children list (a file).
const NO_KIDS: u32 = u32::MAX;

/// Flags of an entry.
const DIR: u8 = 1;
/// A part not expanded yet.
const PENDING: u8 = 2;
/// A size from the persisted index, not rendered yet.
const UNVERIFIED: u8 = 4;
/// Listed by the view (an entry made only as the parent of listed ones is not, and is
/// neither found by [`Layout::is_dir`] nor among its parent's children).
const LISTED: u8 = 8;

/// One path of the view.
struct Node {
    /// Where its name starts in [`Tree::names`], and its length.
    name: (u32, u32),
    /// The entry of the folder holding it (the root is its own parent).
    parent: u32,
    /// Its children's list in [`Tree::kids`] ([`NO_KIDS`] for a file).
    kids: u32,
    /// [`DIR`], [`PENDING`], [`UNVERIFIED`], [`LISTED`].
    flags: AtomicU8,
    /// Bytes of a file once known ([`NO_SIZE`] until then).
    size: AtomicU64,
}

/// The entries of a layout; entry 0 is the root (`""`).
struct Tree {
    names: String,
    nodes: Vec<Node>,
    kids: Vec<Vec<u32>>,
    /// Entry numbers, found by (parent, name).
    by_name: hashbrown::HashTable<u32>,
    hasher: RandomState,
    /// Entries flagged [`PENDING`].
    pending: usize,
}

/// The hash of entry `j` (its parent and name) when the table grows.
fn rehash(hasher: &RandomState, nodes: &[Node], names: &str, j: u32) -> u64 {
    let Some(n) = nodes.get(j as usize) else {
        return 0;
    };
    let (a, l) = (n.name.0 as usize, n.name.1 as usize);
    hasher.hash_one((n.parent, names.get(a..a + l).unwrap_or("")))
}

impl Drop for Tree {
    fn drop(&mut self) {
        crate::fs::shared::metadata_sub(ENTRY_BYTES * self.nodes.len().saturating_sub(1) as u64);
    }
}

impl Tree {
    fn new() -> Tree {
        let mut t = Tree {
            names: String::new(),
            nodes: Vec::new(),
            kids: vec![Vec::new()],
            by_name: hashbrown::HashTable::new(),
            hasher: RandomState::new(),
            pending: 0,
        };
        t.nodes.push(Node {
            name: (0, 0),
            parent: 0,
            kids: 0,
            flags: AtomicU8::new(DIR),
            size: AtomicU64::new(NO_SIZE),
        });
        t
    }

    fn name(&self, i: u32) -> &str {
        let Some(n) = self.nodes.get(i as usize) else {
            return "";
        };
        let (at, len) = (n.name.0 as usize, n.name.1 as usize);
        self.names.get(at..at + len).unwrap_or("")
    }

    fn flags(&self, i: u32) -> u8 {
        self.nodes
            .get(i as usize)
            .map_or(0, |n| n.flags.load(Ordering::Relaxed))
    }

    fn hash(&self, parent: u32, name: &str) -> u64 {
        self.hasher.hash_one((parent, name))
    }

    /// The entry `name` in folder entry `parent`.
    fn child(&self, parent: u32, name: &str) -> Option<u32> {
        let h = self.hash(parent, name);
        self.by_name
            .find(h, |&i| {
                self.nodes
                    .get(i as usize)
                    .is_some_and(|n| n.parent == parent)
                    && self.name(i) == name
            })
            .copied()
    }

    /// The entry at `path` (`""`: the root), listed or not.
    fn find(&self, path: &str) -> Option<u32> {
        if path.is_empty() {
            return Some(0);
        }
        path.split('/').try_fold(0, |at, name| self.child(at, name))
    }

    /// The entry at `path` if the view listed it.
    fn listed(&self, path: &str) -> Option<u32> {
        self.find(path).filter(|&i| self.flags(i) & LISTED != 0)
    }

    fn kids_of(&self, i: u32) -> Option<&Vec<u32>> {
        let n = self.nodes.get(i as usize)?;
        self.kids.get(n.kids as usize)
    }

    /// A new entry `name` in `parent`, unlisted; `None` past `u32` entries or name bytes.
    fn make(&mut self, parent: u32, name: &str) -> Option<u32> {
        let i = u32::try_from(self.nodes.len())
            .ok()
            .filter(|&i| i < NO_KIDS)?;
        let at = u32::try_from(self.names.len()).ok()?;
        let len = u32::try_from(name.len()).ok()?;
        at.checked_add(len)?;
        self.names.push_str(name);
        crate::fs::shared::metadata_add(ENTRY_BYTES);
        self.nodes.push(Node {
            name: (at, len),
            parent,
            kids: NO_KIDS,
            flags: AtomicU8::new(0),
            size: AtomicU64::new(NO_SIZE),
        });
        let h = self.hash(parent, name);
        let Tree {
            by_name,
            hasher,
            nodes,
            names,
            ..
        } = self;
        by_name.insert_unique(h, i, |&j| rehash(hasher, nodes, names, j));
        Some(i)
    }

    /// Gives entry `i` a children's list (it becomes able to hold entries).
    fn open_folder(&mut self, i: u32) {
        let Some(n) = self.nodes.get_mut(i as usize) else {
            return;
        };
        if n.kids == NO_KIDS {
            if let Ok(k) = u32::try_from(self.kids.len()) {
                n.kids = k;
                self.kids.push(Vec::new());
            }
        }
    }

    /// The entry at `path` (relative to entry `base`), made unlisted where missing.
    fn reach(&mut self, base: u32, path: &str) -> Option<u32> {
        if path.is_empty() {
            return Some(base);
        }
        path.split('/')
            .try_fold(base, |at, name| match self.child(at, name) {
                Some(i) => Some(i),
                None => self.make(at, name),
            })
    }

    /// [`Tree::reach`], the entry given a children's list.
    fn folder(&mut self, base: u32, path: &str) -> Option<u32> {
        let at = self.reach(base, path)?;
        self.open_folder(at);
        Some(at)
    }

    /// Adds the entries of a view under folder `prefix` (`""` = the root); sizes known
    /// without rendering come from `size_hint`. An entry already listed is skipped.
    fn add(
        &mut self,
        prefix: &str,
        entries: &[view::Entry],
        size_hint: impl Fn(&str) -> Option<u64>,
    ) {
        let Some(base) = self.folder(0, prefix) else {
            return;
        };
        self.nodes.reserve(entries.len());
        let Tree {
            by_name,
            hasher,
            nodes,
            names,
            ..
        } = self;
        by_name.reserve(entries.len(), |&j| rehash(hasher, nodes, names, j));
        for e in entries {
            let (parent_path, name) = e.path.rsplit_once('/').unwrap_or(("", &e.path));
            let Some(parent) = self.folder(base, parent_path) else {
                continue;
            };
            let i = match self.child(parent, name) {
                Some(i) if self.flags(i) & LISTED != 0 => continue,
                Some(i) => i,
                None => match self.make(parent, name) {
                    Some(i) => i,
                    None => continue,
                },
            };
            let dir = e.kind == EntryKind::Dir;
            if let Some(n) = self.nodes.get(i as usize) {
                n.flags
                    .fetch_or(LISTED | if dir { DIR } else { 0 }, Ordering::Relaxed);
            }
            if dir {
                self.open_folder(i);
            } else {
                let full = join(prefix, &e.path);
                if let (Some(s), Some(n)) = (size_hint(&full), self.nodes.get(i as usize)) {
                    n.size.store(s, Ordering::Relaxed);
                }
            }
            let slot = self.nodes.get(parent as usize).map(|n| n.kids as usize);
            if let Some(kids) = slot.and_then(|k| self.kids.get_mut(k)) {
                kids.push(i);
            }
        }
    }

    /// Flags entry `i` as a part not expanded yet.
    fn mark_pending(&mut self, i: u32) {
        let Some(n) = self.nodes.get(i as usize) else {
            return;
        };
        if n.flags.fetch_or(PENDING, Ordering::Relaxed) & PENDING == 0 {
            self.pending += 1;
        }
    }
}

impl Layout {
    pub(super) fn new(view: &dyn View) -> Layout {
        let mut tree = Tree::new();
        let hint = |p: &str| view.size_hint(p);
        match view.shallow() {
            Some((entries, parts)) => {
                // plain members: sizes from the archive's directory (parts are folders)
                tree.add("", entries, hint);
                for p in parts {
                    if let Some(i) = tree.reach(0, p) {
                        tree.mark_pending(i);
                    }
                }
            }
            None => tree.add("", view.entries(), hint),
        }
        Layout {
            tree: RwLock::new(tree),
        }
    }

    fn tree(&self) -> std::sync::RwLockReadGuard<'_, Tree> {
        self.tree.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `path` is a folder (`Some(true)`), a file, or not in the view.
    pub(super) fn is_dir(&self, path: &str) -> Option<bool> {
        let t = self.tree();
        t.listed(path).map(|i| t.flags(i) & DIR != 0)
    }

    /// The children of folder `dir` in view order.
    pub(super) fn children(&self, dir: &str) -> Option<Vec<(String, bool)>> {
        let t = self.tree();
        let kids = t.kids_of(t.find(dir)?)?;
        Some(
            kids.iter()
                .map(|&k| (t.name(k).to_string(), t.flags(k) & DIR != 0))
                .collect(),
        )
    }

    /// The parts to expand before `vpath` can be located: `vpath` itself and the folders
    /// holding it, and with `list` the parts directly in folder `vpath`.
    pub(super) fn pending_for(&self, vpath: &str, list: bool) -> Vec<String> {
        let t = self.tree();
        if t.pending == 0 {
            return Vec::new();
        }
        let pending = |p: &str| t.find(p).is_some_and(|i| t.flags(i) & PENDING != 0);
        let mut out: Vec<String> = vpath
            .match_indices('/')
            .map(|(i, _)| &vpath[..i])
            .chain(std::iter::once(vpath))
            .filter(|p| pending(p))
            .map(str::to_string)
            .collect();
        if list {
            if let Some(kids) = t.find(vpath).and_then(|i| t.kids_of(i)) {
                for &k in kids {
                    if t.flags(k) & PENDING != 0 {
                        let p = join(vpath, t.name(k));
                        if !out.contains(&p) {
                            out.push(p);
                        }
                    }
                }
            }
        }
        out
    }

    /// Records part `path` as expanded with `entries` (or as a plain file when `None`).
    pub(super) fn expand_part(&self, view: &dyn View, path: &str, entries: Option<&[view::Entry]>) {
        let mut t = self.tree.write().unwrap_or_else(|p| p.into_inner());
        let Some(i) = t.find(path) else {
            return;
        };
        let was = t
            .nodes
            .get(i as usize)
            .map_or(0, |n| n.flags.fetch_and(!PENDING, Ordering::Relaxed));
        if was & PENDING == 0 {
            return;
        }
        t.pending = t.pending.saturating_sub(1);
        match entries {
            Some(es) => t.add(path, es, |p| view.size_hint(p)),
            None => {
                let Some(n) = t.nodes.get_mut(i as usize) else {
                    return;
                };
                n.flags.fetch_and(!DIR, Ordering::Relaxed);
                if let Some(s) = view.size_hint(path) {
                    n.size.store(s, Ordering::Relaxed);
                }
                let k = std::mem::replace(&mut n.kids, NO_KIDS);
                if let Some(kids) = t.kids.get_mut(k as usize) {
                    *kids = Vec::new();
                }
            }
        }
    }

    /// How many folders folder `dir` holds.
    pub(super) fn subdirs(&self, dir: &str) -> u32 {
        let t = self.tree();
        t.find(dir).and_then(|i| t.kids_of(i)).map_or(0, |kids| {
            kids.iter().filter(|&&k| t.flags(k) & DIR != 0).count() as u32
        })
    }

    /// The size of file `path` if known (from the view, or rendered once).
    pub(super) fn size(&self, path: &str) -> Option<u64> {
        let t = self.tree();
        let i = t.find(path)?;
        let s = t.nodes.get(i as usize)?.size.load(Ordering::Relaxed);
        (s != NO_SIZE).then_some(s)
    }

    /// Records the size of file `path` once rendered.
    pub(super) fn set_size(&self, path: &str, size: u64) {
        let t = self.tree();
        if let Some(n) = t.find(path).and_then(|i| t.nodes.get(i as usize)) {
            n.size.store(size, Ordering::Relaxed);
            n.flags.fetch_and(!UNVERIFIED, Ordering::Relaxed);
        }
    }

    /// The size of file `path` if known from rendering it (not only from the index).
    pub(super) fn verified_size(&self, path: &str) -> Option<u64> {
        let t = self.tree();
        let n = t.nodes.get(t.find(path)? as usize)?;
        let s = n.size.load(Ordering::Relaxed);
        (s != NO_SIZE && n.flags.load(Ordering::Relaxed) & UNVERIFIED == 0).then_some(s)
    }

    /// The layout a persisted index recorded (`items` in view order), its sizes to be
    /// checked when rendered ([`Layout::verified_size`]).
    pub(super) fn from_index(items: &[crate::fs::index::Item]) -> Layout {
        let entries: Vec<view::Entry> = items
            .iter()
            .map(|i| {
                if i.dir {
                    view::Entry::dir(i.path.as_str())
                } else {
                    view::Entry::file(i.path.as_str())
                }
            })
            .collect();
        let mut tree = Tree::new();
        tree.add("", &entries, |_| None);
        drop(entries);
        for i in items {
            if let (false, Some(s)) = (i.dir, i.size) {
                if let Some(at) = tree.find(&i.path) {
                    if let Some(n) = tree.nodes.get(at as usize) {
                        n.size.store(s, Ordering::Relaxed);
                        n.flags.fetch_or(UNVERIFIED, Ordering::Relaxed);
                    }
                }
            }
        }
        Layout {
            tree: RwLock::new(tree),
        }
    }

    /// What a persisted index keeps of this layout: every path in view order with the
    /// sizes known; `None` while parts are not expanded (an archive's).
    pub(super) fn to_index(&self) -> Option<Vec<crate::fs::index::Item>> {
        let t = self.tree();
        if t.pending != 0 {
            return None;
        }
        let mut out = Vec::new();
        let mut stack = vec![(0u32, String::new())];
        while let Some((at, dir)) = stack.pop() {
            let kids = t.kids_of(at)?;
            let mut sub = Vec::new();
            for &k in kids {
                let is_dir = t.flags(k) & DIR != 0;
                let path = join(&dir, t.name(k));
                let size = t
                    .nodes
                    .get(k as usize)
                    .map_or(NO_SIZE, |n| n.size.load(Ordering::Relaxed));
                out.push(crate::fs::index::Item {
                    size: (!is_dir && size != NO_SIZE).then_some(size),
                    dir: is_dir,
                    path: path.clone(),
                });
                if is_dir {
                    sub.push((k, path));
                }
            }
            // folders in view order
            stack.extend(sub.into_iter().rev());
        }
        Some(out)
    }

    /// A view with nothing in it (a new asset before its first commit).
    pub(super) fn empty() -> Layout {
        Layout {
            tree: RwLock::new(Tree::new()),
        }
    }

    /// Heap bytes this layout holds (estimated), and its entries.
    #[cfg(feature = "heap-stats")]
    pub(super) fn heap_bytes(&self) -> (usize, usize) {
        use crate::fs::shared::chunk;
        let t = self.tree();
        let mut b = chunk(t.names.capacity())
            + chunk(t.nodes.capacity() * std::mem::size_of::<Node>())
            + chunk(t.kids.capacity() * 24)
            + t.kids
                .iter()
                .map(|k| chunk(k.capacity() * 4))
                .sum::<usize>();
        b += crate::fs::shared::table_bytes(t.by_name.capacity(), 4);
        (b, t.nodes.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::ViewError;

    /// A view of these entries.
    struct V(Vec<crate::view::Entry>);
    impl View for V {
        fn entries(&self) -> &[crate::view::Entry] {
            &self.0
        }
        fn render(&self, _: &str, _: &mut dyn std::io::Write) -> Result<(), ViewError> {
            Ok(())
        }
    }

    #[test]
    fn layout_lists_children_in_view_order() {
        use crate::view::Entry;
        let v = V(vec![
            Entry::file("metadata.json"),
            Entry::dir("b"),
            Entry::file("b/2.png"),
            Entry::file("b/1.png"),
            Entry::dir("a"),
            Entry::dir("a/x"),
        ]);
        let l = Layout::new(&v);
        let kids = l.children("").unwrap();
        let names: Vec<&str> = kids.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["metadata.json", "b", "a"]);
        let kids = l.children("b").unwrap();
        let names: Vec<&str> = kids.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["2.png", "1.png"]);
        assert_eq!(l.subdirs(""), 2);
        assert_eq!(l.subdirs("a"), 1);
        assert_eq!(l.subdirs("a/x"), 0);
        assert_eq!(l.is_dir("b/1.png"), Some(false));
    }

    #[test]
    fn a_layout_read_back_from_the_index_lists_alike_and_checks_its_sizes() {
        use crate::view::Entry;
        struct V(Vec<Entry>);
        impl View for V {
            fn entries(&self) -> &[Entry] {
                &self.0
            }
            fn render(&self, _: &str, _: &mut dyn std::io::Write) -> Result<(), ViewError> {
                Ok(())
            }
        }
        let v = V(vec![
            Entry::file("z.json"),
            Entry::dir("b"),
            Entry::file("b/2.png"),
            Entry::dir("b/c"),
            Entry::file("b/c/x.csv"),
            Entry::file("b/1.png"),
            Entry::dir("a"),
        ]);
        let l = Layout::new(&v);
        l.set_size("b/2.png", 20);
        l.set_size("z.json", 7);
        let items = l.to_index().unwrap();
        let back = Layout::from_index(&items);
        for dir in ["", "a", "b", "b/c"] {
            assert_eq!(back.children(dir), l.children(dir), "{dir}");
            assert_eq!(back.subdirs(dir), l.subdirs(dir), "{dir}");
        }
        assert_eq!(back.to_index().unwrap(), items);
        // sizes shown, not verified until rendered
        assert_eq!(back.size("b/2.png"), Some(20));
        assert_eq!(back.verified_size("b/2.png"), None);
        assert_eq!(back.size("b/1.png"), None);
        back.set_size("b/2.png", 21);
        assert_eq!(back.verified_size("b/2.png"), Some(21));
        assert_eq!(l.verified_size("z.json"), Some(7));
    }

    /// A view of `entries`, its parts `parts` not expanded, with sizes from `hints`.
    struct Parts(Vec<crate::view::Entry>, Vec<String>, Vec<(String, u64)>);
    impl View for Parts {
        fn entries(&self) -> &[crate::view::Entry] {
            &self.0
        }
        fn shallow(&self) -> Option<(&[crate::view::Entry], Vec<&str>)> {
            (!self.1.is_empty()).then(|| (&self.0[..], self.1.iter().map(String::as_str).collect()))
        }
        fn size_hint(&self, path: &str) -> Option<u64> {
            self.2.iter().find(|(p, _)| p == path).map(|(_, s)| *s)
        }
        fn render(&self, _: &str, _: &mut dyn std::io::Write) -> Result<(), ViewError> {
            Ok(())
        }
    }

    #[test]
    fn parts_expand_into_folders_or_become_files() {
        use crate::view::Entry;
        let v = Parts(
            vec![
                Entry::file("a.txt"),
                Entry::dir("units"),
                Entry::dir("units/arm.gaf"),
                Entry::dir("maps.tnt"),
                Entry::file("units/b.txt"),
            ],
            vec!["units/arm.gaf".into(), "maps.tnt".into()],
            vec![
                ("a.txt".into(), 3),
                ("maps.tnt".into(), 99),
                ("units/arm.gaf/x/1.png".into(), 7),
            ],
        );
        let l = Layout::new(&v);
        assert_eq!(l.size("a.txt"), Some(3));
        assert_eq!(
            l.pending_for("units/arm.gaf/x/1.png", false),
            ["units/arm.gaf"]
        );
        assert_eq!(l.pending_for("", true), ["maps.tnt"]);
        assert_eq!(l.pending_for("units", true), ["units/arm.gaf"]);
        assert_eq!(l.to_index(), None, "parts pending");
        let inner = [
            Entry::dir("x"),
            Entry::file("x/1.png"),
            Entry::file("x/2.png"),
        ];
        l.expand_part(&v, "units/arm.gaf", Some(&inner));
        l.expand_part(&v, "units/arm.gaf", Some(&inner[..1]));
        assert_eq!(l.is_dir("units/arm.gaf/x/2.png"), Some(false));
        assert_eq!(l.size("units/arm.gaf/x/1.png"), Some(7));
        assert_eq!(l.children("units/arm.gaf/x").unwrap().len(), 2);
        assert_eq!(l.subdirs("units"), 1);
        l.expand_part(&v, "maps.tnt", None);
        assert_eq!(l.is_dir("maps.tnt"), Some(false));
        assert_eq!(l.size("maps.tnt"), Some(99));
        assert_eq!(l.children("maps.tnt"), None);
        assert_eq!(l.subdirs(""), 1);
        assert!(l.pending_for("units/arm.gaf", true).is_empty());
        let names: Vec<String> = l.to_index().unwrap().into_iter().map(|i| i.path).collect();
        assert_eq!(
            names,
            [
                "a.txt",
                "units",
                "maps.tnt",
                "units/arm.gaf",
                "units/b.txt",
                "units/arm.gaf/x",
                "units/arm.gaf/x/1.png",
                "units/arm.gaf/x/2.png"
            ]
        );
    }

    proptest::proptest! {
        /// Whatever the entries (repeated, a file before its folder, a file holding
        /// entries), the layout answers as a plain reading of the entries does: the first
        /// entry of a path decides what it is, and a folder's children are the first
        /// entries directly under it, in order.
        #[test]
        fn a_layout_answers_as_the_entries_read_plainly(
            raw in proptest::collection::vec((0u8..3, 0u8..3, 0u8..3, 1usize..4, proptest::bool::ANY), 0..40)
        ) {
            use crate::view::Entry;
            let names = ["a", "b", "c.png"];
            let entries: Vec<Entry> = raw
                .iter()
                .map(|&(x, y, z, depth, dir)| {
                    let p = [x, y, z][..depth].iter().map(|&i| names[i as usize]).collect::<Vec<_>>().join("/");
                    if dir { Entry::dir(p.as_str()) } else { Entry::file(p.as_str()) }
                })
                .collect();
            let l = Layout::new(&V(entries.clone()));
            let mut first: Vec<(&str, bool)> = Vec::new();
            for e in &entries {
                if !first.iter().any(|(p, _)| *p == e.path) {
                    first.push((&e.path, e.kind == EntryKind::Dir));
                }
            }
            let parent = |p: &str| p.rsplit_once('/').map_or("", |(d, _)| d).to_string();
            let mut paths: Vec<String> = vec![String::new()];
            for (p, _) in &first {
                let mut q = p.to_string();
                loop {
                    if !paths.contains(&q) {
                        paths.push(q.clone());
                    }
                    if q.is_empty() { break; }
                    q = parent(&q);
                }
            }
            for p in &paths {
                let want_dir = first.iter().find(|(q, _)| q == p).map(|(_, d)| *d);
                proptest::prop_assert_eq!(l.is_dir(p), want_dir, "is_dir {}", p);
                let kids: Vec<(String, bool)> = first
                    .iter()
                    .filter(|(q, _)| !q.is_empty() && parent(q) == *p)
                    .map(|(q, d)| (q.rsplit('/').next().unwrap_or(q).to_string(), *d))
                    .collect();
                let holds = p.is_empty() || want_dir == Some(true) || !kids.is_empty();
                let want = holds.then_some(kids);
                proptest::prop_assert_eq!(l.children(p), want.clone(), "children {}", p);
                let dirs = want.map_or(0, |k| k.iter().filter(|(_, d)| *d).count() as u32);
                proptest::prop_assert_eq!(l.subdirs(p), dirs);
            }
        }
    }
}
