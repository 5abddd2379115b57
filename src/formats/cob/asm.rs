//! The assembly text of a COB: one instruction per line, labels for jumps, pieces, scripts
//! and statics by name where they have one, kbot's `.coba` directives (`.version`,
//! `.statics`, `.piece`, `.sound_name`, `.script`). [`disassemble`] then [`assemble`] gives
//! back the same [`Cob`], so the same bytes, for every file [`super::parse`] reads.
//!
//! ```text
//! .version 4
//! .statics 1
//! .piece base
//! .script Create
//!     STACK_ALLOC
//! L0004:
//!     PUSH_CONST 100
//!     SLEEP
//!     JUMP L0004
//! .script Killed
//! ```
//!
//! What the text needs beyond instructions, for odd files: `.script` lines with nothing
//! between them (scripts sharing a start), `.entry NAME LABEL` (a script table not in code
//! order), `.word 0x…` (a word that is no instruction, such as a tool's signature inside the
//! code area), `.trailing "…"` (bytes after the names), `.header_0x14 N` (the header word that
//! is zero in known files). A jump operand is a label or a word index into the code area.

use super::opcodes::{self, Operand};
use super::{Cob, Script, VERSION_TAK};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// Where and why assembly text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {message}")]
pub struct AsmError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub col: usize,
    /// What is wrong, in words a modder reads.
    pub message: String,
}

fn is_simple(name: &str) -> bool {
    let mut c = name.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// A name as the text shows it: bare when it is an identifier, else quoted.
fn show_name(name: &str) -> String {
    if is_simple(name) {
        name.to_string()
    } else {
        quote(name.chars().map(|c| u32::from(c) as u8))
    }
}

fn quote(bytes: impl Iterator<Item = u8>) -> String {
    let mut s = String::from("\"");
    for b in bytes {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(char::from(b)),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('"');
    s
}

fn label(word: usize) -> String {
    format!("L{:04x}", word * 4)
}

/// The assembly text of `cob`.
pub fn disassemble(cob: &Cob) -> String {
    let mut out = String::new();
    let _ = writeln!(out, ".version {}", cob.version);
    let _ = writeln!(out, ".statics {}", cob.static_vars);
    if cob.unknown_0x14 != 0 {
        let _ = writeln!(out, ".header_0x14 {}", cob.unknown_0x14);
    }
    for p in &cob.pieces {
        let _ = writeln!(out, ".piece {}", show_name(p));
    }
    for s in &cob.sounds {
        let _ = writeln!(
            out,
            ".sound_name {}",
            quote(s.chars().map(|c| u32::from(c) as u8))
        );
    }
    let len = cob.code.len();
    let script_names: Vec<String> = cob.scripts.iter().map(|s| s.name.clone()).collect();
    // Scripts in code order: the table can be written as `.script` markers in the body.
    let in_order = cob.scripts.windows(2).all(|w| w[0].start <= w[1].start);
    let mut at_word: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, s) in cob.scripts.iter().enumerate() {
        at_word.entry(s.start as usize).or_default().push(i);
    }
    // Decode the code area; an instruction never straddles a script start.
    let mut items: Vec<(usize, Option<opcodes::Instr>)> = Vec::new();
    let mut p = 0;
    while p < len {
        let next_boundary = at_word.range(p + 1..).next().map_or(len, |(&k, _)| k);
        match opcodes::decode(&cob.code, p).filter(|i| p + i.len() <= next_boundary) {
            Some(i) => {
                items.push((p, Some(i)));
                p += i.len();
            }
            None => {
                items.push((p, None));
                p += 1;
            }
        }
    }
    let starts: std::collections::HashSet<usize> = items
        .iter()
        .map(|&(p, _)| p)
        .chain(std::iter::once(len))
        .collect();
    let mut labels = std::collections::BTreeSet::new();
    for (_, i) in &items {
        if let Some(i) = i {
            if i.op.operands.first() == Some(&Operand::Jump)
                && starts.contains(&(i.args[0] as usize))
            {
                labels.insert(i.args[0] as usize);
            }
        }
    }
    if !in_order {
        for s in &cob.scripts {
            labels.insert(s.start as usize);
            let _ = writeln!(
                out,
                ".entry {} {}",
                show_name(&s.name),
                label(s.start as usize)
            );
        }
    }
    let emit_marks = |out: &mut String, p: usize| {
        if labels.contains(&p) {
            let _ = writeln!(out, "{}:", label(p));
        }
    };
    let scripts_at = |out: &mut String, p: usize| {
        if in_order {
            for &s in at_word.get(&p).map(Vec::as_slice).unwrap_or_default() {
                let _ = writeln!(out, ".script {}", show_name(&cob.scripts[s].name));
            }
        }
    };
    for (p, i) in &items {
        scripts_at(&mut out, *p);
        emit_marks(&mut out, *p);
        match i {
            Some(i) => {
                let _ = write!(out, "    {}", i.op.mnemonic);
                let mut comment = None;
                for (k, (kind, &v)) in i.op.operands.iter().zip(i.operands()).enumerate() {
                    out.push_str(if k == 0 { " " } else { ", " });
                    out.push_str(&operand_text(cob, *kind, v, &labels, &script_names));
                    if *kind == Operand::Sound {
                        if let Some(s) = cob.sounds.get(v as usize) {
                            comment = Some(quote(s.chars().map(|c| u32::from(c) as u8)));
                        }
                    }
                }
                if let Some(c) = comment {
                    let _ = write!(out, "  ; {c}");
                }
                out.push('\n');
            }
            None => {
                let w = cob.code[*p];
                let _ = writeln!(
                    out,
                    "    .word 0x{w:08x}  ; {}",
                    quote(w.to_le_bytes().into_iter())
                );
            }
        }
    }
    scripts_at(&mut out, len);
    emit_marks(&mut out, len);
    for chunk in cob.trailing.chunks(32) {
        let _ = writeln!(out, ".trailing {}", quote(chunk.iter().copied()));
    }
    out
}

fn operand_text(
    cob: &Cob,
    kind: Operand,
    v: u32,
    labels: &std::collections::BTreeSet<usize>,
    script_names: &[String],
) -> String {
    let named = |names: &[String]| {
        names
            .get(v as usize)
            .filter(|n| names.iter().position(|x| x == *n) == Some(v as usize))
            .map(|n| show_name(n))
    };
    match kind {
        Operand::Piece => named(&cob.pieces).unwrap_or_else(|| v.to_string()),
        Operand::Script => script_names.get(v as usize).map_or_else(
            || v.to_string(),
            |n| {
                if cob.script_index(n) == Some(v as usize) {
                    show_name(n)
                } else {
                    v.to_string()
                }
            },
        ),
        Operand::Axis => match v {
            0 => "x-axis".into(),
            1 => "y-axis".into(),
            2 => "z-axis".into(),
            _ => v.to_string(),
        },
        Operand::Const => (v as i32).to_string(),
        Operand::Jump if labels.contains(&(v as usize)) => label(v as usize),
        _ => v.to_string(),
    }
}

/// One operand token as written, with its column.
#[derive(Debug, Clone)]
struct Tok {
    text: String,
    col: usize,
}

enum Item {
    Instr {
        op: &'static opcodes::OpInfo,
        args: Vec<Tok>,
        line: usize,
    },
    Word(u32),
}

/// Assembles the text of [`disassemble`] (or written by hand) into a [`Cob`].
pub fn assemble(text: &str) -> Result<Cob, AsmError> {
    let mut version = None;
    let mut statics = 0u32;
    let mut unknown = 0u32;
    let mut pieces = Vec::new();
    let mut sounds = Vec::new();
    let mut trailing = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    let mut words = 0usize;
    let mut labels: HashMap<String, usize> = HashMap::new();
    // Table entries in order: (name, Ok(word) for `.script`, Err(label) for `.entry`).
    let mut entries: Vec<(String, Result<usize, Tok>, usize)> = Vec::new();
    for (ln, raw) in text.lines().enumerate() {
        let line = ln + 1;
        let err = |col: usize, m: String| AsmError {
            line,
            col,
            message: m,
        };
        let toks = tokenize(raw).map_err(|(c, m)| err(c, m))?;
        let mut toks = toks.as_slice();
        // `NAME:` label definitions.
        while let Some(t) = toks.first() {
            if let Some(name) = t.text.strip_suffix(':') {
                if name.is_empty() || name.starts_with('"') {
                    return Err(err(t.col, format!("bad label {:?}", t.text)));
                }
                if labels.insert(name.to_string(), words).is_some() {
                    return Err(err(t.col, format!("label {name} defined twice")));
                }
                toks = &toks[1..];
            } else {
                break;
            }
        }
        // kbot's plain listing puts a hex byte offset before the mnemonic: skip it.
        if toks.len() >= 2
            && toks[0].text.chars().all(|c| c.is_ascii_hexdigit())
            && opcodes::by_mnemonic(&toks[1].text).is_some()
        {
            toks = &toks[1..];
        }
        let Some((head, rest)) = toks.split_first() else {
            continue;
        };
        let want = |n: usize| -> Result<(), AsmError> {
            if rest.len() != n {
                return Err(err(
                    head.col,
                    format!("{} takes {n} operand(s), {} given", head.text, rest.len()),
                ));
            }
            Ok(())
        };
        match head.text.to_ascii_lowercase().as_str() {
            ".version" => {
                want(1)?;
                version = Some(number(&rest[0], line)?);
            }
            ".statics" => {
                want(1)?;
                statics = number(&rest[0], line)?;
            }
            ".header_0x14" => {
                want(1)?;
                unknown = number(&rest[0], line)?;
            }
            ".piece" => {
                if rest.is_empty() {
                    return Err(err(head.col, ".piece needs a name".into()));
                }
                for t in rest {
                    pieces.push(name_of(t, line)?);
                }
            }
            ".sound_name" => {
                want(1)?;
                sounds.push(name_of(&rest[0], line)?);
            }
            ".script" => {
                want(1)?;
                entries.push((name_of(&rest[0], line)?, Ok(words), line));
            }
            ".entry" => {
                want(2)?;
                entries.push((name_of(&rest[0], line)?, Err(rest[1].clone()), line));
            }
            ".word" => {
                if rest.is_empty() {
                    return Err(err(head.col, ".word needs a value".into()));
                }
                for t in rest {
                    items.push(Item::Word(number(t, line)?));
                    words += 1;
                }
            }
            ".trailing" => {
                for t in rest {
                    trailing.extend(string_bytes(t, line)?);
                }
            }
            d if d.starts_with('.') => {
                return Err(err(head.col, format!("unknown directive {}", head.text)));
            }
            _ => {
                let op = opcodes::by_mnemonic(&head.text)
                    .ok_or_else(|| err(head.col, format!("unknown instruction {:?}", head.text)))?;
                want(op.operands.len())?;
                items.push(Item::Instr {
                    op,
                    args: rest.to_vec(),
                    line,
                });
                words += op.len();
            }
        }
    }
    let version = version.ok_or_else(|| AsmError {
        line: 1,
        col: 1,
        message: "no .version line (4 for TA, 6 for TA: Kingdoms)".into(),
    })?;
    if version != VERSION_TAK && !sounds.is_empty() {
        return Err(AsmError {
            line: 1,
            col: 1,
            message: format!(".sound_name needs .version 6 (this is .version {version})"),
        });
    }
    let mut cob = Cob::new(version, pieces, statics);
    cob.unknown_0x14 = unknown;
    cob.sounds = sounds;
    cob.trailing = trailing;
    for (name, at, line) in entries {
        let start = match at {
            Ok(w) => w,
            Err(t) => *labels.get(&t.text).ok_or_else(|| AsmError {
                line,
                col: t.col,
                message: format!("no label {}", t.text),
            })?,
        };
        let start = u32::try_from(start).map_err(|_| AsmError {
            line,
            col: 1,
            message: "code area too large".into(),
        })?;
        cob.scripts.push(Script { name, start });
    }
    let mut code = Vec::with_capacity(words);
    for item in items {
        match item {
            Item::Word(w) => code.push(w),
            Item::Instr { op, args, line } => {
                code.push(op.value);
                for (kind, t) in op.operands.iter().zip(&args) {
                    code.push(resolve(&cob, *kind, t, &labels, line)?);
                }
            }
        }
    }
    cob.code = code;
    Ok(cob)
}

fn resolve(
    cob: &Cob,
    kind: Operand,
    t: &Tok,
    labels: &HashMap<String, usize>,
    line: usize,
) -> Result<u32, AsmError> {
    let err = |m: String| AsmError {
        line,
        col: t.col,
        message: m,
    };
    let first = t.text.chars().next().unwrap_or(' ');
    if first.is_ascii_digit() || first == '-' || first == '+' {
        return number(t, line);
    }
    let name = name_of(t, line)?;
    let found = match kind {
        Operand::Piece => cob.piece_index(&name),
        Operand::Script => cob.script_index(&name),
        Operand::Sound => cob.sounds.iter().position(|s| *s == name),
        Operand::Axis => ["x-axis", "y-axis", "z-axis"]
            .iter()
            .position(|a| a.eq_ignore_ascii_case(&name)),
        Operand::Jump => labels.get(&name).copied(),
        _ => None,
    };
    let what = match kind {
        Operand::Piece => "piece",
        Operand::Script => "script",
        Operand::Sound => "sound name",
        Operand::Axis => "axis (x-axis, y-axis, z-axis)",
        Operand::Jump => "label",
        _ => return Err(err(format!("expected a number, found {:?}", t.text))),
    };
    let i = found.ok_or_else(|| err(format!("no {what} {name:?}")))?;
    u32::try_from(i).map_err(|_| err("index too large".into()))
}

fn number(t: &Tok, line: usize) -> Result<u32, AsmError> {
    let s = t.text.as_str();
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        body.parse::<u64>().ok()
    };
    let bad = || AsmError {
        line,
        col: t.col,
        message: format!("expected a 32-bit number, found {s:?}"),
    };
    let v = v.ok_or_else(bad)?;
    if neg {
        if v > 1 << 31 {
            return Err(bad());
        }
        Ok((v as u32).wrapping_neg())
    } else {
        u32::try_from(v).map_err(|_| bad())
    }
}

fn name_of(t: &Tok, line: usize) -> Result<String, AsmError> {
    if t.text.starts_with('"') {
        Ok(string_bytes(t, line)?.into_iter().map(char::from).collect())
    } else {
        Ok(t.text.clone())
    }
}

fn string_bytes(t: &Tok, line: usize) -> Result<Vec<u8>, AsmError> {
    let err = |m: &str| AsmError {
        line,
        col: t.col,
        message: m.into(),
    };
    let inner = t
        .text
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .ok_or_else(|| err("expected a quoted string"))?;
    let mut out = Vec::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\\') => out.push(b'\\'),
                Some('"') => out.push(b'"'),
                Some('x') => {
                    let h: String = chars.by_ref().take(2).collect();
                    let b =
                        u8::from_str_radix(&h, 16).map_err(|_| err("\\x needs two hex digits"))?;
                    out.push(b);
                }
                _ => return Err(err("unknown escape (\\\\, \\\" and \\xNN are known)")),
            }
        } else {
            out.push(
                u8::try_from(u32::from(c))
                    .map_err(|_| err("character outside Latin-1 (write it as \\xNN)"))?,
            );
        }
    }
    Ok(out)
}

/// Splits a line into tokens: quoted strings stay whole, `;` starts a comment, commas and
/// blanks separate.
fn tokenize(line: &str) -> Result<Vec<Tok>, (usize, String)> {
    let mut out = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == ';' {
            break;
        }
        if c.is_whitespace() || c == ',' {
            i += 1;
            continue;
        }
        let start = i;
        if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            if i >= chars.len() {
                return Err((start + 1, "string without its closing quote".into()));
            }
            i += 1;
            if i < chars.len() && chars[i] == ':' {
                i += 1;
            }
        } else {
            while i < chars.len()
                && !chars[i].is_whitespace()
                && !matches!(chars[i], ',' | ';' | '"')
            {
                i += 1;
            }
        }
        out.push(Tok {
            text: chars[start..i].iter().collect(),
            col: start + 1,
        });
    }
    Ok(out)
}
