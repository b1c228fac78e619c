//! Binding a GEMM problem to a kernel: which runtime dims, type parameters and tensor orders
//! `M N K`, `dtype_a/b/c` and `rowMajorA/B` mean for that kernel.
//!
//! The operands are tensors (named `A`, `B`, `C` unless [`TensorNames`] says otherwise), read
//! logically as `A[M, K]`, `B[K, N]`, `C[M, N]` whatever their memory order: a transposed
//! operand is a column-major layout, not a different declaration. Each runtime dim of the
//! kernel is bound from the axis that names it; a static axis must equal the problem's dim. An
//! operand whose element type is a type parameter binds it to the problem's dtype; a concrete
//! element type must match the dtype given for it.

use super::{GemmProblem, MAX_DIM};
use crate::types::Problem;
use phobos_check::{DimInfo, Elem, KernelInfo, ParamInfoKind};
use phobos_ir::{DType, MemOrder};

/// The tensor parameters that play A, B and C (default `A`, `B`, `C`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorNames {
    /// The left operand, `[M, K]`.
    pub a: String,
    /// The right operand, `[K, N]`.
    pub b: String,
    /// The output, `[M, N]`.
    pub c: String,
}

impl Default for TensorNames {
    fn default() -> TensorNames {
        TensorNames {
            a: "A".to_string(),
            b: "B".to_string(),
            c: "C".to_string(),
        }
    }
}

impl TensorNames {
    /// Parses `A=X,B=W,C=Y` (any subset; the rest keep their defaults).
    pub fn parse(text: &str) -> Result<TensorNames, BindError> {
        let mut names = TensorNames::default();
        let mut seen = Vec::new();
        for item in text.split([',', ' ']).filter(|s| !s.is_empty()) {
            let malformed = || BindError::BadTensorNames {
                text: item.to_string(),
            };
            let (role, name) = item.split_once('=').ok_or_else(malformed)?;
            let (role, name) = (role.trim(), name.trim());
            if name.is_empty() || seen.contains(&role) {
                return Err(malformed());
            }
            match role {
                "A" => names.a = name.to_string(),
                "B" => names.b = name.to_string(),
                "C" => names.c = name.to_string(),
                _ => return Err(malformed()),
            }
            seen.push(role);
        }
        Ok(names)
    }
}

/// What a GEMM problem means for one kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    /// Every runtime dim of the kernel, in the kernel's order (`KernelInfo::runtime_dims`).
    pub dims: Vec<(String, i64)>,
    /// Type parameters bound by the problem's dtypes, in declaration order (the rest keep
    /// their defaults).
    pub types: Vec<(String, DType)>,
    /// Memory orders the problem gives for A and B, by tensor name.
    pub layouts: Vec<(String, MemOrder)>,
}

impl Binding {
    /// `TA=bf16,TC=f32`, the form `--types` and `KernelInfo::variant` accept.
    pub fn types_text(&self) -> String {
        let parts: Vec<String> = self.types.iter().map(|(n, t)| format!("{n}={t}")).collect();
        parts.join(",")
    }

    /// `A=row,B=col`, the form `--layout` and `KernelInfo::variant` accept.
    pub fn layouts_text(&self) -> String {
        let parts: Vec<String> = self
            .layouts
            .iter()
            .map(|(n, o)| {
                format!(
                    "{n}={}",
                    if *o == MemOrder::RowMajor {
                        "row"
                    } else {
                        "col"
                    }
                )
            })
            .collect();
        parts.join(",")
    }

    /// The engine's problem (no scalar arguments).
    pub fn to_problem(&self) -> Problem {
        Problem {
            dims: self.dims.clone(),
            types: self.types.clone(),
            layouts: self.layouts.clone(),
            args: Vec::new(),
        }
    }
}

/// Why a GEMM problem does not fit a kernel.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// `--operands`-style text that is not `A=NAME,B=NAME,C=NAME`.
    #[error("`{text}` does not name an operand tensor (expected e.g. A=X,B=W,C=Y)")]
    BadTensorNames { text: String },
    /// Two operands name the same tensor.
    #[error("{first} and {second} both name the tensor `{tensor}`")]
    SameTensor {
        first: char,
        second: char,
        tensor: String,
    },
    /// No parameter of that name.
    #[error("kernel `{kernel}` has no tensor `{tensor}` for operand {role} (its tensors: {tensors}); map the operands to tensors, e.g. A=X,B=W,C=Y")]
    NoTensor {
        kernel: String,
        role: char,
        tensor: String,
        tensors: String,
    },
    /// The parameter is a scalar.
    #[error("`{tensor}` (operand {role}) is a scalar parameter of `{kernel}`, not a tensor (its tensors: {tensors})")]
    NotATensor {
        kernel: String,
        role: char,
        tensor: String,
        tensors: String,
    },
    /// The operand is not a matrix.
    #[error(
        "operand {role} (`{tensor}`) has rank {rank}; a GEMM operand is a matrix {role}{expected}"
    )]
    Rank {
        role: char,
        tensor: String,
        rank: usize,
        expected: &'static str,
    },
    /// A dim of the problem outside `1..=i32::MAX`.
    #[error("{dim} = {value} is not a positive i32")]
    BadDim { dim: char, value: i64 },
    /// A static axis that differs from the problem's dim.
    #[error("axis {axis} of `{tensor}` is fixed at {fixed}, but {dim} = {value}")]
    Static {
        tensor: String,
        axis: usize,
        fixed: i64,
        dim: char,
        value: i64,
    },
    /// An axis sized by an `@autotune` name.
    #[error("axis {axis} of `{tensor}` is the @autotune name `{name}`; GEMM operands need runtime dims such as M, N, K")]
    Declared {
        tensor: String,
        axis: usize,
        name: String,
    },
    /// One kernel dim standing for two GEMM dims of different values.
    #[error("`{name}` is {first} at {first_at} and {second} at {second_at}, but the problem has {first} = {first_value}, {second} = {second_value} (operands are read as A[M, K], B[K, N], C[M, N]; a transposed operand is a col-major layout)")]
    DimConflict {
        name: String,
        first: char,
        first_at: String,
        first_value: i64,
        second: char,
        second_at: String,
        second_value: i64,
    },
    /// A runtime dim that no operand axis gives.
    #[error("the runtime dim `{name}` of `{tensor}` is not an axis of the GEMM operands; the GEMM workflow cannot size it")]
    UnboundDim { name: String, tensor: String },
    /// Two operands sharing a type parameter with different dtypes.
    #[error(
        "operands {first} and {second} share the type parameter `{param}`, but dtype_{a} = \
         {first_type} and dtype_{b} = {second_type}",
        a = .first.to_ascii_lowercase(),
        b = .second.to_ascii_lowercase()
    )]
    TypeConflict {
        param: String,
        first: char,
        first_type: DType,
        second: char,
        second_type: DType,
    },
    /// A dtype for an operand whose element type is concrete and different.
    #[error(
        "operand {role} (`{tensor}`) is declared {declared}, but dtype_{r} = {given}{hint}",
        r = .role.to_ascii_lowercase()
    )]
    Concrete {
        role: char,
        tensor: String,
        declared: DType,
        given: DType,
        hint: &'static str,
    },
    /// A type parameter without a default that no operand binds.
    #[error(
        "the type parameter `{param}` of `{kernel}` has no default and no operand dtype binds it"
    )]
    UnboundType { kernel: String, param: String },
}

/// Binds a GEMM problem to `kernel` (see the module docs).
pub fn bind(
    kernel: &KernelInfo,
    problem: &GemmProblem,
    names: &TensorNames,
) -> Result<Binding, BindError> {
    let p = problem;
    let ops = &p.operands;
    for (dim, value) in [('M', p.m), ('N', p.n), ('K', p.k)] {
        if !(1..=MAX_DIM).contains(&value) {
            return Err(BindError::BadDim { dim, value });
        }
    }
    let roles = [
        (
            'A',
            &names.a,
            [('M', p.m), ('K', p.k)],
            ops.dtype_a,
            "[M, K]",
        ),
        (
            'B',
            &names.b,
            [('K', p.k), ('N', p.n)],
            ops.dtype_b,
            "[K, N]",
        ),
        (
            'C',
            &names.c,
            [('M', p.m), ('N', p.n)],
            ops.dtype_c,
            "[M, N]",
        ),
    ];
    for (i, (r1, t1, ..)) in roles.iter().enumerate() {
        if let Some((r2, ..)) = roles[..i].iter().find(|(_, t2, ..)| t2 == t1) {
            return Err(BindError::SameTensor {
                first: *r2,
                second: *r1,
                tensor: t1.to_string(),
            });
        }
    }
    let tensors = kernel.tensor_names().join(", ");
    let tensors = if tensors.is_empty() {
        "none".to_string()
    } else {
        tensors
    };
    // Runtime dim name -> (GEMM dim, value, where), first binding wins.
    let mut dims: Vec<(String, char, i64, String)> = Vec::new();
    let mut types: Vec<(String, DType, char)> = Vec::new();
    for (role, tensor, axes, dtype, expected) in roles {
        let param = kernel.param(tensor).ok_or_else(|| BindError::NoTensor {
            kernel: kernel.name.clone(),
            role,
            tensor: tensor.clone(),
            tensors: tensors.clone(),
        })?;
        let ParamInfoKind::Tensor { elem, dims: shape } = &param.kind else {
            return Err(BindError::NotATensor {
                kernel: kernel.name.clone(),
                role,
                tensor: tensor.clone(),
                tensors: tensors.clone(),
            });
        };
        if shape.len() != 2 {
            return Err(BindError::Rank {
                role,
                tensor: tensor.clone(),
                rank: shape.len(),
                expected,
            });
        }
        for (axis, (d, (dim, value))) in shape.iter().zip(axes).enumerate() {
            let at = format!("{tensor} axis {axis}");
            match d {
                DimInfo::Static(fixed) if *fixed != value => {
                    return Err(BindError::Static {
                        tensor: tensor.clone(),
                        axis,
                        fixed: *fixed,
                        dim,
                        value,
                    })
                }
                DimInfo::Static(_) => {}
                DimInfo::Declared(name) => {
                    return Err(BindError::Declared {
                        tensor: tensor.clone(),
                        axis,
                        name: name.clone(),
                    })
                }
                DimInfo::Runtime(name) => match dims.iter().find(|(n, ..)| n == name) {
                    Some((_, first, first_value, first_at)) if *first_value != value => {
                        return Err(BindError::DimConflict {
                            name: name.clone(),
                            first: *first,
                            first_at: first_at.clone(),
                            first_value: *first_value,
                            second: dim,
                            second_at: at,
                            second_value: value,
                        })
                    }
                    Some(_) => {}
                    None => dims.push((name.clone(), dim, value, at)),
                },
            }
        }
        let Some(given) = dtype else { continue };
        match elem {
            Elem::Param(name) => match types.iter().find(|(n, ..)| n == name) {
                Some(&(_, t, first)) if t != given => {
                    return Err(BindError::TypeConflict {
                        param: name.clone(),
                        first,
                        first_type: t,
                        second: role,
                        second_type: given,
                    })
                }
                Some(_) => {}
                None => types.push((name.clone(), given, role)),
            },
            // `@allow_tf32` already runs an f32 operand's dots in TF32.
            Elem::Concrete(DType::F32) if given == DType::Tf32 && kernel.allow_tf32 => {}
            Elem::Concrete(declared) if *declared != given => {
                let hint = if given == DType::Tf32 && *declared == DType::F32 {
                    " (tf32 needs a type parameter for this operand, or @allow_tf32 on the kernel)"
                } else {
                    " (leave the dtype out, or use a kernel whose operand has a type parameter)"
                };
                return Err(BindError::Concrete {
                    role,
                    tensor: tensor.clone(),
                    declared: *declared,
                    given,
                    hint,
                });
            }
            Elem::Concrete(_) => {}
        }
    }
    for name in kernel.runtime_dims() {
        if !dims.iter().any(|(n, ..)| *n == name) {
            let tensor = kernel
                .params
                .iter()
                .find(|q| matches!(&q.kind, ParamInfoKind::Tensor { dims, .. } if dims.contains(&DimInfo::Runtime(name.clone()))))
                .map_or_else(String::new, |q| q.name.clone());
            return Err(BindError::UnboundDim { name, tensor });
        }
    }
    for (param, default) in &kernel.type_params {
        if default.is_none() && !types.iter().any(|(n, ..)| n == param) {
            return Err(BindError::UnboundType {
                kernel: kernel.name.clone(),
                param: param.clone(),
            });
        }
    }
    let order = kernel.runtime_dims();
    let mut out_dims: Vec<(String, i64)> = dims.into_iter().map(|(n, _, v, _)| (n, v)).collect();
    out_dims.sort_by_key(|(n, _)| order.iter().position(|o| o == n));
    let mut out_types: Vec<(String, DType)> = types.into_iter().map(|(n, t, _)| (n, t)).collect();
    out_types.sort_by_key(|(n, _)| kernel.type_params.iter().position(|(p, _)| p == n));
    let layouts = [(&names.a, ops.order_a), (&names.b, ops.order_b)]
        .into_iter()
        .filter_map(|(t, o)| o.map(|o| (t.clone(), o)))
        .collect();
    Ok(Binding {
        dims: out_dims,
        types: out_types,
        layouts,
    })
}
