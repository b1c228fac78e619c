//! `phobos run`: check a kernel at one variant, bind its tensors (from `.npy` files or seeded
//! random) and scalars, run it on a back end, print one summary line per output tensor on stdout
//! and write every tensor to `--output-dir`.
//!
//! The back end is a [`Backend`]: the GPU (the default; CUDA C++ compiled with NVRTC for the
//! device) or the CPU reference interpreter (`--interpret`). `--compare` runs both on the same
//! inputs and reports, per stored tensor, the relative error of the GPU's result against the
//! interpreter's and the tolerance of its element type; it fails when any is over. The
//! interpreter runs the blocks of a kernel whose blocks are independent in a random order
//! within a time budget (corners and edges first): a problem too large to interpret whole is
//! compared on the elements of the blocks that ran, and a line says which.

use super::Failure;
use crate::args::RunArgs;
use crate::render;
use phobos_interp::host::{random_tensor, shapes_for, stored_tensors, tensor_seed};
use phobos_interp::{Args, Config, Launch};
use phobos_ir::host::check_host_memory;
use phobos_ir::npy;
use phobos_ir::{Dim, HostTensor, Kernel, ParamKind};
use phobos_syntax::{Diagnostic, Severity, SourceFile};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod compare;
mod gpu;
#[cfg(test)]
mod recipe_tests;

/// Where a kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The CPU reference interpreter.
    Interpreter,
    /// The GPU (CUDA through NVRTC).
    Gpu,
}

/// Runs `phobos run`; exit 0 on success, 1 on any error (reported on stderr).
pub fn run(args: &RunArgs) -> ExitCode {
    super::run_on_file(&args.kernel.file, |file| run_file(args, file))
}

/// The back end whose results `phobos run` prints and writes (`--compare` runs the interpreter
/// as well).
fn backend(args: &RunArgs) -> Backend {
    if args.interpret {
        Backend::Interpreter
    } else {
        Backend::Gpu
    }
}

/// The kernel's launch on the problem the flags describe: dims, tensors (from `--input`, else
/// seeded random) and scalars.
fn bind<'k>(args: &RunArgs, kernel: &'k Kernel) -> Result<Launch<'k>, Failure> {
    let dims = parse_dims(args.dims.as_deref())?;
    let inputs = read_inputs(kernel, &args.inputs)?;
    let scalars = parse_scalars(kernel, &args.args)?;

    // Dims the inputs fix need not be repeated in --dims.
    let mut all_dims = dims.clone();
    for (name, t) in &inputs {
        for (dim, extent) in tensor_dims(kernel, name, t) {
            if !all_dims.iter().any(|(n, _)| *n == dim) {
                all_dims.push((dim, extent));
            }
        }
    }
    let shapes = shapes_for(kernel, &all_dims).map_err(|e| {
        let hint = match e {
            phobos_interp::Error::MissingDims { ref names } => format!(
                "give them with --dims, e.g. --dims {}",
                names
                    .iter()
                    .map(|n| format!("{n}=128"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            _ => "check --dims".to_string(),
        };
        Failure::hint(e.to_string(), hint)
    })?;
    check_host_memory(shapes.iter().map(|(_, s)| s.as_slice()))
        .map_err(|e| Failure::hint(e.to_string(), "make the dims smaller"))?;

    let mut bound = Args::new();
    for (name, shape) in &shapes {
        let tensor = match inputs.iter().find(|(n, _)| n == name) {
            Some((_, t)) => t.clone(),
            None => random_tensor(
                tensor_dtype(kernel, name),
                shape,
                tensor_seed(args.seed, name),
            ),
        };
        bound = bound.set(name, tensor);
    }
    for (name, value) in scalars {
        bound = bound.set(&name, value);
    }
    Launch::new(kernel, bound).map_err(|e| launch_failure(kernel, e))
}

fn run_file(args: &RunArgs, file: &SourceFile) -> Result<(), Failure> {
    let backend = backend(args);
    let kernel = instantiate(args, file)?;
    let launch = bind(args, &kernel)?;
    // The GPU runs first: without one, --compare stops before the interpreter's work.
    let tensors = execute(backend, &launch, file)?;
    let reference = if args.compare {
        let r = compare::reference(&launch, &interp_config(), args.seed)
            .map_err(|e| launch_failure(launch.kernel(), e))?;
        Some(r)
    } else {
        None
    };

    let outputs: Vec<String> = stored_tensors(&kernel)
        .into_iter()
        .map(|id| kernel.params[id].name.clone())
        .collect();
    for name in &outputs {
        if let Some((_, t)) = tensors.iter().find(|(n, _)| n == name) {
            outln!("{}", summary(name, t));
        }
    }
    if let Some(dir) = &args.output_dir {
        write_outputs(dir, &tensors)?;
    }
    if let Some(reference) = reference {
        let widen = compare::reduced_precision_dot(&kernel);
        let masks = reference.sample.as_ref().map(|(m, _)| m.as_slice());
        let results = compare::compare(&outputs, &tensors, &reference.tensors, masks, widen);
        if let Some((masks, coverage)) = &reference.sample {
            let elements = masks
                .iter()
                .filter(|(n, _)| outputs.contains(n))
                .map(|(_, m)| m.count())
                .sum();
            outln!("{}", compare::sample_line(coverage, elements));
        }
        for c in &results {
            outln!("{}", c.line());
        }
        let failed: Vec<&str> = results
            .iter()
            .filter(|c| !c.pass())
            .map(|c| c.name.as_str())
            .collect();
        if !failed.is_empty() {
            return Err(Failure::hint(
                format!(
                    "the GPU's {} of `{}` differ from the interpreter's beyond tolerance",
                    failed.join(", "),
                    kernel.name
                ),
                "see the generated code with `phobos emit` (same flags); the interpreter \
                 defines the semantics",
            ));
        }
    }
    Ok(())
}

/// Loads the file, picks the kernel and checks it at the variant the flags describe.
fn instantiate(args: &RunArgs, file: &SourceFile) -> Result<Kernel, Failure> {
    if let Some((message, hint)) = super::check::cuda_source_refused(file, "run") {
        return Err(Failure::hint(message, hint));
    }
    let module = phobos_check::load(file.clone()).map_err(Failure::Diagnostics)?;
    let info = module
        .kernel(args.kernel.kernel.as_deref())
        .map_err(Failure::msg)?;
    let variant = info
        .variant(
            args.kernel.autotune.as_deref(),
            args.kernel.types.as_deref(),
            args.kernel.layout.as_deref(),
        )
        .map_err(|e| Failure::msg(e.to_string()))?;
    let (kernel, diags) = phobos_check::instantiate_with_warnings(&module, info, &variant);
    let mut warnings = module.warnings.clone();
    warnings.extend(
        diags
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .cloned(),
    );
    match kernel {
        Some(kernel) => {
            if !warnings.is_empty() {
                eprintln!(
                    "{}",
                    render::render_all(&warnings, file, render::stderr_color())
                );
            }
            Ok(kernel)
        }
        None => {
            let mut all = module.warnings;
            all.extend(diags);
            Err(Failure::Diagnostics(all))
        }
    }
}

/// Runs a bound launch on a back end and gives back every tensor.
fn execute(
    backend: Backend,
    launch: &Launch,
    file: &SourceFile,
) -> Result<Vec<(String, HostTensor)>, Failure> {
    match backend {
        Backend::Interpreter => {
            let out = launch
                .run(&interp_config())
                .map_err(|e| launch_failure(launch.kernel(), e))?;
            Ok(out.tensors)
        }
        Backend::Gpu => {
            let device = gpu::open()?;
            gpu::execute(&device, launch, file)
        }
    }
}

/// The interpreter's configuration: the step budget from `PHOBOS_STEP_BUDGET` when set.
fn interp_config() -> Config {
    let mut config = Config::default();
    if let Some(budget) = std::env::var("PHOBOS_STEP_BUDGET")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        config.step_budget = budget;
    }
    config
}

/// An interpreter error: against the source when it has a span, else one line.
fn launch_failure(kernel: &Kernel, e: phobos_interp::Error) -> Failure {
    let help = match e {
        phobos_interp::Error::StepBudget { budget, .. } => Some(format!(
            "a loop that never ends? If the work is real, raise the budget, e.g. \
             PHOBOS_STEP_BUDGET={}",
            budget.saturating_mul(10)
        )),
        _ => e.help(),
    };
    match e.span() {
        Some(span) => {
            let mut d = Diagnostic::error("", e.to_string(), span)
                .with_note(format!("while running `{}`", kernel.name));
            if let Some(h) = help {
                d = d.with_help(h);
            }
            Failure::Diagnostics(vec![d])
        }
        None => match e {
            phobos_interp::Error::MissingArg {
                ref name,
                kind: "scalar",
            } => Failure::hint(e.to_string(), format!("pass it with --arg {name}=VALUE")),
            _ => Failure::Message {
                message: e.to_string(),
                hint: help,
            },
        },
    }
}

/// `M=64,N=48` (commas or spaces) as name/value pairs.
fn parse_dims(text: Option<&str>) -> Result<Vec<(String, i64)>, Failure> {
    super::parse_dims(text.unwrap_or(""))
        .map_err(|e| Failure::hint(e, "write --dims M=512,N=512,K=256"))
}

fn tensor_names(kernel: &Kernel) -> String {
    let names: Vec<&str> = kernel
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Tensor { .. }))
        .map(|p| p.name.as_str())
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn tensor_dtype(kernel: &Kernel, name: &str) -> phobos_ir::DType {
    kernel
        .params
        .iter()
        .find_map(|p| match &p.kind {
            ParamKind::Tensor { dtype, .. } if p.name == name => Some(*dtype),
            _ => None,
        })
        .unwrap_or(phobos_ir::DType::F32)
}

/// The runtime dims a tensor given for parameter `name` fixes.
fn tensor_dims(kernel: &Kernel, name: &str, t: &HostTensor) -> Vec<(String, i64)> {
    let Some(ParamKind::Tensor { dims, .. }) = kernel
        .params
        .iter()
        .find(|p| p.name == name)
        .map(|p| &p.kind)
    else {
        return Vec::new();
    };
    dims.iter()
        .zip(&t.shape)
        .filter_map(|(d, &extent)| match *d {
            Dim::Dyn(id) => Some((kernel.dims.get(id)?.name.clone(), extent as i64)),
            Dim::Static(_) => None,
        })
        .collect()
}

/// `--input NAME=PATH`: each file read with the parameter's element type.
fn read_inputs(kernel: &Kernel, inputs: &[String]) -> Result<Vec<(String, HostTensor)>, Failure> {
    let mut out: Vec<(String, HostTensor)> = Vec::new();
    for item in inputs {
        let Some((name, path)) = item
            .split_once('=')
            .filter(|(n, p)| !n.is_empty() && !p.is_empty())
        else {
            return Err(Failure::hint(
                format!("`{item}` in --input is not of the form NAME=PATH"),
                "write --input A=a.npy",
            ));
        };
        let Some(ParamKind::Tensor { dtype, dims, .. }) = kernel
            .params
            .iter()
            .find(|p| p.name == name)
            .map(|p| &p.kind)
        else {
            return Err(Failure::msg(format!(
                "`{name}` is not a tensor parameter of `{}` (tensors: {})",
                kernel.name,
                tensor_names(kernel)
            )));
        };
        if out.iter().any(|(n, _)| n == name) {
            return Err(Failure::msg(format!("--input `{name}` is given twice")));
        }
        let t = npy::read_npy(Path::new(path), Some(*dtype)).map_err(|e| match e {
            // An I/O error names the path already.
            npy::NpyError::Io { .. } => Failure::msg(format!("--input {name}: {e}")),
            e => Failure::msg(format!("--input {name}: {path}: {e}")),
        })?;
        let same = t.dtype == *dtype || t.dtype.arith() == dtype.arith();
        if !same {
            return Err(Failure::hint(
                format!("{path} holds {}, but `{name}` holds {dtype}", t.dtype),
                format!(
                    "convert it, e.g. with NumPy: a.astype('{}')",
                    numpy_name(*dtype)
                ),
            ));
        }
        if t.shape.len() != dims.len() {
            return Err(Failure::msg(format!(
                "{path} has shape {:?}, but `{name}` has rank {}",
                t.shape,
                dims.len()
            )));
        }
        out.push((name.to_string(), t));
    }
    Ok(out)
}

fn numpy_name(t: phobos_ir::DType) -> &'static str {
    use phobos_ir::DType::*;
    match t {
        Bool => "bool",
        I8 => "int8",
        U8 | F8E4M3 | F8E5M2 => "uint8",
        I32 => "int32",
        U32 => "uint32",
        I64 => "int64",
        F16 => "float16",
        BF16 => "uint16",
        F32 | Tf32 => "float32",
        F64 => "float64",
    }
}

/// `--arg NAME=VALUE` for scalar parameters (`true`/`false` for bools).
fn parse_scalars(kernel: &Kernel, items: &[String]) -> Result<Vec<(String, f64)>, Failure> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for item in items {
        let Some((name, text)) = item.split_once('=').map(|(n, v)| (n.trim(), v.trim())) else {
            return Err(Failure::hint(
                format!("`{item}` in --arg is not of the form NAME=VALUE"),
                "write --arg alpha=2.5",
            ));
        };
        let param = kernel.params.iter().find(|p| p.name == name);
        if !matches!(param.map(|p| &p.kind), Some(ParamKind::Scalar { .. })) {
            let scalars: Vec<&str> = kernel
                .params
                .iter()
                .filter(|p| matches!(p.kind, ParamKind::Scalar { .. }))
                .map(|p| p.name.as_str())
                .collect();
            let all: Vec<&str> = kernel.params.iter().map(|p| p.name.as_str()).collect();
            return Err(Failure::hint(
                format!(
                    "`{name}` is not a scalar parameter of `{}` (parameters: {})",
                    kernel.name,
                    all.join(", ")
                ),
                if scalars.is_empty() {
                    "this kernel takes no scalars; tensors come from --input".to_string()
                } else {
                    format!("scalars: {}", scalars.join(", "))
                },
            ));
        }
        let value = match text {
            "true" => 1.0,
            "false" => 0.0,
            _ => text
                .parse::<f64>()
                .map_err(|_| Failure::msg(format!("--arg {name}: `{text}` is not a number")))?,
        };
        if out.iter().any(|(n, _)| n == name) {
            return Err(Failure::msg(format!("--arg `{name}` is given twice")));
        }
        out.push((name.to_string(), value));
    }
    Ok(out)
}

/// `C: f32[64, 48] min=-3.25 max=4.5 sum=12.75 fnv=0123456789abcdef`: the extremes ignore NaN
/// (counted as `nan=K` when present), the sum is taken in f64 in row-major order, and the hash is
/// FNV-1a over the tensor's bytes (row-major, little-endian), so equal lines mean equal tensors.
pub fn summary(name: &str, t: &HostTensor) -> String {
    let shape = t
        .shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut line = format!("{name}: {}[{shape}]", t.dtype);
    let finite = || t.data.iter().copied().filter(|x| !x.is_nan());
    if t.is_empty() {
        line.push_str(" empty");
    } else {
        let min = finite().fold(f64::INFINITY, f64::min);
        let max = finite().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = t.data.iter().sum();
        line.push_str(&format!(
            " min={} max={} sum={sum}",
            short(t.dtype, min),
            short(t.dtype, max)
        ));
    }
    let nans = t.data.iter().filter(|x| x.is_nan()).count();
    if nans > 0 {
        line.push_str(&format!(" nan={nans}"));
    }
    let hash = t.to_bytes().iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    line.push_str(&format!(" fnv={hash:016x}"));
    line
}

/// The shortest text that reads back as the same value of a type of at most 32 bits.
fn short(dtype: phobos_ir::DType, x: f64) -> String {
    if dtype.size_bytes() <= 4 && dtype.is_float() {
        format!("{}", x as f32)
    } else {
        format!("{x}")
    }
}

/// Writes every tensor to `dir/NAME.npy`.
fn write_outputs(dir: &PathBuf, tensors: &[(String, HostTensor)]) -> Result<(), Failure> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::msg(format!("cannot create {}: {e}", dir.display())))?;
    let mut bits = Vec::new();
    for (name, t) in tensors {
        npy::write_npy(&dir.join(format!("{name}.npy")), t)
            .map_err(|e| Failure::msg(e.to_string()))?;
        if npy::is_bit_pattern(t.dtype) {
            bits.push(format!(
                "{name}.npy ({} as {})",
                t.dtype,
                npy::descr(t.dtype)
            ));
        }
    }
    if !bits.is_empty() {
        eprintln!(
            "note: NumPy has no bf16 or fp8, so these hold bit patterns: {} \
             (--input reads them back as the parameter's type)",
            bits.join(", ")
        );
    }
    Ok(())
}
