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

/// BOS source of `cob`, for `script.bos`: [`crate::formats::bos::decompile`], which
/// compiles back to the identical binary.
pub fn decompile(cob: &Cob) -> Option<String> {
    Some(crate::formats::bos::decompile::decompile(cob).source)
}

/// Compiles an edited `script.bos` (`base` is the current binary): `None` when no compiler is
/// plugged in (then `script.bos` is never listed, so never edited). The BOS side of the
/// project fills this in; its errors are [`ViewError::Source`] naming [`SOURCE`].
pub fn compile(source: &[u8], base: Option<&Cob>) -> Option<Result<Cob, ViewError>> {
    use crate::formats::bos;
    let _ = base;
    let opts = bos::Options::new(bos::mode_of(source));
    let r = bos::compile(
        SOURCE,
        source,
        &bos::NoIncludes,
        &opts,
        &bos::Limits::default(),
    );
    Some(r.map_err(|e| ViewError::Source {
        file: SOURCE.into(),
        line: e.line as usize,
        col: e.col as usize,
        // An error inside an included header names that header.
        msg: if e.file == SOURCE {
            e.message
        } else {
            format!("{}: {}", e.file, e.message)
        },
    }))
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

/// Every file of the view of `c`, rendered.
fn files_of(c: &Cob) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::with_capacity(5);
    if let Some(bos) = decompile(c) {
        files.push((SOURCE.to_string(), bos.into_bytes()));
    }
    files.push((ASSEMBLY.to_string(), asm::disassemble(c).into_bytes()));
    files.push((PIECES.to_string(), pieces_csv(c).into_bytes()));
    files.push((SCRIPTS.to_string(), scripts_csv(c).into_bytes()));
    files.push((METADATA.to_string(), metadata_json(c)));
    files
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
    Ok(FileListView::new(files_of(&c)))
}

/// Rebuilds the COB from `files` (`base`: the current binary, if any).
pub fn build(
    files: &dyn FileSet,
    base: Option<&[u8]>,
    limits: &Limits,
) -> Result<Vec<u8>, ViewError> {
    let base_cob = base.and_then(|b| cob::parse(b, limits).ok());
    let text = files.read(ASSEMBLY)?.ok_or_else(|| ViewError::Missing {
        file: ASSEMBLY.into(),
        why: "the assembly the COB is built from".into(),
    })?;
    if text.len() > limits.max_file_len.saturating_mul(16) {
        return Err(ViewError::invalid(ASSEMBLY, "too large for a script"));
    }
    let text = String::from_utf8(text)
        .map_err(|e| ViewError::invalid(ASSEMBLY, format!("not UTF-8 text: {e}")))?;
    let mut c = asm::assemble(&text).map_err(|e| ViewError::Source {
        file: ASSEMBLY.into(),
        line: e.line,
        col: e.col,
        msg: e.message,
    })?;
    // An edited source (when a compiler is plugged in) wins over an unedited assembly.
    if !files.unedited(SOURCE) {
        if let Some(src) = files.read(SOURCE)? {
            let from_base = base_cob.as_ref().and_then(decompile);
            if from_base.as_deref().map(str::as_bytes) != Some(src.as_slice()) {
                if let Some(r) = compile(&src, base_cob.as_ref()) {
                    let compiled = r?;
                    let asm_edited = base_cob.as_ref().map_or(true, |b| *b != c);
                    if asm_edited && compiled != c {
                        return Err(ViewError::invalid(
                            SOURCE,
                            "both script.bos and script.coba were edited, into different \
                             scripts: keep one edit",
                        ));
                    }
                    c = compiled;
                }
            }
        }
    }
    let bytes = cob::write(&c)?;
    // Generated files: accepted only as the new binary (or the base) shows them.
    let rendered = files_of(&c);
    let base_rendered = base_cob.as_ref().map(files_of);
    for name in GENERATED {
        if files.unedited(name) {
            continue;
        }
        let Some(got) = files.read(name)? else {
            continue;
        };
        let same = |set: &[(String, Vec<u8>)]| {
            set.iter()
                .any(|(n, b)| n == name && b.as_slice() == got.as_slice())
        };
        if !same(&rendered) && !base_rendered.as_deref().is_some_and(same) {
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

/// The view, boxed.
pub fn open_view(data: &[u8], limits: &Limits) -> Result<Box<dyn View>, ViewError> {
    Ok(Box::new(open(data, limits)?))
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let c = cob::parse(data, &Limits::default()).unwrap();
        let mut expected = vec![ASSEMBLY, PIECES, SCRIPTS, METADATA];
        if decompile(&c).is_some() {
            expected.insert(0, SOURCE);
        }
        assert_eq!(names, expected);
        MemFileSet::from_view(&v).unwrap()
    }

    #[test]
    fn an_unedited_folder_rebuilds_identical_bytes() {
        let b = sample();
        let s = set(&b);
        assert_eq!(build(&s, Some(&b), &Limits::default()).unwrap(), b);
        assert_eq!(build(&s, None, &Limits::default()).unwrap(), b);
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
        let out = build(&s, Some(&b), &Limits::default()).unwrap();
        let c = cob::parse(&out, &Limits::default()).unwrap();
        assert_eq!(c.pieces, ["base", "fire"]);
        // pieces.csv matching the new binary is accepted too (a copied folder).
        s.files
            .insert(PIECES.into(), b"index,name\n0,base\n1,fire\n".to_vec());
        assert_eq!(build(&s, Some(&b), &Limits::default()).unwrap(), out);
    }

    #[test]
    fn edited_generated_files_and_bad_assembly_fail_with_their_names() {
        let b = sample();
        for name in GENERATED {
            let mut s = set(&b);
            s.files.get_mut(name).unwrap().extend_from_slice(b"x\n");
            let e = build(&s, Some(&b), &Limits::default()).unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("{name}: generated")),
                "{e}"
            );
        }
        let mut s = set(&b);
        s.files
            .insert(ASSEMBLY.into(), b".version 4\n  NOPE\n".to_vec());
        let e = build(&s, Some(&b), &Limits::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "script.coba:2:3: unknown instruction \"NOPE\""
        );
        s.files.remove(ASSEMBLY);
        assert!(matches!(
            build(&s, Some(&b), &Limits::default()),
            Err(ViewError::Missing { .. })
        ));
    }
}
