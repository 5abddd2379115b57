//! BOS, the source language of unit scripts: preprocessor, parser and compiler to COB.
//!
//! `compile(name, source, includes, mode, limits)` runs the preprocessor ([`pre`]), the
//! parser ([`parse`]) and the code generator ([`gen`]) and returns a [`Program`], which
//! [`Program::to_cob`] lays out as a COB file. Everything here works on bytes; finding
//! include files on disk is the caller's [`Includes`].

pub mod ast;
pub mod gen;
pub mod headers;
pub mod lex;
pub mod opcode;
pub mod parse;
pub mod pre;

use std::fmt;

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
            max_expr_depth: 200,
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

/// Angle units of `<1>`: Scriptor's 182 per degree.
pub const ANGLE_SCRIPTOR: f64 = 182.0;
/// Angle units of `<1>`: 65535/360 per degree, as Cavedog's compiler and some Scriptor
/// builds (TA Mayhem's scripts) have it.
pub const ANGLE_EXACT: f64 = 65535.0 / 360.0;

/// How to compile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub mode: Mode,
    /// Units of one degree in `<..>` constants ([`ANGLE_SCRIPTOR`] or [`ANGLE_EXACT`]).
    pub angle: f64,
}

impl Options {
    /// TA or TA: Kingdoms with the angle unit most shipped scripts were compiled with.
    pub fn new(mode: Mode) -> Self {
        Options {
            mode,
            angle: ANGLE_EXACT,
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

/// A compiled script: the contents of a COB file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// COB header version: 4 (TA) or 6 (TA: Kingdoms layout).
    pub version: u32,
    pub pieces: Vec<String>,
    /// Number of static variables.
    pub statics: u32,
    /// Script names and the word where each starts in `code`.
    pub scripts: Vec<(String, u32)>,
    pub code: Vec<u32>,
    /// Sound names (version 6 only).
    pub sounds: Vec<String>,
}

/// Compiles the BOS source `src` (shown as `name` in errors).
pub fn compile(
    name: &str,
    src: &[u8],
    includes: &dyn Includes,
    opts: &Options,
    limits: &Limits,
) -> Result<Program, Error> {
    let out = pre::preprocess(name, src, includes, limits)?;
    let ast = parse::parse(&out.tokens, limits, opts.angle).map_err(|e| e.named(&out.files))?;
    gen::generate(&ast, opts.mode, limits).map_err(|e| e.named(&out.files))
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

impl Program {
    /// Lays the program out as a COB file: header, code, script index, name offsets,
    /// piece name offsets, (sound name offsets,) then the names.
    pub fn to_cob(&self) -> Vec<u8> {
        let header = if self.version == 6 { 52u32 } else { 44 };
        let ns = self.scripts.len() as u32;
        let np = self.pieces.len() as u32;
        let code_at = header;
        let idx_at = code_at + 4 * self.code.len() as u32;
        let names_at = idx_at + 4 * ns;
        let pieces_at = names_at + 4 * ns;
        let sounds_at = pieces_at + 4 * np;
        let pool_at = if self.version == 6 {
            sounds_at + 4 * self.sounds.len() as u32
        } else {
            sounds_at
        };
        let mut out = Vec::new();
        let put = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_le_bytes());
        for v in [
            self.version,
            ns,
            np,
            self.code.len() as u32,
            self.statics,
            0,
            idx_at,
            names_at,
            pieces_at,
            code_at,
            pool_at,
        ] {
            put(&mut out, v);
        }
        if self.version == 6 {
            put(&mut out, sounds_at);
            put(&mut out, self.sounds.len() as u32);
        }
        for &w in &self.code {
            put(&mut out, w);
        }
        for (_, start) in &self.scripts {
            put(&mut out, *start);
        }
        let mut at = pool_at;
        let mut pool = Vec::new();
        let all: Vec<&str> = self
            .scripts
            .iter()
            .map(|(n, _)| n.as_str())
            .chain(self.pieces.iter().map(String::as_str))
            .chain(if self.version == 6 {
                self.sounds.iter().map(String::as_str).collect::<Vec<_>>()
            } else {
                Vec::new()
            })
            .collect();
        for n in all {
            put(&mut out, at);
            let bytes: Vec<u8> = n.chars().map(|c| c as u32 as u8).collect();
            at += bytes.len() as u32 + 1;
            pool.extend_from_slice(&bytes);
            pool.push(0);
        }
        out.extend_from_slice(&pool);
        out
    }
}
