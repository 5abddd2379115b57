//! The staged files on top of the generated view: the children of a folder of an asset
//! directory, and the file set a commit builds from ([`Overlay`]).

use super::join;
use crate::fs::layout::Layout;
use crate::fs::stage::{is_layout_name, Stage};
use crate::view::{AssetKind, FileSet, View, ViewError};
use std::fs;

/// Children of `dir`: the generated ones not deleted, then staged ones (a staged entry
/// replaces a generated one of the same name). `None` if the folder does not exist.
pub(in crate::fs) fn merged_children(
    stage: Option<&Stage>,
    layout: Option<&Layout>,
    dir: &str,
) -> Option<Vec<(String, bool)>> {
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut exists = dir.is_empty();
    let hidden = |p: &str| stage.is_some_and(|s| s.hidden(p));
    if let Some(gen) = layout.and_then(|l| l.children(dir)) {
        if dir.is_empty() || !hidden(dir) {
            exists = true;
            for (n, d) in gen {
                if !hidden(&join(dir, &n)) {
                    out.push((n, d));
                }
            }
        }
    }
    if let Some(s) = stage {
        if let Ok(rd) = fs::read_dir(s.path(dir)) {
            exists = true;
            let mut staged: Vec<(String, bool)> = rd
                .flatten()
                .filter_map(|e| {
                    let d = e.file_type().is_ok_and(|t| t.is_dir());
                    e.file_name().into_string().ok().map(|n| (n, d))
                })
                .collect();
            staged.sort();
            for (n, d) in staged {
                if let Some(x) = out.iter_mut().find(|(m, _)| *m == n) {
                    x.1 = d;
                } else {
                    out.push((n, d));
                }
            }
        }
    }
    exists.then_some(out)
}

/// The file set a commit builds from: the generated view with the staged layout files and
/// whiteouts on top. Names that are not layout names are not part of it.
pub(in crate::fs) struct Overlay<'a> {
    pub(in crate::fs) stage: &'a Stage,
    pub(in crate::fs) view: Option<&'a dyn View>,
    pub(in crate::fs) layout: Option<Layout>,
    pub(in crate::fs) kind: AssetKind,
}

/// Generated files a commit does not need to render: an unedited `map.png` is the mosaic
/// `metadata.json` holds the checksum of, so pack would find it unedited (rendering and
/// reading it back is most of a big map's commit time).
pub(in crate::fs) fn skip_generated(kind: AssetKind, path: &str) -> bool {
    kind == AssetKind::Tnt && path == "map.png"
}

impl FileSet for Overlay<'_> {
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, ViewError> {
        if !is_layout_name(path) {
            return Ok(None);
        }
        let p = self.stage.path(path);
        match crate::view::read_input(&p) {
            Ok(b) => return Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) if p.is_dir() => return Ok(None),
            Err(e) => {
                return Err(ViewError::Io {
                    path: path.to_string(),
                    source: e,
                })
            }
        }
        if self.stage.hidden(path) || skip_generated(self.kind, path) {
            return Ok(None);
        }
        match (&self.layout, self.view) {
            (Some(l), Some(v)) if l.is_dir(path) == Some(false) => Ok(Some(v.render_vec(path)?)),
            _ => Ok(None),
        }
    }

    fn list(&self, dir: &str) -> Result<Option<Vec<(String, bool)>>, ViewError> {
        Ok(
            merged_children(Some(self.stage), self.layout.as_ref(), dir).map(|v| {
                let mut v: Vec<(String, bool)> = v
                    .into_iter()
                    .filter(|(n, d)| {
                        if *d {
                            !n.starts_with('.')
                        } else {
                            is_layout_name(&join(dir, n))
                        }
                    })
                    .collect();
                v.sort();
                v
            }),
        )
    }
}
