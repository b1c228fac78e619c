//! The GEMM tuning workflow end to end on the interpreter back end (no GPU): sizes files (the
//! seed's and malformed ones), element types and layouts bound end to end, flag mistakes, and
//! several workers sharing a search. Results files, `--check`, `--benchmark` and `--config`:
//! kbench_workflow_results.rs.

mod kbench_workflow_common;

use kbench_workflow_common::*;
use serde_json::Value;
use std::path::Path;

const INTERP: [&str; 2] = ["--backend", "interp"];

#[test]
fn the_seed_sizes_file_is_read_as_written() {
    // The seed's file as is: dims too large for the interpreter to time, so a dry run (space,
    // pruning, compiles, one interpreter check at a reduced size) of each problem.
    let s = Scratch::new("seed");
    let r = kbench(
        &s,
        &[
            &example("gemm_tuned.ph"),
            "--gemm_size_file",
            &data("seed_input.yaml"),
            "--autotune",
            "TILE_M=128 TILE_N=128 TILE_K=64 STAGES=3 GROUP_M=8",
            "--dry-run",
            // The entries' own `rowMajorA: 'T'` wins over the flag, with a warning per entry.
            "--col-a",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    for line in [1, 2] {
        let w = format!(
            "warning: {}:{line}: `rowMajorA: 'T'` overrides `--col-a`",
            data("seed_input.yaml")
        );
        assert!(r.stderr.contains(&w), "{w}\n{}", r.all());
    }
    assert!(
        r.stderr
            .contains("problem 1/2: M=4864 N=4096 K=8192 NT A=f16 B=f16 C=f32 ("),
        "{}",
        r.all()
    );
    assert!(r.stderr.contains("seed_input.yaml:2)"), "{}", r.all());
    let summary: Vec<&str> = r
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("summary (2 problems):"))
        .skip(1)
        .collect();
    assert_eq!(summary.len(), 2, "{}", r.all());
    assert!(
        summary[0].starts_with("  M=4864 N=4096 K=8192 NT"),
        "{}",
        summary[0]
    );
    assert!(
        summary[1].starts_with("  M=8192 N=8192 K=8192 NT"),
        "{}",
        summary[1]
    );
    // SPLIT_K is pruned by @where for problems this large (C has enough tiles).
    assert!(
        r.stderr.contains("SPLIT_K=2: violates @where(")
            && r.stderr
                .contains("cdiv(M, 128) * cdiv(N, 128) < 128) with M=4864"),
        "{}",
        r.stderr
    );
}

#[test]
fn problems_of_a_sizes_file_are_tuned_in_turn_with_a_summary_line_each() {
    let s = Scratch::new("sizes");
    let r = kbench(
        &s,
        &[
            &example("gemm_tuned.ph"),
            "--sizes",
            &data("small.yaml"),
            "--autotune",
            TUNED_PINS,
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stderr
            .contains("problem 1/2: M=48 N=40 K=64 NT A=f16 B=f16 C=f32"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("problem 2/2: M=33 N=17 K=32 NN A=bf16 B=bf16 C=f32"),
        "{}",
        r.stderr
    );
    // Each winner with the config string that reproduces it.
    let configs: Vec<&str> = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("config: "))
        .collect();
    assert_eq!(configs.len(), 2, "{}", r.all());
    assert!(
        configs[0].starts_with("M=48_N=40_K=64_TILE_M=32_TILE_N=32_TILE_K="),
        "{}",
        configs[0]
    );
    assert!(
        configs[0].ends_with("_A=f16-row_B=f16-col_C=f32"),
        "{}",
        configs[0]
    );
    assert!(
        configs[1].ends_with("_A=bf16-row_B=bf16-row_C=f32"),
        "{}",
        configs[1]
    );
    assert!(
        r.stdout.contains("reproduce: phobos-kbench "),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!("--config {}", configs[0])),
        "{}",
        r.stdout
    );
    let tail: Vec<&str> = r.stdout.lines().rev().take(3).collect();
    assert_eq!(tail[2], "summary (2 problems):", "{}", r.stdout);
    assert!(
        tail[1].starts_with("  M=48 N=40 K=64 NT") && tail[1].ends_with(configs[0]),
        "{}",
        tail[1]
    );
    assert!(
        tail[0].starts_with("  M=33 N=17 K=32 NN") && tail[0].ends_with(configs[1]),
        "{}",
        tail[0]
    );
}

#[test]
fn a_malformed_sizes_file_is_rejected_with_every_bad_line() {
    let s = Scratch::new("bad");
    let f = data("bad.yaml");
    let args = [
        example("gemm_tuned.ph"),
        "--sizes".into(),
        f.clone(),
        "--autotune".into(),
        format!("{TUNED_PINS} TILE_K=16 SPLIT_K=1"),
        INTERP[0].into(),
        INTERP[1].into(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = kbench(&s, &args);
    assert_eq!(r.code, 1, "{}", r.all());
    // Rendered diagnostics with file:line:col, then one line per bad entry.
    assert!(
        r.stderr.contains("error[E1004]: this problem has no K"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("bad.yaml:2:3"), "{}", r.stderr);
    assert!(
        r.stderr.contains("error[E1005]: M must be an integer"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("error[E1008]"), "{}", r.stderr);
    for line in [2, 3, 4, 5] {
        assert!(
            r.stderr
                .contains(&format!("bad.yaml:{line}: entry rejected: ")),
            "line {line}: {}",
            r.stderr
        );
    }
    // A type combination the kernel cannot take is a bad entry too, at its line.
    assert!(
        r.stderr
            .contains("bad.yaml:4: entry rejected: the kernel does not check for this problem"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("error: 4 bad entries in "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--skip-bad-entries"), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "nothing runs: {}", r.stdout);

    let mut skip = args.clone();
    skip.push("--skip-bad-entries");
    let r = kbench(&s, &skip);
    assert_eq!(r.code, 0, "{}", r.all());
    for line in [2, 3, 4, 5] {
        assert!(
            r.stderr
                .contains(&format!("bad.yaml:{line}: entry skipped: ")),
            "{}",
            r.stderr
        );
    }
    assert_eq!(
        r.stdout.matches("config: M=48_N=40_K=64_").count(),
        1,
        "{}",
        r.stdout
    );
}

#[test]
fn a_file_that_is_not_a_sizes_file_is_one_error_at_its_line() {
    let s = Scratch::new("not-sizes");
    for (file, code, at) in [
        ("mapping.yaml", "E1002", "mapping.yaml:1:1"),
        ("broken.yaml", "E1001", "broken.yaml:2"),
    ] {
        let r = kbench(
            &s,
            &[
                &example("gemm_tuned.ph"),
                "--sizes",
                &data(file),
                INTERP[0],
                INTERP[1],
            ],
        );
        assert_eq!(r.code, 1, "{}", r.all());
        assert!(r.stderr.contains(&format!("error[{code}]")), "{}", r.stderr);
        assert!(r.stderr.contains(at), "{}", r.stderr);
        assert!(r.stderr.contains("is not a sizes file"), "{}", r.stderr);
    }
    let r = kbench(
        &s,
        &[
            &example("gemm_tuned.ph"),
            "--sizes",
            &s.path("missing.yaml"),
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 1);
    assert!(r.stderr.starts_with("error: cannot read "), "{}", r.stderr);
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn element_types_and_layouts_bind_end_to_end() {
    let s = Scratch::new("bind");
    let kernel = example("gemm_tuned.ph");
    let pins = format!("{TUNED_PINS} TILE_K=16 SPLIT_K=1");
    let mut problems = std::collections::HashSet::new();
    for (dtype, name) in [
        ("fp16", "f16"),
        ("bf16", "bf16"),
        ("fp32", "f32"),
        ("tf32", "tf32"),
        ("fp8", "f8e4m3"),
        ("bf8", "f8e5m2"),
        ("int8", "i8"),
    ] {
        for (col_a, col_b) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut args = vec![
                kernel.as_str(),
                "-m",
                "33",
                "-n",
                "17",
                "-k",
                "48",
                "-dtype_a",
                dtype,
                "--dtype-b",
                dtype,
                "--autotune",
                &pins,
                "--json",
                INTERP[0],
                INTERP[1],
            ];
            if col_a {
                args.push("--col-a");
            }
            if col_b {
                args.push("-col_b");
            }
            let r = kbench(&s, &args);
            assert_eq!(r.code, 0, "{dtype} {col_a} {col_b}: {}", r.all());
            let j = &json_lines(&r.stdout)[0];
            assert_eq!(j["problem"]["types"]["TA"], name, "{j:#}");
            assert_eq!(j["problem"]["types"]["TB"], name, "{j:#}");
            assert_eq!(j["problem"]["types"]["TC"], "f32", "{j:#}");
            let order = |c: bool| if c { "col" } else { "row" };
            assert_eq!(j["gemm"]["layout_a"], order(col_a));
            assert_eq!(j["gemm"]["layout_b"], order(col_b));
            assert_eq!(j["problem"]["layouts"]["A"], order(col_a), "{j:#}");
            assert_eq!(
                j["summary"]["timed"], 1,
                "checked against the interpreter and timed: {j:#}"
            );
            let cs = j["winner"]["config_string"].as_str().unwrap();
            assert!(
                cs.ends_with(&format!(
                    "_A={name}-{}_B={name}-{}_C=f32",
                    order(col_a),
                    order(col_b)
                )),
                "{cs}"
            );
            problems.insert(j["problem"].to_string());
        }
    }
    // Each combination is its own problem in the store (its own key).
    assert_eq!(problems.len(), 28);
    let store = phobos_tune::Store::open(Path::new(&s.db())).unwrap();
    assert!(store.measurement_count().unwrap() >= 28);

    // A second run of one combination reuses its stored result; another does not.
    let base = [
        kernel.as_str(),
        "-m",
        "33",
        "-n",
        "17",
        "-k",
        "48",
        "--autotune",
        &pins,
        "--json",
        INTERP[0],
        INTERP[1],
    ];
    let again = kbench(
        &s,
        &[&base[..], &["--dtype-a", "bf16", "--dtype-b", "bf16"]].concat(),
    );
    assert_eq!(json_lines(&again.stdout)[0]["points"][0]["reused"], true);
    let c = kbench(
        &s,
        &[
            &base[..],
            &[
                "--dtype-a",
                "bf16",
                "--dtype-b",
                "bf16",
                "--dtype-c",
                "bf16",
            ],
        ]
        .concat(),
    );
    assert_eq!(c.code, 0, "{}", c.all());
    assert_eq!(json_lines(&c.stdout)[0]["points"][0]["reused"], false);
}

#[test]
fn flag_mistakes_are_one_clear_line() {
    let s = Scratch::new("flags");
    let kernel = example("gemm_tuned.ph");
    let cases: [(&[&str], &str); 6] = [
        (
            &["--check", "a.yaml", "--benchmark", "b.yaml"],
            "--check, --benchmark and --config are separate runs",
        ),
        (
            &["--sizes", "x.yaml", "-m", "4"],
            "leave out --dims and -m/-n/-k",
        ),
        (
            &["-m", "64", "-n", "64", "-k", "64", "--dtype-a", "fp4"],
            "--dtype-a: unknown element type `fp4`",
        ),
        (
            &["-m", "64", "-n", "64", "--col-a"],
            "a GEMM problem needs M, N and K",
        ),
        (&["--benchmark"], "--benchmark needs a file"),
        (
            &["--compare_wo_tuning"],
            "--compare_wo_tuning checks the file given with --gemm_size_file",
        ),
    ];
    for (args, want) in cases {
        let r = kbench(
            &s,
            &[&[kernel.as_str(), INTERP[0], INTERP[1]][..], args].concat(),
        );
        assert_eq!(r.code, 1, "{args:?}: {}", r.all());
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
    }
    // -o needs GEMM problems.
    let r = kbench(
        &s,
        &[
            &example("partial_sums.ph"),
            "--dims",
            "N=64",
            "-o",
            &s.path("o.yaml"),
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("a GEMM problem needs M, N and K") || r.stderr.contains("is not a GEMM"),
        "{}",
        r.stderr
    );
    // Conflicting operand types and --types.
    let r = kbench(
        &s,
        &[
            &kernel,
            "-m",
            "32",
            "-n",
            "32",
            "-k",
            "32",
            "--dtype-a",
            "bf16",
            "--types",
            "TA=f16",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("`TA` is bf16 for the problem's element types but f16 from --types"),
        "{}",
        r.stderr
    );
}

#[test]
fn two_workers_share_one_search() {
    let s = Scratch::new("two-workers");
    let r = kbench(
        &s,
        &[
            &example("gemm_tuned.ph"),
            "-m",
            "40",
            "-n",
            "40",
            "-k",
            "64",
            "--autotune",
            "TILE_M=32 TILE_N=32 GROUP_M=1",
            "--gpus",
            "0,1",
            INTERP[0],
            INTERP[1],
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
    assert!(r.stdout.contains("config: M=40_N=40_K=64_"), "{}", r.stdout);
    // The seed's spelling, and a list with a repeat.
    let r = kbench(
        &s,
        &[
            &example("gemm_tuned.ph"),
            "-m",
            "40",
            "-n",
            "40",
            "-k",
            "64",
            "--gpu_ids",
            "0,0",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("--gpus: GPU 0 is listed twice"),
        "{}",
        r.stderr
    );
}
