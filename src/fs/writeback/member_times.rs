//! What an archive's plain members and folders show across commits, as the core asks it
//! (the records are `fs::staging::member_times`).

use crate::fs::core::{is_archive_path, Attr, Core};
use crate::fs::shared::{lock, part_of};
use crate::fs::stage::Ident;
use crate::fs::staging::member_times::Shown;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

impl Core {
    /// What plain member file or archive folder `vpath` (a folder when `dir`) of archive
    /// `rel` (whose metadata is `archive`) showed when it left the staging area, if that is
    /// recorded for the archive as it is. Paths inside GAF/TNT members and the folders of
    /// their exploded views have none (their staged files stay).
    pub(in crate::fs::writeback) fn member_shown(
        &self,
        rel: &Path,
        archive: &std::fs::Metadata,
        vpath: &str,
        dir: bool,
    ) -> Option<Shown> {
        if !self.writeback() || !is_archive_path(rel) || part_of(vpath).is_some() {
            return None;
        }
        if dir && part_of(&format!("{vpath}/x")).is_some() {
            return None;
        }
        let staged = self.staging(rel);
        let mut t = lock(&staged.times);
        t.members.get(&Ident::of(archive), vpath, dir)
    }

    /// Generated attributes `a` of member or folder `vpath` of archive `rel` with what it
    /// showed when it left the staging area, if recorded: its mtime and permission bits
    /// ([`Core::member_perm`]).
    pub(in crate::fs::writeback) fn with_member_shown(
        &self,
        a: &mut Attr,
        rel: &Path,
        archive: &std::fs::Metadata,
        vpath: &str,
        dir: bool,
    ) {
        if let Some(m) = self.member_shown(rel, archive, vpath, dir) {
            a.mtime = m.mtime();
            a.perm = self.member_perm(archive, vpath, m.mode) as u16;
        }
    }

    /// The permission bits recorded `mode` shows as for `vpath` of archive `archive`: no
    /// write bit the archive does not have (a write into a member is a write of the archive);
    /// the archive's folder itself within the archive's own bits (read and search where the
    /// archive is readable), so nobody reads a member of an archive they may not read.
    pub(in crate::fs::writeback) fn member_perm(
        &self,
        archive: &std::fs::Metadata,
        vpath: &str,
        mode: u32,
    ) -> u32 {
        let w = self.write_bits(archive.mode());
        if vpath.is_empty() {
            let r = archive.mode() & 0o444;
            mode & (r | w | (r >> 2))
        } else {
            mode & (0o555 | w)
        }
    }
}
