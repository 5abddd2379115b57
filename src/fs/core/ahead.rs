//! Rendering ahead of a listing: a folder walk (`ls -lR`, a file manager, `rsync`) lists the
//! asset folders of a real folder one after the other, and each listing needs the size of
//! every generated file, so every file rendered. While the kernel's request for one asset is
//! served, a worker renders the next assets of the same folder in the order the walk takes
//! them (by name), so both cores work and no asset waits behind another's rendering.
//!
//! Only the next [`AHEAD`] assets after the one the kernel entered last are queued: a
//! listing of one folder renders a few assets more, not the whole game. What the worker
//! renders lands where the request would have put it (the sizes in the asset's layout, the
//! bytes in the cache within `--cache-size`, renders leased from the same budget); a file
//! the kernel asks for while the worker renders it waits for that one rendering
//! (single-flight), and a file without room now is left to the request.

use super::assets::Resolved;
use super::{is_archive_path, Core};
use crate::fs::layout::Layout;
use crate::fs::shared::{join, lock};
use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

/// Assets queued after the one entered last.
const AHEAD: usize = 6;
/// Real folders whose sorted asset names are kept (the folders listed last).
const FOLDERS: usize = 64;
/// Assets remembered as queued once (forgotten all at once beyond this).
const SEEN_MAX: usize = 1 << 17;

/// The queue of assets to render ahead, shared by the core and its workers.
#[derive(Default)]
pub(in crate::fs) struct Ahead {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// Assets to render, in order.
    queue: VecDeque<PathBuf>,
    /// Assets queued once (never queued again).
    seen: HashSet<PathBuf>,
    /// The asset names of the real folders listed last, sorted, oldest listing first.
    folders: VecDeque<(PathBuf, Arc<Vec<OsString>>)>,
    /// Workers running.
    workers: usize,
}

impl Ahead {
    /// A real folder `dir` was listed with these asset binaries: the first ones are queued
    /// (a walk enters them next).
    pub(in crate::fs) fn listed(&self, dir: &Path, mut assets: Vec<OsString>) {
        // (an archive is a walk of its own, member by member)
        assets.retain(|n| !is_archive_path(Path::new(n)));
        assets.sort_by_cached_key(|n| n.to_ascii_lowercase());
        let assets = Arc::new(assets);
        let mut st = lock(&self.state);
        if st.workers == 0 {
            return;
        }
        st.folders.retain(|(d, _)| d != dir);
        if st.folders.len() >= FOLDERS {
            st.folders.pop_front();
        }
        st.folders.push_back((dir.to_path_buf(), assets.clone()));
        let first: Vec<PathBuf> = assets.iter().take(AHEAD).map(|n| dir.join(n)).collect();
        st.push(first);
        drop(st);
        self.wake.notify_all();
    }

    /// The kernel entered asset folder `rel`: the assets after it in its folder are queued.
    pub(in crate::fs) fn entered(&self, rel: &Path) {
        let (Some(dir), Some(name)) = (rel.parent(), rel.file_name()) else {
            return;
        };
        let mut st = lock(&self.state);
        if st.workers == 0 {
            return;
        }
        let Some(names) = st
            .folders
            .iter()
            .find(|(d, _)| d == dir)
            .map(|(_, n)| n.clone())
        else {
            return;
        };
        let key = name.to_ascii_lowercase();
        let at = names.partition_point(|n| n.to_ascii_lowercase() <= key);
        let next: Vec<PathBuf> = names
            .iter()
            .skip(at)
            .take(AHEAD)
            .map(|n| dir.join(n))
            .collect();
        st.push(next);
        drop(st);
        self.wake.notify_all();
    }

    /// The next asset to render; `None` when the core is gone (checked every second).
    fn next(&self, core: &Weak<Core>) -> Option<PathBuf> {
        let mut st = lock(&self.state);
        loop {
            if let Some(p) = st.queue.pop_front() {
                return Some(p);
            }
            if core.strong_count() == 0 {
                return None;
            }
            st = self
                .wake
                .wait_timeout(st, Duration::from_secs(1))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl State {
    fn push(&mut self, assets: Vec<PathBuf>) {
        if self.seen.len() > SEEN_MAX {
            self.seen.clear();
        }
        for a in assets {
            if self.seen.insert(a.clone()) {
                self.queue.push_back(a);
            }
        }
    }
}

impl Core {
    /// Starts the workers that render ahead of listings (one per core, 1–4: the threads
    /// serving the kernel mostly wait for its next request); they hold the core weakly and
    /// end with it.
    pub(in crate::fs) fn start_ahead(core: &Arc<Core>) -> std::io::Result<()> {
        let n = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4);
        for i in 0..n {
            let weak = Arc::downgrade(core);
            let ahead = core.ahead.clone();
            std::thread::Builder::new()
                .name(format!("tafs-ahead-{i}"))
                .spawn(move || run(ahead, weak))?;
            lock(&core.ahead.state).workers += 1;
        }
        Ok(())
    }

    /// Renders every generated file of asset `rel` whose size is not known yet, as a
    /// listing of its folders would; stops at the first file without room now.
    fn render_ahead(&self, rel: &Path) {
        let Ok(Resolved::Asset { gen, layout, .. }) = self.resolve(rel) else {
            return;
        };
        let mut dirs = vec![String::new()];
        while let Some(dir) = dirs.pop() {
            let Some(kids) = layout.children(&dir) else {
                continue;
            };
            for (name, is_dir) in kids {
                let path = join(&dir, &name);
                if is_dir {
                    dirs.push(path);
                } else if !self.sized(&layout, &path) {
                    match self.size_of(rel, gen, &layout, &path) {
                        Ok(_) => {}
                        Err(crate::fs::FsError::NoRoom) | Err(crate::fs::FsError::Stale) => return,
                        Err(_) => {}
                    }
                }
            }
        }
    }

    fn sized(&self, layout: &Layout, path: &str) -> bool {
        layout.size(path).is_some()
    }
}

/// A worker: renders the queued assets until the core is gone.
fn run(ahead: Arc<Ahead>, core: Weak<Core>) {
    while let Some(rel) = ahead.next(&core) {
        let Some(c) = core.upgrade() else { return };
        c.render_ahead(&rel);
    }
}

/// Asset names of a listing, for [`Ahead::listed`].
pub(in crate::fs) fn names_of(roots: &[(PathBuf, u64)]) -> Vec<OsString> {
    roots
        .iter()
        .filter_map(|(p, _)| p.file_name().map(|n| n.to_os_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_assets_after_the_one_entered_are_queued_once_in_name_order() {
        let a = Ahead::default();
        lock(&a.state).workers = 1;
        let names: Vec<OsString> = [
            "d.gaf", "B.GAF", "a.gaf", "c.gaf", "E.GAF", "f.gaf", "g.gaf", "h.gaf", "i.gaf",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        a.listed(Path::new("anims"), names);
        let queued = |a: &Ahead| -> Vec<String> {
            lock(&a.state)
                .queue
                .drain(..)
                .map(|p| p.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            queued(&a),
            [
                "anims/a.gaf",
                "anims/B.GAF",
                "anims/c.gaf",
                "anims/d.gaf",
                "anims/E.GAF",
                "anims/f.gaf"
            ]
        );
        a.entered(Path::new("anims/c.gaf"));
        assert_eq!(queued(&a), ["anims/g.gaf", "anims/h.gaf", "anims/i.gaf"]);
        a.entered(Path::new("anims/i.gaf"));
        assert!(queued(&a).is_empty());
        // a folder not listed: nothing to go by
        a.entered(Path::new("units/x.fbi"));
        assert!(queued(&a).is_empty());
        // without workers nothing is queued
        lock(&a.state).workers = 0;
        lock(&a.state).seen.clear();
        a.listed(Path::new("anims"), vec![OsString::from("z.gaf")]);
        assert!(queued(&a).is_empty());
    }
}
