//! Who made a request: [`Caller`], filled by the FUSE adapter from each request and passed
//! with it to every [`super::FsOps`] operation, and the permission check done with it
//! ([`may_search`]).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The caller of a request: user, primary group, process. The supplementary groups are read
/// from the process (`/proc/PID/status`) only when a check needs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    /// User.
    pub uid: u32,
    /// Primary group.
    pub gid: u32,
    /// Process (0: none known, so no supplementary groups).
    pub pid: u32,
}

impl Caller {
    /// Root, from no particular process: what the daemon itself and core-driven tests ask as.
    pub const fn root() -> Caller {
        Caller::of(0, 0)
    }

    /// User `uid`, group `gid`, without supplementary groups.
    pub const fn of(uid: u32, gid: u32) -> Caller {
        Caller { uid, gid, pid: 0 }
    }
}

/// The supplementary groups of process `pid` (from `/proc/PID/status`; none for pid 0).
fn groups_of(pid: u32) -> Vec<u32> {
    if pid == 0 {
        return Vec::new();
    }
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
