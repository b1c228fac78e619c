//! The launch ABI shared with the code generator, and the checks that bind a problem to it.
//!
//! A kernel at one point is compiled to one `extern "C" __global__` function named after the
//! kernel ([`phobos_ir::Kernel::name`]). Its C parameters are, in order:
//!
//! 1. one per [`phobos_ir::Param`], in signature order:
//!    - a tensor is a device pointer to its element type, `T*` (`const T*` is the same ABI);
//!    - a scalar is its value in its C type: `bool` as `bool`, `i8` `signed char`, `u8`
//!      `unsigned char`, `i32` `int`, `u32` `unsigned`, `i64` `long long`, `f16` `__half`
//!      (passed as its 16-bit pattern; `unsigned short` is the same ABI), `bf16`
//!      `__nv_bfloat16` likewise, `f32`/`tf32` `float`, `f64` `double`, `f8e4m3`/`f8e5m2`
//!      `__nv_fp8_e4m3`/`__nv_fp8_e5m2` (their 8-bit pattern; `unsigned char` is the same ABI);
//! 2. then one `int` per runtime dim, in [`phobos_ir::Kernel::dims`] order;
//! 3. then one `const __grid_constant__` 128-byte tensor map per entry of the generated code's
//!    launch facts ([`crate::launch_plan::LaunchFacts`]), appended by [`crate::Gpu::prepare_launch`],
//!    which also appends the other parameters the facts name (a persistent kernel's tile grid,
//!    a split-K workspace's `float*`).
//!
//! The grid is [`phobos_ir::Kernel::grid`] evaluated with the dims and scalar arguments
//! ([`phobos_ir::eval`]); the block is `(launch.threads, 1, 1)`; dynamic shared memory is given
//! by the caller. A tensor's memory holds its elements in its [`phobos_ir::MemOrder`]
//! (row-major, or reversed dim order for column-major).
//!
//! [`bind_args`] checks a problem against the kernel (counts, kinds, element types, ranks,
//! memory orders, static extents, that every axis naming one runtime dim agrees, `@aligned`
//! divisibility, `@where` constraints, the grid) and packs the arguments; every mismatch is a
//! [`BindError`] naming the parameters involved.

use crate::args::{check_scalar, KernelArgs};
use phobos_ir::eval::{self, Env, EvalError, Value};
use phobos_ir::{DType, Dim, DimId, Kernel, MemOrder, ParamId, ParamKind};
use thiserror::Error;

/// A tensor argument as the binder sees it: where it lives and what it holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TensorRef<'a> {
    /// Device address of element 0.
    pub ptr: u64,
    pub dtype: DType,
    /// Logical extents.
    pub shape: &'a [usize],
    pub order: MemOrder,
}

/// One launch argument, in parameter order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg<'a> {
    Tensor(TensorRef<'a>),
    /// A scalar's value (converted to the parameter's type; integers must be exact).
    Scalar(f64),
}

/// Arguments bound to a kernel: ready to launch.
#[derive(Clone, Debug, PartialEq)]
pub struct BoundArgs {
    /// The kernel (and entry function) name.
    pub kernel: String,
    /// Blocks per grid axis.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: u32,
    /// Each runtime dim's name and value, in `Kernel::dims` order.
    pub dims: Vec<(String, i64)>,
    /// The packed C arguments (parameters, then dims).
    pub args: KernelArgs,
}

/// Why a problem cannot be launched with a kernel.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum BindError {
    #[error("kernel `{kernel}` takes {expected} arguments, got {got}")]
    ArgCount {
        kernel: String,
        expected: usize,
        got: usize,
    },
    #[error("argument `{param}` must be a {expected}")]
    Kind {
        param: String,
        expected: &'static str,
    },
    #[error("tensor `{param}` must hold {expected}, got {got}")]
    DType {
        param: String,
        expected: DType,
        got: DType,
    },
    #[error("tensor `{param}` must have rank {expected}, got shape {shape:?}")]
    Rank {
        param: String,
        expected: usize,
        shape: Vec<usize>,
    },
    #[error("tensor `{param}` must be stored {expected:?}, got {got:?}")]
    Order {
        param: String,
        expected: MemOrder,
        got: MemOrder,
    },
    #[error("tensor `{param}` axis {axis} must have extent {expected}, got {got}")]
    StaticExtent {
        param: String,
        axis: usize,
        expected: i64,
        got: usize,
    },
    #[error(
        "runtime dim `{dim}` disagrees across tensors: {}",
        render_extents(extents)
    )]
    DimDisagree {
        dim: String,
        /// Every (tensor, axis, extent) that names the dim.
        extents: Vec<(String, usize, usize)>,
    },
    #[error("runtime dim `{dim}` = {value} does not fit the `int` the kernel takes")]
    DimTooLarge { dim: String, value: usize },
    #[error("runtime dim `{dim}` = {value} is not a multiple of {multiple} (@aligned)")]
    Unaligned {
        dim: String,
        value: i64,
        multiple: i64,
    },
    #[error("scalar argument `{param}` is {value}, not a value of type {dtype}")]
    ScalarValue {
        param: String,
        dtype: DType,
        value: f64,
    },
    #[error("tensor `{param}` is at address {ptr:#x}, not aligned to its {align}-byte elements")]
    Pointer {
        param: String,
        ptr: u64,
        align: usize,
    },
    #[error("the problem violates @where({constraint})")]
    Where { constraint: String },
    #[error("grid.{axis} = {value}: {why}")]
    Grid {
        axis: char,
        value: i64,
        why: &'static str,
    },
    #[error("cannot evaluate {what}: {error}")]
    Eval { what: String, error: EvalError },
}

fn render_extents(extents: &[(String, usize, usize)]) -> String {
    extents
        .iter()
        .map(|(t, axis, n)| format!("`{t}` axis {axis} = {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The environment the grid and `@where` expressions evaluate in.
struct Bound<'a> {
    kernel: &'a Kernel,
    dims: &'a [i64],
    args: &'a [Arg<'a>],
}

impl Env for Bound<'_> {
    fn dim(&self, id: DimId) -> Result<i64, EvalError> {
        self.dims
            .get(id)
            .copied()
            .ok_or_else(|| EvalError::UnboundDim(format!("#{id}")))
    }

    fn param(&self, id: ParamId) -> Result<Value, EvalError> {
        let unbound = || {
            EvalError::UnboundParam(
                self.kernel
                    .params
                    .get(id)
                    .map(|p| p.name.clone())
                    .unwrap_or_default(),
            )
        };
        match (
            self.kernel.params.get(id).map(|p| &p.kind),
            self.args.get(id),
        ) {
            (Some(ParamKind::Scalar { dtype }), Some(Arg::Scalar(v))) => {
                Ok(Value::Float(*v).cast(*dtype))
            }
            _ => Err(unbound()),
        }
    }
}

/// Checks `args` against `kernel` and packs them with the runtime dims; see the module doc.
pub fn bind_args(kernel: &Kernel, args: &[Arg<'_>]) -> Result<BoundArgs, BindError> {
    if args.len() != kernel.params.len() {
        return Err(BindError::ArgCount {
            kernel: kernel.name.clone(),
            expected: kernel.params.len(),
            got: args.len(),
        });
    }
    // Per-parameter checks.
    for (param, arg) in kernel.params.iter().zip(args) {
        let name = &param.name;
        match (&param.kind, arg) {
            (ParamKind::Tensor { dtype, dims, order }, Arg::Tensor(t)) => {
                if t.dtype.arith() != dtype.arith() {
                    return Err(BindError::DType {
                        param: name.clone(),
                        expected: *dtype,
                        got: t.dtype,
                    });
                }
                if t.shape.len() != dims.len() {
                    return Err(BindError::Rank {
                        param: name.clone(),
                        expected: dims.len(),
                        shape: t.shape.to_vec(),
                    });
                }
                // A rank-1 tensor is the same in both orders.
                if t.order != *order && t.shape.len() > 1 {
                    return Err(BindError::Order {
                        param: name.clone(),
                        expected: *order,
                        got: t.order,
                    });
                }
                for (axis, (d, &n)) in dims.iter().zip(t.shape).enumerate() {
                    if let Dim::Static(s) = d {
                        if *s != n as i64 {
                            return Err(BindError::StaticExtent {
                                param: name.clone(),
                                axis,
                                expected: *s,
                                got: n,
                            });
                        }
                    }
                }
                let align = t.dtype.size_bytes();
                if t.ptr % align as u64 != 0 {
                    return Err(BindError::Pointer {
                        param: name.clone(),
                        ptr: t.ptr,
                        align,
                    });
                }
            }
            (ParamKind::Scalar { dtype }, Arg::Scalar(v)) => check_scalar(name, *dtype, *v)?,
            (ParamKind::Tensor { .. }, Arg::Scalar(_)) => {
                return Err(BindError::Kind {
                    param: name.clone(),
                    expected: "tensor",
                })
            }
            (ParamKind::Scalar { .. }, Arg::Tensor(_)) => {
                return Err(BindError::Kind {
                    param: name.clone(),
                    expected: "scalar",
                })
            }
        }
    }
    let dims = runtime_dims(kernel, args)?;
    for &(id, multiple) in &kernel.aligned {
        let value = dims[id];
        if multiple > 0 && value % multiple != 0 {
            return Err(BindError::Unaligned {
                dim: kernel.dims[id].name.clone(),
                value,
                multiple,
            });
        }
    }
    let env = Bound {
        kernel,
        dims: &dims,
        args,
    };
    for w in &kernel.wheres {
        let constraint = eval::display(w, kernel);
        let holds = eval::eval_bool(w, &env).map_err(|error| BindError::Eval {
            what: format!("@where({constraint})"),
            error,
        })?;
        if !holds {
            return Err(BindError::Where { constraint });
        }
    }
    let grid = eval_grid(kernel, &env)?;
    let mut packed = KernelArgs::new();
    for (param, arg) in kernel.params.iter().zip(args) {
        match (&param.kind, arg) {
            (_, Arg::Tensor(t)) => packed.ptr(t.ptr),
            (ParamKind::Scalar { dtype }, Arg::Scalar(v)) => packed.scalar(*dtype, *v),
            (ParamKind::Tensor { .. }, Arg::Scalar(_)) => unreachable!("checked above"),
        };
    }
    for &d in &dims {
        packed.i32(d as i32);
    }
    Ok(BoundArgs {
        kernel: kernel.name.clone(),
        grid,
        block: kernel.launch.threads,
        dims: kernel
            .dims
            .iter()
            .map(|d| d.name.clone())
            .zip(dims.iter().copied())
            .collect(),
        args: packed,
    })
}

/// Each runtime dim's value, read from its source axis, after checking that every axis naming
/// it agrees and that it fits an `int`.
fn runtime_dims(kernel: &Kernel, args: &[Arg<'_>]) -> Result<Vec<i64>, BindError> {
    let mut values = Vec::with_capacity(kernel.dims.len());
    for (id, dv) in kernel.dims.iter().enumerate() {
        let mut extents = Vec::new();
        for (p, (param, arg)) in kernel.params.iter().zip(args).enumerate() {
            if let (ParamKind::Tensor { dims, .. }, Arg::Tensor(t)) = (&param.kind, arg) {
                for (axis, d) in dims.iter().enumerate() {
                    if *d == Dim::Dyn(id) {
                        let n = t.shape[axis];
                        // The source axis first: it defines the value.
                        if (p, axis) == dv.source {
                            extents.insert(0, (param.name.clone(), axis, n));
                        } else {
                            extents.push((param.name.clone(), axis, n));
                        }
                    }
                }
            }
        }
        let Some(&(_, _, value)) = extents.first() else {
            // A dim no tensor names cannot be bound; the checker never produces one.
            return Err(BindError::Eval {
                what: format!("runtime dim `{}`", dv.name),
                error: EvalError::UnboundDim(dv.name.clone()),
            });
        };
        if extents.iter().any(|&(_, _, n)| n != value) {
            return Err(BindError::DimDisagree {
                dim: dv.name.clone(),
                extents,
            });
        }
        if value > i32::MAX as usize {
            return Err(BindError::DimTooLarge {
                dim: dv.name.clone(),
                value,
            });
        }
        values.push(value as i64);
    }
    Ok(values)
}

/// The grid limits of every GPU since compute capability 3.0.
const GRID_MAX: [i64; 3] = [i32::MAX as i64, 65535, 65535];

fn eval_grid(kernel: &Kernel, env: &dyn Env) -> Result<[u32; 3], BindError> {
    let mut grid = [1u32; 3];
    for (i, axis) in ['x', 'y', 'z'].into_iter().enumerate() {
        let expr = &kernel.grid[i];
        let value = eval::eval_i64(expr, env).map_err(|error| BindError::Eval {
            what: format!("grid.{axis} = {}", eval::display(expr, kernel)),
            error,
        })?;
        if value < 1 {
            return Err(BindError::Grid {
                axis,
                value,
                why: "a grid needs at least one block per axis (is the problem empty?)",
            });
        }
        if value > GRID_MAX[i] {
            return Err(BindError::Grid {
                axis,
                value,
                why: "over the device's grid limit (2^31-1 for x, 65535 for y and z)",
            });
        }
        grid[i] = value as u32;
    }
    Ok(grid)
}

#[cfg(test)]
#[path = "abi_tests.rs"]
mod tests;
