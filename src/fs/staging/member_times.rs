//! Times and permission bits of an archive's plain members and folders across commits
//! (SEMANTICS.md, "Writing inside archives"). An archive stores neither, and a staged member
//! file or folder leaves the staging area once committed; what it showed then (its mtime
//! and permission bits) is recorded here, for the archive version it is in, so a second
//! `rsync -a` or `cp -a` of the same tree finds every member as it left it.
//!
//! The record is of one version of the archive (its [`Ident`]): a commit of the mount
//! carries it to the version it writes (paths it deletes go, paths it moves move), and a
//! version the record is not of (the archive replaced outside the mount) shows the archive's
//! time and mode as before. Kept in the archive's staging folder as `members.json`, written
//! without syncing (a record of times: a crash loses the times of the last commits, which
//! then fall back to the archive's).

use crate::fs::stage::Ident;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The file the record is kept in, in the archive's staging folder.
pub(in crate::fs) const MEMBER_TIMES: &str = "members.json";

/// Entries kept at most (an archive holds at most this order of members).
const KEEP: usize = 1 << 17;

/// The least time between two writes of the record by files leaving the staging area.
const SAVE_GAP: Duration = Duration::from_secs(1);

/// What a member file or folder showed when it left the staging area.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(in crate::fs) struct Shown {
    /// Modification time: seconds, nanoseconds.
    pub s: i64,
    pub n: u32,
    /// Permission bits (`0o777` at most).
    pub mode: u32,
    /// A folder (a record of a file never applies to a folder of that name, and back).
    pub dir: bool,
}

impl Shown {
    /// What staged file or folder `m` shows.
    pub(in crate::fs) fn of(m: &std::fs::Metadata) -> Shown {
        Shown {
            s: m.mtime(),
            n: u32::try_from(m.mtime_nsec()).unwrap_or(0),
            mode: m.mode() & 0o777,
            dir: m.is_dir(),
        }
    }

    /// Its mtime.
    pub(in crate::fs) fn mtime(&self) -> std::time::SystemTime {
        crate::fs::shared::time(self.s, i64::from(self.n))
    }
}

#[derive(Default, Serialize, Deserialize)]
struct Record {
    /// The archive version the entries are of.
    of: Option<Ident>,
    entries: BTreeMap<String, Shown>,
}

/// An archive's record of what its members show.
pub(in crate::fs) struct MemberTimes {
    file: Option<PathBuf>,
    loaded: bool,
    rec: Record,
    /// Changed since last written.
    dirty: bool,
    /// When last written (files leaving one by one write it at most once a second).
    saved: Option<Instant>,
}

impl MemberTimes {
    /// The record of the archive whose staging folder is `dir` (none without write-back).
    pub(in crate::fs) fn new(dir: Option<&Path>) -> MemberTimes {
        MemberTimes {
            file: dir.map(|d| d.join(MEMBER_TIMES)),
            loaded: false,
            rec: Record::default(),
            dirty: false,
            saved: None,
        }
    }

    fn load(&mut self) {
        if self.loaded {
            return;
        }
        self.loaded = true;
        if let Some(r) = super::times::read_record(self.file.as_deref()) {
            self.rec = r;
        }
    }

    /// Writes the record if it changed since last written.
    pub(in crate::fs) fn flush(&mut self) {
        if self.dirty {
            self.save();
        }
    }

    fn save(&mut self) {
        self.dirty = false;
        self.saved = Some(Instant::now());
        let Some(f) = &self.file else { return };
        while self.rec.entries.len() > KEEP {
            self.rec.entries.pop_last();
        }
        if let Ok(b) = serde_json::to_vec(&self.rec) {
            if let Some(d) = f.parent() {
                let _ = std::fs::create_dir_all(d);
            }
            let _ = crate::atomic::write_unsynced(f, &b);
        }
    }

    /// What `vpath` (a folder when `dir`) shows in archive version `of`, if recorded.
    pub(in crate::fs) fn get(&mut self, of: &Ident, vpath: &str, dir: bool) -> Option<Shown> {
        self.file.as_ref()?;
        self.load();
        if self.rec.of.as_ref() != Some(of) {
            return None;
        }
        self.rec
            .entries
            .get(vpath)
            .copied()
            .filter(|e| e.dir == dir)
    }

    /// A commit replaced archive version `from` by `to`: the entries go along, except those
    /// of paths it deleted (`removed`, with what is under them); `moved` (from, to): an
    /// entry it renamed, with what is under it.
    pub(in crate::fs) fn committed(
        &mut self,
        from: &Ident,
        to: &Ident,
        removed: &[String],
        moved: Option<(&str, &str)>,
    ) {
        if self.file.is_none() {
            return;
        }
        self.load();
        if self.rec.of.as_ref() != Some(from) {
            self.rec.entries.clear();
        }
        self.rec.of = Some(to.clone());
        let under = |p: &str, top: &str| {
            p == top
                || p.strip_prefix(top)
                    .is_some_and(|rest| rest.starts_with('/') || top.is_empty())
        };
        self.rec
            .entries
            .retain(|p, _| !removed.iter().any(|r| under(p, r)));
        if let Some((a, b)) = moved {
            let taken: Vec<(String, Shown)> = self
                .rec
                .entries
                .iter()
                .filter(|(p, _)| !a.is_empty() && under(p, a))
                .map(|(p, e)| (p.clone(), *e))
                .collect();
            for (p, e) in taken {
                self.rec.entries.remove(&p);
                let rest = p.get(a.len()..).unwrap_or_default();
                self.rec.entries.insert(format!("{b}{rest}"), e);
            }
        }
        self.save();
    }

    /// Staged files and folders left the staging area of archive version `of`, showing
    /// what `left` gives.
    pub(in crate::fs) fn left(&mut self, of: &Ident, left: Vec<(String, Shown)>) {
        if self.file.is_none() || left.is_empty() {
            return;
        }
        self.load();
        if self.rec.of.as_ref() != Some(of) {
            // the archive changed outside the mount since: what was recorded is of another
            self.rec.entries.clear();
            self.rec.of = Some(of.clone());
        }
        self.rec.entries.extend(left);
        // one per file of an `rsync` that commits nothing: written at most once a second
        // (and by the next commit, and at the end of the mount: `Writeback::flush_times`)
        self.dirty = true;
        if !self.saved.is_some_and(|t| t.elapsed() < SAVE_GAP) {
            self.save();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident(size: u64) -> Ident {
        Ident {
            size,
            mtime: (1, 0),
            ctime: (1, 0),
            ino: 7,
            dev: 1,
        }
    }

    fn shown(s: i64, dir: bool) -> Shown {
        Shown {
            s,
            n: 0,
            mode: 0o640,
            dir,
        }
    }

    #[test]
    fn records_follow_the_mount_s_commits_and_only_them() {
        let tmp = tempfile::tempdir().unwrap();
        let mut m = MemberTimes::new(Some(tmp.path()));
        let (v1, v2, v3) = (ident(1), ident(2), ident(3));
        m.left(
            &v1,
            vec![
                ("a/x.txt".into(), shown(10, false)),
                ("a".into(), shown(11, true)),
                ("ab.txt".into(), shown(12, false)),
                ("b/y.txt".into(), shown(13, false)),
            ],
        );
        assert_eq!(m.get(&v1, "a/x.txt", false), Some(shown(10, false)));
        assert_eq!(m.get(&v1, "a", false), None, "a file's record of a folder");
        assert_eq!(m.get(&v2, "a/x.txt", false), None, "another version");
        // a commit deleting `a` and moving `b` to `c`
        m.committed(&v1, &v2, &["a".into()], Some(("b", "c")));
        assert_eq!(m.get(&v2, "a/x.txt", false), None);
        assert_eq!(m.get(&v2, "a", true), None);
        assert_eq!(m.get(&v2, "ab.txt", false), Some(shown(12, false)));
        assert_eq!(m.get(&v2, "c/y.txt", false), Some(shown(13, false)));
        assert_eq!(m.get(&v2, "b/y.txt", false), None);
        // read again from the file
        let mut again = MemberTimes::new(Some(tmp.path()));
        assert_eq!(again.get(&v2, "c/y.txt", false), Some(shown(13, false)));
        // a commit from a version the record is not of (replaced outside) starts afresh
        again.committed(&v3, &ident(4), &[], None);
        assert_eq!(again.get(&ident(4), "ab.txt", false), None);
        // as does a file leaving the staging area of another version
        m.left(&v3, vec![("z.txt".into(), shown(1, false))]);
        assert_eq!(m.get(&v3, "ab.txt", false), None);
        assert_eq!(m.get(&v3, "z.txt", false), Some(shown(1, false)));
    }

    #[test]
    fn without_a_staging_folder_nothing_is_recorded() {
        let mut m = MemberTimes::new(None);
        m.left(&ident(1), vec![("a.txt".into(), shown(1, false))]);
        assert_eq!(m.get(&ident(1), "a.txt", false), None);
    }
}
