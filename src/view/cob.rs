//! The exploded view of a COB unit script: `script.coba` (the assembly text of
//! [`crate::formats::cob::asm`]), `pieces.csv`, `scripts.csv` and `metadata.json`; and, once a
//! decompiler is plugged into [`decompile`] / [`compile`], `script.bos`.
//!
//! The build reads the assembly (or an edited `script.bos`, see [`compile`]) and writes the
//! COB; an unedited folder rebuilds the identical binary. `pieces.csv`, `scripts.csv` and
//! `metadata.json` describe the binary and are not build inputs: the build fails (naming the
//! file) when one of them was edited into something other than what the new binary shows, so
//! no edit to them is accepted and then ignored. An assembly error fails the build with
//! [`ViewError::Source`] (`script.coba:LINE:COL: message`).

use super::pcx::FileListView;
use super::{FileSet, View, ViewError};
use crate::formats::cob::{self, asm, Cob, Limits};
use serde::Serialize;
use std::fmt::Write as _;

/// The assembly file: what the build reads.
pub const ASSEMBLY: &str = "script.coba";
/// The BOS source (listed only when [`decompile`] gives one).
pub const SOURCE: &str = "script.bos";
/// The piece table as CSV (generated).
pub const PIECES: &str = "pieces.csv";
/// The script table as CSV (generated).
pub const SCRIPTS: &str = "scripts.csv";
/// Header facts as JSON (generated).
pub const METADATA: &str = "metadata.json";

/// The files no build reads: generated from the binary.
pub const GENERATED: [&str; 3] = [PIECES, SCRIPTS, METADATA];

/// The decompiled source of `cob` ([`crate::formats::bos::decompile`], which compiles back to
/// the identical binary) followed by the [`Origin`] line of its bytes `bytes`: `script.bos`,
/// and what `tafs cob decompile` prints.
pub fn source_text(cob: &Cob, bytes: &[u8]) -> String {
    let mut s = crate::formats::bos::decompile::decompile(cob).source;
    s.push_str(&Origin::of(bytes).line("//"));
    s
}

/// The assembly of `cob` ([`asm::disassemble`]) followed by the [`Origin`] line of its bytes
/// `bytes`: `script.coba`, and what `tafs cob disassemble` prints.
pub fn assembly_text(cob: &Cob, bytes: &[u8]) -> String {
    let mut s = asm::disassemble(cob);
    s.push_str(&Origin::of(bytes).line(";"));
    s
}

/// The binary a rendered source was made from, named by its last comment line
/// (`; origin: COB of 1234 bytes, CRC-32 0a1b2c3d …`). A folder holds two sources of one
/// binary; a copy of it edited in one of them carries the other as an unedited rendering of
/// the binary the copy was made from. This line lets a build tell such a stale rendering
/// (it builds exactly the binary it names) from an edit (it builds something else), so the
/// stale one never overrides the edit ([`build`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    /// Size of the binary in bytes.
    pub len: u64,
    /// Its CRC-32.
    pub crc: u32,
}

const ORIGIN_PREFIX: &str = "origin: COB of ";

impl Origin {
    /// The origin of binary `bytes`.
    pub fn of(bytes: &[u8]) -> Origin {
        Origin {
            len: bytes.len() as u64,
            crc: crc32fast::hash(bytes),
        }
    }

    /// One number for the origin: size and CRC-32.
    pub fn fingerprint(self) -> u64 {
        (self.len << 32) ^ u64::from(self.crc)
    }

    /// The comment line (with `comment` as its marker, `;` or `//`) naming this origin.
    pub fn line(self, comment: &str) -> String {
        format!(
            "{comment} {ORIGIN_PREFIX}{} bytes, CRC-32 {:08x} (left unedited, this file stands \
             for that binary)\n",
            self.len, self.crc
        )
    }

    /// The origin named by the last origin line of `text` (comment marker `comment`).
    fn find(text: &[u8], comment: &str) -> Option<Origin> {
        text.split(|&b| b == b'\n').rev().find_map(|line| {
            let line = std::str::from_utf8(line).ok()?.trim();
            let rest = line.strip_prefix(comment)?.trim_start();
            let rest = rest.strip_prefix(ORIGIN_PREFIX)?;
            let (len, rest) = rest.split_once(" bytes, CRC-32 ")?;
            let crc = rest.get(..8)?;
            Some(Origin {
                len: len.parse().ok()?,
                crc: u32::from_str_radix(crc, 16).ok()?,
            })
        })
    }
}

/// The [`crate::view::FileSet::replaced_rendering`] key of the origins of the sources.
pub const ORIGIN_KEY: &str = "script.origin";

/// What a commit records of the version it replaces, given its files (`render`): the
/// CRC-32 of each generated file (by name) and the fingerprint of its sources' origin
/// ([`ORIGIN_KEY`]). A later copy of them is then known as a copy of that version's
/// rendering, not an edit ([`build`]).
pub fn replaced_fingerprints(render: &dyn Fn(&str) -> Option<Vec<u8>>) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = GENERATED
        .iter()
        .filter_map(|n| render(n).map(|b| (n.to_string(), u64::from(crc32fast::hash(&b)))))
        .collect();
    if let Some(o) = render(ASSEMBLY).and_then(|t| Origin::find(&t, ";")) {
        out.push((ORIGIN_KEY.to_string(), o.fingerprint()));
    }
    out
}

/// Compiles an edited `script.bos` (headers found through `includes`, then the built-in
/// ones); its errors are [`ViewError::Source`] naming [`SOURCE`] (or the header).
pub fn compile(
    source: &[u8],
    includes: &dyn crate::formats::bos::Includes,
) -> Result<Cob, ViewError> {
    use crate::formats::bos;
    let opts = bos::Options::new(bos::mode_of(source));
    let r = bos::compile(SOURCE, source, includes, &opts, &bos::Limits::default());
    r.map_err(|e| ViewError::Source {
        file: SOURCE.into(),
        line: e.line as usize,
        col: e.col as usize,
        // An error inside an included header names that header.
        msg: if e.file == SOURCE {
            e.message
        } else {
            format!("{}: {}", e.file, e.message)
        },
    })
}

/// What one source of the folder builds.
struct Reading {
    cob: Cob,
    bytes: Vec<u8>,
    /// The binary its origin line names.
    origin: Option<Origin>,
    /// Whether it builds exactly that binary: it carries no edit of its own (the current
    /// binary's rendering, or a copy of another's).
    rendering: bool,
}

impl Reading {
    fn new(text: &[u8], cob: Cob, comment: &str) -> Result<Self, ViewError> {
        let bytes = cob::write(&cob)?;
        let origin = Origin::find(text, comment);
        let rendering = origin == Some(Origin::of(&bytes));
        Ok(Reading {
            cob,
            bytes,
            origin,
            rendering,
        })
    }
}

/// Which of the folder's sources the binary is built from: `None` for the base.
///
/// A source that builds the base says nothing. A *stale* source says nothing either: an
/// unedited rendering of a binary this asset had before (recorded by the mount when it
/// replaced it, [`FileSet::replaced_rendering`]), or of the binary the other source was
/// edited from (the two came from one copy). What is left is the edit: the one source, or
/// both when they build the same binary; two that build different ones are refused naming
/// both files (nothing is guessed).
fn choose(
    files: &dyn FileSet,
    asm: Reading,
    src: Option<Reading>,
    base: Option<&[u8]>,
) -> Result<Option<Reading>, ViewError> {
    let changes = |r: &Reading| base != Some(r.bytes.as_slice());
    let stale = |r: &Reading, other: Option<&Reading>| {
        let Some(origin) = r.origin.filter(|_| r.rendering) else {
            return false;
        };
        files.replaced_rendering(ORIGIN_KEY, origin.fingerprint())
            || other.is_some_and(|o| !o.rendering && o.origin == Some(origin))
    };
    let both = |why: &str| {
        Err(ViewError::invalid(
            SOURCE,
            format!(
                "both script.bos and script.coba were edited, into different scripts{why}: keep \
                 one edit (copy the other file again from the folder)"
            ),
        ))
    };
    // Edited from one binary into different scripts, even if one of them was saved (and
    // built the base) first: taking the other would undo it.
    if let Some(s) = &src {
        if !asm.rendering
            && !s.rendering
            && asm.origin.is_some()
            && asm.origin == s.origin
            && asm.bytes != s.bytes
        {
            return both(" from the same binary");
        }
    }
    let asm_counts = changes(&asm) && !stale(&asm, src.as_ref());
    let src_counts = src
        .as_ref()
        .is_some_and(|s| changes(s) && !stale(s, Some(&asm)));
    match (asm_counts, src.filter(|_| src_counts)) {
        (true, Some(s)) if s.bytes == asm.bytes => Ok(Some(s)),
        (true, Some(_)) => both(""),
        (true, None) => Ok(Some(asm)),
        (false, Some(s)) => Ok(Some(s)),
        (false, None) if base.is_none() => Ok(Some(asm)),
        (false, None) => Ok(None),
    }
}

/// Rebuilds the COB from `files` (`base`: the current binary, if any; `includes` finds the
/// headers `script.bos` includes). The binary comes from `script.coba`, or from an edited
/// `script.bos`, as [`choose`] decides between them.
pub fn build(
    files: &dyn FileSet,
    base: Option<&[u8]>,
    includes: &dyn crate::formats::bos::Includes,
    limits: &Limits,
) -> Result<Vec<u8>, ViewError> {
    let base_cob = base.and_then(|b| cob::parse(b, limits).ok().map(|c| (c, b)));
    let text = files.read(ASSEMBLY)?.ok_or_else(|| ViewError::Missing {
        file: ASSEMBLY.into(),
        why: "the assembly the COB is built from".into(),
    })?;
    if text.len() > limits.max_file_len.saturating_mul(16) {
        return Err(ViewError::invalid(ASSEMBLY, "too large for a script"));
    }
    let asm_text = std::str::from_utf8(&text)
        .map_err(|e| ViewError::invalid(ASSEMBLY, format!("not UTF-8 text: {e}")))?;
    let asm_cob = asm::assemble(asm_text).map_err(|e| ViewError::Source {
        file: ASSEMBLY.into(),
        line: e.line,
        col: e.col,
        msg: e.message,
    })?;
    let asm_reading = Reading::new(&text, asm_cob, ";")?;
    // The source counts when it was saved (even if it built the last commit) and is not
    // the base's own rendering.
    let mut src_reading = None;
    if !files.generated(SOURCE) {
        if let Some(src) = files.read(SOURCE)? {
            let own = base_cob
                .as_ref()
                .is_some_and(|(c, b)| source_text(c, b).as_bytes() == src.as_slice());
            if !own {
                let compiled = compile(&src, includes)?;
                src_reading = Some(Reading::new(&src, compiled, "//")?);
            }
        }
    }
    // What a generated file may show besides the result's: the base's and those of the
    // sources' renderings (a copy of an older folder).
    let mut shown: Vec<[(String, Vec<u8>); 3]> = Vec::new();
    if let Some((c, _)) = &base_cob {
        shown.push(generated_files(c));
    }
    for r in [Some(&asm_reading), src_reading.as_ref()]
        .into_iter()
        .flatten()
    {
        if r.rendering && Some(r.bytes.as_slice()) != base {
            shown.push(generated_files(&r.cob));
        }
    }
    let (c, bytes) = match choose(files, asm_reading, src_reading, base)? {
        Some(r) => (r.cob, r.bytes),
        None => match base_cob {
            Some((c, b)) => (c, b.to_vec()),
            None => return Err(ViewError::invalid(ASSEMBLY, "no script to build")),
        },
    };
    shown.push(generated_files(&c));
    // Generated files: accepted only as one of those binaries shows them, or as a version
    // this asset had before showed them.
    for name in GENERATED {
        if files.unedited(name) {
            continue;
        }
        let Some(got) = files.read(name)? else {
            continue;
        };
        let ok = shown.iter().any(|set| {
            set.iter()
                .any(|(n, b)| n == name && b.as_slice() == got.as_slice())
        }) || files.replaced_rendering(name, u64::from(crc32fast::hash(&got)));
        if !ok {
            return Err(ViewError::invalid(
                name,
                "generated from the script and not read back: edit script.coba instead \
                 (pieces are its .piece lines, scripts its .script lines), or put this file \
                 back",
            ));
        }
    }
    Ok(bytes)
}

#[derive(Serialize)]
struct Metadata<'a> {
    version: u32,
    layout: &'static str,
    static_vars: u32,
    scripts: usize,
    pieces: usize,
    code_words: usize,
    sound_names: &'a [String],
    header_0x14: u32,
    trailing_bytes: usize,
    edit: &'static str,
}

/// Every file of the view of `c`, whose bytes are `bytes`, rendered.
fn files_of(c: &Cob, bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::with_capacity(5);
    files.push((SOURCE.to_string(), source_text(c, bytes).into_bytes()));
    files.push((ASSEMBLY.to_string(), assembly_text(c, bytes).into_bytes()));
    files.extend(generated_files(c));
    files
}

/// The files of [`GENERATED`], rendered from `c`.
fn generated_files(c: &Cob) -> [(String, Vec<u8>); 3] {
    [
        (PIECES.to_string(), pieces_csv(c).into_bytes()),
        (SCRIPTS.to_string(), scripts_csv(c).into_bytes()),
        (METADATA.to_string(), metadata_json(c)),
    ]
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn pieces_csv(c: &Cob) -> String {
    let mut s = String::from("index,name\n");
    for (i, p) in c.pieces.iter().enumerate() {
        let _ = writeln!(s, "{i},{}", csv_field(p));
    }
    s
}

fn scripts_csv(c: &Cob) -> String {
    let mut s = String::from("index,name,start_word,words,runs_as\n");
    for (i, sc) in c.scripts.iter().enumerate() {
        let (words, runs_as) = match c.shares_start_with(i) {
            Some(j) => (0, c.scripts.get(j).map_or("", |x| x.name.as_str())),
            None => (c.script_range(i).map_or(0, |r| r.len()), ""),
        };
        let _ = writeln!(
            s,
            "{i},{},{},{words},{}",
            csv_field(&sc.name),
            sc.start,
            csv_field(runs_as)
        );
    }
    s
}

fn metadata_json(c: &Cob) -> Vec<u8> {
    let m = Metadata {
        version: c.version,
        layout: match c.version {
            cob::VERSION_TAK => "TA: Kingdoms (52-byte header, sound-name table)",
            _ => "TA (44-byte header)",
        },
        static_vars: c.static_vars,
        scripts: c.scripts.len(),
        pieces: c.pieces.len(),
        code_words: c.code.len(),
        sound_names: &c.sounds,
        header_0x14: c.unknown_0x14,
        trailing_bytes: c.trailing.len(),
        edit: "generated: edit script.coba (pieces are its .piece lines, scripts its .script \
               lines); this file, pieces.csv and scripts.csv are not read back",
    };
    let mut v = serde_json::to_vec_pretty(&m).unwrap_or_default();
    v.push(b'\n');
    v
}

/// The view of the COB `data`.
pub fn open(data: &[u8], limits: &Limits) -> Result<FileListView, ViewError> {
    let c = cob::parse(data, limits)?;
    Ok(FileListView::new(files_of(&c, data)))
}

/// The view, boxed.
pub fn open_view(data: &[u8], limits: &Limits) -> Result<Box<dyn View>, ViewError> {
    Ok(Box::new(open(data, limits)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::bos::NoIncludes;
    use crate::view::{MemFileSet, View};

    fn sample() -> Vec<u8> {
        let mut c = Cob::new(4, vec!["base".into(), "flare".into()], 1);
        c.push_script("Create", &[0x1002_1001, 100, 0x1001_3000, 0x1006_4000, 0]);
        c.push_script("Go", &[]);
        c.push_script("Stop", &[0x1000_6000, 1, 0x1002_1001, 0, 0x1006_5000]);
        cob::write(&c).unwrap()
    }

    fn set(data: &[u8]) -> MemFileSet {
        let v = open(data, &Limits::default()).unwrap();
        let names: Vec<&str> = v.entries().iter().map(|e| e.path.as_str()).collect();
        let expected = vec![SOURCE, ASSEMBLY, PIECES, SCRIPTS, METADATA];
        assert_eq!(names, expected);
        MemFileSet::from_view(&v).unwrap()
    }

    #[test]
    fn an_unedited_folder_rebuilds_identical_bytes() {
        let b = sample();
        let s = set(&b);
        assert_eq!(
            build(&s, Some(&b), &NoIncludes, &Limits::default()).unwrap(),
            b
        );
        assert_eq!(build(&s, None, &NoIncludes, &Limits::default()).unwrap(), b);
    }

    #[test]
    fn a_renamed_piece_rebuilds_and_stale_generated_files_are_accepted() {
        let b = sample();
        let mut s = set(&b);
        let text = String::from_utf8(s.files[ASSEMBLY].clone()).unwrap();
        let edited = text
            .replace(".piece flare", ".piece fire")
            .replace("HIDE flare", "HIDE fire");
        s.files.insert(ASSEMBLY.into(), edited.into_bytes());
        // pieces.csv still shows the base's pieces: it was not edited, so it is no obstacle.
        let out = build(&s, Some(&b), &NoIncludes, &Limits::default()).unwrap();
        let c = cob::parse(&out, &Limits::default()).unwrap();
        assert_eq!(c.pieces, ["base", "fire"]);
        // pieces.csv matching the new binary is accepted too (a copied folder).
        s.files
            .insert(PIECES.into(), b"index,name\n0,base\n1,fire\n".to_vec());
        assert_eq!(
            build(&s, Some(&b), &NoIncludes, &Limits::default()).unwrap(),
            out
        );
    }

    #[test]
    fn edited_generated_files_and_bad_assembly_fail_with_their_names() {
        let b = sample();
        for name in GENERATED {
            let mut s = set(&b);
            s.files.get_mut(name).unwrap().extend_from_slice(b"x\n");
            let e = build(&s, Some(&b), &NoIncludes, &Limits::default()).unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("{name}: generated")),
                "{e}"
            );
        }
        let mut s = set(&b);
        s.files
            .insert(ASSEMBLY.into(), b".version 4\n  NOPE\n".to_vec());
        let e = build(&s, Some(&b), &NoIncludes, &Limits::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "script.coba:2:3: unknown instruction \"NOPE\""
        );
        s.files.remove(ASSEMBLY);
        assert!(matches!(
            build(&s, Some(&b), &NoIncludes, &Limits::default()),
            Err(ViewError::Missing { .. })
        ));
    }
}

#[cfg(test)]
mod origin_tests {
    use super::*;
    use crate::formats::bos::NoIncludes;
    use crate::view::MemFileSet;

    /// Create sleeps 100 in an endless loop.
    fn sample() -> Vec<u8> {
        let src = b"piece base, flare;\nCreate()\n{\n\twhile (TRUE)\n\t{\n\t\tsleep 100;\n\t}\n}\n";
        cob::write(&compile(src, &NoIncludes).unwrap()).unwrap()
    }

    /// A copy of the folder of `bin`, as `cp -r` makes it.
    fn copy(bin: &[u8]) -> MemFileSet {
        MemFileSet::from_view(&open(bin, &Limits::default()).unwrap()).unwrap()
    }

    fn edit(s: &mut MemFileSet, file: &str, from: &str, to: &str) {
        let t = String::from_utf8(s.files[file].clone()).unwrap();
        assert!(t.contains(from), "{t}");
        s.files
            .insert(file.into(), t.replace(from, to).into_bytes());
    }

    fn build_on(s: &MemFileSet, base: &[u8]) -> Result<Vec<u8>, ViewError> {
        build(s, Some(base), &NoIncludes, &Limits::default())
    }

    #[test]
    fn the_origin_line_names_the_binary_and_is_found_again() {
        let b = sample();
        let s = copy(&b);
        for (file, mark) in [(SOURCE, "//"), (ASSEMBLY, ";")] {
            let text = &s.files[file];
            let last = String::from_utf8_lossy(text)
                .lines()
                .last()
                .unwrap()
                .to_string();
            assert!(
                last.starts_with(&format!("{mark} origin: COB of ")),
                "{last}"
            );
            assert_eq!(Origin::find(text, mark), Some(Origin::of(&b)));
        }
        assert_eq!(Origin::find(b"; origin: COB of x bytes", ";"), None);
    }

    #[test]
    fn a_stale_source_of_a_copy_never_overrides_the_edit_of_the_other() {
        let x = sample();
        for (edited, from, to) in [
            (SOURCE, "sleep 100;", "sleep 250;"),
            (ASSEMBLY, "PUSH_CONST 100", "PUSH_CONST 250"),
            (SOURCE, "piece base, flare;", "piece base, fire;"),
            (ASSEMBLY, ".piece flare", ".piece fire"),
        ] {
            let mut c = copy(&x);
            edit(&mut c, edited, from, to);
            // First push: the edit lands.
            let y = build_on(&c, &x).unwrap();
            assert_ne!(y, x, "{edited}");
            let yc = cob::parse(&y, &Limits::default()).unwrap();
            assert!(yc.code.contains(&250) || yc.pieces[1] == "fire", "{edited}");
            // Second push of the same copy onto the new binary: the other source is a
            // rendering of the old binary and loses, its generated files (the old pieces)
            // are no obstacle: nothing changes.
            assert_eq!(build_on(&c, &y).unwrap(), y, "{edited}");
        }
    }

    #[test]
    fn both_sources_edited_apart_fail_naming_both_and_an_unedited_copy_restores() {
        let x = sample();
        let mut c = copy(&x);
        edit(&mut c, SOURCE, "sleep 100;", "sleep 250;");
        edit(&mut c, ASSEMBLY, "PUSH_CONST 100", "PUSH_CONST 300");
        let e = build_on(&c, &x).unwrap_err().to_string();
        assert!(e.contains("script.bos") && e.contains("script.coba"), "{e}");
        // Both edited alike: one script, accepted.
        let mut c = copy(&x);
        edit(&mut c, SOURCE, "sleep 100;", "sleep 250;");
        edit(&mut c, ASSEMBLY, "PUSH_CONST 100", "PUSH_CONST 250");
        let y = build_on(&c, &x).unwrap();
        // An unedited copy of the older binary pushed over the newer one restores it.
        assert_eq!(build_on(&copy(&x), &y).unwrap(), x);
        // Without origin lines (hand-made files) the source's edit is taken when the
        // assembly builds the base.
        let mut c = copy(&x);
        edit(&mut c, SOURCE, "sleep 100;", "sleep 250;");
        edit(&mut c, ASSEMBLY, "; origin: COB", "; was: COB");
        edit(&mut c, SOURCE, "// origin: COB", "// was: COB");
        assert_eq!(build_on(&c, &x).unwrap(), y);
    }
}
