//! The raw header, as stored.

/// Bytes of the TA (version 4 and 7) header: 11 words.
pub const HEADER_V4_LEN: usize = 44;
/// Bytes of the TA: Kingdoms (version 6) header: 13 words.
pub const HEADER_V6_LEN: usize = 52;

/// The header words at their offsets (all little-endian `u32`, offsets absolute).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// `0x00` version: 4 (TA), 6 (TA: Kingdoms), 7 (a TA-layout variant).
    pub version: u32,
    /// `0x04` number of scripts.
    pub num_scripts: u32,
    /// `0x08` number of pieces.
    pub num_pieces: u32,
    /// `0x0C` length of the code area in words.
    pub code_words: u32,
    /// `0x10` number of static variables.
    pub static_vars: u32,
    /// `0x14` unknown, zero in every known file.
    pub unknown_0x14: u32,
    /// `0x18` offset of the script start table (word indices into the code).
    pub script_starts_at: u32,
    /// `0x1C` offset of the script-name offset table.
    pub script_names_at: u32,
    /// `0x20` offset of the piece-name offset table.
    pub piece_names_at: u32,
    /// `0x24` offset of the code area.
    pub code_at: u32,
    /// `0x28` offset of the name pool (after every offset table).
    pub names_at: u32,
    /// `0x2C` (version 6 only) offset of the sound-name offset table.
    pub sound_names_at: u32,
    /// `0x30` (version 6 only) number of sound names.
    pub num_sounds: u32,
}

impl Header {
    /// Length of this header layout in bytes.
    pub fn byte_len(&self) -> usize {
        if self.version == super::VERSION_TAK {
            HEADER_V6_LEN
        } else {
            HEADER_V4_LEN
        }
    }

    /// The words in file order (11 or 13).
    pub fn words(&self) -> Vec<u32> {
        let mut w = vec![
            self.version,
            self.num_scripts,
            self.num_pieces,
            self.code_words,
            self.static_vars,
            self.unknown_0x14,
            self.script_starts_at,
            self.script_names_at,
            self.piece_names_at,
            self.code_at,
            self.names_at,
        ];
        if self.version == super::VERSION_TAK {
            w.push(self.sound_names_at);
            w.push(self.num_sounds);
        }
        w
    }

    /// Builds a header from its words (11 or 13 of them, as [`Header::words`] gives).
    pub fn from_words(w: &[u32]) -> Header {
        let g = |i: usize| w.get(i).copied().unwrap_or(0);
        Header {
            version: g(0),
            num_scripts: g(1),
            num_pieces: g(2),
            code_words: g(3),
            static_vars: g(4),
            unknown_0x14: g(5),
            script_starts_at: g(6),
            script_names_at: g(7),
            piece_names_at: g(8),
            code_at: g(9),
            names_at: g(10),
            sound_names_at: g(11),
            num_sounds: g(12),
        }
    }
}

/// Names of the header fields by word index, for errors.
pub const FIELD_NAMES: [&str; 13] = [
    "header version",
    "header script count",
    "header piece count",
    "header code length",
    "header static count",
    "header word 0x14",
    "header script start table offset",
    "header script name table offset",
    "header piece name table offset",
    "header code offset",
    "header name pool offset",
    "header sound name table offset",
    "header sound count",
];
