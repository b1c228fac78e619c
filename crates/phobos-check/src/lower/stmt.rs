//! Statements, assignments and control flow, with the uniformity rules:
//!
//! - a tile statement (one whose expressions involve a tile) must run under uniform control:
//!   not under a per-thread `if`/`while` condition, not in a loop with per-thread bounds, not
//!   after a per-thread `break`/`continue` in its loop, not anywhere in a loop that a
//!   per-thread `break` leaves;
//! - a `var` assigned a per-thread value, or assigned under per-thread control, is per-thread.

use super::types::ty_str;
use super::value::walk;
use super::{Binding, Cx, Div, DivKind, LocalMeta};
use crate::codes;
use crate::kernel::is_reserved;
use phobos_ir as ir;
use phobos_ir::DType;
use phobos_syntax::ast::{self, StmtKind};
use phobos_syntax::{Diagnostic, Span};

/// The largest `for<unroll U>` factor: each copy of the body is emitted, so larger factors only
/// bloat the code.
pub const MAX_UNROLL: u32 = 1024;

pub(super) fn mentions_tile(e: &ir::Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| found |= x.ty.is_tile());
    found
}

impl Cx<'_> {
    /// A block in its own scope.
    pub fn block(&mut self, stmts: &[ast::Stmt]) -> Vec<ir::Stmt> {
        self.push_scope();
        let saved = self.div;
        let mut out = Vec::new();
        for s in stmts {
            self.stmt(s, &mut out);
            if self.div.is_none() {
                self.div = self.pending;
            }
        }
        self.div = saved;
        self.pop_scope();
        out
    }

    /// Reports a tile statement under per-thread control.
    pub(super) fn tile_stmt(&mut self, span: Span, exprs: &[&ir::Expr]) {
        let is_tile = exprs.iter().any(|e| mentions_tile(e));
        self.tile_stmt_if(span, is_tile);
    }

    pub(super) fn tile_stmt_if(&mut self, span: Span, is_tile: bool) {
        let Some(div) = self.div else { return };
        if !is_tile {
            return;
        }
        let cond = self.text(div.cond).to_string();
        let (msg, label) = match div.kind {
            DivKind::If => (format!("tile statement under the per-thread condition `{cond}`"), "this condition differs between threads"),
            DivKind::While => (format!("tile statement in a loop whose condition `{cond}` is per-thread"), "this condition differs between threads"),
            DivKind::LoopBounds => (format!("tile statement in a loop whose bounds `{cond}` are per-thread"), "these bounds differ between threads"),
            DivKind::AfterJump => (format!("tile statement after a `break` or `continue` under the per-thread condition `{cond}`"), "this condition differs between threads"),
            DivKind::BrokenLoop => (format!("tile statement in a loop that a per-thread `break` leaves (condition `{cond}`)"), "this condition differs between threads"),
        };
        self.error(
            Diagnostic::error(codes::DIVERGENT_TILE, msg, span)
                .with_label("a tile statement: every thread of the block must run it")
                .with_secondary(div.cond, label)
                .with_help("move the tile statement out of the per-thread region, or make the condition uniform (literals, dims, constants, scalar parameters, ctx.block, reductions of tiles)"),
        );
    }

    fn stmt(&mut self, s: &ast::Stmt, out: &mut Vec<ir::Stmt>) {
        match &s.kind {
            StmtKind::Let {
                name,
                mutable,
                ty,
                init,
            } => self.let_stmt(name, *mutable, ty.as_ref(), init.as_ref(), s.span, out),
            StmtKind::Assign { target, op, value } => self.assign(target, *op, value, s.span, out),
            StmtKind::Expr(e) if super::atomic::as_atomic(e).is_some() => {
                self.atomic_stmt(e, None, s.span, out)
            }
            StmtKind::Expr(e) => {
                if self.expr(e).is_some() {
                    self.error(
                        Diagnostic::warning(
                            codes::UNUSED_VALUE,
                            "the value of this expression is unused",
                            e.span,
                        )
                        .with_label("computed and dropped")
                        .with_help(format!(
                            "bind it (`let v = {}`) or remove it",
                            self.text(e.span)
                        )),
                    );
                }
            }
            StmtKind::For {
                unroll,
                var,
                iter,
                body,
            } => self.for_stmt(unroll.as_ref(), var, iter, body, s.span, out),
            StmtKind::While { cond, body } => {
                let Some(c) = self.cond(cond) else {
                    self.loop_body(body, s.span, None);
                    return;
                };
                self.tile_stmt(cond.span, &[&c]);
                let div = (!c.uniform).then_some(Div {
                    cond: cond.span,
                    kind: DivKind::While,
                    loops: self.loops.len() + 1,
                });
                let body = self.loop_body(body, s.span, div);
                out.push(stmt(ir::StmtKind::While { cond: c, body }, s.span));
            }
            StmtKind::If { .. } => self.if_stmt(s, out),
            StmtKind::Block(b) => out.extend(self.block(&b.stmts)),
            StmtKind::Break | StmtKind::Continue => {
                let Some(&lp) = self.loops.last() else {
                    let what = if matches!(s.kind, StmtKind::Break) {
                        "break"
                    } else {
                        "continue"
                    };
                    self.error(
                        Diagnostic::error(
                            codes::OUTSIDE_LOOP,
                            format!("`{what}` outside of a loop"),
                            s.span,
                        )
                        .with_label("not inside `for` or `while`"),
                    );
                    return;
                };
                if let Some(d) = self.div.filter(|d| d.loops >= self.loops.len()) {
                    if matches!(s.kind, StmtKind::Break) {
                        self.mark_broken_loop(lp, d.cond);
                    }
                    self.pending = Some(Div {
                        kind: DivKind::AfterJump,
                        ..d
                    });
                }
                let kind = if matches!(s.kind, StmtKind::Break) {
                    ir::StmtKind::Break
                } else {
                    ir::StmtKind::Continue
                };
                out.push(stmt(kind, s.span));
            }
        }
    }

    /// A scalar bool condition.
    fn cond(&mut self, e: &ast::Expr) -> Option<ir::Expr> {
        let v = self.expr(e)?;
        if v.is_tile() || v.dtype() != DType::Bool || v.weak.is_some() {
            let help = if v.is_tile() {
                "reduce the tile to a scalar first, e.g. `max(t) > 0.0`".to_string()
            } else {
                format!("compare to get a bool, e.g. `{} != 0`", self.text(e.span))
            };
            let found = if v.weak.is_some() {
                "a number".to_string()
            } else {
                ty_str(v.ty())
            };
            self.error(
                Diagnostic::error(
                    codes::NOT_BOOL,
                    format!("a condition must be a scalar bool, found {found}"),
                    e.span,
                )
                .with_label("not a bool")
                .with_help(help),
            );
            return None;
        }
        Some(v.e)
    }

    /// A loop body: its scope, the loop stack and the loop's own divergence.
    fn loop_body(&mut self, body: &ast::Block, span: Span, div: Option<Div>) -> Vec<ir::Stmt> {
        let saved = self.div;
        if self.div.is_none() {
            self.div = div.or_else(|| {
                self.broken_loop(span).map(|cond| Div {
                    cond,
                    kind: DivKind::BrokenLoop,
                    loops: self.loops.len() + 1,
                })
            });
        }
        self.loops.push(span);
        let out = self.block(&body.stmts);
        self.loops.pop();
        self.pending = None;
        self.div = saved;
        out
    }

    fn if_stmt(&mut self, s: &ast::Stmt, out: &mut Vec<ir::Stmt>) {
        let StmtKind::If { cond, then, els } = &s.kind else {
            return;
        };
        let c = self.cond(cond);
        if let Some(c) = &c {
            self.tile_stmt(cond.span, &[c]);
        }
        let saved = self.div;
        if self.div.is_none() && c.as_ref().is_some_and(|c| !c.uniform) {
            self.div = Some(Div {
                cond: cond.span,
                kind: DivKind::If,
                loops: self.loops.len(),
            });
        }
        let before = self.pending.take();
        let then_body = self.block(&then.stmts);
        let p1 = self.pending.take();
        let mut else_body = Vec::new();
        if let Some(e) = els {
            match &e.kind {
                StmtKind::Block(b) => else_body = self.block(&b.stmts),
                _ => {
                    self.push_scope();
                    self.stmt(e, &mut else_body);
                    self.pop_scope();
                }
            }
        }
        let p2 = self.pending.take();
        self.pending = before.or(p1).or(p2);
        self.div = saved;
        if let Some(cond) = c {
            out.push(stmt(
                ir::StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                },
                s.span,
            ));
        }
    }

    fn for_stmt(
        &mut self,
        unroll: Option<&ast::Expr>,
        var: &ast::Ident,
        iter: &ast::Expr,
        body: &ast::Block,
        span: Span,
        out: &mut Vec<ir::Stmt>,
    ) {
        let bounds = self.range(iter);
        let factor = match unroll {
            None => Some(1),
            Some(e) => self
                .const_int(e, "the unroll factor", codes::UNROLL)
                .and_then(|u| {
                    if (1..=MAX_UNROLL as i64).contains(&u) {
                        Some(u as u32)
                    } else {
                        let shown = self.text(e.span).to_string();
                        self.error(
                            Diagnostic::error(
                                codes::UNROLL,
                                format!("the unroll factor must be in 1..={MAX_UNROLL}, not {u}"),
                                e.span,
                            )
                            .with_label(if shown == u.to_string() {
                                "unroll factor".to_string()
                            } else {
                                format!("`{shown}` = {u} at this point")
                            })
                            .with_help("`for<unroll 1>` is the plain loop"),
                        );
                        None
                    }
                }),
        };
        let uniform = bounds.as_ref().is_some_and(|b| b.iter().all(|e| e.uniform));
        if let Some(b) = &bounds {
            self.tile_stmt(iter.span, &[&b[0], &b[1], &b[2]]);
        }
        self.push_scope();
        let local = self.new_local(var, ir::Ty::Scalar(DType::I32), uniform, false, None);
        let div = (bounds.is_some() && !uniform).then_some(Div {
            cond: iter.span,
            kind: DivKind::LoopBounds,
            loops: self.loops.len() + 1,
        });
        let body = self.loop_body(body, span, div);
        self.pop_scope();
        if let (Some([start, end, step]), Some(unroll), Some(var)) = (bounds, factor, local) {
            out.push(stmt(
                ir::StmtKind::For {
                    var,
                    start,
                    end,
                    step,
                    unroll,
                    body,
                },
                span,
            ));
        }
    }

    /// `range(end)`, `range(start, end)` or `range(start, end, step)`, all i32.
    fn range(&mut self, iter: &ast::Expr) -> Option<[ir::Expr; 3]> {
        let ast::ExprKind::Call { callee, args } = &iter.kind else {
            return self.not_range(iter);
        };
        if callee.name != "range"
            || args.is_empty()
            || args.len() > 3
            || args.iter().any(|a| a.name.is_some())
        {
            return self.not_range(iter);
        }
        let vals: Vec<Option<ir::Expr>> = args
            .iter()
            .map(|a| self.int_arg(&a.value, "a range bound"))
            .collect();
        let vals: Vec<ir::Expr> = vals.into_iter().collect::<Option<_>>()?;
        let int = |v: i64| super::value::lit(phobos_ir::eval::Value::Int(v), DType::I32, iter.span);
        Some(match vals.len() {
            1 => [int(0), vals[0].clone(), int(1)],
            2 => [vals[0].clone(), vals[1].clone(), int(1)],
            _ => [vals[0].clone(), vals[1].clone(), vals[2].clone()],
        })
    }

    fn not_range<T>(&mut self, iter: &ast::Expr) -> Option<T> {
        self.error(
            Diagnostic::error(
                codes::FOR_RANGE,
                "a `for` loop iterates over `range(start, end[, step])`",
                iter.span,
            )
            .with_label("not a range")
            .with_help("write `for i in range(0, N)`, or `range(0, N, step)`"),
        );
        None
    }

    /// Declares a local in the current scope; `None` for a reserved name (reported).
    pub(super) fn new_local(
        &mut self,
        name: &ast::Ident,
        ty: ir::Ty,
        uniform: bool,
        mutable: bool,
        alias: Option<(u8, i64)>,
    ) -> Option<ir::LocalId> {
        if is_reserved(&name.name) {
            self.error(
                Diagnostic::error(
                    codes::RESERVED_NAME,
                    format!("`{}` is reserved and cannot name a variable", name.name),
                    name.span,
                )
                .with_label("reserved name")
                .with_help("choose another name"),
            );
            self.declare(&name.name, Binding::Poison);
            return None;
        }
        let uniform = ty.is_tile() || uniform;
        self.locals.push(ir::Local {
            name: name.name.clone(),
            ty,
            uniform,
            mutable,
            span: name.span,
        });
        self.meta.push(LocalMeta { block_alias: alias });
        let id = self.locals.len() - 1;
        self.declare(&name.name, Binding::Local(id));
        Some(id)
    }

    fn let_stmt(
        &mut self,
        name: &ast::Ident,
        mutable: bool,
        ty: Option<&ast::TypeExpr>,
        init: Option<&ast::Expr>,
        span: Span,
        out: &mut Vec<ir::Stmt>,
    ) {
        let declared = ty.map(|t| self.decl_type(t));
        let Some(init) = init else {
            let kw = if mutable { "var" } else { "let" };
            let example = match ty {
                Some(t) => format!("{kw} {}: {} = ...", name.name, self.text(t.span())),
                None => format!("{kw} {} = ...", name.name),
            };
            self.error(
                Diagnostic::error(
                    codes::MISSING_INIT,
                    format!("`{}` has no initial value", name.name),
                    name.span,
                )
                .with_label("declared without `= value`")
                .with_help(format!("every variable starts with a value: `{example}`")),
            );
            self.declare(&name.name, Binding::Poison);
            return;
        };
        if super::atomic::as_atomic(init).is_some() {
            let bind = super::atomic::Bind {
                name,
                mutable,
                ty: declared,
            };
            return self.atomic_stmt(init, Some(bind), span, out);
        }
        let v = self.expr(init);
        let (Some(v), declared) = (v, declared) else {
            self.declare(&name.name, Binding::Poison);
            return;
        };
        let v = match declared {
            Some(None) => None,
            Some(Some(ty)) => self.convert_for(v, &ty, &format!("`{}`", name.name)),
            None => Some(v),
        };
        let Some(v) = v else {
            self.declare(&name.name, Binding::Poison);
            return;
        };
        if !mutable && !v.is_tile() && v.konst().is_some() && !is_reserved(&name.name) {
            self.declare(&name.name, Binding::Const(v, name.span));
            return;
        }
        let Some(v) = self.materialize(v) else {
            self.declare(&name.name, Binding::Poison);
            return;
        };
        self.tile_stmt(span, &[&v.e]);
        let alias = if mutable {
            None
        } else {
            self.block_scaled(&v.e)
        };
        let uniform = v.uniform() && !self.known_per_thread(name.span);
        if let Some(local) = self.new_local(name, v.ty().clone(), uniform, mutable, alias) {
            out.push(stmt(ir::StmtKind::Assign { local, value: v.e }, span));
        }
    }
}

pub(super) fn stmt(kind: ir::StmtKind, span: Span) -> ir::Stmt {
    ir::Stmt { kind, span }
}
