//! The GEMM workflow on the GPU (ignored without one; run with `--ignored` on the GPU
//! machine): `--check` and `--config` against cuBLAS, `--benchmark` with its cuBLAS column and
//! measured peak, `--gpus 0,1` on two GPUs.

mod kbench_workflow_common;

use kbench_workflow_common::*;
use phobos_syntax::SourceFile;
use phobos_tune::workflow::parse_sizes;
use std::path::Path;

/// Searches narrow enough for a quick run (gpu-check.sh gives a test binary three minutes):
/// the block tile and pipeline fixed; TILE_K and SPLIT_K, or GROUP_M and SPLIT_K, searched.
const CHECK_PINS: &str = "TILE_M=128 TILE_N=128 STAGES=3 GROUP_M=1";
const BENCH_PINS: &str = "TILE_M=128 TILE_N=128 TILE_K=64 STAGES=3";

fn tune_to(s: &Scratch, sizes: &str, out: &str, pins: &str) {
    let r = kbench(
        s,
        &[
            &example("gemm_tuned.ph"),
            "--sizes",
            sizes,
            "--autotune",
            pins,
            "--budget-ms",
            "20",
            "-o",
            out,
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
}

#[test]
#[ignore = "needs a GPU"]
fn check_and_config_compare_with_cublas_on_the_gpu() {
    let s = Scratch::new("gpu-check");
    let sizes = s.file(
        "in.yaml",
        "- {'M': 512, 'N': 384, 'K': 256, 'rowMajorA': 'T', 'rowMajorB': 'N'}\n\
         - {M: 256, N: 256, K: 512, dtype_a: bf16, dtype_b: bf16}\n\
         - {M: 256, N: 512, K: 256, rowMajorB: 'N', dtype_a: fp8, dtype_b: fp8, dtype_c: f32}\n\
         - {M: 128, N: 128, K: 128, dtype_a: bf8, dtype_b: bf8}\n",
    );
    let out = s.path("out.yaml");
    tune_to(&s, &sizes, &out, CHECK_PINS);
    let text = std::fs::read_to_string(&out).unwrap();
    let items = parse_sizes(&SourceFile::new("out.yaml", text.clone())).unwrap();
    assert!(
        items.items().unwrap().iter().all(|i| i.config.is_some()),
        "{text}"
    );

    let kernel = example("gemm_tuned.ph");
    let r = kbench(&s, &[&kernel, "--check", &out]);
    assert_eq!(r.code, 0, "{}", r.all());
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{}", r.all());
    assert!(
        lines[0].starts_with("PASS") && lines[0].contains("against cuBLAS for "),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("PASS") && lines[1].contains("against cuBLAS for "),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("PASS") && lines[2].contains("against cuBLASLt for "),
        "{}",
        lines[2]
    );
    // cuBLAS has no e5m2 GEMM: the interpreter is the reference.
    assert!(
        lines[3].starts_with("PASS") && lines[3].contains("against the interpreter at "),
        "{}",
        lines[3]
    );
    assert_eq!(lines[4], "checked 4 configurations: 4 passed, 0 failed");

    // The cuBLAS comparison can fail: a corrupted output of the first entry's configuration.
    let pins = items.items().unwrap()[0].config.as_ref().unwrap().to_pins();
    let r = kbench_with(
        &s,
        &[&kernel, "--check", &out],
        ("PHOBOS_KBENCH_CORRUPT_AT", &pins),
    );
    assert_ne!(r.code, 0, "{}", r.all());
    let first = r.stdout.lines().next().unwrap_or("");
    assert!(
        first.starts_with("FAIL") && first.contains("against cuBLAS for "),
        "{}",
        r.all()
    );

    // The first winner's config string runs on its own.
    let config = text
        .lines()
        .find_map(|l| l.split("  # ").nth(1))
        .expect("a config string comment")
        .to_string();
    let r = kbench(&s, &[&kernel, "--config", &config]);
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stdout.starts_with(&format!("{config}  ok  ")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("TFLOP/s") || r.stdout.contains("GFLOP/s"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("against cuBLAS for M=512"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains(" regs "), "{}", r.stdout);
}

#[test]
#[ignore = "needs a GPU"]
fn benchmark_prints_the_seed_table_with_cublas_and_a_measured_peak() {
    let s = Scratch::new("gpu-bench");
    let sizes = s.file(
        "in.yaml",
        "- {'M': 1024, 'N': 1024, 'K': 1024, 'rowMajorA': 'T', 'rowMajorB': 'N'}\n\
         - {'M': 2048, 'N': 1024, 'K': 512, 'rowMajorA': 'T', 'rowMajorB': 'T'}\n",
    );
    let out = s.path("out.yaml");
    tune_to(&s, &sizes, &out, BENCH_PINS);
    let kernel = example("gemm_tuned.ph");
    let r = kbench(&s, &[&kernel, "--benchmark", &out]);
    assert_eq!(r.code, 0, "{}", r.all());
    let header = r.stdout.lines().next().unwrap();
    assert!(
        header.starts_with("Benchmarking gemm_tuned with f16 inputs, f32 output (peak tflops: "),
        "{header}"
    );
    assert!(header.contains("cuBLAS"), "the peak is cuBLAS's: {header}");
    assert!(
        r.stdout
            .contains("trans    M     N     K    TFLOPS  Efficiency    cuBLAS\n"),
        "{}",
        r.stdout
    );
    let rows = table_rows(&r.stdout);
    assert_eq!(rows.len(), 2, "{}", r.stdout);
    assert_eq!(
        (rows[0].trans.as_str(), rows[0].dims),
        ("NT", (1024, 1024, 1024))
    );
    assert_eq!(
        (rows[1].trans.as_str(), rows[1].dims),
        ("NN", (2048, 1024, 512))
    );
    for row in &rows {
        assert!(row.tflops > 1.0, "{row:?}");
        assert!(row.efficiency > 0.0 && row.efficiency < 150.0, "{row:?}");
        assert!(row.cublas.is_some_and(|c| c > 1.0), "{row:?}");
    }
    // The peak was measured once and stored; the next benchmark reads it back.
    let store = phobos_tune::Store::open(Path::new(&s.db())).unwrap();
    drop(store);
    let again = kbench(&s, &[&kernel, "--benchmark", &out]);
    assert_eq!(again.code, 0, "{}", again.all());
    let h2 = again.stdout.lines().next().unwrap();
    let peak = |h: &str| {
        h.split("peak tflops: ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_string()
    };
    assert!(h2.contains("cuBLAS"), "{h2}");
    // The stored square peak is the same number unless an entry's cuBLAS beat it.
    if header.contains("4096x4096x4096") && h2.contains("4096x4096x4096") {
        assert_eq!(peak(header), peak(h2));
    }
    // A given peak replaces it.
    let r = kbench(&s, &[&kernel, "--benchmark", &out, "--peak", "1000"]);
    assert!(
        r.stdout
            .contains("(peak tflops: 1000.00, given with --peak)"),
        "{}",
        r.stdout
    );
}

/// On a machine with one GPU, scripts/gpu-check.sh leaves this test out (`--skip`) and says so
/// in its summary; run anywhere else, it fails rather than pass without testing anything.
#[test]
#[ignore = "needs a GPU (two)"]
fn two_gpus_share_one_search() {
    let n = phobos_gpu::device_count().unwrap_or(0);
    assert!(
        n >= 2,
        "--gpus 0,1 needs 2 GPUs and {n} is visible: run this test on a two-GPU machine"
    );
    let s = Scratch::new("gpu-two");
    let r = kbench(
        &s,
        &[
            &example("gemm_tuned.ph"),
            "-m",
            "1024",
            "-n",
            "1024",
            "-k",
            "1024",
            "--autotune",
            "TILE_M=128 STAGES=3 GROUP_M=1",
            "--budget-ms",
            "20",
            "--gpus",
            "0,1",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stderr.contains("[gpu 0]") && r.stderr.contains("[gpu 1]"),
        "{}",
        r.stderr
    );
    let store = phobos_tune::Store::open(Path::new(&s.db())).unwrap();
    let rows = store.rows_per_ordinal().unwrap();
    let ordinals: Vec<Option<u32>> = rows.iter().map(|r| r.0).collect();
    assert!(
        ordinals.contains(&Some(0)) && ordinals.contains(&Some(1)),
        "{rows:?}"
    );
    assert!(
        r.stdout.contains("config: M=1024_N=1024_K=1024_"),
        "{}",
        r.stdout
    );
}
