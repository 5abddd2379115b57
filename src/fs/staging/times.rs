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
use crate::fs::layout::Layout;
use crate::fs::stage::Ident;
use crate::view::View;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// The file the records are kept in, in the asset's staging folder.
pub(in crate::fs) const TIMES: &str = "times.json";

/// Records kept per asset at most (the oldest fingerprints go first).
pub(in crate::fs) const TIMES_KEEP: usize = 1 << 16;

/// The version a commit replaced, kept to compare the new version's files with.
pub(in crate::fs) struct Prev {
    pub(in crate::fs) view: Arc<dyn View>,
    /// Its cache key: the fingerprints of files it rendered are known without rendering.
    pub(in crate::fs) key: (PathBuf, Ident),
    pub(in crate::fs) layout: Layout,
    /// The binary it was replaced by (only files of that version are compared with it).
    pub(in crate::fs) by: Ident,
    /// What its generated files showed without a record: the binary's mtime.
    pub(in crate::fs) mtime: SystemTime,
}

/// What the replaced version had at a path.
pub(in crate::fs) enum Before {
    /// A folder's fingerprint (`None`: nothing, or not a folder).
    Folder(Option<u64>),
    /// A file, to render from this view (its cache key given).
    File(Arc<dyn View>, (PathBuf, Ident)),
}

/// An asset's records of the times its generated files show.
pub(in crate::fs) struct Times {
    file: Option<PathBuf>,
    loaded: bool,
    pub(in crate::fs) dirty: bool,
    /// Path → (fingerprint, seconds, nanoseconds) of the mtime it shows with these bytes.
    pub(in crate::fs) kept: HashMap<String, (u64, i64, u32)>,
    pub(in crate::fs) prev: Option<Prev>,
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

    pub(in crate::fs) fn load(&mut self) {
        if self.loaded {
            return;
        }
        self.loaded = true;
        if let Some(m) = read_record(self.file.as_deref()) {
            self.kept = m;
        }
    }

    /// Writes the records if they changed since last written: by a commit of the asset and
    /// at the end of the mount ([`super::Writeback::flush_times`]); never when dropped.
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

/// A record kept in the staging folder (`file`), if it is there and reads as one (else
/// nothing is recorded: what it held falls back to the binary's times).
pub(in crate::fs) fn read_record<T: serde::de::DeserializeOwned>(file: Option<&Path>) -> Option<T> {
    let b = std::fs::read(file?).ok()?;
    serde_json::from_slice(&b).ok()
}

pub(in crate::fs) fn parts(t: SystemTime) -> (i64, u32) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::shared::time;

    #[test]
    fn times_before_the_epoch_round_trip() {
        for (s, n) in [(0i64, 0i64), (5, 7), (-1, 0), (-3, 250_000_000)] {
            let t = time(s, n);
            let (s2, n2) = parts(t);
            assert_eq!(time(s2, i64::from(n2)), t, "{s}.{n}");
        }
    }
}
