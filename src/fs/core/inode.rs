//! The inode table: every node the kernel may hold (real files and folders of the game
//! folder, asset directories, status files, view folders and view files), where each one
//! stands (parent and name), and the kernel's lookup count of each; plus `lookup`, which
//! turns a name into a node.
//!
//! Lookup counting follows the kernel's: every reply that gives the kernel an entry (lookup,
//! create, mkdir, mknod, symlink, link, readdirplus entries other than `.` and `..`) adds one
//! ([`Table::remember`]); `forget` takes the kernel's count away ([`Table::forget`]). A node
//! the kernel has forgotten, that no handle holds open and under which no node is referenced
//! any more, leaves the table (and so do the unreferenced nodes under it). [`ROOT`] stays.
//! Inode numbers are never reused, so a forgotten inode can only answer `ESTALE`, never for
//! another file.
//!
//! Hard links: a real file that is not a directory is one node per backing file (device and
//! inode number): a second name of a file already known becomes another name of the same
//! node (its first name is its path; the others are kept beside it), so the kernel has one
//! inode with the real link count. Removing or renaming one name leaves the others.

use super::writeback_ops::WritebackOps;
use super::{is_not_found, AssetAt, Core, FileKind, Resolved, ROOT};
use crate::fs::shared::{join, lock, Loc, STATUS_NAME};
use crate::fs::FsError;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::Attr;

/// What a node is.
#[derive(Debug, Clone)]
pub(in crate::fs) enum NodeKind {
    /// A path of the game folder, passed through; `kind` is what it was when looked up.
    Real { kind: FileKind },
    /// A binary shown as a directory.
    AssetRoot,
    /// The hidden status file of an asset directory (`root`) or of the mount (`ROOT`).
    Status { root: u64 },
    /// A folder of a view (generated or staged) of asset root `root`: it follows the asset
    /// across generations; `vpath` follows renames.
    ViewDir { root: u64, vpath: String },
    /// A file of a view (generated or staged), valid for one generation `gen` of the asset;
    /// `vpath` follows renames.
    ViewFile { root: u64, gen: u64, vpath: String },
}

impl NodeKind {
    /// A view folder (`dir`) or view file of generation `gen` at `vpath` of asset `root`.
    pub(in crate::fs) fn of_view(root: u64, gen: u64, vpath: &str, dir: bool) -> NodeKind {
        let vpath = vpath.to_string();
        if dir {
            NodeKind::ViewDir { root, vpath }
        } else {
            NodeKind::ViewFile { root, gen, vpath }
        }
    }

    /// The asset root and path in the view of a view node.
    pub(in crate::fs) fn view(&self) -> Option<(u64, &str)> {
        match self {
            NodeKind::ViewDir { root, vpath } | NodeKind::ViewFile { root, vpath, .. } => {
                Some((*root, vpath))
            }
            _ => None,
        }
    }
}

/// A node as the table holds it.
#[derive(Debug, Clone)]
pub(in crate::fs) struct Node {
    /// Parent inode; [`DETACHED`] once unlinked or replaced.
    pub(in crate::fs) parent: u64,
    /// Name in the parent.
    pub(in crate::fs) name: OsString,
    /// What it is.
    pub(in crate::fs) kind: NodeKind,
    /// Entries the kernel was given for it and has not forgotten.
    lookups: u64,
    /// Open file and directory handles of it.
    opens: u32,
    /// The kernel forgot it (its count went to zero by `forget`).
    forgotten: bool,
    /// The generation it is listed under for invalidation (view nodes).
    gen: Option<u64>,
}

/// Bytes a node takes on average with its names, its place among its parent's children and
/// its generation's list (measured on a real install: 40.8 MiB for 126,464 nodes), counted
/// as held outside the budgets ([`crate::fs::shared::metadata_add`]).
const NODE_BYTES: u64 = 340;

/// Parent of a node that has no path any more.
pub(in crate::fs) const DETACHED: u64 = 0;

/// The inode table. Invariant: a node's `parent` is [`DETACHED`] exactly when it is not
/// in `children` (ROOT, its own parent, aside).
pub(in crate::fs) struct Table {
    /// Boxed: a real install holds about 126,000 nodes, and the map keeps about twice as
    /// many slots as entries; a slot of the node itself would take 112 bytes.
    nodes: HashMap<u64, Box<Node>>,
    children: HashMap<u64, HashMap<OsString, u64>>,
    by_gen: HashMap<u64, HashSet<u64>>,
    /// Names of a node besides its own `parent`/`name` (further hard links).
    aliases: HashMap<u64, Vec<(u64, OsString)>>,
    /// The node of each backing file (device, inode number) of real non-directories.
    by_file: HashMap<(u64, u64), u64>,
    /// The backing files each node was given in `by_file` (so removing a node costs O(1),
    /// not a pass over every file known).
    files_of: HashMap<u64, Vec<(u64, u64)>>,
    next: u64,
}

impl Drop for Table {
    fn drop(&mut self) {
        // (the root is not counted)
        crate::fs::shared::metadata_sub(NODE_BYTES * self.nodes.len().saturating_sub(1) as u64);
    }
}

impl Table {
    pub(super) fn new() -> Table {
        let mut nodes = HashMap::new();
        nodes.insert(
            ROOT,
            Box::new(Node {
                parent: ROOT,
                name: OsString::new(),
                kind: NodeKind::Real {
                    kind: FileKind::Dir,
                },
                lookups: 0,
                opens: 0,
                forgotten: false,
                gen: None,
            }),
        );
        Table {
            nodes,
            children: HashMap::new(),
            by_gen: HashMap::new(),
            aliases: HashMap::new(),
            by_file: HashMap::new(),
            files_of: HashMap::new(),
            next: ROOT + 1,
        }
    }

    /// Heap bytes the table holds (estimated).
    #[cfg(feature = "heap-stats")]
    pub(in crate::fs) fn heap_bytes(&self) -> usize {
        use crate::fs::shared::{chunk, table_bytes};
        let mut b = table_bytes(self.nodes.capacity(), 16);
        for n in self.nodes.values() {
            b += chunk(std::mem::size_of::<Node>()) + chunk(n.name.capacity());
            if let Some((_, v)) = n.kind.view() {
                b += chunk(v.len());
            }
        }
        b += table_bytes(self.children.capacity(), 56);
        for kids in self.children.values() {
            b += table_bytes(kids.capacity(), 32);
            b += kids.keys().map(|k| chunk(k.capacity())).sum::<usize>();
        }
        b += table_bytes(self.by_gen.capacity(), 56);
        b += self
            .by_gen
            .values()
            .map(|s| table_bytes(s.capacity(), 8))
            .sum::<usize>();
        b += table_bytes(self.by_file.capacity(), 24) + table_bytes(self.files_of.capacity(), 32);
        b
    }

    /// Nodes held.
    pub(in crate::fs) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The node `ino`.
    pub(in crate::fs) fn get(&self, ino: u64) -> Option<&Node> {
        self.nodes.get(&ino).map(|n| &**n)
    }

    /// The child `name` of `parent`.
    pub(in crate::fs) fn child_of(&self, parent: u64, name: &OsStr) -> Option<u64> {
        self.children.get(&parent)?.get(name).copied()
    }

    /// Path relative to the game folder of a real node or asset root.
    pub(in crate::fs) fn rel_path(&self, mut ino: u64) -> Option<PathBuf> {
        let mut names = Vec::new();
        while ino != ROOT {
            let n = self.nodes.get(&ino)?;
            if n.parent == DETACHED || names.len() > 4096 {
                return None;
            }
            names.push(n.name.clone());
            ino = n.parent;
        }
        Some(names.iter().rev().collect())
    }

    /// The child `name` of `parent` if it matches `ok`, else a new node replacing it
    /// (listed under generation `gen` for invalidation).
    pub(in crate::fs) fn child(
        &mut self,
        parent: u64,
        name: &OsStr,
        ok: impl Fn(&NodeKind) -> bool,
        kind: NodeKind,
        gen: Option<u64>,
    ) -> u64 {
        if let Some(ino) = self.child_of(parent, name) {
            if self.nodes.get(&ino).is_some_and(|n| ok(&n.kind)) {
                return ino;
            }
            if !self.drop_name(ino, parent, name) {
                self.detach(ino);
            }
        }
        let ino = self.next;
        self.next += 1;
        crate::fs::shared::metadata_add(NODE_BYTES);
        if let Some(g) = gen {
            self.by_gen.entry(g).or_default().insert(ino);
        }
        self.nodes.insert(
            ino,
            Box::new(Node {
                parent,
                name: name.to_os_string(),
                kind,
                lookups: 0,
                opens: 0,
                forgotten: false,
                gen,
            }),
        );
        self.attach(parent, name, ino);
        ino
    }

    /// A new node `name` in `parent`, replacing whatever stood there.
    pub(in crate::fs) fn replace(
        &mut self,
        parent: u64,
        name: &OsStr,
        kind: NodeKind,
        gen: Option<u64>,
    ) -> u64 {
        self.detach_child(parent, name);
        self.child(parent, name, |_| false, kind, gen)
    }

    fn attach(&mut self, parent: u64, name: &OsStr, ino: u64) {
        self.children
            .entry(parent)
            .or_default()
            .insert(name.to_os_string(), ino);
    }

    fn unattach(&mut self, parent: u64, name: &OsStr) -> Option<u64> {
        let kids = self.children.get_mut(&parent)?;
        let ino = kids.remove(name);
        if kids.is_empty() {
            self.children.remove(&parent);
        }
        ino
    }

    /// Takes a node out of the tree (it stays known, but has no path any more).
    pub(in crate::fs) fn detach(&mut self, ino: u64) {
        let Some(n) = self.nodes.get_mut(&ino) else {
            return;
        };
        let (parent, name) = (n.parent, std::mem::take(&mut n.name));
        n.parent = DETACHED;
        if self.child_of(parent, &name) == Some(ino) {
            self.unattach(parent, &name);
            self.sweep(parent);
        }
        for (p, n) in self.aliases.remove(&ino).unwrap_or_default() {
            if self.child_of(p, &n) == Some(ino) {
                self.unattach(p, &n);
                self.sweep(p);
            }
        }
        self.sweep(ino);
    }

    /// The backing file (device, inode number) of real node `ino` is `id`.
    pub(in crate::fs) fn set_file(&mut self, ino: u64, id: (u64, u64)) {
        if self.by_file.insert(id, ino) != Some(ino) {
            self.files_of.entry(ino).or_default().push(id);
        }
    }

    /// The node known for backing file `id`, if any.
    pub(in crate::fs) fn file_node(&self, id: (u64, u64)) -> Option<u64> {
        self.by_file
            .get(&id)
            .copied()
            .filter(|i| self.nodes.get(i).is_some_and(|n| n.parent != DETACHED))
    }

    /// Makes `name` in `parent` one more name of node `ino` (a hard link); false when `ino`
    /// has no path any more.
    pub(in crate::fs) fn add_name(&mut self, ino: u64, parent: u64, name: &OsStr) -> bool {
        if self.child_of(parent, name) == Some(ino) {
            return true;
        }
        if !self.nodes.get(&ino).is_some_and(|n| n.parent != DETACHED) {
            return false;
        }
        self.detach_child(parent, name);
        self.attach(parent, name, ino);
        self.aliases
            .entry(ino)
            .or_default()
            .push((parent, name.to_os_string()));
        true
    }

    /// Takes only the name `name` in `parent` away from `ino` when `ino` has other names
    /// (one of them becomes its path if that was it); false when it is `ino`'s only name.
    fn drop_name(&mut self, ino: u64, parent: u64, name: &OsStr) -> bool {
        let Some(list) = self.aliases.get_mut(&ino) else {
            return false;
        };
        if let Some(i) = list.iter().position(|(p, n)| *p == parent && n == name) {
            list.remove(i);
        } else {
            let Some((p, n)) = list.pop() else {
                return false;
            };
            let Some(node) = self.nodes.get_mut(&ino) else {
                return false;
            };
            if node.parent != parent || node.name != name {
                list.push((p, n));
                return false;
            }
            node.parent = p;
            node.name = n;
        }
        if self.aliases.get(&ino).is_some_and(|l| l.is_empty()) {
            self.aliases.remove(&ino);
        }
        if self.child_of(parent, name) == Some(ino) {
            self.unattach(parent, name);
            self.sweep(parent);
        }
        true
    }

    /// The name `parent`/`name` of `ino` is now `newparent`/`newname` (its path or one of its
    /// other names).
    fn rename_name(&mut self, ino: u64, from: (u64, &OsStr), to: (u64, &OsStr)) {
        if let Some(list) = self.aliases.get_mut(&ino) {
            if let Some(e) = list.iter_mut().find(|(p, n)| *p == from.0 && n == from.1) {
                *e = (to.0, to.1.to_os_string());
                return;
            }
        }
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.parent = to.0;
            n.name = to.1.to_os_string();
        }
    }

    /// Detaches the child `name` of `parent`, if any.
    pub(in crate::fs) fn detach_child(&mut self, parent: u64, name: &OsStr) {
        if let Some(ino) = self.child_of(parent, name) {
            if !self.drop_name(ino, parent, name) {
                self.detach(ino);
            }
        }
    }

    /// Moves the child `name` of `parent` to `newname` in `newparent` (replacing what stood
    /// there); returns it.
    pub(in crate::fs) fn move_child(
        &mut self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
    ) -> Option<u64> {
        let ino = self.child_of(parent, name)?;
        if self.child_of(newparent, newname) == Some(ino) {
            // two names of one file: rename(2) does nothing
            return Some(ino);
        }
        self.detach_child(newparent, newname);
        let ino = self.unattach(parent, name)?;
        self.rename_name(ino, (parent, name), (newparent, newname));
        self.attach(newparent, newname, ino);
        self.sweep(parent);
        Some(ino)
    }

    /// Swaps the children `name` of `parent` and `newname` of `newparent`.
    pub(in crate::fs) fn exchange(
        &mut self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
    ) {
        let a = self.unattach(parent, name);
        let b = self.unattach(newparent, newname);
        if let Some(a) = a {
            self.rename_name(a, (parent, name), (newparent, newname));
            self.attach(newparent, newname, a);
        }
        if let Some(b) = b {
            self.rename_name(b, (newparent, newname), (parent, name));
            self.attach(parent, name, b);
        }
        self.sweep(parent);
        self.sweep(newparent);
    }

    /// The view node `ino` now stands for `vpath` of its asset (renamed); the nodes under a
    /// renamed folder follow it.
    pub(in crate::fs) fn set_vpath(&mut self, ino: u64, to: &str) {
        let mut stack = vec![(ino, to.to_string())];
        while let Some((ino, to)) = stack.pop() {
            if let Some(n) = self.nodes.get_mut(&ino) {
                if let NodeKind::ViewDir { vpath, .. } | NodeKind::ViewFile { vpath, .. } =
                    &mut n.kind
                {
                    *vpath = to.clone();
                }
            }
            if let Some(kids) = self.children.get(&ino) {
                for (name, k) in kids {
                    stack.push((*k, format!("{to}/{}", name.to_string_lossy())));
                }
            }
        }
    }

    /// Every node as (inode, parent, name) (the watch invalidates them all at once).
    pub(in crate::fs) fn nodes(&self) -> Vec<(u64, u64, OsString)> {
        self.nodes
            .iter()
            .map(|(ino, n)| (*ino, n.parent, n.name.clone()))
            .collect()
    }

    /// The nodes listed under generation `gen` (the list is emptied).
    pub(in crate::fs) fn take_gen(&mut self, gen: u64) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .by_gen
            .remove(&gen)
            .unwrap_or_default()
            .into_iter()
            .collect();
        v.sort_unstable();
        for ino in &v {
            if let Some(n) = self.nodes.get_mut(ino) {
                n.gen = None;
            }
        }
        v
    }

    /// The kernel was given an entry of `ino`; false when the node is gone (forgotten
    /// meanwhile: the caller looks the name up again).
    pub(in crate::fs) fn remember(&mut self, ino: u64) -> bool {
        match self.nodes.get_mut(&ino) {
            Some(n) => {
                n.lookups += 1;
                n.forgotten = false;
                true
            }
            None => false,
        }
    }

    /// The kernel forgot `n` of the entries it was given of `ino`.
    pub(in crate::fs) fn forget(&mut self, ino: u64, n: u64) {
        if ino == ROOT {
            return;
        }
        let Some(node) = self.nodes.get_mut(&ino) else {
            return;
        };
        node.lookups = node.lookups.saturating_sub(n);
        if node.lookups == 0 {
            node.forgotten = true;
            self.sweep(ino);
        }
    }

    /// A handle of `ino` was opened.
    pub(in crate::fs) fn opened(&mut self, ino: u64) {
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.opens = n.opens.saturating_add(1);
        }
    }

    /// A handle of `ino` was closed.
    pub(in crate::fs) fn closed(&mut self, ino: u64) {
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.opens = n.opens.saturating_sub(1);
            if n.opens == 0 && n.forgotten {
                self.sweep(ino);
            }
        }
    }

    fn referenced(n: &Node) -> bool {
        n.lookups > 0 || n.opens > 0
    }

    /// Every node under `ino` (attached below it), or `None` when one of them is still
    /// referenced.
    fn unreferenced_below(&self, ino: u64) -> Option<Vec<u64>> {
        let mut out = Vec::new();
        let mut stack = vec![ino];
        while let Some(p) = stack.pop() {
            for &k in self.children.get(&p).into_iter().flat_map(|m| m.values()) {
                if self.nodes.get(&k).is_some_and(|n| Self::referenced(n)) {
                    return None;
                }
                out.push(k);
                stack.push(k);
            }
        }
        Some(out)
    }

    /// Removes `ino` if the kernel forgot it, no handle holds it and nothing under it is
    /// referenced; then its parent, if that is now removable too.
    fn sweep(&mut self, mut ino: u64) {
        loop {
            let Some(n) = self.nodes.get(&ino) else {
                return;
            };
            if ino == ROOT || !n.forgotten || Self::referenced(n) {
                return;
            }
            let Some(below) = self.unreferenced_below(ino) else {
                return;
            };
            let parent = n.parent;
            for k in below.into_iter().chain([ino]) {
                self.remove(k);
            }
            if parent == DETACHED {
                return;
            }
            ino = parent;
        }
    }

    fn remove(&mut self, ino: u64) {
        let Some(n) = self.nodes.remove(&ino) else {
            return;
        };
        crate::fs::shared::metadata_sub(NODE_BYTES);
        if n.parent != DETACHED && self.child_of(n.parent, &n.name) == Some(ino) {
            self.unattach(n.parent, &n.name);
        }
        for (p, name) in self.aliases.remove(&ino).unwrap_or_default() {
            if self.child_of(p, &name) == Some(ino) {
                self.unattach(p, &name);
            }
        }
        for id in self.files_of.remove(&ino).unwrap_or_default() {
            if self.by_file.get(&id) == Some(&ino) {
                self.by_file.remove(&id);
            }
        }
        self.children.remove(&ino);
        if let Some(g) = n.gen {
            if let Some(set) = self.by_gen.get_mut(&g) {
                set.remove(&ino);
                if set.is_empty() {
                    self.by_gen.remove(&g);
                }
            }
        }
    }
}

impl Core {
    pub(in crate::fs) fn table(&self) -> std::sync::RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(in crate::fs) fn table_mut(&self) -> std::sync::RwLockWriteGuard<'_, Table> {
        self.table.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The node `ino` (a copy).
    pub(in crate::fs) fn node(&self, ino: u64) -> Result<Node, FsError> {
        self.table()
            .get(ino)
            .cloned()
            .ok_or(FsError::UnknownInode(ino))
    }

    /// Path relative to the game folder of a real node or asset root.
    pub(in crate::fs) fn rel_path(&self, ino: u64) -> Result<PathBuf, FsError> {
        self.table().rel_path(ino).ok_or(FsError::Stale)
    }

    /// Gives the kernel an entry of `a` (counts it); `ESTALE` in the rare case where the
    /// node was forgotten between being found and being counted.
    pub(super) fn entry(&self, a: Attr) -> Result<Attr, FsError> {
        if self.table_mut().remember(a.ino) {
            Ok(a)
        } else {
            Err(FsError::Stale)
        }
    }

    /// Whether view node `ino` still stands at `vpath` of its asset (not renamed over, removed
    /// or replaced). Every operation that changes which staged file a path holds (rename,
    /// unlink, create over an existing name) changes the staged file and this table under the
    /// asset's stage lock; opening or stating a staged file checks this under the same lock,
    /// so an inode never opens or describes a file other than the one its name stood for.
    pub(in crate::fs) fn stands_at(&self, ino: u64, vpath: &str) -> bool {
        self.table()
            .get(ino)
            .is_some_and(|n| n.parent != DETACHED && n.kind.view().is_some_and(|(_, v)| v == vpath))
    }

    /// The path in its asset of a view node (follows renames).
    pub(in crate::fs) fn vpath_of(&self, ino: u64) -> Option<String> {
        self.table()
            .get(ino)?
            .kind
            .view()
            .map(|(_, v)| v.to_string())
    }

    /// True when `ino` is an asset directory or inside one.
    pub(in crate::fs) fn is_asset_node(&self, ino: u64) -> bool {
        self.table().get(ino).is_some_and(|n| {
            matches!(
                n.kind,
                NodeKind::AssetRoot | NodeKind::ViewDir { .. } | NodeKind::ViewFile { .. }
            )
        })
    }

    /// True when the child `name` of `parent` is not a real node.
    pub(super) fn child_is_view(&self, parent: u64, name: &OsStr) -> bool {
        let t = self.table();
        t.child_of(parent, name)
            .and_then(|i| t.get(i))
            .is_some_and(|n| !matches!(n.kind, NodeKind::Real { .. }))
    }

    /// A new view node `name` in `parent` (the old node of that name stops standing there).
    pub(in crate::fs) fn new_view_node(
        &self,
        parent: u64,
        root: u64,
        gen: u64,
        name: &str,
        vpath: &str,
        dir: bool,
    ) -> u64 {
        let kind = NodeKind::of_view(root, gen, vpath, dir);
        self.table_mut()
            .replace(parent, OsStr::new(name), kind, Some(gen))
    }

    /// The view node `name` of `parent` for `vpath` at generation `gen`: the existing one
    /// if it is that (folders follow the asset across generations), else a new one.
    pub(super) fn view_child(
        t: &mut Table,
        parent: u64,
        root: u64,
        gen: u64,
        name: &str,
        vpath: &str,
        is_dir: bool,
    ) -> u64 {
        let ok = |k: &NodeKind| match k {
            NodeKind::ViewDir { vpath: v, .. } => is_dir && v == vpath,
            NodeKind::ViewFile {
                gen: g, vpath: v, ..
            } => !is_dir && *g == gen && v == vpath,
            _ => false,
        };
        let kind = NodeKind::of_view(root, gen, vpath, is_dir);
        t.child(parent, OsStr::new(name), ok, kind, Some(gen))
    }

    /// Looks `name` up in directory `parent` (not counted; see [`Core::entry`]).
    pub(in crate::fs) fn lookup_node(&self, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        let pnode = self.node(parent)?;
        match pnode.kind {
            NodeKind::Real { kind } => {
                if kind != FileKind::Dir {
                    return Err(FsError::NotDir);
                }
                if parent == ROOT && name == STATUS_NAME && self.writeback() {
                    return self.status_node(ROOT, ROOT);
                }
                let rel = self.rel_path(parent)?.join(name);
                self.lookup_real(parent, name, &rel)
            }
            NodeKind::Status { .. } | NodeKind::ViewFile { .. } => Err(FsError::NotDir),
            NodeKind::AssetRoot => {
                let (rel, gen, layout, meta) = self.root_asset(parent)?;
                self.lookup_view(
                    parent,
                    parent,
                    "",
                    name,
                    AssetAt::of(&rel, gen, &layout, &meta),
                )
            }
            NodeKind::ViewDir { root, vpath } => {
                // folders follow the asset across generations (their files do not)
                let (rel, gen, layout, meta) = self.folder(root, &vpath)?;
                self.lookup_view(
                    parent,
                    root,
                    &vpath,
                    name,
                    AssetAt::of(&rel, gen, &layout, &meta),
                )
            }
        }
    }

    fn lookup_real(&self, parent: u64, name: &OsStr, rel: &Path) -> Result<Attr, FsError> {
        match self.resolve(rel) {
            Err(e) => {
                if is_not_found(&e) {
                    self.table_mut().detach_child(parent, name);
                }
                Err(e)
            }
            Ok(Resolved::Asset { gen, layout, meta }) => {
                let ino = self.table_mut().child(
                    parent,
                    name,
                    |k| matches!(k, NodeKind::AssetRoot),
                    NodeKind::AssetRoot,
                    None,
                );
                lock(&self.slot(rel).state).root = Some(ino);
                self.view_attr(ino, AssetAt::of(rel, gen, &layout, &meta), "", true)
            }
            Ok(Resolved::Plain(meta)) => {
                let ino = self.real_node(parent, name, &meta, false);
                Ok(self.real_attr(ino, rel, &meta))
            }
        }
    }

    /// The node of real entry `name` of `parent` described by `meta`: for a non-directory
    /// the node of its backing file when one is known under another name (a hard link), else
    /// the child of that name if it is of that kind (`replace`: a new one in any case).
    pub(in crate::fs) fn real_node(
        &self,
        parent: u64,
        name: &OsStr,
        meta: &Metadata,
        replace: bool,
    ) -> u64 {
        let kind = FileKind::of(meta.file_type());
        let id = (kind != FileKind::Dir).then(|| (meta.dev(), meta.ino()));
        if let Some(id) = id.filter(|_| meta.nlink() > 1) {
            let known = self.table().file_node(id);
            if let Some(x) = known.filter(|&x| self.child_of_file(x, id)) {
                if self.table_mut().add_name(x, parent, name) {
                    return x;
                }
            }
        }
        let mut t = self.table_mut();
        let ino = if replace {
            t.replace(parent, name, NodeKind::Real { kind }, None)
        } else {
            t.child(
                parent,
                name,
                |k| matches!(k, NodeKind::Real { kind: k } if *k == kind),
                NodeKind::Real { kind },
                None,
            )
        };
        if let Some(id) = id {
            t.set_file(ino, id);
        }
        ino
    }

    /// Whether real node `x`'s path still holds backing file `id`.
    fn child_of_file(&self, x: u64, id: (u64, u64)) -> bool {
        self.rel_path(x)
            .ok()
            .and_then(|r| self.lstat_rel(&r).ok())
            .is_some_and(|m| (m.dev(), m.ino()) == id && !m.is_dir())
    }

    fn lookup_view(
        &self,
        parent: u64,
        root: u64,
        dir: &str,
        name: &OsStr,
        at: AssetAt,
    ) -> Result<Attr, FsError> {
        let AssetAt {
            rel, gen, layout, ..
        } = at;
        let name = name.to_str().ok_or(FsError::NotFound)?;
        if dir.is_empty() && name == STATUS_NAME && self.opts.state_dir.is_some() {
            return self.status_node(parent, root);
        }
        let vpath = join(dir, name);
        let (is_dir, staged) = match self.locate(rel, layout, &vpath) {
            // inside an archive member that found no room to be decoded now
            Loc::None if !layout.pending_for(&vpath, false).is_empty() => {
                return Err(FsError::NoRoom)
            }
            Loc::None => return Err(FsError::NotFound),
            Loc::Dir => (true, None),
            Loc::Staged(m) => (false, Some(m)),
            Loc::Gen => (false, None),
        };
        let ino = Self::view_child(
            &mut self.table_mut(),
            parent,
            root,
            gen,
            name,
            &vpath,
            is_dir,
        );
        if let Some(m) = staged {
            return Ok(self.staged_attr(ino, &m, 0));
        }
        self.view_attr(ino, at, &vpath, is_dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real(t: &mut Table, parent: u64, name: &str) -> u64 {
        t.child(
            parent,
            OsStr::new(name),
            |_| true,
            NodeKind::Real {
                kind: FileKind::Dir,
            },
            None,
        )
    }

    #[test]
    fn forgotten_nodes_leave_the_table_children_first() {
        let mut t = Table::new();
        let a = real(&mut t, ROOT, "a");
        let b = real(&mut t, a, "b");
        let listed = real(&mut t, b, "listed"); // readdir only: never counted
        t.remember(a);
        t.remember(b);
        t.remember(b);
        assert_eq!(t.len(), 4);
        t.forget(a, 1); // b is still referenced: a stays
        assert!(t.get(a).is_some());
        t.forget(b, 1);
        assert!(t.get(b).is_some());
        t.opened(b);
        t.forget(b, 1); // open: stays
        assert!(t.get(b).is_some());
        t.closed(b); // b, the unreferenced node under it, then a go
        assert!(t.get(b).is_none() && t.get(listed).is_none() && t.get(a).is_none());
        assert_eq!(t.len(), 1);
        // numbers are never reused
        let a2 = real(&mut t, ROOT, "a");
        assert!(a2 > listed);
        t.forget(ROOT, 5);
        assert!(t.get(ROOT).is_some());
    }

    #[test]
    fn a_remembered_node_is_kept_and_detached_ones_go_when_forgotten() {
        let mut t = Table::new();
        let a = real(&mut t, ROOT, "a");
        t.remember(a);
        t.forget(a, 1);
        assert!(t.get(a).is_none());
        assert!(!t.remember(a));
        let b = real(&mut t, ROOT, "b");
        t.remember(b);
        t.opened(b);
        t.detach(b);
        t.forget(b, 1);
        assert!(t.get(b).is_some());
        t.closed(b);
        assert!(t.get(b).is_none());
        assert_eq!(t.child_of(ROOT, OsStr::new("b")), None);
    }

    #[test]
    fn hard_links_are_names_of_one_node() {
        let mut t = Table::new();
        let d = real(&mut t, ROOT, "d");
        let f = real(&mut t, ROOT, "f");
        t.set_file(f, (1, 42));
        assert_eq!(t.file_node((1, 42)), Some(f));
        assert!(t.add_name(f, d, OsStr::new("g")));
        assert_eq!(t.child_of(d, OsStr::new("g")), Some(f));
        // renaming one name moves only that name; renaming onto another name of the same
        // file does nothing (as rename(2))
        t.move_child(d, OsStr::new("g"), ROOT, OsStr::new("h"));
        assert_eq!(t.child_of(ROOT, OsStr::new("h")), Some(f));
        assert_eq!(t.child_of(d, OsStr::new("g")), None);
        t.move_child(ROOT, OsStr::new("h"), ROOT, OsStr::new("f"));
        assert_eq!(t.child_of(ROOT, OsStr::new("h")), Some(f));
        assert_eq!(t.child_of(ROOT, OsStr::new("f")), Some(f));
        // unlinking the node's path leaves it at its other name
        t.detach_child(ROOT, OsStr::new("f"));
        assert_eq!(t.child_of(ROOT, OsStr::new("f")), None);
        assert_eq!(t.rel_path(f), Some(PathBuf::from("h")));
        t.detach_child(ROOT, OsStr::new("h"));
        assert_eq!(t.rel_path(f), None);
        assert_eq!(t.file_node((1, 42)), None);
        t.remember(f);
        t.forget(f, 1);
        assert!(t.get(f).is_none() && t.by_file.is_empty() && t.aliases.is_empty());
        assert!(t.files_of.is_empty());
    }
}
