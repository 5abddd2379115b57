//! The few system calls std does not offer, each a small safe wrapper.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

fn cpath(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A time to set: a given instant, now, or leave unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetTime {
    /// Leave as it is.
    Omit,
    /// The current time.
    Now,
    /// This instant.
    At(SystemTime),
}

fn timespec(t: SetTime) -> libc::timespec {
    match t {
        SetTime::Omit => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        SetTime::Now => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        SetTime::At(t) => {
            let (sec, nsec) = match t.duration_since(UNIX_EPOCH) {
                Ok(d) => (d.as_secs() as i64, d.subsec_nanos() as i64),
                Err(e) => {
                    let d = e.duration();
                    if d.subsec_nanos() == 0 {
                        (-(d.as_secs() as i64), 0)
                    } else {
                        (
                            -(d.as_secs() as i64) - 1,
                            1_000_000_000 - d.subsec_nanos() as i64,
                        )
                    }
                }
            };
            libc::timespec {
                tv_sec: sec as libc::time_t,
                tv_nsec: nsec as _,
            }
        }
    }
}

/// `utimensat(AT_FDCWD, path, …, AT_SYMLINK_NOFOLLOW)`.
pub(crate) fn set_times(path: &Path, atime: SetTime, mtime: SetTime) -> io::Result<()> {
    let c = cpath(path)?;
    let ts = [timespec(atime), timespec(mtime)];
    // SAFETY: `c` is a valid NUL-terminated string and `ts` two initialised timespecs.
    check(unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            ts.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })
}

/// `renameat2` with flags (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`).
pub(crate) fn rename2(from: &Path, to: &Path, flags: u32) -> io::Result<()> {
    let a = cpath(from)?;
    let b = cpath(to)?;
    // SAFETY: valid NUL-terminated strings.
    check(unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            flags as libc::c_uint,
        )
    })
}

/// `mknod(path, mode, rdev)`.
pub(crate) fn mknod(path: &Path, mode: u32, rdev: u32) -> io::Result<()> {
    let c = cpath(path)?;
    // SAFETY: valid NUL-terminated string.
    check(unsafe { libc::mknod(c.as_ptr(), mode as libc::mode_t, rdev as libc::dev_t) })
}

/// File system statistics of the file system holding `path`.
#[derive(Debug, Clone, Copy)]
pub struct StatFs {
    /// Total blocks (in `frsize` units).
    pub blocks: u64,
    /// Free blocks.
    pub bfree: u64,
    /// Free blocks for unprivileged users.
    pub bavail: u64,
    /// Total inodes.
    pub files: u64,
    /// Free inodes.
    pub ffree: u64,
    /// Block size.
    pub bsize: u32,
    /// Longest name.
    pub namelen: u32,
    /// Fragment size.
    pub frsize: u32,
}

/// `statvfs(path)`.
#[allow(clippy::unnecessary_cast)] // the field types differ between targets
pub(crate) fn statvfs(path: &Path) -> io::Result<StatFs> {
    let c = cpath(path)?;
    let mut s = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: valid string; `s` is writable memory of the right type.
    check(unsafe { libc::statvfs(c.as_ptr(), s.as_mut_ptr()) })?;
    // SAFETY: statvfs succeeded, so it filled `s` (and it was zeroed before anyway).
    let s = unsafe { s.assume_init() };
    Ok(StatFs {
        blocks: s.f_blocks as u64,
        bfree: s.f_bfree as u64,
        bavail: s.f_bavail as u64,
        files: s.f_files as u64,
        ffree: s.f_ffree as u64,
        bsize: s.f_bsize as u32,
        namelen: s.f_namemax as u32,
        frsize: s.f_frsize as u32,
    })
}

/// `umount2(path, flags)`; `lazy` detaches even when busy.
pub fn umount(path: &Path, lazy: bool) -> io::Result<()> {
    let c = cpath(path)?;
    let flags = if lazy { libc::MNT_DETACH } else { 0 };
    // SAFETY: valid NUL-terminated string.
    check(unsafe { libc::umount2(c.as_ptr(), flags) })
}

/// The effective user id.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The value of extended attribute `name` of `path` (following symlinks).
pub fn getxattr(path: &Path, name: &str) -> io::Result<Vec<u8>> {
    let p = cpath(path)?;
    let n = CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: `p` and `n` are NUL-terminated; `buf` has `buf.len()` writable bytes.
        let r =
            unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if r >= 0 {
            buf.truncate(r as usize);
            return Ok(buf);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ERANGE) || buf.len() >= 1 << 24 {
            return Err(e);
        }
        buf.resize(buf.len() * 4, 0);
    }
}
