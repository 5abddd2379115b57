//! `lint`: what compiles but breaks units in game. Works on the syntax tree after a
//! successful compile (unknown pieces, variables and scripts are compile errors already).

use std::collections::{HashMap, HashSet};

use super::ast::*;
use super::{gen, parse, pre, Error, Includes, Limits, Options, Pos};

/// Names the engine calls itself (prefixes end with `*`).
const ENTRY_POINTS: [&str; 40] = [
    "Create",
    "Killed",
    "Activate",
    "Deactivate",
    "StartMoving",
    "StopMoving",
    "SetSpeed",
    "SetDirection",
    "MoveRate*",
    "Aim*",
    "Query*",
    "Fire*",
    "Shot*",
    "EndBurst*",
    "Lock*",
    "RockUnit",
    "HitByWeapon*",
    "StartBuilding",
    "StopBuilding",
    "SweetSpot",
    "BeginTransport",
    "EndTransport",
    "TransportPickup",
    "TransportDrop",
    "Go",
    "Stop",
    "SetMaxReloadTime",
    "Falling",
    "Landed",
    "Demo",
    "TargetCleared",
    "Idle*",
    "StartBuild*",
    "StopBuild*",
    "RequestState",
    "OpenYard",
    "CloseYard",
    "Open*",
    "Close*",
    "Resurrect*",
];

fn is_entry(name: &str) -> bool {
    ENTRY_POINTS.iter().any(|e| match e.strip_suffix('*') {
        Some(p) => name.len() >= p.len() && name[..p.len()].eq_ignore_ascii_case(p),
        None => e.eq_ignore_ascii_case(name),
    })
}

/// Compiles `src` and returns its warnings as `file:line:col: warning: …` lines, or the
/// compile error.
pub fn lint(
    name: &str,
    src: &[u8],
    includes: &dyn Includes,
    opts: &Options,
    limits: &Limits,
) -> Result<Vec<String>, Error> {
    let out = pre::preprocess(name, src, includes, limits)?;
    let ast = parse::parse(&out.tokens, limits, opts.angle, opts.right_assoc)
        .map_err(|e| e.named(&out.files))?;
    gen::generate(&ast, opts, limits).map_err(|e| e.named(&out.files))?;
    let mut l = Lint {
        files: &out.files,
        warnings: Vec::new(),
        set: HashSet::new(),
        read: HashSet::new(),
        called: HashSet::new(),
        signals: Vec::new(),
        masks: false,
    };
    let params: HashMap<String, usize> = ast
        .funcs
        .iter()
        .map(|f| (f.name.to_ascii_lowercase(), f.params.len()))
        .collect();
    for f in &ast.funcs {
        l.block(&f.body, &params, 0);
    }
    for (n, p) in &ast.statics {
        let k = n.to_ascii_lowercase();
        if !l.set.contains(&k) {
            l.warn(*p, format!("static-var {n} is never set"));
        } else if !l.read.contains(&k) {
            l.warn(*p, format!("static-var {n} is set but never read"));
        }
    }
    if !l.masks {
        for p in l.signals.clone() {
            l.warn(
                p,
                "signal sent, but no script sets a signal mask: it stops nothing".into(),
            );
        }
    }
    for f in &ast.funcs {
        if !l.called.contains(&f.name.to_ascii_lowercase()) && !is_entry(&f.name) {
            l.warn(
                f.pos,
                format!(
                    "script {} is never called (and is no script the engine calls)",
                    f.name
                ),
            );
        }
    }
    Ok(l.warnings)
}

struct Lint<'a> {
    files: &'a [String],
    warnings: Vec<String>,
    set: HashSet<String>,
    read: HashSet<String>,
    called: HashSet<String>,
    signals: Vec<Pos>,
    masks: bool,
}

impl Lint<'_> {
    fn warn(&mut self, p: Pos, msg: String) {
        let file = self
            .files
            .get(p.file as usize)
            .map(String::as_str)
            .unwrap_or("?");
        self.warnings
            .push(format!("{file}:{}:{}: warning: {msg}", p.line, p.col));
    }

    fn block(&mut self, b: &[Stmt], params: &HashMap<String, usize>, depth: usize) {
        let mut returned = false;
        for s in b {
            if returned && !matches!(s.kind, StmtKind::Empty) {
                self.warn(s.pos, "unreachable: this statement follows a return".into());
                returned = false;
            }
            self.stmt(s, params, depth);
            if matches!(s.kind, StmtKind::Return(_)) {
                returned = true;
            }
        }
    }

    fn stmt(&mut self, s: &Stmt, params: &HashMap<String, usize>, depth: usize) {
        if depth > 256 {
            return;
        }
        match &s.kind {
            StmtKind::Assign(n, e) => {
                self.set.insert(n.to_ascii_lowercase());
                self.expr(e);
            }
            StmtKind::Step(n, _) => {
                self.set.insert(n.to_ascii_lowercase());
                self.read.insert(n.to_ascii_lowercase());
            }
            StmtKind::If(c, t, e) => {
                self.expr(c);
                self.block(t, params, depth + 1);
                if let Some(e) = e {
                    self.block(e, params, depth + 1);
                }
            }
            StmtKind::While(c, b) | StmtKind::For(_, c, _, b) => {
                if let StmtKind::For(Some(i), _, st, _) = &s.kind {
                    self.stmt(i, params, depth + 1);
                    if let Some(st) = st {
                        self.stmt(st, params, depth + 1);
                    }
                }
                self.expr(c);
                if matches!(c.kind, ExprKind::Const(v) if v != 0) && !waits(b, 0) {
                    self.warn(
                        s.pos,
                        "endless loop without sleep or wait: the game hangs here".into(),
                    );
                }
                self.block(b, params, depth + 1);
            }
            StmtKind::Block(b) => self.block(b, params, depth + 1),
            StmtKind::Signal(e) => {
                self.signals.push(s.pos);
                self.expr(e);
            }
            StmtKind::SetSignalMask(e) => {
                self.masks = true;
                self.expr(e);
            }
            StmtKind::StartScript(n, a) | StmtKind::CallScript(n, a) => {
                let k = n.to_ascii_lowercase();
                if let Some(&want) = params.get(&k) {
                    if want != a.len() {
                        self.warn(
                            s.pos,
                            format!("{n} takes {want} argument(s), called with {}", a.len()),
                        );
                    }
                }
                self.called.insert(k);
                a.iter().for_each(|x| self.expr(x));
            }
            StmtKind::Return(Some(e))
            | StmtKind::Sleep(e)
            | StmtKind::DropUnit(e)
            | StmtKind::Expr(e) => self.expr(e),
            StmtKind::Move(_, _, t, sp) | StmtKind::Turn(_, _, t, sp) => {
                self.expr(t);
                if let Some(sp) = sp {
                    self.expr(sp);
                }
            }
            StmtKind::Spin(_, _, a, b) => {
                self.expr(a);
                if let Some(b) = b {
                    self.expr(b);
                }
            }
            StmtKind::StopSpin(_, _, Some(e))
            | StmtKind::EmitSfx(e, _)
            | StmtKind::Explode(_, e)
            | StmtKind::PlaySound(_, e) => self.expr(e),
            StmtKind::Set(a, b) | StmtKind::AttachUnit(a, b) => {
                self.expr(a);
                self.expr(b);
            }
            _ => {}
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Name(n) => {
                self.read.insert(n.to_ascii_lowercase());
            }
            ExprKind::Bin(_, a, b) | ExprKind::Rand(a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Neg(a) | ExprKind::Not(a) | ExprKind::BitNot(a) => self.expr(a),
            ExprKind::Get(p, args) => {
                self.expr(p);
                args.iter().flatten().for_each(|x| self.expr(x));
            }
            ExprKind::Mission(_, args) => args.iter().for_each(|x| self.expr(x)),
            ExprKind::Const(_) => {}
        }
    }
}

/// The block yields to the game somewhere (sleep, a wait, or a call that may).
fn waits(b: &[Stmt], depth: usize) -> bool {
    depth < 256
        && b.iter().any(|s| match &s.kind {
            StmtKind::Sleep(_)
            | StmtKind::WaitForTurn(..)
            | StmtKind::WaitForMove(..)
            | StmtKind::CallScript(..)
            | StmtKind::Return(_)
            | StmtKind::Break
            | StmtKind::Raw(_) => true,
            StmtKind::If(_, t, e) => {
                waits(t, depth + 1) || e.as_ref().is_some_and(|e| waits(e, depth + 1))
            }
            StmtKind::While(_, b) | StmtKind::For(_, _, _, b) | StmtKind::Block(b) => {
                waits(b, depth + 1)
            }
            _ => false,
        })
}
