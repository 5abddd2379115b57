//! Who made the request being served: set by the FUSE adapter around the requests whose
//! answer depends on the caller (opening the root `.tafs-status`), read where that answer is
//! made ([`current`]), and the permission check done with it ([`may_search`]).

use std::cell::Cell;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The caller of a request: user, primary group, process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caller {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) pid: u32,
}

thread_local! {
    static CALLER: Cell<Option<Caller>> = const { Cell::new(None) };
}

/// Runs `f` with `c` as the caller of this thread's request.
pub(crate) fn with<T>(c: Caller, f: impl FnOnce() -> T) -> T {
    let before = CALLER.with(|x| x.replace(Some(c)));
    let r = f();
    CALLER.with(|x| x.set(before));
    r
}

/// The caller of the request this thread serves; `None` outside a request (the daemon).
pub(crate) fn current() -> Option<Caller> {
    CALLER.with(Cell::get)
}

/// The supplementary groups of process `pid` (from `/proc/PID/status`).
fn groups_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("Groups:").map(|g| {
                    g.split_whitespace()
                        .filter_map(|n| n.parse().ok())
                        .collect()
                })
            })
        })
        .unwrap_or_default()
}

/// Whether `c` may search (enter) every folder from `base` down to `dir` (`dir` inside
/// `base`, both included), by their mode bits; root may search everything.
pub(crate) fn may_search(c: Caller, base: &Path, dir: &Path) -> bool {
    if c.uid == 0 {
        return true;
    }
    let groups = groups_of(c.pid);
    let Ok(rest) = dir.strip_prefix(base) else {
        return false;
    };
    let mut p = base.to_path_buf();
    let mut folders = vec![p.clone()];
    for comp in rest.components() {
        p.push(comp);
        folders.push(p.clone());
    }
    folders.iter().all(|f| {
        let Ok(m) = std::fs::metadata(f) else {
            return false;
        };
        let mode = m.mode();
        let bit = if m.uid() == c.uid {
            0o100
        } else if m.gid() == c.gid || groups.contains(&m.gid()) {
            0o010
        } else {
            0o001
        };
        mode & bit != 0
    })
}

/// `perm` (the mode bits of a folder owned by `owner`) cut down so that no user gets a
/// permission from it that a second folder, mode `src` owned by `src_owner`, does not give
/// them: the rule of a merged folder, which must not grant more than any of the folders it
/// is made of. Where the owners differ, a class of users gets only what every class of the
/// other folder has (whom a user is to that folder is not known here).
pub(crate) fn no_more_than(perm: u32, owner: (u32, u32), src: u32, src_owner: (u32, u32)) -> u32 {
    let (o, g, t) = ((src >> 6) & 7, (src >> 3) & 7, src & 7);
    let least = o & g & t;
    let same_user = owner.0 == src_owner.0;
    let same_group = owner.1 == src_owner.1;
    let owner_bits = if same_user { o } else { g & t };
    let group_bits = if same_user && same_group { g } else { least };
    let other_bits = if same_user && same_group { t } else { least };
    perm & (owner_bits << 6 | group_bits << 3 | other_bits) | perm & !0o777
}

#[cfg(test)]
mod tests {
    use super::no_more_than;

    #[test]
    fn a_private_folder_closes_the_merged_one() {
        // archive folder shown r-x to all, loose `private/` root 0700: root alone
        assert_eq!(no_more_than(0o555, (0, 0), 0o700, (0, 0)), 0o500);
        // the same owner and the same bits: unchanged
        assert_eq!(no_more_than(0o555, (0, 0), 0o755, (0, 0)), 0o555);
        // another owner's 0700 folder: nobody gets in through the view
        assert_eq!(no_more_than(0o755, (1000, 1000), 0o700, (0, 0)), 0);
        // another owner's 0755 folder: r-x for everyone still
        assert_eq!(no_more_than(0o755, (1000, 1000), 0o755, (0, 0)), 0o555);
        // r without x for others keeps only r
        assert_eq!(no_more_than(0o555, (0, 0), 0o754, (0, 0)), 0o554);
    }
}
