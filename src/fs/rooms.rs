//! The import graph between the rooms of `src/fs` (a file `x.rs` or a folder `x/` is a
//! room), read from the sources: which room names which through `crate::fs::…` or `super::…`
//! outside comments and tests. Cycles are not allowed ([`KNOWN`] lists none).
//! `cargo test --lib fs::rooms -- --nocapture` prints the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Imports that close a cycle, each with what makes it: none is left, and none may come.
const KNOWN: [(&str, &str); 0] = [];

/// The `.rs` files of room `path` (one file, or every file under a folder).
fn files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut kids: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        kids.sort();
        for k in kids {
            files(&k, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The rooms each room imports.
fn graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut rooms: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "mod" || !(p.is_dir() || p.extension().is_some_and(|e| e == "rs")) {
            continue;
        }
        let mut f = Vec::new();
        files(&p, &mut f);
        rooms.insert(name, f);
    }
    let names: BTreeSet<String> = rooms.keys().cloned().collect();
    let mut g = BTreeMap::new();
    for (room, fs) in &rooms {
        let mut deps = BTreeSet::new();
        for f in fs {
            let rel = f.strip_prefix(root).unwrap();
            let depth = rel.components().count();
            let mod_rs = f.file_name().is_some_and(|n| n == "mod.rs");
            // the prefix that names a sibling room from this file
            let up = if depth == 1 || (depth == 2 && mod_rs) {
                "super::"
            } else {
                "super::super::"
            };
            let text = std::fs::read_to_string(f).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for line in code.lines() {
                let line = line.split("//").next().unwrap_or("");
                for prefix in ["crate::fs::", up] {
                    for (i, _) in line.match_indices(prefix) {
                        let rest = &line[i + prefix.len()..];
                        let named: Vec<&str> = match rest.strip_prefix('{') {
                            Some(group) => group
                                .split('}')
                                .next()
                                .unwrap_or("")
                                .split(',')
                                .map(|s| s.trim().split("::").next().unwrap_or(""))
                                .collect(),
                            None => vec![rest
                                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                                .next()
                                .unwrap_or("")],
                        };
                        for n in named {
                            if n != room && names.contains(n) {
                                deps.insert(n.to_string());
                            }
                        }
                    }
                }
            }
        }
        g.insert(room.clone(), deps);
    }
    g
}

/// Whether `to` is reached from `from`.
fn reaches(g: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(r) = stack.pop() {
        for d in g.get(&r).into_iter().flatten() {
            if d == to {
                return true;
            }
            if seen.insert(d.clone()) {
                stack.push(d.clone());
            }
        }
    }
    false
}

#[test]
fn the_rooms_of_fs_import_each_other_without_new_cycles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/fs");
    let g = graph(&root);
    for (room, deps) in &g {
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        println!("{room} -> {}", deps.join(", "));
    }
    assert!(g["writeback"].contains("core") && g["core"].contains("staging"));
    let mut g = g;
    for (from, to) in KNOWN {
        assert!(
            g.get_mut(from).is_some_and(|d| d.remove(to)),
            "{from} -> {to} is gone"
        );
    }
    let mut cycles = BTreeSet::new();
    for a in g.keys() {
        for b in g.keys() {
            if a < b && reaches(&g, a, b) && reaches(&g, b, a) {
                cycles.insert((a.as_str(), b.as_str()));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "rooms of src/fs importing each other: {cycles:?}"
    );
}
