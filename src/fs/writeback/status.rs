//! The status files: `.tafs-status` in every asset directory (the asset's state, its last
//! commit or error, what is uncommitted) and at the mount root (every asset with staged
//! files in a folder the caller may enter).

use crate::fs::core::inode::NodeKind;
use crate::fs::core::{Attr, Core, ROOT};
use crate::fs::shared::STATUS_NAME;
use crate::fs::{Caller, FsError};
use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

impl Core {
    /// The status text of asset `rel`.
    /// Never waits: an asset whose staging area is held (a commit in progress) says so.
    pub(in crate::fs::writeback) fn asset_status(&self, rel: &Path) -> String {
        let staged = self.staging(rel);
        let g = match staged.stage.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                return format!("{}: busy\n  commit in progress\n", rel.display());
            }
        };
        let Some(s) = g.as_ref() else {
            return "write-back off\n".into();
        };
        let state = if s.meta.conflict {
            "conflict"
        } else if s.meta.removing {
            "removing"
        } else if s.meta.status.is_error() {
            "error"
        } else if !s.meta.dirty.is_empty() && self.deferred_for(rel) {
            "staged"
        } else if !s.meta.dirty.is_empty() {
            "pending"
        } else {
            "clean"
        };
        let mut t = format!("{}: {state}\n", rel.display());
        if !s.meta.status.is_none() {
            t.push_str(&format!("  {}\n", s.meta.status));
        }
        // every commit of the last operation, unless it is the one line above
        if let Some(o) = &s.meta.operation {
            let n = o.commits.len() + o.more;
            let alone = n == 1 && o.commits.first() == Some(&s.meta.status.to_string());
            if n > 0 && !alone {
                t.push_str(&format!(
                    "  last operation: {n} commit{} (one version in the history):\n",
                    if n == 1 { "" } else { "s" }
                ));
                if o.more > 0 {
                    t.push_str(&format!("    … {} earlier commits\n", o.more));
                }
                for c in &o.commits {
                    t.push_str(&format!("    {c}\n"));
                }
            }
        }
        if !s.meta.dirty.is_empty() {
            let d: Vec<&str> = s.meta.dirty.iter().map(String::as_str).collect();
            t.push_str(&format!("  uncommitted: {}\n", d.join(", ")));
        }
        t
    }

    /// The bytes of a status file (`root` = an asset root, or [`ROOT`] for all assets).
    pub(in crate::fs::writeback) fn status_bytes(
        &self,
        root: u64,
        c: Caller,
    ) -> Result<Vec<u8>, FsError> {
        if root != ROOT {
            let rel = self.rel_path(root)?;
            return Ok(self.asset_status(&rel).into_bytes());
        }
        // assets staged before a remount are reported without being looked up first
        if let Some(sd) = &self.opts.state_dir {
            let game =
                std::path::absolute(&self.game_dir).unwrap_or_else(|_| self.game_dir.clone());
            for b in &self.staged_index(sd).binaries {
                if let Ok(rel) = b.strip_prefix(&game) {
                    if !rel.as_os_str().is_empty() {
                        self.staging(rel);
                    }
                }
            }
        }
        // the global lock only to copy the list: staging areas are looked at without it,
        // and one held by a commit is reported busy, not waited for
        let mut all = self.wb.all();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        // only the assets in folders the caller may enter (no names or errors of assets in
        // someone's 0700 folder)
        all.retain(|(rel, _)| {
            let dir = self.abs(rel);
            let dir = dir.parent().unwrap_or(&self.game_dir);
            crate::fs::caller::may_search(c, &self.game_dir, dir)
        });
        let mut t = String::new();
        for (rel, a) in all {
            let active = match a.stage.try_lock() {
                Ok(g) => g.as_ref().is_some_and(|s| s.active()),
                Err(std::sync::TryLockError::Poisoned(p)) => {
                    p.into_inner().as_ref().is_some_and(|s| s.active())
                }
                Err(std::sync::TryLockError::WouldBlock) => true,
            };
            if active {
                t.push_str(&self.asset_status(&rel));
            }
        }
        if t.is_empty() {
            t.push_str("nothing staged\n");
        }
        t.push_str(&self.change_detection());
        t.push('\n');
        t.push_str(&self.index_status());
        #[cfg(feature = "heap-stats")]
        t.push_str(&self.memory_status());
        Ok(t.into_bytes())
    }

    /// Attributes of a status file. Its size is that of the whole text (as root reads it):
    /// an open serves the caller's text, never longer, read to its end.
    pub(in crate::fs::writeback) fn status_attr(
        &self,
        ino: u64,
        root: u64,
    ) -> Result<Attr, FsError> {
        let size = self.status_bytes(root, Caller::root())?.len() as u64;
        let m = fs::metadata(&self.game_dir)?;
        let mut a = self.gen_attr(ino, &m, false, size, 0);
        a.perm = 0o444;
        a.mtime = SystemTime::now();
        Ok(a)
    }

    pub(in crate::fs::writeback) fn status_node(
        &self,
        parent: u64,
        root: u64,
    ) -> Result<Attr, FsError> {
        let ino = self.table_mut().child(
            parent,
            OsStr::new(STATUS_NAME),
            |k| matches!(k, NodeKind::Status { root: r } if *r == root),
            NodeKind::Status { root },
            None,
        );
        self.status_attr(ino, root)
    }
}
