//! Worker isolation with real processes: this test binary re-executes itself as the worker
//! (see `worker_entry`), and the test hooks make it abort or hang on a chosen point.

mod common;

use common::*;
use phobos_tune::worker::{Executor, ABORT_HOOK, HANG_HOOK};
use phobos_tune::*;
use std::time::Duration;

/// Not a test of its own: the body of the worker process when started with `WORKER_ENV`.
#[test]
fn worker_entry() {
    maybe_serve();
}

fn outcome<'a>(r: &'a Report, pins: &str) -> &'a Outcome {
    &r.points
        .iter()
        .find(|p| p.point.to_pins() == pins)
        .unwrap()
        .outcome
}

#[test]
fn an_aborting_worker_is_replaced_and_the_search_goes_on() {
    let spec = MockSpec::default();
    let mut w = worker(&spec, &[(ABORT_HOOK, "U=2")], Duration::from_secs(60));
    assert_eq!(w.device().name, "mock-device");
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.sqlite")).unwrap();
    let (r, _, _) = run(
        &spec,
        &mut w,
        Some(&mut store),
        &problem(64),
        &[],
        &settings(),
    );
    let r = r.unwrap();
    match outcome(&r, "U=2") {
        Outcome::Crashed(what) => {
            assert!(what.contains("SIGABRT"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.summary().timed, 3, "{}", r.summary().line());
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=4");
    assert!(w.restarts() >= 1);
    assert_eq!(r.worker_restarts, w.restarts());
    // Everything, the crash included, is in the store.
    let current = generated(&spec);
    assert_eq!(store.lookup(&run_key(&w), &current).unwrap().len(), 4);
}

fn run_key(w: &dyn Executor) -> store::RunKey {
    store::RunKey {
        phobos_version: store::PHOBOS_VERSION.into(),
        kernel_hash: "mock-hash".into(),
        kernel_name: "mock".into(),
        problem: problem(64),
        device: w.device().name.clone(),
        driver: w.device().driver.clone(),
        compiler: "mock 1".into(),
        backend: Backend::Interp,
    }
}

#[test]
fn a_hung_worker_is_killed_after_the_job_timeout() {
    let spec = MockSpec::default();
    let mut w = worker(&spec, &[(HANG_HOOK, "U=8")], Duration::from_secs(2));
    let (r, _, _) = run(&spec, &mut w, None, &problem(64), &[], &settings());
    let r = r.unwrap();
    match outcome(&r, "U=8") {
        Outcome::Crashed(what) => assert!(what.contains("no answer within 2 s"), "{what}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(r.summary().timed, 3);
}

#[test]
fn a_worker_that_cannot_set_up_says_why() {
    let exe = std::env::current_exe().unwrap();
    let err = worker::WorkerProcess::start(
        move || {
            let mut c = std::process::Command::new(&exe);
            c.args(["--exact", "worker_entry", "--nocapture"])
                .env(WORKER_ENV, "1");
            c
        },
        worker::Setup {
            source_name: "bad".into(),
            source_text: "not a spec".into(),
            kernel: "mock".into(),
            backend: Backend::Interp,
            gpu: 0,
            reference: None,
        },
        Duration::from_secs(10),
    )
    .err()
    .unwrap();
    assert!(matches!(err, worker::WorkerError::Setup(_)), "{err:?}");
}

/// Runs the mock kernel against the store at `path` on a fresh worker with `hooks`.
fn run_stored(spec: &MockSpec, path: &std::path::Path, hooks: &[(&str, &str)]) -> Report {
    let mut w = worker(spec, hooks, Duration::from_secs(2));
    let mut store = Store::open(path).unwrap();
    let (r, _, _) = run(
        spec,
        &mut w,
        Some(&mut store),
        &problem(64),
        &[],
        &settings(),
    );
    r.unwrap()
}

fn result<'a>(r: &'a Report, pins: &str) -> &'a PointResult {
    r.points.iter().find(|p| p.point.to_pins() == pins).unwrap()
}

#[test]
fn a_gpu_the_worker_could_not_open_is_no_fault_of_the_point() {
    // How a job answers when the worker's context could not be created (the GPU back end's
    // worker describes its device first, then creates the context while the search compiles).
    let what = format!("fault: {OPEN_FAILED}: CUDA_ERROR_DEVICE_BUSY");
    assert!(crash_is_transient(&what));
    assert!(!crash_is_transient(&format!("{CRASHED_AGAIN}{what}")));
}

#[test]
fn a_transient_crash_is_retried_once_on_the_next_run() {
    let spec = MockSpec::default();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.sqlite");
    // A hang (killed at the timeout) may not happen again: the next run tries the point again.
    let first = run_stored(&spec, &path, &[(HANG_HOOK, "U=8")]);
    assert!(matches!(outcome(&first, "U=8"), Outcome::Crashed(w) if crash_is_transient(w)));
    let healed = run_stored(&spec, &path, &[]);
    let r = result(&healed, "U=8");
    assert!(!r.reused, "{r:?}");
    assert!(matches!(r.outcome, Outcome::Timed(_)), "{:?}", r.outcome);
    assert_eq!(healed.summary().timed, 4, "{}", healed.summary().line());

    // A point that hangs again after its retry keeps its crash, saying so.
    let path = dir.path().join("again.sqlite");
    run_stored(&spec, &path, &[(HANG_HOOK, "U=8")]);
    let again = run_stored(&spec, &path, &[(HANG_HOOK, "U=8")]);
    match &result(&again, "U=8").outcome {
        Outcome::Crashed(w) => {
            assert!(w.starts_with(CRASHED_AGAIN), "{w}");
            assert!(!crash_is_transient(w));
        }
        other => panic!("{other:?}"),
    }
    let kept = run_stored(&spec, &path, &[]);
    let r = result(&kept, "U=8");
    assert!(
        r.reused && matches!(r.outcome, Outcome::Crashed(_)),
        "{r:?}"
    );
}

#[test]
fn a_deterministic_crash_is_reused_with_its_reason() {
    let spec = MockSpec::default();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.sqlite");
    run_stored(&spec, &path, &[(ABORT_HOOK, "U=2")]);
    let second = run_stored(&spec, &path, &[]);
    let r = result(&second, "U=2");
    assert!(r.reused, "{r:?}");
    match &r.outcome {
        Outcome::Crashed(w) => assert!(w.contains("SIGABRT") && !crash_is_transient(w), "{w}"),
        other => panic!("{other:?}"),
    }
}
