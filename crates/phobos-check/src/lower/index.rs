//! Indexing: tensor accesses (`X[i, a :+ n, a : b, :]`) and tile elements (`t[i, j]`).
//!
//! An integer index drops its dim; `s :+ n` needs a constant `n`; `a : b` needs `b - a` to fold
//! to a constant (linear.rs); `:` alone takes a whole static dim. Every access also feeds grid
//! inference (grid.rs).

use super::linear::const_difference;
use super::names::Named;
use super::types::{shape_str, ty_str};
use super::value::{ex, lit, V};
use super::Cx;
use crate::codes;
use crate::module::{DimInfo, ParamInfoKind};
use phobos_ir as ir;
use phobos_ir::eval::Value;
use phobos_ir::DType;
use phobos_syntax::ast::{self, IndexExpr};
use phobos_syntax::{Diagnostic, Span};

/// A checked tensor access.
pub(crate) struct Access {
    pub tensor: ir::ParamId,
    pub index: Vec<ir::Index>,
    /// `None` for a single element.
    pub shape: Option<Vec<i64>>,
    pub uniform: bool,
    pub dtype: DType,
    /// The eviction hint written on the access (`cache = ..`).
    pub cache: ir::Eviction,
}

impl Access {
    /// The access as a load expression.
    pub fn load(&self, span: Span) -> V {
        let ty = match &self.shape {
            Some(s) => ir::Ty::Tile(self.dtype, s.clone()),
            None => ir::Ty::Scalar(self.dtype),
        };
        let kind = ir::ExprKind::Load {
            tensor: self.tensor,
            index: self.index.clone(),
            cache: self.cache,
        };
        V::strong(ex(kind, ty, self.uniform, span))
    }
}

impl Cx<'_> {
    /// An i32 scalar index or bound.
    pub fn int_arg(&mut self, e: &ast::Expr, what: &str) -> Option<ir::Expr> {
        let v = self.expr(e)?;
        if v.is_tile() {
            self.error(
                Diagnostic::error(
                    codes::TILE_SCALAR,
                    format!("{what} must be a scalar, found {}", ty_str(v.ty())),
                    e.span,
                )
                .with_label("a tile"),
            );
            return None;
        }
        let v = self.coerce(v, DType::I32)?;
        if v.dtype() != DType::I32 {
            self.error(
                Diagnostic::error(
                    codes::NOT_INT,
                    format!("{what} must be i32, found {}", v.dtype()),
                    e.span,
                )
                .with_label(format!("{}", v.dtype()))
                .with_help(format!("convert it: `i32({})`", self.text(e.span))),
            );
            return None;
        }
        Some(v.e)
    }

    /// `base[indices]` read as a value.
    pub fn index_value(
        &mut self,
        base: &ast::Expr,
        indices: &[IndexExpr],
        options: &[ast::IndexOption],
        span: Span,
    ) -> Option<V> {
        if let ast::ExprKind::Name(id) = &base.kind {
            if let Named::Tensor(pid) = self.lookup(&id.name) {
                return self
                    .access(pid, indices, options, span)
                    .map(|a| a.load(span));
            }
        }
        let b = self.expr(base)?;
        if !self.no_options(
            options,
            "an element of a tile",
            "tiles live in registers: put the hint on the tensor access that loads the tile",
        ) {
            return None;
        }
        let ir::Ty::Tile(t, shape) = b.ty().clone() else {
            self.error(
                Diagnostic::error(
                    codes::NOT_INDEXABLE,
                    format!("cannot index a value of type {}", ty_str(b.ty())),
                    base.span,
                )
                .with_label("a scalar")
                .with_help("only tensors and tiles can be indexed"),
            );
            return None;
        };
        if indices.iter().any(is_new_axis) {
            return self.new_axes(b, &shape, indices, span);
        }
        if indices.len() != shape.len() {
            let mut d = Diagnostic::error(
                codes::INDEX_COUNT,
                format!(
                    "a rank-{} tile takes {} {}, found {}",
                    shape.len(),
                    shape.len(),
                    if shape.len() == 1 { "index" } else { "indices" },
                    indices.len()
                ),
                span,
            )
            .with_label(ty_str(b.ty()));
            if shape.len() == 1 && indices.len() == 2 {
                d = d.with_help(format!(
                    "for a new axis write `{0}[:, None]` (shape [{1}, 1]) or `{0}[None, :]` \
                     (shape [1, {1}])",
                    self.text(base.span),
                    shape[0]
                ));
            }
            self.error(d);
            return None;
        }
        let mut idx = Vec::new();
        let mut sliced = false;
        for i in indices {
            match i {
                IndexExpr::At(e) => idx.push(self.int_arg(e, "a tile index")),
                IndexExpr::Span { .. } | IndexExpr::Range { .. } if sliced => idx.push(None),
                IndexExpr::Span { span, .. } | IndexExpr::Range { span, .. } => {
                    sliced = true;
                    self.error(
                        Diagnostic::error(codes::TILE_SLICE, "tiles cannot be sliced", *span)
                            .with_label("a slice of a tile")
                            .with_help(
                                "slice the tensor instead, or index single elements `t[i, j]`",
                            ),
                    );
                    idx.push(None);
                }
            }
        }
        let idx: Vec<ir::Expr> = idx.into_iter().collect::<Option<_>>()?;
        let uniform = idx.iter().all(|e| e.uniform);
        let kind = ir::ExprKind::TileGet {
            tile: Box::new(b.e),
            index: idx,
        };
        Some(V::strong(ex(kind, ir::Ty::Scalar(t), uniform, span)))
    }

    /// `t[:, None]`, `t[None, :]`: a `:` per axis of `t`, in order, and a `None` per new axis
    /// of extent 1.
    fn new_axes(&mut self, b: V, shape: &[i64], indices: &[IndexExpr], span: Span) -> Option<V> {
        let mut out = Vec::new();
        let mut axes = shape.iter();
        for ix in indices {
            let whole = matches!(
                ix,
                IndexExpr::Range {
                    start: None,
                    end: None,
                    ..
                }
            );
            if is_new_axis(ix) {
                out.push(1);
            } else if let (true, Some(&d)) = (whole, axes.next()) {
                out.push(d);
            } else {
                let help = if whole {
                    format!("a rank-{} tile takes {} `:`", shape.len(), shape.len())
                } else {
                    "with `None`, every other position is `:` (the whole axis)".to_string()
                };
                self.error(
                    Diagnostic::error(
                        codes::INDEX_COUNT,
                        format!(
                            "cannot add axes to a tile of shape [{}] this way",
                            shape_str(shape)
                        ),
                        ix.span(),
                    )
                    .with_label(if whole {
                        "one `:` too many"
                    } else {
                        "not `:` or `None`"
                    })
                    .with_help(help),
                );
                return None;
            }
        }
        if axes.next().is_some() {
            self.error(
                Diagnostic::error(
                    codes::INDEX_COUNT,
                    format!(
                        "a rank-{} tile takes {} `:` besides its `None`s",
                        shape.len(),
                        shape.len()
                    ),
                    span,
                )
                .with_label(ty_str(b.ty())),
            );
            return None;
        }
        if !self.check_shape(&out, span) {
            return None;
        }
        self.reshape(b, out, span, span)
    }

    /// The source text of a tensor dim (its name, or its literal).
    fn dim_text(&self, pid: ir::ParamId, axis: usize) -> String {
        match &self.info.params[pid].kind {
            ParamInfoKind::Tensor { dims, .. } => match &dims[axis] {
                DimInfo::Static(v) => v.to_string(),
                DimInfo::Declared(n) | DimInfo::Runtime(n) => n.clone(),
            },
            ParamInfoKind::Scalar { .. } => String::new(),
        }
    }

    /// A checked access of tensor `pid`.
    pub fn access(
        &mut self,
        pid: ir::ParamId,
        indices: &[IndexExpr],
        options: &[ast::IndexOption],
        span: Span,
    ) -> Option<Access> {
        let cache = self.access_options(options);
        let ir::ParamKind::Tensor { dtype, dims, .. } = self.params[pid].kind.clone() else {
            return None;
        };
        let name = self.params[pid].name.clone();
        if indices.len() != dims.len() {
            let example = (0..dims.len())
                .map(|a| ["i", "j", "k", "l"].get(a).copied().unwrap_or("_"))
                .collect::<Vec<_>>();
            self.error(
                Diagnostic::error(
                    codes::INDEX_COUNT,
                    format!(
                        "`{name}` has {} dim{}, but {} {} given",
                        dims.len(),
                        if dims.len() == 1 { "" } else { "s" },
                        indices.len(),
                        if indices.len() == 1 {
                            "index is"
                        } else {
                            "indices are"
                        }
                    ),
                    span,
                )
                .with_label("wrong number of indices")
                .with_help(format!(
                    "one index per dim: `{name}[{}]`",
                    example.join(", ")
                )),
            );
            return None;
        }
        let mut index = Vec::new();
        let mut shape = Vec::new();
        let mut ok = true;
        for (axis, (ix, dim)) in indices.iter().zip(&dims).enumerate() {
            let dim_expr = || match dim {
                ir::Dim::Static(v) => lit(Value::Int(*v), DType::I32, span),
                ir::Dim::Dyn(id) => ex(
                    ir::ExprKind::Dim(*id),
                    ir::Ty::Scalar(DType::I32),
                    true,
                    span,
                ),
            };
            match ix {
                IndexExpr::At(e) => match self.int_arg(e, "an index") {
                    Some(x) => {
                        self.propose_at(&x, *dim, self.dim_text(pid, axis), ix.span());
                        index.push(ir::Index::At(x));
                    }
                    None => ok = false,
                },
                IndexExpr::Span {
                    start,
                    len,
                    span: sspan,
                } => {
                    let s = self.int_arg(start, "the start of a span");
                    let n = self.const_int(len, "the length of a `:+` span", codes::NOT_STATIC);
                    let (Some(s), Some(n)) = (s, n) else {
                        ok = false;
                        continue;
                    };
                    if !self.positive_len(n, *sspan) {
                        ok = false;
                        continue;
                    }
                    let len_text = self.text(len.span).to_string();
                    self.propose_span(&s, n, *dim, self.dim_text(pid, axis), len_text, *sspan);
                    index.push(ir::Index::Span { start: s, len: n });
                    shape.push(n);
                }
                IndexExpr::Range {
                    start,
                    end,
                    span: rspan,
                } => {
                    if let (None, ir::Dim::Dyn(_)) = (end, dim) {
                        let d = self.dim_text(pid, axis);
                        let whole = start.is_none();
                        self.error(
                            Diagnostic::error(
                                codes::WHOLE_DIM_RUNTIME,
                                if whole {
                                    format!("`:` takes the whole dim, but `{d}` is a runtime dim")
                                } else {
                                    format!("an open range ends at the runtime dim `{d}`")
                                },
                                *rspan,
                            )
                            .with_label("length not known at compile time")
                            .with_note("a slice is a tile, and tiles have static shapes")
                            .with_help("take a span of static length and mask the rest, e.g. `0 :+ BLOCK` with `arange(BLOCK) < N`"),
                        );
                        ok = false;
                        continue;
                    }
                    let s = match start {
                        Some(e) => self.int_arg(e, "the start of a range"),
                        None => Some(lit(Value::Int(0), DType::I32, *rspan)),
                    };
                    let e = match end {
                        Some(e) => self.int_arg(e, "the end of a range"),
                        None => Some(dim_expr()),
                    };
                    let (Some(s), Some(e)) = (s, e) else {
                        ok = false;
                        continue;
                    };
                    let Some(n) = const_difference(&s, &e) else {
                        self.error(
                            Diagnostic::error(
                                codes::RANGE_NOT_STATIC,
                                "the length of this range is not a compile-time constant",
                                *rspan,
                            )
                            .with_label("`end - start` does not fold to a constant")
                            .with_help("write a span of static length: `start :+ n`"),
                        );
                        ok = false;
                        continue;
                    };
                    if !self.positive_len(n, *rspan) {
                        ok = false;
                        continue;
                    }
                    self.propose_span(&s, n, *dim, self.dim_text(pid, axis), n.to_string(), *rspan);
                    index.push(ir::Index::Span { start: s, len: n });
                    shape.push(n);
                }
            }
        }
        if !ok {
            return None;
        }
        if !shape.is_empty() && !self.check_shape(&shape, span) {
            return None;
        }
        let starts: Vec<&ir::Expr> = index
            .iter()
            .map(|i| match i {
                ir::Index::At(x) | ir::Index::Span { start: x, .. } => x,
            })
            .collect();
        let uniform = starts.iter().all(|x| x.uniform);
        if !shape.is_empty() && !uniform {
            for x in starts.iter().filter(|x| !x.uniform) {
                let v = V::strong((*x).clone());
                self.uniform_for_tile(&v);
            }
            return None;
        }
        let cache = cache?;
        Some(Access {
            tensor: pid,
            index,
            shape: (!shape.is_empty()).then_some(shape),
            uniform,
            dtype,
            cache,
        })
    }

    fn positive_len(&mut self, n: i64, span: Span) -> bool {
        if n >= 1 {
            return true;
        }
        self.error(
            Diagnostic::error(codes::TILE_SIZE, format!("a slice of length {n}"), span)
                .with_label("the length must be at least 1"),
        );
        false
    }

    /// Converts a value to the element type and shape of a store.
    pub fn store_value(&mut self, acc: &Access, v: V, target: Span) -> Option<ir::Expr> {
        let t = acc.dtype;
        let v = self.coerce(v, t)?;
        let shape = acc.shape.clone();
        match (&shape, v.ty().shape()) {
            (None, Some(_)) => {
                self.error(
                    Diagnostic::error(
                        codes::STORE_SHAPE,
                        format!("cannot store a {} into one element", ty_str(v.ty())),
                        v.span(),
                    )
                    .with_label("a tile")
                    .with_secondary(target, "one element")
                    .with_help("store into a slice of the same shape, e.g. `X[a :+ 64]`"),
                );
                return None;
            }
            (Some(s), Some(vs)) if s.as_slice() != vs => {
                let mut d = Diagnostic::error(
                    codes::STORE_SHAPE,
                    format!(
                        "cannot store a tile of shape [{}] into a slice of shape [{}]",
                        shape_str(vs),
                        shape_str(s)
                    ),
                    v.span(),
                )
                .with_label(ty_str(v.ty()))
                .with_secondary(target, format!("shape [{}]", shape_str(s)));
                // Shapes that differ only by axes of extent 1 (`[R, 1]` and `[R]`).
                let squeeze = |x: &[i64]| x.iter().copied().filter(|&n| n != 1).collect::<Vec<_>>();
                if squeeze(s) == squeeze(vs) {
                    d = d.with_help(format!(
                        "the same elements: store `reshape({}, [{}])`",
                        self.text(v.span()),
                        shape_str(s)
                    ));
                }
                self.error(d);
                return None;
            }
            (Some(_), None) if !self.uniform_for_tile(&v) => return None,
            _ => {}
        }
        let span = v.span();
        let e = if v.dtype() == t {
            v.e
        } else {
            let ty = match v.ty() {
                ir::Ty::Scalar(_) => ir::Ty::Scalar(t),
                ir::Ty::Tile(_, s) => ir::Ty::Tile(t, s.clone()),
            };
            let uniform = v.uniform();
            self.fold(ex(ir::ExprKind::Cast(Box::new(v.e)), ty, uniform, span))?
        };
        Some(match &shape {
            Some(s) => self.broadcast_to(e, s),
            None => e,
        })
    }
}

/// `None` in an index position: a new axis of extent 1 (NumPy's `np.newaxis`).
fn is_new_axis(ix: &IndexExpr) -> bool {
    matches!(ix, IndexExpr::At(ast::Expr { kind: ast::ExprKind::Name(id), .. }) if id.name == "None")
}
