//! Several workers sharing one search (`WorkerPool`): points are spread over the lanes, every
//! point still ends exactly once, results carry the ordinal of the worker that ran them, and
//! a dying worker costs only its point.

mod common;

use common::*;
use phobos_tune::worker::{Executor, InProcess, MakeExecutor, WorkerError, WorkerPool, ABORT_HOOK};
use phobos_tune::*;
use std::collections::BTreeSet;
use std::time::Duration;

/// Not a test of its own: the body of the worker process when started with `WORKER_ENV`.
#[test]
fn worker_entry() {
    maybe_serve();
}

fn spec() -> MockSpec {
    MockSpec {
        names: vec![("U".into(), vec![1, 2, 4, 8, 16, 32])],
        times: vec![(1, 4.0), (2, 2.0), (4, 1.0), (8, 3.0), (16, 5.0), (32, 6.0)],
        wrong_at: Some(("U".into(), 2)),
        ..MockSpec::default()
    }
}

fn process_pool(
    spec: &MockSpec,
    gpus: &[u32],
    env: &'static [(&'static str, &'static str)],
) -> WorkerPool {
    let makers: Vec<MakeExecutor> = gpus
        .iter()
        .map(|&g| {
            let spec = spec.clone();
            Box::new(move || {
                Ok(Box::new(worker_on(&spec, g, env, Duration::from_secs(60)))
                    as Box<dyn Executor>)
            }) as MakeExecutor
        })
        .collect();
    WorkerPool::start(makers).unwrap()
}

fn outcome<'a>(r: &'a Report, pins: &str) -> &'a Outcome {
    &r.points
        .iter()
        .find(|p| p.point.to_pins() == pins)
        .unwrap()
        .outcome
}

#[test]
fn two_worker_processes_share_one_search() {
    let spec = spec();
    let mut pool = process_pool(&spec, &[0, 1], &[]);
    assert_eq!(pool.lanes(), 2);
    assert_eq!(pool.ordinal(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.sqlite")).unwrap();
    let (r, seen, _) = run(
        &spec,
        &mut pool,
        Some(&mut store),
        &problem(64),
        &[],
        &settings(),
    );
    let r = r.unwrap();
    // The same outcomes one worker gives: every point once, the wrong one never wins.
    assert_eq!(r.points.len(), 6);
    assert_eq!(seen.points.len(), 6);
    assert!(matches!(outcome(&r, "U=2"), Outcome::Wrong(_)));
    assert_eq!(r.summary().timed, 5, "{}", r.summary().line());
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=4");
    // Both lanes ran points, and each point that ran says where.
    let jobs = pool.jobs_per_lane();
    assert!(jobs.iter().all(|&n| n > 0), "{jobs:?}");
    assert_eq!(jobs.iter().sum::<usize>(), 6);
    let ordinals: BTreeSet<u32> = seen.ran.iter().map(|(_, o)| *o).collect();
    assert_eq!(ordinals, BTreeSet::from([0, 1]));
    let ran: BTreeSet<&str> = seen.ran.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(ran.len(), 6, "{:?}", seen.ran);
    // The store keeps the ordinal of every row that ran (the final round runs on lane 0).
    let rows = store.rows_per_ordinal().unwrap();
    let stored: BTreeSet<Option<u32>> = rows.iter().map(|(o, _)| *o).collect();
    assert!(
        stored.contains(&Some(0)) && stored.contains(&Some(1)),
        "{rows:?}"
    );
    assert!(!stored.contains(&None), "{rows:?}");
    assert_eq!(seen.finals, 1);
}

#[test]
fn in_process_lanes_give_the_single_worker_result() {
    let spec = MockSpec {
        reject: Some(("U".into(), 16)),
        ..spec()
    };
    let makers: Vec<MakeExecutor> = (0..2)
        .map(|_| {
            let spec = spec.clone();
            Box::new(move || Ok(Box::new(InProcess::new(state(&spec))) as Box<dyn Executor>))
                as MakeExecutor
        })
        .collect();
    let mut pool = WorkerPool::start(makers).unwrap();
    let (many, seen, _) = run(&spec, &mut pool, None, &problem(64), &[], &settings());
    let many = many.unwrap();
    let mut one = in_process(&spec);
    let (single, _, _) = run(&spec, &mut one, None, &problem(64), &[], &settings());
    let single = single.unwrap();
    let statuses = |r: &Report| -> Vec<(String, &'static str)> {
        r.points
            .iter()
            .map(|p| (p.point.to_pins(), p.outcome.status()))
            .collect()
    };
    assert_eq!(statuses(&many), statuses(&single));
    assert_eq!(
        many.winner.as_ref().unwrap().point,
        single.winner.as_ref().unwrap().point
    );
    // In-process executors have no GPU ordinal: no `Ran` events.
    assert!(seen.ran.is_empty());
    assert_eq!(pool.jobs_per_lane().iter().sum::<usize>(), 5);
}

#[test]
fn a_worker_dying_in_one_lane_costs_only_its_point() {
    let spec = spec();
    let mut pool = process_pool(&spec, &[0, 1], &[(ABORT_HOOK, "U=8")]);
    let (r, _, _) = run(&spec, &mut pool, None, &problem(64), &[], &settings());
    let r = r.unwrap();
    match outcome(&r, "U=8") {
        Outcome::Crashed(what) => assert!(what.contains("SIGABRT"), "{what}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(r.summary().timed, 4, "{}", r.summary().line());
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=4");
    // A dead worker is replaced only when its lane gets another job.
    assert_eq!(r.worker_restarts, pool.restarts());
}

#[test]
fn a_pool_that_cannot_start_says_why() {
    let spec = spec();
    let good = spec.clone();
    let makers: Vec<MakeExecutor> = vec![
        Box::new(move || Ok(Box::new(InProcess::new(state(&good))) as Box<dyn Executor>)),
        Box::new(|| Err(WorkerError::Spawn("no such GPU".into()))),
    ];
    match WorkerPool::start(makers) {
        Err(WorkerError::Spawn(what)) => assert_eq!(what, "no such GPU"),
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("a pool with a failed worker started"),
    }
    assert!(matches!(
        WorkerPool::start(Vec::new()),
        Err(WorkerError::Spawn(_))
    ));
}

/// An executor that panics on one point, in-process.
struct Panicky(phobos_tune::worker::InProcess);

impl Executor for Panicky {
    fn device(&self) -> &DeviceInfo {
        self.0.device()
    }
    fn call(
        &mut self,
        req: &phobos_tune::worker::Request,
    ) -> Result<phobos_tune::worker::Reply, phobos_tune::worker::Crash> {
        if req.points().iter().any(|p| p.to_pins() == "U=8") {
            panic!("boom at U=8");
        }
        self.0.call(req)
    }
    fn take_logs(&mut self) -> Vec<String> {
        self.0.take_logs()
    }
}

#[test]
fn a_panicking_lane_ends_its_point_and_the_search_goes_on() {
    let spec = spec();
    let makers: Vec<MakeExecutor> = (0..2)
        .map(|_| {
            let spec = spec.clone();
            Box::new(move || {
                Ok(Box::new(Panicky(InProcess::new(state(&spec)))) as Box<dyn Executor>)
            }) as MakeExecutor
        })
        .collect();
    let mut pool = WorkerPool::start(makers).unwrap();
    let (r, _, _) = run(&spec, &mut pool, None, &problem(64), &[], &settings());
    let r = r.unwrap();
    match outcome(&r, "U=8") {
        Outcome::Crashed(what) => assert!(what.contains("boom at U=8"), "{what}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(r.summary().timed, 4, "{}", r.summary().line());
}
