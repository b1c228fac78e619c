//! One case on the GPU against its expected outputs (the interpreter's), as `phobos run` and
//! the tuner launch it: `bind_args`, `Gpu::prepare_launch` with the emitted launch facts, then
//! `Gpu::launch_prepared`; each output within its type's tolerance.

use super::cases::{Case, Value};
use phobos::backend::cuda::launch_facts;
use phobos_gpu::{bind_args, Arg, DeviceTensor, Gpu};
use phobos_ir::{relative_error, DType, Kernel, ParamKind};

/// Runs `c` on `gpu`; the first output off by more than its tolerance
/// ([`phobos_ir::walk::output_tolerance`]) is the error.
pub fn run_on_gpu(gpu: &Gpu, c: &Case) -> Result<(), String> {
    run_within(gpu, c, &phobos_ir::walk::output_tolerance)
}

/// Runs `c` on `gpu`; the first output off by more than `tolerance(kernel, output type)` is the
/// error.
pub fn run_within(
    gpu: &Gpu,
    c: &Case,
    tolerance: &dyn Fn(&Kernel, DType) -> f64,
) -> Result<(), String> {
    run_capped(gpu, c, tolerance, None)
}

/// Runs `c` on `gpu` as [`run_within`] does; a persistent kernel's grid is clamped to at most
/// `max_blocks` blocks (`PreparedLaunch::max_blocks`), so that each block walks several
/// logical blocks.
pub fn run_capped(
    gpu: &Gpu,
    c: &Case,
    tolerance: &dyn Fn(&Kernel, DType) -> f64,
    max_blocks: Option<u32>,
) -> Result<(), String> {
    if c.expected.is_empty() {
        // `PHOBOS_DIFF_ONLY` left it out when it was built (`cases::diff_only`): a run would
        // compare nothing.
        return Err(format!(
            "{}: built without its reference (PHOBOS_DIFF_ONLY={:?})",
            c.label,
            super::cases::diff_only()
        ));
    }
    let e = &c.emitted;
    let compiled = phobos_gpu::compile(&e.source, &super::compile_options(e))
        .map_err(|err| format!("compile: {}\n{}", err.summary(), err.log))?;
    let module = gpu
        .load_compiled(&compiled)
        .map_err(|err| format!("load: {err}"))?;
    let func = module
        .function(&e.entry)
        .map_err(|err| format!("function: {err}"))?;
    let mut tensors: Vec<Option<DeviceTensor>> = Vec::new();
    for (p, v) in c.kernel.params.iter().zip(&c.args) {
        tensors.push(match (&p.kind, v) {
            (ParamKind::Tensor { order, .. }, Value::Tensor(t)) => {
                Some(DeviceTensor::upload(gpu, t, *order).map_err(|err| format!("upload: {err}"))?)
            }
            _ => None,
        });
    }
    let args: Vec<Arg<'_>> = tensors
        .iter()
        .zip(&c.args)
        .map(|(t, v)| match (t, v) {
            (Some(t), _) => t.arg(),
            (None, Value::Scalar(x)) => Arg::Scalar(*x),
            (None, Value::Tensor(_)) => Arg::Scalar(0.0),
        })
        .collect();
    if c.grid.iter().all(|&g| g > 0) {
        let bound = bind_args(&c.kernel, &args).map_err(|err| format!("bind: {err}"))?;
        let mut prepared = gpu
            .prepare_launch(&c.kernel, bound, &args, &launch_facts(e))
            .map_err(|err| format!("prepare: {err}"))?;
        prepared.max_blocks = max_blocks;
        gpu.launch_prepared(&func, &prepared, e.dynamic_smem_bytes)
            .map_err(|err| format!("launch: {err}"))?;
    }
    gpu.synchronize().map_err(|err| format!("run: {err}"))?;
    for (id, want) in &c.expected {
        let t = tensors[*id]
            .as_ref()
            .ok_or("an output that is not a tensor")?;
        let got = t.download().map_err(|err| format!("download: {err}"))?;
        let err = relative_error(&got.data, &want.data);
        let tol = tolerance(&c.kernel, t.dtype);
        if err > tol {
            let first = got
                .data
                .iter()
                .zip(&want.data)
                .position(|(g, w)| {
                    !(g == w
                        || (g.is_nan() && w.is_nan())
                        || (g - w).abs() <= tol * w.abs().max(1.0))
                })
                .unwrap_or(0);
            return Err(format!(
                "{}: relative error {err:.3e} > {tol:.1e}; first difference at flat index {first}: gpu {} vs reference {}",
                c.kernel.params[*id].name, got.data[first], want.data[first]
            ));
        }
    }
    Ok(())
}

/// Runs every case of `cases` on `gpu` within `tolerance`, reporting each on stderr; the
/// failures (label, error and the generated CUDA), stopping at the first fault that poisons the
/// context. Empty when every case matched.
pub fn run_all(
    gpu: &Gpu,
    cases: &[Case],
    tolerance: &dyn Fn(&Kernel, DType) -> f64,
) -> Vec<String> {
    let mut errors = Vec::new();
    for c in cases {
        match run_within(gpu, c, tolerance) {
            Ok(()) => eprintln!("ok   {}", c.label),
            Err(e) => {
                eprintln!("FAIL {}: {e}", c.label);
                errors.push(format!(
                    "{}\n{e}\n--- generated CUDA ---\n{}",
                    c.label, c.emitted.source
                ));
                if gpu.is_poisoned() {
                    errors.push("the context faulted: later cases were not run".into());
                    break;
                }
            }
        }
    }
    errors
}

/// Panics when an expected output of `c` is all zeros or NaN: a case that cannot fail.
pub fn assert_not_vacuous(c: &Case) {
    for (id, t) in &c.expected {
        assert!(
            t.data.iter().any(|x| *x != 0.0 && !x.is_nan()),
            "{}: output {} is vacuous",
            c.label,
            c.kernel.params[*id].name
        );
    }
}
