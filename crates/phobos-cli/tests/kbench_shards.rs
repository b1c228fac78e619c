//! A tuning job split over processes on the interpreter back end (no GPU): four shards of the
//! seed GEMM, each into its own database, merged; the merged store holds every point once and
//! the unsharded command run against it measures nothing again. Shards from the schedulers'
//! variables, a shard killed and rerun, merges refused across setups. On the GPU (ignored
//! without one): two shards on the CUDA back end merged, the same checks.

mod kbench_workflow_common;

use kbench_workflow_common::*;
use phobos_tune::store::{Phase, RunKey};
use phobos_tune::{Backend, Outcome, PointResult, Problem, Stats, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Two small problems of the seed GEMM, one a ragged one.
const SIZES: &str = "- {M: 48, N: 40, K: 64}\n- {M: 33, N: 17, K: 32}\n";

/// `phobos-kbench` with the scratch folder as its cache and none of the schedulers' variables
/// (the tests set them where they mean to); each call names its own `--db`.
fn kbench_cmd(s: &Scratch, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.args(args).env("XDG_CACHE_HOME", &s.0);
    for v in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_COUNT",
        "JOB_COMPLETION_INDEX",
        "PHOBOS_KBENCH_ABORT_AT",
        "PHOBOS_KBENCH_HANG_AT",
    ] {
        c.env_remove(v);
    }
    c
}

fn run(c: &mut Command) -> Run {
    let o = c.output().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The tuning command of these tests, for a database.
fn tune_args<'a>(gemm: &'a str, sizes: &'a str, db: &'a str) -> Vec<&'a str> {
    let mut args = on_gpu(gemm, sizes, db);
    args.extend(["--backend", "interp"]);
    args
}

/// The same on the default back end, the GPU.
fn on_gpu<'a>(gemm: &'a str, sizes: &'a str, db: &'a str) -> Vec<&'a str> {
    vec![gemm, "--sizes", sizes, "--budget-ms", "5", "--db", db]
}

/// `(problem, point)` of every search-phase row of a database, with how often it is there.
fn searched(db: &str) -> BTreeMap<(String, String), usize> {
    let mut out = BTreeMap::new();
    for (problem, point, phase, _) in Store::open(Path::new(db))
        .unwrap()
        .measurement_rows()
        .unwrap()
    {
        if phase == "search" {
            *out.entry((problem, point)).or_insert(0) += 1;
        }
    }
    out
}

/// Rows that measured something (every status but `pruned`, which a run decides again).
fn measured_rows(db: &str) -> usize {
    Store::open(Path::new(db))
        .unwrap()
        .measurement_rows()
        .unwrap()
        .iter()
        .filter(|r| r.3 != "pruned")
        .count()
}

/// The size of the space, from the line `gemm: 27 points of 27 (...)`.
fn space_size(stderr: &str) -> usize {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("gemm: "))
        .unwrap_or_else(|| panic!("no space line in {stderr}"));
    line.split_whitespace()
        .nth(4)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

#[test]
fn four_shards_merged_hold_every_point_once_and_the_whole_run_measures_nothing_new() {
    let s = Scratch::new("shards");
    let gemm = example("gemm.ph");
    let sizes = s.file("sizes.yaml", SIZES);
    let dbs: Vec<String> = (0..4)
        .map(|i| s.path(&format!("shard-{i}.sqlite")))
        .collect();
    let mut space = 0;
    let mut owner: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, db) in dbs.iter().enumerate() {
        let shard = format!("{i}/4");
        let mut args = tune_args(&gemm, &sizes, db);
        args.extend(["--shard", &shard]);
        let r = run(&mut kbench_cmd(&s, &args));
        assert_eq!(r.code, 0, "{}", r.all());
        assert!(
            r.stderr.contains(&format!("shard {i}/4 (from --shard): ")),
            "{}",
            r.stderr
        );
        space = space_size(&r.stderr);
        for (key, n) in searched(db) {
            assert_eq!(n, 1, "{key:?} twice in shard {i}");
            if let Some(j) = owner.insert(key.clone(), i) {
                panic!("{key:?} in shards {j} and {i}");
            }
        }
    }
    // The shards cover both problems' spaces between them, each point once.
    assert_eq!(owner.len(), 2 * space, "{owner:?}");
    for i in 0..4 {
        let mine = owner.values().filter(|&&o| o == i).count();
        assert!(mine >= space / 2 - 1, "shard {i} got {mine} points");
    }

    let merged = s.path("merged.sqlite");
    let mut args = vec!["merge", merged.as_str()];
    args.extend(dbs.iter().map(String::as_str));
    let r = run(&mut kbench_cmd(&s, &args));
    assert_eq!(r.code, 0, "{}", r.all());
    let last = r.stdout.lines().last().unwrap_or_default().to_string();
    assert!(
        last.ends_with(&format!("of {} points in 2 problems", 2 * space)),
        "{}",
        r.stdout
    );
    let once = searched(&merged);
    assert_eq!(once.len(), 2 * space);
    assert!(once.values().all(|&n| n == 1), "{once:?}");
    assert_eq!(
        once.keys().collect::<BTreeSet<_>>(),
        owner.keys().collect::<BTreeSet<_>>()
    );

    // Merging again adds nothing.
    let rows = measured_rows(&merged);
    let r = run(&mut kbench_cmd(&s, &args));
    assert_eq!(r.code, 0, "{}", r.all());
    for (line, db) in r.stdout.lines().zip(&dbs) {
        assert!(
            line.starts_with(&format!("{db}: 0 measurements added (")),
            "{line}"
        );
    }
    assert_eq!(measured_rows(&merged), rows);

    // The unsharded command against the merged store: everything comes from it, and it writes
    // the results file.
    let results = s.path("results.yaml");
    let mut args = tune_args(&gemm, &sizes, &merged);
    args.extend(["-o", &results]);
    let r = run(&mut kbench_cmd(&s, &args));
    assert_eq!(r.code, 0, "{}", r.all());
    assert_eq!(
        r.stderr.matches("from the results database").count(),
        2,
        "{}",
        r.stderr
    );
    assert_eq!(measured_rows(&merged), rows, "{}", r.stderr);
    let written = std::fs::read_to_string(&results).unwrap();
    assert_eq!(
        written
            .lines()
            .filter(|l| l.contains("'config': {"))
            .count(),
        2,
        "{written}"
    );

    // --final-round re-times the leaders of each problem, in one process.
    let mut args = tune_args(&gemm, &sizes, &merged);
    args.push("--final-round");
    let r = run(&mut kbench_cmd(&s, &args));
    assert_eq!(r.code, 0, "{}", r.all());
    assert_eq!(
        r.stderr.matches("final round, interleaved: ").count(),
        2,
        "{}",
        r.stderr
    );
    assert!(measured_rows(&merged) > rows);
}

#[test]
fn shards_come_from_slurm_and_kubernetes_and_a_rerun_resumes() {
    let s = Scratch::new("shard-env");
    let gemm = example("gemm.ph");
    let sizes = s.file("sizes.yaml", SIZES);
    let db = s.path("shard.sqlite");
    // An array numbered 1 to 4: its second task is shard 1 of 4.
    let r = run(kbench_cmd(&s, &tune_args(&gemm, &sizes, &db))
        .env("SLURM_ARRAY_TASK_ID", "2")
        .env("SLURM_ARRAY_TASK_MIN", "1")
        .env("SLURM_ARRAY_TASK_COUNT", "4"));
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stderr.contains("shard 1/4 (from SLURM_ARRAY_TASK_ID): "),
        "{}",
        r.stderr
    );
    let first = searched(&db);
    let rows = measured_rows(&db);
    assert!(rows > 0);
    // The same shard as a Kubernetes pod, on the same database: nothing measured again.
    let mut args = tune_args(&gemm, &sizes, &db);
    args.extend(["--shards", "4"]);
    let r = run(kbench_cmd(&s, &args).env("JOB_COMPLETION_INDEX", "1"));
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stderr.contains("shard 1/4 (from JOB_COMPLETION_INDEX): "),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("from the results database"),
        "{}",
        r.stderr
    );
    assert_eq!(measured_rows(&db), rows);
    assert_eq!(
        searched(&db).keys().collect::<Vec<_>>(),
        first.keys().collect::<Vec<_>>()
    );
}

#[test]
fn a_shard_killed_mid_run_resumes_and_measures_each_point_once() {
    let s = Scratch::new("shard-kill");
    let gemm = example("gemm.ph");
    let sizes = s.file("sizes.yaml", SIZES);
    let db = s.path("shard.sqlite");
    let mut args = tune_args(&gemm, &sizes, &db);
    args.extend(["--shard", "0/2"]);
    let mut child = kbench_cmd(&s, &args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its first timed point is stored (or, on a fast machine, after it ended).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() || std::time::Instant::now() > deadline {
            break;
        }
        if Path::new(&db).exists() && measured_rows(&db) > 0 {
            child.kill().unwrap();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.wait().unwrap();
    let r = run(&mut kbench_cmd(&s, &args));
    assert_eq!(r.code, 0, "{}", r.all());
    assert!(
        r.stderr.contains("from the results database"),
        "{}",
        r.stderr
    );
    let counts = searched(&db);
    let measured: Vec<_> = Store::open(Path::new(&db))
        .unwrap()
        .measurement_rows()
        .unwrap()
        .into_iter()
        .filter(|r| r.2 == "search" && r.3 != "pruned")
        .map(|r| (r.0, r.1))
        .collect();
    let distinct: BTreeSet<_> = measured.iter().collect();
    assert_eq!(distinct.len(), measured.len(), "{measured:?}");
    assert!(!counts.is_empty());
}

fn key(device: &str) -> RunKey {
    RunKey {
        phobos_version: phobos_tune::store::PHOBOS_VERSION.into(),
        kernel_hash: "h".into(),
        kernel_name: "gemm".into(),
        problem: Problem {
            dims: vec![("M".into(), 64)],
            ..Default::default()
        },
        device: device.into(),
        driver: "d".into(),
        compiler: "nvrtc 13.0".into(),
        backend: Backend::Cuda,
    }
}

/// A database with one timed point measured on `device`.
fn one_row(path: &str, device: &str) {
    let mut st = Store::open(Path::new(path)).unwrap();
    let r = PointResult {
        point: phobos_ir::Point(vec![("T".into(), 1)]),
        outcome: Outcome::Timed(Stats::from_samples(&[1.0], false).unwrap()),
        resources: None,
        flops: None,
        bytes: None,
        reused: false,
    };
    st.record(None, &key(device), Some("code"), &r, Phase::Search)
        .unwrap();
}

#[test]
fn a_merge_across_devices_is_refused_unless_allowed() {
    let s = Scratch::new("merge-mixed");
    let (a, b, out) = (s.path("a.sqlite"), s.path("b.sqlite"), s.path("out.sqlite"));
    one_row(&a, "NVIDIA H200");
    one_row(&b, "NVIDIA A100");
    let r = run(&mut kbench_cmd(&s, &["merge", &out, &a, &b]));
    assert_eq!(r.code, 1, "{}", r.all());
    assert!(
        r.stderr.starts_with(
            "error: the databases were measured on 2 setups, whose times do not compare:\n"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "  {b}: NVIDIA A100 (driver d, compiler nvrtc 13.0, backend cuda)"
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("hint: ") && r.stderr.contains("--allow-mixed"));
    assert_eq!(measured_rows(&out), 0, "nothing merged");
    let r = run(&mut kbench_cmd(
        &s,
        &["merge", &out, &a, &b, "--allow-mixed"],
    ));
    assert_eq!(r.code, 0, "{}", r.all());
    assert_eq!(measured_rows(&out), 2);
    // An input that is not there, and the output given as an input.
    let r = run(&mut kbench_cmd(
        &s,
        &["merge", &out, &s.path("none.sqlite")],
    ));
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("none.sqlite: no such results database"),
        "{}",
        r.stderr
    );
    let r = run(&mut kbench_cmd(&s, &["merge", &out, &out]));
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("is the output and an input"),
        "{}",
        r.stderr
    );
}

/// `--strategy random --max-points N` with shards: every shard draws the same sample and tunes
/// its share of it, so the shards together search exactly the points the unsharded command
/// searches (N per problem in all, not N per shard), and that command against their merged
/// store measures nothing.
#[test]
fn shards_split_the_points_max_points_selects() {
    let s = Scratch::new("shards-max-points");
    let gemm = example("gemm.ph");
    let sizes = s.file("sizes.yaml", SIZES);
    let pick = ["--strategy", "random", "--max-points", "7", "--seed", "3"];
    let whole = s.path("whole.sqlite");
    let mut args = tune_args(&gemm, &sizes, &whole);
    args.extend(pick);
    let r = run(&mut kbench_cmd(&s, &args));
    assert_eq!(r.code, 0, "{}", r.all());
    let expected: BTreeSet<(String, String)> = searched(&whole).into_keys().collect();
    assert_eq!(expected.len(), 2 * 7, "{expected:?}");

    let dbs: Vec<String> = (0..3)
        .map(|i| s.path(&format!("shard-{i}.sqlite")))
        .collect();
    let mut union: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, db) in dbs.iter().enumerate() {
        let shard = format!("{i}/3");
        let mut args = tune_args(&gemm, &sizes, db);
        args.extend(pick);
        args.extend(["--shard", &shard]);
        let r = run(&mut kbench_cmd(&s, &args));
        assert_eq!(r.code, 0, "{}", r.all());
        for (key, n) in searched(db) {
            *union.entry(key).or_insert(0) += n;
        }
    }
    assert!(union.values().all(|&n| n == 1), "{union:?}");
    assert_eq!(
        union.into_keys().collect::<BTreeSet<_>>(),
        expected,
        "the shards' points are the unsharded selection"
    );

    let merged = s.path("merged.sqlite");
    let mut args = vec!["merge", merged.as_str()];
    args.extend(dbs.iter().map(String::as_str));
    let r = run(&mut kbench_cmd(&s, &args));
    assert_eq!(r.code, 0, "{}", r.all());
    let rows = measured_rows(&merged);
    let mut args = tune_args(&gemm, &sizes, &merged);
    args.extend(pick);
    let r = run(&mut kbench_cmd(&s, &args));
    assert_eq!(r.code, 0, "{}", r.all());
    assert_eq!(measured_rows(&merged), rows, "{}", r.stderr);
}

#[test]
fn shard_mistakes_are_one_clear_line() {
    let s = Scratch::new("shard-flags");
    let gemm = example("gemm.ph");
    let sizes = s.file("sizes.yaml", SIZES);
    let db = s.path("kb.sqlite");
    // Extra flags, a variable set, the start of the error.
    type Case<'a> = (&'a [&'a str], Option<(&'a str, &'a str)>, &'a str);
    let cases: [Case; 5] = [
        (
            &["--shard", "4/4"],
            None,
            "error: --shard: shard 4 of 4 does not exist: the shards of 4 are 0 to 3",
        ),
        (
            &["--shard", "0/5000"],
            None,
            "error: --shard: 5000 shards are more than the 4096 a job may be split into",
        ),
        (
            &[],
            Some(("JOB_COMPLETION_INDEX", "0")),
            "error: JOB_COMPLETION_INDEX is set but the number of shards is not: pass --shards N",
        ),
        (
            &["--shard", "0/2", "-o", "r.yaml"],
            None,
            "error: -o writes the best configurations, but shard 0/2 (--shard) sees only its share",
        ),
        (
            &["--shard", "0/2", "--check", "r.yaml"],
            None,
            "error: --shard splits a tuning job; --check, --benchmark and --config run whole",
        ),
    ];
    for (extra, var, expected) in cases {
        let mut args = tune_args(&gemm, &sizes, &db);
        args.extend(extra);
        if extra.contains(&"--check") {
            args.retain(|a| *a != "--sizes" && *a != sizes.as_str());
        }
        let mut c = kbench_cmd(&s, &args);
        if let Some((k, v)) = var {
            c.env(k, v);
        }
        let r = run(&mut c);
        assert_eq!(r.code, 1, "{extra:?}: {}", r.all());
        assert!(r.stderr.starts_with(expected), "{extra:?}: {}", r.stderr);
    }
}

#[test]
#[ignore = "needs a GPU"]
fn two_shards_on_the_gpu_merge_into_the_store_of_one_run() {
    let s = Scratch::new("shards-gpu");
    let gemm = example("gemm.ph");
    let sizes = s.file(
        "sizes.yaml",
        "- {M: 512, N: 512, K: 512}\n- {M: 1024, N: 256, K: 512}\n",
    );
    let dbs = [s.path("shard-0.sqlite"), s.path("shard-1.sqlite")];
    for (i, db) in dbs.iter().enumerate() {
        let shard = format!("{i}/2");
        let mut args = on_gpu(&gemm, &sizes, db);
        args.extend(["--shard", &shard]);
        let r = run(&mut kbench_cmd(&s, &args));
        assert_eq!(r.code, 0, "{}", r.all());
    }
    let merged = s.path("merged.sqlite");
    let r = run(&mut kbench_cmd(&s, &["merge", &merged, &dbs[0], &dbs[1]]));
    assert_eq!(r.code, 0, "{}", r.all());
    let once = searched(&merged);
    assert!(once.values().all(|&n| n == 1), "{once:?}");
    let (a, b) = (searched(&dbs[0]), searched(&dbs[1]));
    assert_eq!(once.len(), a.len() + b.len());
    let rows = measured_rows(&merged);
    let results = s.path("results.yaml");
    let mut args = on_gpu(&gemm, &sizes, &merged);
    args.extend(["-o", &results]);
    let r = run(&mut kbench_cmd(&s, &args));
    assert_eq!(r.code, 0, "{}", r.all());
    assert_eq!(space_size(&r.stderr) * 2, once.len(), "{}", r.stderr);
    assert_eq!(measured_rows(&merged), rows, "{}", r.stderr);
}

/// Points a problem's `@where` rules out cost nothing: the shards share the points that run
/// (here the half with SPLIT = 1), not the whole list with the pruned ones dealt like the rest.
#[test]
fn shards_share_the_points_that_run_not_the_pruned_ones() {
    let s = Scratch::new("shard-pruned");
    let kernel = s.file(
        "scale.ph",
        "@autotune(BLOCK in [64, 1024], SPLIT in [1, 2])\n\
         @where(SPLIT == 1)\n\
         @launch(64)\n\
         kernel scale(a: f32, X: tensor<f32>[N], Y: tensor<f32>[N]) {\n\
         \x20 let i = ctx.block.x * BLOCK\n\
         \x20 Y[i :+ BLOCK] = a * X[i :+ BLOCK]\n\
         }\n",
    );
    let mut ran = Vec::new();
    for i in 0..2 {
        let db = s.path(&format!("shard-{i}.sqlite"));
        let shard = format!("{i}/2");
        let r = run(kbench_cmd(&s, &[]).args([
            &kernel,
            "--dims",
            "N=1000",
            "--arg",
            "a=2",
            "--backend",
            "interp",
            "--budget-ms",
            "5",
            "--db",
            &db,
            "--shard",
            &shard,
        ]));
        assert_eq!(r.code, 0, "shard {i}: {}", r.stderr);
        let timed = Store::open(Path::new(&db))
            .unwrap()
            .measurement_rows()
            .unwrap()
            .into_iter()
            .filter(|r| r.2 == "search" && r.3 == "ok")
            .count();
        ran.push(timed);
    }
    // BLOCK in [64, 1024] is 5 values: 5 points run in all, 3 and 2 (or 2 and 3).
    assert_eq!(ran.iter().sum::<usize>(), 5, "{ran:?}");
    assert!(ran.iter().all(|&n| n >= 2), "unbalanced shards: {ran:?}");
}
