//! Built-ins over whole tiles: reductions, `dot`, `transpose`, `arange` and `reshape`.

use crate::codes;
use crate::lower::types::{shape_str, ty_str};
use crate::lower::value::{ex, V};
use crate::lower::Cx;
use phobos_ir as ir;
use phobos_ir::DType;
use phobos_syntax::ast::{Expr, ExprKind};
use phobos_syntax::{Diagnostic, Span};

impl Cx<'_> {
    /// `min`/`max`/`sum` of a tile (over one axis, or all of them), `rowsum`/`rowmax`/`rowmin`
    /// (over the last axis, when `last`).
    pub(super) fn reduce(
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

    /// `dot(a, b)`, `dot_t(a, b)`: the matrix product of two rank-2 tiles, in their
    /// accumulator type.
    pub(super) fn dot(&mut self, name: &str, a: V, b: V, span: Span) -> Option<V> {
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

    /// `transpose(v)`: a rank-2 tile with its axes swapped.
    pub(super) fn transpose(&mut self, v: V, span: Span) -> Option<V> {
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

    /// `arange(n)`: the i32 tile `[0, 1, .., n - 1]`.
    pub(super) fn arange(&mut self, n: i64, span: Span) -> Option<V> {
        if !self.check_shape(&[n], span) {
            return None;
        }
        let ty = ir::Ty::Tile(DType::I32, vec![n]);
        Some(V::strong(ex(ir::ExprKind::Arange(n), ty, true, span)))
    }

    /// The constant extents of `reshape`'s shape argument, a list `[d0]` or `[d0, d1]`.
    pub(super) fn shape_list(&mut self, e: &Expr) -> Option<Vec<i64>> {
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
    pub(in crate::lower) fn reshape(
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
}
