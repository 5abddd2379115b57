//! The preprocessor: `#include`, `#define` (object- and function-like), `#undef`,
//! `#ifdef/#ifndef/#if/#elif/#else/#endif`, applied to lexed tokens.
//!
//! Macros are expanded with the names being expanded disabled (no self-recursion), to a
//! bounded depth and a bounded number of produced tokens, so a hostile header cannot hang or
//! exhaust memory.

use std::collections::{HashMap, HashSet};

use super::lex::{lex, Kind, Token};
use super::{headers, Error, Includes, Limits, Pos};

#[derive(Debug, Clone)]
struct Macro {
    /// `Some` for a function-like macro: its parameter names.
    params: Option<Vec<String>>,
    body: Vec<Token>,
}

/// The preprocessed token stream of a script and the names of the files it read (index =
/// `Pos::file`).
pub struct Output {
    pub tokens: Vec<Token>,
    pub files: Vec<String>,
    /// The words after `#pragma cob` of each such line, in order.
    pub pragmas: Vec<(Pos, Vec<Token>)>,
}

struct Cond {
    /// This branch is being compiled.
    active: bool,
    /// Some branch of this `#if` chain was taken already.
    taken: bool,
    /// The enclosing region was active.
    parent: bool,
}

struct Pre<'a> {
    includes: &'a dyn Includes,
    limits: &'a Limits,
    macros: HashMap<String, Macro>,
    files: Vec<String>,
    out: Vec<Token>,
    produced: usize,
    pragmas: Vec<(Pos, Vec<Token>)>,
}

/// Preprocesses `src`, named `name`, resolving includes through `includes`.
pub fn preprocess(
    name: &str,
    src: &[u8],
    includes: &dyn Includes,
    limits: &Limits,
) -> Result<Output, Error> {
    let mut p = Pre {
        includes,
        limits,
        macros: HashMap::new(),
        files: vec![name.to_string()],
        out: Vec::new(),
        produced: 0,
        pragmas: Vec::new(),
    };
    let r = p.file(0, src, 0);
    match r {
        Ok(()) => Ok(Output {
            tokens: p.out,
            files: p.files,
            pragmas: p.pragmas,
        }),
        Err(e) => Err(e.named(&p.files)),
    }
}

fn ident(t: &Token) -> Option<&str> {
    match &t.kind {
        Kind::Ident(s) => Some(s),
        _ => None,
    }
}

fn is_punct(t: Option<&Token>, p: &str) -> bool {
    matches!(t, Some(Token { kind: Kind::Punct(q), .. }) if *q == p)
}

impl Pre<'_> {
    fn file(&mut self, file: u16, src: &[u8], depth: usize) -> Result<(), Error> {
        let toks = lex(src, file, self.limits)?;
        let mut conds: Vec<Cond> = Vec::new();
        let mut pending: Vec<Token> = Vec::new();
        let mut i = 0;
        while i < toks.len() {
            let t = &toks[i];
            let active = conds.last().map_or(true, |c| c.active);
            if !(t.bol && is_punct(Some(t), "#")) {
                if active {
                    pending.push(t.clone());
                }
                i += 1;
                continue;
            }
            // A directive: its tokens are the rest of the logical line.
            let line = t.line_id;
            let mut j = i + 1;
            while j < toks.len() && toks[j].line_id == line {
                j += 1;
            }
            let dir = &toks[i + 1..j];
            i = j;
            let Some(first) = dir.first() else { continue };
            let word = ident(first)
                .map(str::to_ascii_lowercase)
                .unwrap_or_default();
            let args = &dir[1..];
            match word.as_str() {
                "ifdef" | "ifndef" => {
                    let name = args.first().and_then(ident).ok_or_else(|| {
                        Error::new(first.pos, format!("#{word} needs a macro name"))
                    })?;
                    let def = self.macros.contains_key(name);
                    let yes = if word == "ifdef" { def } else { !def };
                    conds.push(Cond {
                        active: active && yes,
                        taken: yes,
                        parent: active,
                    });
                }
                "if" => {
                    let yes = active && self.eval_if(args, first.pos)? != 0;
                    conds.push(Cond {
                        active: active && yes,
                        taken: yes,
                        parent: active,
                    });
                }
                "elif" => {
                    let c = conds
                        .last()
                        .ok_or_else(|| Error::new(first.pos, "#elif without #if".into()))?;
                    let (parent, taken) = (c.parent, c.taken);
                    let yes = parent && !taken && self.eval_if(args, first.pos)? != 0;
                    if let Some(c) = conds.last_mut() {
                        c.active = yes;
                        c.taken |= yes;
                    }
                }
                "else" => {
                    let c = conds
                        .last_mut()
                        .ok_or_else(|| Error::new(first.pos, "#else without #if".into()))?;
                    c.active = c.parent && !c.taken;
                    c.taken = true;
                }
                "endif" => {
                    conds
                        .pop()
                        .ok_or_else(|| Error::new(first.pos, "#endif without #if".into()))?;
                }
                _ if !active => {}
                "define" => {
                    self.flush(&mut pending)?;
                    self.define(first.pos, args)?;
                }
                "undef" => {
                    self.flush(&mut pending)?;
                    if let Some(n) = args.first().and_then(ident) {
                        self.macros.remove(n);
                    }
                }
                "include" => {
                    self.flush(&mut pending)?;
                    let name = match args.first().map(|t| &t.kind) {
                        Some(Kind::Str(s)) => s.clone(),
                        Some(Kind::Punct("<")) => args[1..]
                            .iter()
                            .take_while(|t| !is_punct(Some(t), ">"))
                            .map(|t| match &t.kind {
                                Kind::Ident(s) | Kind::Number(s) => s.clone(),
                                Kind::Str(s) => s.clone(),
                                Kind::Punct(p) => p.to_string(),
                            })
                            .collect(),
                        _ => {
                            return Err(Error::new(
                                first.pos,
                                "#include needs a file name in quotes".into(),
                            ))
                        }
                    };
                    if depth + 1 > self.limits.max_include_depth {
                        return Err(Error::new(
                            first.pos,
                            format!(
                                "#include \"{name}\" nests deeper than {} files",
                                self.limits.max_include_depth
                            ),
                        ));
                    }
                    let from = self.files.get(file as usize).cloned().unwrap_or_default();
                    let (shown, text) = match self.includes.find(&from, &name) {
                        Some(found) => found,
                        None => match headers::builtin(&name) {
                            Some(text) => (
                                format!("<built-in {}>", name.to_ascii_lowercase()),
                                text.as_bytes().to_vec(),
                            ),
                            None => {
                                return Err(Error::new(
                                    first.pos,
                                    format!("cannot find include file \"{name}\""),
                                ))
                            }
                        },
                    };
                    if self.files.len() >= self.limits.max_files {
                        return Err(Error::new(
                            first.pos,
                            format!("more than {} included files", self.limits.max_files),
                        ));
                    }
                    let id = self.files.len() as u16;
                    self.files.push(shown);
                    self.file(id, &text, depth + 1)?;
                }
                "pragma"
                    if args
                        .first()
                        .and_then(ident)
                        .is_some_and(|w| w.eq_ignore_ascii_case("cob")) =>
                {
                    self.pragmas.push((first.pos, args[1..].to_vec()));
                }
                "error" => return Err(Error::new(first.pos, "#error in the source".into())),
                // `#pragma`, `#line` and other compiler hints change nothing here.
                _ => {}
            }
        }
        // An `#if` left open closes at the end of its file, as Scriptor allows (TA Mayhem's
        // ARMHERC.bos leaves an `#ifndef` open).
        self.flush(&mut pending)
    }

    fn define(&mut self, pos: Pos, args: &[Token]) -> Result<(), Error> {
        let name = args
            .first()
            .and_then(ident)
            .ok_or_else(|| Error::new(pos, "#define needs a name".into()))?
            .to_string();
        let mut rest = &args[1..];
        let mut params = None;
        // `NAME(` with no space before the parenthesis makes a function-like macro.
        if let (Some(n), Some(open)) = (args.first(), rest.first()) {
            if is_punct(Some(open), "(")
                && open.pos.line == n.pos.line
                && open.pos.col as usize == n.pos.col as usize + name.len()
            {
                let mut ps = Vec::new();
                let mut k = 1;
                loop {
                    match rest.get(k) {
                        Some(t) if is_punct(Some(t), ")") => break,
                        Some(t) if is_punct(Some(t), ",") => {}
                        Some(Token {
                            kind: Kind::Ident(p),
                            ..
                        }) => ps.push(p.clone()),
                        _ => {
                            return Err(Error::new(
                                open.pos,
                                format!("bad parameter list in #define {name}"),
                            ))
                        }
                    }
                    k += 1;
                }
                rest = &rest[k + 1..];
                params = Some(ps);
            }
        }
        self.macros.insert(
            name,
            Macro {
                params,
                body: rest.to_vec(),
            },
        );
        Ok(())
    }

    fn flush(&mut self, pending: &mut Vec<Token>) -> Result<(), Error> {
        let toks = std::mem::take(pending);
        let mut disabled = HashSet::new();
        let out = self.expand(&toks, &mut disabled, 0)?;
        self.out.extend(out);
        Ok(())
    }

    /// Expands every macro in `toks`; names in `disabled` are being expanded and stay as is.
    fn expand(
        &mut self,
        toks: &[Token],
        disabled: &mut HashSet<String>,
        depth: usize,
    ) -> Result<Vec<Token>, Error> {
        let mut out = Vec::with_capacity(toks.len());
        let mut i = 0;
        while i < toks.len() {
            let t = &toks[i];
            let Some(name) = ident(t).filter(|n| !disabled.contains(*n)) else {
                self.count(t.pos, 1)?;
                out.push(t.clone());
                i += 1;
                continue;
            };
            let Some(m) = self.macros.get(name).cloned() else {
                self.count(t.pos, 1)?;
                out.push(t.clone());
                i += 1;
                continue;
            };
            if depth >= self.limits.max_macro_depth {
                return Err(Error::new(
                    t.pos,
                    format!(
                        "macro {name} expands more than {} levels deep",
                        self.limits.max_macro_depth
                    ),
                ));
            }
            let body = match &m.params {
                None => {
                    i += 1;
                    m.body.clone()
                }
                Some(params) => {
                    if !is_punct(toks.get(i + 1), "(") {
                        self.count(t.pos, 1)?;
                        out.push(t.clone());
                        i += 1;
                        continue;
                    }
                    let (args, next) = split_args(toks, i + 2).ok_or_else(|| {
                        Error::new(
                            t.pos,
                            format!("call of macro {name} has no closing parenthesis"),
                        )
                    })?;
                    i = next;
                    let args = if params.is_empty() && args.len() == 1 && args[0].is_empty() {
                        Vec::new()
                    } else {
                        args
                    };
                    if args.len() != params.len() {
                        return Err(Error::new(
                            t.pos,
                            format!(
                                "macro {name} takes {} arguments, given {}",
                                params.len(),
                                args.len()
                            ),
                        ));
                    }
                    let mut expanded = Vec::with_capacity(args.len());
                    for a in &args {
                        expanded.push(self.expand(a, disabled, depth + 1)?);
                    }
                    let mut body = Vec::new();
                    for b in &m.body {
                        match ident(b).and_then(|n| params.iter().position(|p| p == n)) {
                            Some(k) => body.extend(expanded[k].iter().cloned()),
                            None => body.push(b.clone()),
                        }
                        self.count(t.pos, 0)?;
                    }
                    body
                }
            };
            // Every expanded token points at the use of the macro, where the modder looks.
            let body: Vec<Token> = body
                .into_iter()
                .map(|mut b| {
                    b.pos = t.pos;
                    b
                })
                .collect();
            disabled.insert(name.to_string());
            let r = self.expand(&body, disabled, depth + 1);
            disabled.remove(ident(t).unwrap_or_default());
            out.extend(r?);
        }
        Ok(out)
    }

    fn count(&mut self, pos: Pos, n: usize) -> Result<(), Error> {
        self.produced += n.max(1);
        if self.produced > self.limits.max_expanded_tokens {
            return Err(Error::new(
                pos,
                format!(
                    "macros expand to more than {} tokens",
                    self.limits.max_expanded_tokens
                ),
            ));
        }
        Ok(())
    }

    /// Evaluates the condition of `#if`/`#elif`: macros expanded, `defined NAME`, `TRUE`
    /// is 1, other names left over count as 0.
    fn eval_if(&mut self, args: &[Token], pos: Pos) -> Result<i64, Error> {
        let mut resolved = Vec::new();
        let mut k = 0;
        while k < args.len() {
            if ident(&args[k]).is_some_and(|n| n == "defined") {
                let (name, next) = if is_punct(args.get(k + 1), "(") {
                    (args.get(k + 2).and_then(ident), k + 4)
                } else {
                    (args.get(k + 1).and_then(ident), k + 2)
                };
                let name = name
                    .ok_or_else(|| Error::new(args[k].pos, "defined needs a macro name".into()))?;
                let v = if self.macros.contains_key(name) {
                    "1"
                } else {
                    "0"
                };
                resolved.push(Token {
                    kind: Kind::Number(v.into()),
                    ..args[k].clone()
                });
                k = next;
            } else {
                resolved.push(args[k].clone());
                k += 1;
            }
        }
        let mut disabled = HashSet::new();
        let toks = self.expand(&resolved, &mut disabled, 0)?;
        let mut e = IfExpr {
            toks: &toks,
            i: 0,
            pos,
            depth: 0,
            max_depth: self.limits.max_expr_depth,
        };
        let v = e.expr(0)?;
        if e.i < toks.len() {
            return Err(Error::new(
                toks[e.i].pos,
                "unexpected token in #if condition".into(),
            ));
        }
        Ok(v)
    }
}

/// Splits macro call arguments starting after `(` at `start`; returns them and the index
/// after the closing `)`.
fn split_args(toks: &[Token], start: usize) -> Option<(Vec<Vec<Token>>, usize)> {
    let mut args = vec![Vec::new()];
    let mut level = 0usize;
    let mut k = start;
    loop {
        let t = toks.get(k)?;
        match &t.kind {
            Kind::Punct("(") => level += 1,
            Kind::Punct(")") if level == 0 => return Some((args, k + 1)),
            Kind::Punct(")") => level -= 1,
            Kind::Punct(",") if level == 0 => {
                args.push(Vec::new());
                k += 1;
                continue;
            }
            _ => {}
        }
        args.last_mut()?.push(t.clone());
        k += 1;
    }
}

struct IfExpr<'a> {
    toks: &'a [Token],
    i: usize,
    pos: Pos,
    depth: usize,
    max_depth: usize,
}

impl IfExpr<'_> {
    fn peek(&self) -> Option<&str> {
        match self.toks.get(self.i).map(|t| &t.kind) {
            Some(Kind::Punct(p)) => Some(p),
            _ => None,
        }
    }

    fn expr(&mut self, min: u8) -> Result<i64, Error> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(Error::new(
                self.pos,
                "#if condition nests too deeply".into(),
            ));
        }
        let mut l = self.unary()?;
        while let Some(op) = self.peek() {
            let prec = match op {
                "||" => 1,
                "&&" => 2,
                "|" => 3,
                "^" => 4,
                "&" => 5,
                "==" | "!=" => 6,
                "<" | "<=" | ">" | ">=" => 7,
                "+" | "-" => 8,
                "*" | "/" | "%" => 9,
                _ => break,
            };
            if prec <= min {
                break;
            }
            let op = op.to_string();
            self.i += 1;
            let r = self.expr(prec)?;
            l = match op.as_str() {
                "||" => (l != 0 || r != 0) as i64,
                "&&" => (l != 0 && r != 0) as i64,
                "|" => l | r,
                "^" => l ^ r,
                "&" => l & r,
                "==" => (l == r) as i64,
                "!=" => (l != r) as i64,
                "<" => (l < r) as i64,
                "<=" => (l <= r) as i64,
                ">" => (l > r) as i64,
                ">=" => (l >= r) as i64,
                "+" => l.wrapping_add(r),
                "-" => l.wrapping_sub(r),
                "*" => l.wrapping_mul(r),
                "/" => l.checked_div(r).unwrap_or(0),
                _ => l.checked_rem(r).unwrap_or(0),
            };
        }
        self.depth -= 1;
        Ok(l)
    }

    fn unary(&mut self) -> Result<i64, Error> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(Error::new(
                self.pos,
                "#if condition nests too deeply".into(),
            ));
        }
        let v = self.unary_inner();
        self.depth -= 1;
        v
    }

    fn unary_inner(&mut self) -> Result<i64, Error> {
        let Some(t) = self.toks.get(self.i) else {
            return Err(Error::new(self.pos, "#if condition ends too early".into()));
        };
        self.i += 1;
        match &t.kind {
            Kind::Number(n) => Ok(super::parse::int_literal(n).unwrap_or(0)),
            // BOS's TRUE is 1 in a condition too (TA: Escalation's CORVALK.bos has
            // `#define LIMITED_CARGO_HOLD TRUE` then `#if LIMITED_CARGO_HOLD`).
            Kind::Ident(s) if s.eq_ignore_ascii_case("true") => Ok(1),
            Kind::Ident(_) => Ok(0),
            Kind::Punct("!") => Ok((self.unary()? == 0) as i64),
            Kind::Punct("-") => Ok(self.unary()?.wrapping_neg()),
            Kind::Punct("~") => Ok(!self.unary()?),
            Kind::Punct("(") => {
                let v = self.expr(0)?;
                if self.peek() != Some(")") {
                    return Err(Error::new(t.pos, "missing ) in #if condition".into()));
                }
                self.i += 1;
                Ok(v)
            }
            _ => Err(Error::new(
                t.pos,
                "unexpected token in #if condition".into(),
            )),
        }
    }
}
