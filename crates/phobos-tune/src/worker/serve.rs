//! The worker side: the loop `phobos-kbench --worker` runs, and the job handler it shares with
//! the in-process executor.

use super::protocol::{
    decode, encode, JobFailure, ReferenceSpec, Reply, Request, Setup, VariantSpec,
};
use crate::backend::{ArgValue, Device, Frontend, Loaded, RunError};
use crate::timing::{interleave, measure};
use crate::types::{BlockCoverage, CheckReference, CheckScope, Checked, Failure, Problem};
use crate::verify::{compare, compared_elements, make_args};
use std::io::{BufRead, Write};

/// Test hook: a worker asked to run the point whose `--autotune` form (`U=4`, or
/// `TILE_M=32 TILE_N=64`) equals this variable calls `std::process::abort()`, as a real fault
/// would kill it. Used by the isolation tests; harmless when unset.
pub const ABORT_HOOK: &str = "PHOBOS_KBENCH_ABORT_AT";
/// Test hook: a worker asked to run this point hangs, as a kernel stuck in a loop would.
pub const HANG_HOOK: &str = "PHOBOS_KBENCH_HANG_AT";

/// Test hook: a worker verifying this point changes every element its variant wrote
/// (v -> 2v + 1) before comparing, as a wrong kernel would: the check must then fail, whatever
/// the reference (the interpreter, cuBLAS). Harmless when unset.
pub const CORRUPT_HOOK: &str = "PHOBOS_KBENCH_CORRUPT_AT";

/// What a worker holds: the kernel's front end, the device, and the interpreter as reference.
pub struct WorkerState {
    pub frontend: Box<dyn Frontend>,
    pub device: Box<dyn Device>,
    pub oracle: Box<dyn Device>,
    /// The last sampled reference, for the next checks that ask for the same one.
    pub sampled: SampledReferences,
}

/// The interpreter's last sampled run, kept for the checks after it. The engine gives every
/// sampled check of a run the same reference point, sample and seed, so the reference, which
/// takes seconds to interpret at sizes too large to check whole, runs once a run, and each
/// check after it costs its variant's launch and the comparison. The inputs are the same for
/// those checks (made from the run's seed, fresh for each run).
#[derive(Default)]
pub struct SampledReferences(Option<SampledReference>);

struct SampledReference {
    /// The problem, the reference point, the sample, the seed and the kernel's parameters.
    key: String,
    /// The arguments before the run: every variant's check runs on a copy.
    inputs: Vec<ArgValue>,
    /// The arguments after the sampled run.
    outputs: Vec<ArgValue>,
    written: Vec<Option<Vec<bool>>>,
    coverage: BlockCoverage,
}

impl SampledReferences {
    /// The kept run if it is the one `key` names (taken out, to be put back after use).
    fn take(&mut self, key: &str) -> Option<SampledReference> {
        match &self.0 {
            Some(r) if r.key == key => self.0.take(),
            _ => None,
        }
    }
}

/// Runs `f` on the inputs of a timing job and their key. They are made once per problem and
/// kept for the following timing jobs of the same problem and kernel signature: generating a
/// large problem's random tensors on the host takes longer than timing a variant, and timing
/// needs no fresh values. The key names them for [`Loaded::prepare_reused`], which lets the
/// device keep its copy too. Correctness checks never use them (each check gets fresh inputs).
fn with_timing_args<T>(
    kernel: &phobos_ir::Kernel,
    problem: &Problem,
    seed: u64,
    f: impl FnOnce(&str, &[ArgValue]) -> Result<T, RunError>,
) -> Result<T, RunError> {
    type Cached = Option<(String, Vec<ArgValue>)>;
    static CACHE: std::sync::Mutex<Cached> = std::sync::Mutex::new(None);
    let key = format!("{problem:?}|{:?}", kernel.params);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if cache.as_ref().is_none_or(|(k, _)| *k != key) {
        *cache = None;
        let args = make_args(kernel, problem, seed, false).map_err(bad_args)?;
        *cache = Some((key, args));
    }
    let (key, args) = cache.as_ref().expect("filled above");
    f(key, args)
}

fn failed(id: Option<u64>, index: Option<usize>, e: RunError) -> Reply {
    let failure = if e.fatal {
        JobFailure::Fatal(e.failure)
    } else {
        JobFailure::Load(e.failure)
    };
    Reply::Failed { id, index, failure }
}

fn load(
    state: &mut WorkerState,
    spec: &VariantSpec,
    problem: &Problem,
    oracle: bool,
) -> Result<(phobos_ir::Kernel, Box<dyn Loaded>), RunError> {
    let kernel = state
        .frontend
        .instantiate(&spec.point, problem)
        .map_err(|f| RunError {
            failure: f,
            fatal: false,
        })?;
    let device = if oracle {
        &mut state.oracle
    } else {
        &mut state.device
    };
    let loaded = device.load(&kernel, spec.artifact.as_ref(), problem)?;
    Ok((kernel, loaded))
}

fn bad_args(e: String) -> RunError {
    RunError::refused(e)
}

/// Runs one job and answers it. Never panics on a variant's failure; a fault in the device is
/// answered with `JobFailure::Fatal`.
pub fn handle(state: &mut WorkerState, req: &Request) -> Reply {
    match req {
        Request::Verify {
            id,
            variant,
            problem,
            reference,
            seed,
        } => {
            let mut run = || -> Result<Reply, RunError> {
                let (kernel, mut loaded) = load(state, variant, problem, false)?;
                let sample_key = match reference {
                    ReferenceSpec::InterpSample { point, sample } => Some(format!(
                        "{problem:?}|{point:?}|{sample:?}|{seed}|{:?}",
                        kernel.params
                    )),
                    _ => None,
                };
                let mut kept = sample_key.as_deref().and_then(|k| state.sampled.take(k));
                // With a kept sample the variant runs on a copy of the tensors it writes and on
                // the kept inputs themselves, lent and given back after the comparison (no copy
                // of 100M input elements a variant, bench/NOTES.md t6); the reference arguments
                // are its outputs (below).
                let stored = phobos_ir::walk::stored(&kernel.body);
                let (args, mut out) = match &mut kept {
                    Some(r) => (Vec::new(), lend_inputs(&mut r.inputs, &stored)),
                    None => {
                        let args = make_args(&kernel, problem, *seed, true).map_err(bad_args)?;
                        let out = args.clone();
                        (args, out)
                    }
                };
                match &sample_key {
                    // The kept inputs stay on the device across the run's variants.
                    Some(key) if kept.is_some() => loaded.run_kept(key, &mut out)?,
                    _ => loaded.run(&mut out)?,
                }
                drop(loaded);
                if hook_matches(CORRUPT_HOOK, req) {
                    corrupt(&kernel, &mut out);
                }
                let mut reference_args = args;
                // The sampled reference to keep after the comparison, its outputs and masks
                // lent to it.
                let mut keep: Option<SampledReference> = None;
                let mut masks: Option<Vec<Option<Vec<bool>>>> = None;
                let mut coverage = None;
                let (name, reference_kind) = match reference {
                    ReferenceSpec::Interp { point } => {
                        let spec = VariantSpec {
                            point: point.clone(),
                            artifact: None,
                        };
                        let (_, mut r) = load(state, &spec, problem, true)?;
                        r.run(&mut reference_args)?;
                        let name = format!(
                            "the interpreter at {} for {}",
                            display_point(point),
                            problem.dims_text()
                        );
                        (name, CheckReference::Interpreter)
                    }
                    ReferenceSpec::InterpSample { point, sample } => {
                        let kept = match kept {
                            Some(r) => r,
                            None => {
                                let spec = VariantSpec {
                                    point: point.clone(),
                                    artifact: None,
                                };
                                let (_, mut r) = load(state, &spec, problem, true)?;
                                let inputs = reference_args.clone();
                                let run = r.run_sample(&mut reference_args, sample)?.ok_or_else(
                                    || RunError::refused("the reference runs whole launches only"),
                                )?;
                                SampledReference {
                                    key: sample_key.unwrap_or_default(),
                                    inputs,
                                    outputs: std::mem::take(&mut reference_args),
                                    written: run.written,
                                    coverage: run.coverage,
                                }
                            }
                        };
                        let c = &kept.coverage;
                        let name = format!(
                            "the interpreter at {} for {} on {} of its {} blocks",
                            display_point(point),
                            problem.dims_text(),
                            c.blocks(),
                            c.grid_blocks
                        );
                        let mut kept = kept;
                        masks = Some(std::mem::take(&mut kept.written));
                        coverage = Some(kept.coverage.clone());
                        reference_args = std::mem::take(&mut kept.outputs);
                        keep = Some(kept);
                        (name, CheckReference::Interpreter)
                    }
                    ReferenceSpec::Variant(spec) => {
                        let (_, mut r) = load(state, spec, problem, false)?;
                        r.run(&mut reference_args)?;
                        let name = format!("the verified variant {}", display_point(&spec.point));
                        (name, CheckReference::Variant)
                    }
                    ReferenceSpec::Kernel(spec) => {
                        let fe = state.frontend.reference().ok_or_else(|| {
                            RunError::refused("the worker was started without a reference kernel")
                        })?;
                        let k =
                            fe.instantiate(&spec.point, problem)
                                .map_err(|failure| RunError {
                                    failure,
                                    fatal: false,
                                })?;
                        let interp = spec.artifact.is_none();
                        let name = format!(
                            "the reference kernel `{}` at {}{}",
                            fe.kernel_name(),
                            display_point(&spec.point),
                            if interp { " on the interpreter" } else { "" }
                        );
                        let device = if interp {
                            &mut state.oracle
                        } else {
                            &mut state.device
                        };
                        let mut r = device.load(&k, spec.artifact.as_ref(), problem)?;
                        r.run(&mut reference_args)?;
                        let kind = if interp {
                            CheckReference::Interpreter
                        } else {
                            CheckReference::Variant
                        };
                        (name, kind)
                    }
                    ReferenceSpec::Library(spec) => {
                        let mut r = state.device.library(&kernel, spec, problem)?;
                        r.run(&mut reference_args)?;
                        let name = format!(
                            "{} for {}",
                            r.describe().unwrap_or_else(|| "the library".into()),
                            problem.dims_text()
                        );
                        (name, CheckReference::Library)
                    }
                };
                let written = masks.as_deref();
                let elements = compared_elements(&kernel, &out, written);
                let scope = match coverage {
                    Some(coverage) => CheckScope::Sampled { coverage, elements },
                    None => CheckScope::Whole { elements },
                };
                let (mismatch, max_error) = compare(&kernel, &out, &reference_args, &name, written);
                let reply = Reply::Verified {
                    id: *id,
                    mismatch,
                    max_error,
                    checked: Some(Checked {
                        dims: problem.dims.clone(),
                        reference: reference_kind,
                        scope,
                    }),
                };
                if let Some(mut kept) = keep {
                    give_back_inputs(&mut kept.inputs, &mut out, &stored);
                    kept.outputs = reference_args;
                    kept.written = masks.unwrap_or_default();
                    state.sampled = SampledReferences(Some(kept));
                }
                Ok(reply)
            };
            run().unwrap_or_else(|e| failed(Some(*id), None, e))
        }
        Request::Time {
            id,
            variant,
            problem,
            settings,
            best_ms,
            seed,
        } => {
            let mut run = || -> Result<Reply, RunError> {
                let (kernel, mut loaded) = load(state, variant, problem, false)?;
                with_timing_args(&kernel, problem, *seed, |key, args| {
                    loaded.prepare_reused(key, args)
                })?;
                let stats = measure(settings, *best_ms, || loaded.launch_timed())?;
                Ok(Reply::Timed {
                    id: *id,
                    stats,
                    clusters: loaded.clusters(),
                })
            };
            run().unwrap_or_else(|e| failed(Some(*id), None, e))
        }
        Request::Interleave {
            id,
            variants,
            problem,
            settings,
            seed,
        } => {
            let mut loaded: Vec<Box<dyn Loaded>> = Vec::new();
            for (i, v) in variants.iter().enumerate() {
                let prepared = load(state, v, problem, false).and_then(|(kernel, mut l)| {
                    with_timing_args(&kernel, problem, *seed, |key, args| {
                        l.prepare_reused(key, args)
                    })?;
                    Ok(l)
                });
                match prepared {
                    Ok(l) => loaded.push(l),
                    Err(e) => return failed(Some(*id), Some(i), e),
                }
            }
            match interleave(loaded.len(), settings, |i| loaded[i].launch_timed()) {
                Ok(stats) => Reply::Interleaved { id: *id, stats },
                Err((i, e)) => failed(Some(*id), Some(i), e),
            }
        }
        Request::TimeLibrary {
            id,
            library,
            problem,
            settings,
            seed,
        } => {
            let mut run = || -> Result<Reply, RunError> {
                let spec = VariantSpec {
                    point: library.point.clone(),
                    artifact: None,
                };
                let kernel = state
                    .frontend
                    .instantiate(&spec.point, problem)
                    .map_err(|f| RunError {
                        failure: f,
                        fatal: false,
                    })?;
                let mut loaded = state.device.library(&kernel, library, problem)?;
                // The same inputs as the kernel's timing jobs of this problem.
                with_timing_args(&kernel, problem, *seed, |_, args| loaded.prepare(args))?;
                let stats = measure(settings, None, || loaded.launch_timed())?;
                Ok(Reply::Timed {
                    id: *id,
                    stats,
                    clusters: None,
                })
            };
            run().unwrap_or_else(|e| failed(Some(*id), None, e))
        }
        Request::Setup(_) | Request::Quit => Reply::Log {
            message: "unexpected request ignored".into(),
        },
    }
}

/// The arguments of a variant's run on kept inputs: a copy of each tensor the kernel writes
/// (`stored`, parameter indices), each other tensor moved out of `inputs` (left empty there
/// until [`give_back_inputs`]): the run leaves the tensors a kernel cannot write as they were.
fn lend_inputs(
    inputs: &mut [ArgValue],
    stored: &std::collections::BTreeSet<usize>,
) -> Vec<ArgValue> {
    (inputs.iter_mut().enumerate())
        .map(|(i, a)| match a {
            ArgValue::Tensor(t) if !stored.contains(&i) => {
                let empty = phobos_ir::HostTensor {
                    dtype: t.dtype,
                    shape: Vec::new(),
                    data: Vec::new(),
                };
                ArgValue::Tensor(std::mem::replace(t, empty))
            }
            a => a.clone(),
        })
        .collect()
}

/// Moves the tensors [`lend_inputs`] lent out of `args` back into `inputs`.
fn give_back_inputs(
    inputs: &mut [ArgValue],
    args: &mut [ArgValue],
    stored: &std::collections::BTreeSet<usize>,
) {
    for (i, (k, a)) in inputs.iter_mut().zip(args.iter_mut()).enumerate() {
        if let (ArgValue::Tensor(k), ArgValue::Tensor(a)) = (k, a) {
            if !stored.contains(&i) {
                std::mem::swap(k, a);
            }
        }
    }
}

fn display_point(p: &phobos_ir::Point) -> String {
    if p.0.is_empty() {
        "the only point".into()
    } else {
        p.to_pins()
    }
}

/// [`CORRUPT_HOOK`]'s change: every element of every tensor the kernel writes.
fn corrupt(kernel: &phobos_ir::Kernel, args: &mut [ArgValue]) {
    let written = crate::irwalk::written(kernel);
    for (i, a) in args.iter_mut().enumerate() {
        if let (true, ArgValue::Tensor(t)) = (written.contains(&i), a) {
            let dtype = t.dtype;
            t.data
                .iter_mut()
                .for_each(|v| *v = dtype.round(2.0 * *v + 1.0));
        }
    }
}

/// Why a line that starts like a message (a JSON object) is no request, or `None` for other
/// text.
fn unreadable_request(line: &str) -> Option<String> {
    let start = line.find('{')?;
    let err = serde_json::from_str::<Request>(line[start..].trim_end()).err()?;
    Some(format!("the worker could not read a request: {err}"))
}

fn hook_matches(var: &str, req: &Request) -> bool {
    let Ok(want) = std::env::var(var) else {
        return false;
    };
    let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
    req.points().iter().any(|p| p.to_pins() == want)
}

/// The worker's main loop. `make` builds the state from the first request (`Setup`). Returns
/// the process exit code: 0 on `Quit` or end of input, 3 after a fatal fault.
pub fn serve(
    input: impl BufRead,
    mut output: impl Write,
    make: impl FnOnce(&Setup) -> Result<WorkerState, Failure>,
) -> i32 {
    let mut send = |r: &Reply| -> bool {
        output
            .write_all(encode(r).as_bytes())
            .and_then(|_| output.flush())
            .is_ok()
    };
    let mut lines = input.lines();
    let setup = loop {
        match lines.next() {
            Some(Ok(line)) => match decode::<Request>(&line) {
                Some(Request::Setup(s)) => break s,
                Some(Request::Quit) => return 0,
                _ => continue,
            },
            _ => return 0,
        }
    };
    let mut state = match make(&setup) {
        Ok(s) => s,
        Err(f) => {
            send(&Reply::Failed {
                id: None,
                index: None,
                failure: JobFailure::Setup(f),
            });
            return 1;
        }
    };
    if !send(&Reply::Ready {
        device: state.device.info(),
    }) {
        return 1;
    }
    for line in lines {
        let Ok(line) = line else { return 1 };
        let Some(req) = decode::<Request>(&line) else {
            // Something that looks like a request but is not one of this protocol would leave
            // the caller waiting for an answer until its timeout: answer it with the reason.
            if let Some(why) = unreadable_request(&line) {
                let failure = JobFailure::Load(Failure::from_log(why));
                if !send(&Reply::Failed {
                    id: None,
                    index: None,
                    failure,
                }) {
                    return 1;
                }
            }
            continue;
        };
        if req == Request::Quit {
            return 0;
        }
        if hook_matches(ABORT_HOOK, &req) {
            std::process::abort();
        }
        if hook_matches(HANG_HOOK, &req) {
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
        // A panic in a device binding is a fault like any other: report it, then exit so the
        // main process starts a clean worker.
        let reply =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(&mut state, &req)))
                .unwrap_or_else(|p| {
                    let what = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "unknown panic".into());
                    Reply::Failed {
                        id: req.id(),
                        index: None,
                        failure: JobFailure::Fatal(Failure::from_log(format!(
                            "worker panicked: {what}"
                        ))),
                    }
                });
        let fatal = matches!(
            reply,
            Reply::Failed {
                failure: JobFailure::Fatal(_),
                ..
            }
        );
        if !send(&reply) || fatal {
            return if fatal { 3 } else { 1 };
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_that_is_no_request_gets_a_reason() {
        // JSON has no infinity: serde writes `null`, which no f64 field reads back.
        let line = r#"{"time":{"id":1,"settings":{"budget_ms":null}}}"#;
        let why = unreadable_request(line).expect("looks like a message");
        assert!(
            why.starts_with("the worker could not read a request: "),
            "{why}"
        );
        // Other text (a library's chatter on stdin, an empty line) is not answered.
        assert_eq!(unreadable_request("hello"), None);
        assert_eq!(unreadable_request(""), None);
    }

    #[test]
    fn kept_inputs_are_lent_and_given_back_whole() {
        use phobos_ir::{DType, HostTensor};
        let t = |v: f64| ArgValue::Tensor(HostTensor::from_f64(DType::F32, &[2], &[v, v + 1.0]));
        let mut inputs = vec![t(1.0), t(5.0), ArgValue::Scalar(3.0)];
        let stored = std::collections::BTreeSet::from([1]);
        let mut args = lend_inputs(&mut inputs, &stored);
        // The input moved out (left empty), the written tensor copied, the scalar kept.
        assert_eq!(args, vec![t(1.0), t(5.0), ArgValue::Scalar(3.0)]);
        assert_eq!(inputs[0].tensor().map(|h| h.data.len()), Some(0));
        assert_eq!(inputs[1], t(5.0));
        // The run writes its output; the kept output stays the reference's starting point.
        args[1] = t(9.0);
        give_back_inputs(&mut inputs, &mut args, &stored);
        assert_eq!(inputs, vec![t(1.0), t(5.0), ArgValue::Scalar(3.0)]);
    }
}
