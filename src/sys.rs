//! The few system calls std does not offer, each a small safe wrapper.

use std::ffi::{CString, OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
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

// ---------------------------------------------------------------------------------------
// Descriptor-relative access to the game folder. Every pass-through request names a file as
// (directory, name): the directory is opened beneath the game folder's descriptor with
// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so no symlink is followed and nothing
// outside the game folder is reached whatever is swapped in meanwhile; the last component is
// then acted on with an `*at` call that does not follow it either. Only the length of one
// component matters, not the length of the whole path.

fn cname(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn fd_of(rc: libc::c_long) -> io::Result<OwnedFd> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: the kernel just returned this descriptor; nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(rc as RawFd) })
    }
}

/// An `O_PATH` descriptor of the directory `path` (the game folder itself; followed as given).
pub(crate) fn open_dir_path(path: &Path) -> io::Result<OwnedFd> {
    let c = cpath(path)?;
    // SAFETY: valid NUL-terminated string.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    fd_of(fd as libc::c_long)
}

fn openat2(dir: BorrowedFd, rel: &[u8], flags: i32) -> io::Result<OwnedFd> {
    let c = CString::new(rel).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: open_how is plain data; zeroed is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: `c` is NUL-terminated, `how` is initialised and its size is passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    fd_of(rc)
}

/// Whether file `f` holds exactly `bytes` (its size first, then block by block with
/// `pread`, never holding the file whole).
pub(crate) fn file_holds(f: &File, bytes: &[u8]) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    const BLOCK: usize = 256 << 10;
    if f.metadata()?.len() != bytes.len() as u64 {
        return Ok(false);
    }
    let mut buf = vec![0u8; BLOCK.min(bytes.len())];
    let mut at = 0u64;
    for chunk in bytes.chunks(BLOCK) {
        let Some(b) = buf.get_mut(..chunk.len()) else {
            return Ok(false);
        };
        f.read_exact_at(b, at)?;
        if b != chunk {
            return Ok(false);
        }
        at += chunk.len() as u64;
    }
    Ok(true)
}

/// The status of `rel` beneath `root` in one `openat2` (`O_PATH`, no symlink followed on
/// the way or at the end: a symlink's own status), for paths of at most 2,048 bytes
/// (`None` for longer ones, which [`open_dir_beneath`] opens in pieces).
pub(crate) fn lstat_beneath(root: BorrowedFd, rel: &Path) -> Option<io::Result<fs::Metadata>> {
    let b = rel.as_os_str().as_bytes();
    if b.len() > 2048 || b.is_empty() {
        return None;
    }
    Some(openat2(root, b, libc::O_PATH | libc::O_NOFOLLOW).and_then(|fd| File::from(fd).metadata()))
}

/// The directory `rel` (relative, no `..`) beneath `root`, as an `O_PATH` descriptor; no
/// symlink on the way is followed (`ELOOP`), nothing outside `root` is reached (`EXDEV`).
/// Long paths are opened in pieces, so only each component's length is limited.
pub(crate) fn open_dir_beneath(root: BorrowedFd, rel: &Path) -> io::Result<OwnedFd> {
    const PIECE: usize = 2048;
    let mut cur: Option<OwnedFd> = None;
    let mut piece: Vec<u8> = Vec::new();
    let flags = libc::O_PATH | libc::O_DIRECTORY;
    let comps: Vec<&[u8]> = rel
        .as_os_str()
        .as_bytes()
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .collect();
    for c in comps {
        if c == b".." {
            return Err(io::Error::from_raw_os_error(libc::EXDEV));
        }
        if !piece.is_empty() && piece.len() + 1 + c.len() > PIECE {
            let at = cur.as_ref().map(|f| f.as_fd()).unwrap_or(root);
            cur = Some(openat2(at, &piece, flags)?);
            piece.clear();
        }
        if !piece.is_empty() {
            piece.push(b'/');
        }
        piece.extend_from_slice(c);
    }
    if piece.is_empty() {
        piece.push(b'.');
    }
    let at = cur.as_ref().map(|f| f.as_fd()).unwrap_or(root);
    openat2(at, &piece, flags)
}

/// `openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)`.
pub(crate) fn open_at(dir: BorrowedFd, name: &OsStr, flags: i32, mode: u32) -> io::Result<File> {
    let c = cname(name)?;
    // SAFETY: valid NUL-terminated string; `dir` is an open descriptor.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    Ok(File::from(fd_of(fd as libc::c_long)?))
}

/// The status of `name` in `dir`, not following it (`lstat`).
pub(crate) fn lstat_at(dir: BorrowedFd, name: &OsStr) -> io::Result<fs::Metadata> {
    open_at(dir, name, libc::O_PATH, 0)?.metadata()
}

/// The entries of the directory `name` in `dir` (not following `name`).
pub(crate) fn read_dir_at(dir: BorrowedFd, name: &OsStr) -> io::Result<fs::ReadDir> {
    let f = open_at(dir, name, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    // The descriptor's own entry in /proc reopens exactly this directory.
    fs::read_dir(format!("/proc/self/fd/{}", f.as_raw_fd()))
}

/// `mkdirat(dir, name, mode)`.
pub(crate) fn mkdir_at(dir: BorrowedFd, name: &OsStr, mode: u32) -> io::Result<()> {
    let c = cname(name)?;
    // SAFETY: valid NUL-terminated string.
    check(unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), mode as libc::mode_t) })
}

/// `mknodat(dir, name, mode, rdev)`.
pub(crate) fn mknod_at(dir: BorrowedFd, name: &OsStr, mode: u32, rdev: u32) -> io::Result<()> {
    let c = cname(name)?;
    // SAFETY: valid NUL-terminated string.
    check(unsafe {
        libc::mknodat(
            dir.as_raw_fd(),
            c.as_ptr(),
            mode as libc::mode_t,
            rdev as libc::dev_t,
        )
    })
}

/// `symlinkat(target, dir, name)`.
pub(crate) fn symlink_at(target: &Path, dir: BorrowedFd, name: &OsStr) -> io::Result<()> {
    let t = cpath(target)?;
    let c = cname(name)?;
    // SAFETY: valid NUL-terminated strings.
    check(unsafe { libc::symlinkat(t.as_ptr(), dir.as_raw_fd(), c.as_ptr()) })
}

/// `linkat(odir, oname, ndir, nname, 0)` (a symlink is linked itself).
pub(crate) fn link_at(
    odir: BorrowedFd,
    oname: &OsStr,
    ndir: BorrowedFd,
    nname: &OsStr,
) -> io::Result<()> {
    let a = cname(oname)?;
    let b = cname(nname)?;
    // SAFETY: valid NUL-terminated strings.
    check(unsafe {
        libc::linkat(
            odir.as_raw_fd(),
            a.as_ptr(),
            ndir.as_raw_fd(),
            b.as_ptr(),
            0,
        )
    })
}

/// `unlinkat(dir, name, dir_too ? AT_REMOVEDIR : 0)`.
pub(crate) fn unlink_at(dir: BorrowedFd, name: &OsStr, rmdir: bool) -> io::Result<()> {
    let c = cname(name)?;
    let flags = if rmdir { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: valid NUL-terminated string.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), flags) })
}

/// `renameat2(odir, oname, ndir, nname, flags)`.
pub(crate) fn rename_at(
    odir: BorrowedFd,
    oname: &OsStr,
    ndir: BorrowedFd,
    nname: &OsStr,
    flags: u32,
) -> io::Result<()> {
    let a = cname(oname)?;
    let b = cname(nname)?;
    // SAFETY: valid NUL-terminated strings.
    check(unsafe {
        libc::renameat2(
            odir.as_raw_fd(),
            a.as_ptr(),
            ndir.as_raw_fd(),
            b.as_ptr(),
            flags as libc::c_uint,
        )
    })
}

/// `readlinkat(dir, name)`.
pub(crate) fn readlink_at(dir: BorrowedFd, name: &OsStr) -> io::Result<Vec<u8>> {
    let c = cname(name)?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: valid string; `buf` has `buf.len()` writable bytes.
    let n = unsafe {
        libc::readlinkat(
            dir.as_raw_fd(),
            c.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// `fchmodat2(dir, name, mode, AT_SYMLINK_NOFOLLOW)` (`EOPNOTSUPP` on a symlink).
pub(crate) fn chmod_at(dir: BorrowedFd, name: &OsStr, mode: u32) -> io::Result<()> {
    let c = cname(name)?;
    // SAFETY: valid NUL-terminated string.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_fchmodat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            mode as libc::mode_t,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    match check(rc as libc::c_int) {
        // before Linux 6.6: through the file's own /proc entry (an O_PATH descriptor of the
        // entry itself, so a symlink is never followed)
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            let f = open_at(dir, name, libc::O_PATH, 0)?;
            if f.metadata()?.file_type().is_symlink() {
                return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
            }
            let proc = format!("/proc/self/fd/{}", f.as_raw_fd());
            fs::set_permissions(proc, std::os::unix::fs::PermissionsExt::from_mode(mode))
        }
        r => r,
    }
}

/// `fchownat(dir, name, uid, gid, AT_SYMLINK_NOFOLLOW)` (`None`: unchanged).
pub(crate) fn chown_at(
    dir: BorrowedFd,
    name: &OsStr,
    uid: Option<u32>,
    gid: Option<u32>,
) -> io::Result<()> {
    let c = cname(name)?;
    let u = uid.unwrap_or(u32::MAX);
    let g = gid.unwrap_or(u32::MAX);
    // SAFETY: valid NUL-terminated string.
    check(unsafe { libc::fchownat(dir.as_raw_fd(), c.as_ptr(), u, g, libc::AT_SYMLINK_NOFOLLOW) })
}

/// `utimensat(dir, name, …, AT_SYMLINK_NOFOLLOW)`.
pub(crate) fn set_times_at(
    dir: BorrowedFd,
    name: &OsStr,
    atime: SetTime,
    mtime: SetTime,
) -> io::Result<()> {
    let c = cname(name)?;
    let ts = [timespec(atime), timespec(mtime)];
    // SAFETY: valid string and two initialised timespecs.
    check(unsafe {
        libc::utimensat(
            dir.as_raw_fd(),
            c.as_ptr(),
            ts.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })
}

/// The parent directory of `rel` beneath `root` (see [`open_dir_beneath`]) and the last
/// component of `rel` (`.` for `root` itself).
pub(crate) fn parent_beneath(root: BorrowedFd, rel: &Path) -> io::Result<(OwnedFd, OsString)> {
    match (rel.parent(), rel.file_name()) {
        (Some(p), Some(n)) => Ok((open_dir_beneath(root, p)?, n.to_os_string())),
        _ => Ok((open_dir_beneath(root, Path::new(""))?, OsString::from("."))),
    }
}

/// Opens `name` in `dir` for reading, following it when it is a symlink only if `follow`
/// allows that symlink's owner and the owner of the file it leads to (`follow(link_uid,
/// file_uid)`); `EACCES` otherwise. The link is read through a descriptor of the link itself,
/// so the file opened is the target of the very link whose owner was checked.
pub(crate) fn open_read_at(
    dir: BorrowedFd,
    name: &OsStr,
    follow: impl Fn(u32, u32) -> bool,
) -> io::Result<File> {
    match open_at(dir, name, libc::O_RDONLY | libc::O_NONBLOCK, 0) {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {}
        r => return r,
    }
    let link = open_at(dir, name, libc::O_PATH, 0)?;
    let link_uid = link.metadata()?.uid();
    let target = readlink_at(link.as_fd(), OsStr::new(""))?;
    let t = CString::new(target).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: valid NUL-terminated string; `dir` is an open descriptor.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            t.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    let file = File::from(fd_of(fd as libc::c_long)?);
    if follow(link_uid, file.metadata()?.uid()) {
        Ok(file)
    } else {
        Err(io::Error::from_raw_os_error(libc::EACCES))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn lstat_beneath_follows_no_symlink_and_stays_beneath() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::create_dir_all(r.join("a/b")).unwrap();
        fs::write(r.join("a/b/f.txt"), b"12345").unwrap();
        symlink("b", r.join("a/link")).unwrap();
        symlink("b/f.txt", r.join("a/flink")).unwrap();
        let root = open_dir_path(r).unwrap();
        let st = |p: &str| lstat_beneath(root.as_fd(), Path::new(p));
        assert_eq!(st("a/b/f.txt").unwrap().unwrap().len(), 5);
        assert!(st("a/b").unwrap().unwrap().is_dir());
        // a symlink at the end: its own status
        assert!(st("a/flink").unwrap().unwrap().file_type().is_symlink());
        // a symlink on the way, and escapes, are refused
        let err = |p: &str| st(p).unwrap().unwrap_err().raw_os_error();
        assert_eq!(err("a/link/f.txt"), Some(libc::ELOOP));
        assert_eq!(err("../x"), Some(libc::EXDEV));
        assert_eq!(err("/etc/passwd"), Some(libc::EXDEV));
        assert_eq!(err("a/none"), Some(libc::ENOENT));
        // nothing to stat, and paths opened in pieces, are left to the caller
        assert!(st("").is_none());
        assert!(st(&"x/".repeat(1100)).is_none());
    }
}
