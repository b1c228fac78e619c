//! Calls: casts (`f32(x)`, `TC(x)`) and the built-in functions.

use super::types::{shape_str, ty_str};
use super::value::{ex, lit, Weak, V};
use super::Cx;
use crate::codes;
use crate::suggest::did_you_mean;
use phobos_ir as ir;
use phobos_ir::eval::Value;
use phobos_ir::DType;
use phobos_syntax::ast::{Arg, Expr, ExprKind, Ident};
use phobos_syntax::{Diagnostic, Span};

/// Every built-in function name.
pub const BUILTINS: [&str; 37] = [
    "exp",
    "exp2",
    "log",
    "sqrt",
    "rsqrt",
    "abs",
    "tanh",
    "log2",
    "log1p",
    "expm1",
    "sin",
    "cos",
    "erf",
    "floor",
    "ceil",
    "round",
    "sigmoid",
    "pow",
    "fma",
    "rand",
    "randn",
    "min",
    "max",
    "sum",
    "rowsum",
    "rowmax",
    "rowmin",
    "where",
    "cdiv",
    "dot",
    "dot_t",
    "transpose",
    "reshape",
    "arange",
    "atomic_add",
    "atomic_max",
    "atomic_min",
];

/// Positional arguments and named ones.
type Args<'e> = (Vec<&'e Expr>, Vec<(&'e Ident, &'e Expr)>);

fn math_fn(name: &str) -> Option<ir::MathFn> {
    Some(match name {
        "exp" => ir::MathFn::Exp,
        "exp2" => ir::MathFn::Exp2,
        "log" => ir::MathFn::Log,
        "sqrt" => ir::MathFn::Sqrt,
        "rsqrt" => ir::MathFn::Rsqrt,
        "abs" => ir::MathFn::Abs,
        "tanh" => ir::MathFn::Tanh,
        "log2" => ir::MathFn::Log2,
        "log1p" => ir::MathFn::Log1p,
        "expm1" => ir::MathFn::Expm1,
        "sin" => ir::MathFn::Sin,
        "cos" => ir::MathFn::Cos,
        "erf" => ir::MathFn::Erf,
        "floor" => ir::MathFn::Floor,
        "ceil" => ir::MathFn::Ceil,
        "round" => ir::MathFn::Round,
        "sigmoid" => ir::MathFn::Sigmoid,
        _ => return None,
    })
}

/// A math function of several operands, with its operand count.
fn math_fn_n(name: &str) -> Option<(ir::MathFnN, usize)> {
    Some(match name {
        "pow" => (ir::MathFnN::Pow, 2),
        "fma" => (ir::MathFnN::Fma, 3),
        _ => return None,
    })
}

impl Cx<'_> {
    /// Splits arguments into positional ones (between `min` and `max` of them) and the named
    /// ones in `named`; reports anything else.
    pub(super) fn args<'e>(
        &mut self,
        name: &str,
        args: &'e [Arg],
        (min, max): (usize, usize),
        named: &[&str],
        span: Span,
    ) -> Option<Args<'e>> {
        let mut pos = Vec::new();
        let mut kw = Vec::new();
        for a in args {
            match &a.name {
                Some(n) if named.contains(&n.name.as_str()) => kw.push((n, &a.value)),
                Some(n) => {
                    self.error(
                        Diagnostic::error(
                            codes::BAD_ARGS,
                            format!("`{name}` has no argument named `{}`", n.name),
                            n.span,
                        )
                        .with_label("unknown argument")
                        .with_help(if named.is_empty() {
                            format!("`{name}` takes positional arguments only")
                        } else {
                            format!("named arguments of `{name}`: {}", named.join(", "))
                        }),
                    );
                    return None;
                }
                None => pos.push(&a.value),
            }
        }
        if pos.len() < min || pos.len() > max {
            let want = if min == max {
                format!("{min}")
            } else {
                format!("{min} to {max}")
            };
            self.error(
                Diagnostic::error(
                    codes::BAD_ARGS,
                    format!(
                        "`{name}` takes {want} argument{}, found {}",
                        if max == 1 { "" } else { "s" },
                        pos.len()
                    ),
                    span,
                )
                .with_label("wrong number of arguments"),
            );
            return None;
        }
        Some((pos, kw))
    }

    pub fn call(&mut self, callee: &Ident, args: &[Arg], span: Span) -> Option<V> {
        let name = callee.name.as_str();
        if let Some(t) = self.dtype_of(name) {
            let (pos, _) = self.args(name, args, (1, 1), &[], span)?;
            let v = self.expr(pos[0])?;
            return self.cast(v, t, span);
        }
        if super::atomic::atomic_op(name).is_some() {
            return self.atomic_in_expr(callee, span);
        }
        if let Some(f) = math_fn(name) {
            let (pos, _) = self.args(name, args, (1, 1), &[], span)?;
            let v = self.expr(pos[0])?;
            return self.math(name, f, v, span);
        }
        if name == "rand" || name == "randn" {
            let (pos, _) = self.args(name, args, (2, 2), &[], span)?;
            let seed = self.expr(pos[0]);
            let offsets = self.expr(pos[1]);
            return self.random(name, seed?, offsets?, span);
        }
        if let Some((f, n)) = math_fn_n(name) {
            let (pos, _) = self.args(name, args, (n, n), &[], span)?;
            let vs: Vec<Option<V>> = pos.iter().map(|a| self.expr(a)).collect();
            let vs: Vec<V> = vs.into_iter().collect::<Option<_>>()?;
            return self.math_n(name, f, vs, span);
        }
        match name {
            "min" | "max" | "sum" => {
                let max_args = if name == "sum" { 1 } else { 2 };
                let (pos, kw) = self.args(name, args, (1, max_args), &["axis"], span)?;
                if pos.len() == 2 {
                    if let Some((n, _)) = kw.first() {
                        self.error(
                            Diagnostic::error(
                                codes::BAD_ARGS,
                                format!("two-argument `{name}` is elementwise and takes no axis"),
                                n.span,
                            )
                            .with_label("remove this"),
                        );
                        return None;
                    }
                    let a = self.expr(pos[0]);
                    let b = self.expr(pos[1]);
                    let op = if name == "min" {
                        ir::BinOp::Min
                    } else {
                        ir::BinOp::Max
                    };
                    return self.binary(op, a?, b?, span);
                }
                let op = match name {
                    "min" => ir::ReduceOp::Min,
                    "max" => ir::ReduceOp::Max,
                    _ => ir::ReduceOp::Sum,
                };
                let v = self.expr(pos[0])?;
                let axis = match kw.first() {
                    Some((_, e)) => Some((
                        self.const_int(e, "a reduction axis", codes::NOT_CONST)?,
                        e.span,
                    )),
                    None => None,
                };
                self.reduce(name, op, v, axis, false, span)
            }
            "rowsum" | "rowmax" | "rowmin" => {
                let (pos, _) = self.args(name, args, (1, 1), &[], span)?;
                let v = self.expr(pos[0])?;
                let op = match name {
                    "rowsum" => ir::ReduceOp::Sum,
                    "rowmax" => ir::ReduceOp::Max,
                    _ => ir::ReduceOp::Min,
                };
                self.reduce(name, op, v, None, true, span)
            }
            "where" => {
                let (pos, _) = self.args(name, args, (3, 3), &[], span)?;
                let c = self.expr(pos[0]);
                let a = self.expr(pos[1]);
                let b = self.expr(pos[2]);
                self.select(c?, a?, b?, span)
            }
            "cdiv" => {
                let (pos, _) = self.args(name, args, (2, 2), &[], span)?;
                let a = self.expr(pos[0]);
                let b = self.expr(pos[1]);
                self.cdiv(a?, b?, span)
            }
            "dot" | "dot_t" => {
                let (pos, _) = self.args(name, args, (2, 2), &[], span)?;
                let a = self.expr(pos[0]);
                let b = self.expr(pos[1]);
                self.dot(name, a?, b?, span)
            }
            "reshape" => {
                let (pos, _) = self.args(name, args, (2, 2), &[], span)?;
                let v = self.expr(pos[0])?;
                let shape = self.shape_list(pos[1])?;
                self.reshape(v, shape, pos[1].span, span)
            }
            "transpose" => {
                let (pos, _) = self.args(name, args, (1, 1), &[], span)?;
                let v = self.expr(pos[0])?;
                match v.ty().clone() {
                    ir::Ty::Tile(t, s) if s.len() == 2 => {
                        let ty = ir::Ty::Tile(t, vec![s[1], s[0]]);
                        Some(V::strong(ex(
                            ir::ExprKind::Transpose(Box::new(v.e)),
                            ty,
                            true,
                            span,
                        )))
                    }
                    other => {
                        self.error(
                            Diagnostic::error(
                                codes::TILE_RANK,
                                "`transpose` takes a rank-2 tile",
                                v.span(),
                            )
                            .with_label(ty_str(&other)),
                        );
                        None
                    }
                }
            }
            "arange" => {
                let (pos, _) = self.args(name, args, (1, 1), &[], span)?;
                let n = self.const_int(pos[0], "the length of `arange`", codes::NOT_STATIC)?;
                if !self.check_shape(&[n], span) {
                    return None;
                }
                let ty = ir::Ty::Tile(DType::I32, vec![n]);
                Some(V::strong(ex(ir::ExprKind::Arange(n), ty, true, span)))
            }
            "range" => {
                self.error(
                    Diagnostic::error(
                        codes::FOR_RANGE,
                        "`range` only appears as the iterator of a `for` loop",
                        span,
                    )
                    .with_label("not a value")
                    .with_help("write `for i in range(a, b) { ... }`"),
                );
                None
            }
            _ => {
                let mut d = Diagnostic::error(
                    codes::UNKNOWN_FN,
                    format!("unknown function `{name}`"),
                    callee.span,
                )
                .with_label("not a built-in, a type or a type parameter");
                let types: Vec<&str> = DType::ALL.iter().map(|t| t.name()).collect();
                let params: Vec<&str> = self.types.iter().map(|(n, _)| n.as_str()).collect();
                let all = BUILTINS.iter().copied().chain(types).chain(params);
                if let Some(s) = did_you_mean(name, all) {
                    d = d.with_help(s);
                } else {
                    d = d.with_note(format!("built-ins: {}", BUILTINS.join(", ")));
                }
                self.error(d);
                None
            }
        }
    }

    /// `T(x)`: elementwise conversion.
    pub fn cast(&mut self, v: V, t: DType, span: Span) -> Option<V> {
        if let Some(w) = v.weak {
            let value = match w {
                Weak::Int(i) => Value::Int(i),
                Weak::Float(f) => Value::Float(f),
            };
            return Some(V::strong(lit(value, t, span)));
        }
        let ty = match v.ty() {
            ir::Ty::Scalar(_) => ir::Ty::Scalar(t),
            ir::Ty::Tile(_, s) => ir::Ty::Tile(t, s.clone()),
        };
        if v.dtype() == t {
            let mut v = v;
            v.e.span = span;
            return Some(v);
        }
        let uniform = v.uniform();
        let e = ex(ir::ExprKind::Cast(Box::new(v.e)), ty, uniform, span);
        self.fold(e).map(V::strong)
    }

    /// `pow(x, y)`, `fma(a, b, c)`: float operands of one type (weak literals take it, or f32),
    /// broadcast together like `where`'s.
    fn math_n(&mut self, name: &str, f: ir::MathFnN, args: Vec<V>, span: Span) -> Option<V> {
        let t = match args.iter().find(|v| v.weak.is_none()) {
            Some(v) => v.dtype(),
            None => self.weak_default(Weak::Float(0.0)),
        };
        let mut vs = Vec::with_capacity(args.len());
        for v in args {
            let v = self.coerce(v, t)?;
            if !v.dtype().is_float() {
                let help = format!("convert first: `{name}(f32({}), ..)`", self.text(v.span()));
                self.error(
                    Diagnostic::error(
                        codes::BAD_OPERAND,
                        format!("`{name}` is not defined for {}", v.dtype()),
                        v.span(),
                    )
                    .with_label(ty_str(v.ty()))
                    .with_help(help),
                );
                return None;
            }
            if v.dtype() != t {
                self.error(
                    Diagnostic::error(
                        codes::TYPE_MISMATCH,
                        format!("mismatched types in `{name}`: {t} and {}", v.dtype()),
                        v.span(),
                    )
                    .with_label(format!("{}", v.dtype()))
                    .with_help(format!("convert it: `{t}({})`", self.text(v.span()))),
                );
                return None;
            }
            vs.push(v);
        }
        let refs: Vec<&V> = vs.iter().collect();
        let shape = self.common_shape(&refs).ok()?;
        match shape {
            None => {
                let uniform = vs.iter().all(V::uniform);
                let es = vs.into_iter().map(|v| v.e).collect();
                let e = ex(ir::ExprKind::MathN(f, es), ir::Ty::Scalar(t), uniform, span);
                self.fold(e).map(V::strong)
            }
            Some(s) => {
                let ok = vs.iter().fold(true, |ok, v| self.uniform_for_tile(v) & ok);
                if !ok || !self.check_shape(&s, span) {
                    return None;
                }
                let es = vs.into_iter().map(|v| self.broadcast_to(v.e, &s)).collect();
                let e = ex(ir::ExprKind::MathN(f, es), ir::Ty::Tile(t, s), true, span);
                Some(V::strong(e))
            }
        }
    }

    /// `rand(seed, offsets)`, `randn(seed, offsets)`: integer seed (a scalar) and offsets (a
    /// scalar or a tile); an f32 of the offsets' shape.
    fn random(&mut self, name: &str, seed: V, offsets: V, span: Span) -> Option<V> {
        let seed = self.coerce(seed, DType::I64)?;
        let offsets = match offsets.weak {
            Some(_) => self.coerce(offsets, DType::I32)?,
            None => offsets,
        };
        for (v, what) in [(&seed, "seed"), (&offsets, "offsets")] {
            if !v.dtype().is_int() {
                self.error(
                    Diagnostic::error(
                        codes::BAD_OPERAND,
                        format!(
                            "the {what} of `{name}` must be integers, found {}",
                            ty_str(v.ty())
                        ),
                        v.span(),
                    )
                    .with_label(ty_str(v.ty()))
                    .with_help(format!("convert it: `i32({})`", self.text(v.span()))),
                );
                return None;
            }
        }
        if seed.is_tile() {
            self.error(
                Diagnostic::error(
                    codes::TILE_SCALAR,
                    format!(
                        "the seed of `{name}` is one value, found {}",
                        ty_str(seed.ty())
                    ),
                    seed.span(),
                )
                .with_label("a tile")
                .with_help("pass one seed and a tile of offsets: `rand(seed, i + arange(BLOCK))`"),
            );
            return None;
        }
        let f = if name == "rand" {
            ir::MathFnN::Rand
        } else {
            ir::MathFnN::Randn
        };
        match offsets.ty().shape().map(<[i64]>::to_vec) {
            None => {
                let uniform = seed.uniform() && offsets.uniform();
                let kind = ir::ExprKind::MathN(f, vec![seed.e, offsets.e]);
                Some(V::strong(ex(
                    kind,
                    ir::Ty::Scalar(DType::F32),
                    uniform,
                    span,
                )))
            }
            Some(s) => {
                if !self.uniform_for_tile(&seed) {
                    return None;
                }
                let seed = self.broadcast_to(seed.e, &s);
                let kind = ir::ExprKind::MathN(f, vec![seed, offsets.e]);
                Some(V::strong(ex(kind, ir::Ty::Tile(DType::F32, s), true, span)))
            }
        }
    }

    /// The constant extents of `reshape`'s shape argument, a list `[d0]` or `[d0, d1]`.
    fn shape_list(&mut self, e: &Expr) -> Option<Vec<i64>> {
        let ExprKind::List(items) = &e.kind else {
            self.error(
                Diagnostic::error(codes::BAD_ARGS, "the shape of `reshape` is a list", e.span)
                    .with_label("not a list")
                    .with_help(format!(
                        "write the extents in brackets: `[{}]`",
                        self.text(e.span)
                    )),
            );
            return None;
        };
        let dims: Vec<Option<i64>> = items
            .iter()
            .map(|d| self.const_int(d, "a reshape extent", codes::NOT_STATIC))
            .collect();
        let dims: Vec<i64> = dims.into_iter().collect::<Option<_>>()?;
        self.check_shape(&dims, e.span).then_some(dims)
    }

    /// `v` as a tile of `shape` (row-major, the same element count); `shape_span` is the list.
    pub(super) fn reshape(
        &mut self,
        v: V,
        shape: Vec<i64>,
        shape_span: Span,
        span: Span,
    ) -> Option<V> {
        let v = self.materialize(v)?;
        let ir::Ty::Tile(t, from) = v.ty().clone() else {
            self.error(
                Diagnostic::error(codes::TILE_SCALAR, "`reshape` takes a tile", v.span())
                    .with_label(ty_str(v.ty()))
                    .with_help("a scalar has no shape; broadcast it with an operation on a tile"),
            );
            return None;
        };
        let (n, m) = (from.iter().product::<i64>(), shape.iter().product::<i64>());
        if n != m {
            self.error(
                Diagnostic::error(
                    codes::RESHAPE_COUNT,
                    format!(
                        "cannot reshape a tile of shape [{}] ({n} elements) to [{}] ({m} elements)",
                        shape_str(&from),
                        shape_str(&shape)
                    ),
                    shape_span,
                )
                .with_label(format!("{m} elements"))
                .with_secondary(v.span(), format!("{n} elements"))
                .with_help(
                    "a reshape keeps every element: the extents must multiply to the same count",
                ),
            );
            return None;
        }
        if from == shape {
            return Some(v);
        }
        let uniform = v.uniform();
        let e = ex(
            ir::ExprKind::Reshape(Box::new(v.e)),
            ir::Ty::Tile(t, shape),
            uniform,
            span,
        );
        Some(V::strong(e))
    }

    fn math(&mut self, name: &str, f: ir::MathFn, v: V, span: Span) -> Option<V> {
        let v = match v.weak {
            Some(Weak::Int(_)) if f != ir::MathFn::Abs => {
                let t = self.weak_default(Weak::Float(0.0));
                self.coerce(v, t)?
            }
            _ => self.materialize(v)?,
        };
        let t = v.dtype();
        let ok = t.is_float() || (f == ir::MathFn::Abs && t.is_int());
        if !ok {
            let mut d = Diagnostic::error(
                codes::BAD_OPERAND,
                format!("`{name}` is not defined for {t}"),
                v.span(),
            )
            .with_label(ty_str(v.ty()));
            // Integers and bools have no such math on the device: a cast makes the float
            // type explicit (the CUDA back end lowers these only on floats).
            if t.is_int() || t == ir::DType::Bool {
                d = d.with_help(format!(
                    "convert first: `{name}(f32({}))`",
                    self.text(v.span())
                ));
            }
            self.error(d);
            return None;
        }
        let ty = v.ty().clone();
        let uniform = v.uniform();
        let e = ex(ir::ExprKind::Math(f, Box::new(v.e)), ty, uniform, span);
        self.fold(e).map(V::strong)
    }

    fn reduce(
        &mut self,
        name: &str,
        op: ir::ReduceOp,
        v: V,
        axis: Option<(i64, Span)>,
        last: bool,
        span: Span,
    ) -> Option<V> {
        let ir::Ty::Tile(t, shape) = v.ty().clone() else {
            let help = if name == "min" || name == "max" {
                format!("`{name}(t)` reduces a tile; for two scalars write `{name}(a, b)`")
            } else {
                format!("`{name}` reduces a tile")
            };
            self.error(
                Diagnostic::error(
                    codes::TILE_SCALAR,
                    format!("`{name}` of a scalar"),
                    v.span(),
                )
                .with_label(ty_str(v.ty()))
                .with_help(help),
            );
            return None;
        };
        if t == DType::Bool {
            self.error(
                Diagnostic::error(
                    codes::BAD_OPERAND,
                    format!("`{name}` is not defined for bool"),
                    v.span(),
                )
                .with_label(ty_str(v.ty()))
                .with_help(format!(
                    "convert first: `{name}(i32({}))`",
                    self.text(v.span())
                )),
            );
            return None;
        }
        let rank = shape.len() as i64;
        let axis = match (axis, last) {
            (_, true) => Some(shape.len() - 1),
            (None, false) => None,
            (Some((a, aspan)), false) => {
                if a < -rank || a >= rank {
                    self.error(
                        Diagnostic::error(
                            codes::BAD_AXIS,
                            format!("axis {a} is out of range for a rank-{rank} tile"),
                            aspan,
                        )
                        .with_label(format!("the tile is {}", ty_str(v.ty())))
                        .with_help(format!("axes are 0..{rank} (or -1 for the last)")),
                    );
                    return None;
                }
                Some(a.rem_euclid(rank) as usize)
            }
        };
        let ty = match axis {
            None => ir::Ty::Scalar(t),
            Some(a) => {
                let mut s = shape.clone();
                s[a] = 1;
                ir::Ty::Tile(t, s)
            }
        };
        let kind = ir::ExprKind::Reduce {
            op,
            axis,
            arg: Box::new(v.e),
        };
        Some(V::strong(ex(kind, ty, true, span)))
    }

    /// `where(c, a, b)`.
    pub fn select(&mut self, c: V, a: V, b: V, span: Span) -> Option<V> {
        if c.dtype() != DType::Bool || c.weak.is_some() {
            self.error(
                Diagnostic::error(
                    codes::NOT_BOOL,
                    format!(
                        "the condition of `where` must be bool, found {}",
                        ty_str(c.ty())
                    ),
                    c.span(),
                )
                .with_label("not a bool")
                .with_help("compare to get a bool, e.g. `x > 0`"),
            );
            return None;
        }
        let (a, b) = self.unify(a, b, "`where`")?;
        let shape = self.common_shape(&[&c, &a, &b]).ok()?;
        let t = a.dtype();
        match shape {
            None => {
                let uniform = c.uniform() && a.uniform() && b.uniform();
                let kind = ir::ExprKind::Select(Box::new(c.e), Box::new(a.e), Box::new(b.e));
                let e = ex(kind, ir::Ty::Scalar(t), uniform, span);
                self.fold(e).map(V::strong)
            }
            Some(s) => {
                let ok = self.uniform_for_tile(&c)
                    & self.uniform_for_tile(&a)
                    & self.uniform_for_tile(&b);
                if !ok || !self.check_shape(&s, span) {
                    return None;
                }
                let c = self.broadcast_to(c.e, &s);
                let a = self.broadcast_to(a.e, &s);
                let b = self.broadcast_to(b.e, &s);
                let kind = ir::ExprKind::Select(Box::new(c), Box::new(a), Box::new(b));
                Some(V::strong(ex(kind, ir::Ty::Tile(t, s), true, span)))
            }
        }
    }

    fn cdiv(&mut self, a: V, b: V, span: Span) -> Option<V> {
        if let (Some(Weak::Int(x)), Some(Weak::Int(y))) = (a.weak, b.weak) {
            if y == 0 {
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
            let Some(q) = x.checked_div(y) else {
                self.error(
                    Diagnostic::error(codes::CONST_EVAL, "constant expression overflows i64", span)
                        .with_label("evaluated at compile time"),
                );
                return None;
            };
            let r = x % y;
            let q = if r != 0 && ((r < 0) == (y < 0)) {
                q + 1
            } else {
                q
            };
            return Some(self.weak(Weak::Int(q), span));
        }
        let (a, b) = self.unify(a, b, "`cdiv`")?;
        for v in [&a, &b] {
            if v.is_tile() || !v.dtype().is_int() {
                self.error(
                    Diagnostic::error(
                        codes::BAD_OPERAND,
                        format!("`cdiv` takes scalar integers, found {}", ty_str(v.ty())),
                        v.span(),
                    )
                    .with_label("not a scalar integer"),
                );
                return None;
            }
        }
        let uniform = a.uniform() && b.uniform();
        let ty = a.ty().clone();
        let e = ex(
            ir::ExprKind::Cdiv(Box::new(a.e), Box::new(b.e)),
            ty,
            uniform,
            span,
        );
        self.fold(e).map(V::strong)
    }

    fn dot(&mut self, name: &str, a: V, b: V, span: Span) -> Option<V> {
        let trans_b = name == "dot_t";
        let mut shapes = Vec::new();
        for v in [&a, &b] {
            match v.ty() {
                ir::Ty::Tile(_, s) if s.len() == 2 => shapes.push(s.clone()),
                other => {
                    self.error(
                        Diagnostic::error(
                            codes::DOT_SHAPE,
                            format!("`{name}` takes rank-2 tiles, found {}", ty_str(other)),
                            v.span(),
                        )
                        .with_label("not a rank-2 tile"),
                    );
                    return None;
                }
            }
        }
        let (ta, tb) = (a.dtype(), b.dtype());
        let f32ish = |t: DType| t == DType::F32 || t == DType::Tf32;
        let acc = if ta == tb || (f32ish(ta) && f32ish(tb)) {
            ta.dot_acc()
        } else {
            None
        };
        let Some(acc) = acc else {
            let msg = if ta != tb {
                format!("`{name}` operands have different element types: {ta} and {tb}")
            } else {
                format!("`{name}` is not defined for {ta}")
            };
            self.error(
                Diagnostic::error(codes::DOT_TYPE, msg, b.span())
                    .with_label(ty_str(b.ty()))
                    .with_secondary(a.span(), ty_str(a.ty()))
                    .with_note("dot takes two operands of one type: f16, bf16, f8e4m3, f8e5m2, f32/tf32, f64, i8 or u8")
                    .with_help(if ta != tb {
                        format!("convert one side, e.g. `{ta}({})`", self.text(b.span()))
                    } else {
                        format!("convert both, e.g. `{name}(f32(a), f32(b))`")
                    }),
            );
            return None;
        };
        let (m, k) = (shapes[0][0], shapes[0][1]);
        let (k2, n) = if trans_b {
            (shapes[1][1], shapes[1][0])
        } else {
            (shapes[1][0], shapes[1][1])
        };
        if k != k2 {
            let want = if trans_b {
                format!("[N, {k}]")
            } else {
                format!("[{k}, N]")
            };
            self.error(
                Diagnostic::error(
                    codes::DOT_SHAPE,
                    format!(
                        "`{name}` shapes do not match: [{m}, {k}] x [{}, {}]",
                        shapes[1][0], shapes[1][1]
                    ),
                    b.span(),
                )
                .with_label(format!("expected {want}"))
                .with_secondary(a.span(), format!("[{m}, {k}]"))
                .with_note(if trans_b {
                    "dot_t(a, b) = a @ transpose(b): a is [M, K], b is [N, K]"
                } else {
                    "dot(a, b) = a @ b: a is [M, K], b is [K, N]"
                })
                .with_help(if trans_b {
                    "use `dot(a, b)` if b is [K, N]"
                } else {
                    "use `dot_t(a, b)` if b is [N, K]"
                }),
            );
            return None;
        }
        let shape = vec![m, n];
        if !self.check_shape(&shape, span) {
            return None;
        }
        let tf32 = f32ish(ta) && (ta == DType::Tf32 || tb == DType::Tf32 || self.info.allow_tf32);
        let kind = ir::ExprKind::Dot {
            a: Box::new(a.e),
            b: Box::new(b.e),
            trans_b,
            tf32,
        };
        Some(V::strong(ex(kind, ir::Ty::Tile(acc, shape), true, span)))
    }
}
