//! `phobos-kbench export` on the interpreter back end: the seed GEMM tuned at two sizes, its
//! winners written as a config table, read back and queried for problems it has not seen.

mod kbench_workflow_common;

use kbench_workflow_common::*;
use phobos_tune::deploy::{ConfigTable, TABLE_FORMAT};
use phobos_tune::Problem;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn kbench(s: &Scratch, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(bin())
        .args(args)
        .env("XDG_CACHE_HOME", &s.0)
        .env_remove(phobos_tune::backend::GENERATOR_TAG_ENV)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn gemm(m: i64, n: i64, k: i64) -> Problem {
    Problem {
        dims: vec![("M".into(), m), ("N".into(), n), ("K".into(), k)],
        ..Default::default()
    }
}

#[test]
fn the_winners_of_every_problem_are_exported_and_the_nearest_is_picked() {
    let s = Scratch::new("export");
    let f = example("gemm.ph");
    let db = s.db();
    let mut winners = Vec::new();
    for dims in ["M=32,N=32,K=32", "M=128,N=32,K=32"] {
        let (code, out, err) = kbench(
            &s,
            &[
                &f,
                "--dims",
                dims,
                "--backend",
                "interp",
                "--budget-ms",
                "1",
                "--db",
                &db,
                "--json",
            ],
        );
        assert_eq!(code, 0, "{err}");
        let j: Value = serde_json::from_str(&out).unwrap();
        winners.push(j["winner"]["config"].as_str().unwrap().to_string());
    }

    let table = s.path("table.json");
    let kernel = format!("{f}:gemm");
    let (code, _, err) = kbench(
        &s,
        &["export", "--db", &db, "--kernel", &kernel, "-o", &table],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, format!("wrote {table} with 2 entries\n"));
    let t = ConfigTable::read(Path::new(&table)).unwrap();
    assert_eq!(t.format, TABLE_FORMAT);
    assert_eq!(t.kernel, "gemm");
    assert_eq!(t.phobos_version, phobos_tune::store::PHOBOS_VERSION);
    let mut got: Vec<(String, String)> = t
        .entries
        .iter()
        .map(|e| (e.problem.dims_text(), e.config.clone()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("M=128,N=32,K=32".to_string(), winners[1].clone()),
            ("M=32,N=32,K=32".to_string(), winners[0].clone()),
        ]
    );
    assert!(t.entries.iter().all(|e| e.backend == "interp"
        && e.codegen.is_some()
        && e.median_ms.is_some_and(|ms| ms > 0.0)));

    let pick = |p: &Problem| {
        let e = t.nearest(p, "interp", None);
        e.first().map(|e| e.problem.dim("M").unwrap())
    };
    assert_eq!(pick(&gemm(32, 32, 32)), Some(32));
    assert_eq!(pick(&gemm(100, 32, 32)), Some(128), "same bucket as 128");
    assert_eq!(pick(&gemm(20, 30, 30)), Some(32));
    assert_eq!(pick(&gemm(2000, 32, 32)), Some(128));
    assert!(t.nearest(&gemm(32, 32, 32), "cuda", None).is_empty());

    // The file without its kernel name works (one kernel); a missing database is named.
    let (code, _, err) = kbench(&s, &["export", "--db", &db, "--kernel", &f, "-o", &table]);
    assert_eq!(code, 0, "{err}");
    let none = s.path("none.sqlite");
    let (code, _, err) = kbench(&s, &["export", "--db", &none, "--kernel", &f, "-o", &table]);
    assert_eq!(code, 1);
    assert_eq!(err, format!("error: {none}: no such results database\n"));
}

#[test]
fn a_database_without_the_kernel_says_how_to_fill_it() {
    let s = Scratch::new("export-empty");
    let db = s.db();
    drop(phobos_tune::Store::open(Path::new(&db)).unwrap());
    let f = example("gemm.ph");
    let table = s.path("t.json");
    let (code, _, err) = kbench(&s, &["export", "--db", &db, "--kernel", &f, "-o", &table]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "error: {db} holds no finished run of `gemm` of this source under Phobos {}\n\
             hint: tune it first: phobos-kbench FILE --dims ... --db PATH\n",
            phobos_tune::store::PHOBOS_VERSION
        )
    );
    assert!(!Path::new(&table).exists());
}
