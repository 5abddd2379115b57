//! Times of generated files across commits, the write side: a commit keeps the version it
//! replaced to compare with, and the end of the mount decides and records what was not
//! looked at (the records are `fs::staging::times`; the read side, `Core::kept_mtime`, is
//! in `fs::core::attr`).

use crate::fs::core::Core;
use crate::fs::layout::Layout;
use crate::fs::shared::{fingerprint, folder_fingerprint, lock, time};
use crate::fs::stage::Ident;
use crate::fs::staging::times::{Prev, TIMES_KEEP};
use crate::view::View;
use std::path::Path;
use std::sync::Arc;

impl Core {
    /// Before the mount ends: every generated file and folder of an asset whose last commit
    /// this mount made, not looked at since, is decided now (see [`Core::kept_mtime`]) and
    /// recorded, so a push after a remount finds the times it left whatever was looked at
    /// before the unmount (the version the commit replaced, kept in memory only, is gone
    /// then). Archives keep their members' times their own way.
    pub(in crate::fs::writeback) fn settle_times(&self) {
        for (rel, staged) in self.wb.all() {
            if crate::fs::core::is_archive_path(&rel) {
                continue;
            }
            let pending = lock(&staged.times).prev.as_ref().map(|p| p.by.clone());
            let Some(by) = pending else { continue };
            let Ok(crate::fs::core::Resolved::Asset { gen, layout, meta }) = self.resolve(&rel)
            else {
                continue;
            };
            if Ident::of(&meta) != by {
                continue;
            }
            let mut stack = vec![String::new()];
            let mut seen = 0usize;
            while let Some(dir) = stack.pop() {
                // (the parts of a view listed lazily: expanded as a listing would)
                self.expand(&rel, &layout, &dir, true);
                self.kept_mtime(&rel, &meta, &dir, true, || {
                    layout.children(&dir).map(|k| folder_fingerprint(&k))
                });
                for (name, is_dir) in layout.children(&dir).unwrap_or_default() {
                    seen += 1;
                    if seen > TIMES_KEEP {
                        break;
                    }
                    let p = if dir.is_empty() {
                        name
                    } else {
                        format!("{dir}/{name}")
                    };
                    if is_dir {
                        stack.push(p);
                    } else {
                        self.kept_mtime(&rel, &meta, &p, false, || {
                            let b = self.render(&rel, gen, &layout, &p).ok()?;
                            Some(fingerprint(&b))
                        });
                    }
                }
            }
            lock(&staged.times).flush();
        }
    }

    /// A commit of `rel` replaced the version decoded as `old` (binary `old_meta`) by binary
    /// `by`: the records so far are written, and `old` is kept to compare the new version's
    /// files with.
    pub(in crate::fs::writeback) fn committed_times(
        &self,
        rel: &Path,
        old: Option<Arc<dyn View>>,
        old_meta: Option<&std::fs::Metadata>,
        by: Ident,
    ) {
        use std::os::unix::fs::MetadataExt;
        let staged = self.staging(rel);
        let mut t = lock(&staged.times);
        t.load();
        t.flush();
        t.prev = match (old, old_meta) {
            (Some(view), Some(m)) => Some(Prev {
                key: (rel.to_path_buf(), Ident::of(m)),
                layout: Layout::new(&*view),
                view,
                by,
                mtime: time(m.mtime(), m.mtime_nsec()),
            }),
            _ => None,
        };
    }
}
