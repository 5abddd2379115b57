//! TDF-syntax text (`.tdf`, `.ota`, `.fbi`): `[Section] { key=value; [Child] { … } }`.
//!
//! Keys and section names compare case-insensitively (their spelling is kept); `//` line
//! comments and `/* */` block comments are skipped; bytes are read as Latin-1 so any file
//! decodes. Nesting is limited to [`MAX_DEPTH`]; malformed text gives an error with its line,
//! never a panic.

use std::fmt;

/// Deepest section nesting accepted.
pub const MAX_DEPTH: usize = 32;

/// One `[name] { … }` block.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Section {
    /// The name between the brackets, as written.
    pub name: String,
    /// `key=value` pairs in file order, as written (values trimmed).
    pub entries: Vec<(String, String)>,
    /// Nested sections in file order.
    pub children: Vec<Section>,
    /// 1-based line of the `[name]`.
    pub line: usize,
}

impl Section {
    /// The value of `key` (case-insensitive; the first one if repeated).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// The child section `name` (case-insensitive; the first one if repeated).
    pub fn child(&self, name: &str) -> Option<&Section> {
        find(&self.children, name)
    }
}

/// The section `name` among `sections` (case-insensitive).
pub fn find<'a>(sections: &'a [Section], name: &str) -> Option<&'a Section> {
    sections.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}

/// Why a TDF text could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TdfError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for TdfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tdf: line {}: {}", self.line, self.msg)
    }
}

impl std::error::Error for TdfError {}

struct Lexer<'a> {
    b: &'a [u8],
    pos: usize,
    line: usize,
}

impl Lexer<'_> {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, TdfError> {
        Err(TdfError {
            line: self.line,
            msg: msg.into(),
        })
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.pos += 1;
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    /// Skips white space and comments.
    fn skip(&mut self) -> Result<(), TdfError> {
        loop {
            match (self.peek(), self.b.get(self.pos + 1).copied()) {
                (Some(c), _) if c.is_ascii_whitespace() || c == 0 => {
                    self.bump();
                }
                (Some(b'/'), Some(b'/')) => {
                    while let Some(c) = self.bump() {
                        if c == b'\n' {
                            break;
                        }
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    let start = self.line;
                    self.pos += 2;
                    loop {
                        match self.bump() {
                            None => {
                                return Err(TdfError {
                                    line: start,
                                    msg: "/* comment is not closed".into(),
                                })
                            }
                            Some(b'*') if self.peek() == Some(b'/') => {
                                self.pos += 1;
                                break;
                            }
                            _ => {}
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// Text up to (not including) any byte of `stops`, Latin-1 decoded and trimmed.
    fn until(&mut self, stops: &[u8]) -> String {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if stops.contains(&c) {
                break;
            }
            if c == b'/' && self.b.get(self.pos + 1) == Some(&b'/') {
                break;
            }
            self.bump();
        }
        latin1(&self.b[start..self.pos]).trim().to_string()
    }
}

fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| char::from(c)).collect()
}

/// Parses a whole TDF text into its top-level sections. Text outside any section is skipped.
pub fn parse(text: &[u8]) -> Result<Vec<Section>, TdfError> {
    let mut lx = Lexer {
        b: text,
        pos: 0,
        line: 1,
    };
    // Explicit stack instead of recursion: [open sections].
    let mut top: Vec<Section> = Vec::new();
    let mut stack: Vec<Section> = Vec::new();
    loop {
        lx.skip()?;
        let Some(c) = lx.peek() else { break };
        match c {
            b'[' => {
                lx.bump();
                let line = lx.line;
                let name = lx.until(b"]\n");
                if lx.peek() != Some(b']') {
                    return lx.err(format!("section name [{name} is not closed by ]"));
                }
                lx.bump();
                lx.skip()?;
                if lx.peek() != Some(b'{') {
                    return lx.err(format!("section [{name}] is not followed by {{"));
                }
                lx.bump();
                if stack.len() >= MAX_DEPTH {
                    return lx.err(format!("sections nested deeper than {MAX_DEPTH}"));
                }
                stack.push(Section {
                    name,
                    line,
                    ..Default::default()
                });
            }
            b'}' => {
                lx.bump();
                let Some(done) = stack.pop() else {
                    return lx.err("} without an open section");
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => top.push(done),
                }
                // Tolerate a `;` after a closing brace.
                lx.skip()?;
                if lx.peek() == Some(b';') {
                    lx.bump();
                }
            }
            b';' => {
                lx.bump();
            }
            _ => {
                let key = lx.until(b"=;{}[\n");
                let value = if lx.peek() == Some(b'=') {
                    lx.bump();
                    lx.until(b";\n}")
                } else {
                    String::new()
                };
                if lx.peek() == Some(b';') {
                    lx.bump();
                }
                if key.is_empty() && lx.peek() == Some(b'{') {
                    return lx.err("{ without a [section] name");
                }
                if let Some(s) = stack.last_mut() {
                    if !key.is_empty() {
                        s.entries.push((key, value));
                    }
                }
            }
        }
    }
    if let Some(open) = stack.last() {
        return Err(TdfError {
            line: open.line,
            msg: format!("section [{}] is not closed by }}", open.name),
        });
    }
    Ok(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_sections_comments_and_case() {
        let t = b"// head\n[Tree1]\n{\n world=green; /* block\n comment */ FootPrintX = 2 ;\n seqname=tree1 // c\n;\n [Child] { a=b; }\n}\n[x]{}";
        let s = parse(t).unwrap();
        assert_eq!(s.len(), 2);
        let tree = find(&s, "TREE1").unwrap();
        assert_eq!(tree.get("footprintx"), Some("2"));
        assert_eq!(tree.get("WORLD"), Some("green"));
        assert_eq!(tree.get("seqname"), Some("tree1"));
        assert_eq!(tree.child("child").unwrap().get("A"), Some("b"));
        assert_eq!(tree.line, 2);
    }

    #[test]
    fn malformed_text_is_an_error_not_a_panic() {
        for t in [
            &b"[a] { x=1;"[..],
            b"[a { }",
            b"}",
            b"[a] x=1; }",
            b"/* open",
            b"{ }",
        ] {
            assert!(parse(t).is_err(), "{:?}", String::from_utf8_lossy(t));
        }
        let deep: Vec<u8> = b"[a]{".repeat(MAX_DEPTH + 1);
        assert!(parse(&deep).is_err());
        // Arbitrary bytes never panic.
        let junk: Vec<u8> = (0..4000u32).map(|i| (i * 7919 % 251) as u8).collect();
        let _ = parse(&junk);
    }
}
