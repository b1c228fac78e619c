//! Expressions: operator precedence over the binary operators (an explicit operator stack,
//! so a long line costs no recursion), then prefix operators, atoms and postfix forms.
//!
//! Precedence, lowest first: `||`; `&&`; comparisons (non-associative); `|`; `^`; `&`;
//! `<< >>`; `+ -`; `* / %`; unary `- !`; postfix call, index and field.
//!
//! Two limits keep every consumer safe: recursion (brackets) is bounded by the parser's
//! nesting depth, and every expression tree returned is at most [`MAX_DEPTH`] nodes deep, so
//! recursive walks over the AST (printing, checking, dropping) stay small as well. Functions
//! ending in `_d` return the tree depth of their result alongside it.

use super::{PResult, ParseError, Parser, MAX_DEPTH};
use crate::ast::{Arg, BinOp, Expr, ExprKind, UnOp};
use crate::codes;
use crate::diag::Diagnostic;
use crate::span::Span;
use crate::token::{Token, TokenKind};

/// Binding power of the comparison operators.
pub(crate) const PREC_CMP: u8 = 3;
/// Binding power of `|`: the loosest level allowed in `for<unroll ...>`, where `>` closes.
pub(crate) const PREC_BITOR: u8 = 4;

/// The binary operator a token spells, with its binding power (higher binds tighter).
pub(crate) fn binop_of(kind: TokenKind) -> Option<(BinOp, u8)> {
    use TokenKind as T;
    Some(match kind {
        T::OrOr => (BinOp::Or, 1),
        T::AndAnd => (BinOp::And, 2),
        T::EqEq => (BinOp::Eq, PREC_CMP),
        T::Ne => (BinOp::Ne, PREC_CMP),
        T::Lt => (BinOp::Lt, PREC_CMP),
        T::Le => (BinOp::Le, PREC_CMP),
        T::Gt => (BinOp::Gt, PREC_CMP),
        T::Ge => (BinOp::Ge, PREC_CMP),
        T::Pipe => (BinOp::BitOr, PREC_BITOR),
        T::Caret => (BinOp::BitXor, 5),
        T::Amp => (BinOp::BitAnd, 6),
        T::Shl => (BinOp::Shl, 7),
        T::Shr => (BinOp::Shr, 7),
        T::Plus => (BinOp::Add, 8),
        T::Minus => (BinOp::Sub, 8),
        T::Star => (BinOp::Mul, 9),
        T::Slash => (BinOp::Div, 9),
        T::Percent => (BinOp::Rem, 9),
        _ => return None,
    })
}

/// An operand on the operator stack: the tree, its depth, and whether it is a comparison
/// built on this stack (not parenthesized), to reject `a < b < c`.
struct Operand {
    expr: Expr,
    depth: u32,
    bare_cmp: bool,
}

impl Parser<'_> {
    /// A full expression.
    pub(crate) fn expr(&mut self) -> PResult<Expr> {
        self.binary_d(1).map(|(e, _)| e)
    }

    /// An expression whose loosest operator binds at least as tightly as `min`.
    pub(crate) fn binary(&mut self, min: u8) -> PResult<Expr> {
        self.binary_d(min).map(|(e, _)| e)
    }

    pub(super) fn binary_d(&mut self, min: u8) -> PResult<(Expr, u32)> {
        let (expr, depth) = self.operand_d()?;
        let mut operands = vec![Operand {
            expr,
            depth,
            bare_cmp: false,
        }];
        let mut ops: Vec<(BinOp, u8, Span)> = Vec::new();
        loop {
            let tok = self.peek();
            let Some((op, prec)) = binop_of(tok.kind) else {
                break;
            };
            if prec < min {
                break;
            }
            // Left-associative: everything at least as tight is complete.
            while ops.last().is_some_and(|&(_, top, _)| top >= prec) {
                self.reduce(&mut operands, &mut ops)?;
            }
            self.bump();
            // A line that ends with an operator continues on the next line.
            self.skip_newlines();
            ops.push((op, prec, tok.span));
            let (expr, depth) = self.operand_d()?;
            operands.push(Operand {
                expr,
                depth,
                bare_cmp: false,
            });
        }
        while !ops.is_empty() {
            self.reduce(&mut operands, &mut ops)?;
        }
        let last = operands.pop().ok_or(ParseError)?;
        Ok((last.expr, last.depth))
    }

    /// Pops one operator and its two operands and pushes the binary node.
    fn reduce(
        &mut self,
        operands: &mut Vec<Operand>,
        ops: &mut Vec<(BinOp, u8, Span)>,
    ) -> PResult<()> {
        let (op, prec, op_span) = ops.pop().ok_or(ParseError)?;
        let rhs = operands.pop().ok_or(ParseError)?;
        let lhs = operands.pop().ok_or(ParseError)?;
        if prec == PREC_CMP && lhs.bare_cmp {
            self.chained_cmp(&lhs.expr, op, &rhs.expr, op_span);
        }
        let depth = 1 + lhs.depth.max(rhs.depth);
        let span = lhs.expr.span.to(rhs.expr.span);
        self.check_tree_depth(depth, span)?;
        operands.push(Operand {
            expr: Expr {
                kind: ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs.expr),
                    rhs: Box::new(rhs.expr),
                },
                span,
            },
            depth,
            bare_cmp: prec == PREC_CMP,
        });
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn chained_cmp(&mut self, lhs: &Expr, op: BinOp, rhs: &Expr, op_span: Span) {
        let prev_rhs = match &lhs.kind {
            ExprKind::Binary { rhs, .. } => rhs.span,
            _ => lhs.span,
        };
        let help = format!(
            "comparisons do not chain; write `{} && {} {} {}`",
            self.snippet(lhs.span),
            self.snippet(prev_rhs),
            op.as_str(),
            self.snippet(rhs.span)
        );
        self.report(
            Diagnostic::error(
                codes::CHAINED_CMP,
                "comparison operators cannot be chained",
                op_span,
            )
            .with_label("second comparison")
            .with_secondary(lhs.span, "first comparison")
            .with_help(help),
        );
    }

    /// Rejects a tree deeper than [`MAX_DEPTH`].
    pub(super) fn check_tree_depth(&mut self, depth: u32, span: Span) -> PResult<()> {
        if depth <= MAX_DEPTH {
            return Ok(());
        }
        self.report(
            Diagnostic::error(codes::TOO_DEEP, "expression nested too deeply", span)
                .with_label(format!("more than {MAX_DEPTH} levels deep"))
                .with_help("split it with `let` bindings"),
        );
        Err(ParseError)
    }

    /// Prefix operators, an atom, then postfix calls, indexes and fields.
    fn operand_d(&mut self) -> PResult<(Expr, u32)> {
        // Prefix operators are collected in a loop rather than by recursion.
        let mut prefix: Vec<(UnOp, Span)> = Vec::new();
        loop {
            let op = match self.peek_kind() {
                TokenKind::Minus => UnOp::Neg,
                TokenKind::Bang => UnOp::Not,
                _ => break,
            };
            let tok = self.bump();
            prefix.push((op, tok.span));
            if prefix.len() as u32 > MAX_DEPTH {
                return Err(self.too_deep("expression"));
            }
        }
        let (mut e, mut depth) = self.primary_d()?;
        loop {
            match self.peek_kind() {
                TokenKind::LBracket => {
                    let r = self.index_d(e, depth)?;
                    (e, depth) = r;
                }
                TokenKind::Dot => {
                    self.bump();
                    let field = self.ident("a field name after `.`")?;
                    depth += 1;
                    let span = e.span.to(field.span);
                    self.check_tree_depth(depth, span)?;
                    e = Expr {
                        span,
                        kind: ExprKind::Field {
                            base: Box::new(e),
                            field,
                        },
                    };
                }
                // `name(..)` was taken by `primary_d`; anything else is not callable.
                TokenKind::LParen => return Err(self.bad_callee(&e)),
                _ => break,
            }
        }
        for (op, span) in prefix.into_iter().rev() {
            depth += 1;
            let span = span.to(e.span);
            self.check_tree_depth(depth, span)?;
            e = Expr {
                span,
                kind: ExprKind::Unary {
                    op,
                    arg: Box::new(e),
                },
            };
        }
        Ok((e, depth))
    }

    #[cold]
    #[inline(never)]
    fn bad_callee(&mut self, e: &Expr) -> ParseError {
        let help = match &e.kind {
            ExprKind::Field { base, field } => format!(
                "Phobos has no methods; write `{}({}, ...)`",
                field.name,
                self.snippet(base.span)
            ),
            _ => "only a function name, a cast or a built-in can be called: `f(x)`".to_string(),
        };
        self.report(
            Diagnostic::error(codes::BAD_CALLEE, "only a name can be called", e.span)
                .with_label("this is not a function name")
                .with_help(help),
        );
        let _ = self.call_args_d();
        ParseError
    }

    fn primary_d(&mut self) -> PResult<(Expr, u32)> {
        let tok = self.peek();
        let kind = match tok.kind {
            TokenKind::Int(v) => ExprKind::Int(v),
            TokenKind::Float(v) => ExprKind::Float(v),
            TokenKind::True => ExprKind::Bool(true),
            TokenKind::False => ExprKind::Bool(false),
            TokenKind::Ident => {
                self.bump();
                let id = self.ident_of(tok);
                if !self.at(TokenKind::LParen) {
                    return Ok((
                        Expr {
                            span: tok.span,
                            kind: ExprKind::Name(id),
                        },
                        1,
                    ));
                }
                let (args, close, depth) = self.call_args_d()?;
                let span = tok.span.to(close);
                self.check_tree_depth(depth + 1, span)?;
                return Ok((
                    Expr {
                        span,
                        kind: ExprKind::Call { callee: id, args },
                    },
                    depth + 1,
                ));
            }
            TokenKind::LBracket => {
                let open = self.bump();
                self.enter("expression")?;
                let mut deepest = 0;
                let r = self.delimited(open, TokenKind::RBracket, |p| {
                    let (v, depth) = p.binary_d(1)?;
                    deepest = deepest.max(depth);
                    Ok(v)
                });
                self.leave();
                let (items, close) = r?;
                let span = open.span.to(close);
                self.check_tree_depth(deepest + 1, span)?;
                return Ok((
                    Expr {
                        span,
                        kind: ExprKind::List(items),
                    },
                    deepest + 1,
                ));
            }
            TokenKind::LParen => {
                self.bump();
                self.enter("expression")?;
                let old = std::mem::replace(&mut self.ignore_nl, true);
                let r = self.paren_rest(tok);
                self.ignore_nl = old;
                self.leave();
                return r;
            }
            TokenKind::Error => {
                self.bump();
                return Err(ParseError);
            }
            _ => return Err(self.expected_expr()),
        };
        self.bump();
        Ok((
            Expr {
                kind,
                span: tok.span,
            },
            1,
        ))
    }

    /// After `(`: the inner expression and `)`. The span covers the parentheses; they make no
    /// node of their own.
    fn paren_rest(&mut self, open: Token) -> PResult<(Expr, u32)> {
        let (inner, depth) = self.binary_d(1)?;
        let close = self.expect_close(TokenKind::RParen, open, false)?;
        Ok((
            Expr {
                span: open.span.to(close),
                ..inner
            },
            depth,
        ))
    }

    /// "expected an expression" with a hint for the usual slips.
    #[cold]
    #[inline(never)]
    pub(crate) fn expected_expr(&mut self) -> ParseError {
        let tok = self.peek();
        let next = self.tokens[self.index_of(1)];
        let help = match tok.kind {
            TokenKind::Dot
                if matches!(next.kind, TokenKind::Int(_)) && next.span.lo == tok.span.hi =>
            {
                Some(format!(
                    "a float literal needs a digit before the point: write `0{}`",
                    self.snippet(tok.span.to(next.span))
                ))
            }
            TokenKind::Plus if !self.at_line_start() => {
                Some("Phobos has no unary `+`; remove it".to_string())
            }
            k if binop_of(k).is_some() && self.at_line_start() => Some(
                "a line that continues an expression must end with the operator, not start with it"
                    .to_string(),
            ),
            _ => None,
        };
        self.error_expected_with(codes::EXPECTED_EXPR, "an expression", help)
    }

    /// `(args)` after a callee: positional `e` or named `axis = e`. Returns the args, the
    /// span of the closing parenthesis and the deepest argument's depth.
    fn call_args_d(&mut self) -> PResult<(Vec<Arg>, Span, u32)> {
        let open = self.expect(TokenKind::LParen)?;
        self.enter("expression")?;
        let mut deepest = 0;
        let r = self.delimited(open, TokenKind::RParen, |p| {
            let name = if p.at(TokenKind::Ident) && p.nth_kind(1) == TokenKind::Eq {
                let tok = p.bump();
                p.bump();
                Some(p.ident_of(tok))
            } else {
                None
            };
            let (value, depth) = p.binary_d(1)?;
            deepest = deepest.max(depth);
            Ok(Arg { name, value })
        });
        self.leave();
        let (args, close) = r?;
        Ok((args, close, deepest))
    }

    /// A comma-separated list up to `close` (the cursor is just past `open`); newlines inside
    /// are insignificant and a trailing comma is allowed. Returns the items and the span of
    /// the closer.
    pub(crate) fn delimited<T>(
        &mut self,
        open: Token,
        close: TokenKind,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<(Vec<T>, Span)> {
        let old = std::mem::replace(&mut self.ignore_nl, true);
        let mut items = Vec::new();
        let r = loop {
            if let Some(c) = self.eat(close) {
                break Ok(c.span);
            }
            match item(self) {
                Ok(x) => items.push(x),
                Err(e) => break Err(e),
            }
            if self.eat(TokenKind::Comma).is_none() && !self.at(close) {
                break self.expect_close(close, open, true);
            }
        };
        self.ignore_nl = old;
        r.map(|c| (items, c))
    }

    /// Expects the closer of `open`; the diagnostic points back at the opener.
    pub(crate) fn expect_close(
        &mut self,
        close: TokenKind,
        open: Token,
        list: bool,
    ) -> PResult<Span> {
        match self.eat(close) {
            Some(tok) => Ok(tok.span),
            None => Err(self.unclosed(close, open, list)),
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn unclosed(&mut self, close: TokenKind, open: Token, list: bool) -> ParseError {
        if self.quiet() {
            return ParseError;
        }
        let closer = close.text().unwrap_or("?");
        let opener = open.kind.text().unwrap_or("?");
        let expected = if list {
            format!("`,` or `{closer}`")
        } else {
            format!("`{closer}`")
        };
        let (span, found) = self.found_span();
        let unclosed = matches!(
            self.peek_kind(),
            TokenKind::Eof
                | TokenKind::Kernel
                | TokenKind::RBrace
                | TokenKind::LBrace
                | TokenKind::RParen
                | TokenKind::RBracket
                | TokenKind::Semi
        );
        let code = if unclosed || self.newline_before_next() {
            codes::UNCLOSED
        } else {
            codes::EXPECTED
        };
        let d = Diagnostic::error(code, format!("expected {expected}, found {found}"), span)
            .with_label(format!("expected {expected}"))
            .with_secondary(open.span, format!("to close this `{opener}`"));
        self.report(d);
        ParseError
    }
}
