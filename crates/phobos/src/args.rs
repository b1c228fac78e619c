//! The arguments of a launch, and the problem they describe.
//!
//! A tensor comes from the host ([`Arg::Host`]: copied to the GPU before the launch and back
//! after it) or is a GPU buffer the caller owns ([`Arg::Device`]: used in place, nothing is
//! copied). The interpreter runs on the host: its "device memory" is host memory, so it takes
//! host tensors (run in place) and refuses device buffers with an error that says so.
//!
//! Every argument is checked against the kernel before anything runs: count, kind, rank,
//! element type, that a tensor holds as many elements as its shape says, memory order (for
//! device buffers), and that the extents agree with the signature (a dim shared by two tensors
//! has one extent). A mismatch is an [`Error::Argument`] naming the argument, never a panic.

use crate::frontend::CheckFrontend;
use crate::runtime::Error;
use phobos_check::{Elem, ParamInfoKind};
use phobos_gpu::DeviceTensor;
use phobos_ir::{DType, Dim, HostTensor, MemOrder, ParamKind, Point};
use phobos_tune::{ArgValue, Frontend, Problem};

/// One argument of [`crate::Kernel::launch_args`], in parameter order.
#[derive(Debug)]
pub enum Arg<'a> {
    /// A host tensor: its values go in, the kernel's results come back into it.
    Host(&'a mut HostTensor),
    /// A tensor in GPU memory the caller owns (GPU back end only): the kernel reads and writes
    /// it in place. Work the caller queued on it is waited for before the launch.
    Device(&'a DeviceTensor),
    /// A scalar parameter's value (`1.0`/`0.0` for bools).
    Scalar(f64),
}

impl<'a> Arg<'a> {
    /// The arguments of [`crate::Kernel::launch`] as host arguments.
    pub fn from_values(values: &'a mut [ArgValue]) -> Vec<Arg<'a>> {
        values
            .iter_mut()
            .map(|v| match v {
                ArgValue::Tensor(t) => Arg::Host(t),
                ArgValue::Scalar(s) => Arg::Scalar(*s),
            })
            .collect()
    }

    /// Element type and shape of a tensor argument.
    fn tensor(&self) -> Option<(DType, &[usize])> {
        match self {
            Arg::Host(t) => Some((t.dtype, t.shape.as_slice())),
            Arg::Device(t) => Some((t.dtype, t.shape.as_slice())),
            Arg::Scalar(_) => None,
        }
    }
}

fn arg_error(index: usize, message: String) -> Error {
    Error::Argument { index, message }
}

/// Device buffers on a back end that has none: the interpreter runs on host memory.
pub(crate) fn refuse_device_buffers(args: &[Arg]) -> Result<(), Error> {
    match args.iter().position(|a| matches!(a, Arg::Device(_))) {
        Some(index) => Err(arg_error(
            index,
            "a GPU buffer, but the interpreter runs on host memory: pass the tensor as \
             `Arg::Host` (or launch on `Backend::cuda`)"
                .into(),
        )),
        None => Ok(()),
    }
}

/// Device buffers on another GPU than the one the kernel launches on.
pub(crate) fn check_device_ordinal(args: &[Arg], ordinal: u32) -> Result<(), Error> {
    for (index, a) in args.iter().enumerate() {
        if let Arg::Device(t) = a {
            let on = t.buf.gpu().info().ordinal;
            if on != ordinal as usize {
                return Err(arg_error(
                    index,
                    format!("a buffer on GPU {on}, but the runtime launches on GPU {ordinal}"),
                ));
            }
        }
    }
    Ok(())
}

/// The problem of a launch, after checking every argument against the kernel: element-type
/// parameters from the tensors' element types (those that differ from their defaults, as
/// phobos-kbench keys them), runtime dims from the tensors' shapes, scalars by name.
pub(crate) fn problem_of(
    frontend: &CheckFrontend,
    default: &Point,
    args: &[Arg],
) -> Result<Problem, Error> {
    let info = frontend.info();
    let mut types: Vec<(String, DType)> = Vec::new();
    for (p, a) in info.params.iter().zip(args) {
        if let (
            ParamInfoKind::Tensor {
                elem: Elem::Param(name),
                ..
            },
            Some((dtype, _)),
        ) = (&p.kind, a.tensor())
        {
            let declared = info.type_params.iter().find(|(n, _)| n == name);
            if !types.iter().any(|(n, _)| n == name)
                && declared.is_some_and(|(_, d)| *d != Some(dtype))
            {
                types.push((name.clone(), dtype));
            }
        }
    }
    let typed = Problem {
        types,
        ..Problem::default()
    };
    let k = frontend
        .instantiate(default, &typed)
        .map_err(|f| Error::Kernel(f.log))?;
    if args.len() != k.params.len() {
        return Err(arg_error(
            args.len().min(k.params.len()),
            format!(
                "`{}` takes {} arguments, {} given",
                k.name,
                k.params.len(),
                args.len()
            ),
        ));
    }
    let mut problem = typed;
    let mut extents: Vec<Option<(usize, usize)>> = vec![None; k.dims.len()];
    for (i, (p, a)) in k.params.iter().zip(args).enumerate() {
        match (&p.kind, a) {
            (ParamKind::Scalar { .. }, Arg::Scalar(v)) => {
                problem.args.push((p.name.clone(), *v));
            }
            (ParamKind::Tensor { dtype, dims, order }, a) if a.tensor().is_some() => {
                let (got, shape) = a.tensor().expect("a tensor");
                let name = &p.name;
                if shape.len() != dims.len() {
                    return Err(arg_error(
                        i,
                        format!(
                            "`{name}` has {} dims, but the tensor given has shape {shape:?}",
                            dims.len()
                        ),
                    ));
                }
                if got != *dtype {
                    return Err(arg_error(
                        i,
                        format!("`{name}` holds {dtype}, but the tensor given holds {got}"),
                    ));
                }
                check_storage(i, name, a, *order)?;
                for (axis, (d, &n)) in dims.iter().zip(shape).enumerate() {
                    match *d {
                        Dim::Static(s) if s != n as i64 => {
                            return Err(arg_error(
                                i,
                                format!("`{name}` has {s} along axis {axis}, the tensor {n}"),
                            ))
                        }
                        Dim::Static(_) => {}
                        Dim::Dyn(id) => match extents[id] {
                            Some((first, m)) if m != n => {
                                return Err(arg_error(
                                    i,
                                    format!(
                                        "`{name}` has {n} along axis {axis}, but {} is {m} \
                                         (from argument {first})",
                                        k.dims[id].name
                                    ),
                                ))
                            }
                            Some(_) => {}
                            None => extents[id] = Some((i, n)),
                        },
                    }
                }
            }
            (kind, _) => {
                return Err(arg_error(
                    i,
                    format!("`{}` expects {}", p.name, expected(kind)),
                ))
            }
        }
    }
    for (d, e) in k.dims.iter().zip(&extents) {
        if let Some((_, n)) = e {
            problem.dims.push((d.name.clone(), *n as i64));
        }
    }
    Ok(problem)
}

/// A host tensor holds the values its shape says; a device buffer holds its bytes, in the
/// parameter's memory order.
fn check_storage(index: usize, name: &str, arg: &Arg, order: MemOrder) -> Result<(), Error> {
    match arg {
        Arg::Host(t) => {
            let want = t.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
            if want != Some(t.data.len()) {
                return Err(arg_error(
                    index,
                    format!(
                        "the tensor for `{name}` has shape {:?} but holds {} values",
                        t.shape,
                        t.data.len()
                    ),
                ));
            }
        }
        Arg::Device(t) => {
            let bytes = t
                .shape
                .iter()
                .try_fold(t.dtype.size_bytes(), |n, &d| n.checked_mul(d));
            if bytes.is_none_or(|b| b > t.buf.len()) {
                return Err(arg_error(
                    index,
                    format!(
                        "the GPU buffer for `{name}` holds {} bytes, too few for a {} tensor of \
                         shape {:?}",
                        t.buf.len(),
                        t.dtype,
                        t.shape
                    ),
                ));
            }
            if t.order != order {
                return Err(arg_error(
                    index,
                    format!(
                        "`{name}` is {} in memory, but the GPU buffer given is {}",
                        order_name(order),
                        order_name(t.order)
                    ),
                ));
            }
        }
        Arg::Scalar(_) => {}
    }
    Ok(())
}

fn order_name(o: MemOrder) -> &'static str {
    match o {
        MemOrder::RowMajor => "row-major",
        MemOrder::ColMajor => "column-major",
    }
}

fn expected(kind: &ParamKind) -> String {
    match kind {
        ParamKind::Tensor { dtype, dims, .. } => {
            format!("a tensor of {dtype} with {} dims", dims.len())
        }
        ParamKind::Scalar { dtype } => format!("a scalar of {dtype}"),
    }
}
