//! BOS, the source language of unit scripts: preprocessor, parser and compiler to COB.
//!
//! `compile(name, source, includes, options, limits)` runs the preprocessor ([`pre`]), the
//! parser ([`parse`]) and the code generator ([`gen`]) and returns the [`Cob`] that
//! [`crate::formats::cob::write`] lays out; [`decompile`] goes back. Everything here works on bytes; finding
//! include files on disk is the caller's [`Includes`].

pub mod ast;
pub mod decompile;
pub mod gen;
pub mod headers;
pub mod lex;
pub mod lint;
pub mod opcode;
pub mod parse;
pub mod pre;

use std::fmt;

use super::cob::{self, Cob};

/// A place in a source file: `file` indexes the file names of the compilation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    pub file: u16,
    pub line: u32,
    pub col: u32,
}

/// A compile error at `file:line:col`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    /// The file the error is in (the script or one of its headers).
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub message: String,
    file_index: u16,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.col, self.message
        )
    }
}

impl Error {
    pub(crate) fn new(pos: Pos, message: String) -> Self {
        Error {
            file: String::new(),
            line: pos.line,
            col: pos.col,
            message,
            file_index: pos.file,
        }
    }

    /// Fills in the file name from the compilation's file table.
    pub(crate) fn named(mut self, files: &[String]) -> Self {
        if self.file.is_empty() {
            self.file = files
                .get(self.file_index as usize)
                .cloned()
                .unwrap_or_default();
        }
        self
    }
}

/// Budgets of one compilation: a hostile source or header is refused, never followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one source or header file.
    pub max_source_bytes: usize,
    /// Tokens of one file.
    pub max_tokens: usize,
    /// Nested `#include`s.
    pub max_include_depth: usize,
    /// Files read by one compilation (the script and every include).
    pub max_files: usize,
    /// Levels of macros expanding macros.
    pub max_macro_depth: usize,
    /// Tokens produced by the preprocessor, macros expanded.
    pub max_expanded_tokens: usize,
    /// Nesting of blocks and expressions.
    pub max_expr_depth: usize,
    /// Words of compiled code.
    pub max_code_words: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_source_bytes: 16 << 20,
            max_tokens: 4 << 20,
            max_include_depth: 16,
            max_files: 256,
            max_macro_depth: 64,
            max_expanded_tokens: 8 << 20,
            max_expr_depth: 100,
            max_code_words: 4 << 20,
        }
    }
}

/// Which game the script is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Total Annihilation: header version 4; a function falls off its end with `return 0`.
    Ta,
    /// TA: Kingdoms: header version 6 with a sound-name table; a function ends with
    /// `CREATE_LOCAL_VAR; RETURN`.
    Tak,
}

/// How `<degrees>` becomes angle units (65536 to the turn); the compilers differ in the last
/// unit, and byte-identical output needs the one a file was compiled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Angle {
    /// degrees × 65536/360, truncated toward zero (Cavedog's compiler).
    Cavedog,
    /// The same product in single precision (TA Mayhem's scripts: `<360>` is 65535).
    Single,
    /// degrees × 182 (Scriptor's builds that TA: Escalation and War Machines were compiled
    /// with).
    Scriptor,
    /// degrees × 182.04444, truncated toward zero: 65536/360 cut to five decimals, so
    /// `<360>` is 65535 and `<11.25>` is 2047 (the build TA Mayhem's ARMCOM was compiled with).
    Decimal,
}

impl Angle {
    /// Angle units of `degrees`, before truncation.
    pub fn units(self, degrees: f64) -> f64 {
        match self {
            Angle::Cavedog => degrees * 65536.0 / 360.0,
            Angle::Single => f64::from((degrees as f32) * (65536.0f32 / 360.0f32)),
            Angle::Scriptor => degrees * 182.0,
            Angle::Decimal => degrees * 182.04444,
        }
    }
}

/// How to compile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub mode: Mode,
    /// How `<..>` constants are scaled.
    pub angle: Angle,
    /// Cavedog's compiler: a function with no parameters and no statements gets
    /// `return 0` (Scriptor gives it no code at all).
    pub cavedog: bool,
    /// `+` and `||` group to the right: `a + b + c` compiles as `a + (b + c)` (every operand
    /// pushed, then the operators), as the Scriptor builds of TA Mayhem's ARMHERC (`+`) and
    /// TA: Escalation's ARMFIELD (`||`) do; `|` groups to the left there, and no shipped
    /// pair has a chain of `-`, `*`, `&&` or a comparison to tell.
    pub right_assoc: bool,
}

impl Options {
    /// TA or TA: Kingdoms, angles as Cavedog's compiler scales them.
    pub fn new(mode: Mode) -> Self {
        Options {
            mode,
            angle: Angle::Cavedog,
            cavedog: false,
            right_assoc: false,
        }
    }
}

/// Finds the headers a script includes.
pub trait Includes {
    /// The name to show in errors and the bytes of header `name` included from the file
    /// shown as `from`, or `None` when there is no such file (the built-in standard headers
    /// are tried next).
    fn find(&self, from: &str, name: &str) -> Option<(String, Vec<u8>)>;
}

/// Resolves no include: only the built-in headers are found.
pub struct NoIncludes;

impl Includes for NoIncludes {
    fn find(&self, _: &str, _: &str) -> Option<(String, Vec<u8>)> {
        None
    }
}

/// Compiles the BOS source `src` (shown as `name` in errors).
pub fn compile(
    name: &str,
    src: &[u8],
    includes: &dyn Includes,
    opts: &Options,
    limits: &Limits,
) -> Result<Cob, Error> {
    let out = pre::preprocess(name, src, includes, limits)?;
    let ast = parse::parse(&out.tokens, limits, opts.angle, opts.right_assoc)
        .map_err(|e| e.named(&out.files))?;
    let p = Pragmas::read(&out.pragmas).map_err(|e| e.named(&out.files))?;
    let mut o = *opts;
    if p.version == Some(cob::VERSION_TAK) {
        o.mode = Mode::Tak;
    }
    let mut c = gen::generate_with(&ast, &o, limits, p.sounds).map_err(|e| e.named(&out.files))?;
    if let Some(v) = p.version {
        c.version = v;
    }
    c.unknown_0x14 = p.unknown_0x14;
    c.trailing = p.trailing;
    Ok(c)
}

/// What `#pragma cob …` lines set: the parts of a COB that BOS has no words for, written
/// by the decompiler so a file compiles back to identical bytes.
///
/// * `#pragma cob version N`: the header version word;
/// * `#pragma cob sound "name"`: the next entry of the sound-name table (version 6);
/// * `#pragma cob header14 N`: the header word at 0x14;
/// * `#pragma cob trailing 0x..`: bytes after the names, as hex digits.
#[derive(Default)]
struct Pragmas {
    version: Option<u32>,
    sounds: Vec<String>,
    unknown_0x14: u32,
    trailing: Vec<u8>,
}

impl Pragmas {
    fn read(lines: &[(Pos, Vec<lex::Token>)]) -> Result<Self, Error> {
        use lex::Kind;
        let mut p = Pragmas::default();
        for (pos, toks) in lines {
            let word = match toks.first().map(|t| &t.kind) {
                Some(Kind::Ident(w)) => w.to_ascii_lowercase(),
                _ => {
                    return Err(Error::new(
                        *pos,
                        "#pragma cob needs version, sound, header14 or trailing".into(),
                    ))
                }
            };
            let arg = toks.get(1).map(|t| &t.kind);
            let num = || match arg {
                Some(Kind::Number(n)) => parse::int_literal(n).and_then(|v| u32::try_from(v).ok()),
                _ => None,
            };
            let bad = |what: &str| Error::new(*pos, format!("#pragma cob {word} needs {what}"));
            match word.as_str() {
                "version" => {
                    p.version = Some(
                        num()
                            .filter(|v| [4, 6, 7].contains(v))
                            .ok_or_else(|| bad("4, 6 or 7"))?,
                    )
                }
                "header14" => p.unknown_0x14 = num().ok_or_else(|| bad("a number"))?,
                "sound" => match arg {
                    Some(Kind::Str(s)) => p.sounds.push(s.clone()),
                    _ => return Err(bad("a name in quotes")),
                },
                "trailing" => {
                    let hex = match arg {
                        Some(Kind::Number(n)) => n
                            .strip_prefix("0x")
                            .ok_or_else(|| bad("0x and hex digits"))?,
                        _ => return Err(bad("0x and hex digits")),
                    };
                    if hex.len() % 2 != 0 || hex.len() > 2 * (1 << 20) {
                        return Err(bad("an even number of hex digits (at most 1 MiB)"));
                    }
                    for k in (0..hex.len()).step_by(2) {
                        let b = hex
                            .get(k..k + 2)
                            .and_then(|d| u8::from_str_radix(d, 16).ok())
                            .ok_or_else(|| bad("hex digits"))?;
                        p.trailing.push(b);
                    }
                }
                _ => return Err(Error::new(*pos, format!("unknown #pragma cob {word}"))),
            }
        }
        Ok(p)
    }
}

/// The mode a source asks for: `#define TAK` at the start of a line selects TA: Kingdoms
/// (the mark Scriptor writes at the top of a TAK script).
pub fn mode_of(src: &[u8]) -> Mode {
    let text = lex::latin1(src);
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if w.next() == Some("#define") && w.next() == Some("TAK") {
            return Mode::Tak;
        }
    }
    Mode::Ta
}
