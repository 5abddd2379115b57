//! COB unit scripts of Total Annihilation and TA: Kingdoms: reader ([`parse`]), writer
//! ([`write()`]), the opcode table ([`opcodes`]) and an instruction decoder.
//!
//! A COB is a header of little-endian words, the code area (one `u32` word per opcode or
//! operand), the script start table (word indices into the code area), the script-name and
//! piece-name offset tables, in TA: Kingdoms layout a sound-name offset table, and a pool of
//! NUL-terminated names at absolute offsets. Three header layouts are read:
//!
//! * version 4 (TA): 11 words, 44 bytes;
//! * version 6 (TA: Kingdoms, and TAK-layout scripts in TA mods): 13 words, 52 bytes, the
//!   last two giving the sound-name table's offset and count;
//! * version 7 (seen in one War Machines file): the version 4 layout.
//!
//! Lossless: a parsed file keeps its version word, the header word at `0x14` (zero in every
//! known file), the whole code area as words (so text a tool wrote inside it, such as the
//! COBBLER 4.0 signature, stays a run of words), scripts sharing a start offset (how Scriptor
//! compiles an empty function), names as Latin-1 text (each byte one `char`) and every byte
//! after the last name ([`Cob::trailing`], e.g. the COBBLER 3.0 signature). [`write()`] of an
//! unedited [`Cob`] gives back the input byte for byte.
//!
//! Every known compiler writes the sections in one order with no gaps (header, code, start
//! table, script-name table, piece-name table, sound-name table, names in table order); a file
//! laid out otherwise is refused with [`CobError::Layout`] naming the structure and offset
//! rather than read and written back differently.
//!
//! For a compiler: build a [`Cob`] with [`Cob::new`], append each script's code with
//! [`Cob::push_script`] (jump operands are word indices into the whole code area, so generate
//! each script knowing its base, [`Cob::code_len_words`]), then [`write()`]. For a decompiler:
//! [`Cob::script_code`] gives each script's words and [`decode`] walks them with the
//! [`opcodes::OPCODES`] table (mnemonic, value, operands, stack effect).

pub mod asm;
mod layout;
pub mod opcodes;
mod read;
mod write;

#[cfg(test)]
mod tests;

pub use layout::{Header, HEADER_V4_LEN, HEADER_V6_LEN};
pub use opcodes::{decode, Instr, OpInfo, Operand, OPCODES};
pub use read::parse;
pub use write::write;

use super::bytes::OutOfBounds;

/// Version word of TA scripts.
pub const VERSION_TA: u32 = 4;
/// Version word of TA: Kingdoms scripts (52-byte header with a sound-name table).
pub const VERSION_TAK: u32 = 6;
/// Version word of a rare TA-layout variant (44-byte header, read and written like 4).
pub const VERSION_7: u32 = 7;

/// Budgets applied while reading an untrusted COB. The defaults are far above the largest
/// known file (TA: Kingdoms' biggest scripts are ~140 KB, 100 pieces, 40 scripts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of the whole file.
    pub max_file_len: usize,
    /// Entries of the script, piece and sound tables together.
    pub max_names: usize,
    /// Bytes of one name (without its NUL).
    pub max_name_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_len: 64 << 20,
            max_names: 65_536,
            max_name_len: 4096,
        }
    }
}

/// Why a COB could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CobError {
    /// A structure passes the end of the file.
    #[error("cob: {structure}: {source}")]
    OutOfBounds {
        /// The structure being read.
        structure: String,
        /// Where and how far.
        source: OutOfBounds,
    },
    /// Not a known version word.
    #[error(
        "cob: header at offset 0: unknown version {0} (TA scripts are 4, TA: Kingdoms 6, a rare \
         variant 7); not a COB?"
    )]
    UnknownVersion(u32),
    /// A section is not where every known compiler puts it.
    #[error(
        "cob: {structure} at offset {offset:#x}: expected {expected:#x}, found {found:#x} (a \
         layout no known compiler writes; refused rather than rewritten differently)"
    )]
    Layout {
        /// The structure (header field or table entry).
        structure: String,
        /// Offset of the field holding the value.
        offset: u64,
        /// The value the canonical layout gives.
        expected: u64,
        /// The value in the file.
        found: u64,
    },
    /// A value out of range (a script start past the code, a name without its NUL…).
    #[error("cob: {structure} at offset {offset:#x}: {message}")]
    Malformed {
        /// The structure.
        structure: String,
        /// Its offset.
        offset: u64,
        /// What is wrong.
        message: String,
    },
    /// A count or size over the [`Limits`].
    #[error("cob: {structure} at offset {offset:#x} is {value}, over the limit of {limit}")]
    OverLimit {
        /// The structure (names the header field).
        structure: String,
        /// Its offset.
        offset: u64,
        /// The value found.
        value: u64,
        /// The largest accepted value.
        limit: u64,
    },
    /// The model cannot be written (a name with a NUL or a character above U+00FF, sizes
    /// past 4 GiB, a script start past the code).
    #[error("cob: cannot write: {0}")]
    Refused(String),
}

/// One entry of the script table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Script {
    /// The script's name (`Create`, `AimPrimary`…), Latin-1 decoded.
    pub name: String,
    /// Word index of its first instruction in [`Cob::code`]. Several scripts may share one
    /// (Scriptor gives an empty function no code: it starts where the next script does).
    pub start: u32,
}

/// A COB file: the editable model, plus what keeps it byte-exact.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cob {
    /// Header version word: [`VERSION_TA`], [`VERSION_TAK`] or [`VERSION_7`]. Version 6 has
    /// the sound-name table; 4 and 7 do not.
    pub version: u32,
    /// Number of static variables (`static-var` declarations).
    pub static_vars: u32,
    /// The header word at offset `0x14`, zero in every known file; kept as found.
    pub unknown_0x14: u32,
    /// The code area, one word per opcode or operand. Jump operands are word indices into it.
    pub code: Vec<u32>,
    /// Scripts in table order (the order `start-script`/`call-script` operands index).
    pub scripts: Vec<Script>,
    /// Piece names in table order (piece operands index them).
    pub pieces: Vec<String>,
    /// Sound-name table of version 6 (MISSION_COMMAND operands index it); empty otherwise.
    pub sounds: Vec<String>,
    /// Bytes after the last name (a tool's signature), kept as found.
    pub trailing: Vec<u8>,
}

impl Cob {
    /// An empty script file of `version` (4 or 7 for the TA layout, 6 for TA: Kingdoms).
    pub fn new(version: u32, pieces: Vec<String>, static_vars: u32) -> Cob {
        Cob {
            version,
            static_vars,
            unknown_0x14: 0,
            code: Vec::new(),
            scripts: Vec::new(),
            pieces,
            sounds: Vec::new(),
            trailing: Vec::new(),
        }
    }

    /// True for the TA: Kingdoms layout (version 6, with a sound-name table).
    pub fn has_sound_table(&self) -> bool {
        self.version == VERSION_TAK
    }

    /// Length of the code area in words: the start of a script appended now.
    pub fn code_len_words(&self) -> u32 {
        u32::try_from(self.code.len()).unwrap_or(u32::MAX)
    }

    /// Appends a script whose code is `words` (empty: it shares its start with the next
    /// script, as Scriptor compiles an empty function) and returns its start word index.
    pub fn push_script(&mut self, name: impl Into<String>, words: &[u32]) -> u32 {
        let start = self.code_len_words();
        self.code.extend_from_slice(words);
        self.scripts.push(Script {
            name: name.into(),
            start,
        });
        start
    }

    /// Word range `[start, end)` of script `i` in [`Cob::code`]: from its start to the next
    /// larger start of any script (or the end of the code). `None` past the table or for a
    /// start past the code.
    pub fn script_range(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let start = self.scripts.get(i)?.start;
        let len = self.code.len();
        let s = usize::try_from(start).ok().filter(|&s| s <= len)?;
        let end = self
            .scripts
            .iter()
            .filter_map(|x| usize::try_from(x.start).ok())
            .filter(|&x| x > s && x <= len)
            .min()
            .unwrap_or(len);
        Some(s..end)
    }

    /// The script after `i` in table order that starts where `i` does, if any: then `i` has
    /// no code of its own (Scriptor's empty function) and running it runs that one's.
    pub fn shares_start_with(&self, i: usize) -> Option<usize> {
        let start = self.scripts.get(i)?.start;
        self.scripts
            .iter()
            .enumerate()
            .skip(i + 1)
            .find(|(_, s)| s.start == start)
            .map(|(j, _)| j)
    }

    /// The words of script `i` (see [`Cob::script_range`]).
    pub fn script_code(&self, i: usize) -> Option<&[u32]> {
        self.script_range(i).and_then(|r| self.code.get(r))
    }

    /// Index of the script called `name` (exact match first, then ignoring ASCII case as the
    /// game does).
    pub fn script_index(&self, name: &str) -> Option<usize> {
        self.scripts
            .iter()
            .position(|s| s.name == name)
            .or_else(|| {
                self.scripts
                    .iter()
                    .position(|s| s.name.eq_ignore_ascii_case(name))
            })
    }

    /// Index of the piece called `name` (exact, then ignoring ASCII case).
    pub fn piece_index(&self, name: &str) -> Option<usize> {
        self.pieces.iter().position(|p| p == name).or_else(|| {
            self.pieces
                .iter()
                .position(|p| p.eq_ignore_ascii_case(name))
        })
    }
}

/// Decodes a name from the pool: each byte one `char` (Latin-1), so any byte string survives.
pub fn latin1_decode(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

/// Encodes a name for the pool; `None` for a NUL or a character above U+00FF.
pub fn latin1_encode(s: &str) -> Option<Vec<u8>> {
    s.chars()
        .map(|c| u8::try_from(u32::from(c)).ok().filter(|&b| b != 0))
        .collect()
}
