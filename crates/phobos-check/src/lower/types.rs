//! Types at a point: the parameter and dim tables, declared types of locals, tile shapes.

use super::Cx;
use crate::codes;
use crate::kernel::{
    dim_too_large, source_dtype, static_tensor_bytes, too_large, type_list, MAX_TENSOR_DIM,
};
use crate::module::{DimInfo, KernelInfo, ParamInfoKind};
use crate::suggest::did_you_mean;
use phobos_ir as ir;
use phobos_ir::{DType, MemOrder};
use phobos_syntax::{ast, Diagnostic, Span};

/// The most elements a tile may hold.
pub const MAX_TILE_ELEMS: i64 = 1 << 20;

/// `f32` or `tile<f32>[32, 64]`.
pub fn ty_str(ty: &ir::Ty) -> String {
    match ty {
        ir::Ty::Scalar(t) => t.name().to_string(),
        ir::Ty::Tile(t, s) => format!("tile<{}>[{}]", t.name(), shape_str(s)),
    }
}

/// `32, 64`.
pub fn shape_str(s: &[i64]) -> String {
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The IR parameters and runtime dims of a kernel at a point.
pub(super) fn params(
    info: &KernelInfo,
    ast: &ast::Kernel,
    point: &ir::Point,
    types: &[(String, DType)],
    orders: &[(String, MemOrder)],
    diags: &mut Vec<Diagnostic>,
) -> Option<(Vec<ir::Param>, Vec<ir::DimVar>)> {
    let mut params = Vec::new();
    let mut dims: Vec<ir::DimVar> = Vec::new();
    let mut ok = true;
    for (pid, p) in info.params.iter().enumerate() {
        let kind = match &p.kind {
            ParamInfoKind::Scalar { elem } => ir::ParamKind::Scalar {
                dtype: elem.resolve(types)?,
            },
            ParamInfoKind::Tensor { elem, dims: ds } => {
                let spans: Vec<Span> = match ast.params.get(pid).map(|a| &a.ty) {
                    Some(ast::TypeExpr::Tensor { dims, .. }) => {
                        dims.iter().map(|d| d.span()).collect()
                    }
                    _ => vec![p.span; ds.len()],
                };
                let mut out = Vec::new();
                for (axis, d) in ds.iter().enumerate() {
                    out.push(match d {
                        DimInfo::Static(v) => ir::Dim::Static(*v),
                        DimInfo::Declared(n) => {
                            let v = point.get(n).unwrap_or(0);
                            if v < 1 {
                                ok = false;
                                diags.push(
                                    Diagnostic::error(
                                        codes::BAD_TENSOR_DIM,
                                        format!("`{n}` is {v} at this point; a tensor dim must be at least 1"),
                                        spans.get(axis).copied().unwrap_or(p.span),
                                    )
                                    .with_label("this dim"),
                                );
                            } else if v > MAX_TENSOR_DIM {
                                ok = false;
                                diags.push(dim_too_large(
                                    n,
                                    v,
                                    spans.get(axis).copied().unwrap_or(p.span),
                                ));
                            }
                            ir::Dim::Static(v)
                        }
                        DimInfo::Runtime(n) => match dims.iter().position(|d| &d.name == n) {
                            Some(id) => ir::Dim::Dyn(id),
                            None => {
                                dims.push(ir::DimVar {
                                    name: n.clone(),
                                    source: (pid, axis),
                                });
                                ir::Dim::Dyn(dims.len() - 1)
                            }
                        },
                    });
                }
                let dtype = elem.resolve(types)?;
                let statics: Option<Vec<i64>> = out
                    .iter()
                    .map(|d| match d {
                        ir::Dim::Static(v) => Some(*v),
                        ir::Dim::Dyn(_) => None,
                    })
                    .collect();
                if let Some(statics) = statics {
                    if ok && static_tensor_bytes(&statics, dtype.size_bytes()).is_none() {
                        ok = false;
                        let span = match ast.params.get(pid).map(|a| &a.ty) {
                            Some(ast::TypeExpr::Tensor { span, .. }) => *span,
                            _ => p.span,
                        };
                        diags.push(too_large(&p.name, span));
                    }
                }
                let order = orders
                    .iter()
                    .find(|(n, _)| n == &p.name)
                    .map_or(MemOrder::RowMajor, |&(_, o)| o);
                ir::ParamKind::Tensor {
                    dtype,
                    dims: out,
                    order,
                }
            }
        };
        params.push(ir::Param {
            name: p.name.clone(),
            kind,
            span: p.span,
        });
    }
    ok.then_some((params, dims))
}

impl Cx<'_> {
    /// An element type name in the body: a type or a bound type parameter.
    pub fn dtype_of(&self, name: &str) -> Option<DType> {
        source_dtype(name).or_else(|| self.types.iter().find(|(n, _)| n == name).map(|&(_, t)| t))
    }

    fn elem(&mut self, id: &ast::Ident) -> Option<DType> {
        if let Some(t) = self.dtype_of(&id.name) {
            return Some(t);
        }
        let candidates: Vec<String> = DType::ALL
            .iter()
            .map(|t| t.name().to_string())
            .chain(self.types.iter().map(|(n, _)| n.clone()))
            .collect();
        let mut d = Diagnostic::error(
            codes::UNKNOWN_TYPE,
            format!("unknown element type `{}`", id.name),
            id.span,
        )
        .with_label("not a type");
        d = match did_you_mean(&id.name, candidates.iter().map(String::as_str)) {
            Some(s) => d.with_help(s),
            None => d.with_help(format!("element types: {}", type_list())),
        };
        self.error(d);
        None
    }

    /// The declared type of a local.
    pub fn decl_type(&mut self, t: &ast::TypeExpr) -> Option<ir::Ty> {
        match t {
            ast::TypeExpr::Scalar(id) => self.elem(id).map(ir::Ty::Scalar),
            ast::TypeExpr::Tile { elem, dims, span } => {
                let elem = self.elem(elem);
                let mut shape = Vec::new();
                for d in dims {
                    shape.push(self.const_int(d, "a tile dim", codes::NOT_STATIC)?);
                }
                let elem = elem?;
                self.check_shape(&shape, *span)
                    .then_some(ir::Ty::Tile(elem, shape))
            }
            ast::TypeExpr::Tensor { span, .. } => {
                self.error(
                    Diagnostic::error(
                        codes::BAD_PARAM_TYPE,
                        "a local variable cannot be a tensor",
                        *span,
                    )
                    .with_label("tensors are kernel parameters")
                    .with_help("declare a tile: `tile<f32>[64, 64]`"),
                );
                None
            }
        }
    }

    /// Checks that a tile shape has rank 1 or 2, extents of at least 1 and at most
    /// [`MAX_TILE_ELEMS`] elements.
    pub fn check_shape(&mut self, shape: &[i64], span: Span) -> bool {
        if shape.is_empty() || shape.len() > 2 {
            self.error(
                Diagnostic::error(
                    codes::TILE_RANK,
                    format!("a tile of rank {} (tiles have rank 1 or 2)", shape.len()),
                    span,
                )
                .with_label(format!("shape [{}]", shape_str(shape)))
                .with_help("index a dim with a single integer to drop it, or split the work into several tiles"),
            );
            return false;
        }
        if let Some(d) = shape.iter().find(|&&d| d < 1) {
            self.error(
                Diagnostic::error(
                    codes::TILE_SIZE,
                    format!("a tile extent must be at least 1, not {d}"),
                    span,
                )
                .with_label(format!("shape [{}]", shape_str(shape))),
            );
            return false;
        }
        let elems = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d));
        if elems.is_none_or(|n| n > MAX_TILE_ELEMS) {
            self.error(
                Diagnostic::error(
                    codes::TILE_SIZE,
                    format!("a tile of shape [{}] is too large", shape_str(shape)),
                    span,
                )
                .with_label("too many elements")
                .with_note(format!(
                    "a tile holds at most {MAX_TILE_ELEMS} elements (1 << 20)"
                ))
                .with_help("use smaller tile sizes"),
            );
            return false;
        }
        true
    }
}
