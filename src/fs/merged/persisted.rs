//! The merged view's use of the persisted index ([`crate::fs::index`]): the same format and
//! the same trust as the normal mount's ([`crate::fs::core`]'s), in a file of its own
//! (`STATE/index/<key of the folder>.merged`), since its records name sources, not paths of
//! the game folder: a loose binary by its path (`anims/x.gaf`), an archive member by the
//! archive's name and the member's path (`totala1.hpi/anims/x.gaf`).
//!
//! A GAF/TNT whose bytes (size and CRC-32) and view options equal a record's lists as
//! recorded, without decoding; its recorded sizes are checked when the file is read (the
//! read renders it; a size that differs is corrected and the kernel's attributes of the
//! inode invalidated). Read by every merged view with a state folder; written (at unmount
//! and at most every 30 s while listing) only by the writable one (`--into`): the
//! read-only view never writes its state folder.

use super::{lock, AssetKey, Content, MergedCore};
use crate::fs::index::{self, Key, Record, Records};
use crate::fs::layout::Layout;
use crate::view::{AssetKind, ViewOptions};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The least time between two writes of the index while mounted.
const SAVE_EVERY: Duration = Duration::from_secs(30);

/// The persisted index as a merged view uses it.
#[derive(Default)]
pub(super) struct MergedIndex {
    /// The index file (`None`: no state folder).
    file: Option<PathBuf>,
    /// Written at unmount and now and then.
    writable: bool,
    program: u64,
    folder: u64,
    /// Records read from the file (those found stale are dropped).
    loaded: Mutex<Records>,
    /// The record key of each source decoded or listed (source path → asset and key).
    live: Mutex<HashMap<String, (AssetKey, Key)>>,
    /// Assets listed from the index, not decoded.
    hits: AtomicU64,
    /// Assets decoded.
    decodes: AtomicU64,
    /// The checksum of what was last written.
    last: Mutex<Option<u32>>,
    /// When the index was last written, and the work counted then.
    saved: Mutex<Option<(Instant, u64)>>,
}

/// The folder hash of a merged view's index: the game folder's, marked as merged (an index
/// of the normal mount renamed to this one's name is ignored).
fn merged_folder_hash(game_abs: &Path) -> u64 {
    let mut p = game_abs.as_os_str().to_owned();
    p.push("\0merged");
    index::folder_hash(Path::new(&p))
}

impl MergedIndex {
    /// The merged index of `game_dir` in `state` (if any), written unless `read_only`.
    pub(super) fn open(state: Option<&Path>, game_dir: &Path, read_only: bool) -> Self {
        let Some(state) = state else {
            return MergedIndex::default();
        };
        let game = std::path::absolute(game_dir).unwrap_or_else(|_| game_dir.to_path_buf());
        let mut file = index::path_in(state, &game).into_os_string();
        file.push(".merged");
        let file = PathBuf::from(file);
        let program = index::program_stamp();
        let folder = merged_folder_hash(&game);
        let loaded = index::load(&file, program, folder);
        MergedIndex {
            file: Some(file),
            writable: !read_only,
            program,
            folder,
            loaded: Mutex::new(loaded),
            ..Default::default()
        }
    }
}

impl MergedCore {
    /// The record path of content `c`: a loose file's path, or `ARCHIVE/MEMBER`.
    fn source_path(c: &Content) -> Option<String> {
        match c {
            Content::Loose { rel, .. } => Some(rel.replace('\\', "/")),
            Content::Member { archive, entry, .. } => {
                let member = archive.paths.get(*entry)?;
                Some(format!("{}/{member}", archive.name))
            }
        }
    }

    /// The index key of a binary of `kind` read as `bytes` with view options `opts`: none
    /// without an index file, or when its view would not fit in the budget of decoded views
    /// (a decode decides how it is shown).
    pub(super) fn index_key(
        &self,
        kind: AssetKind,
        bytes: &[u8],
        opts: &ViewOptions,
    ) -> Option<Key> {
        self.index.file.as_ref()?;
        if !self.cache.fits(kind, bytes, &opts.limits) {
            return None;
        }
        Some(Key {
            size: bytes.len() as u64,
            crc: crc32fast::hash(bytes),
            options: index::options_hash(opts),
        })
    }

    /// The layout recorded for the source of `c` under `key`, if any (a record under
    /// another key is dropped); noted as the source's record either way.
    pub(super) fn indexed_layout(
        &self,
        k: &AssetKey,
        c: &Content,
        key: Key,
    ) -> Option<Arc<Layout>> {
        let path = Self::source_path(c)?;
        lock(&self.index.live).insert(path.clone(), (k.clone(), key));
        let mut loaded = lock(&self.index.loaded);
        let r = loaded.get(&path)?;
        if r.key != key {
            loaded.remove(&path);
            return None;
        }
        let layout = Layout::from_index(&r.items);
        self.index.hits.fetch_add(1, Ordering::Relaxed);
        Some(Arc::new(layout))
    }

    /// Counts a decode of the asset at `k` (source of `c`, index key `key` if any).
    pub(super) fn note_decoded(&self, k: &AssetKey, c: &Content, key: Option<Key>) {
        self.index.decodes.fetch_add(1, Ordering::Relaxed);
        if let (Some(key), Some(path)) = (key, Self::source_path(c)) {
            lock(&self.index.live).insert(path, (k.clone(), key));
        }
    }

    /// One line for a status file: assets listed from the index, decoded, files rendered.
    pub fn index_status(&self) -> String {
        format!(
            "merged index: {} listed from the index, {} decoded, {} rendered\n",
            self.index.hits.load(Ordering::Relaxed),
            self.index.decodes.load(Ordering::Relaxed),
            self.cache.rendered()
        ) + &self.cache.progress_line()
    }

    /// Writes the index (a writable view with a state folder): the records of the assets
    /// listed or decoded as they are now, and those loaded and not looked at whose source
    /// is still there (a loose file of the recorded size, an archive of the view).
    pub(super) fn save_index(&self) {
        let Some(file) = self.index.file.as_ref().filter(|_| self.index.writable) else {
            return;
        };
        let archives: Vec<String> = self
            .snapshot()
            .sources
            .iter()
            .filter_map(|s| match s {
                super::Source::Archive(a) => Some(format!("{}/", a.name)),
                super::Source::Loose => None,
            })
            .collect();
        let mut records: Records = lock(&self.index.loaded)
            .iter()
            .filter(|(p, r)| {
                archives.iter().any(|a| p.starts_with(a.as_str()))
                    || super::stat_game_file(&self.game_dir, Path::new(p))
                        .is_ok_and(|m| m.is_file() && m.len() == r.key.size)
            })
            .map(|(p, r)| (p.clone(), r.clone()))
            .collect();
        let live: Vec<(String, (AssetKey, Key))> = lock(&self.index.live)
            .iter()
            .map(|(p, v)| (p.clone(), v.clone()))
            .collect();
        for (path, (k, key)) in live {
            let slot = lock(&self.assets).get(&k).cloned();
            let items = slot.and_then(|s| {
                // an asset being decoded now keeps the record it had
                let st = s.try_lock().ok()?;
                match &*st {
                    crate::fs::core::assets::Outcome::Ready(l) => l.to_index(),
                    _ => None,
                }
            });
            match items {
                Some(items) => records.insert(path, Record { key, items }),
                None => records.remove(&path),
            };
        }
        let i = &self.index;
        index::save_if_new(file, i.program, i.folder, &records, &i.last);
    }

    /// Writes the index while mounted when there is something new and it was last written
    /// (or the mount began) [`SAVE_EVERY`] ago or more. Never waits.
    pub(super) fn save_index_now_and_then(&self) {
        if self.index.file.is_none() || !self.index.writable {
            return;
        }
        let Ok(mut saved) = self.index.saved.try_lock() else {
            return;
        };
        let now = Instant::now();
        let (at, work) = *saved.get_or_insert((now, 0));
        let i = &self.index;
        let done = i.hits.load(Ordering::Relaxed)
            + i.decodes.load(Ordering::Relaxed)
            + self.cache.rendered();
        if done == work || now.duration_since(at) < SAVE_EVERY {
            return;
        }
        *saved = Some((now, done));
        self.save_index();
    }
}
