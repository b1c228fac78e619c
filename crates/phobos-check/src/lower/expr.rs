//! Expressions: literals, names, `ctx`, unary and binary operators with weak literal typing and
//! NumPy broadcasting.

use super::types::{shape_str, ty_str};
use super::value::{ex, lit, Weak, V};
use super::{Cx, Mode};
use crate::codes;
use crate::suggest::did_you_mean;
use phobos_ir as ir;
use phobos_ir::eval::Value;
use phobos_ir::DType;
use phobos_syntax::ast::{self, BinOp, ExprKind, UnOp};
use phobos_syntax::{Diagnostic, Span};

/// NumPy broadcasting of two shapes (right-aligned; extents equal or 1).
pub(crate) fn broadcast_shapes(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i < n - a.len() {
            1
        } else {
            a[i - (n - a.len())]
        };
        let y = if i < n - b.len() {
            1
        } else {
            b[i - (n - b.len())]
        };
        out[i] = match (x, y) {
            _ if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

fn ir_op(op: BinOp) -> ir::BinOp {
    match op {
        BinOp::Or => ir::BinOp::Or,
        BinOp::And => ir::BinOp::And,
        BinOp::Eq => ir::BinOp::Eq,
        BinOp::Ne => ir::BinOp::Ne,
        BinOp::Lt => ir::BinOp::Lt,
        BinOp::Le => ir::BinOp::Le,
        BinOp::Gt => ir::BinOp::Gt,
        BinOp::Ge => ir::BinOp::Ge,
        BinOp::BitOr => ir::BinOp::BitOr,
        BinOp::BitXor => ir::BinOp::BitXor,
        BinOp::BitAnd => ir::BinOp::BitAnd,
        BinOp::Shl => ir::BinOp::Shl,
        BinOp::Shr => ir::BinOp::Shr,
        BinOp::Add => ir::BinOp::Add,
        BinOp::Sub => ir::BinOp::Sub,
        BinOp::Mul => ir::BinOp::Mul,
        BinOp::Div => ir::BinOp::Div,
        BinOp::Rem => ir::BinOp::Rem,
    }
}

/// Whether `op` is defined on elements of type `t`, and what it needs otherwise.
fn op_accepts(op: ir::BinOp, t: DType) -> Result<(), &'static str> {
    use ir::BinOp::*;
    let numeric = t.is_int() || t.is_float();
    let ok = match op {
        Add | Sub | Mul | Div | Min | Max | Lt | Le | Gt | Ge => numeric,
        Rem | Shl | Shr => t.is_int(),
        BitAnd | BitOr | BitXor => t.is_int() || t == DType::Bool,
        And | Or => t == DType::Bool,
        Eq | Ne => true,
    };
    if ok {
        return Ok(());
    }
    Err(match op {
        Rem | Shl | Shr => "integers",
        BitAnd | BitOr | BitXor => "integers and bools",
        And | Or => "bools",
        _ => "numbers",
    })
}

impl Cx<'_> {
    /// Lowers an expression; `None` when it has errors (already reported).
    pub fn expr(&mut self, e: &ast::Expr) -> Option<V> {
        match &e.kind {
            ExprKind::Int(i) => Some(self.weak(Weak::Int(*i), e.span)),
            ExprKind::Float(f) => Some(self.weak(Weak::Float(*f), e.span)),
            ExprKind::Bool(b) => Some(V::strong(lit(Value::Bool(*b), DType::Bool, e.span))),
            ExprKind::Name(id) => self.name_value(id, e.span),
            ExprKind::Field { .. } => self.field(e),
            ExprKind::Unary { op, arg } => {
                let a = self.expr(arg)?;
                self.unary(*op, a, e.span)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.expr(lhs);
                let b = self.expr(rhs);
                self.binary(ir_op(*op), a?, b?, e.span)
            }
            ExprKind::Call { callee, args } => self.call(callee, args, e.span),
            ExprKind::Index {
                base,
                indices,
                options,
            } => self.index_value(base, indices, options, e.span),
            ExprKind::List(_) => {
                self.error(
                    Diagnostic::error(codes::LIST_VALUE, "a list is not a value", e.span)
                        .with_label("a list")
                        .with_help("a list is only the shape of `reshape(t, [R, C])`"),
                );
                None
            }
        }
    }

    /// `ctx.block.x`, `ctx.thread`, ...
    fn field(&mut self, e: &ast::Expr) -> Option<V> {
        let ExprKind::Field { base, field } = &e.kind else {
            return None;
        };
        let is_ctx = |b: &ast::Expr| matches!(&b.kind, ExprKind::Name(n) if n.name == "ctx");
        let i32_ty = ir::Ty::Scalar(DType::I32);
        let ctx = |c: ir::Ctx, uniform: bool| {
            Some(V::strong(ex(
                ir::ExprKind::Ctx(c),
                i32_ty.clone(),
                uniform,
                e.span,
            )))
        };
        let mut root = base.as_ref();
        while let ExprKind::Field { base: b, .. } = &root.kind {
            root = b;
        }
        if is_ctx(root) && self.mode != Mode::Body {
            if let Mode::Attr { what, .. } = self.mode {
                self.error(
                    Diagnostic::error(
                        codes::ATTR_SCOPE,
                        format!("{what} cannot read `ctx`"),
                        e.span,
                    )
                    .with_label("known only while the kernel runs"),
                );
            }
            return None;
        }
        if is_ctx(base) {
            return match field.name.as_str() {
                "thread" => ctx(ir::Ctx::Thread, false),
                "threads" => Some(V::strong(lit(
                    Value::Int(self.threads as i64),
                    DType::I32,
                    e.span,
                ))),
                "warp" => ctx(ir::Ctx::Warp, false),
                "lane" => ctx(ir::Ctx::Lane, false),
                "block" | "grid" => {
                    self.error(
                        Diagnostic::error(
                            codes::BAD_CTX,
                            format!("`ctx.{}` needs an axis", field.name),
                            e.span,
                        )
                        .with_label("x, y or z?")
                        .with_help(format!("write `ctx.{}.x`", field.name)),
                    );
                    None
                }
                other => self.bad_field(
                    other,
                    field.span,
                    &["block", "grid", "thread", "threads", "warp", "lane"],
                    "ctx",
                ),
            };
        }
        if let ExprKind::Field {
            base: inner,
            field: group,
        } = &base.kind
        {
            if is_ctx(inner) && (group.name == "block" || group.name == "grid") {
                let axis = match field.name.as_str() {
                    "x" => 0,
                    "y" => 1,
                    "z" => 2,
                    other => {
                        return self.bad_field(
                            other,
                            field.span,
                            &["x", "y", "z"],
                            &format!("ctx.{}", group.name),
                        )
                    }
                };
                if group.name == "block" {
                    self.grid.read(axis, e.span);
                    return ctx(ir::Ctx::Block(axis), true);
                }
                return ctx(ir::Ctx::Grid(axis), true);
            }
        }
        // Lower the base for its own errors, then explain that only `ctx` has fields.
        self.expr(base)?;
        self.error(
            Diagnostic::error(codes::BAD_CTX, format!("no field `{}` here", field.name), field.span)
                .with_label("only `ctx` has fields")
                .with_help("the fields are ctx.block.x|y|z, ctx.grid.x|y|z, ctx.thread, ctx.threads, ctx.warp, ctx.lane"),
        );
        None
    }

    fn bad_field(&mut self, name: &str, span: Span, fields: &[&str], of: &str) -> Option<V> {
        let mut d = Diagnostic::error(
            codes::BAD_CTX,
            format!("`{of}` has no field `{name}`"),
            span,
        )
        .with_label("unknown field")
        .with_note(format!("fields of `{of}`: {}", fields.join(", ")));
        if let Some(s) = did_you_mean(name, fields.iter().copied()) {
            d = d.with_help(s);
        }
        self.error(d);
        None
    }

    pub fn unary(&mut self, op: UnOp, a: V, span: Span) -> Option<V> {
        match (op, a.weak) {
            (UnOp::Neg, Some(Weak::Int(i))) => {
                return match i.checked_neg() {
                    Some(n) => Some(self.weak(Weak::Int(n), span)),
                    None => self.const_overflow(span),
                }
            }
            (UnOp::Neg, Some(Weak::Float(f))) => return Some(self.weak(Weak::Float(-f), span)),
            (UnOp::Not, Some(Weak::Int(i))) => return Some(self.weak(Weak::Int(!i), span)),
            _ => {}
        }
        let a = self.materialize(a)?;
        let t = a.dtype();
        let ok = match op {
            UnOp::Neg => t.is_int() || t.is_float(),
            UnOp::Not => t.is_int() || t == DType::Bool,
        };
        if !ok {
            let (sym, needs) = match op {
                UnOp::Neg => ("-", "numbers"),
                UnOp::Not => ("!", "bools and integers"),
            };
            self.error(
                Diagnostic::error(
                    codes::BAD_OPERAND,
                    format!("`{sym}` is not defined for {t}"),
                    a.span(),
                )
                .with_label(ty_str(a.ty()))
                .with_note(format!("`{sym}` applies to {needs}")),
            );
            return None;
        }
        let iop = match op {
            UnOp::Neg => ir::UnOp::Neg,
            UnOp::Not => ir::UnOp::Not,
        };
        let ty = a.ty().clone();
        let uniform = a.uniform();
        let e = ex(ir::ExprKind::Unary(iop, Box::new(a.e)), ty, uniform, span);
        self.fold(e).map(V::strong)
    }

    fn const_overflow(&mut self, span: Span) -> Option<V> {
        self.error(
            Diagnostic::error(codes::CONST_EVAL, "constant expression overflows i64", span)
                .with_label("evaluated at compile time"),
        );
        None
    }

    /// Two weak constants fold exactly.
    fn fold_weak(&mut self, op: ir::BinOp, a: Weak, b: Weak, span: Span) -> Option<V> {
        use ir::BinOp::*;
        let bool_lit = |v: bool| Some(V::strong(lit(Value::Bool(v), DType::Bool, span)));
        if let (Weak::Int(x), Weak::Int(y)) = (a, b) {
            let r = match op {
                Add => x.checked_add(y),
                Sub => x.checked_sub(y),
                Mul => x.checked_mul(y),
                Div | Rem if y == 0 => {
                    self.error(
                        Diagnostic::error(
                            codes::CONST_EVAL,
                            "constant expression: division by zero",
                            span,
                        )
                        .with_label("evaluated at compile time"),
                    );
                    return None;
                }
                Div => x.checked_div(y),
                Rem => x.checked_rem(y),
                Min => Some(x.min(y)),
                Max => Some(x.max(y)),
                BitAnd => Some(x & y),
                BitOr => Some(x | y),
                BitXor => Some(x ^ y),
                Shl | Shr if !(0..64).contains(&y) => {
                    self.error(
                        Diagnostic::error(
                            codes::CONST_EVAL,
                            format!("constant expression: shift by {y}"),
                            span,
                        )
                        .with_label("out of range"),
                    );
                    return None;
                }
                Shl => Some(x.wrapping_shl(y as u32)),
                Shr => Some(x >> y),
                Eq => return bool_lit(x == y),
                Ne => return bool_lit(x != y),
                Lt => return bool_lit(x < y),
                Le => return bool_lit(x <= y),
                Gt => return bool_lit(x > y),
                Ge => return bool_lit(x >= y),
                And | Or => return self.needs(op, "bools", "an integer literal", span),
            };
            return match r {
                Some(v) => Some(self.weak(Weak::Int(v), span)),
                None => self.const_overflow(span),
            };
        }
        let f = |w: Weak| match w {
            Weak::Int(i) => i as f64,
            Weak::Float(f) => f,
        };
        let (x, y) = (f(a), f(b));
        let r = match op {
            Add => x + y,
            Sub => x - y,
            Mul => x * y,
            Div => x / y,
            Min => x.min(y),
            Max => x.max(y),
            Eq => return bool_lit(x == y),
            Ne => return bool_lit(x != y),
            Lt => return bool_lit(x < y),
            Le => return bool_lit(x <= y),
            Gt => return bool_lit(x > y),
            Ge => return bool_lit(x >= y),
            And | Or => return self.needs(op, "bools", "a float literal", span),
            Rem | Shl | Shr => return self.needs(op, "integers", "a float literal", span),
            BitAnd | BitOr | BitXor => {
                return self.needs(op, "integers and bools", "a float literal", span)
            }
        };
        Some(self.weak(Weak::Float(r), span))
    }

    fn needs(&mut self, op: ir::BinOp, needs: &str, found: &str, span: Span) -> Option<V> {
        self.error(
            Diagnostic::error(
                codes::BAD_OPERAND,
                format!("`{}` applies to {needs}, not to {found}", op.symbol()),
                span,
            )
            .with_label(format!("`{}` needs {needs}", op.symbol())),
        );
        None
    }

    /// Unifies the element types of two operands: weak literals adopt the other side's type;
    /// typed operands must agree.
    pub fn unify(&mut self, a: V, b: V, what: &str) -> Option<(V, V)> {
        // In `@flops`/`@bytes`/`@where`, a float (a constant, or an f64 already computed from
        // one) may scale integer dims: the integer side becomes f64 (`@bytes(2.5 * M)`,
        // `@flops(4.0 * N * N)`).
        if matches!(self.mode, Mode::Attr { wide: true, .. }) {
            let widen = |cx: &mut Self, v: V| -> V {
                let span = v.span();
                let e = ex(
                    ir::ExprKind::Cast(Box::new(v.e)),
                    ir::Ty::Scalar(DType::F64),
                    true,
                    span,
                );
                V::strong(
                    cx.fold(e)
                        .unwrap_or_else(|| lit(Value::Float(0.0), DType::F64, span)),
                )
            };
            let float = |v: &V| {
                matches!(v.weak, Some(Weak::Float(_)))
                    || (v.weak.is_none() && !v.is_tile() && v.dtype().is_float())
            };
            let int = |v: &V| v.weak.is_none() && !v.is_tile() && v.dtype().is_int();
            if float(&a) && int(&b) {
                let b = widen(self, b);
                return self.unify(a, b, what);
            }
            if int(&a) && float(&b) {
                let a = widen(self, a);
                return self.unify(a, b, what);
            }
        }
        match (a.weak, b.weak) {
            (Some(_), None) => {
                let t = b.dtype();
                Some((self.coerce(a, t)?, b))
            }
            (None, Some(_)) => {
                let t = a.dtype();
                let b = self.coerce(b, t)?;
                Some((a, b))
            }
            (Some(_), Some(_)) => {
                // Mixed weak kinds: a float wins.
                let t = if matches!(a.weak, Some(Weak::Float(_)))
                    || matches!(b.weak, Some(Weak::Float(_)))
                {
                    self.weak_default(Weak::Float(0.0))
                } else {
                    self.weak_default(Weak::Int(0))
                };
                let a = self.coerce(a, t)?;
                let b = self.coerce(b, t)?;
                Some((a, b))
            }
            (None, None) if a.dtype() == b.dtype() => Some((a, b)),
            (None, None) => {
                let (ta, tb) = (a.dtype(), b.dtype());
                self.error(
                    Diagnostic::error(
                        codes::TYPE_MISMATCH,
                        format!("mismatched types in {what}: {ta} and {tb}"),
                        b.span(),
                    )
                    .with_label(ty_str(b.ty()))
                    .with_secondary(a.span(), ty_str(a.ty()))
                    .with_note("Phobos never converts between element types implicitly")
                    .with_help(format!(
                        "convert one side, e.g. `{ta}({})`",
                        self.text(b.span())
                    )),
                );
                None
            }
        }
    }

    /// Requires a scalar operand of a tile operation to be uniform.
    pub fn uniform_for_tile(&mut self, v: &V) -> bool {
        if v.is_tile() || v.uniform() {
            return true;
        }
        let mut d = Diagnostic::error(
            codes::PER_THREAD_IN_TILE,
            format!(
                "the per-thread value `{}` is used in a tile expression",
                self.text(v.span())
            ),
            v.span(),
        )
        .with_label("this value differs between threads");
        if let ir::ExprKind::Local(l) = v.e.kind {
            if let Some((cause, why)) = self.per_thread_cause(self.locals[l].span) {
                d = d.with_secondary(cause, why);
            }
        }
        self.error(
            d
            .with_note("a tile is one value shared by the whole block")
            .with_help("use a uniform value here (literals, dims, constants, scalar parameters, ctx.block, reductions of tiles)"),
        );
        false
    }

    /// Broadcasts an expression to a tile shape (no-op when it already has it).
    pub fn broadcast_to(&mut self, e: ir::Expr, shape: &[i64]) -> ir::Expr {
        if e.ty.shape() == Some(shape) {
            return e;
        }
        let ty = ir::Ty::Tile(e.ty.dtype(), shape.to_vec());
        let span = e.span;
        ex(ir::ExprKind::Broadcast(Box::new(e)), ty, true, span)
    }

    /// The common shape of operands (None: all scalars), reporting mismatches.
    pub fn common_shape(&mut self, vs: &[&V]) -> Result<Option<Vec<i64>>, ()> {
        let mut shape: Option<(Vec<i64>, &V)> = None;
        for v in vs {
            let Some(s) = v.ty().shape() else { continue };
            shape = match shape {
                None => Some((s.to_vec(), *v)),
                Some((cur, first)) => match broadcast_shapes(&cur, s) {
                    Some(n) => Some((n, first)),
                    None => {
                        self.error(
                            Diagnostic::error(
                                codes::BROADCAST,
                                format!(
                                    "cannot broadcast shapes [{}] and [{}]",
                                    shape_str(&cur),
                                    shape_str(s)
                                ),
                                v.span(),
                            )
                            .with_label(ty_str(v.ty()))
                            .with_secondary(first.span(), ty_str(first.ty()))
                            .with_note("aligned from the right, extents must be equal or 1"),
                        );
                        return Err(());
                    }
                },
            };
        }
        Ok(shape.map(|(s, _)| s))
    }

    /// A binary operation: type unification, operator rules, broadcasting, folding.
    pub fn binary(&mut self, op: ir::BinOp, a: V, b: V, span: Span) -> Option<V> {
        if let (Some(x), Some(y)) = (a.weak, b.weak) {
            return self.fold_weak(op, x, y, span);
        }
        let (a, b) = self.unify(a, b, &format!("`{}`", op.symbol()))?;
        let t = a.dtype();
        if let Err(needs) = op_accepts(op, t) {
            self.error(
                Diagnostic::error(
                    codes::BAD_OPERAND,
                    format!("`{}` is not defined for {t}", op.symbol()),
                    span,
                )
                .with_label(format!("operands are {t}"))
                .with_note(format!("`{}` applies to {needs}", op.symbol())),
            );
            return None;
        }
        let shape = self.common_shape(&[&a, &b]).ok()?;
        let out_t = if op.is_comparison() { DType::Bool } else { t };
        let (ea, eb, ty, uniform) = match &shape {
            None => {
                let u = a.uniform() && b.uniform();
                (a.e, b.e, ir::Ty::Scalar(out_t), u)
            }
            Some(s) => {
                let ok = self.uniform_for_tile(&a) & self.uniform_for_tile(&b);
                if !ok {
                    return None;
                }
                // A scalar operand of a tile operation stays scalar (the IR allows it).
                let ea = if a.is_tile() {
                    self.broadcast_to(a.e, s)
                } else {
                    a.e
                };
                let eb = if b.is_tile() {
                    self.broadcast_to(b.e, s)
                } else {
                    b.e
                };
                (ea, eb, ir::Ty::Tile(out_t, s.clone()), true)
            }
        };
        if let Some(s) = ty.shape() {
            if !self.check_shape(s, span) {
                return None;
            }
        }
        let e = ex(
            ir::ExprKind::Binary(op, Box::new(ea), Box::new(eb)),
            ty,
            uniform,
            span,
        );
        self.fold(e).map(V::strong)
    }
}
