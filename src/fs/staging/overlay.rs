//! The staged files on top of the generated view: the children of a folder of an asset
//! directory, and the file set a commit builds from ([`Overlay`]).

use crate::fs::layout::Layout;
use crate::fs::shared::join;
use crate::fs::stage::{is_layout_name, Stage, StagedKind, StagedTree};
use crate::view::{AssetKind, FileSet, View, ViewError};
use std::fs;

/// The marker of a folder made with `mkdir` inside an asset directory (or of a new asset
/// directory) being filled: it shows only what was written into it (a commit between two files of a copy does not make
/// generated files appear under the copying tool). Removed once the folder holds every file
/// the binary gives it, or when it is listed.
pub(in crate::fs) const FILLING: &str = ".tafs-filling";

/// Removes the [`FILLING`] marker of staged folder `path`, keeping the folder's times (a
/// copying tool set them: `rsync -a` must find them as it left them).
fn unmark(path: &std::path::Path) {
    let marker = path.join(FILLING);
    if marker.symlink_metadata().is_err() {
        return;
    }
    let times = fs::metadata(path).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        (
            crate::fs::shared::time(m.atime(), m.atime_nsec()),
            crate::fs::shared::time(m.mtime(), m.mtime_nsec()),
        )
    });
    if fs::remove_file(&marker).is_ok() {
        if let Some((a, m)) = times {
            let _ =
                crate::sys::set_times(path, crate::sys::SetTime::At(a), crate::sys::SetTime::At(m));
        }
    }
}

/// Whether staged folder `dir` is being filled ([`FILLING`]).
pub(in crate::fs) fn filling(stage: Option<&Stage>, dir: &str) -> bool {
    stage.is_some_and(|s| s.lstat(&join(dir, FILLING)).is_some())
}

/// Folder `dir` was listed: it is no longer being filled. Not while the asset is new and has
/// no binary yet: a copying tool may list the empty folder first (`git clone` checks that its
/// target is empty), and what the first commit generates must not then appear under it.
pub(in crate::fs) fn listed(stage: Option<&Stage>, dir: &str) {
    if let Some(s) = stage.filter(|s| !s.meta.new_asset && s.has_files()) {
        unmark(&s.path(dir));
    }
}

/// After a commit giving `layout`: folders being filled that hold every file the binary
/// gives them stop being filled.
pub(in crate::fs) fn release_filled(stage: &Stage, layout: &Layout) {
    let complete = |p: &str| {
        layout.children(p).is_some_and(|kids| {
            kids.iter()
                .all(|(n, _)| stage.path(&join(p, n)).symlink_metadata().is_ok())
        })
    };
    if filling(Some(stage), "") && complete("") {
        unmark(&stage.path(""));
    }
    let mut stack = vec![String::new()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = fs::read_dir(stage.path(&dir)) else {
            continue;
        };
        for e in rd.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            let p = join(&dir, &name);
            if stack.len() < 4096 {
                stack.push(p.clone());
            }
            if !filling(Some(stage), &p) {
                continue;
            }
            if complete(&p) {
                unmark(&e.path());
            }
        }
    }
}

/// Children of `dir`: the generated ones not deleted, then staged ones (a staged entry
/// replaces a generated one of the same name). `None` if the folder does not exist. A folder
/// being filled ([`FILLING`]) shows its staged entries only.
pub(in crate::fs) fn merged_children(
    stage: Option<&Stage>,
    layout: Option<&Layout>,
    dir: &str,
) -> Option<Vec<(String, bool)>> {
    let layout = layout.filter(|_| !filling(stage, dir));
    let staged = stage.and_then(|s| s.read_dir(dir)).map(|rd| {
        let mut staged: Vec<(String, bool)> = rd
            .flatten()
            .filter_map(|e| {
                let d = e.file_type().is_ok_and(|t| t.is_dir());
                e.file_name().into_string().ok().map(|n| (n, d))
            })
            .collect();
        staged.sort();
        staged
    });
    merge_listing(
        layout,
        dir,
        |p| stage.is_some_and(|s| s.hidden(p)),
        staged.as_deref(),
    )
}

/// The children of `dir`: the generated ones (of `layout`) not `hidden`, then `staged`
/// (a staged entry replaces a generated one of the same name; [`FILLING`] left out); `None`
/// if neither has the folder.
fn merge_listing(
    layout: Option<&Layout>,
    dir: &str,
    hidden: impl Fn(&str) -> bool,
    staged: Option<&[(String, bool)]>,
) -> Option<Vec<(String, bool)>> {
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut exists = dir.is_empty();
    if let Some(gen) = layout.and_then(|l| l.children(dir)) {
        if dir.is_empty() || !hidden(dir) {
            exists = true;
            for (n, d) in gen {
                if !hidden(&join(dir, &n)) {
                    out.push((n, d));
                }
            }
        }
    }
    if let Some(staged) = staged {
        exists = true;
        // generated names by position, so the merge is linear in the folder's size
        let at: std::collections::HashMap<String, usize> = out
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
        for (n, d) in staged.iter().filter(|(n, _)| n != FILLING) {
            match at.get(n).and_then(|&i| out.get_mut(i)) {
                Some(x) => x.1 = *d,
                None => out.push((n.clone(), *d)),
            }
        }
    }
    exists.then_some(out)
}

/// Whether `vpath` of a loose asset directory is part of what a commit builds:
/// [`is_layout_name`], or a layout name inside a top folder whose name starts with `.` (a
/// sequence named `.hidden`, the safe folder `.._x` of a hostile name), `.git` aside.
pub(in crate::fs) fn builds(vpath: &str) -> bool {
    match vpath.split_once('/') {
        Some((first, rest)) if first.starts_with('.') => {
            !matches!(first, "." | ".." | ".git") && is_layout_name(rest)
        }
        _ => is_layout_name(vpath),
    }
}

/// Where the checksums of earlier versions' `map.png` and `minimap.png` renderings are kept
/// (in the asset's staging folder, beside `asset.json`).
const RENDERINGS: &str = "renderings.json";

/// Checksums kept per file.
const RENDERINGS_KEEP: usize = 64;

/// The map files whose copies of earlier renderings are recognised: `map.png` and
/// `minimap.png` by the checksum `metadata.json` holds, `tilemap.csv` (renumbered by a
/// re-tiling) by the CRC-32 of its bytes.
pub(in crate::fs) const MAP_DERIVED: [&str; 3] = ["map.png", "minimap.png", "tilemap.csv"];

fn renderings(stage: &Stage) -> serde_json::Map<String, serde_json::Value> {
    fs::read(stage.dir.join(RENDERINGS))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

/// Records the checksums a map's `metadata.json` (`meta_json`, a version being replaced)
/// holds for its `map.png` and `minimap.png`, and the CRC-32 of its `tilemap.csv`
/// (`tilemap_crc`).
pub(in crate::fs) fn record_renderings(stage: &Stage, meta_json: &[u8], tilemap_crc: Option<u32>) {
    let Ok(meta) = serde_json::from_slice::<serde_json::Value>(meta_json) else {
        return;
    };
    let mut all = renderings(stage);
    let tilemap_crc = tilemap_crc.map(u64::from);
    for (file, crc) in MAP_DERIVED.iter().zip([
        meta["checksums"]["map"].as_u64(),
        meta["checksums"]["minimap"].as_u64(),
        tilemap_crc,
    ]) {
        if let Some(crc) = crc {
            remember(&mut all, file, crc, RENDERINGS_KEEP);
        }
    }
    save_renderings(stage, all);
}

/// Records the fingerprints of the flattened images (`<n>.png` of composite frames) a GAF's
/// `metadata.json` (`meta_json`, a version being replaced) holds.
pub(in crate::fs) fn record_flattenings(stage: &Stage, meta_json: &[u8]) {
    let Ok(meta) = serde_json::from_slice::<serde_json::Value>(meta_json) else {
        return;
    };
    let Some(frames) = meta["frames"].as_object() else {
        return;
    };
    let mut all = renderings(stage);
    let mut any = false;
    for (key, x) in frames {
        let fp = x["flat_fnv"]
            .as_str()
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        if let Some(fp) = fp {
            remember(&mut all, &format!("{key}.png"), fp, RENDERINGS_KEEP);
            any = true;
        }
    }
    if any {
        save_renderings(stage, all);
    }
}

/// Records what a COB's folder showed before a commit replaced its binary (`old`, the old
/// version's view): the CRC-32 of each generated file and the origin of its sources
/// ([`crate::view::cob::replaced_fingerprints`]), so a copy of them sent back later is known
/// for what it is.
pub(in crate::fs) fn record_cob_renderings(stage: &Stage, old: &dyn crate::view::View) {
    let mut all = renderings(stage);
    for (key, fp) in crate::view::cob::replaced_fingerprints(&|p| old.render_vec(p).ok()) {
        remember(&mut all, &key, fp, RENDERINGS_KEEP);
    }
    save_renderings(stage, all);
}

/// Records the names of the sequences of `gaf` (a version being replaced), see
/// [`earlier_name`].
pub(in crate::fs) fn record_sequence_names(stage: &Stage, gaf: &crate::formats::gaf::Gaf) {
    let mut all = renderings(stage);
    let mut any = false;
    for seq in &gaf.sequences {
        let crc = u64::from(crc32fast::hash(seq.name_bytes()));
        any |= remember(&mut all, SEQUENCE_NAMES, crc, NAMES_KEEP);
    }
    // (written only when a name is new: a frame edit's commit writes nothing more)
    if any {
        save_renderings(stage, all);
    }
}

/// Sequence names kept (a GAF has at most a few hundred sequences).
const NAMES_KEEP: usize = 4096;

/// The key under which [`record_sequence_names`] keeps the CRC-32 of the sequence names of
/// versions a commit replaced.
const SEQUENCE_NAMES: &str = "sequence names";

/// Whether `name` is (by its CRC-32) the name or folder of a sequence of a version of the
/// asset a commit replaced while it was staged.
fn earlier_name(stage: &Stage, name: &[u8]) -> bool {
    let crc = u64::from(crc32fast::hash(name));
    renderings(stage)
        .get(SEQUENCE_NAMES)
        .and_then(|v| v.as_array())
        .is_some_and(|a| a.iter().any(|v| v.as_u64() == Some(crc)))
}

/// Adds checksum `crc` to the list of `file` (at most `keep`, oldest first out); whether it
/// was not there yet.
fn remember(
    all: &mut serde_json::Map<String, serde_json::Value>,
    file: &str,
    crc: u64,
    keep: usize,
) -> bool {
    let list = all
        .entry(file.to_string())
        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
    let Some(a) = list.as_array_mut() else {
        return false;
    };
    let new = !a.iter().any(|v| v.as_u64() == Some(crc));
    if new {
        a.push(crc.into());
    }
    let extra = a.len().saturating_sub(keep);
    a.drain(..extra);
    new
}

fn save_renderings(stage: &Stage, all: serde_json::Map<String, serde_json::Value>) {
    if let Ok(b) = serde_json::to_vec(&serde_json::Value::Object(all)) {
        let _ = fs::create_dir_all(&stage.dir);
        let _ = crate::atomic::write(&stage.dir.join(RENDERINGS), &b, None);
    }
}

/// The fingerprint ([`crate::view::gaf::image_fingerprint`]) of an indexed PNG as a dump
/// writes it (transparent where its tRNS alpha is 0); `None` for other PNGs.
fn indexed_fingerprint(png: &[u8]) -> Option<u64> {
    let d = crate::view::image::decode_png(png).ok()?;
    let crate::view::image::PngPixels::Indexed { indices, trns, .. } = d.pixels else {
        return None;
    };
    let opaque: Vec<bool> = indices
        .iter()
        .map(|i| !matches!(trns.get(usize::from(*i)), Some(0)))
        .collect();
    let fp = crate::view::gaf::image_fingerprint(d.width, d.height, &indices, &opaque);
    u64::from_str_radix(&fp, 16).ok()
}

/// The file set a commit builds from: the generated view with the staged layout files and
/// whiteouts on top. Names that are not layout names are not part of it. With `staged` (the
/// staged tree taken once for the build), whether a path is staged, a folder or being
/// filled is answered from it instead of asking the file system per path.
pub(in crate::fs) struct Overlay<'a> {
    pub(in crate::fs) stage: &'a Stage,
    pub(in crate::fs) view: Option<&'a dyn View>,
    pub(in crate::fs) layout: Option<Layout>,
    pub(in crate::fs) kind: AssetKind,
    pub(in crate::fs) staged: Option<StagedTree>,
}

/// Generated files a commit does not need to render: an unedited `map.png` is the mosaic
/// `metadata.json` holds the checksum of, so pack would find it unedited (rendering and
/// reading it back is most of a big map's commit time).
pub(in crate::fs) fn skip_generated(kind: AssetKind, path: &str) -> bool {
    kind == AssetKind::Tnt && path == "map.png"
}

impl Overlay<'_> {
    /// The staged tree of the build, when it was taken whole.
    fn snapshot(&self) -> Option<&StagedTree> {
        self.staged.as_ref().filter(|t| t.complete())
    }

    /// [`filling`], from the snapshot when there is one.
    fn filling(&self, dir: &str) -> bool {
        match self.snapshot() {
            Some(t) => t.kind(&join(dir, FILLING)).is_some(),
            None => filling(Some(self.stage), dir),
        }
    }

    /// [`merged_children`] of the stage, from the snapshot when there is one.
    fn children(&self, dir: &str) -> Option<Vec<(String, bool)>> {
        let Some(t) = self.snapshot() else {
            return merged_children(Some(self.stage), self.layout.as_ref(), dir);
        };
        let layout = self.layout.as_ref().filter(|_| !self.filling(dir));
        merge_listing(layout, dir, |p| self.stage.hidden(p), t.children(dir))
    }

    /// Whether staged `bytes` of a map's `map.png` or `minimap.png` are a copy of an earlier
    /// version's rendering (its checksum is one an earlier `metadata.json` held, not the
    /// current one): not an edit, whatever order the files of a copy arrive in.
    pub(in crate::fs) fn stale_copy(&self, path: &str, bytes: &[u8]) -> bool {
        if self.kind == AssetKind::Gaf {
            return self.stale_flattening(path, bytes);
        }
        if self.kind != AssetKind::Tnt || !MAP_DERIVED.contains(&path) {
            return false;
        }
        let known = renderings(self.stage);
        let Some(list) = known.get(path).and_then(|v| v.as_array()) else {
            return false;
        };
        let known_crc = |crc: u32| list.iter().any(|v| v.as_u64() == Some(u64::from(crc)));
        if path == "tilemap.csv" {
            let crc = crc32fast::hash(bytes);
            let current = match (&self.layout, self.view) {
                (Some(l), Some(v)) if l.is_dir(path) == Some(false) => v.render_vec(path).ok(),
                _ => None,
            };
            return known_crc(crc) && current.is_some_and(|c| crc32fast::hash(&c) != crc);
        }
        let Ok(Some(meta)) = self.read("metadata.json") else {
            return false;
        };
        let minimap = path == "minimap.png";
        let Ok(crc) = crate::view::tnt::image_checksum(bytes, &meta, minimap) else {
            return false;
        };
        let current = serde_json::from_slice::<serde_json::Value>(&meta)
            .ok()
            .and_then(|m| m["checksums"][if minimap { "minimap" } else { "map" }].as_u64());
        current != Some(u64::from(crc)) && known_crc(crc)
    }

    /// Whether staged `bytes` of a GAF composite frame's `<n>.png` (the flattening of its
    /// `<n>.layers/`) are a copy of an earlier version's flattening, not the current one's:
    /// not an edit (a tile of a copied-back export whose layer was edited must not lose the
    /// layer edit to the export's stale image).
    fn stale_flattening(&self, path: &str, bytes: &[u8]) -> bool {
        let Some(stem) = path.strip_suffix(".png") else {
            return false;
        };
        let composite = |l: &Layout| l.is_dir(&format!("{stem}.layers")) == Some(true);
        if !self.layout.as_ref().is_some_and(composite) {
            return false;
        }
        let known = renderings(self.stage);
        let Some(list) = known.get(path).and_then(|v| v.as_array()) else {
            return false;
        };
        let Some(fp) = indexed_fingerprint(bytes) else {
            return false;
        };
        if !list.iter().any(|v| v.as_u64() == Some(fp)) {
            return false;
        }
        // the current version's flattening (its own metadata.json, not a staged copy)
        let current = self
            .view
            .and_then(|v| v.render_vec("metadata.json").ok())
            .and_then(|m| serde_json::from_slice::<serde_json::Value>(&m).ok())
            .and_then(|m| m["frames"][stem]["flat_fnv"].as_str().map(str::to_string))
            .and_then(|h| u64::from_str_radix(&h, 16).ok());
        current != Some(fp)
    }

    /// The staged derived map files that are copies of earlier renderings ([`Self::stale_copy`]).
    pub(in crate::fs) fn stale_copies(&self) -> Vec<String> {
        if self.kind != AssetKind::Tnt {
            return Vec::new();
        }
        MAP_DERIVED
            .iter()
            .filter(|f| fs::read(self.stage.path(f)).is_ok_and(|b| self.stale_copy(f, &b)))
            .map(|f| f.to_string())
            .collect()
    }
}

impl FileSet for Overlay<'_> {
    fn earlier_name(&self, name: &[u8]) -> bool {
        self.kind == AssetKind::Gaf && earlier_name(self.stage, name)
    }

    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, ViewError> {
        if !builds(path) {
            return Ok(None);
        }
        let p = self.stage.path(path);
        match self.snapshot().map(|t| t.kind(path)) {
            // not staged
            Some(None) => {}
            Some(Some(StagedKind::Dir)) => return Ok(None),
            _ => match crate::view::read_input(&p) {
                Ok(b) if self.stale_copy(path, &b) => {}
                Ok(b) => return Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) if p.is_dir() => return Ok(None),
                Err(e) => {
                    return Err(ViewError::Io {
                        path: path.to_string(),
                        source: e,
                    })
                }
            },
        }
        if self.stage.hidden(path) || skip_generated(self.kind, path) {
            return Ok(None);
        }
        match (&self.layout, self.view) {
            (Some(l), Some(v)) if l.is_dir(path) == Some(false) => Ok(Some(v.render_vec(path)?)),
            _ => Ok(None),
        }
    }

    /// A generated file not staged over or deleted, or a staged copy that is not dirty (it
    /// built the binary at the last commit, or changed nothing then).
    fn unedited(&self, path: &str) -> bool {
        if !builds(path) || self.view.is_none() {
            return false;
        }
        let staged = match self.snapshot() {
            Some(t) => t.kind(path).map(|k| k == StagedKind::File),
            None => fs::symlink_metadata(self.stage.path(path))
                .ok()
                .map(|m| m.is_file()),
        };
        match staged {
            Some(file) => file && !self.stage.meta.dirty.contains(path),
            None => {
                !self.stage.hidden(path)
                    && !self.filling(path.rsplit_once('/').map_or("", |(d, _)| d))
                    && self.layout.as_ref().and_then(|l| l.is_dir(path)) == Some(false)
            }
        }
    }

    /// A generated file: not staged (by the snapshot, else the file system), not deleted,
    /// not in a folder being filled.
    fn replaced_rendering(&self, key: &str, fingerprint: u64) -> bool {
        renderings(self.stage)
            .get(key)
            .and_then(|v| v.as_array())
            .is_some_and(|l| l.iter().any(|v| v.as_u64() == Some(fingerprint)))
    }

    fn generated(&self, path: &str) -> bool {
        if !builds(path) || self.view.is_none() {
            return false;
        }
        let staged = match self.snapshot() {
            Some(t) => t.kind(path).is_some(),
            None => fs::symlink_metadata(self.stage.path(path)).is_ok(),
        };
        !staged
            && !self.stage.hidden(path)
            && !self.filling(path.rsplit_once('/').map_or("", |(d, _)| d))
            && self.layout.as_ref().and_then(|l| l.is_dir(path)) == Some(false)
    }

    fn list(&self, dir: &str) -> Result<Option<Vec<(String, bool)>>, ViewError> {
        Ok(self.children(dir).map(|v| {
            let mut v: Vec<(String, bool)> = v
                .into_iter()
                .filter(|(n, d)| {
                    if *d && dir.is_empty() {
                        n != ".git"
                    } else if *d {
                        !n.starts_with('.')
                    } else {
                        builds(&join(dir, n))
                    }
                })
                .collect();
            v.sort();
            v
        }))
    }
}
