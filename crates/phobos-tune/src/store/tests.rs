use super::*;
use crate::types::{
    Failure, Limiter, Mismatch, Occupancy, Outcome, PointResult, Problem, Resources, Stats,
};
use phobos_ir::Point;
use rusqlite::params;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

fn key() -> RunKey {
    RunKey {
        phobos_version: PHOBOS_VERSION.into(),
        kernel_hash: "abc".into(),
        kernel_name: "gemm".into(),
        problem: Problem {
            dims: vec![("M".into(), 64), ("N".into(), 64)],
            ..Default::default()
        },
        device: "cpu-interpreter".into(),
        driver: "none".into(),
        compiler: "interp".into(),
        backend: Backend::Interp,
    }
}

/// The generated code of `T=t` for every `t` in `ts`: `code-t`.
fn generated(ts: impl IntoIterator<Item = i64>) -> HashMap<String, String> {
    ts.into_iter()
        .map(|t| (format!("T={t}"), format!("code-{t}")))
        .collect()
}

fn timed(point: &str, ms: f64) -> PointResult {
    PointResult {
        point: Point(vec![("T".into(), point.parse().unwrap())]),
        outcome: Outcome::Timed(Stats::from_samples(&[ms, ms * 1.1, ms * 0.9], false).unwrap()),
        resources: Some(Resources {
            registers: 40,
            spill_store_bytes: 8,
            spill_load_bytes: 4,
            smem_bytes: 4096,
            threads: 256,
            occupancy: Some(Occupancy {
                active_warps_per_sm: 48,
                max_warps_per_sm: 64,
                blocks_per_sm: 6,
                limiter: Limiter::Registers,
            }),
            clusters: Some(phobos_gpu::ClusterResidency {
                dims: [1, 1, 4],
                resident: 30,
                launched: 32,
            }),
        }),
        flops: Some(1e9),
        bytes: None,
        reused: false,
    }
}

#[test]
fn round_trip_and_latest_wins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/kb.sqlite");
    let mut s = Store::open(&path).unwrap();
    assert_eq!(s.version().unwrap(), current_version());
    let run = s.begin_run(&key()).unwrap();
    s.record(
        Some(run),
        &key(),
        Some("code-8"),
        &timed("8", 2.0),
        Phase::Search,
    )
    .unwrap();
    let failed = PointResult {
        outcome: Outcome::CompileFailed(Failure::from_log("error: too big\nlog")),
        resources: None,
        ..timed("16", 1.0)
    };
    s.record(Some(run), &key(), Some("code-16"), &failed, Phase::Search)
        .unwrap();
    s.record(
        Some(run),
        &key(),
        Some("code-8"),
        &timed("8", 1.5),
        Phase::Final,
    )
    .unwrap();
    s.finish_run(run, Some((&timed("8", 0.0).point, Some("code-8"))))
        .unwrap();
    drop(s);

    // Reopening applies no migration twice and sees everything.
    let s = Store::open(&path).unwrap();
    let got = s.lookup(&key(), &generated([8, 16])).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].point.to_pins(), "T=8");
    assert_eq!(got[0].outcome.stats().unwrap().median_ms, 1.5);
    assert!(got[0].reused);
    assert_eq!(got[0].resources, timed("8", 1.5).resources);
    assert_eq!(got[1].outcome, failed.outcome);
    assert_eq!(
        s.last_winner(&key()).unwrap(),
        Some(StoredWinner {
            pins: "T=8".into(),
            codegen: Some("code-8".into())
        })
    );
    assert_eq!(s.measurement_count().unwrap(), 3);

    // Another device, compiler or problem sees nothing.
    for k in [
        RunKey {
            device: "H200".into(),
            ..key()
        },
        RunKey {
            compiler: "nvrtc 13.0".into(),
            ..key()
        },
        RunKey {
            problem: Problem::default(),
            ..key()
        },
        RunKey {
            phobos_version: "0.0.1".into(),
            ..key()
        },
    ] {
        assert!(s.lookup(&k, &generated([8, 16])).unwrap().is_empty());
    }
    assert_eq!(
        s.last_winner(&RunKey {
            phobos_version: "0.0.1".into(),
            ..key()
        })
        .unwrap(),
        None
    );
}

/// A point whose generated code changed is measured again: none of its stored results, the
/// time, the `wrong` verdict or the crash, is served, and they all stay in the file.
#[test]
fn results_of_another_generator_output_are_kept_but_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("kb.sqlite")).unwrap();
    let wrong = PointResult {
        outcome: Outcome::Wrong(Mismatch {
            tensor: "C".into(),
            error: 0.5,
            tolerance: 1e-3,
            reference: "the interpreter".into(),
        }),
        resources: None,
        ..timed("2", 1.0)
    };
    let crashed = PointResult {
        outcome: Outcome::Crashed("fault: illegal address".into()),
        resources: None,
        ..timed("3", 1.0)
    };
    s.record(
        None,
        &key(),
        Some("code-1"),
        &timed("1", 1.0),
        Phase::Search,
    )
    .unwrap();
    s.record(None, &key(), Some("code-2"), &wrong, Phase::Search)
        .unwrap();
    s.record(None, &key(), Some("code-3"), &crashed, Phase::Search)
        .unwrap();
    // A point the generator never saw (the checker refused it) is never reused either.
    s.record(None, &key(), None, &timed("4", 1.0), Phase::Search)
        .unwrap();
    let now = generated([1, 2, 3, 4]);
    let got: Vec<String> = s
        .lookup(&key(), &now)
        .unwrap()
        .iter()
        .map(|r| r.outcome.status().to_string())
        .collect();
    assert_eq!(got, ["ok", "wrong", "crashed"]);

    // The generator now emits other code for every point.
    let changed: HashMap<String, String> = now
        .iter()
        .map(|(p, c)| (p.clone(), format!("{c}-changed")))
        .collect();
    assert!(s.lookup(&key(), &changed).unwrap().is_empty());
    assert_eq!(s.measurement_count().unwrap(), 4, "kept for history");
    // A new measurement under the new code is served; the old rows still are not.
    s.record(
        None,
        &key(),
        Some("code-2-changed"),
        &timed("2", 3.0),
        Phase::Search,
    )
    .unwrap();
    let got = s.lookup(&key(), &changed).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].outcome.stats().unwrap().median_ms, 3.0);
}

/// A database of schema version 2 (before results carried their generator) is upgraded in
/// place: its rows are all kept, none of them is served.
#[test]
fn a_version_2_database_is_migrated_and_its_results_are_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.sqlite");
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,
                 applied_at TEXT NOT NULL DEFAULT 'x');",
        )
        .unwrap();
        for (version, sql) in &schema::MIGRATIONS[..2] {
            c.execute_batch(sql).unwrap();
            c.execute(
                "INSERT INTO schema_migrations (version) VALUES (?1)",
                [version],
            )
            .unwrap();
        }
        let k = key();
        c.execute(
            "INSERT INTO runs (kernel_hash, kernel_name, problem, device, driver, compiler,
                 backend, finished_at, winner)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'then', 'T=8')",
            params![
                k.kernel_hash,
                k.kernel_name,
                k.problem.key(),
                k.device,
                k.driver,
                k.compiler,
                k.backend.name()
            ],
        )
        .unwrap();
        // The row as version 2 wrote it: every key column but the generator.
        let r = timed("8", 1.0);
        c.execute(
            "INSERT INTO measurements (run_id, kernel_hash, kernel_name, point, point_json,
                 problem, dims, dtypes, layouts, device, driver, compiler, backend, phase,
                 status, median_ms, outcome_json)
             VALUES (1, ?1, ?2, 'T=8', ?3, ?4, '[]', '[]', '[]', ?5, ?6, ?7, ?8, 'search',
                 'timed', 1.0, ?9)",
            params![
                k.kernel_hash,
                k.kernel_name,
                serde_json::to_string(&r.point).unwrap(),
                k.problem.key(),
                k.device,
                k.driver,
                k.compiler,
                k.backend.name(),
                serde_json::to_string(&r.outcome).unwrap()
            ],
        )
        .unwrap();
    }
    let mut s = Store::open(&path).unwrap();
    assert_eq!(s.version().unwrap(), current_version());
    assert_eq!(s.measurement_count().unwrap(), 1, "the old row is kept");
    assert_eq!(s.measurement_rows().unwrap()[0].1, "T=8");
    assert!(s.lookup(&key(), &generated([8])).unwrap().is_empty());
    assert_eq!(s.last_winner(&key()).unwrap(), None);
    // New results under the new key are served beside it.
    s.record(
        None,
        &key(),
        Some("code-8"),
        &timed("8", 2.0),
        Phase::Search,
    )
    .unwrap();
    assert_eq!(s.lookup(&key(), &generated([8])).unwrap().len(), 1);
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.sqlite");
    drop(Store::open(&path).unwrap());
    let c = Connection::open(&path).unwrap();
    c.execute("INSERT INTO schema_migrations (version) VALUES (999)", [])
        .unwrap();
    drop(c);
    match Store::open(&path) {
        Err(StoreError::TooNew { found: 999, .. }) => {}
        other => panic!("expected TooNew, got {:?}", other.err()),
    }
}

#[test]
fn a_foreign_database_is_refused_briefly_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.sqlite");
    let c = Connection::open(&path).unwrap();
    for i in 0..8 {
        c.execute_batch(&format!(
            "CREATE TABLE t{i} (a INTEGER, b TEXT, c REAL, d BLOB, e TEXT NOT NULL DEFAULT 'x');"
        ))
        .unwrap();
    }
    drop(c);
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(&path).err().unwrap();
    let text = err.to_string();
    assert_eq!(
        text,
        format!(
            "{} is not a phobos results database (it holds the tables `t0`, `t1`, `t2`, `t3`, \
             `t4` and 3 more); it was left as it is: pass another file with --db",
            path.display()
        )
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file is unchanged"
    );
    let mode: String = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "not switched to WAL");
}

#[test]
fn a_write_that_waits_for_a_lock_tells_the_hook_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.sqlite");
    let told = Arc::new(std::sync::Mutex::new(Vec::<PathBuf>::new()));
    let hook: WaitHook = {
        let told = told.clone();
        Arc::new(move |p: &Path| told.lock().unwrap().push(p.to_path_buf()))
    };
    let mut s = Store::open_with(&path, Some(hook)).unwrap();
    s.begin_run(&key()).unwrap();
    assert!(told.lock().unwrap().is_empty(), "no wait, no word");
    let lock = Connection::open(&path).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        lock.execute_batch("COMMIT").unwrap();
    });
    s.begin_run(&key()).unwrap();
    release.join().unwrap();
    assert_eq!(*told.lock().unwrap(), vec![path.clone()]);
}

#[test]
fn wal_mode_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("kb.sqlite")).unwrap();
    let mode: String = s
        .conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

/// Two writers on one file, each with its own connection, committing row by row as a run
/// does: no row is lost and nobody sees "database is locked".
#[test]
fn concurrent_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.sqlite");
    let n = 200;
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut s = Store::open(&path).unwrap();
                let k = RunKey {
                    kernel_name: format!("k{w}"),
                    ..key()
                };
                let run = s.begin_run(&k).unwrap();
                for i in 0..n {
                    let code = format!("code-{i}");
                    let r = timed(&i.to_string(), 1.0);
                    s.record(Some(run), &k, Some(&code), &r, Phase::Search)
                        .unwrap();
                    // Readers interleave with writers, as a resuming run does.
                    if i % 50 == 0 {
                        s.lookup(&k, &generated(0..n)).unwrap();
                    }
                }
                s.finish_run(run, None).unwrap();
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.measurement_count().unwrap(), 4 * n);
    assert_eq!(
        s.lookup(&key(), &generated(0..n)).unwrap().len(),
        n as usize
    );
}
