//! Times of generated files across commits: which mtime a file of the new version shows
//! (the records are [`Times`], kept by the write-back state, `fs::staging::times`).

use crate::fs::core::Core;
use crate::fs::layout::Layout;
use crate::fs::shared::{fingerprint, folder_fingerprint, lock, time};
use crate::fs::stage::Ident;
use crate::fs::staging::times::{parts, Before, Prev, TIMES_KEEP};
use crate::view::View;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

impl Core {
    /// The mtime generated `vpath` of asset `rel` shows, the binary being `binary`: the one
    /// it showed before the last commit(s) when its fingerprint `fp` did not change, else the
    /// binary's. `dir`: a folder (compared by its names).
    pub(in crate::fs) fn kept_mtime(
        &self,
        rel: &Path,
        binary: &std::fs::Metadata,
        vpath: &str,
        dir: bool,
        fp: impl FnOnce() -> Option<u64>,
    ) -> SystemTime {
        use std::os::unix::fs::MetadataExt;
        let now = time(binary.mtime(), binary.mtime_nsec());
        if !self.writeback() {
            return now;
        }
        let staged = self.staging(rel);
        let ident = Ident::of(binary);
        {
            let mut t = lock(&staged.times);
            t.load();
            if t.kept.is_empty() && t.prev.is_none() {
                // nothing committed here: every file shows the binary's time
                return now;
            }
        }
        // rendered without the lock held (a render takes the asset's state lock, which a
        // decode holds while it takes the staging lock, which a commit holds while it takes
        // this one)
        let Some(fp) = fp() else { return now };
        let prev = {
            let t = lock(&staged.times);
            if let Some(&(h, s, n)) = t.kept.get(vpath) {
                if h == fp {
                    return time(s, i64::from(n));
                }
            }
            // what the replaced version had at this path: a folder's names, or a file to render
            let before = t.prev.as_ref().filter(|p| p.by == ident).map(|p| {
                let old = if dir {
                    Before::Folder(p.layout.children(vpath).map(|k| folder_fingerprint(&k)))
                } else if p.layout.is_dir(vpath) == Some(false) {
                    Before::File(p.view.clone(), p.key.clone())
                } else {
                    Before::Folder(None)
                };
                (old, p.mtime)
            });
            (fp, before)
        };
        let (fp, before) = prev;
        let shown = match before {
            Some((old, mtime)) => {
                let old_fp = match old {
                    Before::Folder(f) => f,
                    // rendered outside the lock: other files of the asset are not held up
                    Before::File(view, key) => self
                        .cache
                        .fingerprint(&key, vpath)
                        .or_else(|| view.render_vec(vpath).ok().map(|b| fingerprint(&b))),
                };
                if old_fp == Some(fp) {
                    mtime
                } else {
                    now
                }
            }
            None => now,
        };
        let mut t = lock(&staged.times);
        let (s, n) = parts(shown);
        t.kept.insert(vpath.to_string(), (fp, s, n));
        t.dirty = true;
        shown
    }

    /// Before the mount ends: every generated file and folder of an asset whose last commit
    /// this mount made, not looked at since, is decided now (see [`Core::kept_mtime`]) and
    /// recorded, so a push after a remount finds the times it left whatever was looked at
    /// before the unmount (the version the commit replaced, kept in memory only, is gone
    /// then). Archives keep their members' times their own way.
    pub(in crate::fs) fn settle_times(&self) {
        for (rel, staged) in self.wb.all() {
            if crate::fs::core::is_archive_path(&rel) {
                continue;
            }
            let pending = lock(&staged.times).prev.as_ref().map(|p| p.by.clone());
            let Some(by) = pending else { continue };
            let Ok(crate::fs::core::Resolved::Asset { gen, layout, meta }) = self.resolve(&rel)
            else {
                continue;
            };
            if Ident::of(&meta) != by {
                continue;
            }
            let mut stack = vec![String::new()];
            let mut seen = 0usize;
            while let Some(dir) = stack.pop() {
                // (the parts of a view listed lazily: expanded as a listing would)
                self.expand(&rel, &layout, &dir, true);
                self.kept_mtime(&rel, &meta, &dir, true, || {
                    layout.children(&dir).map(|k| folder_fingerprint(&k))
                });
                for (name, is_dir) in layout.children(&dir).unwrap_or_default() {
                    seen += 1;
                    if seen > TIMES_KEEP {
                        break;
                    }
                    let p = if dir.is_empty() {
                        name
                    } else {
                        format!("{dir}/{name}")
                    };
                    if is_dir {
                        stack.push(p);
                    } else {
                        self.kept_mtime(&rel, &meta, &p, false, || {
                            let b = self.render(&rel, gen, &layout, &p).ok()?;
                            Some(fingerprint(&b))
                        });
                    }
                }
            }
            lock(&staged.times).flush();
        }
    }

    /// A commit of `rel` replaced the version decoded as `old` (binary `old_meta`) by binary
    /// `by`: the records so far are written, and `old` is kept to compare the new version's
    /// files with.
    pub(in crate::fs) fn committed_times(
        &self,
        rel: &Path,
        old: Option<Arc<dyn View>>,
        old_meta: Option<&std::fs::Metadata>,
        by: Ident,
    ) {
        use std::os::unix::fs::MetadataExt;
        let staged = self.staging(rel);
        let mut t = lock(&staged.times);
        t.load();
        t.flush();
        t.prev = match (old, old_meta) {
            (Some(view), Some(m)) => Some(Prev {
                key: (rel.to_path_buf(), Ident::of(m)),
                layout: Layout::new(&*view),
                view,
                by,
                mtime: time(m.mtime(), m.mtime_nsec()),
            }),
            _ => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_before_the_epoch_round_trip() {
        for (s, n) in [(0i64, 0i64), (5, 7), (-1, 0), (-3, 250_000_000)] {
            let t = time(s, n);
            let (s2, n2) = parts(t);
            assert_eq!(time(s2, i64::from(n2)), t, "{s}.{n}");
        }
    }
}
