//! Statements and blocks. A statement ends at a newline, a `;` or the `}` of its block.

use super::exprs::PREC_BITOR;
use super::{PResult, ParseError, Parser};
use crate::ast::{AssignOp, BinOp, Block, Expr, ExprKind, Ident, Stmt, StmtKind};
use crate::codes;
use crate::diag::Diagnostic;
use crate::token::TokenKind;

impl Parser<'_> {
    /// `{ stmts }`, possibly on the line after its header.
    pub(crate) fn block(&mut self) -> PResult<Block> {
        self.skip_newlines();
        let open = self.peek();
        if open.kind != TokenKind::LBrace {
            return Err(self.error_expected("`{`"));
        }
        self.enter("block")?;
        self.bump();
        let old = std::mem::replace(&mut self.ignore_nl, false);
        let r = self.block_rest(open);
        self.ignore_nl = old;
        self.leave();
        r
    }

    fn block_rest(&mut self, open: crate::token::Token) -> PResult<Block> {
        let mut stmts = Vec::new();
        loop {
            while matches!(
                self.tokens[self.pos].kind,
                TokenKind::Newline | TokenKind::Semi
            ) {
                self.pos += 1;
            }
            let tok = self.peek();
            match tok.kind {
                TokenKind::RBrace => {
                    self.bump();
                    return Ok(Block {
                        stmts,
                        span: open.span.to(tok.span),
                    });
                }
                // A missing `}`: the next kernel (or its attributes) or the end of the file.
                TokenKind::Eof | TokenKind::Kernel | TokenKind::At => {
                    if !self.quiet() {
                        let span = self.missing_span();
                        self.report(
                            Diagnostic::error(
                                codes::UNCLOSED,
                                format!("expected `}}`, found {}", tok.describe(self.text)),
                                span,
                            )
                            .with_label("expected `}`")
                            .with_secondary(open.span, "this block is never closed"),
                        );
                    }
                    return Ok(Block {
                        stmts,
                        span: open.span.to(self.missing_span()),
                    });
                }
                _ => {}
            }
            let start = self.pos;
            match self.stmt() {
                Ok(s) => {
                    stmts.push(s);
                    if self.stmt_end().is_err() {
                        self.sync_stmt();
                    }
                }
                Err(ParseError) => self.sync_stmt(),
            }
            if self.pos == start && self.tokens[self.pos].kind != TokenKind::Eof {
                self.pos += 1;
            }
        }
    }

    /// After a statement: a newline or `;` (consumed), or the `}` / end of file that follows.
    fn stmt_end(&mut self) -> PResult<()> {
        match self.peek_kind() {
            TokenKind::Newline | TokenKind::Semi => {
                self.bump();
                Ok(())
            }
            TokenKind::RBrace | TokenKind::Eof => Ok(()),
            TokenKind::Error => Err(ParseError),
            _ => {
                let tok = self.peek();
                let d = Diagnostic::error(
                    codes::STMT_END,
                    format!(
                        "expected a newline or `;` after the statement, found {}",
                        tok.describe(self.text)
                    ),
                    tok.span,
                )
                .with_label("unexpected here")
                .with_help("put one statement per line, or separate them with `;`");
                self.report(d);
                Err(ParseError)
            }
        }
    }

    pub(crate) fn stmt(&mut self) -> PResult<Stmt> {
        let tok = self.peek();
        let simple = |kind| {
            Ok(Stmt {
                kind,
                span: tok.span,
            })
        };
        match tok.kind {
            TokenKind::Let | TokenKind::Var => self.let_stmt(),
            TokenKind::For => self.for_stmt(),
            TokenKind::While => {
                self.bump();
                let cond = self.cond()?;
                let body = self.block()?;
                Ok(Stmt {
                    span: tok.span.to(body.span),
                    kind: StmtKind::While { cond, body },
                })
            }
            TokenKind::If => self.if_stmt(),
            TokenKind::Break => {
                self.bump();
                simple(StmtKind::Break)
            }
            TokenKind::Continue => {
                self.bump();
                simple(StmtKind::Continue)
            }
            TokenKind::Else => {
                self.report(
                    Diagnostic::error(codes::ELSE_WITHOUT_IF, "`else` without `if`", tok.span)
                        .with_label("no `if` block ends right before this")
                        .with_help("write `else` after the `}` of an `if` block: `} else {`"),
                );
                Err(ParseError)
            }
            TokenKind::LBrace => Err(self.error_expected_with(
                codes::EXPECTED,
                "a statement",
                Some("a `{ ... }` block only follows `for`, `while`, `if` or `else`".to_string()),
            )),
            _ => self.expr_stmt(),
        }
    }

    /// An expression statement or an assignment `target op= value`.
    fn expr_stmt(&mut self) -> PResult<Stmt> {
        let target = self.expr()?;
        let op = match self.peek_kind() {
            TokenKind::Eq => AssignOp::Set,
            TokenKind::PlusEq => AssignOp::Add,
            TokenKind::MinusEq => AssignOp::Sub,
            TokenKind::StarEq => AssignOp::Mul,
            TokenKind::SlashEq => AssignOp::Div,
            _ => {
                return Ok(Stmt {
                    span: target.span,
                    kind: StmtKind::Expr(target),
                })
            }
        };
        self.bump();
        self.skip_newlines();
        let value = self.expr()?;
        Ok(Stmt {
            span: target.span.to(value.span),
            kind: StmtKind::Assign { target, op, value },
        })
    }

    /// `let x`, `let x: T`, `let x = e`, `var x: T = e`.
    fn let_stmt(&mut self) -> PResult<Stmt> {
        let kw = self.bump();
        let mutable = kw.kind == TokenKind::Var;
        let what = if mutable {
            "a name after `var`"
        } else {
            "a name after `let`"
        };
        let name = self.ident(what)?;
        let mut span = kw.span.to(name.span);
        let ty = if self.eat(TokenKind::Colon).is_some() {
            let ty = self.type_expr()?;
            span = span.to(ty.span());
            Some(ty)
        } else {
            None
        };
        let init = if self.eat(TokenKind::Eq).is_some() {
            self.skip_newlines();
            let e = self.expr()?;
            span = span.to(e.span);
            Some(e)
        } else {
            if !matches!(
                self.peek_kind(),
                TokenKind::Newline | TokenKind::Semi | TokenKind::RBrace | TokenKind::Eof
            ) {
                let help = (self.peek_kind() == TokenKind::EqEq)
                    .then(|| "initialize with a single `=`: `let x = value`".to_string());
                let expected = if ty.is_none() {
                    "`:`, `=` or a newline"
                } else {
                    "`=` or a newline"
                };
                return Err(self.error_expected_with(codes::EXPECTED, expected, help));
            }
            None
        };
        Ok(Stmt {
            kind: StmtKind::Let {
                name,
                mutable,
                ty,
                init,
            },
            span,
        })
    }

    /// `for i in iter { }` or `for<unroll U> i in iter { }`.
    fn for_stmt(&mut self) -> PResult<Stmt> {
        let kw = self.bump();
        let unroll = if self.at(TokenKind::Lt) {
            let lt = self.bump();
            let word = self.peek();
            if !(word.kind == TokenKind::Ident && self.snippet(word.span) == "unroll") {
                return Err(self.error_expected_with(
                    codes::EXPECTED,
                    "`unroll`",
                    Some("write `for<unroll U> i in range(a, b)`".to_string()),
                ));
            }
            self.bump();
            // Comparisons are excluded here: `>` closes the brackets.
            let factor = self.with_nl(true, |p| p.binary(PREC_BITOR))?;
            self.with_nl(true, |p| p.expect_close(TokenKind::Gt, lt, false))?;
            Some(factor)
        } else {
            None
        };
        let var = self.ident("a loop variable")?;
        if self.eat(TokenKind::In).is_none() {
            let help = matches!(self.peek_kind(), TokenKind::Eq | TokenKind::Colon)
                .then(|| format!("write `for {} in range(start, end)`", var.name));
            return Err(self.error_expected_with(codes::EXPECTED, "`in`", help));
        }
        let mut iter = self.expr()?;
        if self.at(TokenKind::DotDot) {
            iter = self.dot_range(iter)?;
        }
        let body = self.block()?;
        Ok(Stmt {
            span: kw.span.to(body.span),
            kind: StmtKind::For {
                unroll,
                var,
                iter,
                body,
            },
        })
    }

    /// `a..b` in a loop header: reported, then read as `range(a, b)` so the body still parses.
    fn dot_range(&mut self, start: Expr) -> PResult<Expr> {
        let dots = self.bump();
        let end = self.expr()?;
        let help = format!(
            "write `range({}, {})`",
            self.snippet(start.span),
            self.snippet(end.span)
        );
        self.report(
            Diagnostic::error(
                codes::DOT_RANGE,
                "expected `range(start, end)`, found a `..` range",
                dots.span,
            )
            .with_label("Phobos has no `..` ranges")
            .with_help(help),
        );
        let span = start.span.to(end.span);
        Ok(Expr {
            kind: ExprKind::Call {
                callee: Ident {
                    name: "range".to_string(),
                    span: dots.span,
                },
                args: vec![
                    crate::ast::Arg {
                        name: None,
                        value: start,
                    },
                    crate::ast::Arg {
                        name: None,
                        value: end,
                    },
                ],
            },
            span,
        })
    }

    /// The condition of `if` / `while`; `=` in place of `==` is reported and read as `==`.
    fn cond(&mut self) -> PResult<Expr> {
        let c = self.expr()?;
        if !self.at(TokenKind::Eq) {
            return Ok(c);
        }
        let eq = self.bump();
        self.skip_newlines();
        let rhs = self.expr()?;
        let help = format!(
            "use `==` to compare: `{} == {}`",
            self.snippet(c.span),
            self.snippet(rhs.span)
        );
        self.report(
            Diagnostic::error(
                codes::ASSIGN_IN_COND,
                "expected `{` after the condition, found `=`",
                eq.span,
            )
            .with_label("assignment is not a comparison")
            .with_help(help),
        );
        Ok(Expr {
            span: c.span.to(rhs.span),
            kind: ExprKind::Binary {
                op: BinOp::Eq,
                lhs: Box::new(c),
                rhs: Box::new(rhs),
            },
        })
    }

    /// `if c { } else if d { } else { }`; `else` may start the line after the `}`.
    fn if_stmt(&mut self) -> PResult<Stmt> {
        let kw = self.bump();
        let cond = self.cond()?;
        let then = self.block()?;
        let mut span = kw.span.to(then.span);
        let mut i = self.pos;
        while self.tokens[i].kind == TokenKind::Newline {
            i += 1;
        }
        let els = if self.tokens[i].kind == TokenKind::Else {
            self.pos = i;
            self.bump();
            self.skip_newlines();
            if self.at(TokenKind::If) {
                // Each `else if` nests one level deeper in the tree.
                self.enter("block")?;
                let s = self.if_stmt();
                self.leave();
                let s = s?;
                span = span.to(s.span);
                Some(Box::new(s))
            } else {
                let b = self.block()?;
                span = span.to(b.span);
                Some(Box::new(Stmt {
                    span: b.span,
                    kind: StmtKind::Block(b),
                }))
            }
        } else {
            None
        };
        Ok(Stmt {
            kind: StmtKind::If { cond, then, els },
            span,
        })
    }
}
