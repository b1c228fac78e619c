//! The GEMM workflow's results files on the interpreter back end (no GPU): `-o` then
//! `--check` and `--benchmark` on the file it wrote, a wrong stored configuration failing the
//! check, and the printed config string run with `--config`.

mod kbench_workflow_common;

use kbench_workflow_common::*;
use phobos_syntax::SourceFile;
use phobos_tune::workflow::parse_sizes;
use std::path::Path;

const INTERP: [&str; 2] = ["--backend", "interp"];

#[test]
fn results_round_trip_through_check_and_benchmark() {
    let s = Scratch::new("round-trip");
    let out = s.path("results.yaml");
    let kernel = example("gemm_tuned.ph");
    let r = kbench(
        &s,
        &[
            &kernel,
            "--sizes",
            &data("small.yaml"),
            "--autotune",
            TUNED_PINS,
            "-o",
            &out,
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(r.stderr.contains("wrote 2 problems to "), "{}", r.stderr);

    // The results file is a sizes file with each problem's best configuration.
    let text = std::fs::read_to_string(&out).unwrap();
    let sizes = parse_sizes(&SourceFile::new("results.yaml", text.clone())).unwrap();
    let items = sizes.items().unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert_eq!(items.len(), 2, "{text}");
    for item in &items {
        let c = item.config.as_ref().expect("a configuration per problem");
        assert_eq!(c.get("TILE_M"), Some(32));
        assert_eq!(c.0.len(), 6, "every name: {text}");
        assert!(item.problem.operands.dtype_a.is_some());
    }
    assert_eq!(
        (items[0].problem.m, items[0].problem.n, items[0].problem.k),
        (48, 40, 64)
    );
    assert_eq!(items[0].problem.trans(), "NT");

    // --check verifies each stored configuration without tuning.
    let measured = phobos_tune::Store::open(Path::new(&s.db()))
        .unwrap()
        .measurement_count()
        .unwrap();
    let r = kbench(&s, &[&kernel, "--check", &out, INTERP[0], INTERP[1]]);
    assert_eq!(r.code, 0, "{}", r.all());
    let lines: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("PASS")).collect();
    assert_eq!(lines.len(), 2, "{}", r.all());
    assert!(
        lines[0].contains("results.yaml:3  M=48 N=40 K=64 NT"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(" error "), "{}", lines[0]);
    // The example's own points are all too large for this small problem (its @where rules), so
    // the interpreter runs the stored configuration itself as the reference.
    assert!(
        lines[0].contains("against the interpreter at the same point (TILE_M=32 TILE_N=32"),
        "{}",
        lines[0]
    );
    assert!(
        r.stdout
            .ends_with("checked 2 configurations: 2 passed, 0 failed\n"),
        "{}",
        r.stdout
    );
    let after = phobos_tune::Store::open(Path::new(&s.db()))
        .unwrap()
        .measurement_count()
        .unwrap();
    assert_eq!(after, measured, "--check tunes nothing");

    // A variant that computes something else fails its check (the worker's corruption hook
    // changes what the first entry's configuration wrote), and the exit status says so.
    let pins = items[0].config.as_ref().unwrap().to_pins();
    let r = kbench_with(
        &s,
        &[&kernel, "--check", &out, INTERP[0], INTERP[1]],
        ("PHOBOS_KBENCH_CORRUPT_AT", &pins),
    );
    assert_ne!(r.code, 0, "{}", r.all());
    assert!(r.stdout.contains("FAIL"), "{}", r.all());

    // The seed's spelling: the file as --gemm_size_file and --compare_wo_tuning.
    let r = kbench(
        &s,
        &[
            &kernel,
            "--gemm_size_file",
            &out,
            "--compare_wo_tuning",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    assert_eq!(r.stdout.matches("PASS").count(), 2);

    // --benchmark prints the seed's table, labelled as interpreter timings.
    let r = kbench(&s, &[&kernel, "--benchmark", &out, INTERP[0], INTERP[1]]);
    assert_eq!(r.code, 0, "{}", r.all());
    let headers: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("Benchmarking"))
        .collect();
    assert_eq!(headers.len(), 2, "a table per element types: {}", r.stdout);
    assert!(
        headers[0].starts_with(
            "Benchmarking gemm_tuned with f16 inputs, f32 output on the CPU interpreter"
        ),
        "{}",
        headers[0]
    );
    assert!(headers[0].contains("(peak tflops: "), "{}", headers[0]);
    assert!(
        r.stdout
            .contains("trans    M     N     K    TFLOPS  Efficiency\n"),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains("cuBLAS"),
        "no cuBLAS column on the interpreter: {}",
        r.stdout
    );
    let rows = table_rows(&r.stdout);
    assert_eq!(rows.len(), 2, "{}", r.stdout);
    assert_eq!((rows[0].trans.as_str(), rows[0].dims), ("NT", (48, 40, 64)));
    assert_eq!((rows[1].trans.as_str(), rows[1].dims), ("NN", (33, 17, 32)));
    for row in &rows {
        assert!(row.tflops > 0.0 && row.tflops < 1.0, "{row:?}");
        // Each table's peak is its best row on the interpreter.
        assert_eq!(row.efficiency, 100.0, "{row:?}");
        assert_eq!(row.cublas, None);
    }

    // A given peak sets the efficiency.
    let r = kbench(
        &s,
        &[
            &kernel,
            "--benchmark",
            &out,
            "--peak",
            "1e-3",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stdout
            .contains("(peak tflops: 1.00e-3, given with --peak)"),
        "{}",
        r.stdout
    );
    let rows = table_rows(&r.stdout);
    let expected = (100.0 * rows[0].tflops / 1e-3).round();
    assert!((rows[0].efficiency - expected).abs() <= 1.0, "{rows:?}");
}

#[test]
fn check_fails_a_wrong_configuration_and_exits_1() {
    let s = Scratch::new("check-wrong");
    let f = s.file(
        "stored.yaml",
        "- {M: 40, N: 36, K: 64, config: {TILE: 32, WRONG: 1}}\n\
         - {M: 40, N: 36, K: 64, config: {TILE: 32, WRONG: 2}}\n\
         - {M: 40, N: 36, K: 64}\n\
         - {M: 40, N: 36, K: 32, config: {TILE: 32, RIGHT: 1}}\n",
    );
    let r = kbench(
        &s,
        &[&data("gemm_wrong.ph"), "--check", &f, INTERP[0], INTERP[1]],
    );
    assert_eq!(r.code, 1, "{}", r.all());
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(
        lines[0].starts_with("PASS  ") && lines[0].contains("stored.yaml:1  "),
        "{}",
        r.stdout
    );
    assert!(
        lines[0].contains("against the interpreter at the same point (TILE=32 WRONG=1)"),
        "{}",
        r.stdout
    );
    assert!(
        lines[1].starts_with("FAIL  ") && lines[1].contains("stored.yaml:2  "),
        "{}",
        r.stdout
    );
    assert!(lines[1].contains("WRONG=2  error "), "{}", lines[1]);
    assert!(
        lines[1].contains("against the interpreter at TILE=32 WRONG=1"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("FAIL  ") && lines[2].contains("no stored configuration"),
        "{}",
        r.stdout
    );
    assert!(
        lines[3].contains("`RIGHT` is not declared in @autotune"),
        "{}",
        r.stdout
    );
    assert_eq!(lines[4], "checked 4 configurations: 1 passed, 3 failed");
}

#[test]
fn the_printed_config_string_runs_with_config() {
    let s = Scratch::new("config");
    let kernel = example("gemm_tuned.ph");
    let r = kbench(
        &s,
        &[
            &kernel,
            "-m",
            "40",
            "-n",
            "24",
            "-k",
            "32",
            "--col-b",
            "--dtype-a",
            "bf16",
            "-dtype_b",
            "bf16",
            "--autotune",
            TUNED_PINS,
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    let config = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("config: "))
        .unwrap_or_else(|| panic!("{}", r.all()))
        .to_string();
    assert!(
        config.starts_with("M=40_N=24_K=32_TILE_M=32_TILE_N=32_TILE_K="),
        "{config}"
    );
    assert!(config.ends_with("_A=bf16-row_B=bf16-col_C=f32"), "{config}");

    let r = kbench(&s, &[&kernel, "--config", &config, INTERP[0], INTERP[1]]);
    assert_eq!(r.code, 0, "{}", r.all());
    let line = r.stdout.trim_end();
    assert_eq!(line.lines().count(), 1, "{}", r.all());
    assert!(line.starts_with(&format!("{config}  ok  ")), "{line}");
    assert!(
        line.contains(" ms ") && line.contains("(interp wall clock)"),
        "{line}"
    );
    assert!(line.contains("checked: error "), "{line}");
    // The seed's spelling, `--config_str`.
    let r = kbench(
        &s,
        &[&kernel, "--config_str", &config, INTERP[0], INTERP[1]],
    );
    assert_eq!(r.code, 0, "{}", r.all());

    // Malformed or unknown: one line, exit 1.
    let r = kbench(
        &s,
        &[
            &kernel,
            "--config",
            "M=40_N=24_K=32_TILE_M=3x",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("--config: at column 16: the value of `TILE_M` must be an integer, not `3x`"),
        "{}",
        r.stderr
    );
    let r = kbench(
        &s,
        &[
            &kernel,
            "--config",
            "M=40_N=24_K=32_TILE_Q=32",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("`TILE_Q` is not declared in @autotune"),
        "{}",
        r.stderr
    );
    // A configuration @where rules out for the problem says which rule.
    let r = kbench(
        &s,
        &[
            &kernel,
            "--config",
            "M=40_N=24_K=32_TILE_M=32_TILE_N=32_TILE_K=32_STAGES=3_GROUP_M=1_SPLIT_K=2",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("violates @where(K % 64 == 0) with K=32"),
        "{}",
        r.stderr
    );
    // A wrong configuration is reported as wrong.
    let r = kbench(
        &s,
        &[
            &data("gemm_wrong.ph"),
            "--config",
            "M=40_N=24_K=32_TILE=32_WRONG=2",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 1, "{}", r.all());
    assert!(
        r.stdout
            .starts_with("M=40_N=24_K=32_TILE=32_WRONG=2_A=f32-row_B=f32-row_C=f32  wrong: error "),
        "{}",
        r.stdout
    );
}
