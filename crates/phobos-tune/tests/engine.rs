//! The core loop on a synthetic kernel and device, in-process.

mod common;

use common::*;
use phobos_check::parse_pins;
use phobos_tune::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn status_of<'a>(r: &'a Report, pins: &str) -> &'a Outcome {
    &r.points
        .iter()
        .find(|p| p.point.to_pins() == pins)
        .unwrap_or_else(|| panic!("no point {pins}"))
        .outcome
}

#[test]
fn searches_every_point_and_keeps_the_fastest() {
    let spec = MockSpec::default();
    let mut ex = in_process(&spec);
    let (r, seen, compiler) = run(&spec, &mut ex, None, &problem(64), &[], &settings());
    let r = r.unwrap();
    assert_eq!(r.points.len(), 4);
    assert_eq!(compiler.compiles.load(Ordering::SeqCst), 4);
    let w = r.winner.as_ref().unwrap();
    assert_eq!(w.point.to_pins(), "U=4");
    // Default U=1 takes 4 ms, the winner 1 ms.
    assert!((w.speedup_vs_default.unwrap() - 4.0).abs() < 1e-9);
    assert_eq!(r.summary().line(), "4 points: 4 timed");
    assert_eq!(seen.points.len(), 4);
    assert_eq!(seen.finals, 1, "a final round among the leaders");
    assert_eq!(seen.search, Some((4, 0)));
    // @flops = N is evaluated for the problem.
    assert_eq!(r.points[0].flops, Some(64.0));
}

#[test]
fn all_pinned_is_one_configuration_without_search() {
    let spec = MockSpec {
        names: vec![
            ("U".into(), vec![1, 2, 4, 8]),
            ("TILE".into(), vec![16, 32]),
        ],
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    let pins = parse_pins("U=2 TILE=32").unwrap();
    let (r, seen, compiler) = run(&spec, &mut ex, None, &problem(64), &pins, &settings());
    let r = r.unwrap();
    assert_eq!(r.points.len(), 1);
    assert_eq!(compiler.compiles.load(Ordering::SeqCst), 1);
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=2 TILE=32");
    assert_eq!(seen.finals, 0, "no final round with one point");
    // Partly pinned: only the free name is searched.
    let pins = parse_pins("TILE=32").unwrap();
    let (r, _, _) = run(&spec, &mut ex, None, &problem(64), &pins, &settings());
    assert_eq!(r.unwrap().points.len(), 4);
}

#[test]
fn unknown_pin_lists_declared_names() {
    let spec = MockSpec::default();
    let mut ex = in_process(&spec);
    let pins = parse_pins("V=2").unwrap();
    let (r, _, _) = run(&spec, &mut ex, None, &problem(64), &pins, &settings());
    let err = r.unwrap_err().to_string();
    assert_eq!(err, "`V` is not declared in @autotune (declared: U)");
}

#[test]
fn bad_problems_are_errors() {
    let spec = MockSpec::default();
    let mut ex = in_process(&spec);
    let p = Problem {
        dims: vec![("N".into(), 64), ("Q".into(), 3)],
        ..Default::default()
    };
    let (r, _, _) = run(&spec, &mut ex, None, &p, &[], &settings());
    assert_eq!(
        r.unwrap_err().to_string(),
        "`Q` is not a runtime dim of `mock` (its runtime dims: N)"
    );
    let (r, _, _) = run(&spec, &mut ex, None, &Problem::default(), &[], &settings());
    assert!(r
        .unwrap_err()
        .to_string()
        .contains("no value for the runtime dim `N`"));
}

#[test]
fn where_prunes_with_its_reason() {
    let spec = MockSpec {
        where_n_multiple_of_u: true,
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    // N = 6: U = 4 and U = 8 violate N % U == 0.
    let (r, seen, compiler) = run(&spec, &mut ex, None, &problem(6), &[], &settings());
    let r = r.unwrap();
    assert_eq!(compiler.compiles.load(Ordering::SeqCst), 2);
    let pruned: Vec<&str> = seen.pruned.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(pruned, vec!["U=4", "U=8"]);
    assert!(
        seen.pruned[0].1.starts_with("violates @where("),
        "{:?}",
        seen.pruned
    );
    assert!(matches!(
        status_of(&r, "U=4"),
        Outcome::Pruned(PruneReason::Where { .. })
    ));
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=2");
    assert_eq!(r.summary().line(), "4 points: 2 timed, 2 pruned");
    // Every point violating it is an error, not an empty search.
    let spec = MockSpec {
        names: vec![("U".into(), vec![4, 8])],
        ..spec
    };
    let (r, _, _) = run(&spec, &mut ex, None, &problem(6), &[], &settings());
    assert!(matches!(r.unwrap_err(), TuneError::NoPoint { .. }));
}

#[test]
fn large_tiles_are_pruned_unless_switched_off() {
    let spec = MockSpec {
        names: vec![("TILE".into(), vec![16, 64, 256])],
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    // N = 20: 64 > 2 * 20 and 256 > 2 * 20 are far larger than the problem.
    let (r, seen, _) = run(&spec, &mut ex, None, &problem(20), &[], &settings());
    let r = r.unwrap();
    assert_eq!(seen.pruned.len(), 2);
    assert_eq!(seen.pruned[0].0, "TILE=64");
    assert!(
        seen.pruned[0]
            .1
            .contains("tile of 64 over O axis 0 of extent 20")
            || seen.pruned[0]
                .1
                .contains("tile of 64 over X axis 0 of extent 20"),
        "{:?}",
        seen.pruned
    );
    assert!(seen.pruned[0].1.contains("--no-prune-large"));
    assert_eq!(r.summary().timed, 1);

    let no_prune = Settings {
        prune_large: false,
        ..settings()
    };
    let (r, seen, _) = run(&spec, &mut ex, None, &problem(20), &[], &no_prune);
    assert!(seen.pruned.is_empty());
    assert_eq!(r.unwrap().summary().timed, 3);

    // It never empties the space: at N = 4 every tile is far larger; the smallest stays.
    let (r, seen, _) = run(&spec, &mut ex, None, &problem(4), &[], &settings());
    let r = r.unwrap();
    assert_eq!(seen.pruned.len(), 2);
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "TILE=16");
}

#[test]
fn threads_over_the_limit_are_pruned() {
    let spec = MockSpec {
        names: vec![("T".into(), vec![256, 1024, 2048])],
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    let (r, seen, _) = run(&spec, &mut ex, None, &problem(64), &[], &settings());
    assert_eq!(seen.pruned.len(), 1);
    assert_eq!(seen.pruned[0].0, "T=2048");
    assert_eq!(
        seen.pruned[0].1,
        "2048 threads per block, over the limit of 1024"
    );
    assert_eq!(r.unwrap().summary().timed, 2);
}

#[test]
fn a_point_that_fails_to_compile_is_skipped_and_logged() {
    let spec = MockSpec {
        reject: Some(("U".into(), 2)),
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    let (r, seen, _) = run(&spec, &mut ex, None, &problem(64), &[], &settings());
    let r = r.unwrap();
    match status_of(&r, "U=2") {
        Outcome::CompileFailed(f) => {
            assert_eq!(f.first_line, "error[E0999]: the checker rejects U=2");
            assert!(f.log.contains("mock.ph:1:1"));
        }
        other => panic!("{other:?}"),
    }
    assert!(seen
        .points
        .iter()
        .any(|p| p.point.to_pins() == "U=2" && p.outcome.status() == "compile-failed"));
    assert_eq!(r.summary().line(), "4 points: 3 timed, 1 failed to compile");
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=4");
}

#[test]
fn a_wrong_variant_is_reported_and_never_wins() {
    // U = 4 is the fastest, and wrong.
    let spec = MockSpec {
        wrong_at: Some(("U".into(), 4)),
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    let (r, _, _) = run(&spec, &mut ex, None, &problem(64), &[], &settings());
    let r = r.unwrap();
    match status_of(&r, "U=4") {
        Outcome::Wrong(m) => {
            assert_eq!(m.tensor, "O");
            assert!(m.error > m.tolerance);
            assert_eq!(m.tolerance, 1e-4);
            assert!(
                m.reference.contains("interpreter at U=1"),
                "{}",
                m.reference
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=2");
}

#[test]
fn duplicate_binaries_are_timed_once() {
    let spec = MockSpec {
        all_same_binary: true,
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    let (r, _, _) = run(&spec, &mut ex, None, &problem(64), &[], &settings());
    let r = r.unwrap();
    let s = r.summary();
    assert_eq!((s.timed, s.duplicate), (1, 3));
}

#[test]
fn far_slower_candidates_stop_early() {
    let spec = MockSpec {
        times: vec![(1, 1.0), (2, 10.0), (4, 2.0), (8, 2.5)],
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    // One compile thread: points are timed in order, so U=1 sets the best first.
    let one = Settings {
        jobs: 1,
        ..settings()
    };
    let (r, _, _) = run(&spec, &mut ex, None, &problem(64), &[], &one);
    let r = r.unwrap();
    let s = status_of(&r, "U=2").stats().unwrap();
    assert!(s.stopped_early);
    assert_eq!(s.reps, 3);
    assert!(!status_of(&r, "U=4").stats().unwrap().stopped_early);
}

#[test]
fn large_problems_are_checked_at_a_reduced_size() {
    let spec = MockSpec {
        wrong_at: Some(("U".into(), 8)),
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    let s = Settings {
        verify_max_elements: 1000,
        ..settings()
    };
    let (r, _, _) = run(&spec, &mut ex, None, &problem(100_000), &[], &s);
    let r = r.unwrap();
    match status_of(&r, "U=8") {
        Outcome::Wrong(m) => assert!(m.reference.contains("N=256"), "{}", m.reference),
        other => panic!("{other:?}"),
    }
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=4");
}

#[test]
fn dry_run_compiles_without_timing() {
    let spec = MockSpec::default();
    let mut ex = in_process(&spec);
    let s = Settings {
        dry_run: true,
        ..settings()
    };
    let (r, _, compiler) = run(&spec, &mut ex, None, &problem(64), &[], &s);
    let r = r.unwrap();
    assert_eq!(compiler.compiles.load(Ordering::SeqCst), 4);
    assert_eq!(r.summary().compiled, 4);
    assert!(r.winner.is_none());
    let check = r.dry_run_check.unwrap();
    assert_eq!(check.point.to_pins(), "U=1");
    assert_eq!(check.error, None);
}

/// Settings under which nothing is small enough for the interpreter, at any reduced size.
fn too_large_to_interpret() -> Settings {
    Settings {
        verify_max_elements: 0,
        ..settings()
    }
}

#[test]
fn without_a_reduced_problem_the_library_is_the_reference() {
    let spec = MockSpec::default();
    let tiny = too_large_to_interpret();
    let mut ex = in_process(&spec);
    let (r, _, _) = run(&spec, &mut ex, None, &problem(100_000), &[], &tiny);
    // No library: the interpreter on a sample of the blocks (the mock's oracle runs the first
    // of two blocks, which writes the first half of O).
    let r = r.unwrap();
    assert!(r.points.iter().all(|p| p.outcome.stats().is_some()));
    assert!(r.winner.is_some());
    assert_eq!(r.checks.len(), 4);
    for c in &r.checks {
        assert_eq!(c.checked.reference, CheckReference::Interpreter);
        assert_eq!(c.checked.dims, vec![("N".to_string(), 100_000)]);
        assert_eq!(
            c.checked.scope,
            CheckScope::Sampled {
                coverage: BlockCoverage {
                    grid_blocks: 2,
                    corners: 1,
                    edges: 0,
                    random: 0
                },
                elements: 50_000,
            }
        );
    }

    let with_library = Settings {
        library: Some(phobos_tune::worker::LibrarySpec {
            point: phobos_ir::Point::default(),
            a: "X".into(),
            b: "X".into(),
            c: "O".into(),
        }),
        ..tiny
    };
    let mut ex = in_process(&spec);
    let (r, _, _) = run(&spec, &mut ex, None, &problem(100_000), &[], &with_library);
    let r = r.unwrap();
    // The mock device has no library routine: every check asked it, and none passed.
    for p in &r.points {
        let reason = p.outcome.reason().unwrap_or_default();
        assert!(reason.contains("no library routine"), "{reason}");
    }
    assert!(r.winner.is_none());
}

#[test]
fn the_sampled_reference_is_interpreted_once_a_run() {
    let samples = Arc::new(AtomicUsize::new(0));
    let spec = MockSpec {
        wrong_at: Some(("U".into(), 4)),
        samples: Some(samples.clone()),
        ..MockSpec::default()
    };
    let tiny = too_large_to_interpret();
    let mut ex = in_process(&spec);
    let (r, _, _) = run(&spec, &mut ex, None, &problem(100_000), &[], &tiny);
    let r = r.unwrap();
    // Four points checked (the wrong one too) against one sampled run of the reference.
    assert_eq!(r.checks.len(), 4);
    assert!(matches!(status_of(&r, "U=4"), Outcome::Wrong(_)));
    assert_eq!(samples.load(Ordering::SeqCst), 1);
    for c in &r.checks {
        assert!(matches!(c.checked.scope, CheckScope::Sampled { .. }));
    }
    // Another run (another seed) interprets its own sample.
    let other = Settings { seed: 7, ..tiny };
    let (r, _, _) = run(&spec, &mut ex, None, &problem(100_000), &[], &other);
    assert!(r.unwrap().winner.is_some());
    assert_eq!(samples.load(Ordering::SeqCst), 2);
}

#[test]
fn a_sampled_check_catches_a_wrong_variant() {
    let spec = MockSpec {
        wrong_at: Some(("U".into(), 4)),
        ..MockSpec::default()
    };
    let tiny = too_large_to_interpret();
    let mut ex = in_process(&spec);
    let (r, _, _) = run(&spec, &mut ex, None, &problem(100_000), &[], &tiny);
    let r = r.unwrap();
    let Outcome::Wrong(m) = status_of(&r, "U=4") else {
        panic!("U=4 passed a sampled check: {:?}", status_of(&r, "U=4"));
    };
    assert_eq!(m.tensor, "O");
    assert_eq!(
        m.reference,
        "the interpreter at U=1 for N=100000 on 1 of its 2 blocks"
    );
    assert!(status_of(&r, "U=1").stats().is_some());
    assert_ne!(r.winner.as_ref().unwrap().point.to_pins(), "U=4");
    // Small problems are checked whole.
    let (r, _, _) = run(&spec, &mut ex, None, &problem(64), &[], &settings());
    let c = r.unwrap().checks;
    assert!(c
        .iter()
        .all(|c| c.checked.scope == CheckScope::Whole { elements: 64 }));
}

#[test]
fn the_winner_comes_from_the_final_round() {
    // Four points within a factor 3 (none stops early), each timed with 1 warm-up and exactly
    // 3 repeats: 16 search launches; every launch after them (the final round) is twice as
    // slow, as on a GPU that throttles under sustained load.
    let spec = MockSpec {
        times: vec![(1, 1.0), (2, 1.1), (4, 1.2), (8, 1.3)],
        throttle: Some((Default::default(), 16, 2.0)),
        ..MockSpec::default()
    };
    let mut s = settings();
    s.time.max_reps = 3;
    s.finalists = 2;
    let mut ex = in_process(&spec);
    let (r, seen, _) = run(&spec, &mut ex, None, &problem(64), &[], &s);
    let r = r.unwrap();
    assert_eq!(seen.finals, 1);
    // U=4's search time (1.2 ms) is below the finalists' round times (2.0 and 2.2 ms), but
    // those were measured another way: the fastest finalist wins, with its round time.
    let w = r.winner.as_ref().unwrap();
    assert_eq!(w.point.to_pins(), "U=1");
    assert_eq!(w.stats.median_ms, 2.0);
    assert_eq!(status_of(&r, "U=4").stats().unwrap().median_ms, 1.2);
    // The default point (U=1) ran in the round too: the speed-up compares round times.
    assert_eq!(w.speedup_vs_default, Some(1.0));
}
