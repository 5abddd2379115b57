//! An HPI archive (`.hpi .ufo .ccx .gp3 .gpf`) as a directory of its members, each GAF/TNT
//! member shown as its own exploded view. Listing needs no decompression (sizes come from the
//! archive's directory, [`View::size_hint`]); a plain member is decompressed when rendered.

use super::{safe_component, AssetKind, Entry, View, ViewError};
use crate::formats::hpi::{self, Archive, FileInfo, HpiLimits};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::io::Write;

/// True for the file names shown as archive directories (any letter case).
pub fn is_archive_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".hpi", ".ufo", ".ccx", ".gp3", ".gpf"]
        .iter()
        .any(|e| lower.ends_with(e))
}

/// The path of every entry of `a` as shown: components made with [`safe_component`]; a
/// name that collides with an earlier sibling (exactly or in another letter case) gets `~N`
/// appended (N = 2, 3, …), as `tafs hpi extract` does for exact collisions.
pub fn shown_paths(a: &Archive) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(a.entries.len());
    let mut taken: HashSet<String> = HashSet::new();
    for e in &a.entries {
        let base = e
            .parent
            .and_then(|p| out.get(p).cloned())
            .unwrap_or_default();
        let name = safe_component(&e.name);
        let join = |n: &str| {
            if base.is_empty() {
                n.to_string()
            } else {
                format!("{base}/{n}")
            }
        };
        let mut p = join(&name);
        let mut n = 2;
        while taken.contains(&p.to_ascii_lowercase()) {
            p = join(&format!("{name}~{n}"));
            n += 1;
        }
        taken.insert(p.to_ascii_lowercase());
        out.push(p);
    }
    out
}

/// Opens the view of a GAF/TNT member: kind, decompressed bytes, the member's shown path,
/// and for a GAF the same-named `.pcx` member beside it (shown name, bytes) if there is one
/// (the first candidate of [`super::palette::resolve`], which only sees real files).
pub type MemberOpener<'a> = dyn Fn(AssetKind, &[u8], &str, Option<(&str, &[u8])>) -> Result<Box<dyn View>, ViewError>
    + Sync
    + 'a;

/// The sibling of GAF member `e` (shown at `p`) named like it with `.pcx` (any case): its
/// shown name and record; the first by name when several match.
pub fn beside_pcx<'a>(
    archive: &'a Archive,
    paths: &[String],
    e: &hpi::Entry,
    p: &str,
) -> Option<(String, &'a FileInfo)> {
    let name = p.rsplit('/').next().unwrap_or(p);
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let want = format!("{stem}.pcx");
    let mut hits: Vec<(String, &FileInfo)> = archive
        .children(e.parent)
        .filter_map(|j| {
            let hpi::EntryKind::File(f) = &archive.entries.get(j)?.kind else {
                return None;
            };
            let shown = paths.get(j)?;
            let n = shown.rsplit('/').next().unwrap_or(shown);
            n.eq_ignore_ascii_case(&want).then(|| (n.to_string(), f))
        })
        .collect();
    hits.sort_by(|a, b| a.0.cmp(&b.0));
    hits.into_iter().next()
}

/// The view of one archive. Holds the archive's bytes; members are decompressed on demand.
pub struct ArchiveView {
    data: Vec<u8>,
    archive: Archive,
    limits: HpiLimits,
    entries: Vec<Entry>,
    /// Shown path of a plain member → its directory record.
    members: HashMap<String, FileInfo>,
    /// Shown path of a GAF/TNT member → its view.
    nested: HashMap<String, Box<dyn View>>,
}

impl ArchiveView {
    /// Parses the archive's directory (no member is decompressed except GAF/TNT members,
    /// which are decoded with `open_member` to list their views; a member that does not
    /// decode is shown as the plain file it is).
    pub fn new(
        data: Vec<u8>,
        limits: HpiLimits,
        open_member: &MemberOpener<'_>,
    ) -> Result<ArchiveView, ViewError> {
        let archive =
            hpi::parse(&data, &limits).map_err(|e| ViewError::invalid("archive", e.to_string()))?;
        let paths = shown_paths(&archive);
        let nested: HashMap<String, Box<dyn View>> = archive
            .entries
            .par_iter()
            .zip(paths.par_iter())
            .filter_map(|(e, p)| {
                let hpi::EntryKind::File(f) = &e.kind else {
                    return None;
                };
                let name = p.rsplit('/').next().unwrap_or(p);
                let kind = AssetKind::from_name(name)?;
                let bytes = match archive.read(&data, f, &limits) {
                    Ok(b) => b,
                    Err(err) => {
                        log::warn!("{p}: shown as a plain file: {err}");
                        return None;
                    }
                };
                let beside = (kind == AssetKind::Gaf)
                    .then(|| beside_pcx(&archive, &paths, e, p))
                    .flatten()
                    .and_then(|(name, f)| Some((name, archive.read(&data, f, &limits).ok()?)));
                let beside = beside.as_ref().map(|(n, b)| (n.as_str(), b.as_slice()));
                match open_member(kind, &bytes, p, beside) {
                    Ok(v) => Some((p.clone(), v)),
                    Err(err) => {
                        log::warn!("{p}: shown as a plain file: {err}");
                        None
                    }
                }
            })
            .collect();
        let mut entries = Vec::new();
        let mut members = HashMap::new();
        for (e, p) in archive.entries.iter().zip(&paths) {
            match &e.kind {
                hpi::EntryKind::Dir => entries.push(Entry::dir(p.clone())),
                hpi::EntryKind::File(f) => match nested.get(p) {
                    Some(v) => {
                        entries.push(Entry::dir(p.clone()));
                        entries.extend(v.entries().iter().map(|inner| Entry {
                            path: format!("{p}/{}", inner.path),
                            kind: inner.kind,
                        }));
                    }
                    None => {
                        entries.push(Entry::file(p.clone()));
                        members.insert(p.clone(), *f);
                    }
                },
            }
        }
        Ok(ArchiveView {
            data,
            archive,
            limits,
            entries,
            members,
            nested,
        })
    }

    /// The nested view holding `path` and the path inside it.
    fn nested_of<'p>(&self, path: &'p str) -> Option<(&dyn View, &'p str)> {
        path.match_indices('/').find_map(|(i, _)| {
            let v = self.nested.get(&path[..i])?;
            Some((&**v, &path[i + 1..]))
        })
    }
}

impl View for ArchiveView {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError> {
        if let Some(f) = self.members.get(path) {
            let bytes = self
                .archive
                .read(&self.data, f, &self.limits)
                .map_err(|e| ViewError::invalid(path, e.to_string()))?;
            return out.write_all(&bytes).map_err(|e| ViewError::Io {
                path: path.into(),
                source: e,
            });
        }
        match self.nested_of(path) {
            Some((v, inner)) => v.render(inner, out),
            None => Err(ViewError::NotFound(path.to_string())),
        }
    }

    fn size_hint(&self, path: &str) -> Option<u64> {
        if let Some(f) = self.members.get(path) {
            return Some(u64::from(f.size));
        }
        let (v, inner) = self.nested_of(path)?;
        v.size_hint(inner)
    }
}

impl std::fmt::Debug for ArchiveView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveView")
            .field("entries", &self.entries.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_names_any_case() {
        for n in ["a.hpi", "B.UFO", "c.Ccx", "rev31.gp3", "x.GPF"] {
            assert!(is_archive_name(n), "{n}");
        }
        for n in ["a.gaf", "hpi", "a.hpix", "a.zip"] {
            assert!(!is_archive_name(n), "{n}");
        }
    }

    #[test]
    fn paths_sanitised_and_case_duplicates_unique() {
        // The writer refuses case duplicates, so the directory model is made by hand.
        let tree = vec![hpi::Node::dir(
            b"Anims".to_vec(),
            vec![hpi::Node::file(b"a:b".to_vec(), b"1".to_vec())],
        )];
        let data = hpi::write(&tree, &hpi::WriteOptions::v1()).unwrap();
        let mut a = hpi::parse(&data, &HpiLimits::default()).unwrap();
        a.entries.push(hpi::Entry {
            name: b"..".to_vec(),
            parent: None,
            depth: 0,
            kind: hpi::EntryKind::Dir,
        });
        a.entries.push(hpi::Entry {
            name: b"anims".to_vec(),
            parent: None,
            depth: 0,
            kind: hpi::EntryKind::Dir,
        });
        let mut got = shown_paths(&a);
        got.sort();
        assert_eq!(got, ["Anims", "Anims/a_b", "_..", "anims~2"]);
    }
}
