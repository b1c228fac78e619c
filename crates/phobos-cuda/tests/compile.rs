//! Offline compile test: every example kernel at every point of its space becomes CUDA that
//! NVRTC compiles for sm_90a (ptxas included); registers and spills per point are a snapshot.
//! Each point is compiled as declared; each kernel's default point is also compiled specialized
//! on an aligned problem (every dim a multiple of 16: the fast GEMM main loops), as `phobos run`
//! and the tuner compile it for such a problem (label suffix `[aligned]`), where that changes the
//! code. (Every aligned GEMM variant is compiled by tests/compile_fast.rs.)
//! Points whose CUDA differs only in the comment naming the point (a knob that changes nothing
//! at an unspecialized problem, such as VEC_COPY or STORE_LINES) are compiled once and reported
//! under each label.
//! Needs NVRTC (`eval "$(scripts/cuda-tools.sh)"`); without it the test says so and passes,
//! except under CI=true where it fails.

mod common;

use phobos_cuda::{emit, EmitOptions};
use std::time::Instant;

#[test]
fn every_example_point_compiles() {
    let start = Instant::now();
    let mut jobs = Vec::new();
    let mut labels = Vec::new();
    // Each label's job: the first job of the same code (the source less the point's comment,
    // the same register cap and headers).
    let mut job_of = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    // PHOBOS_COMPILE_ONLY=name,..: only the examples whose file names contain one of the names,
    // the report printed instead of compared (to refresh a few lines of the snapshot quickly).
    let only: Vec<String> = std::env::var("PHOBOS_COMPILE_ONLY")
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    for path in common::example_files() {
        if !only.is_empty() && !only.iter().any(|o| path.contains(o.as_str())) {
            continue;
        }
        let opts = EmitOptions {
            source: Some(common::source(&path)),
        };
        for (n, (label, k)) in common::all_points(&path).into_iter().enumerate() {
            let (e, a) = declared_and_aligned(&k, &opts, &format!("{path} {label}"));
            // all_points starts at the default point.
            let variants = match a {
                Some(a) if n == 0 => vec![(String::new(), e), (" [aligned]".to_string(), a)],
                _ => vec![(String::new(), e)],
            };
            for (suffix, e) in variants {
                labels.push((
                    format!("{path}: {label}{suffix}"),
                    e.entry.clone(),
                    e.dynamic_smem_bytes,
                ));
                let key = code_key(&e);
                let job = *seen.entry(key).or_insert_with(|| {
                    jobs.push((e.source.clone(), common::compile_options(&e)));
                    jobs.len() - 1
                });
                job_of.push(job);
            }
        }
    }
    let emitted = start.elapsed();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let Some(results) = common::compile_or_skip(&jobs, threads) else {
        return;
    };
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for ((label, entry, smem), &job) in labels.iter().zip(&job_of) {
        match &results[job] {
            Ok(c) => {
                let res = phobos_gpu::resources::of_compiled(c, entry).expect("ptxas report");
                report.push(format!(
                    "{label}: {} registers, spills {}/{} bytes, {smem} bytes dynamic shared memory",
                    res.registers, res.spill_store_bytes, res.spill_load_bytes
                ));
            }
            Err(e) => failures.push(format!("{label}: {}\n{}", e.summary(), e.log)),
        }
    }
    eprintln!(
        "{} points ({} distinct): emitted in {:.2?}, compiled in {:.2?} on {threads} threads",
        labels.len(),
        jobs.len(),
        emitted,
        start.elapsed() - emitted
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    if !only.is_empty() {
        println!("{}", report.join("\n"));
        return;
    }
    insta::assert_snapshot!(report.join("\n"));
}

/// `k` emitted as declared, and specialized on an aligned problem (every dim 4096: the fast GEMM
/// main loops, as `phobos run` and the tuner compile it) where that changes the code.
fn declared_and_aligned(
    k: &phobos_ir::Kernel,
    opts: &EmitOptions,
    label: &str,
) -> (phobos_cuda::Emitted, Option<phobos_cuda::Emitted>) {
    let e = emit(k, opts).unwrap_or_else(|err| panic!("{label}: {err}"));
    let mut aligned = k.clone();
    let dims: Vec<(String, i64)> = k.dims.iter().map(|d| (d.name.clone(), 4096)).collect();
    phobos_cuda::specialize_alignment(&mut aligned, &dims);
    let a = emit(&aligned, opts).unwrap_or_else(|err| panic!("{label}: {err}"));
    let changed = a.source != e.source;
    (e, changed.then_some(a))
}

/// What decides a compile's result: the source without the comment that names the point, the
/// entry, the register cap and the headers' names.
fn code_key(e: &phobos_cuda::Emitted) -> String {
    let body: Vec<&str> = (e.source.lines())
        .filter(|l| !l.starts_with("// Phobos kernel `"))
        .collect();
    let headers: Vec<&str> = e.headers.iter().map(|(n, _)| n.as_str()).collect();
    format!(
        "{}\n{:?}\n{}\n{}",
        e.entry,
        e.max_regs,
        headers.join(","),
        body.join("\n")
    )
}

/// gemm_persistent.ph at 1-byte types on a problem no tensor-core main loop takes (K = 67: rows
/// off 16 bytes; 288 threads: no mma.sync warp grid), so the FFMA loop runs: its f32
/// accumulator and the f8 result tile share a shape but not a vector width, so two layouts of
/// one shape are declared and each gets its own alias (found by fuzzing `phobos emit --ptx`:
/// both were `Blk128x256`, which NVRTC rejects as a redeclaration). The declarations are
/// compared whole; every_example_compiles_at_every_element_type compiles such kernels.
#[test]
fn same_shape_layouts_get_distinct_aliases() {
    let (path, pins) = (
        "examples/gemm_persistent.ph",
        "TILE_M=128 TILE_N=256 TILE_K=64 STAGES=3 SCHEDULE=2 CLUSTER=2",
    );
    let dims = [("M", 77), ("N", 63), ("K", 67)];
    for t in ["f8e4m3", "f8e5m2"] {
        let types = format!("TA={t},TB={t},TC={t}");
        let e = common::specialized(common::source(path), pins, &types, &dims);
        let usings: Vec<&str> = (e.source.lines())
            .filter(|l| l.starts_with("using "))
            .collect();
        assert_eq!(
            usings,
            [
                "using Blk128x256 = ph::Blocked<128, 256, 288, 4>;",
                "using Blk128x256_2 = ph::Blocked<128, 256, 288, 16>;",
            ],
            "{path} {types}"
        );
    }
}

/// Every example kernel with element-type parameters, at its default point, with every type
/// parameter bound to each of f32, f16, bf16, f8e4m3 and f8e5m2 in turn (one type for all, as
/// `dot` asks), as declared and specialized on an aligned problem ([`declared_and_aligned`]):
/// what the checker accepts is emitted and compiled for sm_90a. The list of
/// what was compiled and what the checker refused (by code) is blessed whole.
/// every_example_point_compiles covers every point at the default types; this covers the
/// types, where an f8 result tile beside an f32 accumulator once declared one alias twice.
#[test]
fn every_example_compiles_at_every_element_type() {
    let mut report = Vec::new();
    let mut emitted = Vec::new();
    let mut labels = Vec::new();
    for path in common::example_files() {
        let opts = EmitOptions {
            source: Some(common::source(&path)),
        };
        let module = phobos_check::load(common::source(&path)).unwrap_or_else(|d| panic!("{d:?}"));
        for info in module.kernels.iter().filter(|i| !i.type_params.is_empty()) {
            for t in ["f32", "f16", "bf16", "f8e4m3", "f8e5m2"] {
                let types: Vec<String> = (info.type_params.iter())
                    .map(|(name, _)| format!("{name}={t}"))
                    .collect();
                let types = types.join(",");
                let label = format!("{path} {} {types}", info.name);
                let kernel = info
                    .variant(None, Some(&types), None)
                    .map_err(|e| format!("{e:?}"))
                    .and_then(|v| {
                        phobos_check::instantiate(&module, info, &v)
                            .map_err(|d| d.iter().map(|d| d.code).collect::<Vec<_>>().join(", "))
                    });
                let k = match kernel {
                    Ok(k) => k,
                    Err(why) => {
                        report.push(format!("{label}: refused ({why})"));
                        continue;
                    }
                };
                let (e, a) = declared_and_aligned(&k, &opts, &label);
                report.push(format!("{label}: compiled"));
                if let Some(a) = a {
                    labels.push(format!("{label} [aligned]"));
                    emitted.push(a);
                }
                labels.push(label);
                emitted.push(e);
            }
        }
    }
    insta::assert_snapshot!(report.join("\n"));
    let start = Instant::now();
    if common::compiled(&emitted, &labels).is_some() {
        eprintln!(
            "{} kernels compiled in {:.2?}",
            emitted.len(),
            start.elapsed()
        );
    }
}
