//! Offline compile test: every example kernel at every point of its space becomes CUDA that
//! NVRTC compiles for sm_90a (ptxas included); registers and spills per point are a snapshot.
//! Each point is compiled as declared; each kernel's default point is also compiled specialized
//! on an aligned problem (every dim a multiple of 16: the fast GEMM main loops), as `phobos run`
//! and the tuner compile it for such a problem (label suffix `[aligned]`), where that changes the
//! code. (Every aligned GEMM variant is compiled by tests/compile_fast.rs.)
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
            let e = emit(&k, &opts).unwrap_or_else(|err| panic!("{path} {label}: {err}"));
            let mut aligned = k.clone();
            let dims: Vec<(String, i64)> = k.dims.iter().map(|d| (d.name.clone(), 4096)).collect();
            phobos_cuda::specialize_alignment(&mut aligned, &dims);
            let a = emit(&aligned, &opts).unwrap_or_else(|err| panic!("{path} {label}: {err}"));
            // all_points starts at the default point.
            let variants = if n > 0 || a.source == e.source {
                vec![(String::new(), e)]
            } else {
                vec![(String::new(), e), (" [aligned]".to_string(), a)]
            };
            for (suffix, e) in variants {
                labels.push((
                    format!("{path}: {label}{suffix}"),
                    e.entry.clone(),
                    e.dynamic_smem_bytes,
                ));
                jobs.push((e.source.clone(), common::compile_options(&e)));
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
    for ((label, entry, smem), r) in labels.iter().zip(&results) {
        match r {
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
        "{} points: emitted in {:.2?}, compiled in {:.2?} on {threads} threads",
        labels.len(),
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
