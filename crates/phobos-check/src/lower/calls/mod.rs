//! Calls: casts (`f32(x)`, `TC(x)`) and the built-in functions: their arguments are checked
//! and dispatched here, elementwise built-ins are lowered in `elementwise`, those over whole
//! tiles in `tile_ops`.

mod elementwise;
mod tile_ops;

use super::value::{ex, lit, Weak, V};
use super::Cx;
use crate::codes;
use crate::suggest::did_you_mean;
use elementwise::{math_fn, math_fn_n};
use phobos_ir as ir;
use phobos_ir::eval::Value;
use phobos_ir::DType;
use phobos_syntax::ast::{Arg, Expr, Ident};
use phobos_syntax::{Diagnostic, Span};

/// Every built-in function name.
pub const BUILTINS: [&str; 38] = [
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
    "sizeof",
];

/// Positional arguments and named ones.
type Args<'e> = (Vec<&'e Expr>, Vec<(&'e Ident, &'e Expr)>);

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
            "sizeof" => {
                let (pos, _) = self.args(name, args, (1, 1), &[], span)?;
                let t = match &pos[0].kind {
                    phobos_syntax::ast::ExprKind::Name(id) => self.dtype_of(&id.name),
                    _ => None,
                };
                let Some(t) = t else {
                    self.error(
                        Diagnostic::error(
                            codes::BAD_ARGS,
                            "`sizeof` takes an element type",
                            pos[0].span,
                        )
                        .with_label("not an element type")
                        .with_help("name a type or a type parameter, e.g. `sizeof(T)`"),
                    );
                    return None;
                };
                Some(self.weak(Weak::Int(t.size_bytes() as i64), span))
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
                self.transpose(v, span)
            }
            "arange" => {
                let (pos, _) = self.args(name, args, (1, 1), &[], span)?;
                let n = self.const_int(pos[0], "the length of `arange`", codes::NOT_STATIC)?;
                self.arange(n, span)
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
}
