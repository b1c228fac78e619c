//! `phobos-kbench` end to end on the interpreter back end (no GPU needed): the search, its
//! output and its database; and the GPU tests (ignored without a GPU; scripts/gpu-check.sh runs
//! them). Bad input and damaged state: kbench_inputs.rs.

mod kbench_common;
mod kbench_workflow_common;

use kbench_common::*;
use serde_json::Value;
use std::path::Path;

#[test]
fn json_schema_of_an_interpreter_search() {
    let s = Scratch::new("json");
    let f = example("partial_sums.ph");
    let j = kbench_json(&s, &[&f, "--dims", "N=512", INTERP[0], INTERP[1]]);
    assert_eq!(j["kernel"], "partial_sums");
    assert_eq!(j["backend"], "interp");
    assert_eq!(j["timing"], "cpu interpreter wall clock (not GPU time)");
    assert_eq!(j["compiler"], "interp");
    assert_eq!(j["problem"]["dims"]["N"], 512);
    assert_eq!(j["default_point"]["U"], 1);
    let points = j["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    for p in points {
        assert!(p["point"]["U"].is_i64());
        assert!(
            ["ok", "duplicate"].contains(&p["status"].as_str().unwrap()),
            "{p}"
        );
        if p["status"] == "ok" {
            let t = &p["time"];
            assert!(t["median_ms"].as_f64().unwrap() > 0.0);
            assert!(t["min_ms"].as_f64().unwrap() <= t["max_ms"].as_f64().unwrap());
            assert!(t["reps"].as_u64().unwrap() >= 1);
        }
    }
    let w = &j["winner"];
    assert!(w["median_ms"].as_f64().unwrap() > 0.0);
    assert!(w["speedup_vs_default"].as_f64().unwrap() > 0.0);
    let repro = w["reproduce"].as_str().unwrap();
    assert!(repro.starts_with("phobos-kbench "), "{repro}");
    assert!(repro.contains("--kernel partial_sums --dims N=512 --backend interp --autotune \"U="));
    assert_eq!(j["summary"]["points"], 4);
}

#[test]
fn a_where_false_at_the_point_prunes_it() {
    // `@where(B != 32)` folds at the point: B=32 is pruned, like a `@where` false for the
    // problem, not reported as a failed compile.
    let s = Scratch::new("where_const");
    let r = kbench(
        &s,
        &[
            &data("where_const.ph"),
            "--dims",
            "N=128",
            "--backend",
            "interp",
            "--report",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("  pruned B=32: violates @where(B != 32)"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("compile-failed"), "{}", r.stderr);
    assert!(!r.stdout.contains("compile-failed"), "{}", r.stdout);
}

#[test]
fn text_output_has_space_lines_winner_and_summary() {
    let s = Scratch::new("text");
    let r = kbench(
        &s,
        &[
            &data("where.ph"),
            "--dims",
            "N=96",
            "--backend",
            "interp",
            "--report",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r
        .stderr
        .contains("backend: interp (times are the CPU interpreter's wall clock"));
    assert!(
        r.stderr
            .contains("scale: 3 points of 3 (B in [16, 32, 64])"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("  pruned B=64: violates @where("),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("(interp wall clock)"));
    assert!(
        r.stdout.contains("median ms"),
        "the --report table: {}",
        r.stdout
    );
    assert!(r.stdout.contains("best: B="));
    assert!(r.stdout.contains("reproduce: phobos-kbench "));
    assert!(
        r.stdout.ends_with("3 points: 2 timed, 1 pruned\n"),
        "{}",
        r.stdout
    );
}

#[test]
fn all_pinned_runs_one_configuration() {
    let s = Scratch::new("pins");
    let f = example("partial_sums.ph");
    let j = kbench_json(
        &s,
        &[
            &f,
            "--dims",
            "N=256",
            "--autotune",
            "U=2",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(j["points"].as_array().unwrap().len(), 1);
    assert_eq!(j["pins"]["U"], 2);
    assert_eq!(j["winner"]["config"], "U=2");
}

#[test]
fn unknown_pins_and_bad_dims_are_clear_errors() {
    let s = Scratch::new("errors");
    let f = example("gemm.ph");
    let r = kbench(
        &s,
        &[
            &f,
            "--dims",
            "M=64,N=64,K=64",
            "--autotune",
            "TILE_X=4",
            "--backend",
            "interp",
        ],
    );
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr.trim(),
        "error: `TILE_X` is not declared in @autotune (declared: TILE_M, TILE_N, TILE_K)"
    );
    let r = kbench(&s, &[&f, "--dims", "M=64,N=x", "--backend", "interp"]);
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr.trim(),
        "error: --dims: `N=x` is not a whole number"
    );
    let r = kbench(&s, &[&f, "--dims", "M=64,N=64,Q=3", "--backend", "interp"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("`Q` is not a runtime dim of `gemm` (its runtime dims: M, K, N)")
            || r.stderr.contains("`Q` is not a runtime dim of `gemm`"),
        "{}",
        r.stderr
    );
    let r = kbench(&s, &[&f, "--dims", "M=64,N=64", "--backend", "interp"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("no value for the runtime dim `K`"),
        "{}",
        r.stderr
    );
    let r = kbench(
        &s,
        &[&f, "-m", "64", "-n", "0", "-k", "64", "--backend", "interp"],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("the dim N=0 is out of range: a dim is 1 to 2147483647"),
        "{}",
        r.stderr
    );
}

#[test]
fn where_and_large_tiles_are_pruned_with_reasons() {
    let s = Scratch::new("prune");
    let j = kbench_json(
        &s,
        &[&data("where.ph"), "--dims", "N=96", INTERP[0], INTERP[1]],
    );
    let p = point(&j, "B=64");
    assert_eq!(p["status"], "pruned");
    assert!(
        p["reason"]
            .as_str()
            .unwrap()
            .starts_with("violates @where("),
        "{p}"
    );
    assert!(p["reason"].as_str().unwrap().contains("N=96"), "{p}");

    // N = 40: a span of 128 is more than twice the extent, 64 is not.
    let j = kbench_json(
        &s,
        &[&data("tiles.ph"), "--dims", "N=40", INTERP[0], INTERP[1]],
    );
    let p = point(&j, "B=128");
    assert_eq!(p["status"], "pruned");
    let reason = p["reason"].as_str().unwrap();
    assert!(
        reason.contains("tile of 128") && reason.contains("extent 40"),
        "{reason}"
    );
    assert!(reason.contains("--no-prune-large"), "{reason}");
    assert_eq!(point(&j, "B=64")["status"], "ok");

    let j = kbench_json(
        &s,
        &[
            &data("tiles.ph"),
            "--dims",
            "N=40",
            "--no-prune-large",
            "--retune",
            INTERP[0],
            INTERP[1],
        ],
    );
    assert_eq!(point(&j, "B=128")["status"], "ok");
}

#[test]
fn a_point_the_checker_rejects_is_skipped_and_logged() {
    let s = Scratch::new("compile-fail");
    let mut c = command(
        &s,
        &[
            &data("threads.ph"),
            "--dims",
            "N=96",
            "--backend",
            "interp",
            "--json",
        ],
    );
    let r = finish(c.output().unwrap());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    let p = point(&j, "T=2048");
    assert_eq!(p["status"], "compile-failed");
    assert!(
        p["reason"].as_str().unwrap().contains("2048 threads"),
        "{p}"
    );
    assert!(
        r.stderr.contains("T=2048") && r.stderr.contains("compile-failed"),
        "{}",
        r.stderr
    );
    assert_eq!(j["summary"]["timed"], 3);
}

#[test]
fn a_wrong_variant_is_reported_and_never_wins() {
    let s = Scratch::new("wrong");
    let j = kbench_json(
        &s,
        &[&data("wrong.ph"), "--dims", "N=300", INTERP[0], INTERP[1]],
    );
    let p = point(&j, "U=4");
    assert_eq!(p["status"], "wrong");
    let m = &p["outcome"]["detail"];
    assert_eq!(m["tensor"], "O");
    assert!(m["error"].as_f64().unwrap() > m["tolerance"].as_f64().unwrap());
    assert_ne!(j["winner"]["config"], "U=4");
}

#[test]
fn the_database_is_reused_unless_retune() {
    let s = Scratch::new("reuse");
    let f = example("partial_sums.ph");
    let args = [f.as_str(), "--dims", "N=256", INTERP[0], INTERP[1]];
    let first = kbench_json(&s, &args);
    assert!(first["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["reused"] == false));

    let r = kbench(&s, &[&args[..], &["--json"]].concat());
    assert_eq!(r.code, 0);
    assert!(
        r.stderr.contains("4 points from the results database"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("final round"),
        "no work on a second run: {}",
        r.stderr
    );
    let second: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(second["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["reused"] == true));
    assert_eq!(second["winner"]["config"], first["winner"]["config"]);
    assert_eq!(second["winner"]["median_ms"], first["winner"]["median_ms"]);

    let third = kbench_json(&s, &[&args[..], &["--retune"]].concat());
    assert!(third["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["reused"] == false));
    let store = phobos_tune::Store::open(Path::new(&s.db())).unwrap();
    assert!(store.measurement_count().unwrap() >= 8);
}

#[test]
fn two_concurrent_runs_share_one_database() {
    let s = Scratch::new("concurrent");
    let f = example("gemm.ph");
    let spawn = |m: &str| {
        command(
            &s,
            &[
                &f,
                "--dims",
                &format!("M={m},N=32,K=32"),
                "--backend",
                "interp",
                "--json",
                "--budget-ms",
                "1",
            ],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
    };
    let (a, b) = (spawn("32"), spawn("64"));
    for child in [a, b] {
        let r = finish(child.wait_with_output().unwrap());
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(!r.stderr.contains("locked"), "{}", r.stderr);
        let j: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(j["points"].as_array().unwrap().len(), 27);
    }
    let store = phobos_tune::Store::open(Path::new(&s.db())).unwrap();
    // Both runs' 27 outcomes each (pruned ones included) plus their final rounds.
    assert!(
        store.measurement_count().unwrap() >= 54,
        "{}",
        store.measurement_count().unwrap()
    );
}

#[test]
fn an_aborting_worker_is_replaced_and_the_point_recorded_crashed() {
    let s = Scratch::new("abort");
    let f = example("partial_sums.ph");
    let mut c = command(
        &s,
        &[&f, "--dims", "N=256", "--backend", "interp", "--json"],
    );
    c.env(phobos_tune::worker::ABORT_HOOK, "U=2");
    let r = finish(c.output().unwrap());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    let p = point(&j, "U=2");
    assert_eq!(p["status"], "crashed");
    assert!(p["reason"].as_str().unwrap().contains("SIGABRT"), "{p}");
    assert!(j["worker_restarts"].as_u64().unwrap() >= 1);
    assert_eq!(j["summary"]["timed"], 3);
    // SIGABRT from inside the worker is deterministic: the next run reuses it, and says so.
    let j = kbench_json(&s, &[&f, "--dims", "N=256", INTERP[0], INTERP[1]]);
    assert_eq!(point(&j, "U=2")["status"], "crashed");
    assert_eq!(point(&j, "U=2")["reused"], true);
    let r = kbench(&s, &[&f, "--dims", "N=256", INTERP[0], INTERP[1]]);
    assert!(
        r.stderr.contains(
            "crashed: the worker died (signal 6 SIGABRT) (stored: deterministic, --retune runs \
             it again)"
        ),
        "{}",
        r.stderr
    );
}

/// A stored verdict belongs to the code that earned it: once the generated code of the points
/// changes (here through the generator tag), the stored crash and times are not reused, and
/// the old rows stay in the database.
#[test]
fn results_of_other_generated_code_are_measured_again() {
    let s = Scratch::new("generator");
    let f = example("partial_sums.ph");
    let args = [
        f.as_str(),
        "--dims",
        "N=256",
        INTERP[0],
        INTERP[1],
        "--json",
    ];
    let mut c = command(&s, &args);
    c.env(phobos_tune::worker::ABORT_HOOK, "U=2");
    let r = finish(c.output().unwrap());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(point(&j, "U=2")["status"], "crashed");
    let rows = phobos_tune::Store::open(Path::new(&s.db()))
        .unwrap()
        .measurement_count()
        .unwrap();

    let mut c = command(&s, &args);
    c.env(phobos_tune::backend::GENERATOR_TAG_ENV, "changed");
    let r = finish(c.output().unwrap());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stderr.contains("from the results database"),
        "{}",
        r.stderr
    );
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(j["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["reused"] == false));
    assert_eq!(point(&j, "U=2")["status"], "ok");
    let store = phobos_tune::Store::open(Path::new(&s.db())).unwrap();
    assert!(store.measurement_count().unwrap() > rows, "old rows kept");

    // Under the same generated code again, the new results are reused.
    let mut c = command(&s, &args);
    c.env(phobos_tune::backend::GENERATOR_TAG_ENV, "changed");
    let j: Value = serde_json::from_str(&finish(c.output().unwrap()).stdout).unwrap();
    assert_eq!(point(&j, "U=2")["status"], "ok");
    assert_eq!(point(&j, "U=2")["reused"], true);
}

#[test]
fn a_hung_worker_is_retried_on_the_next_run_without_retune() {
    let s = Scratch::new("hang");
    let f = example("partial_sums.ph");
    let args = [&f, "--dims", "N=256", INTERP[0], INTERP[1]];
    let mut c = command(
        &s,
        &[&args[..], &["--json", "--job-timeout-s", "2"]].concat(),
    );
    c.env(phobos_tune::worker::HANG_HOOK, "U=4");
    let r = finish(c.output().unwrap());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(point(&j, "U=4")["status"], "crashed", "{j:#}");
    let r = kbench(&s, &[&args[..], &["--json"]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("U=4: the stored crash may have been transient (no answer within 2 s"),
        "{}",
        r.stderr
    );
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(point(&j, "U=4")["status"], "ok", "{j:#}");
    assert_eq!(point(&j, "U=4")["reused"], false);
    assert_eq!(j["summary"]["timed"], 4, "{j:#}");
}

#[test]
#[ignore = "needs a GPU"]
fn the_seed_gemm_tunes_on_the_gpu() {
    let s = Scratch::new("gpu-gemm");
    let j = kbench_json(&s, &[&example("gemm.ph"), "--dims", "M=512,N=512,K=512"]);
    assert_eq!(j["backend"], "cuda");
    let timed = j["summary"]["timed"].as_u64().unwrap();
    assert!(timed >= 20, "{j:#}");
    assert_eq!(j["summary"]["wrong"], 0, "{j:#}");
    assert!(j["winner"]["median_ms"].as_f64().unwrap() > 0.0);
    for p in j["points"].as_array().unwrap() {
        if p["status"] == "ok" {
            assert!(p["resources"]["registers"].as_u64().unwrap() > 0, "{p}");
            assert!(p["time"]["median_ms"].as_f64().unwrap() > 0.0, "{p}");
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn the_search_budget_is_small_and_the_winner_is_timed_at_the_full_one_on_the_gpu() {
    // The seed GEMM at 1024³, each point searched at 2 ms of launches, the leaders re-timed
    // until each has 50 ms (at least 30 interleaved rounds), far slower points stopped early.
    let s = Scratch::new("gpu-budget");
    let j = kbench_json(
        &s,
        &[
            &example("gemm.ph"),
            "--dims",
            "M=1024,N=1024,K=1024",
            "--search-budget-ms",
            "2",
            "--budget-ms",
            "50",
        ],
    );
    assert_eq!(j["summary"]["wrong"], 0, "{j:#}");
    let winner = j["winner"]["config"].as_str().unwrap();
    let w = j["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["config"] == winner)
        .unwrap();
    let (reps, median) = (
        w["time"]["reps"].as_u64().unwrap(),
        w["time"]["median_ms"].as_f64().unwrap(),
    );
    assert!(reps >= 30, "{w}");
    assert!(reps as f64 * median >= 45.0, "the full budget: {w}");
    assert_eq!(w["time"]["stopped_early"], false);
    assert!(j["phases"]["final_ms"].as_f64().unwrap() > 0.0, "{j:#}");
    for p in j["points"].as_array().unwrap() {
        if p["time"]["stopped_early"] == true {
            assert!(p["time"]["reps"].as_u64().unwrap() <= 3, "{p}");
            assert_ne!(p["config"], winner);
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn a_launch_the_driver_rejects_is_recorded_and_the_search_goes_on() {
    // grid.y over 65535 blocks: the driver refuses B = 1 and B = 2 at N = 131072.
    let s = Scratch::new("gpu-reject");
    let j = kbench_json(&s, &[&data("grid_y.ph"), "--dims", "N=131072"]);
    for bad in ["B=1", "B=2"] {
        let p = point(&j, bad);
        assert!(
            ["load-failed", "crashed"].contains(&p["status"].as_str().unwrap()),
            "{p}"
        );
    }
    assert_eq!(point(&j, "B=4")["status"], "ok");
    assert_eq!(j["winner"]["config"], "B=4");
}

#[test]
#[ignore = "needs a GPU"]
fn a_damaged_variant_cache_recovers_on_the_gpu() {
    let s = Scratch::new("gpu-damaged");
    let args = [&example("partial_sums.ph"), "--dims", "N=4096"];
    let first = kbench_json(&s, &args);
    let all_ran = |j: &Value| {
        j["points"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| ["ok", "duplicate"].contains(&p["status"].as_str().unwrap()))
    };
    assert!(all_ran(&first), "{first:#}");
    for e in std::fs::read_dir(s.0.join("phobos/variants")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|e| e == "bin") {
            let bytes = std::fs::read(&p).unwrap();
            std::fs::write(&p, &bytes[..bytes.len() / 3]).unwrap();
        }
    }
    // Without --retune the stored times are reused; with it every point is compiled again
    // from the damaged cache and timed, none refused by the driver.
    let r = kbench(&s, &[&args[..], &["--retune", "--json"]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("was damaged"), "{}", r.stderr);
    let j: Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(all_ran(&j), "{j:#}");
    assert!(j["winner"]["config"].is_string());
}
