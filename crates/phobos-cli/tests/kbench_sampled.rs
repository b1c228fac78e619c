//! `phobos-kbench` checks of problems no smaller problem can stand in for: the interpreter runs
//! a sample of the blocks (corners, edges, seeded random ones) and the check compares the
//! elements they wrote; `--json` and `--report` say what was compared.

#[path = "kbench_workflow_common/mod.rs"]
mod common;

use common::*;
use serde_json::Value;

fn kernel(name: &str) -> String {
    crate_dir()
        .join("tests/kbench")
        .join(name)
        .display()
        .to_string()
}

fn json(r: &Run) -> Value {
    assert_eq!(r.code, 0, "{}", r.all());
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.all()))
}

fn point<'a>(j: &'a Value, config: &str) -> &'a Value {
    j["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["config"] == config)
        .unwrap_or_else(|| panic!("no point {config} in {j:#}"))
}

const INTERP: [&str; 2] = ["--backend", "interp"];
/// N=65536 has 131072 tensor elements, over the interpreter's limit; every smaller problem
/// violates `@where(N % 1024 == 0)`. The grid has 683 blocks, the last one ragged.
const BIG: [&str; 2] = ["--dims", "N=65536"];
const SAMPLED: &str = "sampled 18 of 683 blocks (2 corners, 16 random), 1696 elements \
                       compared against the interpreter for N=65536";

#[test]
fn a_sampled_check_catches_a_wrong_ragged_block_and_passes_the_right_point() {
    let s = Scratch::new("sampled-json");
    let f = kernel("sampled.ph");
    let j = json(&kbench(
        &s,
        &[&f, BIG[0], BIG[1], INTERP[0], INTERP[1], "--json"],
    ));
    let wrong = point(&j, "U=4");
    assert_eq!(wrong["status"], "wrong", "{wrong:#}");
    assert_eq!(
        wrong["outcome"]["detail"]["reference"],
        "the interpreter at U=1 for N=65536 on 18 of its 683 blocks"
    );
    // U=1, U=2 and U=8 are one program: whichever compiled first is checked and timed, the
    // others are its duplicates.
    let oks: Vec<&Value> = j["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["status"] == "ok")
        .collect();
    assert_eq!(oks.len(), 1, "{j:#}");
    let ok = oks[0];
    for p in [ok, wrong] {
        let c = &p["check"];
        assert_eq!(c["reference"], "interpreter");
        assert_eq!(c["dims"]["N"], 65536);
        assert_eq!(c["scope"]["kind"], "sampled");
        let cov = &c["scope"]["coverage"];
        assert_eq!(
            [
                &cov["grid_blocks"],
                &cov["corners"],
                &cov["edges"],
                &cov["random"]
            ],
            [683, 2, 0, 16]
        );
        // Block 0 and the ragged last block (96 + 64 elements), then 16 whole tiles of 96.
        assert_eq!(c["scope"]["elements"], 96 + 64 + 16 * 96);
        assert_eq!(c["text"], SAMPLED);
    }
    assert_eq!(j["winner"]["config"], ok["config"]);
}

#[test]
fn the_report_says_what_each_check_compared() {
    let s = Scratch::new("sampled-report");
    let f = kernel("sampled.ph");
    let r = kbench(&s, &[&f, BIG[0], BIG[1], INTERP[0], INTERP[1], "--report"]);
    assert_eq!(r.code, 0, "{}", r.all());
    // Two of U=1, U=2 and U=8 are duplicates of the third (one program), not checked again.
    let want = format!("\nchecks:\n  {SAMPLED}: 2 points\nbest: U=");
    assert!(r.stdout.contains(&want), "{}", r.all());

    // A small problem is checked whole.
    let r = kbench(
        &s,
        &[&f, "--dims", "N=1024", INTERP[0], INTERP[1], "--report"],
    );
    assert_eq!(r.code, 0, "{}", r.all());
    let want = "\nchecks:\n  every output element (1024) compared against the interpreter for \
                N=1024: 2 points\n";
    assert!(r.stdout.contains(want), "{}", r.all());
}

#[test]
fn a_variant_corrupted_anywhere_fails_its_sampled_check() {
    let s = Scratch::new("sampled-corrupt");
    let f = kernel("sampled.ph");
    let r = kbench_with(
        &s,
        &[
            &f,
            BIG[0],
            BIG[1],
            INTERP[0],
            INTERP[1],
            "--json",
            "--autotune",
            "U=1",
        ],
        ("PHOBOS_KBENCH_CORRUPT_AT", "U=1"),
    );
    // No point passes: no winner, exit 1.
    assert_eq!(r.code, 1, "{}", r.all());
    let j: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.all()));
    assert_eq!(point(&j, "U=1")["status"], "wrong");
    assert_eq!(point(&j, "U=1")["check"]["scope"]["kind"], "sampled");
    assert_eq!(j["winner"], Value::Null);
}

#[test]
fn a_kernel_that_reads_what_it_writes_is_checked_whole() {
    let s = Scratch::new("sampled-in-place");
    let f = kernel("in_place.ph");
    // One tensor of 131072 elements: over the interpreter's limit.
    let r = kbench(
        &s,
        &[&f, "--dims", "N=131072", INTERP[0], INTERP[1], "--json"],
    );
    let j = json(&r);
    let p = point(&j, "");
    assert_eq!(p["status"], "ok");
    assert_eq!(p["check"]["scope"]["kind"], "whole");
    assert_eq!(p["check"]["scope"]["elements"], 131072);
    assert!(
        r.stderr.contains(
            "against the interpreter at full size: no smaller problem satisfies @where, and its \
             blocks may depend on each other"
        ),
        "{}",
        r.all()
    );
}

/// The same on the GPU: each variant runs the whole problem there, the interpreter a sample of
/// its blocks.
#[test]
#[ignore = "needs a GPU"]
fn gpu_a_sampled_check_catches_a_wrong_ragged_block() {
    let s = Scratch::new("sampled-gpu");
    let f = kernel("sampled.ph");
    let j = json(&kbench(&s, &[&f, BIG[0], BIG[1], "--json"]));
    assert_eq!(point(&j, "U=4")["status"], "wrong", "{j:#}");
    let timed: Vec<&Value> = j["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["status"] == "ok")
        .collect();
    assert!(!timed.is_empty(), "{j:#}");
    for p in timed {
        assert_eq!(p["check"]["text"], SAMPLED, "{p:#}");
    }
}
