//! The game folder as the mount reads it to resolve view options (palettes, texture GAFs,
//! script headers), confined beneath it, with an optional memo of listings and small files
//! checked against each one's status before it is used.

use crate::fs::shared::lock;
use crate::sys;
use lru::LruCache;
use std::collections::HashMap;
use std::ffi::OsString;
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Folders whose listing the memo keeps.
const MEMO_DIRS: usize = 256;
/// Files whose bytes the memo keeps, each of at most [`MEMO_FILE_MAX`] bytes (4 MiB in all).
const MEMO_FILES: usize = 256;
/// The largest file the memo keeps (palettes are 1 KiB, script headers a few KiB).
const MEMO_FILE_MAX: usize = 16 << 10;

/// The game folder as the mount reads it to resolve view options (palettes, texture GAFs):
/// only paths beneath it, each opened from its descriptor with no symlink followed
/// (`openat2` `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), files read only when regular and
/// within the size asked. Everything outside it (or unopenable) is unseen.
pub(in crate::fs) struct GameFolder {
    root: PathBuf,
    fd: Option<std::os::fd::OwnedFd>,
    memo: Option<Memo>,
}

/// What identifies one version of a file or folder: a change of its contents (or of a
/// folder's entries) changes its change time, which is never set back by a user.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

impl Stamp {
    /// The stamp of `m`, if it is one to trust later: a change within the same tick of a
    /// coarse clock can keep the change time, so a status changed in the last second is
    /// not kept (as `git` treats its racy index entries).
    fn settled(m: &std::fs::Metadata, settle: std::time::Duration) -> Option<Stamp> {
        let changed = SystemTime::UNIX_EPOCH
            + std::time::Duration::new(
                m.ctime().max(0) as u64,
                m.ctime_nsec().clamp(0, 999_999_999) as u32,
            );
        let age = SystemTime::now().duration_since(changed).ok()?;
        (age >= settle).then(|| Stamp::of(m))
    }

    fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            mode: m.mode(),
        }
    }
}

/// What the memo keeps of one path: its status when read, and what was read.
type Kept<T> = (Stamp, Arc<T>);

/// Listings and small files read before, each with the status it had then: used again only
/// while the status is the same (one `statx` instead of a listing or a read).
struct Memo {
    /// How old a change time must be to be trusted.
    settle: std::time::Duration,
    dirs: Mutex<LruCache<PathBuf, Kept<Listing>>>,
    files: Mutex<LruCache<PathBuf, Kept<Vec<u8>>>>,
}

/// The names of a folder, also by their ASCII-lowercase form.
struct Listing {
    names: Vec<OsString>,
    by_lower: HashMap<String, Vec<usize>>,
}

impl Listing {
    fn new(names: Vec<OsString>) -> Listing {
        let mut by_lower: HashMap<String, Vec<usize>> = HashMap::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            by_lower
                .entry(n.to_string_lossy().to_ascii_lowercase())
                .or_default()
                .push(i);
        }
        Listing { names, by_lower }
    }

    fn like(&self, name: &str) -> Vec<OsString> {
        let at = self.by_lower.get(&name.to_ascii_lowercase());
        at.into_iter()
            .flatten()
            .filter_map(|&i| self.names.get(i).cloned())
            .collect()
    }
}

impl GameFolder {
    /// The folder `root`, read afresh at every question.
    pub(in crate::fs) fn open(root: &Path) -> GameFolder {
        GameFolder {
            root: std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf()),
            fd: sys::open_dir_path(root).ok(),
            memo: None,
        }
    }

    /// The folder `root`, with listings and small files kept while their status is
    /// unchanged: the options of the next asset of a folder cost a few `statx`.
    pub(in crate::fs) fn memoized(root: &Path) -> GameFolder {
        Self::memoized_after(root, std::time::Duration::from_secs(1))
    }

    /// [`GameFolder::memoized`], trusting change times older than `settle`.
    fn memoized_after(root: &Path, settle: std::time::Duration) -> GameFolder {
        let n = |v: usize| NonZeroUsize::new(v).unwrap_or(NonZeroUsize::MIN);
        GameFolder {
            memo: Some(Memo {
                settle,
                dirs: Mutex::new(LruCache::new(n(MEMO_DIRS))),
                files: Mutex::new(LruCache::new(n(MEMO_FILES))),
            }),
            ..GameFolder::open(root)
        }
    }

    /// `path` relative to the folder, when it is beneath it (or the folder itself).
    fn rel<'p>(&self, path: &'p Path) -> Option<(BorrowedFd<'_>, &'p Path)> {
        let rel = path.strip_prefix(&self.root).ok()?;
        if rel
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return None;
        }
        Some((self.fd.as_ref()?.as_fd(), rel))
    }

    /// The status of `rel` beneath `fd` (the folder itself for an empty path), no symlink
    /// followed.
    fn status(fd: BorrowedFd, rel: &Path) -> Option<std::fs::Metadata> {
        if rel.as_os_str().is_empty() {
            let own = fd.try_clone_to_owned().ok()?;
            return std::fs::File::from(own).metadata().ok();
        }
        sys::lstat_beneath(fd, rel)?.ok()
    }

    fn list(fd: BorrowedFd, rel: &Path) -> Option<Vec<OsString>> {
        let d = sys::open_dir_beneath(fd, rel).ok()?;
        let rd = sys::read_dir_at(d.as_fd(), std::ffi::OsStr::new(".")).ok()?;
        Some(rd.flatten().map(|e| e.file_name()).collect())
    }

    /// The listing of `dir`, from the memo while the folder is unchanged.
    fn listing(&self, dir: &Path) -> Option<Arc<Listing>> {
        let (fd, rel) = self.rel(dir)?;
        let Some(memo) = &self.memo else {
            return Self::list(fd, rel).map(|n| Arc::new(Listing::new(n)));
        };
        // the status before the listing: a change made meanwhile gives a later one
        let m = Self::status(fd, rel).filter(|m| m.is_dir())?;
        let Some(stamp) = Stamp::settled(&m, memo.settle) else {
            return Self::list(fd, rel).map(|n| Arc::new(Listing::new(n)));
        };
        if let Some((s, l)) = lock(&memo.dirs).get(rel) {
            if *s == stamp {
                return Some(l.clone());
            }
        }
        let l = Arc::new(Listing::new(Self::list(fd, rel)?));
        lock(&memo.dirs).put(rel.to_path_buf(), (stamp, l.clone()));
        Some(l)
    }

    fn read_file(fd: BorrowedFd, rel: &Path, max: u64) -> Option<Vec<u8>> {
        let (dir, name) = sys::parent_beneath(fd, rel).ok()?;
        let f = sys::open_at(dir.as_fd(), &name, libc::O_RDONLY | libc::O_NONBLOCK, 0).ok()?;
        crate::game::read_bounded(f, max)
    }
}

impl crate::game::GameFs for GameFolder {
    fn kind(&self, path: &Path) -> Option<crate::game::Kind> {
        use crate::game::Kind;
        let (fd, rel) = self.rel(path)?;
        if rel.as_os_str().is_empty() {
            return Some(Kind::Dir);
        }
        Some(Kind::of(sys::lstat_beneath(fd, rel)?.ok()?.file_type()))
    }

    fn names(&self, dir: &Path) -> Option<Vec<OsString>> {
        self.listing(dir).map(|l| l.names.clone())
    }

    fn names_like(&self, dir: &Path, name: &str) -> Option<Vec<OsString>> {
        self.listing(dir).map(|l| l.like(name))
    }

    fn read(&self, path: &Path, max: u64) -> Option<Vec<u8>> {
        let (fd, rel) = self.rel(path)?;
        let Some(memo) = &self.memo else {
            return Self::read_file(fd, rel, max);
        };
        let m = sys::lstat_beneath(fd, rel)?.ok()?;
        if !m.is_file() || m.len() > max {
            return None;
        }
        let Some(stamp) = Stamp::settled(&m, memo.settle) else {
            return Self::read_file(fd, rel, max);
        };
        if let Some((s, bytes)) = lock(&memo.files).get(rel) {
            if *s == stamp {
                return Some(bytes.to_vec());
            }
        }
        let bytes = Self::read_file(fd, rel, max)?;
        if bytes.len() <= MEMO_FILE_MAX && bytes.len() as u64 == stamp.size {
            lock(&memo.files).put(rel.to_path_buf(), (stamp, Arc::new(bytes.clone())));
        }
        Some(bytes)
    }

    fn stat(&self, path: &Path) -> Option<(u64, Option<SystemTime>)> {
        let (fd, rel) = self.rel(path)?;
        let m = sys::lstat_beneath(fd, rel)?.ok()?;
        m.is_file().then(|| (m.len(), m.modified().ok()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::game::GameFs;

    #[test]
    fn a_memoized_folder_sees_every_change_of_a_listing_or_a_file() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir(root.join("palettes")).unwrap();
        std::fs::write(root.join("palettes/PALETTE.PAL"), [1u8; 1024]).unwrap();
        // (change times trusted at once: the files are new)
        let g = GameFolder::memoized_after(root, std::time::Duration::ZERO);
        let names = |p: &str| {
            let mut v = g.names(&root.join(p)).unwrap();
            v.sort();
            v
        };
        let pal = root.join("palettes/PALETTE.PAL");
        assert_eq!(names("palettes"), vec![OsString::from("PALETTE.PAL")]);
        assert_eq!(g.read(&pal, 4096).unwrap(), vec![1u8; 1024]);
        // the same again from the memo
        assert_eq!(names("palettes").len(), 1);
        assert_eq!(g.read(&pal, 4096).unwrap(), vec![1u8; 1024]);
        // a new entry, a rewrite of the same size with the old mtime put back
        std::fs::write(root.join("palettes/OTHER.PAL"), [0u8; 4]).unwrap();
        let mtime = std::fs::metadata(&pal).unwrap().modified().unwrap();
        std::fs::write(&pal, [2u8; 1024]).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&pal)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert_eq!(
            names("palettes"),
            vec![OsString::from("OTHER.PAL"), OsString::from("PALETTE.PAL")]
        );
        assert_eq!(g.read(&pal, 4096).unwrap(), vec![2u8; 1024]);
        // the root folder and the size bound
        assert!(names("").contains(&OsString::from("palettes")));
        assert_eq!(g.read(&pal, 100), None);
        // nothing outside the folder
        assert_eq!(g.names(Path::new("/")), None);
        assert_eq!(g.read(&root.join("palettes/../../x"), 100), None);
    }
}
