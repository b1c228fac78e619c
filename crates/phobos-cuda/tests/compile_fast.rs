//! Offline compile of the fast GEMM variants of gemm_typed (wgmma + TMA, mma.sync, the
//! register-tiled FFMA loop, GROUP_M and SPLIT_K, the persistent schedule) for sm_90a with NVRTC,
//! ptxas included: each compiles, and none spills. Registers per variant are a snapshot. Needs NVRTC (`eval
//! "$(scripts/cuda-tools.sh)"`); without it the test says so and passes, except under CI=true.

mod common;

use common::fast::{aligned_dims, gemm_t_text, gemm_text, kernel_of};
use phobos_cuda::{emit, EmitOptions, Emitted};

/// (label, emitted) of every fast variant: the strategy each label names must be the one chosen.
pub fn fast_variants() -> Vec<(String, Emitted)> {
    let plain = |at: &str, launch: &str| gemm_text(at, launch);
    let at = |m: u32, n: u32, k: u32, s: u32, extra: &str| {
        format!(
            "@autotune(TILE_M in [{m}], TILE_N in [{n}], TILE_K in [{k}], STAGES in [{s}]{extra})"
        )
    };
    let cases: Vec<(&str, String, &str, &str)> = vec![
        ("sm90 f16 128x256x64 s4", plain(&at(128, 256, 64, 4, ""), "@launch(256)"), "TA=f16,TB=f16,TC=f32", "sm90::MainLoop<ph::gemm::F16, 128, 256, 64, 2, 1, 4"),
        ("sm90 bf16 128x256x64 s4", plain(&at(128, 256, 64, 4, ""), "@launch(256)"), "TA=bf16,TB=bf16,TC=bf16", "sm90::MainLoop<ph::gemm::BF16, 128, 256, 64, 2, 1, 4"),
        ("sm90 f16 128x256x64 s4 producer warp", plain(&at(128, 256, 64, 4, ""), "@launch(288)"), "TA=f16,TB=f16,TC=f32", ", true, false, true>"),
        ("sm90 f16 128x256x64 s4 persistent (SCHEDULE=2)", plain(&at(128, 256, 64, 4, ", GROUP_M in [8], SCHEDULE in [2]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", "::run_persistent("),
        ("sm90 f16 128x256x64 s3 persistent, TMA store", plain(&at(128, 256, 64, 3, ", GROUP_M in [8], SCHEDULE in [2]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", "store_tile_tma<false, 1>("),
        ("sm90 bf16 128x256x64 s3 CLUSTER=2, TMA store", plain(&at(128, 256, 64, 3, ", CLUSTER in [2]"), "@launch(288)"), "TA=bf16,TB=bf16,TC=bf16", "store_tile_tma<true, 1>("),
        ("sm90 e4m3 128x256x128 s3 persistent, TMA store (dot_t)", gemm_t_text(&at(128, 256, 128, 3, ", SCHEDULE in [2]")).replace("@launch(256)", "@launch(288)"), "TA=f8e4m3,TB=f8e4m3,TC=bf16", "store_tile_tma<false, 1>("),
        ("sm90 f16 128x256x64 s4 CLUSTER=2 GROUP_M=8", plain(&at(128, 256, 64, 4, ", GROUP_M in [8], CLUSTER in [2]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", ", true, false, true, 2>::run("),
        ("sm90 bf16 128x256x64 s4 CLUSTER=2 producer warp", plain(&at(128, 256, 64, 4, ", CLUSTER in [2]"), "@launch(288)"), "TA=bf16,TB=bf16,TC=bf16", ", true, false, true, 2>::run("),
        ("sm90 e4m3 128x256x128 s4 CLUSTER=2 (dot_t)", gemm_t_text(&at(128, 256, 128, 4, ", CLUSTER in [2]")).replace("@launch(256)", "@launch(288)"), "TA=f8e4m3,TB=f8e4m3,TC=bf16", ", true, true, true, 2>::run("),
        ("sm90 f16 128x128x64 s3 GROUP_M=8", plain(&at(128, 128, 64, 3, ", GROUP_M in [8]"), "@launch(256)"), "TA=f16,TB=f16,TC=f32", "sm90::MainLoop<ph::gemm::F16, 128, 128, 64, 2, 1, 3"),
        ("sm90 bf16 128x128x64 s3 SPLIT_K=4", plain(&at(128, 128, 64, 3, ", SPLIT_K in [4]"), "@launch(256)"), "TA=bf16,TB=bf16,TC=f32", "ph::atomic_add_tile("),
        ("sm90 f16 64x128x64 s4 SPLIT_K=4 -> f16 (workspace)", plain(&at(64, 128, 64, 4, ", SPLIT_K in [4]"), "@launch(128)"), "TA=f16,TB=f16,TC=f16", "ph::split_arrive("),
        ("sm80 bf16 64x64x32 s3 SPLIT_K=4 -> bf16 (1000x777x333: workspace)", plain(&at(64, 64, 32, 3, ", SPLIT_K in [4]"), "@launch(128)"), "TA=bf16,TB=bf16,TC=bf16", "ph::split_arrive("),
        ("sm90 tf32 128x128x32 s3 (dot_t)", gemm_t_text(&at(128, 128, 32, 3, "")), "TA=tf32,TB=tf32,TC=f32", "sm90::MainLoop<ph::gemm::TF32, 128, 128, 32"),
        ("sm90 e4m3 128x256x128 s4 (dot_t)", gemm_t_text(&at(128, 256, 128, 4, "")), "TA=f8e4m3,TB=f8e4m3,TC=f32", "sm90::MainLoop<ph::gemm::F8E4M3, 128, 256, 128"),
        ("sm90 e5m2 128x128x128 s3 (dot_t)", gemm_t_text(&at(128, 128, 128, 3, "")), "TA=f8e5m2,TB=f8e5m2,TC=f16", "sm90::MainLoop<ph::gemm::F8E5M2, 128, 128, 128"),
        ("sm90 f16 128x128x64 s4 one warpgroup (@launch(128))", plain(&at(128, 128, 64, 4, ""), "@launch(128)"), "TA=f16,TB=f16,TC=f32", "sm90::MainLoop<ph::gemm::F16, 128, 128, 64, 1, 1, 4"),
        ("sm80 f16 128x128x32 s4 (K = 36: 8-byte rows)", plain(&at(128, 128, 32, 4, ""), "@launch(256)"), "TA=f16,TB=f16,TC=f32", "sm80::MainLoop<ph::gemm::F16, 128, 128, 32, 2, 4, 4, true, false, 8, 16>"),
        ("sm80 bf16 64x128x32 s3 (K = 36)", plain(&at(64, 128, 32, 3, ""), "@launch(128)"), "TA=bf16,TB=bf16,TC=f32", "sm80::MainLoop<ph::gemm::BF16, 64, 128, 32"),
        ("sm80 f16 128x128x32 s4 (1000x777x333: both register-staged)", plain(&at(128, 128, 32, 4, ""), "@launch(256)"), "TA=f16,TB=f16,TC=f16", "sm80::MainLoop<ph::gemm::F16, 128, 128, 32, 2, 4, 4, true, false, 2, 2>"),
        ("sm80 bf16 64x64x32 s3 (1000x777x333: both register-staged)", plain(&at(64, 64, 32, 3, ""), "@launch(128)"), "TA=bf16,TB=bf16,TC=f32", "sm80::MainLoop<ph::gemm::BF16, 64, 64, 32, 2, 2, 3, true, false, 2, 2>"),
        ("sm80 f16 64x128x32 s3 dot_t (1000x777x333: both register-staged)", gemm_t_text(&at(64, 128, 32, 3, "")).replace("@launch(256)", "@launch(128)"), "TA=f16,TB=f16,TC=f32", ", true, true, 2, 2>"),
        ("sm80 e4m3 128x128x64 s3 dot_t (1000x777x333: 1-byte loads)", gemm_t_text(&at(128, 128, 64, 3, "")), "TA=f8e4m3,TB=f8e4m3,TC=f32", ", true, true, 1, 1>"),
        ("sm90 f16 128x192x64 s4 persistent", plain(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [2]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", "sm90::MainLoop<ph::gemm::F16, 128, 192, 64, 2, 1, 4"),
        ("sm90 f16 128x192x64 s5 persistent, TMA store in 3 rounds", plain(&at(128, 192, 64, 5, ", GROUP_M in [8], SCHEDULE in [2]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", "store_tile_tma<false, 3>("),
        ("sm90 f16 128x192x64 s5 persistent CLUSTER=2", plain(&at(128, 192, 64, 5, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [2]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", ", 5, true, false, true, 2>::run_persistent("),
        ("sm90 f16 128x192x64 s4 persistent SCHEDULE=3 (each stage released on its own MMAs)", plain(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", ", 4, true, false, true, 1, true>::run_persistent("),
        ("sm90 f16 128x192x64 s4 persistent SCHEDULE=3 CLUSTER=2", plain(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [2]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", ", 4, true, false, true, 2, true>::run_persistent("),
        ("sm90 f16 192x128x64 s4 persistent SCHEDULE=3 CLUSTER=4 (three consumer warpgroups)", plain(&at(192, 128, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [4]"), "@launch(416)"), "TA=f16,TB=f16,TC=f16", "sm90::MainLoop<ph::gemm::F16, 192, 128, 64, 3, 1, 4, true, false, true, 2, true, false, true>::run_persistent("),
        ("sm90 bf16 192x192x64 s4 persistent CLUSTER=2 (three consumer warpgroups)", plain(&at(192, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [2]"), "@launch(416)"), "TA=bf16,TB=bf16,TC=bf16", "sm90::MainLoop<ph::gemm::BF16, 192, 192, 64, 3, 1, 4, true, false, true, 2>::run_persistent("),
        ("sm90 f16 128x192x64 s4 persistent CLUSTER=3 (rank 0 copies B)", plain(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [3]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", ", 4, true, false, true, 2, false, true>::run_persistent("),
        ("sm90 f16 128x192x64 s4 persistent SCHEDULE=3 CLUSTER=3", plain(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [3]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", ", 4, true, false, true, 2, true, true>::run_persistent("),
        ("sm90 f16 192x128x64 s4 persistent SCHEDULE=3 CLUSTER=5 (A shared four ways)", plain(&at(192, 128, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [5]"), "@launch(416)"), "TA=f16,TB=f16,TC=f16", "sm90::MainLoop<ph::gemm::F16, 192, 128, 64, 3, 1, 4, true, false, true, 4, true, false, true>::run_persistent("),
        ("sm90 f16 128x192x64 s4 persistent SCHEDULE=3 CLUSTER=4 (A shared)", plain(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [4]"), "@launch(288)"), "TA=f16,TB=f16,TC=f16", ", 4, true, false, true, 2, true, false, true>::run_persistent("),
        ("ffma f32 128x128x8", plain("@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [8])", "@launch(256)"), "TA=f32,TB=f32,TC=f32", "ffma::MainLoop<128, 128, 8, 2, 4, 8, 8"),
        ("ffma f32 128x128x16 SPLIT_K=2 GROUP_M=4", plain("@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [16], GROUP_M in [4], SPLIT_K in [2])", "@launch(256)"), "TA=f32,TB=f32,TC=f32", "ffma::MainLoop<128, 128, 16"),
    ];
    let mut out = Vec::new();
    for (label, text, types, expect) in cases {
        // K = 36 f16 rows are 72 bytes: cp.async of 8 bytes, no tensor map.
        let dims = if label.contains("K = 36") {
            vec![("M", 1024), ("N", 512), ("K", 36)]
        } else if label.contains("1000x777x333") {
            vec![("M", 1000), ("N", 777), ("K", 333)]
        } else {
            aligned_dims()
        };
        let (k, src) = kernel_of(&text, types, &dims);
        let e = emit(&k, &EmitOptions { source: Some(src) })
            .unwrap_or_else(|err| panic!("{label}: {err}"));
        assert!(
            e.source.contains(expect),
            "{label}: expected `{expect}`\n{}",
            e.notes.join("\n")
        );
        out.push((label.to_string(), e));
    }
    out
}

#[test]
fn fast_variants_compile_without_spills() {
    let variants = fast_variants();
    let jobs: Vec<_> = variants
        .iter()
        .map(|(_, e)| (e.source.clone(), common::compile_options(e)))
        .collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let Some(results) = common::compile_or_skip(&jobs, threads) else {
        return;
    };
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for ((label, e), r) in variants.iter().zip(&results) {
        match r {
            Ok(c) => {
                let res = phobos_gpu::resources::of_compiled(c, &e.entry).expect("ptxas report");
                if res.spill_store_bytes + res.spill_load_bytes > 0 {
                    failures.push(format!(
                        "{label}: spills {}/{} bytes",
                        res.spill_store_bytes, res.spill_load_bytes
                    ));
                }
                report.push(format!(
                    "{label}: {} registers, spills {}/{} bytes, {} bytes dynamic shared memory, {} tensor maps",
                    res.registers,
                    res.spill_store_bytes,
                    res.spill_load_bytes,
                    e.dynamic_smem_bytes,
                    e.tma.len()
                ));
            }
            Err(err) => failures.push(format!(
                "{label}: {}\n{}\n{}",
                err.summary(),
                err.log,
                e.source
            )),
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    insta::assert_snapshot!(report.join("\n"));
}
