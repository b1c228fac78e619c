//! Typed values under construction: weakly typed literals, coercion and constant folding.
//!
//! Integer literals (and shape-environment constants, and `let`s of them) are *weak*: they take
//! the type of the other operand, and `i32` when nothing else decides (`i64` in `@where`,
//! `@flops`, `@bytes`). Float literals are weak floats (default `f32`, or `f64` there). Weak
//! operands fold exactly in i64/f64; a typed operation on constants folds with
//! [`phobos_ir::eval`], so folding has the IR's semantics.

use super::{Cx, Mode};
use crate::codes;
use phobos_ir as ir;
use phobos_ir::eval::{self, EvalError, Value};
use phobos_ir::DType;
use phobos_syntax::{ast, Diagnostic, Span};

/// A weak literal's exact value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Weak {
    Int(i64),
    Float(f64),
}

/// A lowered expression; `weak` is set for a weakly typed constant, whose `e` is a literal of
/// the default type.
#[derive(Clone, Debug)]
pub(crate) struct V {
    pub e: ir::Expr,
    pub weak: Option<Weak>,
}

impl V {
    pub fn strong(e: ir::Expr) -> V {
        V { e, weak: None }
    }
    pub fn ty(&self) -> &ir::Ty {
        &self.e.ty
    }
    pub fn dtype(&self) -> DType {
        self.e.ty.dtype()
    }
    pub fn span(&self) -> Span {
        self.e.span
    }
    pub fn is_tile(&self) -> bool {
        self.e.ty.is_tile()
    }
    pub fn uniform(&self) -> bool {
        self.e.uniform
    }
    /// The constant value, if this is a literal.
    pub fn konst(&self) -> Option<Value> {
        match (&self.e.kind, self.weak) {
            (_, Some(Weak::Int(i))) => Some(Value::Int(i)),
            (_, Some(Weak::Float(f))) => Some(Value::Float(f)),
            (ir::ExprKind::Lit(l), None) => Some(eval::lit_value(*l, self.dtype())),
            _ => None,
        }
    }
}

/// Builds an IR expression; tiles are always uniform.
pub(crate) fn ex(kind: ir::ExprKind, ty: ir::Ty, uniform: bool, span: Span) -> ir::Expr {
    let uniform = uniform || ty.is_tile();
    ir::Expr {
        kind,
        ty,
        uniform,
        span,
    }
}

/// A literal of type `t` holding `v`.
pub(crate) fn lit(v: Value, t: DType, span: Span) -> ir::Expr {
    let l = match v.cast(t) {
        Value::Int(i) => ir::Lit::Int(i),
        Value::Float(f) => ir::Lit::Float(f),
        Value::Bool(b) => ir::Lit::Bool(b),
    };
    ex(ir::ExprKind::Lit(l), ir::Ty::Scalar(t), true, span)
}

/// The range of an integer type.
pub(crate) fn int_range(t: DType) -> (i64, i64) {
    match t {
        DType::I8 => (i8::MIN as i64, i8::MAX as i64),
        DType::U8 => (0, u8::MAX as i64),
        DType::I32 => (i32::MIN as i64, i32::MAX as i64),
        DType::U32 => (0, u32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

impl Cx<'_> {
    fn wide(&self) -> bool {
        matches!(self.mode, Mode::Attr { wide: true, .. })
    }

    /// The type a weak literal gets when nothing else decides.
    pub fn weak_default(&self, w: Weak) -> DType {
        match (w, self.wide()) {
            (Weak::Int(_), false) => DType::I32,
            (Weak::Int(_), true) => DType::I64,
            (Weak::Float(_), false) => DType::F32,
            (Weak::Float(_), true) => DType::F64,
        }
    }

    /// A weak constant.
    pub fn weak(&self, w: Weak, span: Span) -> V {
        let t = self.weak_default(w);
        let v = match w {
            Weak::Int(i) => Value::Int(i),
            Weak::Float(f) => Value::Float(f),
        };
        let l = match v {
            Value::Int(i) => ir::Lit::Int(i),
            Value::Float(f) => ir::Lit::Float(f),
            Value::Bool(b) => ir::Lit::Bool(b),
        };
        V {
            e: ex(ir::ExprKind::Lit(l), ir::Ty::Scalar(t), true, span),
            weak: Some(w),
        }
    }

    /// Gives a weak value the type `t` (checking that it fits); a typed value is returned as is.
    pub fn coerce(&mut self, v: V, t: DType) -> Option<V> {
        let Some(w) = v.weak else { return Some(v) };
        let span = v.span();
        match w {
            Weak::Int(i) if t.is_int() => {
                let (lo, hi) = int_range(t);
                if i < lo || i > hi {
                    self.error(
                        Diagnostic::error(
                            codes::LIT_RANGE,
                            format!("the integer {i} does not fit in {t}"),
                            span,
                        )
                        .with_label(format!("{t} holds {lo}..={hi}"))
                        .with_help(if t == DType::I32 {
                            format!("make it wider: `i64({})`", self.text(span))
                        } else {
                            "use a smaller value or a wider type".to_string()
                        }),
                    );
                    return None;
                }
                Some(V::strong(lit(Value::Int(i), t, span)))
            }
            Weak::Int(i) if t.is_float() => self.float_lit(i as f64, t, span),
            Weak::Float(f) if t.is_float() => self.float_lit(f, t, span),
            _ => {
                let what = match w {
                    Weak::Int(_) => "an integer literal",
                    Weak::Float(_) => "a float literal",
                };
                self.error(
                    Diagnostic::error(
                        codes::TYPE_MISMATCH,
                        format!("expected {t}, found {what}"),
                        span,
                    )
                    .with_label(format!("expected {t}"))
                    .with_help(match (w, t) {
                        (_, DType::Bool) => "compare it to get a bool, e.g. `x != 0`".to_string(),
                        (Weak::Float(_), _) if t.is_int() => format!(
                            "write an integer, or compute in floats by converting the {t} side, e.g. `f32(x)`"
                        ),
                        _ => format!("convert it: `{t}({})`", self.text(span)),
                    }),
                );
                None
            }
        }
    }

    fn float_lit(&mut self, f: f64, t: DType, span: Span) -> Option<V> {
        let r = t.round(f);
        if f.is_finite() && !r.is_finite() {
            self.error(
                Diagnostic::error(
                    codes::LIT_RANGE,
                    format!("{f} is out of range for {t}"),
                    span,
                )
                .with_label(format!("becomes infinite in {t}")),
            );
            return None;
        }
        Some(V::strong(lit(Value::Float(r), t, span)))
    }

    /// A weak value at its default type; a typed value as is.
    pub fn materialize(&mut self, v: V) -> Option<V> {
        match v.weak {
            Some(w) => {
                let t = self.weak_default(w);
                self.coerce(v, t)
            }
            None => Some(v),
        }
    }

    /// Folds a scalar node whose operands are all literals; reports division by zero and
    /// out-of-range shifts of constants.
    pub fn fold(&mut self, e: ir::Expr) -> Option<ir::Expr> {
        if e.ty.is_tile() || !children_are_literals(&e) {
            return Some(e);
        }
        match eval::eval(&e, &eval::Constants) {
            Ok(v) => Some(lit(v, e.ty.dtype(), e.span)),
            Err(err @ (EvalError::DivByZero | EvalError::ShiftOutOfRange(..))) => {
                self.error(
                    Diagnostic::error(
                        codes::CONST_EVAL,
                        format!("constant expression: {err}"),
                        e.span,
                    )
                    .with_label("evaluated at compile time"),
                );
                None
            }
            Err(_) => Some(e),
        }
    }

    /// Lowers an expression that must be an integer constant (`what` names the place, `code`
    /// is the diagnostic code when it is not constant).
    pub fn const_int(&mut self, e: &ast::Expr, what: &str, code: &'static str) -> Option<i64> {
        let v = self.expr(e)?;
        match v.konst() {
            Some(Value::Int(i)) if v.weak.is_some() || v.dtype().is_int() => Some(i),
            Some(_) => {
                self.error(
                    Diagnostic::error(
                        codes::NOT_INT,
                        format!(
                            "{what} must be an integer, found {}",
                            super::types::ty_str(v.ty())
                        ),
                        e.span,
                    )
                    .with_label("not an integer"),
                );
                None
            }
            None => {
                let mut d = Diagnostic::error(
                    code,
                    format!("{what} must be a compile-time constant"),
                    e.span,
                )
                .with_label("not known at compile time");
                if let Some(name) = self.first_runtime_name(&v.e) {
                    d = d.with_note(name);
                }
                d = d.with_help("use a literal or a name declared in @autotune, e.g. `@autotune(BLOCK in [64, 256])`");
                self.error(d);
                None
            }
        }
    }

    /// Explains why an expression is not constant: the first runtime value it reads.
    pub fn first_runtime_name(&self, e: &ir::Expr) -> Option<String> {
        let mut found = None;
        walk(e, &mut |x| {
            if found.is_some() {
                return;
            }
            found = match &x.kind {
                ir::ExprKind::Dim(id) => Some(format!(
                    "`{}` is a runtime dim: its value is known only at launch",
                    self.dims[*id].name
                )),
                ir::ExprKind::Param(id) => Some(format!(
                    "`{}` is a parameter: its value is known only at launch",
                    self.params[*id].name
                )),
                ir::ExprKind::Local(id) => {
                    Some(format!("`{}` is a variable", self.locals[*id].name))
                }
                ir::ExprKind::Ctx(_) => Some("`ctx` values are known only at run time".to_string()),
                _ => None,
            };
        });
        found
    }
}

fn children_are_literals(e: &ir::Expr) -> bool {
    let is_lit = |x: &ir::Expr| matches!(x.kind, ir::ExprKind::Lit(_));
    match &e.kind {
        ir::ExprKind::Unary(_, a) | ir::ExprKind::Math(_, a) | ir::ExprKind::Cast(a) => is_lit(a),
        ir::ExprKind::Binary(_, a, b) | ir::ExprKind::Cdiv(a, b) => is_lit(a) && is_lit(b),
        ir::ExprKind::Select(c, a, b) => is_lit(c) && is_lit(a) && is_lit(b),
        ir::ExprKind::MathN(_, args) => args.iter().all(is_lit),
        _ => false,
    }
}

/// Calls `f` on every node of an expression, parents first.
pub(crate) fn walk(e: &ir::Expr, f: &mut dyn FnMut(&ir::Expr)) {
    f(e);
    match &e.kind {
        ir::ExprKind::Unary(_, a)
        | ir::ExprKind::Math(_, a)
        | ir::ExprKind::Cast(a)
        | ir::ExprKind::Broadcast(a)
        | ir::ExprKind::Transpose(a)
        | ir::ExprKind::Reshape(a)
        | ir::ExprKind::Reduce { arg: a, .. } => walk(a, f),
        ir::ExprKind::Binary(_, a, b)
        | ir::ExprKind::Cdiv(a, b)
        | ir::ExprKind::Dot { a, b, .. } => {
            walk(a, f);
            walk(b, f);
        }
        ir::ExprKind::Select(c, a, b) => {
            walk(c, f);
            walk(a, f);
            walk(b, f);
        }
        ir::ExprKind::MathN(_, args) => args.iter().for_each(|a| walk(a, f)),
        ir::ExprKind::Load { index, .. } => {
            for i in index {
                match i {
                    ir::Index::At(x) | ir::Index::Span { start: x, .. } => walk(x, f),
                }
            }
        }
        ir::ExprKind::TileGet { tile, index } => {
            walk(tile, f);
            for x in index {
                walk(x, f);
            }
        }
        ir::ExprKind::Lit(_)
        | ir::ExprKind::Dim(_)
        | ir::ExprKind::Param(_)
        | ir::ExprKind::Local(_)
        | ir::ExprKind::Ctx(_)
        | ir::ExprKind::Arange(_) => {}
    }
}
