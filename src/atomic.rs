//! Atomic replacement of a file, shared by the CLI (every file a command writes) and the
//! mount (every commit of a binary).
//!
//! The bytes go to a temporary file `.<name>.tafs-XXXXXX` in the target's folder, which is
//! synced and renamed over the target, then the folder is synced: the target is either
//! untouched or complete, also after a crash. File modes follow what an ordinary `open` +
//! `write` would give: a new file gets `0666 & !umask`; a replaced file keeps its mode (and
//! its owner and group where the process may set them, i.e. when running as root).
//! [`prepare_seekable`] + [`Prepared::commit`] split this in two, so that the temporary
//! file can be read back and checked (an archive commit parses it) before the rename.
//! The `_at` forms ([`prepare_seekable_at`], [`write_at`], [`remove_leftovers_at`]) work in a
//! folder given by descriptor (the mount's commits: a folder opened beneath the game folder,
//! so no path another user can swap decides where the new file goes).

use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// The prefix of the temporary file of `target` (see [`remove_leftovers`]).
fn temp_prefix(target: &Path) -> String {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.tafs-")
}

/// Replaces `target` with `bytes`. `like` is the metadata whose mode and owner the result
/// keeps (the file being replaced); `None` for a new file.
pub fn write(target: &Path, bytes: &[u8], like: Option<&Metadata>) -> io::Result<()> {
    write_with(target, like, |w| w.write_all(bytes))
}

/// A new temporary file in `target`'s folder, named after it ([`temp_prefix`]). It is
/// created with 0666 (the kernel applies the umask), the mode a new file gets from `open`; a
/// replaced file's mode is set on it explicitly by the caller.
fn temp_beside(target: &Path) -> io::Result<tempfile::NamedTempFile> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(&temp_prefix(target))
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
}

/// Replaces `target` with `bytes` as [`write()`] does (readers see the old or the new
/// content, never a part), without syncing the file or its folder: for records a crash may
/// lose (the next run does without them), not for data.
pub fn write_unsynced(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = temp_beside(target)?;
    tmp.as_file_mut().write_all(bytes)?;
    tmp.persist(target).map_err(|e| e.error)?;
    Ok(())
}

/// Replaces `target` with what `f` writes (buffered), keeping the mode and owner of the file
/// it replaces (looked up now). On error of `f` or of the write nothing is left behind.
pub fn replace_with<E: From<io::Error>>(
    target: &Path,
    f: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), E> {
    let like = std::fs::metadata(target).ok().filter(Metadata::is_file);
    write_with(target, like.as_ref(), f)
}

/// Replaces `target` with what `f` writes (buffered); `like` as in [`write()`].
pub fn write_with<E: From<io::Error>>(
    target: &Path,
    like: Option<&Metadata>,
    f: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), E> {
    write_seekable(target, like, |w| f(w))
}

/// [`replace_with`] for a writer that also seeks (an archive writes its directory last).
pub fn replace_seekable<E: From<io::Error>>(
    target: &Path,
    f: impl FnOnce(&mut io::BufWriter<&mut std::fs::File>) -> Result<(), E>,
) -> Result<(), E> {
    let like = std::fs::metadata(target).ok().filter(Metadata::is_file);
    write_seekable(target, like.as_ref(), f)
}

/// [`write_with`] for a writer that also seeks; `like` as in [`write()`].
pub fn write_seekable<E: From<io::Error>>(
    target: &Path,
    like: Option<&Metadata>,
    f: impl FnOnce(&mut io::BufWriter<&mut std::fs::File>) -> Result<(), E>,
) -> Result<(), E> {
    prepare_seekable(target, like, f)?.commit()?;
    Ok(())
}

/// A replacement of a file made but not done yet: the new content complete and synced in
/// the temporary file beside the target, to be read back (checked) before
/// [`Prepared::commit`] renames it over the target. Dropped, the temporary file is removed
/// and the target stays as it is.
#[derive(Debug)]
pub struct Prepared(Temp);

/// Where a [`Prepared`] replacement's temporary file is.
#[derive(Debug)]
enum Temp {
    /// Beside a target given by path.
    Path(tempfile::NamedTempFile, std::path::PathBuf),
    /// In a folder given by descriptor ([`prepare_seekable_at`]).
    At(TempAt),
}

/// A temporary file in a folder given by descriptor, removed when dropped uncommitted.
#[derive(Debug)]
struct TempAt {
    dir: OwnedFd,
    tmp: OsString,
    name: OsString,
    file: std::fs::File,
    committed: bool,
}

impl Drop for TempAt {
    fn drop(&mut self) {
        if !self.committed {
            let _ = crate::sys::unlink_at(self.dir.as_fd(), &self.tmp, false);
        }
    }
}

impl Prepared {
    /// The temporary file holding the new content (read it by range: its offset is at the
    /// end of what was written).
    pub fn file(&self) -> &std::fs::File {
        match &self.0 {
            Temp::Path(tmp, _) => tmp.as_file(),
            Temp::At(t) => &t.file,
        }
    }

    /// Renames the temporary file over the target and syncs the folder.
    pub fn commit(self) -> io::Result<()> {
        self.rename(false)
    }

    /// Like [`Prepared::commit`], only if the target still does not exist: an entry that
    /// appeared meanwhile is kept (`AlreadyExists`), and the temporary file removed.
    pub fn commit_new(self) -> io::Result<()> {
        self.rename(true)
    }

    fn rename(self, new: bool) -> io::Result<()> {
        match self.0 {
            Temp::Path(tmp, target) => {
                let dir = match target.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => Path::new(".").to_path_buf(),
                };
                if new {
                    tmp.persist_noclobber(&target).map_err(|e| e.error)?;
                } else {
                    tmp.persist(&target).map_err(|e| e.error)?;
                }
                if let Ok(d) = std::fs::File::open(dir) {
                    let _ = d.sync_all();
                }
            }
            Temp::At(mut t) => {
                let dir = t.dir.as_fd();
                let flags = if new { libc::RENAME_NOREPLACE } else { 0 };
                crate::sys::rename_at(dir, &t.tmp, dir, &t.name, flags)?;
                t.committed = true;
                // the folder, reopened from its descriptor (an `O_PATH` one cannot be synced)
                if let Ok(d) = crate::sys::open_at(dir, OsStr::new("."), libc::O_RDONLY, 0) {
                    let _ = d.sync_all();
                }
            }
        }
        Ok(())
    }
}

/// The first half of [`write_seekable`]: what `f` writes goes to the temporary file, which
/// gets the mode and owner of `like` and is synced; the target is untouched until
/// [`Prepared::commit`]. On error of `f` or of the write nothing is left behind.
pub fn prepare_seekable<E: From<io::Error>>(
    target: &Path,
    like: Option<&Metadata>,
    f: impl FnOnce(&mut io::BufWriter<&mut std::fs::File>) -> Result<(), E>,
) -> Result<Prepared, E> {
    let mut tmp = temp_beside(target)?;
    {
        let mut w = io::BufWriter::new(tmp.as_file_mut());
        f(&mut w)?;
        w.flush()?;
    }
    finish(tmp.as_file(), like)?;
    Ok(Prepared(Temp::Path(tmp, target.to_path_buf())))
}

/// [`prepare_seekable`] in the folder `dir` (a descriptor) for its entry `name`: the
/// temporary file is created there (`O_EXCL`, no symlink followed), so a folder renamed or
/// swapped for a symlink after `dir` was opened cannot send the new file elsewhere; the
/// rename of [`Prepared::commit`] is done in `dir` too.
pub fn prepare_seekable_at<E: From<io::Error>>(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    like: Option<&Metadata>,
    f: impl FnOnce(&mut io::BufWriter<&mut std::fs::File>) -> Result<(), E>,
) -> Result<Prepared, E> {
    // (`tempfile` creates its files by path only: the name is made here, `O_EXCL` decides)
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let prefix = temp_prefix(Path::new(name));
    let mut created = None;
    for _ in 0..64 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = OsString::from(format!(
            "{prefix}{:06x}{:x}{n:x}",
            std::process::id(),
            nanos
        ));
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
        match crate::sys::open_at(dir, &tmp, flags, 0o666) {
            Ok(file) => {
                created = Some((tmp, file));
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.into()),
        }
    }
    let Some((tmp, file)) = created else {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists).into());
    };
    let mut t = TempAt {
        dir: dir.try_clone_to_owned()?,
        tmp,
        name: name.to_os_string(),
        file,
        committed: false,
    };
    {
        let mut w = io::BufWriter::new(&mut t.file);
        f(&mut w)?;
        w.flush()?;
    }
    finish(&t.file, like)?;
    Ok(Prepared(Temp::At(t)))
}

/// Gives the written temporary file the owner and mode of `like` (if any) and syncs it.
fn finish(file: &std::fs::File, like: Option<&Metadata>) -> io::Result<()> {
    if let Some(m) = like {
        // Only root may give a file away; for others the owner is already theirs. The mode
        // is set afterwards, as chown may clear set-user/group-ID bits.
        let _ = std::os::unix::fs::fchown(file, Some(m.uid()), Some(m.gid()));
        file.set_permissions(std::fs::Permissions::from_mode(m.mode() & 0o7777))?;
    }
    file.sync_all()
}

/// Replaces entry `name` of folder `dir` with `bytes` ([`prepare_seekable_at`] + commit);
/// `like` as in [`write()`].
pub fn write_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    bytes: &[u8],
    like: Option<&Metadata>,
) -> io::Result<()> {
    prepare_seekable_at(dir, name, like, |w| w.write_all(bytes))?.commit()
}

/// [`remove_leftovers`] of entry `name` of folder `dir` (a descriptor).
pub fn remove_leftovers_at(dir: BorrowedFd<'_>, name: &OsStr) -> usize {
    let prefix = temp_prefix(Path::new(name));
    let Ok(rd) = crate::sys::read_dir_at(dir, OsStr::new(".")) else {
        return 0;
    };
    rd.flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| crate::sys::unlink_at(dir, &e.file_name(), false).is_ok())
        .count()
}

/// Removes temporary files [`write()`] left next to `target` (a process killed before the
/// rename). Returns how many were removed.
pub fn remove_leftovers(target: &Path) -> usize {
    let (Some(dir), Some(_)) = (target.parent(), target.file_name()) else {
        return 0;
    };
    let prefix = temp_prefix(target);
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaced_file_keeps_its_mode_and_leaves_nothing_behind() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.gaf");
        std::fs::write(&p, b"old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let like = std::fs::metadata(&p).unwrap();
        write(&p, b"new", Some(&like)).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let mode = std::fs::metadata(&p).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o640);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn failed_write_leaves_target_untouched() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.tnt");
        std::fs::write(&p, b"old").unwrap();
        let r: io::Result<()> = replace_with(&p, |w| {
            w.write_all(b"partial")?;
            Err(io::Error::other("boom"))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_prepared_replacement_changes_nothing_until_committed() {
        use std::os::unix::fs::FileExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.hpi");
        std::fs::write(&p, b"old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o604)).unwrap();
        let like = std::fs::metadata(&p).unwrap();
        let r: io::Result<Prepared> = prepare_seekable(&p, Some(&like), |w| w.write_all(b"new!"));
        let prepared = r.unwrap();
        let mut got = [0u8; 4];
        prepared.file().read_exact_at(&mut got, 0).unwrap();
        assert_eq!(&got, b"new!");
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
        // dropped: the temporary file goes, the target stays
        drop(prepared);
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        let r: io::Result<Prepared> = prepare_seekable(&p, Some(&like), |w| w.write_all(b"new!"));
        r.unwrap().commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new!");
        let mode = std::fs::metadata(&p).unwrap().mode() & 0o7777;
        assert_eq!(mode, 0o604);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_unsynced_replacement_leaves_the_new_bytes_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("times.json");
        std::fs::write(&p, b"old").unwrap();
        write_unsynced(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn leftovers_are_recognised_by_their_prefix() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.tnt");
        std::fs::write(d.path().join(".m.tnt.tafs-abc123"), b"x").unwrap();
        std::fs::write(d.path().join(".other.tnt.tafs-abc123"), b"x").unwrap();
        assert_eq!(remove_leftovers(&p), 1);
        assert!(d.path().join(".other.tnt.tafs-abc123").exists());
    }

    #[test]
    fn a_replacement_at_a_folder_descriptor_stays_in_that_folder() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        let game = d.path().join("game");
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir_all(game.join("anims")).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(game.join("anims/x.gaf"), b"old").unwrap();
        std::fs::set_permissions(
            game.join("anims/x.gaf"),
            std::fs::Permissions::from_mode(0o640),
        )
        .unwrap();
        let like = std::fs::metadata(game.join("anims/x.gaf")).unwrap();
        let dir = crate::sys::open_dir_path(&game.join("anims")).unwrap();
        // the folder's path is swapped for a symlink to another folder after it was opened
        std::fs::rename(game.join("anims"), game.join("moved")).unwrap();
        symlink(&elsewhere, game.join("anims")).unwrap();
        let name = OsStr::new("x.gaf");
        std::fs::write(game.join("moved/.x.gaf.tafs-left"), b"x").unwrap();
        assert_eq!(remove_leftovers_at(dir.as_fd(), name), 1);
        // dropped uncommitted: nothing stays
        let p = prepare_seekable_at(dir.as_fd(), name, Some(&like), |w| w.write_all(b"new"));
        drop(p.unwrap());
        let names = |p: &Path| -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&game.join("moved")), ["x.gaf"]);
        write_at(dir.as_fd(), name, b"new", Some(&like)).unwrap();
        assert_eq!(std::fs::read(game.join("moved/x.gaf")).unwrap(), b"new");
        let m = std::fs::metadata(game.join("moved/x.gaf")).unwrap();
        assert_eq!(m.mode() & 0o777, 0o640);
        assert_eq!(names(&game.join("moved")), ["x.gaf"]);
        assert!(names(&elsewhere).is_empty(), "written through the symlink");
    }
}
