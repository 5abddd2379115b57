//! The run file of a serving mount: how `tafs umount MNT` finds the process serving MNT and
//! asks it to unmount itself.
//!
//! The folder is `$XDG_RUNTIME_DIR/tafs`, else `/run/tafs` for root, else
//! `$TMPDIR/tafs-run-<uid>`. Another local user may have created that folder first (a sticky
//! `/tmp` lets anyone), so it is used only when it is a real folder (never a symlink) owned by
//! the caller that no one else may write; every file in it is opened relative to the folder's
//! descriptor with `O_NOFOLLOW`, created with `O_EXCL` and renamed into place. A run file names
//! the process, its start time and the mountpoint; before signalling, `tafs umount` checks that
//! the process still is that one (same start time), belongs to the caller and holds a FUSE
//! connection, and that MNT is a FUSE mount. Anything else is ignored and the mount is
//! unmounted directly.

use std::ffi::CString;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Where run files live for this user (the folder may not exist yet).
pub fn run_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR") {
        let x = PathBuf::from(x);
        if x.is_absolute() {
            return x.join("tafs");
        }
    }
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        PathBuf::from("/run/tafs")
    } else {
        std::env::temp_dir().join(format!("tafs-run-{uid}"))
    }
}

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::ErrorKind::InvalidInput.into())
}

fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: `st` is written by fstat before it is read; `fd` is open.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd.as_raw_fd(), &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st)
    }
}

/// Opens (creating it 0700 when missing) the run folder `dir`, refusing a symlink, a folder
/// owned by someone else and one that others may write.
pub fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
    let c = cstr(dir)?;
    // SAFETY: `c` is a valid C string. EEXIST is checked below like any existing folder.
    if unsafe { libc::mkdir(c.as_ptr(), 0o700) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    // SAFETY: `c` is a valid C string; the result is checked.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let st = fstat(&fd)?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if st.st_uid != uid || st.st_mode & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{}: owned by uid {} with mode {:o}; a run folder must be yours and writable only by you",
                dir.display(),
                st.st_uid,
                st.st_mode & 0o7777
            ),
        ));
    }
    Ok(fd)
}

/// The run file's name for `mnt` (a stable hash of its absolute path).
fn name_of(mnt: &Path) -> CString {
    let abs = std::path::absolute(mnt).unwrap_or_else(|_| mnt.to_path_buf());
    let h = crate::fs::stage::fnv64(abs.as_os_str().as_bytes());
    CString::new(format!("{h:016x}.pid")).unwrap_or_default()
}

/// The start time of process `pid` (field 22 of `/proc/PID/stat`), in clock ticks.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Records this process as the server of `mnt`. Failures are logged, never fatal: without a
/// run file `tafs umount` unmounts directly.
pub fn write(mnt: &Path) {
    let dir = run_dir();
    let r = open_dir(&dir).and_then(|d| {
        let me = std::process::id() as i32;
        let abs = std::path::absolute(mnt)?;
        let text = format!("{me}\n{}\n{}\n", start_time(me).unwrap_or(0), abs.display());
        let name = name_of(mnt);
        let tmp = CString::new(format!("{}.{me}.tmp", name.to_string_lossy()))
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: valid descriptor and C strings; the result is checked.
        unsafe { libc::unlinkat(d.as_raw_fd(), tmp.as_ptr(), 0) };
        // SAFETY: as above.
        let fd = unsafe {
            libc::openat(
                d.as_raw_fd(),
                tmp.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let mut f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        f.write_all(text.as_bytes())?;
        // SAFETY: valid descriptor and C strings.
        if unsafe { libc::renameat(d.as_raw_fd(), tmp.as_ptr(), d.as_raw_fd(), name.as_ptr()) } != 0
        {
            let e = io::Error::last_os_error();
            // SAFETY: as above.
            unsafe { libc::unlinkat(d.as_raw_fd(), tmp.as_ptr(), 0) };
            return Err(e);
        }
        Ok(())
    });
    if let Err(e) = r {
        log::warn!(
            "no run file for {} ({e}); `tafs umount` will unmount it directly",
            mnt.display()
        );
    }
}

/// What a run file says: the serving process, its start time and the mountpoint.
#[derive(Debug, PartialEq, Eq)]
pub struct Record {
    /// The serving process.
    pub pid: i32,
    /// Its start time in clock ticks (tells a reused pid apart).
    pub start: u64,
    /// The absolute mountpoint.
    pub mnt: PathBuf,
}

fn open_file(d: &OwnedFd, name: &CString) -> io::Result<std::fs::File> {
    // SAFETY: valid descriptor and C string; the result is checked.
    let fd = unsafe {
        libc::openat(
            d.as_raw_fd(),
            name.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Reads the run file of `mnt`, if there is a trustworthy one.
pub fn read(mnt: &Path) -> Option<Record> {
    let d = open_dir(&run_dir()).ok()?;
    let f = open_file(&d, &name_of(mnt)).ok()?;
    let st = fstat(&OwnedFd::from(f.try_clone().ok()?)).ok()?;
    // SAFETY: geteuid has no preconditions.
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_uid != unsafe { libc::geteuid() } {
        return None;
    }
    let mut text = String::new();
    f.take(4096).read_to_string(&mut text).ok()?;
    let mut lines = text.lines();
    let pid = lines.next()?.trim().parse().ok()?;
    let start = lines.next()?.trim().parse().ok()?;
    let mnt = PathBuf::from(lines.next()?);
    Some(Record { pid, start, mnt })
}

/// Removes this process's run file of `mnt` (only when it still names this process).
pub fn remove(mnt: &Path) {
    let Ok(d) = open_dir(&run_dir()) else {
        return;
    };
    if read(mnt).is_some_and(|r| r.pid == std::process::id() as i32) {
        // SAFETY: valid descriptor and C string.
        unsafe { libc::unlinkat(d.as_raw_fd(), name_of(mnt).as_ptr(), 0) };
    }
}

/// Whether `mnt` is a FUSE mount right now (from `/proc/self/mountinfo`).
fn is_fuse_mount(mnt: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = mnt.as_os_str().as_bytes();
    info.lines().any(|l| {
        let mut f = l.split(' ');
        let point = f.nth(4).map(unescape_octal);
        let fstype = l.split(" - ").nth(1).and_then(|r| r.split(' ').next());
        point.as_deref() == Some(want) && fstype.is_some_and(|t| t.starts_with("fuse"))
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_octal(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|o| o.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], oct) {
            (b'\\', Some(o)) => {
                out.push((o[0] - b'0') << 6 | (o[1] - b'0') << 3 | (o[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Whether the process of `r` is alive, is the one that wrote `r`, belongs to the caller,
/// holds `/dev/fuse` open, and `mnt` (the same path as recorded) is a FUSE mount.
pub fn serves(r: &Record, mnt: &Path) -> bool {
    let Ok(abs) = std::path::absolute(mnt) else {
        return false;
    };
    if r.pid <= 1 || r.mnt != abs || start_time(r.pid) != Some(r.start) {
        return false;
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", r.pid)).unwrap_or_default();
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() }.to_string();
    let owner_ok = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .is_some_and(|u| u.split_whitespace().nth(1) == Some(me.as_str()));
    let holds_fuse = std::fs::read_dir(format!("/proc/{}/fd", r.pid))
        .map(|rd| {
            rd.flatten()
                .any(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == Path::new("/dev/fuse")))
        })
        .unwrap_or(false);
    owner_ok && holds_fuse && is_fuse_mount(&abs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape_octal(r"/tmp/a\040b\\"), b"/tmp/a b\\\\".to_vec());
        assert_eq!(unescape_octal(r"/x\134y"), b"/x\\y".to_vec());
        assert_eq!(unescape_octal(r"\04"), b"\\04".to_vec());
    }

    #[test]
    fn names_are_stable_and_distinct() {
        assert_eq!(name_of(Path::new("/a/b")), name_of(Path::new("/a/b")));
        assert_ne!(name_of(Path::new("/a/b")), name_of(Path::new("/a/c")));
    }

    #[test]
    fn own_start_time_is_known() {
        assert!(start_time(std::process::id() as i32).is_some());
    }

    #[test]
    fn refuses_a_folder_others_may_write() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("run");
        std::fs::create_dir(&d).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(open_dir(&d).is_err());
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(open_dir(&d).is_ok());
        let l = t.path().join("link");
        std::os::unix::fs::symlink(&d, &l).unwrap();
        assert!(
            open_dir(&l).is_err(),
            "a symlinked run folder is never followed"
        );
    }
}
