//! The nodes of the merged view: what an index node or a path inside an exploded GAF/TNT
//! is shown as (its id and attributes), and folder listings.

use super::{Content, Decoded, MergedCore, NodeId, Snapshot, ROOT_INO};
use crate::fs::caller::no_more_than;
use crate::fs::core::{owner_of, Attr, DirItem, FileKind};
use crate::fs::layout::Layout;
use crate::fs::shared::join;
use crate::fs::FsError;
use crate::view::AssetKind;
use std::fs::{self, Metadata};
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;

impl MergedCore {
    /// Attributes of an entry (read-only) with the times of `m`, its source.
    pub(super) fn attr(&self, ino: u64, m: &Metadata, dir: bool, size: u64, nlink: u32) -> Attr {
        let r = m.mode() & 0o444;
        let perm = if dir { r | (r >> 2) } else { r };
        Attr::generated(ino, m, dir, size, perm, nlink, owner_of(&self.opts, m))
    }

    /// Metadata shown for folder `n`: the winning source's folder (loose) or archive file.
    pub(super) fn dir_meta(&self, snap: &Snapshot, n: usize) -> Metadata {
        let hit = snap.index.winner(n);
        match hit.map(|h| (h, snap.archive_of(h.source))) {
            Some((_, Some(a))) => a.meta.clone(),
            Some((h, None)) => super::stat_game_file(&self.game_dir, std::path::Path::new(&h.path))
                .unwrap_or_else(|_| self.dir_meta.clone()),
            None => fs::metadata(&self.game_dir).unwrap_or_else(|_| self.dir_meta.clone()),
        }
    }

    /// What file node `n` is shown as: its id and attributes.
    pub(super) fn file_node(
        &self,
        snap: &Snapshot,
        key: &str,
        n: usize,
    ) -> Result<(NodeId, Attr), FsError> {
        let (ver, c) = self.content(snap, n)?;
        if let Some(layout) = self.asset_layout(snap, key, ver, &c)? {
            let id = NodeId::Asset {
                key: key.to_string(),
                ver,
                vpath: String::new(),
                dir: true,
            };
            let ino = self.ino(id.clone());
            let a = self.attr(ino, c.meta(), true, 0, 2 + layout.subdirs(""));
            return Ok((id, a));
        }
        let size = match &c {
            Content::Loose { meta, .. } => meta.len(),
            Content::Member { info, .. } => u64::from(info.size),
        };
        let id = NodeId::File(key.to_string(), ver);
        let ino = self.ino(id.clone());
        Ok((id, self.attr(ino, c.meta(), false, size, 1)))
    }

    pub(super) fn dir_node(&self, snap: &Snapshot, key: &str, n: usize) -> (NodeId, Attr) {
        let id = NodeId::Dir(key.to_string());
        let ino = self.ino(id.clone());
        let subdirs = snap
            .index
            .children_unordered(n)
            .filter(|&c| snap.index.is_dir(c) || AssetKind::from_name(snap.index.name(c)).is_some())
            .count() as u32;
        let m = self.dir_meta(snap, n);
        let mut a = self.attr(ino, &m, true, 0, 2 + subdirs);
        a.perm = self.dir_perm(snap, n, &m) as u16;
        (id, a)
    }

    /// Permission bits of folder node `n` (`m`: the winner's metadata, see
    /// [`MergedCore::dir_meta`]): a loose folder's (and the root's) own `r` and `x` bits, an
    /// archive's folder the archive's `r` bits with `x` where `r`; then cut down to what every
    /// other folder merged into it grants ([`no_more_than`]), so that the view never lets
    /// anyone list or enter, say, a 0700 loose folder because an archive has a folder of
    /// that name.
    fn dir_perm(&self, snap: &Snapshot, n: usize, m: &Metadata) -> u32 {
        let bits = |loose: bool, m: &Metadata| {
            let r = m.mode() & 0o444;
            if loose {
                m.mode() & 0o555
            } else {
                r | (r >> 2)
            }
        };
        let hits = snap.index.hits(n);
        let winner_loose = hits
            .first()
            .map_or(true, |h| snap.archive_of(h.source).is_none());
        let mut perm = bits(winner_loose, m);
        let owner = (m.uid(), m.gid());
        for h in hits.iter().skip(1).filter(|h| h.dir) {
            let (loose, src) = match snap.archive_of(h.source) {
                Some(a) => (false, a.meta.clone()),
                None => {
                    match super::stat_game_file(&self.game_dir, std::path::Path::new(&h.path)) {
                        Ok(s) => (true, s),
                        // a folder that cannot be looked at grants nothing
                        Err(_) => return 0,
                    }
                }
            };
            perm = no_more_than(perm, owner, bits(loose, &src), (src.uid(), src.gid()));
        }
        perm
    }

    /// Whether index node `c` is a GAF/TNT whose path has never been decoded (listing it
    /// decodes it: worth a thread).
    fn undecoded(&self, snap: &Snapshot, c: usize) -> bool {
        AssetKind::from_name(snap.index.name(c)).is_some()
            && !super::lock(&self.settled).contains(&snap.index.path(c).to_ascii_lowercase())
    }

    /// Id and attributes of index node `n`.
    pub(super) fn index_node(&self, snap: &Snapshot, n: usize) -> Result<(NodeId, Attr), FsError> {
        let key = snap.index.path(n).to_ascii_lowercase();
        if snap.index.is_dir(n) {
            Ok(self.dir_node(snap, &key, n))
        } else {
            self.file_node(snap, &key, n)
        }
    }

    /// The decoded asset of `key` at `ver`, if that is still what the path shows.
    pub(super) fn current_asset(
        &self,
        snap: &Snapshot,
        key: &str,
        ver: u64,
    ) -> Result<(Decoded, Content), FsError> {
        let n = Self::node(snap, key)?;
        let (now, c) = self.content(snap, n)?;
        if now != ver {
            return Err(FsError::Stale);
        }
        let d = self.asset(snap, key, ver, &c)?.ok_or(FsError::Stale)?;
        Ok((d, c))
    }

    /// The layout of the asset `key` at `ver`, if that is still what the path shows (the
    /// view is not needed: see [`MergedCore::asset_layout`]).
    pub(super) fn current_layout(
        &self,
        snap: &Snapshot,
        key: &str,
        ver: u64,
    ) -> Result<(Arc<Layout>, Content), FsError> {
        let n = Self::node(snap, key)?;
        let (now, c) = self.content(snap, n)?;
        if now != ver {
            return Err(FsError::Stale);
        }
        let l = self
            .asset_layout(snap, key, ver, &c)?
            .ok_or(FsError::Stale)?;
        Ok((l, c))
    }

    /// The bytes of file `vpath` of the asset `key` at `ver`: from the cache, else
    /// rendered (its view decoded again only then, if it left the cache).
    pub(super) fn render(
        &self,
        key: &str,
        ver: u64,
        layout: &Layout,
        vpath: &str,
        snap: &Snapshot,
    ) -> Result<Arc<Vec<u8>>, FsError> {
        let k = (key.to_string(), ver);
        self.cache.render(&k, layout, vpath, || {
            Ok(self.current_asset(snap, key, ver)?.0 .1)
        })
    }

    pub(super) fn attr_of(&self, ino: u64, id: &NodeId) -> Result<Attr, FsError> {
        let snap = self.snapshot();
        match id {
            NodeId::Dir(key) => {
                let n = Self::node(&snap, key)?;
                if !snap.index.is_dir(n) {
                    return Err(FsError::Stale);
                }
                Ok(self.dir_node(&snap, key, n).1)
            }
            NodeId::File(key, _) => {
                let n = Self::node(&snap, key)?;
                if snap.index.is_dir(n) {
                    return Err(FsError::Stale);
                }
                let (got, a) = self.file_node(&snap, key, n)?;
                if got != *id {
                    return Err(FsError::Stale);
                }
                Ok(a)
            }
            NodeId::Asset {
                key,
                ver,
                vpath,
                dir,
            } => {
                let (layout, c) = self.current_layout(&snap, key, *ver)?;
                if layout.is_dir(vpath) != Some(*dir) && !vpath.is_empty() {
                    return Err(FsError::Stale);
                }
                if *dir {
                    return Ok(self.attr(ino, c.meta(), true, 0, 2 + layout.subdirs(vpath)));
                }
                let known = layout.size(vpath);
                let size = match known {
                    Some(s) => s,
                    None => self.render(key, *ver, &layout, vpath, &snap)?.len() as u64,
                };
                Ok(self.attr(ino, c.meta(), false, size, 1))
            }
        }
    }

    pub(super) fn describe(&self, id: &NodeId) -> Result<Vec<String>, FsError> {
        let snap = self.snapshot();
        let n = Self::node(&snap, id.key())?;
        Ok(snap.sources_of(n))
    }

    pub(super) fn list(&self, ino: u64, id: &NodeId) -> Result<Vec<DirItem>, FsError> {
        let snap = self.snapshot();
        let parent = self.ino(id.parent());
        let mut items = DirItem::dots(ino, if ino == ROOT_INO { ROOT_INO } else { parent });
        match id {
            NodeId::Dir(key) => {
                let n = Self::node(&snap, key)?;
                if !snap.index.is_dir(n) {
                    return Err(FsError::NotDir);
                }
                // GAF/TNT children not decoded yet are decoded (in parallel) to know
                // whether they are directories; nothing else is read, and the rest is
                // answered on this thread (a folder listed again spawns no thread)
                type Kid = (usize, Result<(NodeId, Attr), FsError>);
                let children = snap.index.children(n);
                let (new, known): (Vec<_>, Vec<_>) = children
                    .iter()
                    .copied()
                    .enumerate()
                    .partition(|&(_, c)| self.undecoded(&snap, c));
                let mut kids: Vec<(usize, Kid)> =
                    crate::fs::fan_out(&new, |&(i, c)| (i, (c, self.index_node(&snap, c))));
                kids.extend(
                    known
                        .into_iter()
                        .map(|(i, c)| (i, (c, self.index_node(&snap, c)))),
                );
                kids.sort_by_key(|(i, _)| *i);
                for (_, (c, r)) in kids {
                    match r {
                        Ok((_, a)) => items.push(DirItem {
                            ino: a.ino,
                            name: snap.index.name(c).into(),
                            kind: a.kind,
                            attr: Some(a),
                        }),
                        Err(e) => {
                            log::debug!("{}: left out of the listing: {e}", snap.index.path(c))
                        }
                    }
                }
            }
            NodeId::File(..) => return Err(FsError::NotDir),
            NodeId::Asset {
                key,
                ver,
                vpath,
                dir,
            } => {
                if !dir {
                    return Err(FsError::NotDir);
                }
                let (layout, _) = self.current_layout(&snap, key, *ver)?;
                for (name, d) in layout.children(vpath).unwrap_or_default() {
                    let vp = join(vpath, &name);
                    let ino = self.ino(NodeId::Asset {
                        key: key.clone(),
                        ver: *ver,
                        vpath: vp,
                        dir: d,
                    });
                    items.push(DirItem {
                        ino,
                        name: name.into(),
                        kind: if d { FileKind::Dir } else { FileKind::File },
                        attr: None,
                    });
                }
            }
        }
        Ok(items)
    }
}
