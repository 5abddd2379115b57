//! [`FsOps`] for the writable merged view ([`OverlayCore`]): lookups and listings merged
//! from TARGET (the top) and the stock view, reads from the layer serving a node, writes
//! forwarded to the top after a copy-up, removals of stock-only content refused.

use super::overlay::{gone, Handle, Key, OverlayCore, Slot, TopIno, UNode, DIFF_INO, STATUS_INO};
use super::{other_xattr, SOURCES_XATTR, SOURCE_XATTR};
use crate::fs::caller::no_more_than;
use crate::fs::core::{
    is_asset_name, is_not_found, Attr, DirItem, FileKind, Opened, SetAttr, PAGE_MAX, PLUS_PAGE_MAX,
    ROOT,
};
use crate::fs::ops::FsOps;
use crate::fs::shared::{join, lock, STATUS_NAME};
use crate::fs::{Caller, FsError, NewNode, StatFs};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

impl OverlayCore {
    /// `a` as the union shows node `ino`: its inode, and for stock content the owner's
    /// write bit (a write copies it into the mod).
    fn shown(&self, mut a: Attr, ino: u64, top: bool) -> Attr {
        a.ino = ino;
        if !top && self.accepts(ino, a.kind != FileKind::Dir) {
            a.perm |= 0o200;
        }
        a
    }

    /// Whether union node `ino` (a `file` or a folder) accepts writes
    /// ([`crate::view::accepts_writes_within`] of its path): a write no build of the mod
    /// reads is refused (`EROFS`) before anything is copied into the mod.
    fn accepts(&self, ino: u64, file: bool) -> bool {
        self.node(ino)
            .map_or(true, |u| crate::view::accepts_writes_within(&u.path, file))
    }

    fn refuse_unless_accepted(&self, ino: u64, file: bool) -> Result<(), FsError> {
        if self.accepts(ino, file) {
            Ok(())
        } else {
            Err(FsError::ReadOnly("no build reads this file"))
        }
    }

    /// `a`, shown from the top for union node `a.ino`, cut down when that node is a folder
    /// the stock view has too: the union never grants more than the stock folder does (its
    /// `r` and `x` bits; its `w` bits do not count, writes land in the top), so a folder the
    /// mod makes cannot open a closed folder of the game (see [`no_more_than`]).
    fn closed(&self, c: Caller, mut a: Attr) -> Attr {
        let Ok(u) = self.node(a.ino) else {
            return a;
        };
        let (Key::Dir(_), Some(_), Some((s, _))) = (&u.key, u.top, u.stock) else {
            return a;
        };
        if Self::opaque(&u) {
            return a;
        }
        let (src, owner) = match self.stock.getattr(c, s, None) {
            Ok(b) => (u32::from(b.perm) | 0o222, (b.uid, b.gid)),
            // a stock folder that cannot be looked at grants nothing
            Err(_) => (0o222, (u32::MAX, u32::MAX)),
        };
        a.perm = no_more_than(u32::from(a.perm), (a.uid, a.gid), src, owner) as u16;
        a
    }

    fn is_special(ino: u64) -> bool {
        ino == STATUS_INO || ino == DIFF_INO
    }

    /// Attributes of a generated root file holding `bytes`.
    fn text_attr(&self, c: Caller, ino: u64, len: usize) -> Result<Attr, FsError> {
        let root = self.top_root()?;
        let mut a = self.top.getattr(c, root, None)?;
        a.ino = ino;
        a.kind = FileKind::File;
        a.size = len as u64;
        a.blocks = (len as u64).div_ceil(512);
        a.perm = 0o444;
        a.nlink = 1;
        a.mtime = std::time::SystemTime::now();
        Ok(a)
    }

    fn text(&self, c: Caller, ino: u64) -> String {
        if ino == STATUS_INO {
            self.status_text(c)
        } else {
            self.diff_text()
        }
    }

    /// Runs `f` on the layer serving `ino`; a folder of the merged tree whose layer inode
    /// went away is looked up again once.
    fn on_layer<T>(
        &self,
        c: Caller,
        ino: u64,
        f: impl Fn(bool, u64) -> Result<T, FsError>,
    ) -> Result<T, FsError> {
        let (top, x) = self.layer(c, ino)?;
        match f(top, x) {
            Err(e @ (FsError::Stale | FsError::UnknownInode(_))) => {
                log::trace!("{ino}: {e}, looked up again");
                let u = self.node(ino)?;
                match u.key {
                    Key::Dir(_) => {
                        let (t, s) = self.dir_layers(c, ino, true)?;
                        match (t, s) {
                            (Some(t), _) => f(true, t),
                            (None, Some(s)) => f(false, s),
                            (None, None) => Err(FsError::Stale),
                        }
                    }
                    _ => Err(FsError::Stale),
                }
            }
            r => r,
        }
    }

    /// The inode of entry `name` of `parent` kept by its inode `x` in one layer (the top if
    /// `top`, else the stock view) rather than by path as merged folders are: a file, or any
    /// entry of an opaque folder. Counted as a lookup.
    fn intern_file(&self, top: bool, parent: u64, name: &OsStr, x: u64) -> u64 {
        if top {
            self.intern(Key::Top(x), parent, name, Slot::Set(x), Slot::Keep, true)
        } else {
            self.intern(Key::Stock(x), parent, name, Slot::Keep, Slot::Set(x), true)
        }
    }

    /// Looks `name` up in union folder `parent` (not counted).
    fn lookup_entry(&self, c: Caller, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        let u = self.node(parent)?;
        if Self::opaque(&u) {
            let a = self.on_layer(c, parent, |top, x| {
                let a = if top {
                    self.top.lookup(c, x, name)?
                } else {
                    self.stock.lookup(c, x, name)?
                };
                Ok((top, a))
            })?;
            let (top, a) = a;
            let ino = self.intern_file(top, parent, name, a.ino);
            return Ok(self.shown(a, ino, top));
        }
        let (pt, ps) = self.dir_layers(c, parent, false)?;
        let path = join(&u.path, &name.to_string_lossy());
        let dir_key = || Key::Dir(path.to_ascii_lowercase());
        if let Some(pt) = pt {
            match self.top.lookup(c, pt, name) {
                Ok(a) => {
                    let ino = if a.kind == FileKind::Dir {
                        let merge = !name.to_str().is_some_and(is_asset_name);
                        let s = match ps.filter(|_| merge) {
                            Some(ps) => match self.stock.lookup(c, ps, name) {
                                Ok(b) if b.kind == FileKind::Dir => Slot::Set(b.ino),
                                Ok(b) => {
                                    self.stock.forget(b.ino, 1);
                                    Slot::Clear
                                }
                                Err(_) => Slot::Clear,
                            },
                            None => Slot::Clear,
                        };
                        self.intern(dir_key(), parent, name, Slot::Set(a.ino), s, true)
                    } else {
                        self.intern_file(true, parent, name, a.ino)
                    };
                    return Ok(self.closed(c, self.shown(a, ino, true)));
                }
                Err(e) if is_not_found(&e) => {}
                Err(e) if gone(&e) => return Err(FsError::Stale),
                Err(e) => return Err(e),
            }
        }
        let ps = ps.ok_or(FsError::NotFound)?;
        let a = self.stock.lookup(c, ps, name)?;
        if let Some(pt) = pt {
            // the mod spells the name otherwise: its version is the one shown
            let lower = name.to_string_lossy().to_ascii_lowercase();
            if self.top_lower_names(c, pt)?.contains(&lower) {
                self.stock.forget(a.ino, 1);
                return Err(FsError::NotFound);
            }
        }
        let ino = if a.kind == FileKind::Dir {
            self.intern(dir_key(), parent, name, Slot::Clear, Slot::Set(a.ino), true)
        } else {
            self.intern_file(false, parent, name, a.ino)
        };
        Ok(self.shown(a, ino, false))
    }

    /// The names of top folder `pt` in lowercase, kept until the next change made through
    /// the view (a stock lookup in a folder the mod has asks once per change, not once per
    /// name).
    fn top_lower_names(&self, c: Caller, pt: u64) -> Result<Arc<HashSet<String>>, FsError> {
        let epoch = self.epoch();
        if let Some((e, set)) = lock(&self.names).get(&pt) {
            if *e == epoch {
                return Ok(set.clone());
            }
        }
        let set: HashSet<String> = self
            .top_names(c, pt)?
            .iter()
            .map(|d| d.name.to_string_lossy().to_ascii_lowercase())
            .collect();
        let set = Arc::new(set);
        let mut cache = lock(&self.names);
        if cache.len() >= 1024 {
            cache.clear();
        }
        cache.insert(pt, (epoch, set.clone()));
        Ok(set)
    }

    /// The entries of one layer's folder `x` (no `.`/`..`).
    fn list_layer(&self, c: Caller, top: bool, x: u64) -> Result<Vec<DirItem>, FsError> {
        if top {
            return self.top_names(c, x);
        }
        let fh = self.stock.opendir(c, x)?;
        // page by page (a page holds at most `PAGE_MAX` entries)
        let mut out = Vec::new();
        let mut off = 0;
        let r = loop {
            match self.stock.readdir(c, fh, off) {
                Ok(page) if page.is_empty() => break Ok(()),
                Ok(page) => {
                    for (next, it) in page {
                        off = next;
                        if it.name != "." && it.name != ".." {
                            out.push(it);
                        }
                    }
                }
                Err(e) => break Err(e),
            }
        };
        let _ = self.stock.releasedir(c, fh);
        r.map(|()| out)
    }

    /// The listing of union folder `ino`: the top's entries, then the stock view's that
    /// the top does not have (ignoring letter case).
    fn list(&self, c: Caller, ino: u64, u: &UNode) -> Result<Vec<DirItem>, FsError> {
        let mut items = DirItem::dots(ino, u.parent);
        let name_of = |it: &DirItem| it.name.to_string_lossy().to_ascii_lowercase();
        if Self::opaque(u) {
            let (top, kids) =
                self.on_layer(c, ino, |top, x| Ok((top, self.list_layer(c, top, x)?)))?;
            for it in kids {
                let key = if top {
                    Key::Top(it.ino)
                } else {
                    Key::Stock(it.ino)
                };
                let (t, s) = if top {
                    (Slot::Set(it.ino), Slot::Keep)
                } else {
                    (Slot::Keep, Slot::Set(it.ino))
                };
                let i = self.intern(key, ino, &it.name, t, s, false);
                items.push(DirItem {
                    ino: i,
                    attr: None,
                    ..it
                });
            }
            return Ok(items);
        }
        let (pt, ps) = self.dir_layers(c, ino, false)?;
        let lower = |n: &str| join(&u.path, n).to_ascii_lowercase();
        let mut seen = HashSet::new();
        let mut add = |it: DirItem, top: bool| {
            let n = name_of(&it);
            if !seen.insert(n.clone()) {
                return;
            }
            let (key, t, s) = match (it.kind == FileKind::Dir, top) {
                (true, true) => (Key::Dir(lower(&n)), Slot::Set(it.ino), Slot::Keep),
                (true, false) => (Key::Dir(lower(&n)), Slot::Keep, Slot::Set(it.ino)),
                (false, true) => (Key::Top(it.ino), Slot::Set(it.ino), Slot::Keep),
                (false, false) => (Key::Stock(it.ino), Slot::Keep, Slot::Set(it.ino)),
            };
            let i = self.intern(key.clone(), ino, &it.name, t, s, false);
            items.push(DirItem {
                ino: i,
                attr: None,
                ..it
            });
        };
        if let Some(pt) = pt {
            for it in self.list_layer(c, true, pt)? {
                add(it, true);
            }
        }
        if let Some(ps) = ps {
            for it in self.list_layer(c, false, ps)? {
                add(it, false);
            }
        }
        Ok(items)
    }

    /// Union folder `parent` has `name` in the stock view (not counted).
    fn stock_has(&self, c: Caller, ps: Option<u64>, name: &OsStr) -> Option<Attr> {
        let a = self.stock.lookup(c, ps?, name).ok()?;
        self.stock.forget(a.ino, 1);
        Some(a)
    }

    /// The top folder holding `name` of union folder `parent` for removing or renaming it:
    /// the top's own, or (inside a stock GAF/TNT) the copied-up one; `EROFS` when only
    /// the stock view holds the name.
    fn top_holding(
        &self,
        c: Caller,
        parent: u64,
        name: &OsStr,
        what: &str,
    ) -> Result<TopIno<'_>, FsError> {
        let u = self.node(parent)?;
        // nothing is copied into the mod to remove or rename a name no build reads
        let path = join(&u.path, &name.to_string_lossy());
        if !crate::view::accepts_writes_within(&path, what != "removal of the folder") {
            return Err(FsError::ReadOnly("no build reads this file"));
        }
        if Self::opaque(&u) {
            return self.up(c, parent);
        }
        let (pt, ps) = self.dir_layers(c, parent, false)?;
        if let Some(pt) = pt {
            if self.peek_top(c, pt, name)?.is_some() {
                return Ok(self.own(pt));
            }
        }
        if self.stock_has(c, ps, name).is_some() {
            return Err(self.refuse(&join(&u.path, &name.to_string_lossy()), what));
        }
        Err(FsError::NotFound)
    }

    /// Interns a node the top just made (`a`, counted there) in union folder `parent`.
    fn made(&self, parent: u64, name: &OsStr, a: Attr) -> Result<Attr, FsError> {
        self.bump();
        let u = self.node(parent)?;
        let key = if !Self::opaque(&u) && a.kind == FileKind::Dir {
            Key::Dir(join(&u.path, &name.to_string_lossy()).to_ascii_lowercase())
        } else {
            Key::Top(a.ino)
        };
        let stock = match key {
            Key::Dir(_) => Slot::Clear,
            _ => Slot::Keep,
        };
        let ino = self.intern(key, parent, name, Slot::Set(a.ino), stock, true);
        self.remember(ino);
        Ok(self.shown(a, ino, true))
    }

    /// A top inode a union node holds (nothing to give back).
    fn own(&self, ino: u64) -> TopIno<'_> {
        self.up_own(ino)
    }

    fn remember(&self, ino: u64) -> bool {
        match lock(&self.nodes).map.get_mut(&ino) {
            Some(u) => {
                u.lookups += 1;
                true
            }
            None => false,
        }
    }

    fn handle(&self, fh: u64) -> Result<Arc<Handle>, FsError> {
        lock(&self.handles)
            .get(&fh)
            .cloned()
            .ok_or(FsError::BadHandle(fh))
    }

    fn add_handle(&self, h: Handle) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, Arc::new(h));
        fh
    }

    /// The path inside the mod a top node's sources are named by: the binary it lies in
    /// (the first component named like an asset), else the path itself.
    fn source_path(path: &str) -> String {
        let mut acc = String::new();
        for comp in path.split('/').filter(|c| !c.is_empty()) {
            acc = join(&acc, comp);
            if is_asset_name(comp) {
                break;
            }
        }
        acc
    }
}

impl FsOps for OverlayCore {
    fn ttl(&self) -> Duration {
        self.top.options().ttl
    }

    fn finish(&self) {
        self.top.finish();
        self.stock.finish();
    }

    fn lookup(&self, c: Caller, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        if parent == ROOT && (name == STATUS_NAME || name == super::MOD_DIFF_NAME) {
            let ino = if name == STATUS_NAME {
                STATUS_INO
            } else {
                DIFF_INO
            };
            return self.text_attr(c, ino, self.text(c, ino).len());
        }
        for _ in 0..3 {
            let a = self.lookup_entry(c, parent, name)?;
            if self.remember(a.ino) {
                return Ok(a);
            }
        }
        Err(FsError::Stale)
    }

    fn forget(&self, ino: u64, n: u64) {
        if ino == ROOT || Self::is_special(ino) {
            return;
        }
        let dropped = {
            let mut nodes = lock(&self.nodes);
            let Some(u) = nodes.map.get_mut(&ino) else {
                return;
            };
            u.lookups = u.lookups.saturating_sub(n);
            if u.lookups > 0 {
                return;
            }
            let u = nodes.map.remove(&ino);
            if let Some(u) = &u {
                if nodes.by_key.get(&u.key) == Some(&ino) {
                    nodes.by_key.remove(&u.key);
                }
                if let Some((t, _)) = u.top {
                    if nodes.top_rev.get(&t) == Some(&ino) {
                        nodes.top_rev.remove(&t);
                    }
                }
            }
            u
        };
        if let Some(u) = dropped {
            let mut list = Vec::new();
            if let Some((t, l)) = u.top {
                list.push((true, t, l));
            }
            if let Some((s, l)) = u.stock {
                list.push((false, s, l));
            }
            self.forget_layers(&list);
        }
    }

    fn inodes(&self) -> usize {
        lock(&self.nodes).map.len()
    }

    fn getattr(&self, c: Caller, ino: u64, fh: Option<u64>) -> Result<Attr, FsError> {
        if let Some(fh) = fh {
            if let Ok(h) = self.handle(fh) {
                match &*h {
                    Handle::Top { fh, ino: t, .. } => {
                        let a = self.top.getattr(c, *t, Some(*fh))?;
                        return Ok(self.closed(c, self.shown(a, ino, true)));
                    }
                    Handle::Stock { fh, ino: s } => {
                        return Ok(self.shown(self.stock.getattr(c, *s, Some(*fh))?, ino, false))
                    }
                    Handle::Text(_, a) if a.ino == ino => return Ok(*a),
                    Handle::Text(..) => {}
                }
            }
        }
        if Self::is_special(ino) {
            return self.text_attr(c, ino, self.text(c, ino).len());
        }
        let (top, a) = self.on_layer(c, ino, |top, x| {
            let a = if top {
                self.top.getattr(c, x, None)?
            } else {
                self.stock.getattr(c, x, None)?
            };
            Ok((top, a))
        })?;
        Ok(self.closed(c, self.shown(a, ino, top)))
    }

    fn readlink(&self, c: Caller, ino: u64) -> Result<Vec<u8>, FsError> {
        self.on_layer(c, ino, |top, x| {
            if top {
                self.top.readlink(c, x)
            } else {
                self.stock.readlink(c, x)
            }
        })
    }

    fn open(&self, c: Caller, ino: u64, flags: i32) -> Result<Opened, FsError> {
        if Self::is_special(ino) {
            if flags & libc::O_ACCMODE != libc::O_RDONLY {
                return Err(FsError::ReadOnly("the status files are read-only"));
            }
            let text = self.text(c, ino).into_bytes();
            let a = self.text_attr(c, ino, text.len())?;
            let fh = self.add_handle(Handle::Text(Arc::new(text), a));
            return Ok(Opened {
                fh,
                keep_cache: false,
            });
        }
        let writing = flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0;
        if writing {
            self.refuse_unless_accepted(ino, true)?;
        }
        let (mut top, mut x) = self.layer(c, ino)?;
        let _held;
        if !top && writing {
            let t = self.up(c, ino)?;
            x = t.ino;
            _held = t;
            top = true;
        }
        let o = if top {
            self.top.open(c, x, flags)?
        } else {
            self.stock.open(c, x, flags)?
        };
        let h = if top {
            Handle::Top {
                fh: o.fh,
                ino: x,
                writing,
            }
        } else {
            Handle::Stock { fh: o.fh, ino: x }
        };
        Ok(Opened {
            fh: self.add_handle(h),
            keep_cache: o.keep_cache,
        })
    }

    fn read(&self, c: Caller, fh: u64, offset: u64, size: u32) -> Result<Vec<u8>, FsError> {
        match &*self.handle(fh)? {
            Handle::Top { fh, .. } => self.top.read(c, *fh, offset, size),
            Handle::Stock { fh, .. } => self.stock.read(c, *fh, offset, size),
            Handle::Text(b, _) => Ok(crate::fs::slice_at(b, offset, size)),
        }
    }

    fn release(&self, c: Caller, fh: u64) -> Result<(), FsError> {
        let h = lock(&self.handles)
            .remove(&fh)
            .ok_or(FsError::BadHandle(fh))?;
        let r = match &*h {
            Handle::Top { fh, .. } => self.top.release(c, *fh),
            Handle::Stock { fh, .. } => self.stock.release(c, *fh),
            Handle::Text(..) => Ok(()),
        };
        if matches!(&*h, Handle::Top { writing: true, .. }) {
            // a save may have committed (an archive TARGET shows a new member)
            self.bump();
        }
        r
    }

    fn opendir(&self, c: Caller, ino: u64) -> Result<u64, FsError> {
        if Self::is_special(ino) {
            return Err(FsError::NotDir);
        }
        let mut u = self.node(ino)?;
        if let Key::Stock(_) = u.key {
            // (served by the top from now on if it was copied up)
            self.layer(c, ino)?;
            u = self.node(ino)?;
        }
        let items = self.list(c, ino, &u)?;
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        Ok(self.dirs.open(fh, items))
    }

    fn readdir(&self, _c: Caller, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        self.dirs.page(fh, offset, PAGE_MAX)
    }

    fn readdirplus(&self, c: Caller, fh: u64, offset: u64) -> Result<Vec<(u64, DirItem)>, FsError> {
        let items = self.dirs.page(fh, offset, PLUS_PAGE_MAX)?;
        let dir = self.dirs.dir_ino(fh)?;
        let mut out = Vec::with_capacity(items.len());
        for (next, mut it) in items {
            if it.name == "." || it.name == ".." {
                it.attr = Some(Attr::dot(it.ino));
            } else {
                // counted as a lookup (see `FsOps::forget`)
                match self.lookup(c, dir, &it.name) {
                    Ok(a) => {
                        it.ino = a.ino;
                        it.kind = a.kind;
                        it.attr = Some(a);
                    }
                    Err(e) => {
                        log::debug!("{:?}: left out of the listing: {e}", it.name);
                        continue;
                    }
                }
            }
            out.push((next, it));
        }
        Ok(out)
    }

    fn releasedir(&self, _c: Caller, fh: u64) -> Result<(), FsError> {
        self.dirs.release(fh)
    }

    fn statfs(&self, c: Caller) -> Result<StatFs, FsError> {
        self.top.statfs(c)
    }

    fn access(&self, c: Caller, ino: u64, mask: i32) -> Result<(), FsError> {
        if Self::is_special(ino) && mask & libc::W_OK != 0 {
            return Err(FsError::ReadOnly("the status files are read-only"));
        }
        self.getattr(c, ino, None).map(|_| ())
    }

    fn has_xattrs(&self) -> bool {
        true
    }

    fn getxattr(&self, c: Caller, ino: u64, name: &OsStr) -> Result<Vec<u8>, FsError> {
        if name != SOURCE_XATTR && name != SOURCES_XATTR {
            return Err(other_xattr(name));
        }
        if Self::is_special(ino) {
            return Err(FsError::NoAttr);
        }
        let u = self.node(ino)?;
        let (top, x) = self.layer(c, ino)?;
        if !top {
            return self.stock.getxattr(c, x, name);
        }
        let at = Self::source_path(&u.path);
        let mut all = vec![format!("mod:{}:{at}", self.target.path().display())];
        all.extend(self.stock.sources_at(&at));
        if name == SOURCE_XATTR {
            Ok(all.swap_remove(0).into_bytes())
        } else {
            Ok(all
                .iter()
                .map(|s| format!("{s}\n"))
                .collect::<String>()
                .into_bytes())
        }
    }

    fn listxattr(&self, _c: Caller, ino: u64) -> Result<Vec<u8>, FsError> {
        if !Self::is_special(ino) {
            self.node(ino)?;
        }
        Ok(format!("{SOURCE_XATTR}\0{SOURCES_XATTR}\0").into_bytes())
    }

    fn setxattr(&self, c: Caller, ino: u64, name: &OsStr) -> Result<(), FsError> {
        match self.layer(c, ino)? {
            (true, x) => self.top.setxattr(c, x, name),
            (false, _) => Err(FsError::NotSupported("extended attributes")),
        }
    }

    fn setattr(&self, c: Caller, ino: u64, set: SetAttr, fh: Option<u64>) -> Result<Attr, FsError> {
        if Self::is_special(ino) {
            return Err(FsError::ReadOnly("the status files are read-only"));
        }
        if let Some(fh) = fh {
            if let Ok(h) = self.handle(fh) {
                if let Handle::Top { fh, ino: t, .. } = &*h {
                    let a = self.top.setattr(c, *t, set, Some(*fh))?;
                    self.bump();
                    return Ok(self.shown(a, ino, true));
                }
            }
        }
        let (top, x) = self.layer(c, ino)?;
        if !top {
            let dir = self
                .getattr(c, ino, None)
                .is_ok_and(|a| a.kind == FileKind::Dir);
            self.refuse_unless_accepted(ino, !dir)?;
        }
        let t = if top { self.own(x) } else { self.up(c, ino)? };
        let a = self.top.setattr(c, t.ino, set, None)?;
        self.bump();
        Ok(self.closed(c, self.shown(a, ino, true)))
    }

    fn mknod(&self, c: Caller, n: NewNode, rdev: u32) -> Result<Attr, FsError> {
        let pt = self.parent_for_new(c, n.parent, n.name)?;
        let a = self.top.mknod(
            c,
            NewNode {
                parent: pt.ino,
                ..n
            },
            rdev,
        )?;
        self.made(n.parent, n.name, a)
    }

    fn mkdir(&self, c: Caller, n: NewNode) -> Result<Attr, FsError> {
        let pt = self.parent_for_new(c, n.parent, n.name)?;
        let a = self.top.mkdir(
            c,
            NewNode {
                parent: pt.ino,
                ..n
            },
        )?;
        self.made(n.parent, n.name, a)
    }

    fn symlink(
        &self,
        c: Caller,
        parent: u64,
        name: &OsStr,
        target: &Path,
    ) -> Result<Attr, FsError> {
        let pt = self.parent_for_new(c, parent, name)?;
        let a = self.top.symlink(c, pt.ino, name, target)?;
        self.made(parent, name, a)
    }

    fn link(&self, c: Caller, ino: u64, newparent: u64, newname: &OsStr) -> Result<Attr, FsError> {
        let at = join(&self.node(newparent)?.path, &newname.to_string_lossy());
        if !crate::view::accepts_writes_within(&at, true) {
            return Err(FsError::ReadOnly("no build reads this file"));
        }
        let (top, x) = self.layer(c, ino)?;
        let t = if top { self.own(x) } else { self.up(c, ino)? };
        let pt = self.parent_for_new(c, newparent, newname)?;
        let a = self.top.link(c, t.ino, pt.ino, newname)?;
        self.made(newparent, newname, a)
    }

    fn unlink(&self, c: Caller, parent: u64, name: &OsStr) -> Result<(), FsError> {
        let pt = self.top_holding(c, parent, name, "delete")?;
        self.top.unlink(c, pt.ino, name)?;
        self.bump();
        Ok(())
    }

    fn rmdir(&self, c: Caller, parent: u64, name: &OsStr) -> Result<(), FsError> {
        let u = self.node(parent)?;
        if !Self::opaque(&u) {
            let (pt, ps) = self.dir_layers(c, parent, false)?;
            let in_top = match pt {
                Some(pt) => self.peek_top(c, pt, name)?.is_some(),
                None => false,
            };
            if in_top {
                // the merged folder also shows the stock view's entries
                if let Some(a) = self.stock_has(c, ps, name) {
                    if a.kind == FileKind::Dir
                        && name.to_str().is_some_and(|n| !is_asset_name(n))
                        && !self
                            .list_layer(c, false, a.ino)
                            .unwrap_or_default()
                            .is_empty()
                    {
                        return Err(FsError::NotEmpty);
                    }
                }
            }
        }
        let pt = self.top_holding(c, parent, name, "removal of the folder")?;
        self.top.rmdir(c, pt.ino, name)?;
        self.bump();
        Ok(())
    }

    fn rename(
        &self,
        c: Caller,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> Result<(), FsError> {
        let from = self.top_holding(c, parent, name, "rename")?;
        if flags & libc::RENAME_NOREPLACE != 0 && self.lookup_entry(c, newparent, newname).is_ok() {
            // the view has the name, maybe only from the stock side
            return Err(FsError::Exists);
        }
        let to = self.parent_for_new(c, newparent, newname)?;
        // the source's folder again: copying the target's up may have changed it
        let from = if parent == newparent {
            to.ino
        } else {
            from.ino
        };
        self.top.rename(c, from, name, to.ino, newname, flags)?;
        self.bump();
        Ok(())
    }

    fn create(&self, c: Caller, n: NewNode, flags: i32) -> Result<(Attr, Opened), FsError> {
        let (parent, name) = (n.parent, n.name);
        let pt = self.parent_for_new(c, parent, name)?;
        let (a, o) = self.top.create(
            c,
            NewNode {
                parent: pt.ino,
                ..n
            },
            flags,
        )?;
        let t = a.ino;
        let a = self.made(parent, name, a)?;
        let fh = self.add_handle(Handle::Top {
            fh: o.fh,
            ino: t,
            writing: true,
        });
        Ok((
            a,
            Opened {
                fh,
                keep_cache: o.keep_cache,
            },
        ))
    }

    fn write(&self, c: Caller, fh: u64, offset: u64, data: &[u8]) -> Result<u32, FsError> {
        match &*self.handle(fh)? {
            Handle::Top { fh, .. } => self.top.write(c, *fh, offset, data),
            _ => Err(FsError::BadHandle(fh)),
        }
    }

    fn flush(&self, c: Caller, fh: u64) -> Result<(), FsError> {
        match &*self.handle(fh)? {
            Handle::Top { fh, .. } => self.top.flush(c, *fh),
            Handle::Stock { fh, .. } => self.stock.flush(c, *fh),
            Handle::Text(..) => Ok(()),
        }
    }

    fn fsync(&self, c: Caller, fh: u64, datasync: bool) -> Result<(), FsError> {
        match &*self.handle(fh)? {
            Handle::Top { fh, .. } => self.top.fsync(c, *fh, datasync),
            Handle::Stock { fh, .. } => self.stock.fsync(c, *fh, datasync),
            Handle::Text(..) => Ok(()),
        }
    }
}
