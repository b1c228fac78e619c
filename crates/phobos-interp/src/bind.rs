//! Binding values to a kernel's parameters: runtime dims inferred from tensor shapes and checked,
//! `@aligned` and `@where` checked, the grid sized. Nothing here executes the kernel, so a GPU
//! runtime can bind through [`Launch`] and read back [`Launch::dims`] and [`Launch::grid`].

use crate::error::Error;
use crate::exec::{run_grid, Config};
use phobos_ir::eval::{self, Env, EvalError, Value};
use phobos_ir::{DType, Dim, DimId, HostTensor, Kernel, ParamId, ParamKind};

/// A value for one kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Tensor(HostTensor),
    /// A scalar, converted to the parameter's type (integers must be whole and in range).
    Scalar(f64),
}

impl From<HostTensor> for Arg {
    fn from(t: HostTensor) -> Arg {
        Arg::Tensor(t)
    }
}

impl From<f64> for Arg {
    fn from(x: f64) -> Arg {
        Arg::Scalar(x)
    }
}

impl Arg {
    fn kind(&self) -> &'static str {
        match self {
            Arg::Tensor(_) => "tensor",
            Arg::Scalar(_) => "scalar",
        }
    }
}

/// Values for a kernel's parameters: first by position (in signature order), then by name.
///
/// ```
/// # use phobos_interp::Args;
/// # use phobos_ir::{DType, HostTensor};
/// let x = HostTensor::zeros(DType::F32, &[4]);
/// let by_name = Args::new().set("X", x.clone()).set("alpha", 2.0);
/// let by_position = Args::new().push(2.0).push(x);
/// # let _ = (by_name, by_position);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    positional: Vec<Arg>,
    named: Vec<(String, Arg)>,
}

impl Args {
    pub fn new() -> Args {
        Args::default()
    }

    /// The value of the next parameter by position.
    pub fn push(mut self, value: impl Into<Arg>) -> Args {
        self.positional.push(value.into());
        self
    }

    /// The value of the parameter `name`.
    pub fn set(mut self, name: &str, value: impl Into<Arg>) -> Args {
        self.named.push((name.to_string(), value.into()));
        self
    }
}

/// A kernel with every parameter bound, its runtime dims inferred and checked and its grid sized:
/// ready to run.
#[derive(Clone, Debug)]
pub struct Launch<'k> {
    kernel: &'k Kernel,
    /// By parameter id: the tensor of a tensor parameter.
    tensors: Vec<Option<HostTensor>>,
    /// By parameter id: the value of a scalar parameter.
    scalars: Vec<Option<Value>>,
    dims: Vec<i64>,
    grid: [i64; 3],
}

/// What a launch gives back.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// Every tensor parameter after the run, in signature order.
    pub tensors: Vec<(String, HostTensor)>,
    /// Steps taken (see [`Config::step_budget`]).
    pub steps: u64,
}

impl Output {
    /// The tensor parameter `name` after the run.
    pub fn get(&self, name: &str) -> Option<&HostTensor> {
        self.tensors.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }
}

impl<'k> Launch<'k> {
    /// Binds `args` to `kernel`'s parameters and checks them: every parameter gets exactly one
    /// value of its kind; tensors have the parameter's element type and rank, static extents
    /// match, every axis naming one runtime dim agrees, `@aligned` dims divide, `@where`
    /// constraints hold. Then sizes the grid.
    pub fn new(kernel: &'k Kernel, args: Args) -> Result<Launch<'k>, Error> {
        let values = match_args(kernel, args)?;
        let mut tensors = vec![None; kernel.params.len()];
        let mut scalars = vec![None; kernel.params.len()];
        for (id, (param, value)) in kernel.params.iter().zip(values).enumerate() {
            match (&param.kind, value) {
                (ParamKind::Tensor { dtype, dims, .. }, Arg::Tensor(t)) => {
                    tensors[id] = Some(bind_tensor(&param.name, *dtype, dims.len(), t)?);
                }
                (ParamKind::Scalar { dtype }, Arg::Scalar(x)) => {
                    scalars[id] = Some(bind_scalar(&param.name, *dtype, x)?);
                }
                (kind, value) => {
                    return Err(Error::WrongKind {
                        name: param.name.clone(),
                        expected: match kind {
                            ParamKind::Tensor { .. } => "tensor",
                            ParamKind::Scalar { .. } => "scalar",
                        },
                        found: value.kind(),
                    })
                }
            }
        }
        let dims = infer_dims(kernel, &tensors)?;
        let mut launch = Launch {
            kernel,
            tensors,
            scalars,
            dims,
            grid: [1; 3],
        };
        launch.check_constraints()?;
        Ok(launch)
    }

    fn check_constraints(&mut self) -> Result<(), Error> {
        let k = self.kernel;
        for &(d, multiple) in &k.aligned {
            let (Some(&extent), Some(dim)) = (self.dims.get(d), k.dims.get(d)) else {
                return Err(Error::internal(format!("@aligned names dim #{d}"), k.span));
            };
            if multiple > 0 && extent % multiple != 0 {
                return Err(Error::Misaligned {
                    dim: dim.name.clone(),
                    extent,
                    multiple,
                });
            }
        }
        for w in &k.wheres {
            let holds = eval::eval_bool(w, self).map_err(|e| Error::from_eval(e, w.span))?;
            if !holds {
                return Err(Error::WhereViolated {
                    constraint: eval::display(w, k),
                    span: w.span,
                });
            }
        }
        for (axis, e) in k.grid.iter().enumerate() {
            let value = eval::eval_i64(e, self).map_err(|err| Error::from_eval(err, e.span))?;
            if value < 0 {
                return Err(Error::BadGrid {
                    axis: ['x', 'y', 'z'][axis],
                    value,
                    span: e.span,
                });
            }
            self.grid[axis] = value;
        }
        Ok(())
    }

    /// The bound tensors by parameter id (`None` for scalars).
    pub(crate) fn bound_tensors(&self) -> &[Option<HostTensor>] {
        &self.tensors
    }

    /// Runtime dim values by dim id.
    pub(crate) fn dim_values(&self) -> &[i64] {
        &self.dims
    }

    /// Scalar values by parameter id (`None` for tensors).
    pub(crate) fn scalar_values(&self) -> &[Option<Value>] {
        &self.scalars
    }

    /// The kernel this launch runs.
    pub fn kernel(&self) -> &'k Kernel {
        self.kernel
    }

    /// Runtime dims as inferred from the tensors, in the kernel's order.
    pub fn dims(&self) -> Vec<(String, i64)> {
        self.kernel
            .dims
            .iter()
            .zip(&self.dims)
            .map(|(d, &v)| (d.name.clone(), v))
            .collect()
    }

    /// Blocks per grid axis (x, y, z); zero blocks along an axis runs nothing.
    pub fn grid(&self) -> [i64; 3] {
        self.grid
    }

    /// The tensor bound to parameter `name`, as it is before the run.
    pub fn tensor(&self, name: &str) -> Option<&HostTensor> {
        let id = self.kernel.params.iter().position(|p| p.name == name)?;
        self.tensors[id].as_ref()
    }

    /// The value bound to scalar parameter `name`.
    pub fn scalar(&self, name: &str) -> Option<f64> {
        let id = self.kernel.params.iter().position(|p| p.name == name)?;
        self.scalars[id].map(Value::as_f64)
    }

    /// Runs the kernel on copies of the bound tensors and gives them back.
    pub fn run(&self, config: &Config) -> Result<Output, Error> {
        let mut tensors = self.tensors.clone();
        let steps = run_grid(
            self.kernel,
            &self.dims,
            &self.scalars,
            &mut tensors,
            self.grid,
            config,
        )?;
        let tensors = self
            .kernel
            .params
            .iter()
            .zip(tensors)
            .filter_map(|(p, t)| Some((p.name.clone(), t?)))
            .collect();
        Ok(Output { tensors, steps })
    }
}

impl Env for Launch<'_> {
    fn dim(&self, id: DimId) -> Result<i64, EvalError> {
        self.dims
            .get(id)
            .copied()
            .ok_or_else(|| EvalError::UnboundDim(format!("#{id}")))
    }

    fn param(&self, id: ParamId) -> Result<Value, EvalError> {
        self.scalars.get(id).copied().flatten().ok_or_else(|| {
            EvalError::UnboundParam(
                self.kernel
                    .params
                    .get(id)
                    .map_or(String::new(), |p| p.name.clone()),
            )
        })
    }
}

/// One value per parameter, in signature order.
fn match_args(kernel: &Kernel, args: Args) -> Result<Vec<Arg>, Error> {
    let params = &kernel.params;
    if args.positional.len() > params.len() {
        return Err(Error::TooManyArgs {
            kernel: kernel.name.clone(),
            params: params.len(),
            given: args.positional.len(),
        });
    }
    let mut slots: Vec<Option<Arg>> = vec![None; params.len()];
    for (slot, v) in slots.iter_mut().zip(args.positional) {
        *slot = Some(v);
    }
    for (name, v) in args.named {
        let Some(id) = params.iter().position(|p| p.name == name) else {
            return Err(Error::UnknownParam {
                name,
                kernel: kernel.name.clone(),
                params: params
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        if slots[id].is_some() {
            return Err(Error::DuplicateArg { name });
        }
        slots[id] = Some(v);
    }
    params
        .iter()
        .zip(slots)
        .map(|(p, v)| {
            v.ok_or_else(|| Error::MissingArg {
                name: p.name.clone(),
                kind: match p.kind {
                    ParamKind::Tensor { .. } => "tensor",
                    ParamKind::Scalar { .. } => "scalar",
                },
            })
        })
        .collect()
}

fn bind_tensor(
    name: &str,
    dtype: DType,
    rank: usize,
    mut t: HostTensor,
) -> Result<HostTensor, Error> {
    // tf32 is stored as f32: either label is the same data.
    let same = t.dtype == dtype || (t.dtype.arith() == DType::F32 && dtype.arith() == DType::F32);
    if !same {
        return Err(Error::WrongDType {
            name: name.to_string(),
            expected: dtype,
            found: t.dtype,
        });
    }
    if t.shape.len() != rank || t.data.len() != t.shape.iter().product::<usize>() {
        return Err(Error::WrongRank {
            name: name.to_string(),
            expected: rank,
            found: t.shape.clone(),
        });
    }
    t.dtype = dtype;
    // Holds the invariant that every element is a value of its type, whoever built the tensor.
    for x in &mut t.data {
        *x = dtype.round(*x);
    }
    Ok(t)
}

fn bind_scalar(name: &str, dtype: DType, x: f64) -> Result<Value, Error> {
    let bad = || Error::BadScalar {
        name: name.to_string(),
        dtype,
        value: x,
    };
    if dtype.is_int() || dtype == DType::Bool {
        if x.fract() != 0.0 || !x.is_finite() || dtype.round(x) != x {
            return Err(bad());
        }
        return Ok(if dtype == DType::Bool {
            Value::Bool(x != 0.0)
        } else {
            Value::Int(x as i64)
        });
    }
    Ok(Value::Float(dtype.round(x)))
}

/// Reads every runtime dim from the tensors and checks all extents.
fn infer_dims(kernel: &Kernel, tensors: &[Option<HostTensor>]) -> Result<Vec<i64>, Error> {
    let mut dims: Vec<Option<(i64, String)>> = vec![None; kernel.dims.len()];
    for (id, p) in kernel.params.iter().enumerate() {
        let (ParamKind::Tensor { dims: pdims, .. }, Some(t)) = (&p.kind, &tensors[id]) else {
            continue;
        };
        for (axis, (dim, &extent)) in pdims.iter().zip(&t.shape).enumerate() {
            let extent = extent as i64;
            match *dim {
                Dim::Static(n) if n != extent => {
                    return Err(Error::StaticExtent {
                        name: p.name.clone(),
                        axis,
                        expected: n,
                        found: extent as usize,
                    })
                }
                Dim::Static(_) => {}
                Dim::Dyn(d) if d >= dims.len() => {
                    return Err(Error::internal(
                        format!("`{}` names runtime dim #{d}", p.name),
                        p.span,
                    ))
                }
                Dim::Dyn(d) => {
                    let here = format!("`{}` (axis {axis})", p.name);
                    match &dims[d] {
                        Some((first, there)) if *first != extent => {
                            return Err(Error::DimMismatch {
                                dim: kernel.dims[d].name.clone(),
                                first: there.clone(),
                                first_extent: *first,
                                second: here,
                                second_extent: extent,
                            })
                        }
                        Some(_) => {}
                        None => {
                            if extent > i32::MAX as i64 {
                                return Err(Error::DimOutOfRange {
                                    dim: kernel.dims[d].name.clone(),
                                    extent,
                                });
                            }
                            dims[d] = Some((extent, here));
                        }
                    }
                }
            }
        }
    }
    let missing: Vec<String> = kernel
        .dims
        .iter()
        .zip(&dims)
        .filter(|(_, v)| v.is_none())
        .map(|(d, _)| d.name.clone())
        .collect();
    if !missing.is_empty() {
        // A dim no tensor names cannot be inferred (the checker reads every dim from a tensor).
        return Err(Error::MissingDims { names: missing });
    }
    Ok(dims.into_iter().map(|d| d.map_or(0, |(v, _)| v)).collect())
}
