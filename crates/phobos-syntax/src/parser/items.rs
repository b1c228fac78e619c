//! Kernels, their attributes, type parameters, parameters and types.

use super::{PResult, ParseError, Parser};
use crate::ast::{
    Attr, AttrKind, AutotuneEntry, ChoiceList, DimExpr, ExprKind, Kernel, Param, TypeExpr,
    TypeParam,
};
use crate::codes;
use crate::diag::Diagnostic;
use crate::span::Span;
use crate::token::{Token, TokenKind};

/// The argument form of each known attribute that takes arguments, shown as help when the
/// arguments do not fit.
fn attr_form(name: &str) -> Option<&'static str> {
    Some(match name {
        "autotune" => {
            "write `@autotune(NAME in [v1, v2, ...], ...)`, e.g. `@autotune(TILE_M in [32, 128])`, \
             or `NAME in {a, b}` for explicit choices"
        }
        "launch" => {
            "write `@launch(threads[, min_blocks_per_sm[, max_regs]])`, e.g. `@launch(256)`"
        }
        "grid" => "write `@grid(x[, y[, z]])`, e.g. `@grid(cdiv(M, TILE_M), cdiv(N, TILE_N))`",
        "where" => "write `@where(condition)`, e.g. `@where(K % TILE_K == 0)`",
        "aligned" => "write `@aligned(NAME = multiple, ...)`, e.g. `@aligned(K = 8)`",
        "flops" => "write `@flops(expression)`, e.g. `@flops(2 * M * N * K)`",
        "bytes" => "write `@bytes(expression)`, e.g. `@bytes(4 * (M * K + K * N + M * N))`",
        _ => return None,
    })
}

impl Parser<'_> {
    /// The whole file: kernels until end of input, recovering at the next `kernel` or `@`.
    pub(crate) fn file(&mut self) -> Vec<Kernel> {
        let mut kernels = Vec::new();
        loop {
            self.skip_newlines();
            if self.at(TokenKind::Eof) {
                return kernels;
            }
            let start = self.pos;
            match self.kernel() {
                Ok(k) => kernels.push(k),
                Err(ParseError) => self.sync_top(),
            }
            if self.pos == start && !self.at(TokenKind::Eof) {
                self.pos += 1;
            }
        }
    }

    fn kernel(&mut self) -> PResult<Kernel> {
        let first = self.peek();
        let mut attrs = Vec::new();
        while self.at(TokenKind::At) {
            if let Some(attr) = self.attr() {
                attrs.push(attr);
            }
            self.skip_newlines();
        }
        let kw = self.peek();
        match kw.kind {
            TokenKind::Kernel => {
                self.bump();
            }
            // `gemm(...)`: the keyword is missing; read the rest as a kernel anyway.
            TokenKind::Ident if matches!(self.nth_kind(1), TokenKind::LParen | TokenKind::Lt) => {
                let name = self.snippet(kw.span);
                self.report(
                    Diagnostic::error(
                        codes::MISSING_KERNEL,
                        format!("expected `kernel`, found `{name}`"),
                        kw.span,
                    )
                    .with_label("a kernel definition starts with `kernel`")
                    .with_help(format!("write `kernel {name}(...)`")),
                );
            }
            // `kernal gemm(...)` or `fn gemm(...)`: a misspelt keyword.
            TokenKind::Ident if self.nth_kind(1) == TokenKind::Ident => {
                let word = self.snippet(kw.span);
                self.report(
                    Diagnostic::error(
                        codes::MISSING_KERNEL,
                        format!("expected `kernel`, found `{word}`"),
                        kw.span,
                    )
                    .with_label("not a keyword")
                    .with_help(
                        "a kernel definition starts with `kernel`: `kernel name(...) { ... }`",
                    ),
                );
                self.bump();
            }
            _ => {
                let expected = if attrs.is_empty() {
                    "`kernel`"
                } else {
                    "`kernel` after the attributes"
                };
                return Err(self.error_expected_with(codes::MISSING_KERNEL, expected, None));
            }
        }
        let name = self.ident("a kernel name")?;
        let type_params = if self.at(TokenKind::Lt) {
            self.type_params()
        } else {
            Vec::new()
        };
        let params = self.params()?;
        let body = self.block()?;
        Ok(Kernel {
            span: first.span.to(body.span),
            attrs,
            name,
            type_params,
            params,
            body,
        })
    }

    /// `<T, TC = f32>`; on an error the list is skipped up to `>` or `(`.
    fn type_params(&mut self) -> Vec<TypeParam> {
        let lt = self.bump();
        let r = self.with_nl(true, |p| {
            let mut tps = Vec::new();
            loop {
                if p.eat(TokenKind::Gt).is_some() {
                    return Ok(tps);
                }
                let name = p.ident("a type parameter name")?;
                let default = if p.eat(TokenKind::Eq).is_some() {
                    Some(p.ident("a type name")?)
                } else {
                    None
                };
                let span = default.as_ref().map_or(name.span, |d| name.span.to(d.span));
                tps.push(TypeParam {
                    name,
                    default,
                    span,
                });
                if p.eat(TokenKind::Comma).is_none() && !p.at(TokenKind::Gt) {
                    p.expect_close(TokenKind::Gt, lt, true)?;
                }
            }
        });
        r.unwrap_or_else(|ParseError| {
            while !matches!(
                self.tokens[self.pos].kind,
                TokenKind::LParen | TokenKind::LBrace | TokenKind::Eof | TokenKind::Kernel
            ) {
                self.pos += 1;
                if self.tokens[self.pos - 1].kind == TokenKind::Gt {
                    break;
                }
            }
            Vec::new()
        })
    }

    /// `(A: tensor<f32>[M, K], alpha: f32)`; a broken parameter is skipped up to the next
    /// `,` so the others and the body still parse.
    fn params(&mut self) -> PResult<Vec<Param>> {
        if !self.at(TokenKind::LParen) {
            return Err(self.error_expected_with(
                codes::EXPECTED,
                "`(` and the kernel parameters",
                Some("write `kernel name(A: tensor<f32>[M, N], ...) { ... }`".to_string()),
            ));
        }
        let open = self.bump();
        Ok(self.with_nl(true, |p| {
            let mut params = Vec::new();
            loop {
                if p.eat(TokenKind::RParen).is_some() {
                    return params;
                }
                if matches!(
                    p.peek_kind(),
                    TokenKind::LBrace | TokenKind::Eof | TokenKind::Kernel
                ) {
                    let _ = p.expect_close(TokenKind::RParen, open, true);
                    return params;
                }
                let start = p.pos;
                match p.param() {
                    Ok(param) => {
                        params.push(param);
                        if p.eat(TokenKind::Comma).is_none()
                            && !p.at(TokenKind::RParen)
                            && p.expect_close(TokenKind::RParen, open, true).is_err()
                        {
                            p.skip_param_rest();
                        }
                    }
                    Err(ParseError) => p.skip_param_rest(),
                }
                if p.pos == start && !p.at(TokenKind::Eof) {
                    p.pos += 1;
                }
            }
        }))
    }

    /// Skips to just past the next `,` outside brackets, or up to `)`, `{` or `kernel`.
    fn skip_param_rest(&mut self) {
        let mut depth = 0u32;
        loop {
            match self.tokens[self.pos].kind {
                TokenKind::Eof | TokenKind::Kernel | TokenKind::LBrace => return,
                TokenKind::RParen if depth == 0 => return,
                TokenKind::Comma if depth == 0 => {
                    self.pos += 1;
                    return;
                }
                TokenKind::LParen | TokenKind::LBracket => depth += 1,
                TokenKind::RParen | TokenKind::RBracket => depth = depth.saturating_sub(1),
                _ => {}
            }
            self.pos += 1;
        }
    }

    fn param(&mut self) -> PResult<Param> {
        let name = self.ident("a parameter name")?;
        if self.eat(TokenKind::Colon).is_none() {
            let help = format!("write `{0}: tensor<f32>[M, N]` or `{0}: f32`", name.name);
            return Err(self.error_expected_with(codes::EXPECTED, "`:` and a type", Some(help)));
        }
        let ty = self.type_expr()?;
        Ok(Param {
            span: name.span.to(ty.span()),
            name,
            ty,
        })
    }

    /// `f32`, `TA`, `tensor<T>[M, 64]` or `tile<T>[TILE_M, 2 * W]`.
    pub(crate) fn type_expr(&mut self) -> PResult<TypeExpr> {
        let tok = self.peek();
        if tok.kind != TokenKind::Ident {
            return Err(self.error_expected_with(
                codes::EXPECTED_TYPE,
                "a type",
                Some(
                    "types are written `f32`, `tensor<f32>[M, N]` or `tile<f32>[16, 16]`"
                        .to_string(),
                ),
            ));
        }
        self.bump();
        let id = self.ident_of(tok);
        let tensor = id.name == "tensor";
        if !tensor && id.name != "tile" {
            return Ok(TypeExpr::Scalar(id));
        }
        if !self.at(TokenKind::Lt) {
            if matches!(self.peek_kind(), TokenKind::LBracket | TokenKind::LParen) {
                let help = format!("write `{}<f32>[M, N]`", id.name);
                return Err(self.error_expected_with(
                    codes::EXPECTED,
                    "`<` and an element type",
                    Some(help),
                ));
            }
            return Ok(TypeExpr::Scalar(id));
        }
        let lt = self.bump();
        let elem = self.ident("an element type")?;
        self.expect_close(TokenKind::Gt, lt, false)?;
        let open = self.peek();
        let close_kind = match open.kind {
            TokenKind::LBracket => TokenKind::RBracket,
            TokenKind::LParen => TokenKind::RParen,
            _ => {
                let help = format!("write `{}<{}>[M, N]`", id.name, elem.name);
                return Err(self.error_expected_with(
                    codes::EXPECTED,
                    "`[` and the dims",
                    Some(help),
                ));
            }
        };
        self.bump();
        let (dims, close) = if tensor {
            let (dims, close) = self.delimited(open, close_kind, |p| p.tensor_dim())?;
            (Dims::Tensor(dims.into_iter().flatten().collect()), close)
        } else {
            let (dims, close) = self.delimited(open, close_kind, |p| p.expr())?;
            (Dims::Tile(dims), close)
        };
        if close_kind == TokenKind::RParen {
            let inner = self.snippet(Span {
                lo: open.span.hi,
                hi: close.lo,
            });
            self.report(
                Diagnostic::error(
                    codes::DIMS_IN_PARENS,
                    format!("expected `[` after `{}<{}>`, found `(`", id.name, elem.name),
                    open.span,
                )
                .with_label("dims go in brackets")
                .with_help(format!(
                    "write `{}<{}>[{}]`",
                    id.name,
                    elem.name,
                    inner.trim()
                )),
            );
        }
        let span = tok.span.to(close);
        Ok(match dims {
            Dims::Tensor(dims) => TypeExpr::Tensor { elem, dims, span },
            Dims::Tile(dims) => TypeExpr::Tile { elem, dims, span },
        })
    }

    /// One tensor dim: a name or an integer literal. Anything else is read as an expression
    /// (so the list goes on), reported, and dropped.
    fn tensor_dim(&mut self) -> PResult<Option<DimExpr>> {
        let e = self.expr()?;
        match e.kind {
            ExprKind::Name(id) => Ok(Some(DimExpr::Name(id))),
            ExprKind::Int(v) => Ok(Some(DimExpr::Lit(v, e.span))),
            _ => {
                self.report(
                    Diagnostic::error(
                        codes::BAD_DIM,
                        format!("expected a dim name or an integer literal, found `{}`", self.snippet(e.span)),
                        e.span,
                    )
                    .with_label("not a name or an integer")
                    .with_help("a tensor dim is a name (a runtime extent or an `@autotune` constant) or an integer literal"),
                );
                Ok(None)
            }
        }
    }

    /// One `@name` or `@name(...)`. A broken attribute is reported and dropped (`None`).
    fn attr(&mut self) -> Option<Attr> {
        let at = self.bump();
        let name_tok = self.peek();
        if name_tok.kind != TokenKind::Ident {
            self.error_expected("an attribute name after `@`");
            return None;
        }
        self.bump();
        let name = self.ident_of(name_tok);
        let kind = match (name.name.as_str(), attr_form(&name.name)) {
            ("allow_tf32", _) => {
                if self.at(TokenKind::LParen) {
                    let open = self.bump();
                    let _ = self.skip_group_from(self.pos - 1);
                    let span = open.span.to(Span {
                        lo: self.prev_hi,
                        hi: self.prev_hi,
                    });
                    self.report(
                        Diagnostic::error(
                            codes::BAD_ATTR,
                            "`@allow_tf32` takes no arguments",
                            span,
                        )
                        .with_label("remove these")
                        .with_help("write `@allow_tf32`"),
                    );
                    return None;
                }
                AttrKind::AllowTf32
            }
            (_, None) => AttrKind::Unknown(self.unknown_attr_args()),
            (_, Some(form)) => {
                if !self.at(TokenKind::LParen) {
                    self.error_expected_with(
                        codes::BAD_ATTR,
                        &format!("`(` and the arguments of `@{}`", name.name),
                        Some(form.to_string()),
                    );
                    return None;
                }
                let open = self.bump();
                let open_idx = self.pos - 1;
                let mark = self.diags.len();
                match self.known_attr_args(&name.name, open, form) {
                    Ok(kind) => kind,
                    Err(ParseError) => {
                        if self.diags.len() > mark {
                            if let Some(d) = self.diags.last_mut() {
                                if d.code == codes::EXPECTED {
                                    d.code = codes::BAD_ATTR;
                                }
                                if d.help.is_none() {
                                    d.help = Some(form.to_string());
                                }
                            }
                        }
                        let _ = self.skip_group_from(open_idx);
                        return None;
                    }
                }
            }
        };
        Some(Attr {
            name,
            kind,
            span: Span {
                lo: at.span.lo,
                hi: self.prev_hi,
            },
        })
    }

    /// The arguments of a known attribute; the cursor is just past `(`.
    fn known_attr_args(&mut self, name: &str, open: Token, form: &str) -> PResult<AttrKind> {
        if name == "autotune" {
            let (entries, _) = self.delimited(open, TokenKind::RParen, |p| p.autotune_entry())?;
            return Ok(AttrKind::Autotune(entries));
        }
        if name == "aligned" {
            let (pairs, close) = self.delimited(open, TokenKind::RParen, |p| {
                let id = p.ident("a dim name")?;
                p.expect(TokenKind::Eq)?;
                Ok((id, p.expr()?))
            })?;
            if pairs.is_empty() {
                return Err(self.attr_arity(
                    name,
                    0,
                    "at least 1 argument",
                    open.span.to(close),
                    form,
                ));
            }
            return Ok(AttrKind::Aligned(pairs));
        }
        let (mut args, close) = self.delimited(open, TokenKind::RParen, |p| p.expr())?;
        let span = open.span.to(close);
        match name {
            "launch" | "grid" => {
                if args.is_empty() || args.len() > 3 {
                    return Err(self.attr_arity(name, args.len(), "1 to 3 arguments", span, form));
                }
                Ok(if name == "launch" {
                    AttrKind::Launch(args)
                } else {
                    AttrKind::Grid(args)
                })
            }
            _ => {
                if args.len() != 1 {
                    return Err(self.attr_arity(
                        name,
                        args.len(),
                        "exactly 1 argument",
                        span,
                        form,
                    ));
                }
                let e = args.remove(0);
                Ok(match name {
                    "where" => AttrKind::Where(e),
                    "flops" => AttrKind::Flops(e),
                    _ => AttrKind::Bytes(e),
                })
            }
        }
    }

    /// `expected` is a phrase such as "1 to 3 arguments" or "exactly 1 argument".
    fn attr_arity(
        &mut self,
        name: &str,
        found: usize,
        expected: &str,
        span: Span,
        form: &str,
    ) -> ParseError {
        self.report(
            Diagnostic::error(
                codes::BAD_ATTR,
                format!("`@{name}` takes {expected}, found {found}"),
                span,
            )
            .with_label("wrong number of arguments")
            .with_help(form),
        );
        ParseError
    }

    /// `NAME in [v1, v2, ...]` or `NAME in {v1, v2, ...}`.
    fn autotune_entry(&mut self) -> PResult<AutotuneEntry> {
        let name = self.ident("a constant name")?;
        if self.eat(TokenKind::In).is_none() {
            return Err(self.error_expected("`in`"));
        }
        let open = self.peek();
        let (list, closer) = match open.kind {
            TokenKind::LBracket => (ChoiceList::Brackets, TokenKind::RBracket),
            TokenKind::LBrace => (ChoiceList::Braces, TokenKind::RBrace),
            _ => {
                return Err(self.error_expected("`[` or `{` and a list of values"));
            }
        };
        self.bump();
        let (values, close) = self.delimited(open, closer, |p| p.expr())?;
        Ok(AutotuneEntry {
            list_span: open.span.to(close),
            span: name.span.to(close),
            name,
            values,
            list,
        })
    }

    /// The raw text inside the parentheses of an unknown attribute (empty without them).
    /// Brackets inside must balance, so the text is a well-formed group the checker can show.
    fn unknown_attr_args(&mut self) -> String {
        if !self.at(TokenKind::LParen) {
            return String::new();
        }
        let open = self.bump();
        let mut closers = vec![TokenKind::RParen];
        let mut i = self.pos;
        loop {
            let tok = self.tokens[i];
            let want = match tok.kind {
                TokenKind::Eof | TokenKind::Kernel => {
                    self.pos = i;
                    let _ = self.unclosed(TokenKind::RParen, open, false);
                    return self
                        .snippet(Span::new(open.span.hi as usize, self.prev_hi as usize))
                        .trim()
                        .to_string();
                }
                TokenKind::LParen => Some(TokenKind::RParen),
                TokenKind::LBracket => Some(TokenKind::RBracket),
                TokenKind::LBrace => Some(TokenKind::RBrace),
                _ => None,
            };
            if let Some(want) = want {
                closers.push(want);
            } else if matches!(
                tok.kind,
                TokenKind::RParen | TokenKind::RBracket | TokenKind::RBrace
            ) {
                if closers.last() == Some(&tok.kind) {
                    closers.pop();
                    if closers.is_empty() {
                        self.pos = i + 1;
                        self.prev_hi = tok.span.hi;
                        return self
                            .snippet(Span::new(open.span.hi as usize, tok.span.lo as usize))
                            .trim()
                            .to_string();
                    }
                } else {
                    let expected = closers.last().and_then(|k| k.text()).unwrap_or(")");
                    self.report(
                        Diagnostic::error(
                            codes::UNCLOSED,
                            format!("expected `{expected}`, found `{}`", self.snippet(tok.span)),
                            tok.span,
                        )
                        .with_label("unbalanced bracket")
                        .with_secondary(open.span, "in the arguments of this attribute"),
                    );
                }
            }
            if tok.kind != TokenKind::Newline {
                self.prev_hi = tok.span.hi;
            }
            i += 1;
        }
    }
}

enum Dims {
    Tensor(Vec<DimExpr>),
    Tile(Vec<crate::ast::Expr>),
}
