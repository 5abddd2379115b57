//! The decompiler: COB → BOS source that compiles back (with [`super::compile`]) to the same
//! code words.
//!
//! Each script is rebuilt by simulating the expression stack over its instructions and
//! matching the jump shapes the compilers emit (`while`, `if`, `if`/`else`). Every result is
//! checked by compiling it: a script whose source does not give back its exact words is
//! written as verbatim `__cob(…)` words instead, with a comment saying so, so the output never
//! silently differs from the binary.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{compile, opcode as op, Limits, Mode, NoIncludes, Options};
use crate::formats::cob::{self, Cob};

/// Unit-value ports of `get`/`set` named as the standard `exptype.h` names them.
const PORTS: [&str; 20] = [
    "ACTIVATION",
    "STANDINGMOVEORDERS",
    "STANDINGFIREORDERS",
    "HEALTH",
    "INBUILDSTANCE",
    "BUSY",
    "PIECE_XZ",
    "PIECE_Y",
    "UNIT_XZ",
    "UNIT_Y",
    "UNIT_HEIGHT",
    "XZ_ATAN",
    "XZ_HYPOT",
    "ATAN",
    "HYPOT",
    "GROUND_HEIGHT",
    "BUILD_PERCENT_LEFT",
    "YARD_OPEN",
    "BUGGER_OFF",
    "ARMORED",
];

/// What [`decompile`] made of a COB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decompiled {
    /// The BOS source.
    pub source: String,
    /// Scripts written as verbatim words because they could not be structured.
    pub raw_scripts: Vec<String>,
    /// The source compiles back to the identical COB.
    pub identical: bool,
}

/// The mode a COB was compiled for.
pub fn mode_of_cob(c: &Cob) -> Mode {
    if c.has_sound_table() {
        Mode::Tak
    } else {
        Mode::Ta
    }
}

/// Decompiles `c`; see [`Decompiled`].
pub fn decompile(c: &Cob) -> Decompiled {
    let mode = mode_of_cob(c);
    let mut raw = vec![false; c.scripts.len()];
    let names_ok = c
        .pieces
        .iter()
        .chain(c.scripts.iter().map(|s| &s.name))
        .all(|n| is_ident(n));
    if !names_ok {
        raw.iter_mut().for_each(|r| *r = true);
    }
    // Each round writes the first script (in code order) whose words differ as verbatim
    // words: a script's length shifts every later jump target, so only the first
    // difference is known to be that script's own.
    for _round in 0..=c.scripts.len() {
        let source = render(c, mode, &mut raw);
        match recompile(&source, mode) {
            Ok(got) if same_cob(&got, c) => {
                return Decompiled {
                    source,
                    raw_scripts: raw_names(c, &raw),
                    identical: true,
                };
            }
            Ok(got) => {
                let first = (0..raw.len())
                    .filter(|&i| !raw[i])
                    .filter(|&i| {
                        c.code.get(range(c, i)) != got.code.get(range(&got, i))
                            || got.scripts.get(i).map(|s| s.start)
                                != c.scripts.get(i).map(|s| s.start)
                    })
                    .min_by_key(|&i| c.scripts.get(i).map(|s| s.start));
                match first {
                    Some(i) => raw[i] = true,
                    None => break,
                }
            }
            // A script's text that does not compile: that one verbatim.
            Err(e) => match script_at_line(&source, e.line).filter(|&i| !raw[i]) {
                Some(i) => raw[i] = true,
                None => raw.iter_mut().for_each(|r| *r = true),
            },
        }
    }
    let source = render(c, mode, &mut raw);
    let identical = recompile(&source, mode).is_ok_and(|g| same_cob(&g, c));
    let mut source = source;
    if !identical {
        source.insert_str(
            0,
            "// NOTE: this COB has parts BOS cannot express (its header, names or trailing bytes);\n// the source below does not compile back to identical bytes.\n",
        );
    }
    Decompiled {
        source,
        raw_scripts: raw_names(c, &raw),
        identical,
    }
}

/// Words of script `i`: none when the next script of the table starts at the same word (how
/// Scriptor compiles an empty function), else up to the next larger start.
fn range(c: &Cob, i: usize) -> std::ops::Range<usize> {
    let start = c.scripts.get(i).map(|s| s.start);
    if start.is_some() && c.scripts.get(i + 1).map(|s| s.start) == start {
        let s = start.unwrap_or(0) as usize;
        return s..s;
    }
    c.script_range(i).unwrap_or(0..0)
}

fn raw_names(c: &Cob, raw: &[bool]) -> Vec<String> {
    c.scripts
        .iter()
        .zip(raw)
        .filter(|(_, r)| **r)
        .map(|(s, _)| s.name.clone())
        .collect()
}

fn recompile(source: &str, mode: Mode) -> Result<Cob, super::Error> {
    compile(
        "decompiled.bos",
        source.as_bytes(),
        &NoIncludes,
        &Options::new(mode),
        &Limits::default(),
    )
}

/// The script (by table order) whose text holds `line` of `source`: function headers are
/// the lines that start with a name and a `(`, in table order.
fn script_at_line(source: &str, line: u32) -> Option<usize> {
    let mut found = None;
    let mut k = 0usize;
    for (n, l) in source.lines().enumerate() {
        if n as u32 + 1 > line {
            break;
        }
        let starts_name = l
            .chars()
            .next()
            .is_some_and(|ch| ch.is_ascii_alphabetic() || ch == '_');
        if starts_name
            && !l.starts_with("piece ")
            && !l.starts_with("static-var ")
            && l.contains('(')
        {
            found = Some(k);
            k += 1;
        }
    }
    found
}

fn same_cob(a: &Cob, b: &Cob) -> bool {
    match (cob::write(a), cob::write(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

fn is_ident(n: &str) -> bool {
    let mut ch = n.chars();
    ch.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && ch.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(n))
        && !PORTS.iter().any(|k| k.eq_ignore_ascii_case(n))
}

const KEYWORDS: [&str; 16] = [
    "piece",
    "static-var",
    "var",
    "if",
    "else",
    "while",
    "for",
    "return",
    "get",
    "rand",
    "true",
    "false",
    "and",
    "or",
    "xor",
    "not",
];

fn render(c: &Cob, mode: Mode, raw: &mut [bool]) -> String {
    let mut body = String::new();
    let mut ports = BTreeSet::new();
    for (i, s) in c.scripts.iter().enumerate() {
        let code = range(c, i);
        let text = if raw.get(i).copied().unwrap_or(true) {
            None
        } else {
            Script::new(c, mode, code.clone(), &mut ports).run()
        };
        match text {
            Some((params, lines)) => {
                let ps: Vec<String> = (0..params).map(|k| format!("arg{k}")).collect();
                let _ = writeln!(body, "{}({})\n{{", s.name, ps.join(", "));
                for l in lines {
                    let _ = writeln!(body, "{l}");
                }
                body.push_str("}\n\n");
            }
            None => {
                if let Some(r) = raw.get_mut(i) {
                    *r = true;
                }
                let _ = writeln!(
                    body,
                    "// {}: not structured (verbatim code words follow)\n{}()\n{{",
                    s.name, s.name
                );
                body.push_str(&raw_words(c, code));
                body.push_str("}\n\n");
            }
        }
    }
    let mut out = String::new();
    out.push_str("// Decompiled from COB by tafs: recompiles to the same code.\n");
    if mode == Mode::Tak {
        out.push_str("#define TAK\n");
    }
    if c.version != cob::VERSION_TA && c.version != cob::VERSION_TAK {
        let _ = writeln!(out, "#pragma cob version {}", c.version);
    }
    if c.unknown_0x14 != 0 {
        let _ = writeln!(out, "#pragma cob header14 {}", c.unknown_0x14);
    }
    for snd in &c.sounds {
        let _ = writeln!(out, "#pragma cob sound \"{snd}\"");
    }
    if !c.trailing.is_empty() {
        let hex: String = c.trailing.iter().map(|b| format!("{b:02x}")).collect();
        let _ = writeln!(out, "#pragma cob trailing 0x{hex}");
    }
    for p in &ports {
        if let Some(n) = PORTS.get((*p as usize).wrapping_sub(1)) {
            let _ = writeln!(out, "#define {n} {p}");
        }
    }
    out.push('\n');
    if !c.pieces.is_empty() {
        let _ = writeln!(out, "piece {};\n", c.pieces.join(", "));
    }
    if c.static_vars > 0 {
        let v: Vec<String> = (0..c.static_vars.min(65_536))
            .map(|k| format!("static{k}"))
            .collect();
        let _ = writeln!(out, "static-var {};\n", v.join(", "));
    }
    out.push_str(&body);
    out
}

fn raw_words(c: &Cob, range: std::ops::Range<usize>) -> String {
    let start = range.start;
    let words = c.code.get(range.clone()).unwrap_or(&[]);
    let mut parts = Vec::with_capacity(words.len());
    let mut k = 0;
    while k < words.len() {
        match cob::decode(words, k) {
            Some(ins) => {
                parts.push(format!("0x{:08x}", words[k]));
                let is_jump = ins.op.value == op::JUMP || ins.op.value == op::JUMP_IF_FALSE;
                for a in ins.operands() {
                    if is_jump && (*a as usize) >= start {
                        parts.push(format!("@{}", *a as usize - start));
                    } else {
                        parts.push(a.to_string());
                    }
                }
                k += ins.len();
            }
            None => {
                parts.push(format!("0x{:08x}", words[k]));
                k += 1;
            }
        }
    }
    let mut s = String::new();
    for chunk in parts.chunks(12) {
        let _ = writeln!(s, "\t__cob({});", chunk.join(", "));
    }
    s
}

/// An expression on the simulated stack: its text, precedence and first code word.
#[derive(Clone)]
struct E {
    text: String,
    prec: u8,
    start: usize,
    /// A `get` (may stand alone as a statement).
    is_get: bool,
    /// The constant it is, if it is one.
    constant: Option<i32>,
}

const ATOM: u8 = 20;

/// Block nesting the decompiler follows.
const MAX_DEPTH: usize = 40;

struct Script<'a> {
    c: &'a Cob,
    mode: Mode,
    range: std::ops::Range<usize>,
    ports: &'a mut BTreeSet<u32>,
    locals: usize,
    params: usize,
    steps: usize,
}

impl<'a> Script<'a> {
    fn new(
        c: &'a Cob,
        mode: Mode,
        range: std::ops::Range<usize>,
        ports: &'a mut BTreeSet<u32>,
    ) -> Self {
        Script {
            c,
            mode,
            range,
            ports,
            locals: 0,
            params: 0,
            steps: 0,
        }
    }

    fn code(&self) -> &[u32] {
        &self.c.code
    }

    /// Parameters and the body's lines, or `None` when the code has a shape BOS cannot
    /// give.
    fn run(mut self) -> Option<(usize, Vec<String>)> {
        let mut at = self.range.start;
        let end = self.range.end;
        // Leading CREATE_LOCAL_VARs are the parameters (except TAK's `CREATE_LOCAL_VAR;
        // RETURN`, a bare return).
        while at < end && self.code().get(at) == Some(&op::CREATE_LOCAL_VAR) {
            if self.mode == Mode::Tak && self.code().get(at + 1) == Some(&op::RETURN) {
                break;
            }
            self.params += 1;
            at += 1;
        }
        self.locals = self.params;
        let mut lines = Vec::new();
        self.block(at, end, 1, &mut lines)?;
        Some((self.params, lines))
    }

    fn local(&self, n: u32) -> String {
        if (n as usize) < self.params {
            format!("arg{n}")
        } else {
            format!("local{n}")
        }
    }

    fn piece(&self, n: u32) -> Option<String> {
        self.c.pieces.get(n as usize).cloned()
    }

    /// A sound name the source can quote.
    fn sound(&self, k: u32) -> Option<String> {
        self.c
            .sounds
            .get(k as usize)
            .filter(|s| !s.contains(['"', '\n', '\r']))
            .cloned()
    }

    fn axis(n: u32) -> Option<&'static str> {
        ["x-axis", "y-axis", "z-axis"].get(n as usize).copied()
    }

    fn port(&mut self, e: &E) -> String {
        match e.constant {
            Some(v) if (1..=20).contains(&v) => {
                self.ports.insert(v as u32);
                PORTS[(v - 1) as usize].to_string()
            }
            _ => atom(e),
        }
    }

    /// Decompiles the words `[from, to)` into `out`; the stack must be empty at the end.
    fn block(&mut self, from: usize, to: usize, depth: usize, out: &mut Vec<String>) -> Option<()> {
        // Deeper than the compiler nests (and the stack allows): verbatim words instead.
        if depth > MAX_DEPTH {
            return None;
        }
        let ind = "\t".repeat(depth);
        let mut st: Vec<E> = Vec::new();
        let mut at = from;
        while at < to {
            self.steps += 1;
            if self.steps > 1_000_000 {
                return None;
            }
            let ins = cob::decode(self.code(), at)?;
            let next = at + ins.len();
            if next > to {
                return None;
            }
            let a = ins.args;
            let v = ins.op.value;
            let mut stmt: Option<String> = None;
            match v {
                op::PUSH_CONSTANT => st.push(E {
                    text: (a[0] as i32).to_string(),
                    prec: if (a[0] as i32) < 0 { 11 } else { ATOM },
                    start: at,
                    is_get: false,
                    constant: Some(a[0] as i32),
                }),
                op::PUSH_LOCAL_VAR => st.push(E {
                    text: self.local(a[0]),
                    prec: ATOM,
                    start: at,
                    is_get: false,
                    constant: None,
                }),
                op::PUSH_STATIC => st.push(E {
                    text: format!("static{}", a[0]),
                    prec: ATOM,
                    start: at,
                    is_get: false,
                    constant: None,
                }),
                op::ADD
                | op::SUB
                | op::MUL
                | op::DIV
                | op::MOD
                | op::BITWISE_AND
                | op::BITWISE_OR
                | op::BITWISE_XOR
                | op::LESS
                | op::LESS_EQUAL
                | op::GREATER
                | op::GREATER_EQUAL
                | op::EQUAL
                | op::NOT_EQUAL
                | op::AND
                | op::OR
                | op::XOR => {
                    let r = st.pop()?;
                    let l = st.pop()?;
                    let (sym, prec) = binop(v)?;
                    let lt = if l.prec < prec {
                        format!("({})", l.text)
                    } else {
                        l.text.clone()
                    };
                    let rt = if r.prec <= prec {
                        format!("({})", r.text)
                    } else {
                        r.text.clone()
                    };
                    st.push(E {
                        text: format!("{lt} {sym} {rt}"),
                        prec,
                        start: l.start,
                        is_get: false,
                        constant: None,
                    });
                }
                op::NOT | op::BITWISE_NOT => {
                    let x = st.pop()?;
                    let sym = if v == op::NOT { "!" } else { "~" };
                    st.push(E {
                        text: format!("{sym}{}", atom(&x)),
                        prec: 12,
                        start: x.start,
                        is_get: false,
                        constant: None,
                    });
                }
                op::RAND => {
                    let h = st.pop()?;
                    let l = st.pop()?;
                    st.push(E {
                        text: format!("rand({}, {})", l.text, h.text),
                        prec: ATOM,
                        start: l.start,
                        is_get: false,
                        constant: None,
                    });
                }
                op::GET_UNIT_VALUE => {
                    let p = st.pop()?;
                    let name = self.port(&p);
                    st.push(E {
                        text: format!("get {name}"),
                        prec: 13,
                        start: p.start,
                        is_get: true,
                        constant: None,
                    });
                }
                op::GET => {
                    let mut args = Vec::new();
                    for _ in 0..4 {
                        args.push(st.pop()?);
                    }
                    args.reverse();
                    let p = st.pop()?;
                    while args
                        .last()
                        .is_some_and(|x| x.constant == Some(0) && x.text == "0")
                    {
                        args.pop();
                    }
                    let name = self.port(&p);
                    let list: Vec<String> = args.iter().map(|x| x.text.clone()).collect();
                    st.push(E {
                        text: format!("get {name}({})", list.join(", ")),
                        prec: 13,
                        start: p.start,
                        is_get: true,
                        constant: None,
                    });
                }
                op::CREATE_LOCAL_VAR => {
                    if !st.is_empty() {
                        return None;
                    }
                    if self.mode == Mode::Tak
                        && self.code().get(next) == Some(&op::RETURN)
                        && next < to
                    {
                        out.push(format!("{ind}return;"));
                        at = next + 1;
                        continue;
                    }
                    stmt = Some(format!("var {};", self.local(self.locals as u32)));
                    self.locals += 1;
                }
                op::POP_LOCAL_VAR | op::POP_STATIC => {
                    let x = st.pop()?;
                    let name = if v == op::POP_LOCAL_VAR {
                        if a[0] as usize >= self.locals {
                            return None;
                        }
                        self.local(a[0])
                    } else {
                        if a[0] >= self.c.static_vars {
                            return None;
                        }
                        format!("static{}", a[0])
                    };
                    stmt = Some(format!("{name} = {};", x.text));
                }
                op::POP_STACK => {
                    let x = st.pop()?;
                    if !x.is_get {
                        return None;
                    }
                    stmt = Some(format!("{};", x.text));
                }
                op::SLEEP | op::SIGNAL | op::SET_SIGNAL_MASK | op::DROP_UNIT => {
                    let x = st.pop()?;
                    let kw = match v {
                        op::SLEEP => "sleep",
                        op::SIGNAL => "signal",
                        op::SET_SIGNAL_MASK => "set-signal-mask",
                        _ => "drop-unit",
                    };
                    stmt = Some(format!("{kw} {};", x.text));
                }
                op::MOVE | op::TURN => {
                    let t = st.pop()?;
                    let s = st.pop()?;
                    let kw = if v == op::MOVE { "move" } else { "turn" };
                    stmt = Some(format!(
                        "{kw} {} to {} {} speed {};",
                        self.piece(a[0])?,
                        Self::axis(a[1])?,
                        t.text,
                        s.text
                    ));
                }
                op::MOVE_NOW | op::TURN_NOW => {
                    let t = st.pop()?;
                    let kw = if v == op::MOVE_NOW { "move" } else { "turn" };
                    stmt = Some(format!(
                        "{kw} {} to {} {} now;",
                        self.piece(a[0])?,
                        Self::axis(a[1])?,
                        t.text
                    ));
                }
                op::SPIN => {
                    let s = st.pop()?;
                    let acc = st.pop()?;
                    stmt = Some(format!(
                        "spin {} around {} speed {} accelerate {};",
                        self.piece(a[0])?,
                        Self::axis(a[1])?,
                        s.text,
                        acc.text
                    ));
                }
                op::STOP_SPIN => {
                    let d = st.pop()?;
                    stmt = Some(format!(
                        "stop-spin {} around {} decelerate {};",
                        self.piece(a[0])?,
                        Self::axis(a[1])?,
                        d.text
                    ));
                }
                op::SHOW
                | op::HIDE
                | op::CACHE
                | op::DONT_CACHE
                | op::SHADE
                | op::DONT_SHADE
                | op::DONT_SHADOW => {
                    let kw = match v {
                        op::SHOW => "show",
                        op::HIDE => "hide",
                        op::CACHE => "cache",
                        op::DONT_CACHE => "dont-cache",
                        op::SHADE => "shade",
                        op::DONT_SHADE => "dont-shade",
                        _ => "dont-shadow",
                    };
                    stmt = Some(format!("{kw} {};", self.piece(a[0])?));
                }
                op::EMIT_SFX => {
                    let x = st.pop()?;
                    stmt = Some(format!("emit-sfx {} from {};", x.text, self.piece(a[0])?));
                }
                op::EXPLODE => {
                    let x = st.pop()?;
                    stmt = Some(format!("explode {} type {};", self.piece(a[0])?, x.text));
                }
                op::ATTACH_UNIT => {
                    let zero = st.pop()?;
                    let p = st.pop()?;
                    let u = st.pop()?;
                    if zero.constant != Some(0) || zero.text != "0" {
                        return None;
                    }
                    let piece = match p.constant {
                        Some(k) if k >= 0 && p.text == k.to_string() => {
                            self.piece(k as u32).unwrap_or(p.text)
                        }
                        _ => p.text,
                    };
                    stmt = Some(format!("attach-unit {} to {piece};", u.text));
                }
                op::WAIT_FOR_TURN | op::WAIT_FOR_MOVE => {
                    let (kw, prep) = if v == op::WAIT_FOR_TURN {
                        ("wait-for-turn", "around")
                    } else {
                        ("wait-for-move", "along")
                    };
                    stmt = Some(format!(
                        "{kw} {} {prep} {};",
                        self.piece(a[0])?,
                        Self::axis(a[1])?
                    ));
                }
                op::START_SCRIPT | op::CALL_SCRIPT => {
                    let n = a[1] as usize;
                    if n > st.len() {
                        return None;
                    }
                    let args: Vec<String> = st
                        .split_off(st.len() - n)
                        .into_iter()
                        .map(|x| x.text)
                        .collect();
                    let name = &self.c.scripts.get(a[0] as usize)?.name;
                    // A call names a script by name: the first of that name is the one compiled.
                    if self.c.script_index(name) != Some(a[0] as usize) {
                        return None;
                    }
                    let kw = if v == op::START_SCRIPT {
                        "start-script"
                    } else {
                        "call-script"
                    };
                    stmt = Some(format!("{kw} {name}({});", args.join(", ")));
                }
                op::SET_VALUE => {
                    let x = st.pop()?;
                    let p = st.pop()?;
                    let name = self.port(&p);
                    stmt = Some(format!("set {name} to {};", x.text));
                }
                op::PLAY_SOUND => {
                    // Leaves a value: the statement form is followed by POP_STACK.
                    let x = st.pop()?;
                    let name = self.sound(a[0])?;
                    let text = format!("play-sound(\"{name}\", {})", x.text);
                    st.push(E {
                        text,
                        prec: ATOM,
                        start: x.start,
                        is_get: true,
                        constant: None,
                    });
                }
                op::MISSION_COMMAND => {
                    let n = a[1] as usize;
                    if n > st.len() {
                        return None;
                    }
                    let args = st.split_off(st.len() - n);
                    let name = self.sound(a[0])?;
                    let start = args.first().map_or(at, |x| x.start);
                    let mut text = format!("Mission-Command(\"{name}\"");
                    for x in &args {
                        text.push_str(", ");
                        text.push_str(&x.text);
                    }
                    text.push(')');
                    st.push(E {
                        text,
                        prec: ATOM,
                        start,
                        is_get: true,
                        constant: None,
                    });
                }
                op::RETURN => {
                    let x = st.pop()?;
                    stmt = Some(format!("return ({});", x.text));
                }
                op::JUMP_IF_FALSE => {
                    let cond = st.pop()?;
                    if !st.is_empty() {
                        return None;
                    }
                    let t = a[0] as usize;
                    if t <= next || t > to {
                        return None;
                    }
                    let before = self.jump_before(next, t);
                    match before {
                        Some(u) if u == cond.start => {
                            out.push(format!("{ind}while ({})\n{ind}{{", cond.text));
                            self.block(next, t - 2, depth + 1, out)?;
                            out.push(format!("{ind}}}"));
                            at = t;
                        }
                        Some(u) if u >= t && u <= to => {
                            out.push(format!("{ind}if ({})\n{ind}{{", cond.text));
                            self.block(next, t - 2, depth + 1, out)?;
                            out.push(format!("{ind}}}\n{ind}else\n{ind}{{"));
                            self.block(t, u, depth + 1, out)?;
                            out.push(format!("{ind}}}"));
                            at = u;
                        }
                        _ => {
                            out.push(format!("{ind}if ({})\n{ind}{{", cond.text));
                            self.block(next, t, depth + 1, out)?;
                            out.push(format!("{ind}}}"));
                            at = t;
                        }
                    }
                    continue;
                }
                _ => return None,
            }
            if let Some(s) = stmt {
                if !st.is_empty() {
                    return None;
                }
                out.push(format!("{ind}{s}"));
            }
            at = next;
        }
        if st.is_empty() {
            Some(())
        } else {
            None
        }
    }

    /// The target of a `JUMP` that is the last instruction of `[from, to)`, if there is one.
    fn jump_before(&self, from: usize, to: usize) -> Option<usize> {
        if to < from + 2 {
            return None;
        }
        // Walk from `from` so the word at `to - 2` is known to start an instruction.
        let mut k = from;
        while k < to {
            let ins = cob::decode(self.code(), k)?;
            if k + ins.len() == to {
                return (ins.op.value == op::JUMP).then_some(ins.args[0] as usize);
            }
            k += ins.len();
        }
        None
    }
}

fn atom(e: &E) -> String {
    if e.prec >= ATOM {
        e.text.clone()
    } else {
        format!("({})", e.text)
    }
}

/// Source operator and precedence (as the parser binds them) of a binary opcode.
fn binop(v: u32) -> Option<(&'static str, u8)> {
    Some(match v {
        op::OR => ("||", 1),
        op::XOR => ("^^", 2),
        op::AND => ("&&", 3),
        op::BITWISE_OR => ("|", 4),
        op::BITWISE_XOR => ("^", 5),
        op::BITWISE_AND => ("&", 6),
        op::EQUAL => ("==", 7),
        op::NOT_EQUAL => ("!=", 7),
        op::LESS => ("<", 8),
        op::LESS_EQUAL => ("<=", 8),
        op::GREATER => (">", 8),
        op::GREATER_EQUAL => (">=", 8),
        op::ADD => ("+", 9),
        op::SUB => ("-", 9),
        op::MUL => ("*", 10),
        op::DIV => ("/", 10),
        op::MOD => ("%", 10),
        _ => return None,
    })
}
