//! Archive commits put off while saves keep coming: the committer thread and the operations
//! on the queue ([`Deferred`], kept by the write-back state, `fs::staging::deferred`).

use super::archive::part_of;
use crate::fs::core::{is_archive_path, Core};
use crate::fs::shared::lock;
use crate::fs::stage::{Stage, Status};
use crate::fs::staging::deferred::{Deferred, Due};
use crate::fs::FsError;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

impl Core {
    /// Starts the thread that makes the commits put off ([`Deferred`]); without it, every
    /// archive commit is made at once. It holds the core weakly and ends with it.
    pub fn start_committer(core: &Arc<Core>) -> std::io::Result<()> {
        if core.opts.archive_commit_delay.is_zero() || !core.writeback() {
            return Ok(());
        }
        let d = core.wb.deferred.clone();
        let weak = Arc::downgrade(core);
        d.running.store(true, Ordering::Release);
        core.defer_left_uncommitted();
        let started = std::thread::Builder::new()
            .name("tafs-commit".into())
            .spawn(move || run(d, weak));
        if started.is_err() {
            core.wb.deferred.running.store(false, Ordering::Release);
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
        let mut due = lock(&self.wb.deferred.due);
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
    pub(in crate::fs::writeback) fn commit_soon(
        &self,
        rel: &Path,
        trigger: &str,
    ) -> Result<(), FsError> {
        let delay = self.opts.archive_commit_delay;
        if delay.is_zero() || !self.wb.deferred.running.load(Ordering::Acquire) {
            return self.commit(rel, trigger);
        }
        let now = Instant::now();
        {
            let mut due = lock(&self.wb.deferred.due);
            let d = due.entry(rel.to_path_buf()).or_insert(Due {
                first: now,
                last: now,
                trigger: String::new(),
            });
            d.last = now;
            d.trigger = trigger.to_string();
        }
        self.wb.deferred.wake.notify_all();
        let staged = self.staging(rel);
        let mut g = lock(&staged.stage);
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
    pub(in crate::fs::writeback) fn commit_after(
        &self,
        rel: &Path,
        vpath: &str,
    ) -> Result<(), FsError> {
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
    pub(in crate::fs::writeback) fn deferred_for(&self, rel: &Path) -> bool {
        lock(&self.wb.deferred.due).contains_key(rel)
    }

    /// Archive `rel` is committed now (an `fsync`): nothing of it is put off any more.
    pub(in crate::fs::writeback) fn undefer(&self, rel: &Path) {
        lock(&self.wb.deferred.due).remove(rel);
    }

    /// Makes the commits put off whose time has come (every one with `all`); returns when
    /// the next one is due.
    pub(in crate::fs::writeback) fn commit_due(&self, all: bool) -> Option<Instant> {
        let delay = self.opts.archive_commit_delay;
        let _busy = lock(&self.wb.deferred.busy);
        let now = Instant::now();
        let ready: Vec<(PathBuf, String)> = {
            let mut due = lock(&self.wb.deferred.due);
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
        lock(&self.wb.deferred.due)
            .values()
            .map(|d| d.at(delay))
            .min()
    }
}

impl Core {
    /// The mount ends: every commit put off is made now and the committer stops (later
    /// saves commit at once).
    pub(in crate::fs::writeback) fn finish_deferred(&self) {
        self.wb.deferred.running.store(false, Ordering::Release);
        self.wb.deferred.closed.store(true, Ordering::Release);
        self.wb.deferred.wake.notify_all();
        // (after a commit the committer is making: `commit_due` waits for it)
        self.commit_due(true);
    }
}

impl Core {
    /// The end of write-back: the commits put off are made, with `settle` the times of
    /// files not looked at since the last commits decided ([`Core::settle_times`]), and
    /// every record of times written. Once; later calls do nothing.
    pub(in crate::fs::writeback) fn finish_writeback(&self, settle: bool) {
        if self.wb.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        self.finish_deferred();
        if settle {
            self.settle_times();
        }
        self.wb.flush_times();
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
