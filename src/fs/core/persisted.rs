//! The core's use of the persisted index ([`crate::fs::index`]): loaded when the core is
//! made, consulted when an asset is resolved (the same content with the same view options
//! lists as recorded, without decoding or rendering), written when the file system finishes
//! (writable mounts only; `--ro` reads it and never writes it).
//!
//! Trust: a record is used only when the binary's size and CRC-32 and the hash of its view
//! options equal the recorded ones, in an intact file of this very program for this game
//! folder. Names and folders come from the record; a recorded size is shown until the file
//! is opened, which renders it first ([`Layout::verified_size`]): when the bytes differ in
//! length, the open serves the rendered bytes with their size and the kernel's attributes of
//! the inode are invalidated.

use super::assets::{Outcome, Resolved};
use super::{is_archive_path, lock, Core};
use crate::fs::index::{self, Key, Record, Records};
use crate::fs::layout::Layout;
use crate::fs::stage::Ident;
use crate::view::AssetKind;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The persisted index as one core uses it.
#[derive(Default)]
pub(in crate::fs) struct Persisted {
    /// The index file (`None`: no state folder).
    file: Option<PathBuf>,
    /// Written when the file system finishes.
    writable: bool,
    program: u64,
    folder: u64,
    /// Records read from the file (those found stale are dropped).
    loaded: Mutex<Records>,
    /// The key of each asset's binary as resolved last (with its identity then).
    live: Mutex<HashMap<PathBuf, (Ident, Key)>>,
    /// Assets listed from the index, not decoded.
    pub(in crate::fs) hits: AtomicU64,
    /// Assets decoded.
    pub(in crate::fs) decodes: AtomicU64,
    /// The checksum of what was last written (nothing new: not written again).
    last: Mutex<Option<u32>>,
    /// When the index was last written, and the work counted then ([`Core::work_done`]).
    saved: Mutex<Option<(std::time::Instant, u64)>>,
}

/// The least time between two writes of the index while mounted.
const SAVE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

impl Persisted {
    /// The index of game folder `game_dir` in `state` (if any), writable unless `read_only`.
    pub(in crate::fs) fn open(state: Option<&Path>, game_dir: &Path, read_only: bool) -> Self {
        let Some(state) = state else {
            return Persisted::default();
        };
        let game = std::path::absolute(game_dir).unwrap_or_else(|_| game_dir.to_path_buf());
        let file = index::path_in(state, &game);
        let program = index::program_stamp();
        let folder = index::folder_hash(&game);
        let loaded = index::load(&file, program, folder);
        Persisted {
            file: Some(file),
            writable: !read_only,
            program,
            folder,
            loaded: Mutex::new(loaded),
            ..Default::default()
        }
    }
}

impl Core {
    /// The index key of asset `rel` read as `bytes`, and its view options (for a decode):
    /// no key for archives (listed member by member) and for a binary whose view would not
    /// fit in the budget of decoded views (a decode decides how it is shown).
    pub(in crate::fs) fn index_key(
        &self,
        rel: &Path,
        bytes: &[u8],
    ) -> (Option<Key>, Option<crate::view::ViewOptions>) {
        let kind = rel
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(AssetKind::from_name);
        let Some(kind) = kind.filter(|_| self.index.file.is_some() && !is_archive_path(rel)) else {
            return (None, None);
        };
        let rel_str = rel.to_string_lossy().replace('\\', "/");
        let opts = self.options_for(&rel_str, &Default::default());
        if !self.cache.fits(kind, bytes, &opts.limits) {
            return (None, Some(opts));
        }
        let key = Key {
            size: bytes.len() as u64,
            crc: crc32fast::hash(bytes),
            options: index::options_hash(&opts),
        };
        (Some(key), Some(opts))
    }

    /// The layout recorded for `rel` under `key`, if any; a record under another key (the
    /// binary or its options changed) is dropped.
    pub(in crate::fs) fn indexed_layout(&self, rel: &Path, key: &Key) -> Option<Arc<Layout>> {
        let rel_str = rel.to_str()?;
        let mut loaded = lock(&self.index.loaded);
        let r = loaded.get(rel_str)?;
        if r.key != *key {
            loaded.remove(rel_str);
            return None;
        }
        let layout = Layout::from_index(&r.items);
        self.index.hits.fetch_add(1, Ordering::Relaxed);
        Some(Arc::new(layout))
    }

    /// Records that `rel` at identity `ident` is the binary of index key `key`.
    pub(in crate::fs) fn note_indexed(&self, rel: &Path, ident: &Ident, key: Key) {
        lock(&self.index.live).insert(rel.to_path_buf(), (ident.clone(), key));
    }

    /// Writes the index (writable mounts with a state folder): the records of the assets
    /// resolved by this core as they are now, and those loaded and not looked at whose
    /// binary is still there with the recorded size.
    pub(in crate::fs) fn save_index(&self) {
        let Some(file) = self.index.file.as_ref().filter(|_| self.index.writable) else {
            return;
        };
        let mut records: Records = {
            let loaded = lock(&self.index.loaded);
            loaded
                .iter()
                .filter(|(rel, r)| {
                    std::fs::symlink_metadata(self.abs(Path::new(rel)))
                        .is_ok_and(|m| m.is_file() && m.len() == r.key.size)
                })
                .map(|(p, r)| (p.clone(), r.clone()))
                .collect()
        };
        let live: Vec<(PathBuf, (Ident, Key))> = lock(&self.index.live)
            .iter()
            .map(|(p, v)| (p.clone(), v.clone()))
            .collect();
        for (rel, (ident, key)) in live {
            let Some(rel_str) = rel.to_str() else {
                continue;
            };
            let asset = self.slot(&rel);
            // an asset being decoded now keeps the record it had
            let st = match asset.state.try_lock() {
                Ok(st) => st,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => continue,
            };
            let items = match &st.outcome {
                Outcome::Ready(layout) if st.ident.as_ref() == Some(&ident) => layout.to_index(),
                _ => None,
            };
            drop(st);
            match items {
                Some(items) => records.insert(rel_str.to_string(), Record { key, items }),
                None => records.remove(rel_str),
            };
        }
        let i = &self.index;
        index::save_if_new(file, i.program, i.folder, &records, &i.last);
    }

    /// Assets decoded or listed from the index and files rendered so far.
    fn work_done(&self) -> u64 {
        let i = &self.index;
        i.hits.load(Ordering::Relaxed) + i.decodes.load(Ordering::Relaxed) + self.cache.rendered()
    }

    /// Writes the index while mounted when there is something new and it was last written
    /// (or the mount began) [`SAVE_EVERY`] ago or more, so a daemon that is killed keeps most
    /// of what it listed. Never waits: when another thread is writing it, nothing is done.
    pub(in crate::fs) fn save_index_now_and_then(&self) {
        if self.index.file.is_none() || !self.index.writable {
            return;
        }
        let Ok(mut saved) = self.index.saved.try_lock() else {
            return;
        };
        let now = std::time::Instant::now();
        let (at, work) = *saved.get_or_insert((now, 0));
        let done = self.work_done();
        if done == work || now.duration_since(at) < SAVE_EVERY {
            return;
        }
        *saved = Some((now, done));
        self.save_index();
    }

    /// One line for the status file: how many assets were listed from the index, decoded,
    /// and how many files were rendered.
    pub(in crate::fs) fn index_status(&self) -> String {
        let i = &self.index;
        format!(
            "index: {} listed from the index, {} decoded, {} rendered\n",
            i.hits.load(Ordering::Relaxed),
            i.decodes.load(Ordering::Relaxed),
            self.cache.rendered()
        ) + &self.cache.progress_line()
    }

    /// What [`Core::resolve_given`] shows for asset `rel` listed from the index.
    pub(in crate::fs) fn from_index(
        gen: u64,
        layout: Arc<Layout>,
        meta: std::fs::Metadata,
        outcome: &mut Outcome,
    ) -> Resolved {
        *outcome = Outcome::Ready(layout.clone());
        Resolved::Asset { gen, layout, meta }
    }
}
