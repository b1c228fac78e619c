//! The engine with the adaptive strategies and a time limit, on the synthetic kernel.

mod common;

use common::*;
use phobos_tune::space::Strategy;
use phobos_tune::*;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// 32 points: U (the time: 1 ms at U=16, more away from it) by TILE (no effect).
fn spec() -> MockSpec {
    MockSpec {
        names: vec![
            ("U".into(), vec![1, 2, 4, 8, 16, 32, 64, 128]),
            ("TILE".into(), vec![16, 32, 64, 128]),
        ],
        times: vec![
            (1, 9.0),
            (2, 7.0),
            (4, 5.0),
            (8, 3.0),
            (16, 1.0),
            (32, 2.0),
            (64, 4.0),
            (128, 6.0),
        ],
        ..MockSpec::default()
    }
}

#[test]
fn an_adaptive_strategy_measures_its_budget_and_finds_the_valley() {
    for strategy in [Strategy::Model, Strategy::Anneal] {
        let spec = spec();
        let mut ex = in_process(&spec);
        let s = Settings {
            strategy,
            max_points: Some(12),
            seed: 5,
            ..settings()
        };
        let (r, seen, compiler) = run(&spec, &mut ex, None, &problem(256), &[], &s);
        let r = r.unwrap();
        assert_eq!(r.points.len(), 12, "{strategy:?}");
        assert_eq!(compiler.compiles.load(Ordering::SeqCst), 12);
        assert_eq!(seen.search, Some((12, 0)), "the bar's length is the budget");
        assert_eq!(r.strategy, strategy);
        assert_eq!(r.candidates, 32);
        let w = r.winner.as_ref().unwrap();
        assert!(
            [8, 16, 32].contains(&w.point.get("U").unwrap()),
            "{strategy:?} picked {}",
            w.point.to_pins()
        );
        let p = &r.phases;
        assert!(p.total_ms >= p.search_ms && p.search_ms > 0.0, "{p:?}");
        assert!(
            p.compile_ms > 0.0 && p.timing_ms > 0.0 && p.check_ms > 0.0,
            "{p:?}"
        );
    }
}

#[test]
fn stored_results_are_known_to_the_strategy_for_free() {
    let dir = std::env::temp_dir().join(format!("strategies-store-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut store = Store::open(&dir.join("s.sqlite")).unwrap();
    let spec = spec();
    let mut ex = in_process(&spec);
    let s = Settings {
        strategy: Strategy::Model,
        max_points: Some(8),
        ..settings()
    };
    let (first, _, _) = run(&spec, &mut ex, Some(&mut store), &problem(256), &[], &s);
    let first = first.unwrap();
    let (again, _, compiler) = run(&spec, &mut ex, Some(&mut store), &problem(256), &[], &s);
    let again = again.unwrap();
    // The second run sees the first's 8 points from the store and measures 8 new ones.
    assert_eq!(again.points.iter().filter(|p| p.reused).count(), 8);
    assert_eq!(again.points.iter().filter(|p| !p.reused).count(), 8);
    assert_eq!(compiler.compiles.load(Ordering::SeqCst), 8);
    for p in &first.points {
        assert!(again.point(&p.point).is_some_and(|q| q.reused));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_time_limit_leaves_later_points_unmeasured() {
    let spec = spec();
    let mut ex = in_process(&spec);
    let s = Settings {
        max_time: Some(Duration::ZERO),
        ..settings()
    };
    let (r, _, _) = run(&spec, &mut ex, None, &problem(256), &[], &s);
    let r = r.unwrap();
    assert!(r.points.is_empty(), "{:?}", r.points);
    assert!(r.winner.is_none());
}

#[test]
fn first_points_are_measured_first() {
    let spec = spec();
    let mut ex = in_process(&spec);
    let first = phobos_ir::Point(vec![("U".into(), 16), ("TILE".into(), 64)]);
    let s = Settings {
        strategy: Strategy::Model,
        max_points: Some(4),
        first_points: vec![first.clone()],
        // One compile at a time: with two, the batch's points reach the timing in the order
        // their compiles finish, not the order they were chosen in.
        jobs: 1,
        ..settings()
    };
    let (r, seen, _) = run(&spec, &mut ex, None, &problem(256), &[], &s);
    let r = r.unwrap();
    assert!(r.point(&first).is_some(), "{:?}", r.points);
    assert_eq!(seen.points[0].point, first, "measured first");
}
