//! The shape of an exploded view, shared by the mount's core and the merged game view:
//! which paths are folders, each folder's children in view order, file sizes once known,
//! and (for archives) the GAF/TNT members not expanded yet.

use crate::fs::shared::{join, lock};
use crate::view::{self, EntryKind, View};
use std::collections::HashMap;
use std::sync::{Mutex, RwLock};

/// The shape of one view: which paths are folders, the children of each folder in view
/// order, and the sizes of files once rendered. The parts of a view that decodes parts on
/// demand (an archive's GAF/TNT members, [`View::shallow`]) are folders without children
/// until expanded ([`Core::expand`]); an expanded part that does not decode becomes a file.
pub(super) struct Layout {
    tree: RwLock<Tree>,
    sizes: Mutex<HashMap<String, u64>>,
    /// Parts not expanded yet.
    pending: Mutex<std::collections::HashSet<String>>,
    /// Files whose size came from the persisted index and is not rendered yet.
    unverified: Mutex<std::collections::HashSet<String>>,
}

#[derive(Default)]
struct Tree {
    is_dir: HashMap<String, bool>,
    children: HashMap<String, Vec<(String, bool)>>,
}

impl Tree {
    /// Adds the entries of a view under `prefix` (`""` = the root); sizes known without
    /// rendering go to `sizes`.
    fn add(
        &mut self,
        prefix: &str,
        entries: &[view::Entry],
        size_hint: impl Fn(&str) -> Option<u64>,
        sizes: &mut HashMap<String, u64>,
    ) {
        self.children.entry(prefix.to_string()).or_default();
        self.is_dir.reserve(entries.len());
        for e in entries {
            let path = if prefix.is_empty() {
                e.path.clone()
            } else {
                format!("{prefix}/{}", e.path)
            };
            let dir = e.kind == EntryKind::Dir;
            if self.is_dir.insert(path.clone(), dir).is_some() {
                continue;
            }
            if dir {
                self.children.entry(path.clone()).or_default();
            } else if let Some(size) = size_hint(&path) {
                sizes.insert(path.clone(), size);
            }
            let (parent, name) = path.rsplit_once('/').unwrap_or(("", &path));
            // (the parent's key is made only the first time)
            let kid = (name.to_string(), dir);
            match self.children.get_mut(parent) {
                Some(kids) => kids.push(kid),
                None => {
                    self.children.insert(parent.to_string(), vec![kid]);
                }
            }
        }
    }
}

impl Layout {
    pub(super) fn new(view: &dyn View) -> Layout {
        let mut tree = Tree::default();
        let mut sizes = HashMap::new();
        let hint = |p: &str| view.size_hint(p);
        let pending = match view.shallow() {
            Some((entries, parts)) => {
                sizes.reserve(entries.len());
                tree.add("", entries, |_| None, &mut sizes);
                // plain members: sizes from the archive's directory
                for e in entries {
                    if e.kind == EntryKind::File {
                        if let Some(s) = hint(&e.path) {
                            sizes.insert(e.path.clone(), s);
                        }
                    }
                }
                parts.into_iter().map(str::to_string).collect()
            }
            None => {
                tree.add("", view.entries(), hint, &mut sizes);
                Default::default()
            }
        };
        Layout {
            tree: RwLock::new(tree),
            sizes: Mutex::new(sizes),
            pending: Mutex::new(pending),
            unverified: Mutex::default(),
        }
    }

    fn tree(&self) -> std::sync::RwLockReadGuard<'_, Tree> {
        self.tree.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `path` is a folder (`Some(true)`), a file, or not in the view.
    pub(super) fn is_dir(&self, path: &str) -> Option<bool> {
        self.tree().is_dir.get(path).copied()
    }

    /// The children of folder `dir` in view order.
    pub(super) fn children(&self, dir: &str) -> Option<Vec<(String, bool)>> {
        self.tree().children.get(dir).cloned()
    }

    /// The parts to expand before `vpath` can be located: `vpath` itself and the folders
    /// holding it, and with `list` the parts directly in folder `vpath`.
    pub(super) fn pending_for(&self, vpath: &str, list: bool) -> Vec<String> {
        let pending = lock(&self.pending);
        if pending.is_empty() {
            return Vec::new();
        }
        let mut out: Vec<String> = vpath
            .match_indices('/')
            .map(|(i, _)| &vpath[..i])
            .chain(std::iter::once(vpath))
            .filter(|p| pending.contains(*p))
            .map(str::to_string)
            .collect();
        if list {
            if let Some(kids) = self.tree().children.get(vpath) {
                for (n, _) in kids {
                    let p = if vpath.is_empty() {
                        n.clone()
                    } else {
                        format!("{vpath}/{n}")
                    };
                    if pending.contains(&p) && !out.contains(&p) {
                        out.push(p);
                    }
                }
            }
        }
        out
    }

    /// Records part `path` as expanded with `entries` (or as a plain file when `None`).
    pub(super) fn expand_part(&self, view: &dyn View, path: &str, entries: Option<&[view::Entry]>) {
        if !lock(&self.pending).remove(path) {
            return;
        }
        let mut tree = self.tree.write().unwrap_or_else(|p| p.into_inner());
        let mut sizes = lock(&self.sizes);
        match entries {
            Some(es) => tree.add(path, es, |p| view.size_hint(p), &mut sizes),
            None => {
                tree.is_dir.insert(path.to_string(), false);
                tree.children.remove(path);
                let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
                if let Some(kids) = tree.children.get_mut(parent) {
                    for k in kids.iter_mut().filter(|k| k.0 == name) {
                        k.1 = false;
                    }
                }
                if let Some(s) = view.size_hint(path) {
                    sizes.insert(path.to_string(), s);
                }
            }
        }
    }

    /// How many folders folder `dir` holds.
    pub(super) fn subdirs(&self, dir: &str) -> u32 {
        self.tree()
            .children
            .get(dir)
            .map_or(0, |c| c.iter().filter(|(_, d)| *d).count() as u32)
    }

    /// The size of file `path` if known (from the view, or rendered once).
    pub(super) fn size(&self, path: &str) -> Option<u64> {
        lock(&self.sizes).get(path).copied()
    }

    /// Records the size of file `path` once rendered.
    pub(super) fn set_size(&self, path: &str, size: u64) {
        lock(&self.sizes).insert(path.to_string(), size);
        let mut u = lock(&self.unverified);
        if !u.is_empty() {
            u.remove(path);
        }
    }

    /// The size of file `path` if known from rendering it (not only from the index).
    pub(super) fn verified_size(&self, path: &str) -> Option<u64> {
        let u = lock(&self.unverified);
        if !u.is_empty() && u.contains(path) {
            return None;
        }
        drop(u);
        self.size(path)
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
        let mut sizes = HashMap::new();
        let mut tree = Tree::default();
        tree.add("", &entries, |_| None, &mut sizes);
        let mut unverified = std::collections::HashSet::new();
        for i in items {
            if let (false, Some(s)) = (i.dir, i.size) {
                sizes.insert(i.path.clone(), s);
                unverified.insert(i.path.clone());
            }
        }
        Layout {
            tree: RwLock::new(tree),
            sizes: Mutex::new(sizes),
            pending: Mutex::new(Default::default()),
            unverified: Mutex::new(unverified),
        }
    }

    /// What a persisted index keeps of this layout: every path in view order with the
    /// sizes known; `None` while parts are not expanded (an archive's).
    pub(super) fn to_index(&self) -> Option<Vec<crate::fs::index::Item>> {
        if !lock(&self.pending).is_empty() {
            return None;
        }
        let tree = self.tree();
        let sizes = lock(&self.sizes);
        let mut out = Vec::new();
        let mut stack = vec![String::new()];
        while let Some(dir) = stack.pop() {
            let kids = tree.children.get(&dir)?;
            let mut sub = Vec::new();
            for (name, is_dir) in kids {
                let path = join(&dir, name);
                out.push(crate::fs::index::Item {
                    size: if *is_dir {
                        None
                    } else {
                        sizes.get(&path).copied()
                    },
                    dir: *is_dir,
                    path: path.clone(),
                });
                if *is_dir {
                    sub.push(path);
                }
            }
            // folders in view order
            stack.extend(sub.into_iter().rev());
        }
        Some(out)
    }

    /// A view with nothing in it (a new asset before its first commit).
    pub(super) fn empty() -> Layout {
        let mut children = HashMap::new();
        children.insert(String::new(), Vec::new());
        Layout {
            tree: RwLock::new(Tree {
                is_dir: HashMap::new(),
                children,
            }),
            sizes: Mutex::new(HashMap::new()),
            pending: Mutex::new(Default::default()),
            unverified: Mutex::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::ViewError;

    #[test]
    fn layout_lists_children_in_view_order() {
        struct V(Vec<crate::view::Entry>);
        impl View for V {
            fn entries(&self) -> &[crate::view::Entry] {
                &self.0
            }
            fn render(&self, _: &str, _: &mut dyn std::io::Write) -> Result<(), ViewError> {
                Ok(())
            }
        }
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
}
