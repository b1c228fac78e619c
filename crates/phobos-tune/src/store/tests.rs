use super::*;
use crate::types::{Failure, Limiter, Occupancy, Outcome, Problem, Stats};

fn key() -> RunKey {
    RunKey {
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
    s.record(Some(run), &key(), &timed("8", 2.0), Phase::Search)
        .unwrap();
    let failed = PointResult {
        outcome: Outcome::CompileFailed(Failure::from_log("error: too big\nlog")),
        resources: None,
        ..timed("16", 1.0)
    };
    s.record(Some(run), &key(), &failed, Phase::Search).unwrap();
    s.record(Some(run), &key(), &timed("8", 1.5), Phase::Final)
        .unwrap();
    s.finish_run(run, Some(&timed("8", 0.0).point)).unwrap();
    drop(s);

    // Reopening applies no migration twice and sees everything.
    let s = Store::open(&path).unwrap();
    let got = s.lookup(&key()).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].point.to_pins(), "T=8");
    assert_eq!(got[0].outcome.stats().unwrap().median_ms, 1.5);
    assert!(got[0].reused);
    assert_eq!(got[0].resources, timed("8", 1.5).resources);
    assert_eq!(got[1].outcome, failed.outcome);
    assert_eq!(s.last_winner(&key()).unwrap().as_deref(), Some("T=8"));
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
    ] {
        assert!(s.lookup(&k).unwrap().is_empty());
    }
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
                    s.record(Some(run), &k, &timed(&i.to_string(), 1.0), Phase::Search)
                        .unwrap();
                    // Readers interleave with writers, as a resuming run does.
                    if i % 50 == 0 {
                        s.lookup(&k).unwrap();
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
    assert_eq!(s.lookup(&key()).unwrap().len(), n as usize);
}
