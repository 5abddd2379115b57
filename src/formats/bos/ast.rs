//! The syntax tree of a BOS script.

use super::Pos;

/// A whole script: declarations and functions in source order.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub pieces: Vec<(String, Pos)>,
    pub statics: Vec<(String, Pos)>,
    pub funcs: Vec<Func>,
}

/// One function (`Name(a, b) { … }`).
#[derive(Debug, Clone)]
pub struct Func {
    pub name: String,
    pub pos: Pos,
    pub params: Vec<(String, Pos)>,
    pub body: Vec<Stmt>,
}

/// A statement and where it starts.
#[derive(Debug, Clone)]
pub struct Stmt {
    pub kind: StmtKind,
    pub pos: Pos,
}

/// The axis of a piece operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    X = 0,
    Y = 1,
    Z = 2,
}

/// A piece named in a statement.
#[derive(Debug, Clone)]
pub struct PieceRef {
    pub name: String,
    pub pos: Pos,
}

/// Every statement the game knows.
#[derive(Debug, Clone)]
pub enum StmtKind {
    /// `var a, b;`
    Var(Vec<(String, Pos)>),
    /// `name = expr;`
    Assign(String, Expr),
    /// `++name;` (`true`) or `--name;`
    Step(String, bool),
    If(Expr, Vec<Stmt>, Option<Vec<Stmt>>),
    While(Expr, Vec<Stmt>),
    /// `for (init; cond; step) body`
    For(Option<Box<Stmt>>, Expr, Option<Box<Stmt>>, Vec<Stmt>),
    Block(Vec<Stmt>),
    /// `break;`: leaves the innermost `while`/`for` (a jump past its end).
    Break,
    Return(Option<Expr>),
    Sleep(Expr),
    Signal(Expr),
    SetSignalMask(Expr),
    /// `move p to x-axis target speed s;` (`speed: None` = `now`)
    Move(PieceRef, Axis, Expr, Option<Expr>),
    Turn(PieceRef, Axis, Expr, Option<Expr>),
    /// `spin p around y-axis speed s [accelerate a];`
    Spin(PieceRef, Axis, Expr, Option<Expr>),
    /// `stop-spin p around y-axis [decelerate d];`
    StopSpin(PieceRef, Axis, Option<Expr>),
    /// `show`, `hide`, `cache`, `dont-cache`, `shade`, `dont-shade`, `dont-shadow`: the
    /// opcode and the piece.
    PieceOp(u32, PieceRef),
    EmitSfx(Expr, PieceRef),
    Explode(PieceRef, Expr),
    WaitForTurn(PieceRef, Axis),
    WaitForMove(PieceRef, Axis),
    StartScript(String, Vec<Expr>),
    CallScript(String, Vec<Expr>),
    /// `set PORT to value;`
    Set(Expr, Expr),
    /// `attach-unit UNIT to PIECE;` (the piece a name or any expression, `0 - 1` hides).
    AttachUnit(Expr, Expr),
    DropUnit(Expr),
    /// `play-sound("name", volume);` (TA: Kingdoms)
    PlaySound(String, Expr),
    /// An expression whose value is dropped (`get X(...);`).
    Expr(Expr),
    /// `;`
    Empty,
    /// `__cob(words…);`: code words written verbatim, `@n` being the word `n` of this
    /// script (a jump target). What the decompiler writes for code it cannot structure.
    Raw(Vec<RawWord>),
}

/// Binary operators, in the opcodes they compile to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    BitAnd,
    BitOr,
    BitXor,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    Xor,
}

/// An expression and where it starts.
#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub pos: Pos,
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    /// A number (linear `[..]` and angular `<..>` constants already scaled).
    Const(i32),
    /// A local or static variable (resolved by the code generator).
    Name(String),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// `-e` of something that is not a literal: compiled as `0 - e`.
    Neg(Box<Expr>),
    Not(Box<Expr>),
    BitNot(Box<Expr>),
    /// `get PORT` (no arguments) or `get PORT(a, b, …)` (up to 4).
    Get(Box<Expr>, Option<Vec<Expr>>),
    Rand(Box<Expr>, Box<Expr>),
    /// TA: Kingdoms `Mission-Command("name", args…)`.
    Mission(String, Vec<Expr>),
}

/// One word of a [`StmtKind::Raw`] statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawWord {
    Word(u32),
    /// A word index relative to the start of the script.
    Rel(u32),
}
