//! Archive commits put off while saves keep coming (SEMANTICS.md, "Writing inside
//! archives"). Every commit of an archive rewrites it whole, so the saves of its plain
//! members (close, rename onto a member), its deletions and the folders made or removed in
//! it commit together: once no such save came for [`MountOptions::archive_commit_delay`],
//! and at the latest [`MAX_WAIT`] after the first. An `rsync`, `cp -r` or `tar x` of many
//! files is then one repack instead of one per file (two for `tar x` over members: it
//! deletes each file before writing it), and a deletion followed by the same file written
//! again changes nothing. An `fsync` commits at once; so do a save inside a GAF/TNT member
//! (its rebuild is checked, and a bad one fails the save), a GAF/TNT binary copied in and a
//! folder rename, each taking along what was put off. What is put off is committed when the
//! mount ends ([`Core::finish_deferred`]) or the core is dropped.
//!
//! [`MountOptions::archive_commit_delay`]: crate::fs::MountOptions::archive_commit_delay

use super::archive::part_of;
use crate::fs::core::{is_archive_path, Core};
use crate::fs::shared::lock;
use crate::fs::stage::{Stage, Status};
use crate::fs::FsError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

/// The longest a save waits for its commit while others keep coming.
pub(in crate::fs) const MAX_WAIT: Duration = Duration::from_secs(5);

/// The archives with commits put off, and the committer's wake-up.
#[derive(Default)]
pub(in crate::fs) struct Deferred {
    due: Mutex<HashMap<PathBuf, Due>>,
    wake: Condvar,
    /// A committer runs (else every commit is made at once).
    running: AtomicBool,
    /// The core is gone: the committer stops.
    closed: AtomicBool,
    /// Held while commits put off are made (the end of the mount waits for them).
    busy: Mutex<()>,
}

/// One archive's put-off commit.
struct Due {
    first: Instant,
    last: Instant,
    trigger: String,
}

impl Due {
    fn at(&self, delay: Duration) -> Instant {
        (self.last + delay).min(self.first + MAX_WAIT)
    }
}

impl Core {
    /// Starts the thread that makes the commits put off ([`Deferred`]); without it, every
    /// archive commit is made at once. It holds the core weakly and ends with it.
    pub fn start_committer(core: &Arc<Core>) -> std::io::Result<()> {
        if core.opts.archive_commit_delay.is_zero() || !core.writeback() {
            return Ok(());
        }
        let d = core.deferred.clone();
        let weak = Arc::downgrade(core);
        d.running.store(true, Ordering::Release);
        core.defer_left_uncommitted();
        let started = std::thread::Builder::new()
            .name("tafs-commit".into())
            .spawn(move || run(d, weak));
        if started.is_err() {
            core.deferred.running.store(false, Ordering::Release);
        }
        started.map(|_| ())
    }

    /// Archives of the game folder whose staged saves a daemon that was killed left
    /// uncommitted (dirty, not in conflict) are committed after the delay, as if just saved.
    fn defer_left_uncommitted(&self) {
        let Some(sd) = &self.opts.state_dir else {
            return;
        };
        let game = std::path::absolute(&self.game_dir).unwrap_or_else(|_| self.game_dir.clone());
        let mut left = Vec::new();
        for b in &self.staged_index(sd).binaries {
            let Ok(rel) = b.strip_prefix(&game) else {
                continue;
            };
            if rel.as_os_str().is_empty() || !is_archive_path(rel) {
                continue;
            }
            let s = Stage::load(sd, b);
            if s.meta.conflict || s.meta.removing {
                continue;
            }
            if let Some(first) = s.meta.dirty.iter().next() {
                log::info!(
                    "{}: saves left uncommitted by an earlier daemon commit soon",
                    rel.display()
                );
                left.push((rel.to_path_buf(), first.clone()));
            }
        }
        let now = Instant::now();
        let mut due = lock(&self.deferred.due);
        for (rel, trigger) in left {
            due.entry(rel).or_insert(Due {
                first: now,
                last: now,
                trigger,
            });
        }
    }

    /// Commits archive `rel` after `trigger` was saved: once no other save came for the
    /// delay when a committer runs, else at once.
    pub(in crate::fs) fn commit_soon(&self, rel: &Path, trigger: &str) -> Result<(), FsError> {
        let delay = self.opts.archive_commit_delay;
        if delay.is_zero() || !self.deferred.running.load(Ordering::Acquire) {
            return self.commit(rel, trigger);
        }
        let now = Instant::now();
        {
            let mut due = lock(&self.deferred.due);
            let d = due.entry(rel.to_path_buf()).or_insert(Due {
                first: now,
                last: now,
                trigger: String::new(),
            });
            d.last = now;
            d.trigger = trigger.to_string();
        }
        self.deferred.wake.notify_all();
        let asset = self.slot(rel);
        let mut g = lock(&asset.stage);
        if let Some(s) = g.as_mut() {
            s.meta.status = Status::Deferred(format!(
                "{trigger} and the saves with it commit once no save came for {} ms",
                delay.as_millis()
            ));
            let _ = s.save();
        }
        Ok(())
    }

    /// Commits `rel` after `vpath` was saved: put off for a plain entry of an archive
    /// ([`Core::commit_soon`]), at once elsewhere and for a GAF/TNT binary copied into an
    /// archive (it shows as its exploded view once committed).
    pub(in crate::fs) fn commit_after(&self, rel: &Path, vpath: &str) -> Result<(), FsError> {
        let name = vpath.rsplit('/').next().unwrap_or(vpath);
        if is_archive_path(rel)
            && part_of(vpath).is_none()
            && crate::view::AssetKind::from_name(name).is_none()
        {
            self.commit_soon(rel, vpath)
        } else {
            self.commit(rel, vpath)
        }
    }

    /// Whether a commit of `rel` is put off.
    pub(in crate::fs) fn deferred_for(&self, rel: &Path) -> bool {
        lock(&self.deferred.due).contains_key(rel)
    }

    /// Archive `rel` is committed now (an `fsync`): nothing of it is put off any more.
    pub(in crate::fs) fn undefer(&self, rel: &Path) {
        lock(&self.deferred.due).remove(rel);
    }

    /// Makes the commits put off whose time has come (every one with `all`); returns when
    /// the next one is due.
    pub(in crate::fs) fn commit_due(&self, all: bool) -> Option<Instant> {
        let delay = self.opts.archive_commit_delay;
        let _busy = lock(&self.deferred.busy);
        let now = Instant::now();
        let ready: Vec<(PathBuf, String)> = {
            let mut due = lock(&self.deferred.due);
            let ready: Vec<PathBuf> = due
                .iter()
                .filter(|(_, d)| all || d.at(delay) <= now)
                .map(|(p, _)| p.clone())
                .collect();
            ready
                .into_iter()
                .filter_map(|p| due.remove(&p).map(|d| (p, d.trigger)))
                .collect()
        };
        for (rel, trigger) in ready {
            if let Err(e) = self.commit(&rel, &trigger) {
                log::warn!("{}: commit after {trigger}: {e}", rel.display());
            }
        }
        lock(&self.deferred.due).values().map(|d| d.at(delay)).min()
    }
}

impl Core {
    /// The mount ends: every commit put off is made now and the committer stops (later
    /// saves commit at once).
    pub(in crate::fs) fn finish_deferred(&self) {
        self.deferred.running.store(false, Ordering::Release);
        self.deferred.closed.store(true, Ordering::Release);
        self.deferred.wake.notify_all();
        // (after a commit the committer is making: `commit_due` waits for it)
        self.commit_due(true);
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // what was put off is written before the core goes (a core not ended by a mount)
        self.finish_deferred();
    }
}

/// The committer: sleeps until the next commit put off is due (or one is added), makes it,
/// and ends when the core does.
fn run(d: Arc<Deferred>, core: Weak<Core>) {
    let mut next: Option<Instant> = None;
    loop {
        {
            let g = lock(&d.due);
            if d.closed.load(Ordering::Acquire) {
                return;
            }
            // (a commit added meanwhile has notified: the wait returns at once; a lost
            // wake-up costs at most this bound)
            let wait = match next {
                Some(t) => t.saturating_duration_since(Instant::now()),
                None if g.is_empty() => Duration::from_secs(1),
                None => Duration::ZERO,
            };
            if !wait.is_zero() {
                let _ = d.wake.wait_timeout(g, wait.min(Duration::from_secs(1)));
            }
        }
        if d.closed.load(Ordering::Acquire) {
            return;
        }
        let Some(c) = core.upgrade() else { return };
        next = c.commit_due(false);
        drop(c);
    }
}
