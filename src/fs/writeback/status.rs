//! The status files: `.tafs-status` in every asset directory (the asset's state, its last
//! commit or error, what is uncommitted) and at the mount root (every asset with staged
//! files).

use crate::fs::core::inode::NodeKind;
use crate::fs::core::{lock, Attr, Core, ROOT};
use crate::fs::FsError;
use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Name of the hidden status file.
pub(in crate::fs) const STATUS_NAME: &str = ".tafs-status";

impl Core {
    /// The status text of asset `rel`.
    pub(in crate::fs) fn asset_status(&self, rel: &Path) -> String {
        let asset = self.slot(rel);
        let g = lock(&asset.stage);
        let Some(s) = g.as_ref() else {
            return "write-back off\n".into();
        };
        let state = if s.meta.conflict {
            "conflict"
        } else if s.meta.removing {
            "removing"
        } else if s.meta.status.starts_with("error") {
            "error"
        } else if !s.meta.dirty.is_empty() {
            "pending"
        } else {
            "clean"
        };
        let mut t = format!("{}: {state}\n", rel.display());
        if !s.meta.status.is_empty() {
            t.push_str(&format!("  {}\n", s.meta.status));
        }
        if !s.meta.dirty.is_empty() {
            let d: Vec<&str> = s.meta.dirty.iter().map(String::as_str).collect();
            t.push_str(&format!("  uncommitted: {}\n", d.join(", ")));
        }
        t
    }

    /// The bytes of a status file (`root` = an asset root, or [`ROOT`] for all assets).
    pub(in crate::fs) fn status_bytes(&self, root: u64) -> Result<Vec<u8>, FsError> {
        if root != ROOT {
            let rel = self.rel_path(root)?;
            return Ok(self.asset_status(&rel).into_bytes());
        }
        let assets: Vec<PathBuf> = {
            let all = lock(&self.assets);
            let mut v: Vec<PathBuf> = all
                .iter()
                .filter(|(_, a)| lock(&a.stage).as_ref().is_some_and(|s| s.active()))
                .map(|(p, _)| p.clone())
                .collect();
            v.sort();
            v
        };
        let mut t = String::new();
        for rel in assets {
            t.push_str(&self.asset_status(&rel));
        }
        if t.is_empty() {
            t.push_str("nothing staged\n");
        }
        Ok(t.into_bytes())
    }

    pub(in crate::fs) fn status_attr(&self, ino: u64, root: u64) -> Result<Attr, FsError> {
        let size = self.status_bytes(root)?.len() as u64;
        let m = fs::metadata(&self.game_dir)?;
        let mut a = self.gen_attr(ino, &m, false, size, 0);
        a.perm = 0o444;
        a.mtime = SystemTime::now();
        Ok(a)
    }

    pub(in crate::fs) fn status_node(&self, parent: u64, root: u64) -> Result<Attr, FsError> {
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
