//! Archive commits put off while saves keep coming (SEMANTICS.md, "Writing inside
//! archives"). Every commit of an archive rewrites it whole, so the saves of its plain
//! members (close, rename onto a member), its deletions and the folders made or removed in
//! it commit together: once no such save came for [`MountOptions::archive_commit_delay`],
//! and at the latest [`MAX_WAIT`] after the first. An `rsync`, `cp -r` or `tar x` of many
//! files is then one repack instead of one per file (two for `tar x` over members: it
//! deletes each file before writing it), and a deletion followed by the same file written
//! again changes nothing. An `fsync` commits at once; so do a save inside a GAF/TNT member
//! (its rebuild is checked, and a bad one fails the save), a GAF/TNT binary copied in and a
//! folder rename, each taking along what was put off. What is put off is committed when the
//! mount ends ([`Core::finish_deferred`]) or the core is dropped.
//!
//! [`MountOptions::archive_commit_delay`]: crate::fs::MountOptions::archive_commit_delay

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The longest a save waits for its commit while others keep coming.
pub(in crate::fs) const MAX_WAIT: Duration = Duration::from_secs(5);

/// The archives with commits put off, and the committer's wake-up.
#[derive(Default)]
pub(in crate::fs) struct Deferred {
    pub(in crate::fs) due: Mutex<HashMap<PathBuf, Due>>,
    pub(in crate::fs) wake: Condvar,
    /// A committer runs (else every commit is made at once).
    pub(in crate::fs) running: AtomicBool,
    /// The core is gone: the committer stops.
    pub(in crate::fs) closed: AtomicBool,
    /// Held while commits put off are made (the end of the mount waits for them).
    pub(in crate::fs) busy: Mutex<()>,
}

/// One archive's put-off commit.
pub(in crate::fs) struct Due {
    pub(in crate::fs) first: Instant,
    pub(in crate::fs) last: Instant,
    pub(in crate::fs) trigger: String,
}

impl Due {
    pub(in crate::fs) fn at(&self, delay: Duration) -> Instant {
        (self.last + delay).min(self.first + MAX_WAIT)
    }
}
