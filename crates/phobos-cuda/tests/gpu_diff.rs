//! Differential tests: generated CUDA on the GPU against the interpreter (or, for the big
//! fast-GEMM cases, a float64 host matmul).
//!
//! Every case (example kernels at sampled points and ragged shapes, small random kernels,
//! atomics whose results are independent of the order of their updates, and the fast GEMM main
//! loops at wgmma / mma.sync / FFMA / GROUP_M / SPLIT_K points) is built
//! offline by `cases_build_offline`: checked, specialized, interpreted, emitted, compiled, and
//! bound to its launch ABI (tensor maps and all) with stand-in device addresses. The GPU run is
//! `#[ignore]`d:
//!
//! ```text
//! eval "$(scripts/cuda-tools.sh)"
//! cargo test -p phobos-cuda --release --test gpu_diff -- --ignored --nocapture
//! ```
//!
//! `PHOBOS_DIFF_ONLY=layer_norm.ph,THREADS=32` runs only the cases whose labels contain one of
//! the comma-separated parts; the others are built without their references (no interpreter
//! run), so such a call pays for the cases it runs.
//!
//! Launches go through phobos-gpu as `phobos run` and the tuner do: `bind_args`, then
//! `Gpu::prepare_launch` with the emitted launch facts (TMA maps encoded from the bound
//! tensors, SPLIT_K outputs zeroed, grid z), then `Gpu::launch_prepared`.

mod common;

use common::cases::{
    atomic_cases, diff_only, example_cases, extra_cases, random_cases, selected, Case, Value,
};
use common::fast_cases::fast_cases;
use common::gpu_run::{run_capped, run_on_gpu};
use common::mma_cases::mma_cases;
use common::rowwise_cases::rowwise_cases;
use common::whole_rows::{whole_row_cases, ROWS_AHEAD_CAP};
use phobos::backend::cuda::launch_facts;
use phobos_gpu::{bind_args, plan_launch, Arg, Gpu, TensorRef};
use phobos_ir::ParamKind;

const RANDOM_KERNELS: usize = 24;

fn all_cases() -> (Vec<Case>, Vec<String>) {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for c in example_cases()
        .into_iter()
        .chain(extra_cases())
        .chain(rowwise_cases())
        .chain(whole_row_cases())
        .chain(mma_cases())
        .chain(atomic_cases())
        .chain(fast_cases())
        .chain(random_cases(RANDOM_KERNELS, 2024))
    {
        match c {
            Ok(c) => ok.push(c),
            Err(e) => failed.push(e),
        }
    }
    (ok, failed)
}

/// Binds a case with stand-in device addresses (256-byte aligned, like allocations) and plans
/// its launch: every check `phobos run` makes before touching the GPU.
fn dry_run(c: &Case) -> Result<(), String> {
    let args: Vec<Arg<'_>> = c
        .kernel
        .params
        .iter()
        .zip(&c.args)
        .enumerate()
        .map(|(i, (p, v))| match (&p.kind, v) {
            (ParamKind::Tensor { order, .. }, Value::Tensor(t)) => Arg::Tensor(TensorRef {
                ptr: 0x7000_0000 + 0x100_0000 * i as u64,
                dtype: t.dtype,
                shape: &t.shape,
                order: *order,
            }),
            (_, Value::Scalar(x)) => Arg::Scalar(*x),
            (_, Value::Tensor(_)) => Arg::Scalar(0.0),
        })
        .collect();
    if c.grid.iter().any(|&g| g < 1) {
        return Ok(());
    }
    let bound = bind_args(&c.kernel, &args).map_err(|e| format!("bind: {e}"))?;
    let facts = launch_facts(&c.emitted);
    let phobos_gpu::LaunchPlan {
        maps,
        zero,
        grid,
        logical,
        workspace,
    } = plan_launch(&facts, &c.kernel, &bound, &args).map_err(|e| format!("plan: {e}"))?;
    if maps.len() != c.emitted.tma.len()
        || zero.len() != c.emitted.zero_before_launch.len()
        || workspace.is_some() != c.emitted.split_workspace.is_some()
    {
        return Err("launch plan disagrees with the emitted facts".into());
    }
    if c.emitted.persistent {
        // The tiles in a row along x, in whole clusters; the logical grid as the kernel's.
        let [gx, gy, _] = bound.grid;
        let cx = facts.cluster_x.max(1);
        if logical != Some([gx, gy]) || grid != [gx.div_ceil(cx) * cx * gy, 1, 1] {
            return Err(format!(
                "persistent plan {grid:?} {logical:?} for grid {:?}",
                bound.grid
            ));
        }
    } else if logical.is_some() || grid[2] != c.emitted.grid_z.max(bound.grid[2]) {
        return Err(format!("grid {grid:?} for grid z {}", c.emitted.grid_z));
    }
    Ok(())
}

/// Everything up to the launch: every case checks, runs on the interpreter, emits, and (with
/// NVRTC present) compiles; outputs are not vacuous.
#[test]
fn cases_build_offline() {
    assert!(
        diff_only().is_empty(),
        "unset PHOBOS_DIFF_ONLY: the cases it leaves out are built without their references"
    );
    let (cases, failed) = all_cases();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    assert!(cases.len() >= 2 * RANDOM_KERNELS);
    for main_loop in [
        "ph::gemm::sm90::MainLoop",
        "ph::gemm::sm80::MainLoop",
        "ph::gemm::ffma::MainLoop",
        "ph::gemm::split_k_range",
        "ph::gemm::swizzle_block",
        // VEC_COPY=1's odd transposes (bench/NOTES.md r19).
        "ph::transpose_store_shifted<",
        // ROW_SMEM=2's store from the registers (bench/NOTES.md r24).
        "ph::smem_row_store_direct<",
    ] {
        assert!(
            cases.iter().any(|c| c.emitted.source.contains(main_loop)),
            "a case runs {main_loop}"
        );
    }
    common::fast_cases::reference_matches_interpreter().unwrap();
    // Every case binds to its launch ABI (tensor maps included) before any GPU is involved.
    let unbound: Vec<String> = cases
        .iter()
        .filter_map(|c| dry_run(c).err().map(|e| format!("{}: {e}", c.label)))
        .collect();
    assert!(unbound.is_empty(), "{}", unbound.join("\n"));
    for c in &cases {
        for (id, t) in &c.expected {
            assert!(
                t.data.iter().any(|x| !x.is_nan()),
                "{}: output {} is all NaN on the interpreter",
                c.label,
                c.kernel.params[*id].name
            );
        }
    }
    // Compile the random kernels and the fast GEMM cases (the examples' points are compiled by
    // tests/compile.rs).
    let compiled = |c: &&Case| {
        ["random", "fast", "atomics"]
            .iter()
            .any(|p| c.label.starts_with(p))
    };
    let jobs: Vec<_> = cases
        .iter()
        .filter(compiled)
        .map(|c| {
            (
                c.emitted.source.clone(),
                common::compile_options(&c.emitted),
            )
        })
        .collect();
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    let labels = cases.iter().filter(compiled);
    let errors: Vec<String> = labels
        .zip(&results)
        .filter_map(|(c, r)| {
            r.as_ref()
                .err()
                .map(|e| format!("{}\n{}\n{}", c.label, e.log, c.emitted.source))
        })
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

#[test]
fn the_case_filter_matches_label_substrings() {
    let only = vec!["layer_norm.ph".to_string(), "THREADS=32".to_string()];
    assert!(selected("layer_norm.ph BLOCK=1024 THREADS=128", &only));
    assert!(selected("rms_norm.ph BLOCK=1024 THREADS=32 RPB=2", &only));
    assert!(!selected("rms_norm.ph BLOCK=1024 THREADS=128", &only));
    assert!(selected("anything", &[]));
}

/// Runs one case on the GPU through phobos-gpu and compares every output with its reference.
#[test]
#[ignore = "needs a GPU"]
fn gpu_matches_interpreter() {
    let gpu = Gpu::new(0).expect("a CUDA device");
    let (cases, failed) = all_cases();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    let only = diff_only();
    let cases: Vec<&Case> = cases.iter().filter(|c| selected(&c.label, only)).collect();
    assert!(
        !cases.is_empty(),
        "PHOBOS_DIFF_ONLY={only:?} selects no case"
    );
    let mut errors = Vec::new();
    for c in cases.iter().copied() {
        // ROWS_AHEAD=1 also on a grid of a few blocks: each walks several rows.
        let ahead = (c.emitted.rows_ahead.as_ref()).is_some_and(|r| r.ahead.is_ok());
        let capped = || {
            let tol = &phobos_ir::walk::output_tolerance;
            run_capped(&gpu, c, tol, Some(ROWS_AHEAD_CAP))
                .map_err(|e| format!("on a grid of {ROWS_AHEAD_CAP}: {e}"))
        };
        let run = run_on_gpu(&gpu, c).and_then(|()| if ahead { capped() } else { Ok(()) });
        match run {
            Ok(()) => eprintln!("ok   {}", c.label.lines().next().unwrap_or("")),
            Err(e) => {
                eprintln!("FAIL {}: {e}", c.label.lines().next().unwrap_or(""));
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
    eprintln!("{} cases, {} failed", cases.len(), errors.len());
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}
