//! Times of generated files across commits (SEMANTICS.md, "Commit"): a generated file whose
//! bytes did not change in a commit — or a generated folder whose names did not — keeps the
//! mtime it showed before, so a second `rsync -a`, `cp -a`, `git checkout` of the same tree
//! finds it as it left it.
//!
//! Decided lazily, when a file of the new version is first looked at: its fingerprint (size
//! and CRC-32 of its bytes) is compared with the record of what that path showed (`kept`,
//! persisted in the asset's staging folder as `times.json`) and, when there is none, with the
//! same path of the version the last commit replaced (kept decoded in memory until the next
//! commit). A commit thus renders nothing more than before; a file first looked at after the
//! version after next is compared with the record only.

use super::member_times::MemberTimes;
use crate::fs::core::Core;
use crate::fs::layout::Layout;
use crate::fs::shared::{fingerprint, folder_fingerprint, lock, time};
use crate::fs::stage::Ident;
use crate::view::View;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The file the records are kept in, in the asset's staging folder.
pub(in crate::fs) const TIMES: &str = "times.json";

/// Records kept per asset at most (the oldest fingerprints go first).
const TIMES_KEEP: usize = 1 << 16;

/// The version a commit replaced, kept to compare the new version's files with.
struct Prev {
    view: Arc<dyn View>,
    /// Its cache key: the fingerprints of files it rendered are known without rendering.
    key: (PathBuf, Ident),
    layout: Layout,
    /// The binary it was replaced by (only files of that version are compared with it).
    by: Ident,
    /// What its generated files showed without a record: the binary's mtime.
    mtime: SystemTime,
}

/// What the replaced version had at a path.
enum Before {
    /// A folder's fingerprint (`None`: nothing, or not a folder).
    Folder(Option<u64>),
    /// A file, to render from this view (its cache key given).
    File(Arc<dyn View>, (PathBuf, Ident)),
}

/// An asset's records of the times its generated files show.
pub(in crate::fs) struct Times {
    file: Option<PathBuf>,
    loaded: bool,
    dirty: bool,
    /// Path → (fingerprint, seconds, nanoseconds) of the mtime it shows with these bytes.
    kept: HashMap<String, (u64, i64, u32)>,
    prev: Option<Prev>,
    /// An archive's: what its plain members and folders showed when they left the staging
    /// area.
    pub(in crate::fs) members: MemberTimes,
}

impl Times {
    /// The records of the asset whose staging folder is `dir` (none without write-back).
    pub(in crate::fs) fn new(dir: Option<&Path>) -> Times {
        Times {
            file: dir.map(|d| d.join(TIMES)),
            loaded: false,
            dirty: false,
            kept: HashMap::new(),
            prev: None,
            members: MemberTimes::new(dir),
        }
    }

    fn load(&mut self) {
        if self.loaded {
            return;
        }
        self.loaded = true;
        if let Some(m) = read_record(self.file.as_deref()) {
            self.kept = m;
        }
    }

    /// Writes the records if they changed since last written.
    pub(in crate::fs) fn flush(&mut self) {
        self.members.flush();
        if !self.dirty {
            return;
        }
        let Some(f) = &self.file else { return };
        if self.kept.len() > TIMES_KEEP {
            // a bounded record: the oldest times go first
            let mut v: Vec<(String, (u64, i64, u32))> = self.kept.drain().collect();
            v.sort_by_key(|(_, (_, s, n))| std::cmp::Reverse((*s, *n)));
            v.truncate(TIMES_KEEP);
            self.kept = v.into_iter().collect();
        }
        if let Ok(b) = serde_json::to_vec(&self.kept) {
            if let Some(d) = f.parent() {
                let _ = std::fs::create_dir_all(d);
            }
            // a record of times, not data: not synced (a crash loses at most the times of
            // the last commits, which then fall back to the binary's)
            if crate::atomic::write_unsynced(f, &b).is_ok() {
                self.dirty = false;
            }
        }
    }
}

impl Drop for Times {
    fn drop(&mut self) {
        self.flush();
    }
}

/// A record kept in the staging folder (`file`), if it is there and reads as one (else
/// nothing is recorded: what it held falls back to the binary's times).
pub(in crate::fs) fn read_record<T: serde::de::DeserializeOwned>(file: Option<&Path>) -> Option<T> {
    let b = std::fs::read(file?).ok()?;
    serde_json::from_slice(&b).ok()
}

fn parts(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        ),
        Err(e) => {
            let d = e.duration();
            let (s, n) = (
                i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                d.subsec_nanos(),
            );
            if n == 0 {
                (-s, 0)
            } else {
                (-s - 1, 1_000_000_000 - n)
            }
        }
    }
}

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
        let asset = self.slot(rel);
        let ident = Ident::of(binary);
        {
            let mut t = lock(&asset.times);
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
            let t = lock(&asset.times);
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
        let mut t = lock(&asset.times);
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
        let assets: Vec<PathBuf> = lock(&self.assets).keys().cloned().collect();
        for rel in assets {
            if crate::fs::core::is_archive_path(&rel) {
                continue;
            }
            let pending = {
                let asset = self.slot(&rel);
                let t = lock(&asset.times);
                t.prev.as_ref().map(|p| p.by.clone())
            };
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
            lock(&self.slot(&rel).times).flush();
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
        let asset = self.slot(rel);
        let mut t = lock(&asset.times);
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
