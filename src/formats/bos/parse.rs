//! The parser: preprocessed tokens → [`Script`]. Recursive descent with the nesting of
//! blocks and expressions bounded by [`Limits::max_expr_depth`].

use super::ast::*;
use super::lex::{Kind, Token};
use super::{opcode, Angle, Error, Limits, Pos};

/// Parses a preprocessed token stream.
/// `right_assoc`: operators of one precedence group to the right ([`super::Options`]).
pub fn parse(
    toks: &[Token],
    limits: &Limits,
    angle: Angle,
    right_assoc: bool,
) -> Result<Script, Error> {
    let end = toks.last().map(|t| t.pos).unwrap_or(Pos {
        file: 0,
        line: 1,
        col: 1,
    });
    let mut p = Parser {
        toks,
        i: 0,
        depth: 0,
        max_depth: limits.max_expr_depth,
        end,
        angle,
        right_assoc,
    };
    p.script()
}

/// The value of an integer literal as C writes it (`12`, `0x1F`, `017` is decimal here as in
/// Scriptor); `None` when it is not an integer.
pub fn int_literal(s: &str) -> Option<i64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).ok();
    }
    s.parse::<i64>().ok()
}

struct Parser<'a> {
    toks: &'a [Token],
    i: usize,
    depth: usize,
    max_depth: usize,
    end: Pos,
    /// Units of one degree in `<..>`.
    angle: Angle,
    /// `a + b + c` is `a + (b + c)`, the same for `||` and `&&`
    /// ([`super::Options::right_assoc`]).
    right_assoc: bool,
}

fn describe(t: Option<&Token>) -> String {
    match t.map(|t| &t.kind) {
        None => "the end of the file".into(),
        Some(Kind::Ident(s)) | Some(Kind::Number(s)) => format!("'{s}'"),
        Some(Kind::Str(s)) => format!("\"{s}\""),
        Some(Kind::Punct(p)) => format!("'{p}'"),
    }
}

impl Parser<'_> {
    fn pos(&self) -> Pos {
        self.toks.get(self.i).map(|t| t.pos).unwrap_or(self.end)
    }

    fn peek(&self) -> Option<&Kind> {
        self.toks.get(self.i).map(|t| &t.kind)
    }

    fn peek_at(&self, k: usize) -> Option<&Kind> {
        self.toks.get(self.i + k).map(|t| &t.kind)
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Kind::Punct(q)) if *q == p)
    }

    /// The current token is the keyword `w` (any letter case).
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Kind::Ident(s)) if s.eq_ignore_ascii_case(w))
    }

    fn err<T>(&self, what: &str) -> Result<T, Error> {
        Err(Error::new(
            self.pos(),
            format!("expected {what}, found {}", describe(self.toks.get(self.i))),
        ))
    }

    fn punct(&mut self, p: &str) -> Result<(), Error> {
        if self.is_punct(p) {
            self.i += 1;
            Ok(())
        } else {
            self.err(&format!("'{p}'"))
        }
    }

    fn word(&mut self, w: &str) -> Result<(), Error> {
        if self.is_word(w) {
            self.i += 1;
            Ok(())
        } else {
            self.err(&format!("'{w}'"))
        }
    }

    fn name(&mut self, what: &str) -> Result<(String, Pos), Error> {
        match self.peek() {
            Some(Kind::Ident(s)) => {
                let r = (s.clone(), self.pos());
                self.i += 1;
                Ok(r)
            }
            _ => self.err(what),
        }
    }

    fn enter(&mut self) -> Result<(), Error> {
        self.enter_n(1)
    }

    /// A block level counts for [`BLOCK_WEIGHT`]: a statement's frames are much larger than
    /// an expression's, and the limit is there to keep the stack small.
    fn enter_block(&mut self) -> Result<(), Error> {
        self.enter_n(BLOCK_WEIGHT)
    }

    fn enter_n(&mut self, n: usize) -> Result<(), Error> {
        self.depth += n;
        if self.depth > self.max_depth {
            return Err(Error::new(
                self.pos(),
                format!(
                    "blocks or expressions nest more than {} levels deep",
                    self.max_depth
                ),
            ));
        }
        Ok(())
    }

    fn script(&mut self) -> Result<Script, Error> {
        let mut s = Script::default();
        while self.i < self.toks.len() {
            if self.is_word("piece") {
                self.i += 1;
                s.pieces.extend(self.name_list("a piece name")?);
            } else if self.is_word("static-var") {
                self.i += 1;
                s.statics.extend(self.name_list("a static variable name")?);
            } else if self.is_punct(";") {
                self.i += 1;
            } else {
                let (name, pos) = self.name("a piece, static-var or function declaration")?;
                self.punct("(")?;
                let mut params = Vec::new();
                if !self.is_punct(")") {
                    loop {
                        params.push(self.name("a parameter name")?);
                        if self.is_punct(",") {
                            self.i += 1;
                        } else {
                            break;
                        }
                    }
                }
                self.punct(")")?;
                let body = self.block()?;
                s.funcs.push(Func {
                    name,
                    pos,
                    params,
                    body,
                });
            }
        }
        Ok(s)
    }

    fn name_list(&mut self, what: &str) -> Result<Vec<(String, Pos)>, Error> {
        let mut v = vec![self.name(what)?];
        while self.is_punct(",") {
            self.i += 1;
            v.push(self.name(what)?);
        }
        self.punct(";")?;
        Ok(v)
    }

    fn block(&mut self) -> Result<Vec<Stmt>, Error> {
        self.punct("{")?;
        self.enter_block()?;
        let mut v = Vec::new();
        while !self.is_punct("}") {
            if self.i >= self.toks.len() {
                return self.err("'}'");
            }
            v.push(self.stmt()?);
        }
        self.i += 1;
        self.depth -= BLOCK_WEIGHT;
        Ok(v)
    }

    /// A statement or a block, as the body of `if`/`while`/`for`.
    fn body(&mut self) -> Result<Vec<Stmt>, Error> {
        if self.is_punct("{") {
            self.block()
        } else {
            self.enter_block()?;
            let s = self.stmt()?;
            self.depth -= BLOCK_WEIGHT;
            Ok(vec![s])
        }
    }

    fn piece(&mut self) -> Result<PieceRef, Error> {
        let (name, pos) = self.name("a piece name")?;
        Ok(PieceRef { name, pos })
    }

    fn axis(&mut self) -> Result<Axis, Error> {
        let a = match self.peek() {
            Some(Kind::Ident(s)) if s.eq_ignore_ascii_case("x-axis") => Axis::X,
            Some(Kind::Ident(s)) if s.eq_ignore_ascii_case("y-axis") => Axis::Y,
            Some(Kind::Ident(s)) if s.eq_ignore_ascii_case("z-axis") => Axis::Z,
            _ => return self.err("x-axis, y-axis or z-axis"),
        };
        self.i += 1;
        Ok(a)
    }

    fn args(&mut self) -> Result<Vec<Expr>, Error> {
        self.punct("(")?;
        let mut v = Vec::new();
        if !self.is_punct(")") {
            loop {
                v.push(self.expr()?);
                if self.is_punct(",") {
                    self.i += 1;
                } else {
                    break;
                }
            }
        }
        self.punct(")")?;
        Ok(v)
    }

    fn end(&mut self) -> Result<(), Error> {
        self.punct(";")
    }

    fn stmt(&mut self) -> Result<Stmt, Error> {
        let pos = self.pos();
        let kind = self.stmt_kind()?;
        Ok(Stmt { kind, pos })
    }

    fn stmt_kind(&mut self) -> Result<StmtKind, Error> {
        if self.is_punct(";") {
            self.i += 1;
            return Ok(StmtKind::Empty);
        }
        if self.is_punct("{") {
            return Ok(StmtKind::Block(self.block()?));
        }
        if self.is_punct("++") || self.is_punct("--") {
            let up = self.is_punct("++");
            self.i += 1;
            let (n, _) = self.name("a variable name")?;
            self.end()?;
            return Ok(StmtKind::Step(n, up));
        }
        let word = match self.peek() {
            Some(Kind::Ident(s)) => s.to_ascii_lowercase(),
            _ => return self.err("a statement"),
        };
        // `name = …`, `name++`: assignments before keywords, so a variable may be called `sleep`.
        if matches!(self.peek_at(1), Some(Kind::Punct("="))) {
            let (n, _) = self.name("a variable name")?;
            self.i += 1;
            let e = self.expr()?;
            self.end()?;
            return Ok(StmtKind::Assign(n, e));
        }
        if matches!(self.peek_at(1), Some(Kind::Punct("++" | "--"))) {
            let (n, _) = self.name("a variable name")?;
            let up = self.is_punct("++");
            self.i += 1;
            self.end()?;
            return Ok(StmtKind::Step(n, up));
        }
        self.i += 1;
        let k = match word.as_str() {
            "var" => {
                let v = self.name_list("a variable name")?;
                return Ok(StmtKind::Var(v));
            }
            "if" => {
                self.punct("(")?;
                let c = self.expr()?;
                self.punct(")")?;
                let t = self.body()?;
                let e = if self.is_word("else") {
                    self.i += 1;
                    Some(self.body()?)
                } else {
                    None
                };
                return Ok(StmtKind::If(c, t, e));
            }
            "while" => {
                self.punct("(")?;
                let c = self.expr()?;
                self.punct(")")?;
                return Ok(StmtKind::While(c, self.body()?));
            }
            "for" => {
                self.punct("(")?;
                let init = if self.is_punct(";") {
                    None
                } else {
                    Some(Box::new(self.simple()?))
                };
                self.punct(";")?;
                let c = self.expr()?;
                self.punct(";")?;
                let step = if self.is_punct(")") {
                    None
                } else {
                    Some(Box::new(self.simple()?))
                };
                self.punct(")")?;
                return Ok(StmtKind::For(init, c, step, self.body()?));
            }
            "return" => {
                let e = if self.is_punct(";") {
                    None
                } else {
                    Some(self.expr()?)
                };
                StmtKind::Return(e)
            }
            "break" => StmtKind::Break,
            "sleep" => StmtKind::Sleep(self.expr()?),
            "signal" => StmtKind::Signal(self.expr()?),
            "set-signal-mask" => StmtKind::SetSignalMask(self.expr()?),
            "move" | "turn" => {
                let p = self.piece()?;
                self.word("to")?;
                let a = self.axis()?;
                let target = self.expr()?;
                let speed = if self.is_word("now") {
                    self.i += 1;
                    None
                } else {
                    self.word("speed")?;
                    Some(self.expr()?)
                };
                if word == "move" {
                    StmtKind::Move(p, a, target, speed)
                } else {
                    StmtKind::Turn(p, a, target, speed)
                }
            }
            "spin" => {
                let p = self.piece()?;
                self.word("around")?;
                let a = self.axis()?;
                self.word("speed")?;
                let s = self.expr()?;
                let acc = if self.is_word("accelerate") {
                    self.i += 1;
                    Some(self.expr()?)
                } else {
                    None
                };
                StmtKind::Spin(p, a, s, acc)
            }
            "stop-spin" => {
                let p = self.piece()?;
                self.word("around")?;
                let a = self.axis()?;
                let dec = if self.is_word("decelerate") {
                    self.i += 1;
                    Some(self.expr()?)
                } else {
                    None
                };
                StmtKind::StopSpin(p, a, dec)
            }
            "show" => StmtKind::PieceOp(opcode::SHOW, self.piece()?),
            "hide" => StmtKind::PieceOp(opcode::HIDE, self.piece()?),
            "cache" => StmtKind::PieceOp(opcode::CACHE, self.piece()?),
            "dont-cache" => StmtKind::PieceOp(opcode::DONT_CACHE, self.piece()?),
            "shade" => StmtKind::PieceOp(opcode::SHADE, self.piece()?),
            "dont-shade" => StmtKind::PieceOp(opcode::DONT_SHADE, self.piece()?),
            "dont-shadow" => StmtKind::PieceOp(opcode::DONT_SHADOW, self.piece()?),
            "emit-sfx" => {
                let e = self.expr()?;
                self.word("from")?;
                StmtKind::EmitSfx(e, self.piece()?)
            }
            "explode" => {
                let p = self.piece()?;
                self.word("type")?;
                StmtKind::Explode(p, self.expr()?)
            }
            "wait-for-turn" => {
                let p = self.piece()?;
                self.word("around")?;
                StmtKind::WaitForTurn(p, self.axis()?)
            }
            "wait-for-move" => {
                let p = self.piece()?;
                self.word("along")?;
                StmtKind::WaitForMove(p, self.axis()?)
            }
            "start-script" | "call-script" => {
                let (n, _) = self.name("a function name")?;
                let a = self.args()?;
                if word == "start-script" {
                    StmtKind::StartScript(n, a)
                } else {
                    StmtKind::CallScript(n, a)
                }
            }
            "set" => {
                let port = self.unary()?;
                self.word("to")?;
                StmtKind::Set(port, self.expr()?)
            }
            "attach-unit" => {
                let u = self.expr()?;
                self.word("to")?;
                StmtKind::AttachUnit(u, self.expr()?)
            }
            "drop-unit" => StmtKind::DropUnit(self.expr()?),
            "play-sound" => {
                self.punct("(")?;
                let name = match self.peek() {
                    Some(Kind::Str(s)) => s.clone(),
                    _ => return self.err("a sound name in quotes"),
                };
                self.i += 1;
                self.punct(",")?;
                let v = self.expr()?;
                self.punct(")")?;
                StmtKind::PlaySound(name, v)
            }
            "__cob" => {
                self.punct("(")?;
                let mut words = Vec::new();
                while !self.is_punct(")") {
                    let rel = self.is_punct("@");
                    if rel {
                        self.i += 1;
                    }
                    let v = match self.peek() {
                        Some(Kind::Number(n)) => int_literal(n).and_then(|v| u32::try_from(v).ok()),
                        _ => None,
                    };
                    let Some(v) = v else {
                        return self.err("a code word (0 to 0xFFFFFFFF)");
                    };
                    self.i += 1;
                    words.push(if rel {
                        RawWord::Rel(v)
                    } else {
                        RawWord::Word(v)
                    });
                    if !self.is_punct(")") {
                        self.punct(",")?;
                    }
                    if self.i >= self.toks.len() {
                        return self.err("')'");
                    }
                }
                self.i += 1;
                StmtKind::Raw(words)
            }
            "get" | "mission-command" => {
                self.i -= 1;
                StmtKind::Expr(self.expr()?)
            }
            _ => {
                self.i -= 1;
                return self.err("a statement");
            }
        };
        self.end()?;
        Ok(k)
    }

    /// The init and step of a `for`: an assignment or `++`/`--`.
    fn simple(&mut self) -> Result<Stmt, Error> {
        let pos = self.pos();
        if self.is_punct("++") || self.is_punct("--") {
            let up = self.is_punct("++");
            self.i += 1;
            let (n, _) = self.name("a variable name")?;
            return Ok(Stmt {
                kind: StmtKind::Step(n, up),
                pos,
            });
        }
        let (n, _) = self.name("a variable name")?;
        if self.is_punct("++") || self.is_punct("--") {
            let up = self.is_punct("++");
            self.i += 1;
            return Ok(Stmt {
                kind: StmtKind::Step(n, up),
                pos,
            });
        }
        self.punct("=")?;
        let e = self.expr()?;
        Ok(Stmt {
            kind: StmtKind::Assign(n, e),
            pos,
        })
    }

    pub fn expr(&mut self) -> Result<Expr, Error> {
        self.binary(0)
    }

    fn binop(&self) -> Option<(BinOp, u8)> {
        let op = match self.peek()? {
            Kind::Punct(p) => match *p {
                "||" => (BinOp::Or, 1),
                "^^" => (BinOp::Xor, 2),
                "&&" => (BinOp::And, 3),
                "|" => (BinOp::BitOr, 4),
                "^" => (BinOp::BitXor, 5),
                "&" => (BinOp::BitAnd, 6),
                "==" => (BinOp::Eq, 7),
                "!=" => (BinOp::Ne, 7),
                "<" => (BinOp::Lt, 8),
                "<=" => (BinOp::Le, 8),
                ">" => (BinOp::Gt, 8),
                ">=" => (BinOp::Ge, 8),
                "+" => (BinOp::Add, 9),
                "-" => (BinOp::Sub, 9),
                "*" => (BinOp::Mul, 10),
                "/" => (BinOp::Div, 10),
                "%" => (BinOp::Mod, 10),
                _ => return None,
            },
            Kind::Ident(s) if s.eq_ignore_ascii_case("or") => (BinOp::Or, 1),
            Kind::Ident(s) if s.eq_ignore_ascii_case("xor") => (BinOp::Xor, 2),
            Kind::Ident(s) if s.eq_ignore_ascii_case("and") => (BinOp::And, 3),
            _ => return None,
        };
        Some(op)
    }

    fn binary(&mut self, min: u8) -> Result<Expr, Error> {
        Ok(self.binary_paren(min)?.0)
    }

    /// [`Self::binary`], and whether the result is one whole parenthesised expression.
    fn binary_paren(&mut self, min: u8) -> Result<(Expr, bool), Error> {
        self.enter()?;
        let opens = self.is_punct("(");
        let mut l = self.unary()?;
        let mut bare_paren = opens
            && self
                .i
                .checked_sub(1)
                .and_then(|k| self.toks.get(k))
                .is_some_and(|t| matches!(t.kind, Kind::Punct(")")));
        // each operator of the chain is one level more of the tree (code generation
        // recurses through it)
        let mut chained = 0;
        while let Some((op, prec)) = self.binop() {
            if prec <= min {
                break;
            }
            self.i += 1;
            self.enter()?;
            chained += 1;
            let r = if self.right_assoc
                && !bare_paren
                && matches!(op, BinOp::Add | BinOp::Or | BinOp::And)
            {
                self.right_chain(op, prec)?
            } else {
                self.binary_paren(prec)?.0
            };
            bare_paren = false;
            let pos = l.pos;
            l = Expr {
                kind: ExprKind::Bin(op, Box::new(l), Box::new(r)),
                pos,
            };
        }
        self.depth -= 1 + chained;
        Ok((l, bare_paren))
    }

    /// The right operand of `op` grouped as Scriptor does ([`super::Options::right_assoc`]):
    /// `b op c op d` as `b op (c op d)`, the chain ending at another operator or after an
    /// operand in parentheses (`(a) && (b) && (c)` is `((a) && (b)) && (c)`).
    fn right_chain(&mut self, op: BinOp, prec: u8) -> Result<Expr, Error> {
        self.enter()?;
        let (first, bare) = self.binary_paren(prec)?;
        let e = if !bare && self.binop() == Some((op, prec)) {
            self.i += 1;
            let rest = self.right_chain(op, prec)?;
            let pos = first.pos;
            Expr {
                kind: ExprKind::Bin(op, Box::new(first), Box::new(rest)),
                pos,
            }
        } else {
            first
        };
        self.depth -= 1;
        Ok(e)
    }

    fn unary(&mut self) -> Result<Expr, Error> {
        self.enter()?;
        let pos = self.pos();
        let e = if self.is_punct("!") || self.is_word("not") {
            self.i += 1;
            Expr {
                kind: ExprKind::Not(Box::new(self.unary()?)),
                pos,
            }
        } else if self.is_punct("~") {
            self.i += 1;
            Expr {
                kind: ExprKind::BitNot(Box::new(self.unary()?)),
                pos,
            }
        } else if self.is_punct("-") {
            self.i += 1;
            let e = self.unary()?;
            match e.kind {
                ExprKind::Const(v) => Expr {
                    kind: ExprKind::Const(v.wrapping_neg()),
                    pos,
                },
                _ => Expr {
                    kind: ExprKind::Neg(Box::new(e)),
                    pos,
                },
            }
        } else if self.is_punct("+") {
            self.i += 1;
            self.unary()?
        } else {
            self.primary()?
        };
        self.depth -= 1;
        Ok(e)
    }

    /// A number inside `[..]` or `<..>`, with an optional sign, as a float.
    fn scaled(&mut self, close: &str, scale: impl Fn(f64) -> f64) -> Result<i32, Error> {
        let mut sign = 1.0;
        while self.is_punct("-") || self.is_punct("+") {
            if self.is_punct("-") {
                sign = -sign;
            }
            self.i += 1;
        }
        let v = match self.peek() {
            Some(Kind::Number(n)) => {
                number(n).ok_or_else(|| Error::new(self.pos(), format!("'{n}' is not a number")))?
            }
            _ => return self.err("a number"),
        };
        self.i += 1;
        self.punct(close)?;
        Ok(to_i32(scale(sign * v)))
    }

    fn primary(&mut self) -> Result<Expr, Error> {
        let pos = self.pos();
        let kind = match self.peek().cloned() {
            Some(Kind::Number(n)) => {
                self.i += 1;
                let v =
                    number(&n).ok_or_else(|| Error::new(pos, format!("'{n}' is not a number")))?;
                ExprKind::Const(to_i32(v))
            }
            Some(Kind::Punct("[")) => {
                self.i += 1;
                ExprKind::Const(self.scaled("]", |d| d * LINEAR)?)
            }
            Some(Kind::Punct("<")) => {
                self.i += 1;
                {
                    let a = self.angle;
                    ExprKind::Const(self.scaled(">", |d| a.units(d))?)
                }
            }
            Some(Kind::Punct("(")) => {
                self.i += 1;
                let e = self.expr()?;
                self.punct(")")?;
                return Ok(e);
            }
            Some(Kind::Ident(s)) => {
                self.i += 1;
                let lower = s.to_ascii_lowercase();
                match lower.as_str() {
                    "get" => {
                        let port = self.unary_port()?;
                        let args = if self.is_punct("(") {
                            Some(self.args()?)
                        } else {
                            None
                        };
                        if args.as_ref().is_some_and(|a| a.len() > 4) {
                            return Err(Error::new(pos, "get takes at most 4 arguments".into()));
                        }
                        ExprKind::Get(Box::new(port), args)
                    }
                    "rand" => {
                        let mut a = self.args()?;
                        if a.len() != 2 {
                            return Err(Error::new(
                                pos,
                                format!("rand takes 2 arguments (low, high), given {}", a.len()),
                            ));
                        }
                        let hi = a.pop().ok_or_else(|| Error::new(pos, "rand".into()))?;
                        let lo = a.pop().ok_or_else(|| Error::new(pos, "rand".into()))?;
                        ExprKind::Rand(Box::new(lo), Box::new(hi))
                    }
                    "true" => ExprKind::Const(1),
                    "false" => ExprKind::Const(0),
                    "mission-command" => {
                        self.punct("(")?;
                        let name = match self.peek() {
                            Some(Kind::Str(s)) => s.clone(),
                            _ => return self.err("a command name in quotes"),
                        };
                        self.i += 1;
                        let mut args = Vec::new();
                        while self.is_punct(",") {
                            self.i += 1;
                            args.push(self.expr()?);
                        }
                        self.punct(")")?;
                        ExprKind::Mission(name, args)
                    }
                    _ => ExprKind::Name(s),
                }
            }
            _ => return self.err("an expression"),
        };
        Ok(Expr { kind, pos })
    }

    /// The port after `get`: a number, a name, or a parenthesised expression.
    fn unary_port(&mut self) -> Result<Expr, Error> {
        let pos = self.pos();
        match self.peek().cloned() {
            Some(Kind::Number(n)) => {
                self.i += 1;
                let v =
                    number(&n).ok_or_else(|| Error::new(pos, format!("'{n}' is not a number")))?;
                Ok(Expr {
                    kind: ExprKind::Const(to_i32(v)),
                    pos,
                })
            }
            Some(Kind::Ident(s)) => {
                self.i += 1;
                Ok(Expr {
                    kind: ExprKind::Name(s),
                    pos,
                })
            }
            Some(Kind::Punct("(")) => {
                self.i += 1;
                let e = self.expr()?;
                self.punct(")")?;
                Ok(e)
            }
            _ => self.err("a value name after get"),
        }
    }
}

/// Depth one block or statement body adds (of [`Limits::max_expr_depth`]).
const BLOCK_WEIGHT: usize = 4;

/// Linear units: one `[1]` is 163840 (65536 × 2.5).
pub const LINEAR: f64 = 163840.0;

fn number(s: &str) -> Option<f64> {
    if let Some(v) = int_literal(s) {
        return Some(v as f64);
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn to_i32(v: f64) -> i32 {
    // Truncated toward zero as the compilers do; wraps like the 32-bit word it becomes.
    let r = v.trunc();
    if r >= i64::MIN as f64 && r <= i64::MAX as f64 {
        (r as i64) as i32
    } else {
        0
    }
}
