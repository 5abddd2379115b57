//! Tokens of BOS source and of the preprocessor directives written in it.
//!
//! Comments are dropped; a backslash before a line end joins the two lines into one logical
//! line (only directives care about lines); every token keeps the file, line and column it
//! came from so errors can point at it.

use super::{Error, Limits, Pos};

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A name or keyword; BOS keywords may contain `-` (`set-signal-mask`, `x-axis`).
    Ident(String),
    /// A number as written (`12`, `5.60`, `0x1F`).
    Number(String),
    /// A double-quoted string, without its quotes.
    Str(String),
    /// An operator or punctuation mark (`(`, `==`, `&&`, `#`).
    Punct(&'static str),
}

/// One token and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: Kind,
    pub pos: Pos,
    /// Counts logical lines of the file (lines joined by `\` share one).
    pub line_id: u32,
    /// First token of its logical line.
    pub bol: bool,
}

const PUNCTS: [&str; 37] = [
    "&&", "||", "^^", "==", "!=", "<=", ">=", "++", "--", "+=", "-=", "*=", "/=", "##", "(", ")",
    "{", "}", "[", "]", "<", ">", ",", ";", "=", "+", "-", "*", "/", "%", "&", "|", "^", "!", "~",
    "#", "@",
];

/// Splits `src` (file number `file`) into tokens.
pub fn lex(src: &[u8], file: u16, limits: &Limits) -> Result<Vec<Token>, Error> {
    if src.len() > limits.max_source_bytes {
        return Err(Error::new(
            Pos {
                file,
                line: 1,
                col: 1,
            },
            format!(
                "file is {} bytes, over the {} byte limit",
                src.len(),
                limits.max_source_bytes
            ),
        ));
    }
    let mut out = Vec::new();
    let mut i = 0usize;
    let mut line = 1u32;
    let mut col = 1u32;
    let mut line_id = 0u32;
    let mut bol = true;
    let at = |k: usize| src.get(k).copied().unwrap_or(0);
    while i < src.len() {
        let c = at(i);
        let pos = Pos { file, line, col };
        match c {
            b'\n' => {
                i += 1;
                line += 1;
                col = 1;
                line_id += 1;
                bol = true;
            }
            b'\\' if at(i + 1) == b'\n' || (at(i + 1) == b'\r' && at(i + 2) == b'\n') => {
                i += if at(i + 1) == b'\r' { 3 } else { 2 };
                line += 1;
                col = 1;
            }
            b' ' | b'\t' | b'\r' | 0x0c | 0x0b | 0x1a | 0 => {
                i += 1;
                col += 1;
            }
            b'/' if at(i + 1) == b'/' => {
                while i < src.len() && at(i) != b'\n' {
                    // A backslash at the end of a `//` comment continues it, as in C.
                    if at(i) == b'\\'
                        && (at(i + 1) == b'\n' || (at(i + 1) == b'\r' && at(i + 2) == b'\n'))
                    {
                        i += if at(i + 1) == b'\r' { 3 } else { 2 };
                        line += 1;
                        col = 1;
                        continue;
                    }
                    i += 1;
                    col += 1;
                }
            }
            b'/' if at(i + 1) == b'*' => {
                i += 2;
                col += 2;
                loop {
                    if i >= src.len() {
                        return Err(Error::new(
                            pos,
                            "comment opened with /* is never closed".into(),
                        ));
                    }
                    if at(i) == b'*' && at(i + 1) == b'/' {
                        i += 2;
                        col += 2;
                        break;
                    }
                    if at(i) == b'\n' {
                        line += 1;
                        col = 1;
                    } else {
                        col += 1;
                    }
                    i += 1;
                }
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < src.len() && at(j) != b'"' && at(j) != b'\n' {
                    j += 1;
                }
                if at(j) != b'"' {
                    return Err(Error::new(pos, "string is not closed on its line".into()));
                }
                let text = latin1(&src[start..j]);
                col += (j + 1 - i) as u32;
                i = j + 1;
                push(&mut out, Kind::Str(text), pos, line_id, &mut bol, limits)?;
            }
            b'0'..=b'9' | b'.' if c != b'.' || at(i + 1).is_ascii_digit() => {
                let start = i;
                while i < src.len()
                    && (at(i).is_ascii_alphanumeric() || at(i) == b'.' || at(i) == b'_')
                {
                    i += 1;
                }
                col += (i - start) as u32;
                push(
                    &mut out,
                    Kind::Number(latin1(&src[start..i])),
                    pos,
                    line_id,
                    &mut bol,
                    limits,
                )?;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                // As in Scriptor, a dash between name characters belongs to the name: keywords
                // (`set-signal-mask`) and names (`u1-2`) alike; `a - b` is a subtraction.
                let name_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
                while i < src.len() && (name_char(at(i)) || (at(i) == b'-' && name_char(at(i + 1))))
                {
                    i += 1;
                }
                col += (i - start) as u32;
                push(
                    &mut out,
                    Kind::Ident(latin1(&src[start..i])),
                    pos,
                    line_id,
                    &mut bol,
                    limits,
                )?;
            }
            _ => {
                let rest = &src[i..];
                let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(p.as_bytes())) else {
                    return Err(Error::new(
                        pos,
                        format!("unexpected character {:?}", c as char),
                    ));
                };
                i += p.len();
                col += p.len() as u32;
                push(&mut out, Kind::Punct(p), pos, line_id, &mut bol, limits)?;
            }
        }
    }
    Ok(out)
}

fn push(
    out: &mut Vec<Token>,
    kind: Kind,
    pos: Pos,
    line_id: u32,
    bol: &mut bool,
    limits: &Limits,
) -> Result<(), Error> {
    if out.len() >= limits.max_tokens {
        return Err(Error::new(
            pos,
            format!("more than {} tokens in one file", limits.max_tokens),
        ));
    }
    out.push(Token {
        kind,
        pos,
        line_id,
        bol: *bol,
    });
    *bol = false;
    Ok(())
}

/// Source files are 8-bit Windows text; every byte maps to one char.
pub fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| c as char).collect()
}
