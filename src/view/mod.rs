//! The exploded view: which files a binary becomes, and how those files rebuild it.
//!
//! A [`View`] lists its [`Entry`]s (directories and files, relative `/`-separated paths,
//! parents before children) and renders any file on demand. `tafs gaf dump` / `tafs tnt unpack`
//! write every entry to disk with [`write_tree`]; the mount serves the same entries from
//! memory, so the two cannot drift. [`open`] decodes a binary into its view with the
//! [`ViewOptions`] of [`options_for`]; the inverse, [`rebuild`], reads a [`FileSet`] (a real
//! directory, or the mount's staged overlay) and rebuilds the binary.
//!
//! May import [`crate::formats`] and [`crate::game`]; never `fs` or `cli`.

pub mod archive;
pub mod banded_png;
pub mod cob;
pub mod csv;
pub mod gaf;
pub mod image;
pub mod merged;
pub mod options;
pub mod tables;
pub mod tnt;

pub mod fnt;
pub mod model3d;
pub mod pal;
pub mod paltable;
pub mod pcx;

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub use options::{options_for, options_in, FrameFormat, Overrides, ViewOptions};

/// What kind of node an [`Entry`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file whose bytes come from [`View::render`].
    File,
}

/// One node of an exploded view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entry {
    /// Relative path, `/`-separated, every component sanitised (see [`safe_component`]).
    pub path: String,
    /// Directory or file.
    pub kind: EntryKind,
}

impl Entry {
    /// A directory entry.
    pub fn dir(path: impl Into<String>) -> Entry {
        Entry {
            path: path.into(),
            kind: EntryKind::Dir,
        }
    }
    /// A file entry.
    pub fn file(path: impl Into<String>) -> Entry {
        Entry {
            path: path.into(),
            kind: EntryKind::File,
        }
    }
}

/// Errors of the view layer: they name the file (relative to the view), and where it makes
/// sense the row and column or pixel.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The binary itself did not decode.
    #[error("{0}")]
    Gaf(#[from] crate::formats::gaf::GafError),
    /// The map did not decode or cannot be written.
    #[error("{0}")]
    Tnt(#[from] crate::formats::tnt::TntError),
    /// The script did not decode or cannot be written.
    #[error("{0}")]
    Cob(#[from] crate::formats::cob::CobError),
    /// A text source (a script's assembly) does not build: the file, line and column.
    #[error("{file}:{line}:{col}: {msg}")]
    Source {
        /// Path relative to the view.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        col: usize,
        /// What is wrong.
        msg: String,
    },
    /// A file of the view is missing.
    #[error("{file}: missing{}", if .why.is_empty() { String::new() } else { format!(" ({})", .why) })]
    Missing {
        /// Path relative to the view.
        file: String,
        /// What needed it.
        why: String,
    },
    /// A file of the view is not what the layout expects.
    #[error("{file}: {msg}")]
    Invalid {
        /// Path relative to the view.
        file: String,
        /// What is wrong and what was expected.
        msg: String,
    },
    /// A CSV value or syntax error.
    #[error("{file}: row {row}, column {column}: {msg}")]
    Csv {
        /// Path relative to the view.
        file: String,
        /// 1-based line number.
        row: u64,
        /// Column name (or number).
        column: String,
        /// What is wrong and what was expected.
        msg: String,
    },
    /// No such file in the view.
    #[error("{0}: no such file in the view")]
    NotFound(String),
    /// No room in the budget of decoded views to decode the part holding the file now; the
    /// request may be retried.
    #[error("{0}: no room to decode it now")]
    NoRoom(String),
    /// Reading or writing files failed.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
}

impl ViewError {
    /// Shorthand for [`ViewError::Invalid`].
    pub fn invalid(file: impl Into<String>, msg: impl Into<String>) -> ViewError {
        ViewError::Invalid {
            file: file.into(),
            msg: msg.into(),
        }
    }
}

/// Locks `m`, taking its value even if a thread panicked while holding it (the views'
/// caches stay usable).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An exploded view of one binary.
pub trait View: Send + Sync {
    /// Every directory and file of the view, parents before children. The root (`""`) is
    /// implied and not listed.
    fn entries(&self) -> &[Entry];

    /// Writes the bytes of the file at `path` to `out`. Rendering is deterministic: the same
    /// binary and options always give the same bytes.
    fn render(&self, path: &str, out: &mut dyn Write) -> Result<(), ViewError>;

    /// The size of the file at `path` when known without rendering it (an archive member's
    /// size from the archive's directory); `None` = render to know.
    fn size_hint(&self, path: &str) -> Option<u64> {
        let _ = path;
        None
    }

    /// Views that decode parts of themselves on demand (an archive's GAF/TNT members): the
    /// entries without the parts' contents, each part listed as a folder, and the parts'
    /// paths. `None` (the default) when [`View::entries`] is all there is.
    fn shallow(&self) -> Option<(&[Entry], Vec<&str>)> {
        None
    }

    /// The entries inside part `path` (relative to it; see [`View::shallow`]), decoding it
    /// first; `None` when `path` is no part or does not decode (it is then a plain file).
    fn part_entries(&self, path: &str) -> Option<&[Entry]> {
        let _ = path;
        None
    }

    /// Whether part `path` is still to be decoded: [`View::part_entries`] gave `None` for
    /// lack of memory now, not because it is a plain file (it is tried again later).
    fn part_waits(&self, path: &str) -> bool {
        let _ = path;
        false
    }

    /// Bytes rendering the file at `path` holds while it runs (beyond the view itself),
    /// when the view knows it; 0 = small.
    fn render_cost(&self, path: &str) -> u64 {
        let _ = path;
        0
    }

    /// The bytes of the file at `path`.
    fn render_vec(&self, path: &str) -> Result<Vec<u8>, ViewError> {
        let mut v = Vec::new();
        self.render(path, &mut v)?;
        Ok(v)
    }

    /// The decoded binary a rebuild can start from instead of decoding the binary again
    /// ([`RebuildBase::Gaf`]): a GAF view's [`crate::formats::gaf::Gaf`]; `None` (the
    /// default) for other views.
    fn gaf_model(&self) -> Option<&crate::formats::gaf::Gaf> {
        None
    }

    /// The binary's own bytes, for views that keep them to rebuild from
    /// ([`RebuildBase::Bytes`]: a 3DO keeps its layout); `None` (the default) for others.
    fn base_bytes(&self) -> Option<&[u8]> {
        None
    }

    /// The same for a map ([`RebuildBase::Tnt`]): a TNT view's map and the palette of its
    /// renderings; `None` (the default) for other views.
    fn tnt_model(&self) -> Option<tnt::PackBase<'_>> {
        None
    }

    /// A map view itself (the next version's view takes over what it computed, see
    /// [`tnt::TntView::inherit`]); `None` (the default) for other views.
    fn tnt_view(&self) -> Option<&tnt::TntView> {
        None
    }

    /// Tells the view the bytes of `path` as the caller keeps them (a cache): a view may
    /// remember them without holding them, for the next version to copy unchanged parts
    /// from (a map's `map.png`, see [`tnt::TntView::inherit`]). The default ignores them.
    fn keep_rendering(&self, path: &str, bytes: &std::sync::Arc<Vec<u8>>) {
        let _ = (path, bytes);
    }

    /// Gives back what the view holds leased from a memory budget, if anything (the mount's
    /// decoded views: one kept beyond the cache is then no longer counted).
    fn unlease(&self) {}
}

/// Writes every entry of `view` under `target` (created if missing). Files are rendered on
/// both cores; nothing is written outside `target` because entry paths are sanitised
/// components joined by `/`.
pub fn write_tree(view: &dyn View, target: &Path) -> Result<(), ViewError> {
    write_tree_with(view, target, &|| {})
}

/// [`write_tree`], calling `written` after each file (from any of the writing threads).
pub fn write_tree_with(
    view: &dyn View,
    target: &Path,
    written: &(dyn Fn() + Sync),
) -> Result<(), ViewError> {
    use rayon::prelude::*;
    let io_err = |p: &Path, e: io::Error| ViewError::Io {
        path: p.display().to_string(),
        source: e,
    };
    std::fs::create_dir_all(target).map_err(|e| io_err(target, e))?;
    for e in view.entries() {
        if e.kind == EntryKind::Dir {
            let p = join_checked(target, &e.path)?;
            std::fs::create_dir_all(&p).map_err(|err| io_err(&p, err))?;
        }
    }
    view.entries()
        .par_iter()
        .filter(|e| e.kind == EntryKind::File)
        .try_for_each(|e| {
            let p = join_checked(target, &e.path)?;
            let bytes = view.render_vec(&e.path)?;
            std::fs::write(&p, bytes).map_err(|err| io_err(&p, err))?;
            written();
            Ok(())
        })
}

/// Joins a view-relative path to `base`, refusing anything that could leave `base`.
pub fn join_checked(base: &Path, rel: &str) -> Result<PathBuf, ViewError> {
    let mut p = base.to_path_buf();
    for c in rel.split('/') {
        if c.is_empty() || c == "." || c == ".." || c.contains('\0') || c.contains('\\') {
            return Err(ViewError::invalid(rel, "unsafe path component"));
        }
        p.push(c);
    }
    Ok(p)
}

/// Makes one path component out of arbitrary name bytes: printable ASCII is kept except
/// `/ \ : * ? " < > |`, every other byte becomes `_`; empty, `.` and `..` become `_`, `_.`
/// and `_..`. The exact bytes are kept elsewhere (CSV, metadata.json), never in the path.
pub fn safe_component(raw: &[u8]) -> String {
    let s: String = raw
        .iter()
        .map(|&b| match b {
            b'/' | b'\\' | b':' | b'*' | b'?' | b'"' | b'<' | b'>' | b'|' => '_',
            0x20..=0x7e => b as char,
            _ => '_',
        })
        .collect();
    match s.as_str() {
        "" => "_".to_string(),
        "." => "_.".to_string(),
        ".." => "_..".to_string(),
        _ => s,
    }
}

/// Gives each name a unique folder name: [`safe_component`], then `_<index>` appended while
/// it collides case-insensitively with an earlier one or with a reserved name.
pub fn unique_names<'a>(
    names: impl IntoIterator<Item = &'a [u8]>,
    reserved: &[&str],
) -> Vec<String> {
    let mut taken: HashSet<String> = reserved.iter().map(|r| r.to_ascii_lowercase()).collect();
    let mut out = Vec::new();
    for (i, raw) in names.into_iter().enumerate() {
        let mut name = safe_component(raw);
        while taken.contains(&name.to_ascii_lowercase()) {
            name = format!("{name}_{i}");
        }
        taken.insert(name.to_ascii_lowercase());
        out.push(name);
    }
    out
}

/// A set of files a binary is rebuilt from: a directory on disk, or the mount's overlay of
/// generated and staged files. Paths are relative and `/`-separated.
pub trait FileSet {
    /// The bytes of `path`, or `None` if there is no such file.
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, ViewError>;
    /// The names in directory `dir` (`""` = root) with `true` for sub-directories, sorted.
    /// `None` if the directory does not exist.
    fn list(&self, dir: &str) -> Result<Option<Vec<(String, bool)>>, ViewError>;
    /// Whether `path` holds what the build's base binary generates there, unedited (a file
    /// of the generated view not staged over): a build may take the base's own data for it
    /// without reading it. `false` unless a file set knows.
    fn unedited(&self, _path: &str) -> bool {
        false
    }

    /// Whether `path` is the file the build's base binary generates there itself: not
    /// staged (not even as an unedited copy), deleted or in a folder being filled. A build
    /// may take the base's own data for it as parsing it would give them. `false` unless a
    /// file set knows.
    fn generated(&self, _path: &str) -> bool {
        false
    }

    /// Whether `fingerprint` was recorded for `key` when a version of this asset was
    /// replaced: the file is a copy of an earlier version's rendering, not an edit (a COB
    /// folder's generated files and the origin of its sources, see [`cob::build`]). `false`
    /// unless a file set keeps such records (the mount's stage does).
    fn replaced_rendering(&self, _key: &str, _fingerprint: u64) -> bool {
        false
    }

    /// Whether `name` is a sequence's name (or folder) in an earlier version of the asset
    /// (a mount's commit replaced it while edits were staged): a `sequence.csv` holding it is a
    /// copy of a folder since removed (`rsync --delete` removes the old folder of a renamed
    /// one before it sends the new one). `false` unless a file set knows.
    fn earlier_name(&self, _name: &[u8]) -> bool {
        false
    }
}

/// A real directory as a [`FileSet`].
pub struct DirFileSet {
    root: PathBuf,
}

impl DirFileSet {
    /// Reads files under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DirFileSet { root: root.into() }
    }

    fn path(&self, rel: &str) -> Result<PathBuf, ViewError> {
        if rel.is_empty() {
            Ok(self.root.clone())
        } else {
            join_checked(&self.root, rel)
        }
    }
}

/// Largest file a rebuild reads (a PNG of the largest map allowed, 16,384² pixels, is
/// 256 MiB uncompressed); larger ones are refused from their size, before they are read.
pub const MAX_INPUT_BYTES: u64 = 512 << 20;

/// Reads the file at `p` as a rebuild input, refusing from its size (`InvalidData`) one
/// over [`MAX_INPUT_BYTES`].
pub fn read_input(p: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(p)?;
    let len = f.metadata()?.len();
    if len > MAX_INPUT_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{len} bytes, over the {MAX_INPUT_BYTES} bytes a rebuild reads"),
        ));
    }
    let mut v = Vec::with_capacity(len as usize);
    // a file growing while it is read stops at the bound too
    f.take(MAX_INPUT_BYTES + 1).read_to_end(&mut v)?;
    if v.len() as u64 > MAX_INPUT_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("over the {MAX_INPUT_BYTES} bytes a rebuild reads"),
        ));
    }
    Ok(v)
}

impl FileSet for DirFileSet {
    fn read(&self, rel: &str) -> Result<Option<Vec<u8>>, ViewError> {
        let p = self.path(rel)?;
        match read_input(&p) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) if p.is_dir() => Err(ViewError::invalid(rel, format!("is a directory ({e})"))),
            Err(e) => Err(ViewError::Io {
                path: p.display().to_string(),
                source: e,
            }),
        }
    }

    fn list(&self, rel: &str) -> Result<Option<Vec<(String, bool)>>, ViewError> {
        let p = self.path(rel)?;
        let rd = match std::fs::read_dir(&p) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(ViewError::Io {
                    path: p.display().to_string(),
                    source: e,
                })
            }
        };
        let mut out = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| ViewError::Io {
                path: p.display().to_string(),
                source: e,
            })?;
            let Ok(name) = ent.file_name().into_string() else {
                continue; // not UTF-8: never part of a layout
            };
            let is_dir = ent.file_type().map(|t| t.is_dir()).unwrap_or(false);
            out.push((name, is_dir));
        }
        out.sort();
        Ok(Some(out))
    }
}

/// An in-memory [`FileSet`] (tests, and the mount's overlay).
#[derive(Debug, Default, Clone)]
pub struct MemFileSet {
    /// File path → bytes. Directories are implied by the paths.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl MemFileSet {
    /// Renders every file of `view` into memory.
    pub fn from_view(view: &dyn View) -> Result<MemFileSet, ViewError> {
        let mut files = BTreeMap::new();
        for e in view.entries() {
            if e.kind == EntryKind::File {
                files.insert(e.path.clone(), view.render_vec(&e.path)?);
            }
        }
        Ok(MemFileSet { files })
    }
}

impl FileSet for MemFileSet {
    fn read(&self, path: &str) -> Result<Option<Vec<u8>>, ViewError> {
        Ok(self.files.get(path).cloned())
    }

    fn list(&self, dir: &str) -> Result<Option<Vec<(String, bool)>>, ViewError> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut seen = BTreeMap::new();
        for k in self.files.keys() {
            if let Some(rest) = k.strip_prefix(&prefix) {
                match rest.split_once('/') {
                    Some((d, _)) => seen.insert(d.to_string(), true),
                    None => seen.insert(rest.to_string(), false),
                };
            }
        }
        if seen.is_empty() && !dir.is_empty() {
            return Ok(None);
        }
        Ok(Some(seen.into_iter().collect()))
    }
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EntryKind::Dir => "dir",
            EntryKind::File => "file",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_safe() {
        assert_eq!(safe_component(b"a/b"), "a_b");
        assert_eq!(safe_component(b".."), "_..");
        assert_eq!(safe_component(b"."), "_.");
        assert_eq!(safe_component(b""), "_");
        assert_eq!(safe_component(b"x\0y\xff"), "x_y_");
        assert_eq!(safe_component(b"..\\x"), ".._x");
    }

    #[test]
    fn names_are_unique_case_insensitively() {
        let names: Vec<&[u8]> = vec![b"Fire", b"fire", b"FIRE", b"fire_1", b"x"];
        let got = unique_names(names, &["metadata.json"]);
        assert_eq!(got, ["Fire", "fire_1", "FIRE_2", "fire_1_3", "x"]);
        let got = unique_names(vec![b"metadata.json".as_slice()], &["metadata.json"]);
        assert_eq!(got, ["metadata.json_0"]);
    }

    #[test]
    fn a_shared_open_keeps_the_bytes_it_was_given_and_lists_what_open_lists() {
        use crate::formats::gaf::Content;
        let data = crate::formats::gaf::write(&crate::sample::animated_gaf()).unwrap();
        let shared = SharedBytes::from(data.clone());
        let opts = ViewOptions::default();
        let a = open_shared(AssetKind::Gaf, &shared, &opts).unwrap();
        let b = open(AssetKind::Gaf, &data, &opts).unwrap();
        assert_eq!(a.entries(), b.entries());
        assert_eq!(
            a.render_vec("metadata.json").unwrap(),
            b.render_vec("metadata.json").unwrap()
        );
        let (lo, hi) = (
            shared.as_ptr() as usize,
            shared.as_ptr() as usize + shared.len(),
        );
        let mut seen = 0;
        for s in &a.gaf_model().unwrap().sequences {
            for fe in &s.frames {
                if let Content::Pixels(p) = &fe.frame.content {
                    let p = p.payload.as_ref().unwrap();
                    let at = p.as_ptr() as usize;
                    assert!(at >= lo && at + p.len() <= hi, "a frame copied its bytes");
                    seen += 1;
                }
            }
        }
        assert!(seen > 0);
        // a map view is what `open` gives
        let map = crate::formats::tnt::write(&crate::sample::demo_map()).unwrap();
        let t = open_shared(AssetKind::Tnt, &SharedBytes::from(map.clone()), &opts).unwrap();
        assert_eq!(
            t.entries(),
            open(AssetKind::Tnt, &map, &opts).unwrap().entries()
        );
    }

    #[test]
    fn join_refuses_escapes() {
        let b = Path::new("/tmp/x");
        assert!(join_checked(b, "../y").is_err());
        assert!(join_checked(b, "a//b").is_err());
        assert!(join_checked(b, "a/./b").is_err());
        assert_eq!(join_checked(b, "a/b").unwrap(), Path::new("/tmp/x/a/b"));
    }

    #[test]
    fn writes_are_accepted_where_a_build_reads_them() {
        for p in ["", "model.obj", "model.mtl", "pieces.csv", "new.txt"] {
            assert!(accepts_writes(AssetKind::Model3d, p), "{p}");
        }
        for p in ["preview.png", "textures", "textures/armsolar.png"] {
            assert!(!accepts_writes(AssetKind::Model3d, p), "{p}");
        }
        for k in [
            AssetKind::Gaf,
            AssetKind::Tnt,
            AssetKind::Pcx,
            AssetKind::Pal,
            AssetKind::Cob,
        ] {
            assert!(accepts_writes(k, ""));
        }
        assert!(accepts_writes(AssetKind::Gaf, "seq/animated.png"));
        assert!(accepts_writes(AssetKind::Fnt, "U+0041.png"));
        assert!(!accepts_writes(AssetKind::Fnt, "sheet.png"));
        // the first component named like an asset is the asset, also in an archive
        assert!(accepts_writes_within("objects3d/arm.3do/model.obj", true));
        assert!(!accepts_writes_within(
            "objects3d/arm.3do/preview.png",
            true
        ));
        assert!(!accepts_writes_within(
            "x.ufo/objects3d/ARM.3DO/textures",
            false
        ));
        assert!(!accepts_writes_within(
            "x.ufo/objects3d/ARM.3DO/textures/new",
            true
        ));
        // a member file named like an asset is a member, not its view
        assert!(accepts_writes_within("x.ufo/objects3d/ARM.3DO", true));
        assert!(accepts_writes_within("x.ufo/objects3d/readme.txt", true));
        assert!(accepts_writes_within("anims/x.gaf/a.3do/0.png", true));
        assert!(accepts_writes_within("", false));
    }
}

/// Which exploded view a file name gets, by extension (any letter case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AssetKind {
    /// `.gaf` or `.taf` (paletted or truecolor): the `tafs gaf dump` layout.
    Gaf,
    /// `.tnt`: the `tafs tnt unpack` layout.
    Tnt,
    /// `.pcx`: a picture ([`pcx`]: `image.png` + `metadata.json`), or — decided by content,
    /// [`pal::pcx_palette_kind`] — a TA: Kingdoms 1×1 palette carrier or a raw 768-byte
    /// palette, shown as a palette ([`pal`]).
    Pcx,
    /// `.pal`: a palette ([`pal`]: `swatch.png`, `palette.gpl`, `palette.csv`).
    Pal,
    /// `.3do`: a model ([`model3d`]).
    Model3d,
    /// `.cob`: a unit script ([`cob`]: `script.coba`, `pieces.csv`, `scripts.csv`,
    /// `metadata.json`).
    Cob,
    /// `.fnt`: a bitmap font ([`fnt`]: a PNG per glyph, `glyphs.csv`, `sheet.png`).
    Fnt,
    /// `.alp`, `.shd`, `.lht`: a palette lookup table ([`paltable`]: `table.png`,
    /// `table.csv`).
    PalTable,
}

impl AssetKind {
    /// The kind for a file name, or `None` for files that pass through.
    pub fn from_name(name: &str) -> Option<AssetKind> {
        let lower = name.to_ascii_lowercase();
        let ext = lower.rsplit_once('.').map(|(_, e)| e)?;
        match ext {
            "gaf" | "taf" => Some(AssetKind::Gaf),
            "tnt" => Some(AssetKind::Tnt),
            "pcx" => Some(AssetKind::Pcx),
            "pal" => Some(AssetKind::Pal),
            "3do" => Some(AssetKind::Model3d),
            "cob" => Some(AssetKind::Cob),
            "fnt" => Some(AssetKind::Fnt),
            "alp" | "shd" | "lht" => Some(AssetKind::PalTable),
            _ => None,
        }
    }

    /// False for kinds whose directory cannot be written back (none now): the mount would
    /// answer `EROFS` inside them and [`rebuild`] refuse them.
    pub fn writable(self) -> bool {
        true
    }
}

/// Whether what is written at `path` of an asset folder of `kind` (relative to that folder;
/// `""` is the folder itself, a path inside one names what is created there) is read by a
/// build, or kept as written for a reason SEMANTICS gives (a sequence's `animated.png` and a
/// dump's `palette.gpl` are previews a copied-back dump carries: `rsync`, `cp -a`, `tar x`
/// of a whole dump write them). False: the mount refuses the write at `open` (`EROFS`),
/// shows no write bit and stages nothing.
pub fn accepts_writes(kind: AssetKind, path: &str) -> bool {
    match kind {
        AssetKind::Gaf | AssetKind::Tnt | AssetKind::Pcx | AssetKind::Pal => true,
        AssetKind::PalTable => true,
        // the source and the assembly build; a generated CSV or metadata.json saved with other
        // contents fails the save, so a copy of a whole dump still lands
        AssetKind::Cob => true,
        // a font's `sheet.png` shows every glyph; the glyphs' own PNGs build
        AssetKind::Fnt => path != fnt::SHEET,
        // a 3DO's `textures/` (the game's texture GAFs) and `preview.png` are renderings no
        // build reads; `model.obj`, `model.mtl` and `pieces.csv` build
        AssetKind::Model3d => {
            !(path == model3d::PREVIEW
                || path == model3d::TEXTURE_DIR
                || path.starts_with(&format!("{}/", model3d::TEXTURE_DIR)))
        }
    }
}

/// [`accepts_writes`] for `path` beneath a game folder or an archive (`/`-separated): the
/// asset is its first component named like one ([`AssetKind::from_name`]), the rest the path
/// in its folder; a path within no asset accepts writes (a plain file, an archive member). A
/// `file` (not a folder) named like an asset is an archive's member as a file, not its view:
/// its folder decides.
pub fn accepts_writes_within(path: &str, file: bool) -> bool {
    let path = match path.rsplit_once('/') {
        Some((dir, last)) if file && AssetKind::from_name(last).is_some() => dir,
        None if file && AssetKind::from_name(path).is_some() => "",
        _ => path,
    };
    let mut comps = path.split('/').filter(|c| !c.is_empty());
    while let Some(c) = comps.next() {
        if let Some(kind) = AssetKind::from_name(c) {
            let rest: Vec<&str> = comps.collect();
            return accepts_writes(kind, &rest.join("/"));
        }
    }
    true
}

/// The name a palette view writes into `palette.gpl`: the asset's file name.
fn palette_name(opts: &ViewOptions) -> String {
    let path = opts.asset_path.as_deref().unwrap_or("palette");
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// Which lookup table the asset is, by its name (none known: told by its size).
fn table_kind(opts: &ViewOptions) -> Option<crate::formats::paltable::TableKind> {
    opts.asset_path
        .as_deref()
        .and_then(crate::formats::paltable::TableKind::from_name)
}

/// Bytes of a binary that a view may keep and share instead of copying (a GAF view's frames
/// slice them); cloning shares them.
pub type SharedBytes = ::bytes::Bytes;

/// [`open`] of bytes the view may keep: a GAF's frames slice `data` instead of a copy of it.
pub fn open_shared(
    kind: AssetKind,
    data: &SharedBytes,
    opts: &ViewOptions,
) -> Result<Box<dyn View>, ViewError> {
    match kind {
        AssetKind::Gaf => Ok(Box::new(gaf::GafView::from_shared(data, opts)?)),
        _ => open(kind, data, opts),
    }
}

/// Decodes `data` as an asset of `kind` and returns its view.
pub fn open(kind: AssetKind, data: &[u8], opts: &ViewOptions) -> Result<Box<dyn View>, ViewError> {
    match kind {
        AssetKind::Gaf => Ok(Box::new(gaf::GafView::new(data, opts)?)),
        AssetKind::Tnt => Ok(Box::new(tnt::TntView::new(data, opts)?)),
        AssetKind::Pcx => match pal::pcx_palette_kind(data, &opts.limits) {
            Some(pk) => Ok(Box::new(pal::open(
                data,
                pk,
                &palette_name(opts),
                &opts.limits,
            )?)),
            None => Ok(Box::new(pcx::open(data, &opts.limits)?)),
        },
        AssetKind::Pal => Ok(Box::new(pal::open(
            data,
            pal::PaletteFile::Pal,
            &palette_name(opts),
            &opts.limits,
        )?)),
        AssetKind::Cob => cob::open_view(data, &Default::default()),
        AssetKind::Fnt => Ok(Box::new(fnt::open(data)?)),
        AssetKind::PalTable => Ok(Box::new(paltable::open(
            data,
            table_kind(opts),
            &opts.palette,
            &opts.limits,
        )?)),
        AssetKind::Model3d => {
            let none = model3d::Textures::new();
            let textures = opts.textures.as_deref().unwrap_or(&none);
            Ok(Box::new(model3d::open(
                data,
                textures,
                &opts.palette,
                &opts.model_limits,
            )?))
        }
    }
}

/// The inverse of [`open`]: rebuilds the binary of `kind` from a file set, as `tafs gaf build
/// --base` (GAF) / `tafs tnt pack` (TNT) / `tafs pcx build` / `tafs pal build` do; `base` is
/// the current binary (unchanged GAF frames keep its stored bytes; a PCX keeps its pixels'
/// indices where the colour is unchanged; a palette carrier keeps its picture); a 3DO keeps
/// the base's layout where the edit allows ([`model3d::build`]).
pub fn rebuild(
    kind: AssetKind,
    files: &dyn FileSet,
    base: Option<&[u8]>,
    opts: &ViewOptions,
) -> Result<Vec<u8>, ViewError> {
    let base = base.map_or(RebuildBase::None, RebuildBase::Bytes);
    Ok(rebuild_from(kind, files, base, opts)?.bytes)
}

/// The binary a rebuild starts from ([`rebuild_from`]).
#[derive(Clone, Copy)]
pub enum RebuildBase<'a> {
    /// None (a new asset).
    None,
    /// The current binary's bytes.
    Bytes(&'a [u8]),
    /// The current GAF as decoded (its frames as stored, [`crate::formats::gaf::parse_stored`]):
    /// what its bytes would be parsed to, without reading them again.
    Gaf(&'a crate::formats::gaf::Gaf),
    /// The current map as decoded, with the palette of its renderings: files of the set that
    /// are its own renderings are taken from it ([`tnt::PackBase`]).
    Tnt(tnt::PackBase<'a>),
}

/// What [`rebuild_from`] gives.
#[derive(Debug)]
pub struct Rebuilt {
    /// The new binary.
    pub bytes: Vec<u8>,
    /// Whether it is the base's bytes, when known without them (a GAF base: see
    /// [`gaf::same_bytes`]); always known for a base given as bytes, never without one.
    pub unchanged: Option<bool>,
}

/// [`rebuild`] from a base given as bytes or as decoded; the mount commits with it.
pub fn rebuild_from(
    kind: AssetKind,
    files: &dyn FileSet,
    base: RebuildBase<'_>,
    opts: &ViewOptions,
) -> Result<Rebuilt, ViewError> {
    let given = match base {
        RebuildBase::Bytes(b) => Some(b),
        RebuildBase::None | RebuildBase::Gaf(_) | RebuildBase::Tnt(_) => None,
    };
    let same = |bytes: Vec<u8>| Rebuilt {
        unchanged: given.map(|b| b == bytes.as_slice()),
        bytes,
    };
    let base_bytes = given;
    let bytes = match kind {
        AssetKind::Gaf => {
            // the base's frames are taken as stored, decoded only where compared
            let parsed;
            let model = match base {
                RebuildBase::Gaf(g) => Some(g),
                RebuildBase::Bytes(b) => {
                    parsed = crate::formats::gaf::parse_stored(b, &opts.limits)?;
                    Some(&parsed)
                }
                RebuildBase::None | RebuildBase::Tnt(_) => None,
            };
            let (bytes, unchanged) = gaf::rebuild(files, model, opts)?;
            if let RebuildBase::Gaf(_) = base {
                return Ok(Rebuilt { bytes, unchanged });
            }
            // what the models said, checked against the bytes (of a base that rewrites
            // to itself, as every parsed GAF should)
            debug_assert!(
                match (unchanged, given, model) {
                    (Some(u), Some(b), Some(m)) => {
                        crate::formats::gaf::write(m).ok().as_deref() != Some(b)
                            || u == (b == bytes.as_slice())
                    }
                    _ => true,
                },
                "same_bytes misjudged a rebuild"
            );
            Ok(bytes)
        }
        // maps carry everything pack needs in their unpacked files; a decoded base stands
        // for its own renderings
        AssetKind::Tnt => {
            let own = match base {
                RebuildBase::Tnt(b) => Some(b),
                _ => None,
            };
            let po = tnt::PackOptions {
                prune: false,
                limits: opts.limits,
            };
            tnt::pack_from(files, own, &po).map(|(b, _)| b)
        }
        AssetKind::Pcx => {
            // a palette carrier's view has no image.png; which view it was is the base's
            // content when there is one, else the files present
            let carrier = match base_bytes {
                Some(b) => pal::pcx_palette_kind(b, &opts.limits),
                None if files.read(pcx::IMAGE)?.is_none() => Some(pal::PaletteFile::Pcx),
                None => None,
            };
            match carrier {
                Some(pk) => pal::build(files, pk, base_bytes, &opts.limits),
                None => pcx::build(files, base_bytes, &opts.limits),
            }
        }
        AssetKind::Pal => pal::build(files, pal::PaletteFile::Pal, base_bytes, &opts.limits),
        AssetKind::Fnt => fnt::build(files, base_bytes),
        AssetKind::PalTable => paltable::build(
            files,
            table_kind(opts),
            base_bytes,
            &opts.palette,
            &opts.limits,
        ),
        AssetKind::Cob => {
            let none = crate::formats::bos::NoIncludes;
            let includes: &dyn crate::formats::bos::Includes = match &opts.script_headers {
                Some(h) => h.as_ref(),
                None => &none,
            };
            cob::build(files, base_bytes, includes, &Default::default())
        }
        AssetKind::Model3d => model3d::build(
            files,
            base_bytes,
            opts.textures.as_deref(),
            &opts.model_limits,
        ),
    };
    bytes.map(same)
}
