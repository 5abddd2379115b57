//! What write-back keeps, apart from the operations that change it (`fs::writeback`): per
//! asset the records of the times its generated files show (`times`, `member_times`), the
//! queue of put-off archive commits (`deferred`), and the staged files seen on top of the
//! generated view (`overlay`: what a folder of an asset directory holds, the file set a
//! commit builds from).
//!
//! The core owns it ([`Core`](crate::fs::core::Core) holds it) and reads it to answer
//! lookups, listings and attributes; it imports nothing of the core nor of
//! `fs::writeback`, so neither room depends on the other through it.

pub(in crate::fs) mod deferred;
pub(in crate::fs) mod member_times;
pub(in crate::fs) mod overlay;
pub(in crate::fs) mod times;

pub(in crate::fs) use deferred::Deferred;
pub(in crate::fs) use overlay::{listed, merged_children};
pub(in crate::fs) use times::Times;

use crate::fs::shared::lock;
use crate::fs::stage::Stage;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Write-back's state, owned by the core: per asset what is staged ([`Staged`]), and the
/// archive commits put off. Present on every core: a read-only mount with a state folder
/// still shows what earlier mounts staged.
pub(in crate::fs) struct Writeback {
    /// Where the staging areas are (`None`: write-back off, nothing staged).
    state_dir: Option<PathBuf>,
    /// Per asset (path relative to the game folder): its staged state, made on first use
    /// and kept with the core (as the assets' decode state is).
    assets: Mutex<HashMap<PathBuf, Arc<Staged>>>,
    /// Archive commits put off while saves keep coming.
    pub(in crate::fs) deferred: Arc<Deferred>,
    /// The mount ended (`Core::finish_writeback` ran).
    pub(in crate::fs) finished: AtomicBool,
}

/// What write-back keeps of one asset. Lock order (`src/fs/LOCKING.md`): the asset's
/// decode state, then `stage`, then `times`; `put_off` is a leaf.
pub(in crate::fs) struct Staged {
    /// The staging area (`None` without a state folder); held by a whole commit.
    pub(in crate::fs) stage: Mutex<Option<Stage>>,
    /// The mtimes its generated files keep across commits.
    pub(in crate::fs) times: Mutex<Times>,
    /// A file whose save is put off while another file a build reads is open for writing
    /// (the inode of the file waiting).
    pub(in crate::fs) put_off: Mutex<Option<u64>>,
}

impl Staged {
    /// Whether the staging area holds anything (staged files, a status).
    pub(in crate::fs) fn stage_active(&self) -> bool {
        lock(&self.stage).as_ref().is_some_and(|s| s.active())
    }
}

impl Writeback {
    /// The state of a core whose staging areas are under `state_dir`.
    pub(in crate::fs) fn new(state_dir: Option<&Path>) -> Writeback {
        Writeback {
            state_dir: state_dir.map(Path::to_path_buf),
            assets: Mutex::new(HashMap::new()),
            deferred: Arc::default(),
            finished: AtomicBool::new(false),
        }
    }

    /// The staged state of asset `rel`, whose binary is at `abs` (loaded from its staging
    /// area on first use, without holding the map's lock).
    pub(in crate::fs) fn slot(&self, rel: &Path, abs: impl FnOnce() -> PathBuf) -> Arc<Staged> {
        if let Some(s) = lock(&self.assets).get(rel) {
            return s.clone();
        }
        let stage = self.state_dir.as_ref().map(|sd| Stage::load(sd, &abs()));
        lock(&self.assets)
            .entry(rel.to_path_buf())
            .or_insert_with(|| {
                let times = Times::new(stage.as_ref().map(|s| s.dir.as_path()));
                Arc::new(Staged {
                    times: Mutex::new(times),
                    stage: Mutex::new(stage),
                    put_off: Mutex::new(None),
                })
            })
            .clone()
    }

    /// The staged state of asset `rel` if it was made (nothing is loaded).
    pub(in crate::fs) fn get(&self, rel: &Path) -> Option<Arc<Staged>> {
        lock(&self.assets).get(rel).cloned()
    }

    /// The assets with a staged state, and it.
    pub(in crate::fs) fn all(&self) -> Vec<(PathBuf, Arc<Staged>)> {
        lock(&self.assets)
            .iter()
            .map(|(p, s)| (p.clone(), s.clone()))
            .collect()
    }

    /// Writes every asset's records of times that changed since they were last written
    /// (at the end of a mount; a commit writes its asset's).
    pub(in crate::fs) fn flush_times(&self) {
        for (_, s) in self.all() {
            lock(&s.times).flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of times are written when flushed (a commit, the end of the mount), never
    /// when dropped.
    #[test]
    fn times_are_written_when_flushed_not_when_dropped() {
        let state = tempfile::tempdir().unwrap();
        let game = tempfile::tempdir().unwrap();
        let bin = game.path().join("fx.gaf");
        let record = |wb: &Writeback| {
            let s = wb.slot(Path::new("fx.gaf"), || bin.clone());
            let dir = lock(&s.stage).as_ref().unwrap().dir.clone();
            let mut t = lock(&s.times);
            t.load();
            t.kept.insert("seq/0.png".into(), (7, 1, 2));
            t.dirty = true;
            dir.join(times::TIMES)
        };
        let wb = Writeback::new(Some(state.path()));
        let file = record(&wb);
        drop(wb);
        assert!(!file.exists(), "written by a drop");
        let wb = Writeback::new(Some(state.path()));
        let file = record(&wb);
        wb.flush_times();
        let kept: HashMap<String, (u64, i64, u32)> =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(kept["seq/0.png"], (7, 1, 2));
    }
}
