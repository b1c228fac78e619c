//! Elementwise built-ins: the math functions, `rand`/`randn`, `where` and `cdiv`.

use crate::codes;
use crate::lower::types::ty_str;
use crate::lower::value::{ex, Weak, V};
use crate::lower::Cx;
use phobos_ir as ir;
use phobos_ir::DType;
use phobos_syntax::{Diagnostic, Span};

/// The math function of one operand called `name`.
pub(super) fn math_fn(name: &str) -> Option<ir::MathFn> {
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
pub(super) fn math_fn_n(name: &str) -> Option<(ir::MathFnN, usize)> {
    Some(match name {
        "pow" => (ir::MathFnN::Pow, 2),
        "fma" => (ir::MathFnN::Fma, 3),
        _ => return None,
    })
}

impl Cx<'_> {
    /// A math function of one operand (`exp(x)`, `abs(x)`, ..): floats, and integers for `abs`;
    /// an integer literal takes the default float type (except in `abs`).
    pub(super) fn math(&mut self, name: &str, f: ir::MathFn, v: V, span: Span) -> Option<V> {
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

    /// `pow(x, y)`, `fma(a, b, c)`: float operands of one type (weak literals take it, or f32),
    /// broadcast together like `where`'s.
    pub(super) fn math_n(
        &mut self,
        name: &str,
        f: ir::MathFnN,
        args: Vec<V>,
        span: Span,
    ) -> Option<V> {
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
    pub(super) fn random(&mut self, name: &str, seed: V, offsets: V, span: Span) -> Option<V> {
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

    /// `cdiv(a, b)`: integer division rounding up, of scalars (folded when both are literals).
    pub(super) fn cdiv(&mut self, a: V, b: V, span: Span) -> Option<V> {
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
}
