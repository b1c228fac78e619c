//! Kernel-level checks: attributes, the shape environment, type parameters, parameter types and
//! name collisions between them. Everything here is independent of the point.

use crate::codes;
use crate::module::{DimInfo, Elem, KernelInfo, ParamInfo, ParamInfoKind};
use crate::space::Space;
use crate::suggest::did_you_mean;
use phobos_ir::DType;
use phobos_syntax::ast::{self, AttrKind, DimExpr, TypeExpr};
use phobos_syntax::{Diagnostic, Span};

/// Attribute names the language knows.
pub const KNOWN_ATTRS: [&str; 8] = [
    "autotune",
    "launch",
    "grid",
    "where",
    "aligned",
    "flops",
    "bytes",
    "allow_tf32",
];

/// The most ranks a tensor parameter may have.
pub const MAX_TENSOR_RANK: usize = 8;

/// The largest tensor extent: runtime dims are bound as `i32`, and static ones obey the same
/// bound so an index always fits the type the kernel computes it in.
pub const MAX_TENSOR_DIM: i64 = i32::MAX as i64;

/// The bytes of a tensor whose every extent is static, if they fit in `i64`. Element counts and
/// byte offsets are computed in `i64` by every back end, so a larger tensor cannot be addressed.
pub fn static_tensor_bytes(dims: &[i64], elem_bytes: usize) -> Option<i64> {
    dims.iter()
        .try_fold(elem_bytes as i64, |acc, &d| acc.checked_mul(d.max(0)))
}

/// A type name as spelled in Phobos source (`f16`, not the tuner alias `fp16`).
pub fn source_dtype(name: &str) -> Option<DType> {
    DType::ALL.into_iter().find(|t| t.name() == name)
}

/// Names no declaration may take.
pub fn is_reserved(name: &str) -> bool {
    matches!(name, "ctx" | "inf" | "true" | "false") || source_dtype(name).is_some()
}

fn reserved(name: &ast::Ident, what: &str) -> Diagnostic {
    Diagnostic::error(
        codes::RESERVED_NAME,
        format!("`{}` is reserved and cannot name a {what}", name.name),
        name.span,
    )
    .with_label("reserved name")
    .with_help("choose another name")
}

/// Runs the kernel-level checks of one kernel and describes its signature.
pub(crate) fn info(k: &ast::Kernel, index: usize, diags: &mut Vec<Diagnostic>) -> KernelInfo {
    check_attrs(k, diags);
    let space = Space::from_attrs(&k.attrs, diags);
    let type_params = type_params(k, diags);
    let params = params(k, &space, &type_params, diags);
    collisions(k, &space, diags);
    KernelInfo {
        name: k.name.name.clone(),
        index,
        span: k.span,
        space,
        type_params,
        params,
        allow_tf32: k.attrs.iter().any(|a| a.kind == AttrKind::AllowTf32),
    }
}

fn check_attrs(k: &ast::Kernel, diags: &mut Vec<Diagnostic>) {
    for (i, attr) in k.attrs.iter().enumerate() {
        let single = matches!(
            attr.kind,
            AttrKind::Launch(_)
                | AttrKind::Grid(_)
                | AttrKind::Flops(_)
                | AttrKind::Bytes(_)
                | AttrKind::AllowTf32
        );
        if let AttrKind::Unknown(_) = attr.kind {
            let mut d = Diagnostic::warning(
                codes::UNKNOWN_ATTR,
                format!("unknown attribute `@{}` is ignored", attr.name.name),
                attr.name.span,
            )
            .with_label("unknown attribute")
            .with_note(format!("known attributes: @{}", KNOWN_ATTRS.join(", @")));
            if let Some(s) = did_you_mean(&attr.name.name, KNOWN_ATTRS) {
                d = d.with_help(s);
            }
            diags.push(d);
        } else if single {
            let earlier = k.attrs[..i].iter().find(|a| a.name.name == attr.name.name);
            if let Some(first) = earlier {
                diags.push(
                    Diagnostic::error(
                        codes::DUP_ATTR,
                        format!("`@{}` is given twice", attr.name.name),
                        attr.span,
                    )
                    .with_label("given again here")
                    .with_secondary(first.span, "first given here")
                    .with_help("keep one"),
                );
            }
        }
    }
}

fn type_params(k: &ast::Kernel, diags: &mut Vec<Diagnostic>) -> Vec<(String, Option<DType>)> {
    let mut out: Vec<(String, Option<DType>)> = Vec::new();
    for (i, tp) in k.type_params.iter().enumerate() {
        if is_reserved(&tp.name.name) {
            diags.push(reserved(&tp.name, "type parameter"));
            continue;
        }
        if let Some(first) = k.type_params[..i]
            .iter()
            .find(|o| o.name.name == tp.name.name)
        {
            diags.push(dup(&tp.name, first.name.span, "type parameter"));
            continue;
        }
        let default = tp.default.as_ref().and_then(|d| {
            let t = source_dtype(&d.name);
            if t.is_none() {
                let is_param = k.type_params.iter().any(|o| o.name.name == d.name);
                let mut diag = Diagnostic::error(
                    codes::BAD_TYPE_DEFAULT,
                    format!(
                        "the default of `{}` must be a concrete element type, not `{}`",
                        tp.name.name, d.name
                    ),
                    d.span,
                )
                .with_label(if is_param {
                    "a type parameter"
                } else {
                    "not an element type"
                });
                let linked = out.iter().find(|(n, _)| n == &d.name).and_then(|(_, t)| *t);
                diag = match did_you_mean(&d.name, DType::ALL.iter().map(|t| t.name())) {
                    Some(s) if !is_param => diag.with_help(s),
                    _ if is_param => diag.with_help(format!(
                        "write a concrete type, e.g. `{} = {}`, and bind both with --types",
                        tp.name.name,
                        linked.unwrap_or(DType::F32)
                    )),
                    _ => diag.with_help(format!("element types: {}", type_list())),
                };
                diags.push(diag);
            }
            t
        });
        out.push((tp.name.name.clone(), default));
    }
    out
}

/// `bool, i8, ...` for messages.
pub fn type_list() -> String {
    DType::ALL.map(|t| t.name()).join(", ")
}

fn dup(name: &ast::Ident, first: Span, what: &str) -> Diagnostic {
    Diagnostic::error(
        codes::DUP_PARAM,
        format!("the {what} `{}` is declared twice", name.name),
        name.span,
    )
    .with_label("declared again here")
    .with_secondary(first, "first declared here")
    .with_help("rename one of them")
}

/// Resolves an element type name: a concrete type or a type parameter.
pub(crate) fn elem(
    name: &ast::Ident,
    type_params: &[(String, Option<DType>)],
    diags: &mut Vec<Diagnostic>,
) -> Option<Elem> {
    if let Some(t) = source_dtype(&name.name) {
        return Some(Elem::Concrete(t));
    }
    if type_params.iter().any(|(n, _)| n == &name.name) {
        return Some(Elem::Param(name.name.clone()));
    }
    let candidates = DType::ALL
        .iter()
        .map(|t| t.name())
        .chain(type_params.iter().map(|(n, _)| n.as_str()));
    let mut d = Diagnostic::error(
        codes::UNKNOWN_TYPE,
        format!("unknown element type `{}`", name.name),
        name.span,
    )
    .with_label("not a type");
    d = match did_you_mean(&name.name, candidates) {
        Some(s) => d.with_help(s),
        None => d.with_help(format!("element types: {}", type_list())),
    };
    diags.push(d);
    None
}

fn params(
    k: &ast::Kernel,
    space: &Space,
    type_params: &[(String, Option<DType>)],
    diags: &mut Vec<Diagnostic>,
) -> Vec<ParamInfo> {
    let mut out = Vec::new();
    for (i, p) in k.params.iter().enumerate() {
        if is_reserved(&p.name.name) {
            diags.push(reserved(&p.name, "parameter"));
        } else if let Some(first) = k.params[..i].iter().find(|o| o.name.name == p.name.name) {
            diags.push(dup(&p.name, first.name.span, "parameter"));
        } else if let Some(tp) = k.type_params.iter().find(|t| t.name.name == p.name.name) {
            diags.push(dup(&p.name, tp.name.span, "name"));
        }
        let kind = match &p.ty {
            TypeExpr::Scalar(name) => {
                elem(name, type_params, diags).map(|elem| ParamInfoKind::Scalar { elem })
            }
            TypeExpr::Tile { span, .. } => {
                diags.push(
                    Diagnostic::error(
                        codes::BAD_PARAM_TYPE,
                        format!("the parameter `{}` cannot be a tile", p.name.name),
                        *span,
                    )
                    .with_label("tiles live only inside a kernel")
                    .with_help("take a tensor and load the tile: `X: tensor<f32>[M, N]`, then `X[a :+ 32, b :+ 32]`"),
                );
                None
            }
            TypeExpr::Tensor {
                elem: e,
                dims,
                span,
            } => {
                let elem = elem(e, type_params, diags);
                if dims.is_empty() || dims.len() > MAX_TENSOR_RANK {
                    diags.push(
                        Diagnostic::error(
                            codes::BAD_TENSOR_DIM,
                            format!(
                                "the tensor `{}` has rank {}; tensors have 1 to {MAX_TENSOR_RANK} dims",
                                p.name.name,
                                dims.len()
                            ),
                            *span,
                        )
                        .with_label("rank out of range"),
                    );
                }
                let dims: Vec<DimInfo> = dims.iter().map(|d| dim_info(d, space, diags)).collect();
                let literal: Option<Vec<i64>> = dims
                    .iter()
                    .map(|d| match d {
                        DimInfo::Static(v) => Some(*v),
                        _ => None,
                    })
                    .collect();
                // A type parameter's size is known only per variant; lowering checks it then.
                let elem_bytes = match &elem {
                    Some(Elem::Concrete(t)) => t.size_bytes(),
                    _ => 1,
                };
                if let Some(literal) = literal {
                    if literal.iter().all(|&v| (1..=MAX_TENSOR_DIM).contains(&v))
                        && static_tensor_bytes(&literal, elem_bytes).is_none()
                    {
                        diags.push(too_large(&p.name.name, *span));
                    }
                }
                elem.map(|elem| ParamInfoKind::Tensor { elem, dims })
            }
        };
        if let Some(kind) = kind {
            out.push(ParamInfo {
                name: p.name.name.clone(),
                kind,
                span: p.span,
            });
        }
    }
    out
}

fn dim_info(d: &DimExpr, space: &Space, diags: &mut Vec<Diagnostic>) -> DimInfo {
    match d {
        DimExpr::Lit(v, span) => {
            if *v < 1 {
                diags.push(
                    Diagnostic::error(
                        codes::BAD_TENSOR_DIM,
                        format!("a tensor dim must be at least 1, not {v}"),
                        *span,
                    )
                    .with_label("below 1"),
                );
            } else if *v > MAX_TENSOR_DIM {
                diags.push(dim_too_large(&v.to_string(), *v, *span));
            }
            DimInfo::Static(*v)
        }
        DimExpr::Name(id) if space.get(&id.name).is_some() => DimInfo::Declared(id.name.clone()),
        DimExpr::Name(id) => {
            if is_reserved(&id.name) {
                diags.push(reserved(id, "dim"));
            }
            DimInfo::Runtime(id.name.clone())
        }
    }
}

/// A static tensor extent above [`MAX_TENSOR_DIM`]; `what` is how the dim was written.
pub(crate) fn dim_too_large(what: &str, v: i64, span: Span) -> Diagnostic {
    let value = if what == v.to_string() {
        String::new()
    } else {
        format!(" = {v}")
    };
    Diagnostic::error(
        codes::BAD_TENSOR_DIM,
        format!("the tensor dim `{what}`{value} is too large; a dim is at most {MAX_TENSOR_DIM}"),
        span,
    )
    .with_label("above 2147483647")
    .with_help("tensor extents are indexed as `i32`; split the tensor or make the dim smaller")
}

/// A tensor whose static extents hold more bytes than `i64` counts.
pub(crate) fn too_large(name: &str, span: Span) -> Diagnostic {
    Diagnostic::error(
        codes::TENSOR_TOO_LARGE,
        format!("the tensor `{name}` is too large: its size in bytes does not fit in i64"),
        span,
    )
    .with_label("the product of these dims overflows")
    .with_help("make the dims smaller; no device holds a tensor this large")
}

/// Shape-environment names and runtime dim names must not be parameter or type parameter names.
fn collisions(k: &ast::Kernel, space: &Space, diags: &mut Vec<Diagnostic>) {
    let owner = |name: &str| -> Option<(Span, &'static str)> {
        if let Some(p) = k.params.iter().find(|p| p.name.name == name) {
            return Some((p.name.span, "parameter"));
        }
        k.type_params
            .iter()
            .find(|t| t.name.name == name)
            .map(|t| (t.name.span, "type parameter"))
    };
    for n in &space.names {
        if is_reserved(&n.name) {
            diags.push(reserved(
                &ast::Ident {
                    name: n.name.clone(),
                    span: n.span,
                },
                "shape-environment constant",
            ));
        } else if let Some((span, what)) = owner(&n.name) {
            diags.push(
                Diagnostic::error(
                    codes::AUTOTUNE_COLLISION,
                    format!("`{}` is declared in @autotune and is also a {what}", n.name),
                    n.span,
                )
                .with_label("declared here")
                .with_secondary(span, format!("the {what}"))
                .with_help("rename one of them"),
            );
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    for p in &k.params {
        if let TypeExpr::Tensor { dims, .. } = &p.ty {
            for d in dims {
                let DimExpr::Name(id) = d else { continue };
                if seen.contains(&id.name.as_str()) || space.get(&id.name).is_some() {
                    continue;
                }
                seen.push(&id.name);
                if let Some((span, what)) = owner(&id.name) {
                    diags.push(
                        Diagnostic::error(
                            codes::NAME_COLLISION,
                            format!("the dim `{}` has the name of a {what}", id.name),
                            id.span,
                        )
                        .with_label("a runtime dim")
                        .with_secondary(span, format!("the {what}"))
                        .with_help("dims, parameters and type parameters need distinct names"),
                    );
                }
            }
        }
    }
}
