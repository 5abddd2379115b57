//! The state folder's lock: one mount at a time edits the staged files of a game folder.
//!
//! Staged edits and history are keyed by the binary's absolute path, so two mounts of the same
//! game folder (or of nested ones) with one state folder would act on the same staged files
//! and drop each other's edits. Each mount holds an `flock` on
//! `STATE/locks/<hash of GAME_DIR>.lock` (naming its pid and GAME_DIR) while it serves; a mount
//! whose game folder equals, contains or lies inside the game folder of a live lock is refused
//! with a clear message. A lock of a process that ended is free again (the kernel drops it).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A held lock; dropping it releases it.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

fn flock(f: &File, how: libc::c_int) -> io::Result<bool> {
    // SAFETY: `f` is an open file.
    if unsafe { libc::flock(f.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Whether process `pid` (as written in a lock file) has ended or is ending: gone, or its
/// main thread a zombie. A killed mount's other threads may still hold the lock for a few
/// milliseconds after its main thread became a zombie.
fn ended(pid: &str) -> bool {
    let Ok(pid) = pid.trim().parse::<u32>() else {
        return false;
    };
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

/// Waits (at most `tries` × 10 ms) for the lock on `f` to be free, as it is once an ending
/// holder is gone; `true` when it is.
fn freed(f: &File, tries: u32) -> io::Result<bool> {
    for _ in 0..tries {
        if flock(f, libc::LOCK_SH)? {
            return Ok(true);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Ok(false)
}

fn open_rw(p: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(p)
}

/// Makes the state folder `state` private to the user the mount runs as, as the run folder
/// is: staged frames of an asset in a 0700 folder, and `asset.json` naming its path, must not
/// be readable through it. One of another user is refused; open bits of the mount's own are
/// taken away.
fn private(state: &Path) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let m =
        std::fs::metadata(state).map_err(|e| format!("state folder {}: {e}", state.display()))?;
    let me = crate::sys::euid();
    if m.uid() != me {
        return Err(format!(
            "state folder {}: belongs to uid {}, not to uid {me} the mount runs as (its \
             staged files and history would be theirs to read and change); use another \
             --state-dir",
            state.display(),
            m.uid()
        ));
    }
    if m.mode() & 0o077 != 0 {
        std::fs::set_permissions(state, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("state folder {}: {e}", state.display()))?;
        log::warn!(
            "state folder {}: was {:o}, made 0700 (staged files would be readable by others)",
            state.display(),
            m.mode() & 0o777
        );
    }
    Ok(())
}

/// Locks `state` for `game_dir` (both absolute), making `state` (0700) when missing.
pub fn lock(state: &Path, game_dir: &Path) -> Result<StateLock, String> {
    let game = game_dir
        .canonicalize()
        .unwrap_or_else(|_| game_dir.to_path_buf());
    let locks = state.join("locks");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&locks)
        .map_err(|e| format!("state folder {}: {e}", locks.display()))?;
    private(state)?;
    let err = |p: &Path, e: io::Error| format!("{}: {e}", p.display());
    // one mount at a time checks and takes its lock
    let guard_path = locks.join(".guard");
    let guard = open_rw(&guard_path).map_err(|e| err(&guard_path, e))?;
    // SAFETY: `guard` is an open file; a blocking lock held only for the checks below.
    if unsafe { libc::flock(guard.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(err(&guard_path, io::Error::last_os_error()));
    }
    let rd = std::fs::read_dir(&locks).map_err(|e| err(&locks, e))?;
    for e in rd.flatten() {
        let p = e.path();
        if p.extension() != Some(std::ffi::OsStr::new("lock")) {
            continue;
        }
        let Ok(mut f) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&p)
        else {
            continue;
        };
        if flock(&f, libc::LOCK_SH).map_err(|e| err(&p, e))? {
            continue; // nobody holds it
        }
        let mut text = String::new();
        let _ = Read::by_ref(&mut f).take(8192).read_to_string(&mut text);
        let mut lines = text.lines();
        let pid = lines.next().unwrap_or("?").to_string();
        let other = PathBuf::from(lines.next().unwrap_or_default());
        if other.as_os_str().is_empty() {
            continue;
        }
        if !(game.starts_with(&other) || other.starts_with(&game)) {
            continue;
        }
        // A killed holder keeps the lock until its last thread has closed its files, which
        // may be after its mount already reports ENOTCONN; its main thread may not read as a
        // zombie yet either. So a conflicting lock is waited for before refusing.
        let wait = if ended(&pid) { 1000 } else { 200 };
        if freed(&f, wait).map_err(|e| err(&p, e))? {
            continue;
        }
        return Err(format!(
            "the state folder {} is in use by the mount of {} (pid {pid}); two mounts of \
             the same (or a nested) game folder would drop each other's staged edits: \
             unmount it first or give this mount its own --state-dir",
            state.display(),
            other.display()
        ));
    }
    let mine = locks.join(format!(
        "{:016x}.lock",
        crate::fs::stage::fnv64(game.as_os_str().as_encoded_bytes())
    ));
    let mut f = open_rw(&mine).map_err(|e| err(&mine, e))?;
    if !flock(&f, libc::LOCK_EX).map_err(|e| err(&mine, e))? {
        return Err(format!(
            "the state folder {} is in use by another mount of {}",
            state.display(),
            game.display()
        ));
    }
    let text = format!("{}\n{}\n", std::process::id(), game.display());
    f.set_len(0)
        .and_then(|()| f.rewind())
        .and_then(|()| f.write_all(text.as_bytes()))
        .map_err(|e| err(&mine, e))?;
    Ok(StateLock { _file: f })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_that_is_gone_or_a_zombie_has_ended() {
        assert!(ended("4294967295"), "no such process");
        assert!(!ended(&std::process::id().to_string()), "this process runs");
        assert!(!ended("?"), "an unreadable pid is not taken as ended");
        // a child that exited and is not reaped yet is a zombie
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id().to_string();
        while !ended(&pid) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child.wait().unwrap();
    }

    #[test]
    fn a_second_lock_of_the_same_or_a_nested_folder_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let state = t.path().join("state");
        let game = t.path().join("game");
        std::fs::create_dir_all(game.join("sub")).unwrap();
        let other = t.path().join("other");
        std::fs::create_dir(&other).unwrap();
        let held = lock(&state, &game).unwrap();
        // flock locks belong to the open file, so a second open in this process conflicts
        let e = lock(&state, &game).unwrap_err();
        assert!(e.contains("in use"), "{e}");
        let e = lock(&state, &game.join("sub")).unwrap_err();
        assert!(e.contains("in use"), "{e}");
        let _o = lock(&state, &other).expect("another game folder may share the state folder");
        drop(held);
        let _again = lock(&state, &game).expect("free once the holder is gone");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&state).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
