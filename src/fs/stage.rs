//! The write-back staging area: where edits made in asset directories are kept until (and
//! after) they are committed to the binary, and the history of replaced binaries.
//!
//! ```text
//! STATE/assets/<key>/asset.json   binary path, base identity, dirty paths, whiteouts, status
//! STATE/assets/<key>/files/…      staged files and folders (bytes, mode, mtime)
//! STATE/history/<key>/<nanos>-<name>   previous versions of the binary (last HISTORY_KEEP)
//! ```
//!
//! `<key>` is derived from the binary's absolute path, so the same binary finds its staged
//! files again after a remount.

use crate::view::{AssetKind, FileSet, ViewError, ViewOptions};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Versions kept per binary in the history.
pub const HISTORY_KEEP: usize = 10;

/// Rebuilds a binary of `kind` from a file set; `base` is the current binary (unchanged parts
/// keep its stored bytes). The mount uses [`crate::view::rebuild`]; tests can substitute
/// their own.
pub type Packer = Arc<
    dyn Fn(AssetKind, &dyn FileSet, Option<&[u8]>, &ViewOptions) -> Result<Vec<u8>, ViewError>
        + Send
        + Sync,
>;

/// Whether `vpath` (relative to the asset directory) is a layout file: no component starts
/// with `.`, and the name ends in `.png`, `.gif`, `.csv` or `.json` (any case). Other names
/// (temporary, swap and backup files) are staged but never built.
pub fn is_layout_name(vpath: &str) -> bool {
    if vpath.is_empty() || vpath.split('/').any(|c| c.starts_with('.') || c.is_empty()) {
        return false;
    }
    let lower = vpath.to_ascii_lowercase();
    [".png", ".gif", ".csv", ".json"]
        .iter()
        .any(|e| lower.ends_with(e))
}

/// The default state directory: `$XDG_STATE_HOME/tafs`, else `~/.local/state/tafs`.
pub fn default_state_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("tafs");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
    PathBuf::from(home).join(".local/state/tafs")
}

/// Identity of one version of a binary (what tells "changed by someone else").
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ident {
    /// Size in bytes.
    pub size: u64,
    /// Modification time (seconds, nanoseconds).
    pub mtime: (i64, i64),
    /// Status change time.
    pub ctime: (i64, i64),
    /// Inode number.
    pub ino: u64,
    /// Device.
    pub dev: u64,
}

impl Ident {
    /// The identity of the file `m` describes.
    pub fn of(m: &std::fs::Metadata) -> Ident {
        use std::os::unix::fs::MetadataExt;
        Ident {
            size: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            ino: m.ino(),
            dev: m.dev(),
        }
    }
}

/// The persisted state of one asset's staging area (`asset.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StageMeta {
    /// Absolute path of the binary.
    pub binary: PathBuf,
    /// Identity of the binary the staged files are based on (`None`: no binary yet).
    pub base: Option<Ident>,
    /// Staged layout paths and whiteouts not committed yet.
    pub dirty: BTreeSet<String>,
    /// Deleted generated paths.
    pub whiteouts: BTreeSet<String>,
    /// An asset created with `mkdir` whose binary does not exist yet.
    pub new_asset: bool,
    /// `metadata.json` was deleted: no commits until it is written again.
    pub removing: bool,
    /// The binary changed outside the mount while files were dirty.
    pub conflict: bool,
    /// Last outcome: "", "pending: …", "error: …", "conflict: …", "committed …".
    pub status: String,
    /// The binary a commit is replacing the current one with (recorded before the rename,
    /// cleared after): if the process dies in between, the next start recognises the new
    /// binary as its own commit instead of a change made outside.
    #[serde(default)]
    pub committing: Option<Written>,
}

/// What a commit wrote: size and CRC-32 of the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    /// Size in bytes.
    pub size: u64,
    /// CRC-32 of the bytes.
    pub crc32: u32,
}

impl Written {
    /// The record of `bytes`.
    pub fn of(bytes: &[u8]) -> Written {
        Written {
            size: bytes.len() as u64,
            crc32: crc32fast::hash(bytes),
        }
    }
}

/// One asset's staging area.
#[derive(Debug)]
pub struct Stage {
    /// `STATE/assets/<key>`.
    pub dir: PathBuf,
    /// `STATE/assets/<key>/files`: the staged tree.
    pub files: PathBuf,
    /// `STATE/history/<key>`.
    pub history: PathBuf,
    /// Persisted state.
    pub meta: StageMeta,
}

pub use sha_like::fnv64;

/// The key of a binary's staging area and history.
pub fn key_of(abs_binary: &Path) -> String {
    let name = abs_binary
        .file_name()
        .map(|n| crate::view::safe_component(n.to_string_lossy().as_bytes()))
        .unwrap_or_default();
    format!(
        "{:016x}-{name}",
        fnv64(abs_binary.as_os_str().as_encoded_bytes())
    )
}

mod sha_like {
    /// FNV-1a, 64 bits: stable across runs and builds (unlike `DefaultHasher`).
    pub fn fnv64(data: &[u8]) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in data {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }
}

impl Stage {
    /// Loads (or starts empty) the staging area of `abs_binary` under `state`.
    pub fn load(state: &Path, abs_binary: &Path) -> Stage {
        let key = key_of(abs_binary);
        let dir = state.join("assets").join(&key);
        let meta = std::fs::read(dir.join("asset.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<StageMeta>(&b).ok())
            .filter(|m| m.binary == abs_binary)
            .unwrap_or_else(|| StageMeta {
                binary: abs_binary.to_path_buf(),
                ..Default::default()
            });
        Stage {
            files: dir.join("files"),
            history: state.join("history").join(&key),
            dir,
            meta,
        }
    }

    /// Whether anything is staged (files, folders or whiteouts) or the asset is new.
    pub fn active(&self) -> bool {
        self.meta.new_asset || !self.meta.whiteouts.is_empty() || self.files.exists()
    }

    /// Writes `asset.json` (atomically).
    pub fn save(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let json = serde_json::to_vec_pretty(&self.meta).map_err(std::io::Error::other)?;
        let tmp = self.dir.join(".asset.json.tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&json)?;
        f.sync_all()?;
        std::fs::rename(&tmp, self.dir.join("asset.json"))
    }

    /// Forgets everything staged (files, whiteouts, flags).
    pub fn clear(&mut self) -> std::io::Result<()> {
        if self.files.exists() {
            std::fs::remove_dir_all(&self.files)?;
        }
        let binary = std::mem::take(&mut self.meta.binary);
        self.meta = StageMeta {
            binary,
            ..Default::default()
        };
        match std::fs::remove_file(self.dir.join("asset.json")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// The real path of staged `vpath` (`""` = the asset directory itself).
    pub fn path(&self, vpath: &str) -> PathBuf {
        if vpath.is_empty() {
            self.files.clone()
        } else {
            self.files.join(vpath)
        }
    }

    /// Whether `vpath` or one of its folders is deleted.
    pub fn hidden(&self, vpath: &str) -> bool {
        let mut p = vpath;
        loop {
            if self.meta.whiteouts.contains(p) {
                return true;
            }
            match p.rsplit_once('/') {
                Some((parent, _)) => p = parent,
                None => return false,
            }
        }
    }

    /// Keeps `bytes` (the binary before a change or a deletion) in the history, keeping the
    /// last [`HISTORY_KEEP`] versions. The version is written atomically (a full state dir
    /// leaves no partial version) with the mode and owner of the binary as it is now (other
    /// users read an old version only if they may read the binary); the history folders are
    /// made `0700`.
    pub fn push_history(&self, bytes: &[u8]) -> std::io::Result<PathBuf> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.history)?;
        let like = std::fs::metadata(&self.meta.binary)
            .ok()
            .filter(std::fs::Metadata::is_file);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = self
            .meta
            .binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let p = self.history.join(format!("{nanos:020}-{name}"));
        match &like {
            Some(m) => crate::atomic::write(&p, bytes, Some(m))?,
            // no binary to follow (a new asset): readable by its owner only
            None => {
                crate::atomic::write(&p, bytes, None)?;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))?;
            }
        }
        let mut all = history_of(&self.history);
        while all.len() > HISTORY_KEEP {
            let old = all.remove(0);
            let _ = std::fs::remove_file(old);
        }
        Ok(p)
    }
}

/// The versions in a history folder, oldest first (temporary files of a version being
/// written, whose names start with a dot, are no versions).
pub fn history_of(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The history folder of `abs_binary` under `state`.
pub fn history_dir(state: &Path, abs_binary: &Path) -> PathBuf {
    state.join("history").join(key_of(abs_binary))
}

/// The persisted staging areas under `state` of binaries inside `game_dir`.
fn staged_metas(state: &Path, game_dir: &Path) -> Vec<StageMeta> {
    let Ok(rd) = std::fs::read_dir(state.join("assets")) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| std::fs::read(e.path().join("asset.json")).ok())
        .filter_map(|b| serde_json::from_slice::<StageMeta>(&b).ok())
        .filter(|m| m.binary.starts_with(game_dir))
        .collect()
}

/// New assets (created with `mkdir`, no binary yet) staged under `state` for binaries inside
/// `game_dir`: their absolute binary paths.
pub fn new_assets(state: &Path, game_dir: &Path) -> Vec<PathBuf> {
    staged_metas(state, game_dir)
        .into_iter()
        .filter(|m| m.new_asset && !m.binary.exists())
        .map(|m| m.binary)
        .collect()
}

/// Binaries inside `game_dir` with a staging area under `state` (staged files, a status, a
/// new asset): their absolute paths. The mount's root status reads these, so an asset
/// staged before a remount is reported before anything of it is looked up again.
pub fn staged_binaries(state: &Path, game_dir: &Path) -> Vec<PathBuf> {
    staged_metas(state, game_dir)
        .into_iter()
        .map(|m| m.binary)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_names() {
        for n in [
            "metadata.json",
            "fire/frames.csv",
            "fire/0.png",
            "fire/0.layers/1.PNG",
        ] {
            assert!(is_layout_name(n), "{n}");
        }
        for n in [
            ".0.png.AbC123",
            "fire/.0.png.x",
            "fire/.goutputstream-XYZ",
            "fire/sedAb12Cd",
            "fire/tmpa1b2",
            "fire/0.png~",
            "fire/.0.png.swp",
            "fire/0.png.Qx1234",
            ".hidden/0.png",
            "",
        ] {
            assert!(!is_layout_name(n), "{n}");
        }
    }

    #[test]
    fn keys_are_stable_and_distinct() {
        // FNV-1a of "" is the offset basis (first principles of FNV-1a).
        assert_eq!(sha_like::fnv64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(sha_like::fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
        let a = key_of(Path::new("/g/anims/x.gaf"));
        assert_eq!(a, key_of(Path::new("/g/anims/x.gaf")));
        assert_ne!(a, key_of(Path::new("/g/anims/y.gaf")));
        assert!(a.ends_with("-x.gaf"));
    }

    #[test]
    fn history_is_bounded() {
        let d = tempfile::tempdir().unwrap();
        let s = Stage::load(d.path(), Path::new("/g/x.gaf"));
        for i in 0..(HISTORY_KEEP + 3) {
            s.push_history(&[i as u8]).unwrap();
        }
        let h = history_of(&s.history);
        assert_eq!(h.len(), HISTORY_KEEP);
        // the oldest three are gone: the first kept is version 3
        assert_eq!(std::fs::read(&h[0]).unwrap(), [3u8]);
    }
}
