//! Assignments and stores: `x = e`, `x op= e` (desugared to `x = x op e`), `X[..] = e`.
//!
//! A value assigned to a variable must have its type exactly, except that a weak literal adopts
//! it and a uniform scalar fills a tile; a store converts to the tensor's element type. A scalar
//! `var` assigned a per-thread value or under per-thread control becomes per-thread.

use super::names::Named;
use super::stmt::{mentions_tile, stmt};
use super::types::ty_str;
use super::value::{ex, V};
use super::{Binding, Cx};
use crate::codes;
use phobos_ir as ir;
use phobos_syntax::ast::{self, AssignOp};
use phobos_syntax::{Diagnostic, Span};

impl Cx<'_> {
    /// Converts a value for a variable of type `ty` (declaration or assignment): exact type,
    /// a weak literal of the element type, or a uniform scalar splat into a tile.
    pub(super) fn convert_for(&mut self, v: V, ty: &ir::Ty, target: &str) -> Option<V> {
        let t = ty.dtype();
        let v = self.coerce(v, t)?;
        let mismatch = |cx: &mut Self, v: &V| {
            let help = if v.dtype() != t {
                format!("convert it: `{t}({})`", cx.text(v.span()))
            } else {
                "tiles assign only to tiles of the same shape".to_string()
            };
            cx.error(
                Diagnostic::error(
                    codes::ASSIGN_TYPE,
                    format!(
                        "{target} has type {}, but the value is {}",
                        ty_str(ty),
                        ty_str(v.ty())
                    ),
                    v.span(),
                )
                .with_label(format!("expected {}", ty_str(ty)))
                .with_help(help),
            );
        };
        if v.dtype() != t || (v.is_tile() && v.ty() != ty) || (v.is_tile() && !ty.is_tile()) {
            mismatch(self, &v);
            return None;
        }
        match ty {
            ir::Ty::Tile(_, s) if !v.is_tile() => {
                if !self.uniform_for_tile(&v) {
                    return None;
                }
                let e = self.broadcast_to(v.e, s);
                Some(V::strong(e))
            }
            _ => Some(v),
        }
    }

    pub(super) fn assign(
        &mut self,
        target: &ast::Expr,
        op: AssignOp,
        value: &ast::Expr,
        span: Span,
        out: &mut Vec<ir::Stmt>,
    ) {
        let bin = match op {
            AssignOp::Set => None,
            AssignOp::Add => Some(ir::BinOp::Add),
            AssignOp::Sub => Some(ir::BinOp::Sub),
            AssignOp::Mul => Some(ir::BinOp::Mul),
            AssignOp::Div => Some(ir::BinOp::Div),
        };
        match &target.kind {
            ast::ExprKind::Name(id) => {
                let local = match self.lookup(&id.name) {
                    Named::Binding(Binding::Local(l)) if self.locals[l].mutable => Some(l),
                    Named::Binding(Binding::Local(l)) => {
                        let decl = self.locals[l].span;
                        self.immutable(id, decl);
                        None
                    }
                    Named::Binding(Binding::Const(_, decl)) => {
                        self.immutable(id, decl);
                        None
                    }
                    Named::Binding(Binding::Poison) => None,
                    Named::Tensor(_) => self.not_assignable(
                        id,
                        "the tensor",
                        "store through an index instead, e.g. `X[i, j] = v` or `X[a :+ 64] = t`",
                    ),
                    Named::Scalar(..) => self.not_assignable(
                        id,
                        "the parameter",
                        "copy it into a variable first: `var x = name`",
                    ),
                    Named::Dim(_) => self.not_assignable(
                        id,
                        "the runtime dim",
                        "dims are read from the tensors at launch",
                    ),
                    Named::Env(_) => self.not_assignable(
                        id,
                        "the @autotune constant",
                        "constants of the shape environment are fixed per point",
                    ),
                    Named::Unknown => {
                        self.name_value(id, target.span);
                        None
                    }
                    Named::TypeParam | Named::Ctx | Named::Inf => self.bad_target(target.span),
                };
                let v = self.expr(value);
                let (Some(l), Some(v)) = (local, v) else {
                    return;
                };
                let v = match bin {
                    None => Some(v),
                    Some(op) => {
                        let cur = &self.locals[l];
                        let read = V::strong(ex(
                            ir::ExprKind::Local(l),
                            cur.ty.clone(),
                            cur.uniform,
                            target.span,
                        ));
                        self.binary(op, read, v, span)
                    }
                };
                let ty = self.locals[l].ty.clone();
                let Some(v) = v.and_then(|v| self.convert_for(v, &ty, &format!("`{}`", id.name)))
                else {
                    return;
                };
                let local = &self.locals[l];
                if !local.ty.is_tile() && local.uniform && (!v.uniform() || self.div.is_some()) {
                    let decl = local.span;
                    let why = if v.uniform() {
                        "assigned under per-thread control here"
                    } else {
                        "assigned a per-thread value here"
                    };
                    self.mark_per_thread(decl, span, why);
                }
                self.tile_stmt(span, &[&v.e]);
                out.push(stmt(
                    ir::StmtKind::Assign {
                        local: l,
                        value: v.e,
                    },
                    span,
                ));
            }
            ast::ExprKind::Index {
                base,
                indices,
                options,
            } => {
                let tensor = match &base.kind {
                    ast::ExprKind::Name(id) => match self.lookup(&id.name) {
                        Named::Tensor(pid) => Some(pid),
                        Named::Binding(Binding::Local(l)) if self.locals[l].ty.is_tile() => {
                            self.error(
                                Diagnostic::error(codes::TILE_ELEM_ASSIGN, "the elements of a tile cannot be assigned", target.span)
                                    .with_label("a tile element")
                                    .with_help("tiles are values: build a new one, e.g. `t = where(arange(n) == i, v, t)`"),
                            );
                            return;
                        }
                        _ => None,
                    },
                    _ => None,
                };
                let Some(pid) = tensor else {
                    if let Some(b) = self.expr(base) {
                        self.error(
                            Diagnostic::error(
                                codes::BAD_TARGET,
                                format!("cannot store into a value of type {}", ty_str(b.ty())),
                                base.span,
                            )
                            .with_label("not a tensor")
                            .with_help("only tensor parameters can be stored into"),
                        );
                    }
                    return;
                };
                let acc = self.access(pid, indices, options, target.span);
                let v = self.expr(value);
                let (Some(acc), Some(v)) = (acc, v) else {
                    return;
                };
                let v = match bin {
                    None => Some(v),
                    Some(op) => {
                        let cur = acc.load(target.span);
                        self.binary(op, cur, v, span)
                    }
                };
                let Some(v) = v.and_then(|v| self.store_value(&acc, v, target.span)) else {
                    return;
                };
                let mut exprs: Vec<&ir::Expr> = vec![&v];
                for i in &acc.index {
                    match i {
                        ir::Index::At(x) | ir::Index::Span { start: x, .. } => exprs.push(x),
                    }
                }
                // A tile store is a tile statement even when its value is a splat.
                let is_tile = acc.shape.is_some() || exprs.iter().any(|e| mentions_tile(e));
                self.tile_stmt_if(span, is_tile);
                out.push(stmt(
                    ir::StmtKind::Store {
                        tensor: pid,
                        index: acc.index,
                        value: v,
                        cache: acc.cache,
                    },
                    span,
                ));
            }
            _ => {
                self.expr(value);
                self.bad_target(target.span);
            }
        }
    }

    fn immutable(&mut self, id: &ast::Ident, decl: Span) {
        self.error(
            Diagnostic::error(
                codes::ASSIGN_IMMUTABLE,
                format!("cannot assign twice to `{}`, declared with `let`", id.name),
                id.span,
            )
            .with_label("assigned here")
            .with_secondary(decl, "declared with `let` here")
            .with_help(format!(
                "declare it with `var {}` to make it mutable",
                id.name
            )),
        );
    }

    fn not_assignable(&mut self, id: &ast::Ident, what: &str, help: &str) -> Option<ir::LocalId> {
        self.error(
            Diagnostic::error(
                codes::ASSIGN_PARAM,
                format!("cannot assign to {what} `{}`", id.name),
                id.span,
            )
            .with_label("not a variable")
            .with_help(help.replace("name", &id.name)),
        );
        None
    }

    fn bad_target(&mut self, span: Span) -> Option<ir::LocalId> {
        self.error(
            Diagnostic::error(codes::BAD_TARGET, "cannot assign to this expression", span)
                .with_label("not a variable or a tensor access")
                .with_help("assign to a `var`, or store into a tensor: `X[i] = v`"),
        );
        None
    }
}
