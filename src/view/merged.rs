//! The merged game view as a pure index: loose files and the members of every archive of a
//! game folder overlaid into one tree, as the game's file lookup sees it.
//!
//! Inputs are [`SourceList`]s (one per source: the loose files, or one archive) given in
//! priority order, highest first (see [`Priority`]); the output is a [`MergedIndex`]: one node
//! per path, path components compared ignoring ASCII case, every node with the list of
//! sources that hold that path ([`Hit`]s, highest priority first: the first is the
//! *winner*). No I/O happens here.
//!
//! Rules:
//! - A node's kind and shown spelling are its winner's.
//! - A file node has no children: lower-priority folders of the same name are shadowed with
//!   everything in them (a loose file `units` hides every archive's `UNITS/`).
//! - A folder node merges the folders of that name of every source; lower-priority files of
//!   that name are shadowed.
//! - Names are made safe with [`super::safe_component`] (no `/`, `.`, `..`, control bytes).

use super::safe_component;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// The archive extensions the game scans, lowercase, in the default priority order
/// (highest first).
pub const ARCHIVE_EXTS: [&str; 5] = ["gp3", "gpf", "ccx", "ufo", "hpi"];

/// The default priority, highest first: loose files, then archives by extension
/// (`gp3 > gpf > ccx > ufo > hpi`, the order of RWE, see `SEMANTICS.md`), and among archives
/// of one extension by file name ignoring case, A before Z.
pub const DEFAULT_PRIORITY: &str = "loose,gp3,gpf,ccx,ufo,hpi";

/// One item of a [`Priority`] list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PriorityItem {
    /// Loose files of the game folder.
    Loose,
    /// Every archive with this extension (lowercase, no dot).
    Ext(String),
    /// The archive with this file name (compared ignoring ASCII case).
    Name(String),
}

/// Which source wins where several hold a path. Parsed from a comma-separated list, highest
/// first, of `loose`, extensions (`ufo`, `.ufo` or `*.ufo`) and archive file names
/// (`rev31.gp3`); the list is put in front of [`DEFAULT_PRIORITY`], so what it does not
/// mention keeps the default order after it. Archives of equal rank are ordered by file
/// name ignoring case (A first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Priority {
    items: Vec<PriorityItem>,
}

/// Why a priority list does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("priority item {item:?}: expected `loose`, an archive extension (gp3 gpf ccx ufo hpi) or an archive file name like rev31.gp3")]
pub struct PriorityError {
    /// The item that is not understood.
    pub item: String,
}

impl Default for Priority {
    fn default() -> Self {
        DEFAULT_PRIORITY.parse().unwrap_or(Priority {
            items: vec![PriorityItem::Loose],
        })
    }
}

fn parse_item(s: &str) -> Result<PriorityItem, PriorityError> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    if lower == "loose" {
        return Ok(PriorityItem::Loose);
    }
    let ext = lower
        .strip_prefix("*.")
        .or_else(|| lower.strip_prefix('.'))
        .unwrap_or(&lower);
    if ARCHIVE_EXTS.contains(&ext) {
        return Ok(PriorityItem::Ext(ext.to_string()));
    }
    let is_name = !t.contains('/') && !t.contains('\0') && super::archive::is_archive_name(t);
    if is_name && lower.len() > 4 {
        return Ok(PriorityItem::Name(lower));
    }
    Err(PriorityError {
        item: t.to_string(),
    })
}

impl FromStr for Priority {
    type Err = PriorityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut items = Vec::new();
        let defaults = DEFAULT_PRIORITY.split(',');
        for part in s
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .chain(defaults)
        {
            let item = parse_item(part)?;
            if !items.contains(&item) {
                items.push(item);
            }
        }
        Ok(Priority { items })
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<&str> = self
            .items
            .iter()
            .map(|i| match i {
                PriorityItem::Loose => "loose",
                PriorityItem::Ext(e) | PriorityItem::Name(e) => e,
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// A source in a priority order: the loose files or archive number N of the list given to
/// [`Priority::order`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Slot {
    /// The loose files.
    Loose,
    /// The archive at this index of the given names.
    Archive(usize),
}

impl Priority {
    /// The items, highest first (the given ones, then the rest of the default).
    pub fn items(&self) -> &[PriorityItem] {
        &self.items
    }

    /// The loose files and the archives named `archives` (file names) in priority order,
    /// highest first.
    pub fn order(&self, archives: &[String]) -> Vec<Slot> {
        let n = self.items.len();
        let loose_rank = self
            .items
            .iter()
            .position(|i| *i == PriorityItem::Loose)
            .unwrap_or(n);
        let mut keyed: Vec<(usize, String, String, Slot)> = archives
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let lower = name.to_ascii_lowercase();
                let ext = lower.rsplit_once('.').map_or("", |(_, e)| e);
                let by_name = self
                    .items
                    .iter()
                    .position(|it| matches!(it, PriorityItem::Name(x) if *x == lower));
                let by_ext = || {
                    self.items
                        .iter()
                        .position(|it| matches!(it, PriorityItem::Ext(x) if x == ext))
                };
                let rank = by_name.or_else(by_ext).unwrap_or(n + 1);
                (rank, lower, name.clone(), Slot::Archive(i))
            })
            .collect();
        keyed.push((loose_rank, String::new(), String::new(), Slot::Loose));
        keyed.sort_by(|a, b| (a.0, &a.1, &a.2).cmp(&(b.0, &b.1, &b.2)));
        keyed.into_iter().map(|k| k.3).collect()
    }
}

/// One entry of a source: its path as the source spells it (`/`-separated) and whether it
/// is a folder. Folders may be implied by their files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceEntry {
    /// Path in the source, `/`-separated.
    pub path: String,
    /// True for a folder.
    pub dir: bool,
}

/// The entries of one source.
#[derive(Debug, Clone, Default)]
pub struct SourceList {
    /// Every file and folder of the source (parents need not be listed).
    pub entries: Vec<SourceEntry>,
}

/// A source holding a path of the merged tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Index of the source in the list given to [`MergedIndex::build`].
    pub source: usize,
    /// The path as the source spells it (for reading it from the source).
    pub path: String,
    /// True when the source has a folder there.
    pub dir: bool,
    /// Index in the source's entries; `None` for a folder only implied by its files.
    pub entry: Option<usize>,
}

/// One path of the merged tree.
#[derive(Debug, Clone)]
struct MNode {
    /// Shown name (the winner's spelling, made safe).
    name: String,
    parent: usize,
    hits: Vec<Hit>,
    /// Lowercase name → node, every child any source has (also hidden ones).
    children: HashMap<String, usize>,
}

/// The merged tree: node 0 is the root.
#[derive(Debug, Clone)]
pub struct MergedIndex {
    nodes: Vec<MNode>,
}

/// The root node.
pub const ROOT_NODE: usize = 0;

impl MergedIndex {
    /// Overlays `sources`, given highest priority first.
    pub fn build(sources: &[SourceList]) -> MergedIndex {
        let mut ix = MergedIndex {
            nodes: vec![MNode {
                name: String::new(),
                parent: ROOT_NODE,
                hits: Vec::new(),
                children: HashMap::new(),
            }],
        };
        for (s, list) in sources.iter().enumerate() {
            for (e, entry) in list.entries.iter().enumerate() {
                ix.insert(s, e, entry);
            }
        }
        ix
    }

    fn insert(&mut self, source: usize, entry: usize, e: &SourceEntry) {
        let comps: Vec<&str> = e.path.split('/').filter(|c| !c.is_empty()).collect();
        let mut node = ROOT_NODE;
        let mut real = String::new();
        for (i, comp) in comps.iter().enumerate() {
            let last = i + 1 == comps.len();
            if !real.is_empty() {
                real.push('/');
            }
            real.push_str(comp);
            let shown = safe_component(comp.as_bytes());
            let key = shown.to_ascii_lowercase();
            node = match self.nodes.get(node).and_then(|n| n.children.get(&key)) {
                Some(&c) => c,
                None => {
                    let c = self.nodes.len();
                    self.nodes.push(MNode {
                        name: shown,
                        parent: node,
                        hits: Vec::new(),
                        children: HashMap::new(),
                    });
                    if let Some(p) = self.nodes.get_mut(node) {
                        p.children.insert(key, c);
                    }
                    c
                }
            };
            let dir = !last || e.dir;
            let Some(n) = self.nodes.get_mut(node) else {
                return;
            };
            match n
                .hits
                .iter_mut()
                .find(|h| h.source == source && h.path == real)
            {
                // an implied folder listed later by itself: now it has an entry
                Some(h) if last && h.dir && dir && h.entry.is_none() => h.entry = Some(entry),
                Some(_) => {}
                None => {
                    if n.hits.is_empty() {
                        n.name = safe_component(comp.as_bytes());
                    }
                    n.hits.push(Hit {
                        source,
                        path: real.clone(),
                        dir,
                        entry: last.then_some(entry),
                    });
                }
            }
        }
    }

    /// Number of nodes (also hidden ones).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when no source has any entry.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    /// Every source holding node `n`, highest priority first (the winner first).
    pub fn hits(&self, n: usize) -> &[Hit] {
        self.nodes.get(n).map_or(&[], |x| &x.hits)
    }

    /// The winning source of `n` (`None` for the root).
    pub fn winner(&self, n: usize) -> Option<&Hit> {
        self.hits(n).first()
    }

    /// True when `n` is shown as a folder (the root is one).
    pub fn is_dir(&self, n: usize) -> bool {
        n == ROOT_NODE || self.winner(n).is_some_and(|h| h.dir)
    }

    /// The shown name of `n` (empty for the root).
    pub fn name(&self, n: usize) -> &str {
        self.nodes.get(n).map_or("", |x| x.name.as_str())
    }

    /// The parent of `n` (the root is its own parent).
    pub fn parent(&self, n: usize) -> usize {
        self.nodes.get(n).map_or(ROOT_NODE, |x| x.parent)
    }

    /// The shown path of `n` (`/`-separated, empty for the root).
    pub fn path(&self, n: usize) -> String {
        let mut parts = Vec::new();
        let mut cur = n;
        while cur != ROOT_NODE && parts.len() <= self.nodes.len() {
            parts.push(self.name(cur));
            cur = self.parent(cur);
        }
        parts.reverse();
        parts.join("/")
    }

    /// The child of folder `n` whose shown name is `name` (ignoring ASCII case), also if
    /// hidden.
    pub fn child_any(&self, n: usize, name: &str) -> Option<usize> {
        let key = name.to_ascii_lowercase();
        self.nodes.get(n)?.children.get(&key).copied()
    }

    /// The visible child of `n` named `name` (ignoring ASCII case): `n` must be a folder.
    pub fn child(&self, n: usize, name: &str) -> Option<usize> {
        if !self.is_dir(n) {
            return None;
        }
        self.child_any(n, name)
    }

    /// The visible children of folder `n`, sorted by shown name (none for a file).
    pub fn children(&self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self.children_unordered(n).collect();
        v.sort_by(|&a, &b| self.name(a).cmp(self.name(b)));
        v
    }

    /// The visible children of folder `n` in no particular order (none for a file): for
    /// counting, where sorting would cost more than the count.
    pub fn children_unordered(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .get(n)
            .filter(|_| self.is_dir(n))
            .into_iter()
            .flat_map(|x| x.children.values().copied())
    }

    /// The node at `path` (components ignoring ASCII case), also if hidden by a file above.
    pub fn find_any(&self, path: &str) -> Option<usize> {
        let mut n = ROOT_NODE;
        for comp in path.split('/').filter(|c| !c.is_empty() && *c != ".") {
            n = self.child_any(n, comp)?;
        }
        Some(n)
    }

    /// The visible node at `path`.
    pub fn lookup(&self, path: &str) -> Option<usize> {
        let n = self.find_any(path)?;
        self.hidden_by(n).is_none().then_some(n)
    }

    /// The nearest ancestor of `n` shown as a file (which hides `n`), if any.
    pub fn hidden_by(&self, n: usize) -> Option<usize> {
        let mut cur = self.parent(n);
        let mut steps = 0;
        while cur != ROOT_NODE && steps <= self.nodes.len() {
            if !self.is_dir(cur) {
                return Some(cur);
            }
            cur = self.parent(cur);
            steps += 1;
        }
        None
    }

    /// Visible sub-folders of `n`.
    pub fn subdirs(&self, n: usize) -> usize {
        self.children(n)
            .into_iter()
            .filter(|&c| self.is_dir(c))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(entries: &[(&str, bool)]) -> SourceList {
        SourceList {
            entries: entries
                .iter()
                .map(|(p, d)| SourceEntry {
                    path: p.to_string(),
                    dir: *d,
                })
                .collect(),
        }
    }

    /// Every visible path with its winner source, sorted, folders marked with `/`.
    fn tree(ix: &MergedIndex) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![ROOT_NODE];
        while let Some(n) = stack.pop() {
            for c in ix.children(n) {
                let w = ix.winner(c).unwrap().source;
                let slash = if ix.is_dir(c) { "/" } else { "" };
                out.push(format!("{}{slash} {w}", ix.path(c)));
                stack.push(c);
            }
        }
        out.sort();
        out
    }

    #[test]
    fn higher_source_wins_and_lower_is_shadowed() {
        let a = src(&[("units/armcom.fbi", false)]);
        let b = src(&[("UNITS/ARMCOM.FBI", false), ("units/corcom.fbi", false)]);
        let ix = MergedIndex::build(&[a, b]);
        assert_eq!(
            tree(&ix),
            ["units/ 0", "units/armcom.fbi 0", "units/corcom.fbi 1"]
        );
        let n = ix.lookup("Units/ArmCom.fbi").unwrap();
        let hits: Vec<(usize, &str)> = ix
            .hits(n)
            .iter()
            .map(|h| (h.source, h.path.as_str()))
            .collect();
        assert_eq!(hits, [(0, "units/armcom.fbi"), (1, "UNITS/ARMCOM.FBI")]);
    }

    #[test]
    fn spelling_is_the_winners() {
        // the lower source lists the folder first; the shown name still comes from source 0
        let a = src(&[("Anims/x.gaf", false)]);
        let b = src(&[("ANIMS", true), ("anims/Y.GAF", false)]);
        let ix = MergedIndex::build(&[a, b]);
        assert_eq!(tree(&ix), ["Anims/ 0", "Anims/Y.GAF 1", "Anims/x.gaf 0"]);
        let ix = MergedIndex::build(&[src(&[("ANIMS", true)]), src(&[("Anims/x.gaf", false)])]);
        assert_eq!(tree(&ix), ["ANIMS/ 0", "ANIMS/x.gaf 1"]);
    }

    #[test]
    fn file_over_folder_hides_the_folder() {
        let loose = src(&[("units", false), ("maps/a.tnt", false)]);
        let arch = src(&[("UNITS/armcom.fbi", false), ("Maps", false)]);
        let ix = MergedIndex::build(&[loose, arch]);
        assert_eq!(tree(&ix), ["maps/ 0", "maps/a.tnt 0", "units 0"]);
        // the hidden member is known, and what hides it
        let hidden = ix.find_any("units/armcom.fbi").unwrap();
        assert!(ix.lookup("units/armcom.fbi").is_none());
        assert_eq!(ix.hidden_by(hidden), ix.lookup("units"));
        // the lower file `Maps` is shadowed by the folder
        let m = ix.lookup("MAPS").unwrap();
        assert!(ix.is_dir(m));
        assert_eq!(ix.hits(m).len(), 2);
        assert!(!ix.hits(m)[1].dir);
        assert!(ix
            .child(ix.lookup("units").unwrap(), "armcom.fbi")
            .is_none());
    }

    #[test]
    fn folder_over_file_when_the_folder_ranks_higher() {
        let a = src(&[("units/armcom.fbi", false)]);
        let b = src(&[("Units", false)]);
        let ix = MergedIndex::build(&[a, b]);
        assert_eq!(tree(&ix), ["units/ 0", "units/armcom.fbi 0"]);
    }

    #[test]
    fn case_duplicates_in_one_source_merge_first_wins() {
        let loose = src(&[("A/x", false), ("a/X", false), ("a/y", false)]);
        let ix = MergedIndex::build(&[loose]);
        assert_eq!(tree(&ix), ["A/ 0", "A/x 0", "A/y 0"]);
        let x = ix.lookup("a/x").unwrap();
        assert_eq!(ix.hits(x)[0].path, "A/x");
        assert_eq!(ix.hits(x)[1].path, "a/X");
    }

    #[test]
    fn hostile_names_are_made_safe() {
        let s = src(&[
            ("../etc/passwd", false),
            ("./a//b", false),
            ("c:d", false),
            ("e\u{1}f", false),
        ]);
        let ix = MergedIndex::build(&[s]);
        assert_eq!(
            tree(&ix),
            [
                "_../ 0",
                "_../etc/ 0",
                "_../etc/passwd 0",
                "_./ 0",
                "_./a/ 0",
                "_./a/b 0",
                "c_d 0",
                "e_f 0"
            ]
        );
        // reading goes to the source's own spelling
        let n = ix.lookup("c_d").unwrap();
        assert_eq!(ix.winner(n).unwrap().path, "c:d");
        assert!(ix.lookup("..").is_none() && ix.lookup("_..").is_some());
        // lookups are by shown name: the raw name is not a second name
        assert!(ix.lookup("c:d").is_none());
    }

    #[test]
    fn explicit_and_implied_folders() {
        let s = src(&[("a/b/c", false), ("a/b", true), ("empty", true)]);
        let ix = MergedIndex::build(&[s]);
        assert_eq!(tree(&ix), ["a/ 0", "a/b/ 0", "a/b/c 0", "empty/ 0"]);
        let b = ix.lookup("a/b").unwrap();
        assert_eq!(ix.hits(b).len(), 1);
        assert_eq!(ix.hits(b)[0].entry, Some(1));
        assert_eq!(ix.hits(ix.lookup("a").unwrap())[0].entry, None);
        assert_eq!(ix.subdirs(ROOT_NODE), 2);
    }

    #[test]
    fn default_priority_order() {
        let p = Priority::default();
        assert_eq!(p.to_string(), "loose,gp3,gpf,ccx,ufo,hpi");
        let names: Vec<String> = [
            "totala1.hpi",
            "rev31.GP3",
            "ccdata.ccx",
            "Zmod.ufo",
            "amod.UFO",
            "totala2.hpi",
            "x.gpf",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let got: Vec<String> = p
            .order(&names)
            .iter()
            .map(|s| match s {
                Slot::Loose => "loose".to_string(),
                Slot::Archive(i) => names[*i].clone(),
            })
            .collect();
        assert_eq!(
            got,
            [
                "loose",
                "rev31.GP3",
                "x.gpf",
                "ccdata.ccx",
                "amod.UFO",
                "Zmod.ufo",
                "totala1.hpi",
                "totala2.hpi"
            ]
        );
    }

    #[test]
    fn custom_priority_goes_in_front_of_the_default() {
        let names: Vec<String> = ["b.hpi", "a.ufo", "c.gp3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let p: Priority = "B.HPI, *.ufo".parse().unwrap();
        assert_eq!(p.to_string(), "b.hpi,ufo,loose,gp3,gpf,ccx,hpi");
        assert_eq!(
            p.order(&names),
            [
                Slot::Archive(0),
                Slot::Archive(1),
                Slot::Loose,
                Slot::Archive(2)
            ]
        );
        let p: Priority = "hpi,ufo,gp3,loose".parse().unwrap();
        assert_eq!(
            p.order(&names),
            [
                Slot::Archive(0),
                Slot::Archive(1),
                Slot::Archive(2),
                Slot::Loose
            ]
        );
        for bad in ["zip", "units/a.hpi", "loose2", ".hpi.x"] {
            assert!(bad.parse::<Priority>().is_err(), "{bad}");
        }
    }
}
