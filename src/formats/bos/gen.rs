//! Code generation: [`Script`] → COB instructions, following the layout Scriptor gives
//! (see docs/SCRIPTS.md for what Cavedog's compiler does differently).

use std::collections::HashMap;

use super::ast::*;
use super::opcode as op;
use super::{Error, Limits, Mode, Options, Pos};
use crate::formats::cob::{self, Cob};

/// Compiles a parsed script.
pub fn generate(s: &Script, opts: &Options, limits: &Limits) -> Result<Cob, Error> {
    generate_with(s, opts, limits, Vec::new())
}

/// [`generate`] with the sound-name table starting as `sounds` (names used and not listed
/// are appended in order of first use).
pub fn generate_with(
    s: &Script,
    opts: &Options,
    limits: &Limits,
    sounds: Vec<String>,
) -> Result<Cob, Error> {
    let mode = opts.mode;
    let mut pieces: HashMap<String, u32> = HashMap::new();
    for (k, (n, p)) in s.pieces.iter().enumerate() {
        if pieces.insert(n.to_ascii_lowercase(), k as u32).is_some() {
            return Err(Error::new(*p, format!("piece {n} is declared twice")));
        }
    }
    let mut statics: HashMap<String, u32> = HashMap::new();
    for (k, (n, p)) in s.statics.iter().enumerate() {
        if statics.insert(n.to_ascii_lowercase(), k as u32).is_some() {
            return Err(Error::new(*p, format!("static-var {n} is declared twice")));
        }
    }
    let mut funcs: HashMap<String, (u32, usize)> = HashMap::new();
    for (k, f) in s.funcs.iter().enumerate() {
        if funcs
            .insert(f.name.to_ascii_lowercase(), (k as u32, f.params.len()))
            .is_some()
        {
            return Err(Error::new(
                f.pos,
                format!("function {} is defined twice", f.name),
            ));
        }
    }
    let mut g = Gen {
        code: Vec::new(),
        pieces,
        statics,
        funcs,
        locals: Vec::new(),
        mode,
        max_words: limits.max_code_words,
        sounds,
        base: 0,
        cavedog: opts.cavedog,
        last_op: 0,
        breaks: Vec::new(),
    };
    let mut scripts = Vec::with_capacity(s.funcs.len());
    for f in &s.funcs {
        scripts.push(cob::Script {
            name: f.name.clone(),
            start: g.code.len() as u32,
        });
        g.func(f)?;
    }
    let version = if mode == Mode::Tak {
        cob::VERSION_TAK
    } else {
        cob::VERSION_TA
    };
    let mut out = Cob::new(
        version,
        s.pieces.iter().map(|(n, _)| n.clone()).collect(),
        s.statics.len() as u32,
    );
    out.code = g.code;
    out.scripts = scripts;
    out.sounds = g.sounds;
    Ok(out)
}

struct Gen {
    code: Vec<u32>,
    pieces: HashMap<String, u32>,
    statics: HashMap<String, u32>,
    funcs: HashMap<String, (u32, usize)>,
    /// Local names of the function being compiled, lower case, in slot order.
    locals: Vec<String>,
    mode: Mode,
    max_words: usize,
    sounds: Vec<String>,
    /// First word of the function being compiled.
    base: u32,
    /// Cavedog's compiler: an empty function gets `return 0`.
    cavedog: bool,
    /// The first word last emitted (an opcode, but for verbatim words).
    last_op: u32,
    /// Per enclosing loop, innermost last: the jumps of its `break`s, patched to its end.
    breaks: Vec<Vec<usize>>,
}

impl Gen {
    fn emit(&mut self, pos: Pos, words: &[u32]) -> Result<(), Error> {
        if let Some(&w) = words.first() {
            self.last_op = w;
        }
        if self.code.len() + words.len() > self.max_words {
            return Err(Error::new(
                pos,
                format!("the compiled code exceeds {} words", self.max_words),
            ));
        }
        self.code.extend_from_slice(words);
        Ok(())
    }

    /// Emits a jump with a target patched later; returns the operand's index.
    fn jump(&mut self, pos: Pos, opcode: u32) -> Result<usize, Error> {
        self.emit(pos, &[opcode, 0])?;
        Ok(self.code.len() - 1)
    }

    /// Ends the innermost loop: its exit jump `jf` and its `break`s go here.
    fn loop_end(&mut self, jf: usize) {
        let h = self.here();
        self.patch(jf, h);
        for j in self.breaks.pop().unwrap_or_default() {
            self.patch(j, h);
        }
    }

    fn here(&self) -> u32 {
        self.code.len() as u32
    }

    fn patch(&mut self, at: usize, target: u32) {
        if let Some(w) = self.code.get_mut(at) {
            *w = target;
        }
    }

    fn func(&mut self, f: &Func) -> Result<(), Error> {
        self.locals = f
            .params
            .iter()
            .map(|(n, _)| n.to_ascii_lowercase())
            .collect();
        self.base = self.here();
        // Scriptor gives a function with neither parameters nor statements no code at all.
        let empty = f.body.iter().all(|s| matches!(s.kind, StmtKind::Empty));
        if empty && f.params.is_empty() && !self.cavedog {
            return Ok(());
        }
        // Verbatim code is the whole function.
        if f.params.is_empty() && f.body.iter().any(|s| matches!(s.kind, StmtKind::Raw(_))) {
            return self.block(&f.body);
        }
        for _ in &f.params {
            self.emit(f.pos, &[op::CREATE_LOCAL_VAR])?;
        }
        // The compilers add `return` unless the code already ends with one (even one inside a
        // trailing `if`, which then falls through to the next script, as Cavedog's do).
        self.last_op = 0;
        let body_start = self.here();
        self.block(&f.body)?;
        if self.last_op != op::RETURN || self.here() == body_start {
            self.ret_default(f.pos)?;
        }
        Ok(())
    }

    fn ret_default(&mut self, pos: Pos) -> Result<(), Error> {
        match self.mode {
            Mode::Ta => self.emit(pos, &[op::PUSH_CONSTANT, 0])?,
            Mode::Tak => self.emit(pos, &[op::CREATE_LOCAL_VAR])?,
        }
        self.emit(pos, &[op::RETURN])
    }

    fn block(&mut self, b: &[Stmt]) -> Result<(), Error> {
        for s in b {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn piece(&self, p: &PieceRef) -> Result<u32, Error> {
        self.pieces
            .get(&p.name.to_ascii_lowercase())
            .copied()
            .ok_or_else(|| {
                Error::new(
                    p.pos,
                    format!("unknown piece {} (not in the piece list)", p.name),
                )
            })
    }

    fn store(&mut self, name: &str, pos: Pos) -> Result<(), Error> {
        let l = name.to_ascii_lowercase();
        if let Some(k) = self.locals.iter().position(|n| *n == l) {
            self.emit(pos, &[op::POP_LOCAL_VAR, k as u32])
        } else if let Some(&k) = self.statics.get(&l) {
            self.emit(pos, &[op::POP_STATIC, k])
        } else {
            Err(Error::new(
                pos,
                format!("unknown variable {name} (declare it with var or static-var)"),
            ))
        }
    }

    fn call(&mut self, pos: Pos, opcode: u32, name: &str, args: &[Expr]) -> Result<(), Error> {
        let (idx, argc) = self
            .funcs
            .get(&name.to_ascii_lowercase())
            .copied()
            .ok_or_else(|| Error::new(pos, format!("unknown function {name}")))?;
        let _ = argc;
        for a in args {
            self.expr(a)?;
        }
        self.emit(pos, &[opcode, idx, args.len() as u32])
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), Error> {
        let pos = s.pos;
        match &s.kind {
            StmtKind::Empty => Ok(()),
            StmtKind::Var(names) => {
                for (n, p) in names {
                    let l = n.to_ascii_lowercase();
                    if self.locals.contains(&l) {
                        return Err(Error::new(
                            *p,
                            format!("local variable {n} is declared twice"),
                        ));
                    }
                    self.locals.push(l);
                    self.emit(*p, &[op::CREATE_LOCAL_VAR])?;
                }
                Ok(())
            }
            StmtKind::Assign(n, e) => {
                self.expr(e)?;
                self.store(n, pos)
            }
            StmtKind::Step(n, up) => {
                let e = Expr {
                    kind: ExprKind::Name(n.clone()),
                    pos,
                };
                self.expr(&e)?;
                self.emit(
                    pos,
                    &[op::PUSH_CONSTANT, 1, if *up { op::ADD } else { op::SUB }],
                )?;
                self.store(n, pos)
            }
            StmtKind::If(c, t, e) => {
                self.expr(c)?;
                let jf = self.jump(pos, op::JUMP_IF_FALSE)?;
                self.block(t)?;
                match e {
                    None => {
                        let h = self.here();
                        self.patch(jf, h);
                    }
                    Some(e) => {
                        let j = self.jump(pos, op::JUMP)?;
                        let h = self.here();
                        self.patch(jf, h);
                        self.block(e)?;
                        let h = self.here();
                        self.patch(j, h);
                    }
                }
                Ok(())
            }
            StmtKind::While(c, b) => {
                let top = self.here();
                self.expr(c)?;
                let jf = self.jump(pos, op::JUMP_IF_FALSE)?;
                self.breaks.push(Vec::new());
                self.block(b)?;
                self.emit(pos, &[op::JUMP, top])?;
                self.loop_end(jf);
                Ok(())
            }
            StmtKind::Break => {
                if self.breaks.is_empty() {
                    return Err(Error::new(pos, "break outside a while or for loop".into()));
                }
                let j = self.jump(pos, op::JUMP)?;
                if let Some(l) = self.breaks.last_mut() {
                    l.push(j);
                }
                Ok(())
            }
            StmtKind::For(init, c, step, b) => {
                if let Some(i) = init {
                    self.stmt(i)?;
                }
                let top = self.here();
                self.expr(c)?;
                let jf = self.jump(pos, op::JUMP_IF_FALSE)?;
                self.breaks.push(Vec::new());
                self.block(b)?;
                if let Some(st) = step {
                    self.stmt(st)?;
                }
                self.emit(pos, &[op::JUMP, top])?;
                self.loop_end(jf);
                Ok(())
            }
            StmtKind::Block(b) => self.block(b),
            StmtKind::Return(e) => match e {
                Some(e) => {
                    self.expr(e)?;
                    self.emit(pos, &[op::RETURN])
                }
                // `return;` returns an uninitialised local, `CREATE_LOCAL_VAR; RETURN`, as
                // Scriptor compiles it (TA: Escalation's CORVALK) and TA: Kingdoms does;
                // Cavedog's compiler is taken to push 0 (no shipped source says).
                None if self.cavedog => self.ret_default(pos),
                None => {
                    self.emit(pos, &[op::CREATE_LOCAL_VAR])?;
                    self.emit(pos, &[op::RETURN])
                }
            },
            StmtKind::Sleep(e) => self.unary_op(e, op::SLEEP),
            StmtKind::Signal(e) => self.unary_op(e, op::SIGNAL),
            StmtKind::SetSignalMask(e) => self.unary_op(e, op::SET_SIGNAL_MASK),
            StmtKind::Move(p, a, t, sp) | StmtKind::Turn(p, a, t, sp) => {
                let is_move = matches!(s.kind, StmtKind::Move(..));
                let pc = self.piece(p)?;
                match sp {
                    Some(sp) => {
                        self.expr(sp)?;
                        self.expr(t)?;
                        self.emit(
                            pos,
                            &[if is_move { op::MOVE } else { op::TURN }, pc, *a as u32],
                        )
                    }
                    None => {
                        self.expr(t)?;
                        self.emit(
                            pos,
                            &[
                                if is_move { op::MOVE_NOW } else { op::TURN_NOW },
                                pc,
                                *a as u32,
                            ],
                        )
                    }
                }
            }
            StmtKind::Spin(p, a, sp, acc) => {
                let pc = self.piece(p)?;
                match acc {
                    Some(acc) => self.expr(acc)?,
                    None => self.emit(pos, &[op::PUSH_CONSTANT, 0])?,
                }
                self.expr(sp)?;
                self.emit(pos, &[op::SPIN, pc, *a as u32])
            }
            StmtKind::StopSpin(p, a, dec) => {
                let pc = self.piece(p)?;
                match dec {
                    Some(d) => self.expr(d)?,
                    None => self.emit(pos, &[op::PUSH_CONSTANT, 0])?,
                }
                self.emit(pos, &[op::STOP_SPIN, pc, *a as u32])
            }
            StmtKind::PieceOp(code, p) => {
                let pc = self.piece(p)?;
                self.emit(pos, &[*code, pc])
            }
            StmtKind::EmitSfx(e, p) => {
                let pc = self.piece(p)?;
                self.expr(e)?;
                self.emit(pos, &[op::EMIT_SFX, pc])
            }
            StmtKind::Explode(p, e) => {
                let pc = self.piece(p)?;
                self.expr(e)?;
                self.emit(pos, &[op::EXPLODE, pc])
            }
            StmtKind::WaitForTurn(p, a) => {
                let pc = self.piece(p)?;
                self.emit(pos, &[op::WAIT_FOR_TURN, pc, *a as u32])
            }
            StmtKind::WaitForMove(p, a) => {
                let pc = self.piece(p)?;
                self.emit(pos, &[op::WAIT_FOR_MOVE, pc, *a as u32])
            }
            StmtKind::StartScript(n, a) => self.call(pos, op::START_SCRIPT, n, a),
            StmtKind::CallScript(n, a) => self.call(pos, op::CALL_SCRIPT, n, a),
            StmtKind::Set(port, v) => {
                self.expr(port)?;
                self.expr(v)?;
                self.emit(pos, &[op::SET_VALUE])
            }
            StmtKind::AttachUnit(u, p) => {
                self.expr(u)?;
                self.expr(p)?;
                self.emit(pos, &[op::PUSH_CONSTANT, 0])?;
                self.emit(pos, &[op::ATTACH_UNIT])
            }
            StmtKind::DropUnit(u) => self.unary_op(u, op::DROP_UNIT),
            StmtKind::PlaySound(name, v) => {
                // PLAY_SOUND leaves a value, which the statement drops.
                let k = self.sound(name);
                self.expr(v)?;
                self.emit(pos, &[op::PLAY_SOUND, k])?;
                self.emit(pos, &[op::POP_STACK])
            }
            StmtKind::Raw(words) => {
                for w in words {
                    let v = match *w {
                        RawWord::Word(v) => v,
                        RawWord::Rel(v) => self.base.checked_add(v).ok_or_else(|| {
                            Error::new(pos, "code word @offset past 4 Gi words".into())
                        })?,
                    };
                    self.emit(pos, &[v])?;
                }
                Ok(())
            }
            StmtKind::Expr(e) => {
                self.expr(e)?;
                self.emit(pos, &[op::POP_STACK])
            }
        }
    }

    fn sound(&mut self, name: &str) -> u32 {
        match self.sounds.iter().position(|s| s == name) {
            Some(k) => k as u32,
            None => {
                self.sounds.push(name.to_string());
                self.sounds.len() as u32 - 1
            }
        }
    }

    fn unary_op(&mut self, e: &Expr, code: u32) -> Result<(), Error> {
        self.expr(e)?;
        self.emit(e.pos, &[code])
    }

    fn expr(&mut self, e: &Expr) -> Result<(), Error> {
        let pos = e.pos;
        match &e.kind {
            ExprKind::Const(v) => self.emit(pos, &[op::PUSH_CONSTANT, *v as u32]),
            ExprKind::Name(n) => {
                let l = n.to_ascii_lowercase();
                if let Some(k) = self.locals.iter().position(|x| *x == l) {
                    self.emit(pos, &[op::PUSH_LOCAL_VAR, k as u32])
                } else if let Some(&k) = self.statics.get(&l) {
                    self.emit(pos, &[op::PUSH_STATIC, k])
                } else if let Some(&k) = self.pieces.get(&l) {
                    self.emit(pos, &[op::PUSH_CONSTANT, k])
                } else {
                    Err(Error::new(
                        pos,
                        format!("unknown name {n} (not a variable, a piece or a #define)"),
                    ))
                }
            }
            ExprKind::Bin(o, l, r) => {
                self.expr(l)?;
                self.expr(r)?;
                let code = match o {
                    BinOp::Add => op::ADD,
                    BinOp::Sub => op::SUB,
                    BinOp::Mul => op::MUL,
                    BinOp::Div => op::DIV,
                    BinOp::Mod => op::MOD,
                    BinOp::BitAnd => op::BITWISE_AND,
                    BinOp::BitOr => op::BITWISE_OR,
                    BinOp::BitXor => op::BITWISE_XOR,
                    BinOp::Lt => op::LESS,
                    BinOp::Le => op::LESS_EQUAL,
                    BinOp::Gt => op::GREATER,
                    BinOp::Ge => op::GREATER_EQUAL,
                    BinOp::Eq => op::EQUAL,
                    BinOp::Ne => op::NOT_EQUAL,
                    BinOp::And => op::AND,
                    BinOp::Or => op::OR,
                    BinOp::Xor => op::XOR,
                };
                self.emit(pos, &[code])
            }
            ExprKind::Neg(x) => {
                self.emit(pos, &[op::PUSH_CONSTANT, 0])?;
                self.expr(x)?;
                self.emit(pos, &[op::SUB])
            }
            ExprKind::Not(x) => self.unary_op(x, op::NOT),
            ExprKind::BitNot(x) => self.unary_op(x, op::BITWISE_NOT),
            ExprKind::Get(port, args) => {
                self.expr(port)?;
                match args {
                    None => self.emit(pos, &[op::GET_UNIT_VALUE]),
                    Some(a) => {
                        for x in a {
                            self.expr(x)?;
                        }
                        for _ in a.len()..4 {
                            self.emit(pos, &[op::PUSH_CONSTANT, 0])?;
                        }
                        self.emit(pos, &[op::GET])
                    }
                }
            }
            ExprKind::Rand(lo, hi) => {
                self.expr(lo)?;
                self.expr(hi)?;
                self.emit(pos, &[op::RAND])
            }
            ExprKind::Mission(name, args) => {
                let k = self.sound(name);
                for x in args {
                    self.expr(x)?;
                }
                self.emit(pos, &[op::MISSION_COMMAND, k, args.len() as u32])
            }
        }
    }
}
