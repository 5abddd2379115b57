//! What every room of the file system shares, importing no room back: the poison-tolerant
//! lock, times from stat fields, fingerprints of generated files and folders, paths in a view,
//! the status file's name, where a path of an asset directory is ([`Loc`]) and what a
//! creation asks for ([`NewNode`]).

use std::ffi::OsStr;
use std::fs::Metadata;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Locks `m`, taking the value over from a thread that panicked while holding it (the
/// state each lock guards stays consistent between statements).
pub(in crate::fs) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The instant `sec` seconds and `nsec` nanoseconds from the epoch (`nsec` clamped).
pub(in crate::fs) fn time(sec: i64, nsec: i64) -> SystemTime {
    let nsec = nsec.clamp(0, 999_999_999) as u32;
    if sec >= 0 {
        UNIX_EPOCH + Duration::new(sec as u64, nsec)
    } else {
        UNIX_EPOCH - Duration::from_secs(sec.unsigned_abs()) + Duration::new(0, nsec)
    }
}

/// The fingerprint of a generated file's bytes.
pub(in crate::fs) fn fingerprint(bytes: &[u8]) -> u64 {
    ((bytes.len() as u64) << 32) | u64::from(crc32fast::hash(bytes))
}

/// The fingerprint of a generated folder: its names (and which are folders), in order.
pub(in crate::fs) fn folder_fingerprint(kids: &[(String, bool)]) -> u64 {
    let mut h = crc32fast::Hasher::new();
    for (n, d) in kids {
        h.update(n.as_bytes());
        h.update(if *d { b"/\0" } else { b"\0" });
    }
    ((kids.len() as u64) << 32) | u64::from(h.finalize())
}

/// `dir/name` in a view (`name` in the top folder when `dir` is empty).
pub(in crate::fs) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// What a `mknod`, `mkdir` or `create` asks for: the folder and name of the new node and
/// its mode with the caller's umask (its owner is the [`super::Caller`] of the request).
#[derive(Debug, Clone, Copy)]
pub struct NewNode<'a> {
    /// The folder to create in.
    pub parent: u64,
    /// The new node's name.
    pub name: &'a OsStr,
    /// File type and permission bits asked for.
    pub mode: u32,
    /// The caller's umask, taken off `mode`.
    pub umask: u32,
}

impl<'a> NewNode<'a> {
    /// `name` in folder `parent`, mode `mode` less `umask`.
    pub fn new(parent: u64, name: &'a OsStr, mode: u32, umask: u32) -> NewNode<'a> {
        NewNode {
            parent,
            name,
            mode,
            umask,
        }
    }
}

/// Name of the hidden status file.
pub(in crate::fs) const STATUS_NAME: &str = ".tafs-status";

/// Where a path of an asset directory is, staged state on top of the generated view.
pub(in crate::fs) enum Loc {
    None,
    Dir,
    Staged(Metadata),
    Gen,
}

/// The GAF/TNT member (by name) that path `vpath` of an archive directory is inside of, if
/// any: the components up to the first one named like an asset, when more follow.
pub(in crate::fs) fn part_of(vpath: &str) -> Option<&str> {
    let mut start = 0;
    while let Some(off) = vpath.get(start..).and_then(|r| r.find('/')) {
        let end = start + off;
        if vpath
            .get(start..end)
            .is_some_and(|c| crate::view::AssetKind::from_name(c).is_some())
        {
            return vpath.get(..end);
        }
        start = end + 1;
    }
    None
}

/// Bytes the system allocator takes for a block of `n` bytes (glibc: 8 bytes of header,
/// 16-byte steps, 32 at least), for the estimates of the `heap-stats` feature.
#[cfg(feature = "heap-stats")]
pub(in crate::fs) fn chunk(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        ((n + 8 + 15) & !15).max(32)
    }
}

/// Bytes a `HashMap`/`HashSet` of capacity `cap` and entries of `entry` bytes takes.
#[cfg(feature = "heap-stats")]
pub(in crate::fs) fn table_bytes(cap: usize, entry: usize) -> usize {
    if cap == 0 {
        return 0;
    }
    let buckets = (cap * 8 / 7).next_power_of_two();
    chunk(buckets * (entry + 1) + 16)
}

/// Bytes the file systems of this process hold for what they show, for as long as they show
/// it (inode nodes, layout entries), counted at the average size of each: the budgets of
/// decoded views make room for them ([`crate::fs::budget`]).
static METADATA: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts `n` more bytes of metadata held.
pub(in crate::fs) fn metadata_add(n: u64) {
    METADATA.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
}

/// Counts `n` bytes of metadata given back.
pub(in crate::fs) fn metadata_sub(n: u64) {
    let _ = METADATA.fetch_update(
        std::sync::atomic::Ordering::Relaxed,
        std::sync::atomic::Ordering::Relaxed,
        |m| Some(m.saturating_sub(n)),
    );
}

/// Bytes of metadata held now.
pub(in crate::fs) fn metadata_bytes() -> u64 {
    METADATA.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_times_convert() {
        assert_eq!(
            time(-1, 500_000_000),
            UNIX_EPOCH - Duration::from_millis(500)
        );
        assert_eq!(time(2, 0), UNIX_EPOCH + Duration::from_secs(2));
    }

    #[test]
    fn fingerprints_tell_folders_and_bytes_apart() {
        assert_ne!(fingerprint(b"ab"), fingerprint(b"ba"));
        assert_ne!(
            folder_fingerprint(&[("a".into(), true)]),
            folder_fingerprint(&[("a".into(), false)])
        );
        assert_eq!(
            folder_fingerprint(&[("a".into(), false), ("b".into(), false)]),
            folder_fingerprint(&[("a".into(), false), ("b".into(), false)])
        );
    }
}
