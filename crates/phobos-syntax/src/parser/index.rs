//! Index expressions: `base[...]` with its positions (`i`, `a :+ n`, `a:b`, `:`) and its
//! named options after them (`cache = evict_last`), each position's tree depth tracked as
//! in [`super::exprs`].

use super::{PResult, ParseError, Parser};
use crate::ast::{Expr, ExprKind, IndexExpr, IndexOption};
use crate::codes;
use crate::diag::Diagnostic;
use crate::span::Span;
use crate::token::TokenKind;

impl Parser<'_> {
    pub(super) fn index_d(&mut self, base: Expr, base_depth: u32) -> PResult<(Expr, u32)> {
        let open = self.bump();
        self.enter("expression")?;
        let mut deepest = base_depth;
        let r = self.delimited(open, TokenKind::RBracket, |p| {
            if p.at(TokenKind::Ident) && p.nth_kind(1) == TokenKind::Eq {
                let tok = p.bump();
                p.bump();
                let name = p.ident_of(tok);
                let (value, depth) = p.binary_d(1)?;
                deepest = deepest.max(depth);
                return Ok(Err(IndexOption { name, value }));
            }
            let (ix, depth) = p.index_pos_d()?;
            deepest = deepest.max(depth);
            Ok(Ok(ix))
        });
        self.leave();
        let (items, close) = r?;
        let mut indices = Vec::new();
        let mut options: Vec<IndexOption> = Vec::new();
        for item in items {
            match item {
                Ok(ix) => match options.first() {
                    Some(o) => return Err(self.index_after_option(ix.span(), o.name.span)),
                    None => indices.push(ix),
                },
                Err(o) => options.push(o),
            }
        }
        if indices.is_empty() {
            return Err(self.empty_index(open.span.to(close)));
        }
        let span = base.span.to(close);
        self.check_tree_depth(deepest + 1, span)?;
        Ok((
            Expr {
                span,
                kind: ExprKind::Index {
                    base: Box::new(base),
                    indices,
                    options,
                },
            },
            deepest + 1,
        ))
    }

    #[cold]
    #[inline(never)]
    fn index_after_option(&mut self, span: Span, option: Span) -> ParseError {
        self.report(
            Diagnostic::error(codes::BAD_INDEX, "an index after a named option", span)
                .with_label("an index")
                .with_secondary(option, "the first option")
                .with_help(
                    "write the indices first, then the options: `X[i, j, cache = evict_last]`",
                ),
        );
        ParseError
    }

    #[cold]
    #[inline(never)]
    fn empty_index(&mut self, span: Span) -> ParseError {
        self.report(
            Diagnostic::error(codes::BAD_INDEX, "expected an index, found `]`", span)
                .with_label("empty index")
                .with_help("write an index: `x[i]`, `x[s :+ n]`, `x[a : b]` or `x[:]`"),
        );
        ParseError
    }

    /// One position inside `[...]`: `i`, `s :+ n`, `a : b`, `a :`, `: b` or `:`.
    fn index_pos_d(&mut self) -> PResult<(IndexExpr, u32)> {
        let tok = self.peek();
        let ends = |p: &Self| matches!(p.peek_kind(), TokenKind::Comma | TokenKind::RBracket);
        match tok.kind {
            TokenKind::Colon => {
                self.bump();
                if ends(self) {
                    let whole = IndexExpr::Range {
                        start: None,
                        end: None,
                        span: tok.span,
                    };
                    return Ok((whole, 0));
                }
                let (end, depth) = self.binary_d(1)?;
                let ix = IndexExpr::Range {
                    span: tok.span.to(end.span),
                    start: None,
                    end: Some(end),
                };
                return Ok((ix, depth));
            }
            TokenKind::ColonPlus => return Err(self.colon_plus_without_start(tok.span)),
            _ => {}
        }
        let (start, d1) = self.binary_d(1)?;
        match self.peek_kind() {
            TokenKind::ColonPlus => {
                self.bump();
                let (len, d2) = self.binary_d(1)?;
                let ix = IndexExpr::Span {
                    span: start.span.to(len.span),
                    start,
                    len,
                };
                Ok((ix, d1.max(d2)))
            }
            TokenKind::Colon => {
                let colon = self.bump();
                if ends(self) {
                    let ix = IndexExpr::Range {
                        span: start.span.to(colon.span),
                        start: Some(start),
                        end: None,
                    };
                    return Ok((ix, d1));
                }
                let (end, d2) = self.binary_d(1)?;
                let ix = IndexExpr::Range {
                    span: start.span.to(end.span),
                    start: Some(start),
                    end: Some(end),
                };
                Ok((ix, d1.max(d2)))
            }
            _ => Ok((IndexExpr::At(start), d1)),
        }
    }

    #[cold]
    #[inline(never)]
    fn colon_plus_without_start(&mut self, span: Span) -> ParseError {
        self.report(
            Diagnostic::error(
                codes::BAD_INDEX,
                "expected a start before `:+`, found `:+`",
                span,
            )
            .with_label("no start")
            .with_help("write `start :+ length`, e.g. `i * 16 :+ 16`"),
        );
        ParseError
    }
}
