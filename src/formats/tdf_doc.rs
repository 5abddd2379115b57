//! A lossless TDF document (`.fbi`, `.tdf`, `.ota`): the original bytes plus the byte spans of
//! every section, key and value, so that a value can be changed, added or removed with every
//! other byte (comments, key order, letter case, indentation, line endings, stray bytes after
//! the last brace) kept as it was.
//!
//! The reader accepts the variants Cavedog's and mods' files use: `//` and `/* */` comments,
//! a missing `;` (a value then ends at the line end, `}` or a comment), a `;` on the next line,
//! nested sections, duplicate keys, a key without `=`, text outside any section, a stray `}`
//! and a last section left open at the end of the file. What it does not understand is kept
//! as bytes and never edited: [`Document::key`] reports a repeated key as
//! [`KeyLookup::Ambiguous`], a key without `=` as [`KeyLookup::Bare`], a section left open
//! cannot take new keys. Bytes are Latin-1. Only a name-less `{`, a `[name` not closed by `]`
//! or not followed by `{`, an unclosed `/*` comment and nesting deeper than [`MAX_DEPTH`]
//! are errors (with line and byte offset); the input is bounded by [`MAX_BYTES`].

use std::fmt;
use std::ops::Range;

/// Deepest section nesting accepted.
pub const MAX_DEPTH: usize = 32;

/// Largest document accepted (the largest stock file is ~40 KB).
pub const MAX_BYTES: usize = 16 << 20;

/// Why a TDF text could not be read or edited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TdfDocError {
    /// 1-based line (0 when the error is not tied to a place in the text).
    pub line: usize,
    /// Byte offset.
    pub offset: usize,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for TdfDocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "tdf: {}", self.msg)
        } else {
            write!(
                f,
                "tdf: line {} (offset {}): {}",
                self.line, self.offset, self.msg
            )
        }
    }
}

impl std::error::Error for TdfDocError {}

fn edit_err<T>(msg: impl Into<String>) -> Result<T, TdfDocError> {
    Err(TdfDocError {
        line: 0,
        offset: 0,
        msg: msg.into(),
    })
}

/// One `key=value` statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key as written (trimmed).
    pub key: String,
    /// The value (trimmed, Latin-1 decoded); `None` for a key without `=`.
    pub value: Option<String>,
    /// Span of the key.
    pub key_span: Range<usize>,
    /// Span of the trimmed value (empty, just after `=`, for an empty value).
    pub value_span: Range<usize>,
    /// End of the statement: after its `;` when one follows the value directly, else the end
    /// of the value.
    pub end: usize,
    /// 1-based line of the key.
    pub line: usize,
}

/// One `[name] { … }` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The name between the brackets, as written (trimmed).
    pub name: String,
    /// 1-based line of the `[`.
    pub line: usize,
    /// Offset of the `[`.
    pub start: usize,
    /// Offset of the `{`.
    pub open: usize,
    /// Offset of the closing `}`; `None` when the file ends first.
    pub close: Option<usize>,
    /// Statements in file order.
    pub entries: Vec<Entry>,
    /// Child sections (indices into [`Document::nodes`]) in file order.
    pub children: Vec<usize>,
}

/// What [`Document::key`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLookup {
    /// No such key.
    Missing,
    /// Exactly one `key=value` (index into the section's entries).
    One(usize),
    /// The key appears more than once: the cell is read-only.
    Ambiguous,
    /// The key appears without `=`: the cell is read-only.
    Bare,
}

/// What [`Document::section`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionLookup {
    /// No such section.
    Missing,
    /// Exactly one (index into [`Document::nodes`]).
    One(usize),
    /// More than one section of that name at some level of the path.
    Ambiguous,
}

/// A parsed TDF text that keeps its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    bytes: Vec<u8>,
    nodes: Vec<Node>,
    top: Vec<usize>,
}

/// One change to a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Sets `key` of section `node` to `value`, adding `key=value;` at the end of the section
    /// when the key is missing.
    Set {
        /// Index into [`Document::nodes`].
        node: usize,
        /// The key (its spelling is used when it is added).
        key: String,
        /// The new value.
        value: String,
    },
    /// Removes the statement of `key` from section `node` (a missing key is left missing).
    Remove {
        /// Index into [`Document::nodes`].
        node: usize,
        /// The key.
        key: String,
    },
}

fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

fn is_space(c: u8) -> bool {
    c.is_ascii_whitespace() || c == 0
}

fn trim_span(b: &[u8], mut s: usize, mut e: usize) -> Range<usize> {
    while s < e && is_space(b[s]) {
        s += 1;
    }
    while e > s && is_space(b[e - 1]) {
        e -= 1;
    }
    s..e
}

struct Lexer<'a> {
    b: &'a [u8],
    pos: usize,
    line: usize,
}

impl Lexer<'_> {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, TdfDocError> {
        Err(TdfDocError {
            line: self.line,
            offset: self.pos,
            msg: msg.into(),
        })
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn peek2(&self) -> Option<u8> {
        self.b.get(self.pos + 1).copied()
    }

    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += 1;
            if c == b'\n' {
                self.line += 1;
            }
        }
    }

    fn at_comment(&self) -> bool {
        self.peek() == Some(b'/') && matches!(self.peek2(), Some(b'/') | Some(b'*'))
    }

    /// Skips white space and comments.
    fn skip(&mut self) -> Result<(), TdfDocError> {
        loop {
            match (self.peek(), self.peek2()) {
                (Some(c), _) if is_space(c) => self.bump(),
                (Some(b'/'), Some(b'/')) => {
                    while let Some(c) = self.peek() {
                        if c == b'\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    let (line, offset) = (self.line, self.pos);
                    self.bump();
                    self.bump();
                    loop {
                        match self.peek() {
                            None => {
                                return Err(TdfDocError {
                                    line,
                                    offset,
                                    msg: "/* comment is not closed".into(),
                                })
                            }
                            Some(b'*') if self.peek2() == Some(b'/') => {
                                self.bump();
                                self.bump();
                                break;
                            }
                            _ => self.bump(),
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// Advances to the first byte of `stops` or a comment start; returns the span passed.
    fn until(&mut self, stops: &[u8]) -> Range<usize> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if stops.contains(&c) || self.at_comment() {
                break;
            }
            self.bump();
        }
        start..self.pos
    }
}

/// Parses a TDF text, keeping its bytes.
pub fn parse(text: &[u8]) -> Result<Document, TdfDocError> {
    if text.len() > MAX_BYTES {
        return Err(TdfDocError {
            line: 0,
            offset: 0,
            msg: format!("{} bytes, over the {MAX_BYTES}-byte limit", text.len()),
        });
    }
    let mut lx = Lexer {
        b: text,
        pos: 0,
        line: 1,
    };
    let mut nodes: Vec<Node> = Vec::new();
    let mut top = Vec::new();
    // Explicit stack of open sections (indices into `nodes`), no recursion.
    let mut stack: Vec<usize> = Vec::new();
    loop {
        lx.skip()?;
        let Some(c) = lx.peek() else { break };
        match c {
            b'[' => {
                let (start, line) = (lx.pos, lx.line);
                lx.bump();
                let name_span = lx.until(b"]\n");
                let name_span = trim_span(text, name_span.start, name_span.end);
                let name = latin1(&text[name_span.clone()]);
                if lx.peek() != Some(b']') {
                    return lx.err(format!("section name [{name} is not closed by ]"));
                }
                lx.bump();
                lx.skip()?;
                if lx.peek() != Some(b'{') {
                    return lx.err(format!("section [{name}] is not followed by {{"));
                }
                if stack.len() >= MAX_DEPTH {
                    return lx.err(format!("sections nested deeper than {MAX_DEPTH}"));
                }
                let id = nodes.len();
                nodes.push(Node {
                    name,
                    line,
                    start,
                    open: lx.pos,
                    close: None,
                    entries: Vec::new(),
                    children: Vec::new(),
                });
                match stack.last() {
                    Some(&p) => nodes[p].children.push(id),
                    None => top.push(id),
                }
                stack.push(id);
                lx.bump();
            }
            b'}' => {
                // A stray `}` outside any section is kept as it is.
                if let Some(id) = stack.pop() {
                    nodes[id].close = Some(lx.pos);
                }
                lx.bump();
            }
            b';' => lx.bump(),
            b'{' => return lx.err("{ without a [section] name"),
            _ => {
                let line = lx.line;
                let raw = lx.until(b"=;{}[\n");
                let key_span = trim_span(text, raw.start, raw.end);
                let key = latin1(&text[key_span.clone()]);
                let (value, value_span) = if lx.peek() == Some(b'=') {
                    lx.bump();
                    let raw = lx.until(b";\n}");
                    let span = trim_span(text, raw.start, raw.end);
                    (Some(latin1(&text[span.clone()])), span)
                } else {
                    (None, key_span.end..key_span.end)
                };
                let end = if lx.peek() == Some(b';') {
                    lx.bump();
                    lx.pos
                } else {
                    value_span.end.max(key_span.end)
                };
                if key.is_empty() && value.is_none() {
                    // Nothing but stray bytes (e.g. a `[` alone): step over one byte so the
                    // loop always advances.
                    if lx.pos == raw.start {
                        lx.bump();
                    }
                    continue;
                }
                if let Some(&id) = stack.last() {
                    nodes[id].entries.push(Entry {
                        key,
                        value,
                        key_span,
                        value_span,
                        end,
                        line,
                    });
                }
            }
        }
    }
    Ok(Document {
        bytes: text.to_vec(),
        nodes,
        top,
    })
}

impl Document {
    /// The document's bytes (unedited: the input).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Every section, in order of their `[`.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The top-level sections (indices into [`Document::nodes`]).
    pub fn top(&self) -> &[usize] {
        &self.top
    }

    /// The section at `path` (names compared ignoring ASCII case).
    pub fn section(&self, path: &[&str]) -> SectionLookup {
        let mut level: &[usize] = &self.top;
        let mut found = None;
        for name in path {
            let mut hits = level
                .iter()
                .copied()
                .filter(|&i| self.nodes[i].name.eq_ignore_ascii_case(name));
            let Some(first) = hits.next() else {
                return SectionLookup::Missing;
            };
            if hits.next().is_some() {
                return SectionLookup::Ambiguous;
            }
            found = Some(first);
            level = &self.nodes[first].children;
        }
        found.map_or(SectionLookup::Missing, SectionLookup::One)
    }

    /// `key` in section `node` (ignoring ASCII case).
    pub fn key(&self, node: usize, key: &str) -> KeyLookup {
        let Some(n) = self.nodes.get(node) else {
            return KeyLookup::Missing;
        };
        let mut found = KeyLookup::Missing;
        for (i, e) in n.entries.iter().enumerate() {
            if e.key.eq_ignore_ascii_case(key) {
                if e.value.is_none() {
                    return KeyLookup::Bare;
                }
                if found != KeyLookup::Missing {
                    found = KeyLookup::Ambiguous;
                } else {
                    found = KeyLookup::One(i);
                }
            }
        }
        found
    }

    /// The value of the single `key` of section `node`.
    pub fn value(&self, node: usize, key: &str) -> Option<&str> {
        match self.key(node, key) {
            KeyLookup::One(i) => self.nodes[node].entries[i].value.as_deref(),
            _ => None,
        }
    }

    /// The bytes after `edits` (all or nothing). Each edited key must be unique in its
    /// section ([`KeyLookup::One`] or missing for a set); a new value must be Latin-1 text
    /// without `;`, line breaks, `}`, comment starts, control characters or surrounding
    /// spaces. The result is parsed again and checked to hold exactly the edited values with
    /// every other statement unchanged.
    pub fn apply(&self, edits: &[Edit]) -> Result<Vec<u8>, TdfDocError> {
        // (start, end, replacement, order) splices.
        let mut splices: Vec<(usize, usize, Vec<u8>, usize)> = Vec::new();
        let mut touched: Vec<(usize, String)> = Vec::new();
        for (order, edit) in edits.iter().enumerate() {
            let (node, key) = match edit {
                Edit::Set { node, key, .. } | Edit::Remove { node, key } => (*node, key),
            };
            let Some(n) = self.nodes.get(node) else {
                return edit_err(format!("no section #{node}"));
            };
            let lk = key.to_ascii_lowercase();
            if touched.contains(&(node, lk.clone())) {
                return edit_err(format!("[{}] {key} is edited twice", n.name));
            }
            touched.push((node, lk));
            let found = self.key(node, key);
            match (edit, found) {
                (_, KeyLookup::Ambiguous) => {
                    return edit_err(format!(
                        "[{}] {key} appears more than once: not edited",
                        n.name
                    ))
                }
                (_, KeyLookup::Bare) => {
                    return edit_err(format!(
                        "[{}] {key} is written without '=': not edited",
                        n.name
                    ))
                }
                (Edit::Set { value, .. }, KeyLookup::One(i))
                    if n.entries[i].value.as_deref() == Some(value.as_str()) => {}
                (Edit::Set { value, .. }, KeyLookup::One(i)) => {
                    let v = encode_value(value)?;
                    let e = &n.entries[i];
                    splices.push((e.value_span.start, e.value_span.end, v, order));
                }
                (Edit::Set { value, .. }, KeyLookup::Missing) => {
                    let v = encode_value(value)?;
                    let k = encode_key(key)?;
                    let (at, text) = self.insertion(n, &k, &v)?;
                    splices.push((at, at, text, order));
                }
                (Edit::Remove { .. }, KeyLookup::One(i)) => {
                    let (s, e) = self.removal(&n.entries[i]);
                    splices.push((s, e, Vec::new(), order));
                }
                (Edit::Remove { .. }, KeyLookup::Missing) => {}
            }
        }
        splices.sort_by_key(|s| (s.0, s.3));
        let mut out = Vec::with_capacity(self.bytes.len() + 64);
        let mut cur = 0;
        for (s, e, text, _) in &splices {
            if *s < cur {
                return edit_err("edits overlap");
            }
            out.extend_from_slice(&self.bytes[cur..*s]);
            out.extend_from_slice(text);
            cur = *e;
        }
        out.extend_from_slice(&self.bytes[cur..]);
        self.check(&out, edits)?;
        Ok(out)
    }

    /// Where and what to insert for a new `key=value` at the end of section `n`.
    fn insertion(
        &self,
        n: &Node,
        key: &[u8],
        value: &[u8],
    ) -> Result<(usize, Vec<u8>), TdfDocError> {
        let b = &self.bytes;
        let Some(close) = n.close else {
            return edit_err(format!(
                "[{}] is not closed by }}: no key can be added",
                n.name
            ));
        };
        let ls = line_start(b, close);
        let mut stmt = Vec::with_capacity(key.len() + value.len() + 8);
        stmt.extend_from_slice(key);
        stmt.push(b'=');
        stmt.extend_from_slice(value);
        stmt.push(b';');
        if ls > n.open && b[ls..close].iter().all(|&c| c == b' ' || c == b'\t') {
            // `}` alone on its line: a new line before it, indented like the last statement.
            let indent: Vec<u8> = match n.entries.last() {
                Some(e) => indent_of(b, e.key_span.start),
                None => {
                    let mut i = b[ls..close].to_vec();
                    i.push(b'\t');
                    i
                }
            };
            let crlf = ls >= 2 && b[ls - 2] == b'\r';
            let mut text = indent;
            text.extend_from_slice(&stmt);
            text.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            Ok((ls, text))
        } else {
            // `}` after other text on its line: the statement goes right before it, after a
            // `;` when the text before does not end a statement.
            let prev = b[..close].iter().rposition(|&c| !is_space(c));
            let mut text = Vec::new();
            if let Some(p) = prev {
                if !matches!(b[p], b';' | b'{' | b'}') {
                    text.push(b';');
                }
            }
            text.extend_from_slice(&stmt);
            Ok((close, text))
        }
    }

    /// The span removed with entry `e`: its whole line when nothing else is on it.
    fn removal(&self, e: &Entry) -> (usize, usize) {
        let b = &self.bytes;
        let ls = line_start(b, e.key_span.start);
        let before_blank = b[ls..e.key_span.start]
            .iter()
            .all(|&c| c == b' ' || c == b'\t');
        let mut j = e.end;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        let line_end = match b.get(j) {
            Some(b'\n') => Some(j + 1),
            Some(b'\r') if b.get(j + 1) == Some(&b'\n') => Some(j + 2),
            None => Some(j),
            _ => None,
        };
        match line_end {
            Some(le) if before_blank => (ls, le),
            _ => (e.key_span.start, e.end),
        }
    }

    /// Parses `out` again and checks it holds the edited values and every other statement
    /// unchanged.
    fn check(&self, out: &[u8], edits: &[Edit]) -> Result<(), TdfDocError> {
        let new = parse(out).map_err(|e| TdfDocError {
            msg: format!("edit made the text unreadable ({e})"),
            ..e
        })?;
        let mut want = flatten(self);
        for edit in edits {
            match edit {
                Edit::Set { node, key, value } => {
                    let lk = key.to_ascii_lowercase();
                    want.retain(|(n, k, _)| !(*n == *node && *k == lk));
                    want.push((*node, lk, Some(value.clone())));
                }
                Edit::Remove { node, key } => {
                    let lk = key.to_ascii_lowercase();
                    want.retain(|(n, k, _)| !(*n == *node && *k == lk));
                }
            }
        }
        let mut got = flatten(&new);
        want.sort();
        got.sort();
        if self.nodes.len() != new.nodes.len() || want != got {
            return edit_err("the edited text does not read back as edited; nothing changed");
        }
        Ok(())
    }
}

/// Every statement as (section index, lower-case key, value).
fn flatten(d: &Document) -> Vec<(usize, String, Option<String>)> {
    let mut v = Vec::new();
    for (i, n) in d.nodes.iter().enumerate() {
        for e in &n.entries {
            v.push((i, e.key.to_ascii_lowercase(), e.value.clone()));
        }
    }
    v
}

fn line_start(b: &[u8], pos: usize) -> usize {
    b[..pos]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1)
}

fn indent_of(b: &[u8], pos: usize) -> Vec<u8> {
    let ls = line_start(b, pos);
    b[ls..pos]
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .copied()
        .collect()
}

/// The Latin-1 bytes of a value that can be written as `key=value;`.
pub fn encode_value(v: &str) -> Result<Vec<u8>, TdfDocError> {
    if v.trim() != v {
        return edit_err(format!("value {v:?} has leading or trailing spaces"));
    }
    if v.contains("//") || v.contains("/*") {
        return edit_err(format!("value {v:?} holds a comment start"));
    }
    let mut out = Vec::with_capacity(v.len());
    for c in v.chars() {
        let Ok(b) = u8::try_from(u32::from(c)) else {
            return edit_err(format!("value {v:?}: {c:?} is not a Latin-1 character"));
        };
        if matches!(b, b';' | b'}') || (b < 0x20 && b != b'\t') || b == 0x7F {
            return edit_err(format!(
                "value {v:?}: {c:?} cannot be written in a TDF value"
            ));
        }
        out.push(b);
    }
    Ok(out)
}

fn encode_key(k: &str) -> Result<Vec<u8>, TdfDocError> {
    let ok = !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_graphic() && !b"=;{}[]/".contains(&b));
    if !ok {
        return edit_err(format!("{k:?} cannot be written as a TDF key"));
    }
    Ok(k.as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(d: &Document, path: &[&str], key: &str, value: &str) -> Vec<u8> {
        let SectionLookup::One(node) = d.section(path) else {
            panic!("no section {path:?}")
        };
        d.apply(&[Edit::Set {
            node,
            key: key.into(),
            value: value.into(),
        }])
        .unwrap()
    }

    #[test]
    fn set_changes_only_the_value() {
        let t = b"// head\r\n[UNITINFO]\r\n\t{\r\n\tName=Commander;\r\n\tBuildCostEnergy=34125;  // c\r\n\t}\r\n\x1a";
        let d = parse(t).unwrap();
        assert_eq!(d.bytes(), t);
        let out = set(&d, &["unitinfo"], "buildcostenergy", "40000");
        assert_eq!(
            out,
            b"// head\r\n[UNITINFO]\r\n\t{\r\n\tName=Commander;\r\n\tBuildCostEnergy=40000;  // c\r\n\t}\r\n\x1a"
        );
    }

    #[test]
    fn added_key_goes_at_the_end_of_its_section_in_its_style() {
        let t = b"[A]\r\n\t{\r\n\tx=1;\r\n\t[B]\r\n\t\t{\r\n\t\ty=2;\r\n\t\t}\r\n\t}\r\n";
        let d = parse(t).unwrap();
        let out = set(&d, &["a"], "NewKey", "7");
        assert_eq!(
            out,
            b"[A]\r\n\t{\r\n\tx=1;\r\n\t[B]\r\n\t\t{\r\n\t\ty=2;\r\n\t\t}\r\n\tNewKey=7;\r\n\t}\r\n"
        );
        let out = set(&d, &["a", "b"], "z", "3");
        assert_eq!(
            out,
            b"[A]\r\n\t{\r\n\tx=1;\r\n\t[B]\r\n\t\t{\r\n\t\ty=2;\r\n\t\tz=3;\r\n\t\t}\r\n\t}\r\n"
        );
        // One-line section, last value without `;`.
        let d = parse(b"[a]{x=1}").unwrap();
        assert_eq!(set(&d, &["a"], "y", "2"), b"[a]{x=1;y=2;}");
    }

    #[test]
    fn removal_takes_the_line_or_the_statement() {
        let d = parse(b"[a]\n{\n  x=1;\n  y=2; // keep\n  z=3;\n}\n").unwrap();
        let SectionLookup::One(n) = d.section(&["A"]) else {
            panic!()
        };
        let rm = |k: &str| Edit::Remove {
            node: n,
            key: k.into(),
        };
        assert_eq!(
            d.apply(&[rm("X")]).unwrap(),
            b"[a]\n{\n  y=2; // keep\n  z=3;\n}\n"
        );
        assert_eq!(
            d.apply(&[rm("y")]).unwrap(),
            b"[a]\n{\n  x=1;\n   // keep\n  z=3;\n}\n"
        );
        assert_eq!(d.apply(&[rm("nope")]).unwrap(), d.bytes());
    }

    #[test]
    fn variants_parse_and_unknown_parts_stay_read_only() {
        let t = b"junk before\n[a]\n{\nx=1\n;\ndup=1;\nDUP=2;\nbare;\n/* c */ y = two words ;\n}\n}\nstray after";
        let d = parse(t).unwrap();
        let SectionLookup::One(n) = d.section(&["a"]) else {
            panic!()
        };
        assert_eq!(d.value(n, "x"), Some("1"));
        assert_eq!(d.value(n, "Y"), Some("two words"));
        assert_eq!(d.key(n, "dup"), KeyLookup::Ambiguous);
        assert_eq!(d.key(n, "bare"), KeyLookup::Bare);
        let e = |k: &str| Edit::Set {
            node: n,
            key: k.into(),
            value: "9".into(),
        };
        assert!(d.apply(&[e("dup")]).is_err());
        assert!(d.apply(&[e("bare")]).is_err());
        assert_eq!(
            d.apply(&[e("x")]).unwrap(),
            b"junk before\n[a]\n{\nx=9\n;\ndup=1;\nDUP=2;\nbare;\n/* c */ y = two words ;\n}\n}\nstray after"
        );
        // An unclosed last section reads, takes value edits, refuses added keys.
        let d = parse(b"[a]{x=1;").unwrap();
        assert_eq!(set(&d, &["a"], "x", "2"), b"[a]{x=2;");
        assert!(d
            .apply(&[Edit::Set {
                node: 0,
                key: "y".into(),
                value: "1".into()
            }])
            .is_err());
    }

    #[test]
    fn bad_values_are_refused() {
        let d = parse(b"[a]{x=1;}").unwrap();
        for v in ["1;y=2", "a\nb", " 1", "a//b", "a}", "\u{263a}"] {
            let r = d.apply(&[Edit::Set {
                node: 0,
                key: "x".into(),
                value: v.into(),
            }]);
            assert!(r.is_err(), "{v:?}");
        }
        // Latin-1 text is fine.
        let out = set(&d, &["a"], "x", "caf\u{e9}");
        assert_eq!(out, b"[a]{x=caf\xe9;}");
    }

    #[test]
    fn malformed_text_is_an_error_not_a_panic() {
        for t in [&b"[a { }"[..], b"[a] x=1; }", b"/* open", b"{ }"] {
            assert!(parse(t).is_err(), "{:?}", String::from_utf8_lossy(t));
        }
        assert!(parse(&b"[a]{".repeat(MAX_DEPTH + 1)).is_err());
        let junk: Vec<u8> = (0..20000u32).map(|i| (i * 7919 % 251) as u8).collect();
        if let Ok(d) = parse(&junk) {
            assert_eq!(d.bytes(), &junk[..]);
        }
    }
}
