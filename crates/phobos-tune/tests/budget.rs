//! The search's reduced timing budget, the final round at the full budget, and the early stop,
//! on the mock device (whose launch times are given, not measured).

mod common;

use common::*;
use phobos_tune::store::{Phase, RunKey, PHOBOS_VERSION};
use phobos_tune::timing::FinalSettings;
use phobos_tune::*;

fn stats_of<'a>(r: &'a Report, pins: &str) -> &'a Stats {
    r.points
        .iter()
        .find(|p| p.point.to_pins() == pins)
        .and_then(|p| p.outcome.stats())
        .unwrap_or_else(|| panic!("{pins} was not timed"))
}

/// What the search measured of a point (its `Event::Point`, before any final round).
fn searched<'a>(seen: &'a Seen, pins: &str) -> &'a Stats {
    seen.points
        .iter()
        .find(|p| p.point.to_pins() == pins)
        .and_then(|p| p.outcome.stats())
        .unwrap_or_else(|| panic!("{pins} was not timed in the search"))
}

/// One compile thread (points timed in order), one repeat at least, the search at `search`
/// ms a point and the final round at `full` ms a finalist, no early stop.
fn budgets(search: f64, full: f64) -> Settings {
    let mut s = settings();
    s.jobs = 1;
    s.time.min_reps = 1;
    s.time.max_reps = 1000;
    s.time.budget_ms = search;
    s.time.early_stop_factor = None;
    s.final_round = FinalSettings {
        warmup: 1,
        rounds: 1,
        budget_ms: full,
        max_rounds: 1000,
    };
    s
}

#[test]
fn the_search_times_at_its_budget_and_the_leaders_at_the_full_one() {
    // U=1 4 ms, U=2 2 ms, U=4 1 ms, U=8 3 ms a launch.
    let spec = MockSpec::default();
    let mut s = budgets(4.0, 40.0);
    s.finalists = 2;
    let (r, seen, _) = run(&spec, &mut in_process(&spec), None, &problem(64), &[], &s);
    let r = r.unwrap();
    // The search: launches until 4 ms of them.
    let reps: Vec<u32> = ["U=1", "U=2", "U=4", "U=8"]
        .iter()
        .map(|p| searched(&seen, p).reps)
        .collect();
    assert_eq!(reps, [1, 2, 4, 2]);
    // The final round: the two leaders, each until 40 ms (U=4's 40 launches, U=2 alongside).
    assert_eq!(seen.finals, 1);
    assert_eq!(
        (stats_of(&r, "U=4").reps, stats_of(&r, "U=2").reps),
        (40, 40)
    );
    // The others keep their search times.
    assert_eq!(stats_of(&r, "U=8").reps, 2);
    let w = r.winner.unwrap();
    assert_eq!((w.point.to_pins(), w.stats.reps), ("U=4".to_string(), 40));
}

#[test]
fn a_lone_leader_is_retimed_at_the_full_budget() {
    let spec = MockSpec {
        names: vec![("U".into(), vec![4])],
        ..MockSpec::default()
    };
    let (r, seen, _) = run(
        &spec,
        &mut in_process(&spec),
        None,
        &problem(64),
        &[],
        &budgets(2.0, 20.0),
    );
    assert_eq!(seen.finals, 1);
    assert_eq!(searched(&seen, "U=4").reps, 2);
    assert_eq!(r.unwrap().winner.unwrap().stats.reps, 20);
    // A search at the full budget already timed it so: no round for one point.
    let (r, seen, _) = run(
        &spec,
        &mut in_process(&spec),
        None,
        &problem(64),
        &[],
        &budgets(20.0, 20.0),
    );
    assert_eq!(seen.finals, 0);
    assert_eq!(r.unwrap().winner.unwrap().stats.reps, 20);
}

#[test]
fn a_point_far_slower_than_the_best_stops_early_is_stored_so_and_never_leads() {
    // In order: U=1 (4 ms), U=2 (2 ms), U=4 (1 ms) each set a new best; U=8 (3 ms) is more
    // than 1.5x the best median after its first 3 launches and stops there.
    let spec = MockSpec::default();
    let mut s = budgets(8.0, 40.0);
    s.time.early_stop_factor = Some(1.5);
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.sqlite")).unwrap();
    let (r, seen, _) = run(
        &spec,
        &mut in_process(&spec),
        Some(&mut store),
        &problem(64),
        &[],
        &s,
    );
    let r = r.unwrap();
    let u8 = stats_of(&r, "U=8");
    assert!(u8.stopped_early);
    assert_eq!(u8.reps as usize, timing::EARLY_STOP_REPS);
    for p in ["U=1", "U=2", "U=4"] {
        assert!(!searched(&seen, p).stopped_early, "{p}");
        // The three others were the final round's leaders, re-timed at 40 ms each.
        assert_eq!(stats_of(&r, p).reps, 40, "{p}");
    }
    assert_eq!(seen.finals, 1);
    assert_eq!(r.winner.unwrap().point.to_pins(), "U=4");
    // The store keeps it as stopped early, typed, and serves it so.
    let key = key_of(&spec, &in_process(&spec), &problem(64));
    let stored = store.lookup(&key, &generated(&spec)).unwrap();
    let u8 = stored.iter().find(|p| p.point.to_pins() == "U=8").unwrap();
    assert!(u8.outcome.stats().unwrap().stopped_early);
}

/// The key the engine stores the mock's results under.
fn key_of(spec: &MockSpec, ex: &worker::InProcess, problem: &Problem) -> RunKey {
    use worker::Executor;
    let _ = spec;
    RunKey {
        phobos_version: PHOBOS_VERSION.to_string(),
        kernel_hash: "mock-hash".into(),
        kernel_name: "mock".into(),
        problem: problem.clone(),
        device: ex.device().name.clone(),
        driver: ex.device().driver.clone(),
        compiler: "mock 1".into(),
        backend: Backend::Interp,
    }
}

#[test]
fn a_stored_point_stopped_early_never_wins_even_with_the_lowest_median() {
    // A point stopped early in an earlier run, with the lowest median of all: its few launches
    // do not make it a result. No final round here (one finalist, the search at the full
    // budget): the winner is picked among the search times themselves.
    let spec = MockSpec::default();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.sqlite")).unwrap();
    let ex = in_process(&spec);
    let key = key_of(&spec, &ex, &problem(64));
    let codegen = generated(&spec);
    let stopped = PointResult {
        point: phobos_ir::Point(vec![("U".into(), 2)]),
        outcome: Outcome::Timed(Stats {
            median_ms: 0.5,
            min_ms: 0.5,
            max_ms: 0.5,
            spread: 0.0,
            reps: 3,
            stopped_early: true,
        }),
        resources: None,
        flops: None,
        bytes: None,
        reused: false,
    };
    store
        .record(None, &key, Some(&codegen["U=2"]), &stopped, Phase::Search)
        .unwrap();
    let mut s = budgets(10.0, 10.0);
    s.finalists = 1;
    let (r, seen, _) = run(
        &spec,
        &mut in_process(&spec),
        Some(&mut store),
        &problem(64),
        &[],
        &s,
    );
    let r = r.unwrap();
    assert_eq!(seen.search, Some((3, 1)), "U=2 reused, the others timed");
    assert_eq!(seen.finals, 0);
    assert!(stats_of(&r, "U=2").stopped_early);
    assert_eq!(r.winner.unwrap().point.to_pins(), "U=4");
}

#[test]
fn timing_inputs_are_prepared_under_one_key_per_problem() {
    // Every timing job of a problem, the final round's too, prepares the same inputs: a
    // device may keep them resident (the GPU's does) instead of copying them per point.
    let keys = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let spec = MockSpec {
        prepared_keys: Some(keys.clone()),
        ..MockSpec::default()
    };
    let s = budgets(4.0, 8.0);
    let (r, seen, _) = run(&spec, &mut in_process(&spec), None, &problem(64), &[], &s);
    assert!(r.is_ok());
    assert_eq!(seen.finals, 1);
    let first: Vec<String> = std::mem::take(&mut *keys.lock().unwrap());
    // Four search jobs and the four finalists of the round.
    assert_eq!(first.len(), 8);
    assert!(first.iter().all(|k| k == &first[0]), "{first:?}");
    let (r, _, _) = run(&spec, &mut in_process(&spec), None, &problem(128), &[], &s);
    assert!(r.is_ok());
    let second = keys.lock().unwrap().clone();
    assert!(!second.is_empty());
    assert!(second.iter().all(|k| k == &second[0]));
    assert_ne!(first[0], second[0], "another problem, other inputs");
}
