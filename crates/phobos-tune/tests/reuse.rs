//! The results database through the engine: reuse, re-tune, resume, concurrent runs.

mod common;

use common::*;
use phobos_tune::*;
use std::sync::atomic::Ordering;

#[test]
fn a_second_run_reuses_and_retune_measures_again() {
    let spec = MockSpec {
        reject: Some(("U".into(), 8)),
        ..MockSpec::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.sqlite");
    let mut ex = in_process(&spec);

    let mut store = Store::open(&path).unwrap();
    let (r1, _, c1) = run(
        &spec,
        &mut ex,
        Some(&mut store),
        &problem(64),
        &[],
        &settings(),
    );
    let r1 = r1.unwrap();
    assert_eq!(c1.compiles.load(Ordering::SeqCst), 3);
    drop(store);

    let mut store = Store::open(&path).unwrap();
    let before = store.measurement_count().unwrap();
    let (r2, seen, c2) = run(
        &spec,
        &mut ex,
        Some(&mut store),
        &problem(64),
        &[],
        &settings(),
    );
    let r2 = r2.unwrap();
    assert_eq!(
        c2.compiles.load(Ordering::SeqCst),
        0,
        "nothing compiled again"
    );
    assert_eq!(
        store.measurement_count().unwrap(),
        before,
        "nothing measured again"
    );
    assert_eq!(seen.search, Some((0, 4)));
    assert_eq!(seen.finals, 0);
    assert!(r2.points.iter().all(|p| p.reused));
    assert_eq!(
        r2.winner.as_ref().unwrap().point,
        r1.winner.as_ref().unwrap().point
    );
    assert_eq!(
        r2.winner.as_ref().unwrap().stats.median_ms,
        r1.winner.as_ref().unwrap().stats.median_ms
    );
    assert_eq!(r2.summary().compile_failed, 1);

    // Another problem is another key.
    let (_, _, c3) = run(
        &spec,
        &mut ex,
        Some(&mut store),
        &problem(128),
        &[],
        &settings(),
    );
    assert_eq!(c3.compiles.load(Ordering::SeqCst), 3);

    let retune = Settings {
        retune: true,
        ..settings()
    };
    let (r4, _, c4) = run(&spec, &mut ex, Some(&mut store), &problem(64), &[], &retune);
    assert_eq!(c4.compiles.load(Ordering::SeqCst), 3);
    assert!(r4.unwrap().points.iter().all(|p| !p.reused));
    assert!(store.measurement_count().unwrap() > before);
}

#[test]
fn an_interrupted_run_resumes_where_it_stopped() {
    let spec = MockSpec::default();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.sqlite")).unwrap();
    let mut ex = in_process(&spec);
    // A first run that only got to U=1 and U=2 (as if killed after them).
    let pins = phobos_check::parse_pins("U=1").unwrap();
    run(
        &spec,
        &mut ex,
        Some(&mut store),
        &problem(64),
        &pins,
        &settings(),
    )
    .0
    .unwrap();
    let pins = phobos_check::parse_pins("U=2").unwrap();
    run(
        &spec,
        &mut ex,
        Some(&mut store),
        &problem(64),
        &pins,
        &settings(),
    )
    .0
    .unwrap();
    let (r, seen, c) = run(
        &spec,
        &mut ex,
        Some(&mut store),
        &problem(64),
        &[],
        &settings(),
    );
    assert_eq!(seen.search, Some((2, 2)), "only U=4 and U=8 are new");
    // U=4 and U=8 compiled for the search, and the two stored leaders rebuilt for the final
    // round, which compares them side by side with the new ones.
    assert_eq!(c.compiles.load(Ordering::SeqCst), 4);
    assert_eq!(seen.finals, 1);
    assert_eq!(r.unwrap().winner.unwrap().point.to_pins(), "U=4");
}

#[test]
fn two_concurrent_runs_share_one_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.sqlite");
    let runs: Vec<_> = (0..2)
        .map(|k| {
            let path = path.clone();
            std::thread::spawn(move || {
                let spec = MockSpec {
                    names: vec![("U".into(), (1..=40).collect())],
                    ..MockSpec::default()
                };
                let mut store = Store::open(&path).unwrap();
                let mut ex = in_process(&spec);
                let (r, _, _) = run(
                    &spec,
                    &mut ex,
                    Some(&mut store),
                    &problem(64 + k),
                    &[],
                    &settings(),
                );
                r.unwrap().points.len()
            })
        })
        .collect();
    for r in runs {
        assert_eq!(r.join().unwrap(), 40);
    }
    let store = Store::open(&path).unwrap();
    // 40 search rows per run plus the final rounds' rows.
    let n = store.measurement_count().unwrap();
    assert!(n >= 80, "{n}");
}

#[test]
fn two_slices_merged_are_the_whole_search_and_final_round_always_retimes_the_leaders() {
    let spec = MockSpec::default();
    let dir = tempfile::tempdir().unwrap();
    let mut ex = in_process(&spec);
    let slices = [["U=1", "U=4"], ["U=2", "U=8"]];
    let mut merged = Store::open(&dir.path().join("merged.sqlite")).unwrap();
    for (i, slice) in slices.iter().enumerate() {
        let path = dir.path().join(format!("shard-{i}.sqlite"));
        let mut store = Store::open(&path).unwrap();
        let only = Settings {
            only_points: Some(slice.iter().map(|p| p.to_string()).collect()),
            ..settings()
        };
        let (r, seen, c) = run(&spec, &mut ex, Some(&mut store), &problem(64), &[], &only);
        let r = r.unwrap();
        let ran: Vec<String> = r.points.iter().map(|p| p.point.to_pins()).collect();
        assert_eq!(ran, slice, "only the slice's points");
        assert_eq!(c.compiles.load(Ordering::SeqCst), 2);
        assert_eq!(seen.search, Some((2, 0)));
        drop(store);
        merged.merge(&path).unwrap();
    }
    let before = merged.measurement_count().unwrap();
    let (r, seen, c) = run(
        &spec,
        &mut ex,
        Some(&mut merged),
        &problem(64),
        &[],
        &settings(),
    );
    let r = r.unwrap();
    assert_eq!(c.compiles.load(Ordering::SeqCst), 0);
    assert_eq!(seen.search, Some((0, 4)));
    assert_eq!(seen.finals, 0);
    assert_eq!(merged.measurement_count().unwrap(), before);
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=4");
    // Every time came from the store, and the leaders are timed side by side again anyway.
    let again = Settings {
        final_round_always: true,
        ..settings()
    };
    let (r, seen, _) = run(&spec, &mut ex, Some(&mut merged), &problem(64), &[], &again);
    assert_eq!(seen.finals, 1);
    assert!(merged.measurement_count().unwrap() > before);
    assert_eq!(r.unwrap().winner.unwrap().point.to_pins(), "U=4");
}

/// A point whose generated code changed is measured again, its stored time and its stored
/// `wrong` verdict alike; the old results stay in the file and serve the old generator.
#[test]
fn results_of_other_generated_code_are_never_reused() {
    // The generator of version "a" miscompiles U=2, the fastest point.
    let old = MockSpec {
        wrong_at: Some(("U".into(), 2)),
        times: vec![(1, 4.0), (2, 0.5), (4, 1.0), (8, 3.0)],
        generator: "a".into(),
        ..MockSpec::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.sqlite")).unwrap();
    let (r, _, _) = run(
        &old,
        &mut in_process(&old),
        Some(&mut store),
        &problem(64),
        &[],
        &settings(),
    );
    let r = r.unwrap();
    assert_eq!(r.summary().wrong, 1);
    assert_eq!(r.winner.unwrap().point.to_pins(), "U=4");
    let rows = store.measurement_count().unwrap();

    // Version "b" emits other code for every point and computes U=2 correctly: nothing
    // stored is reused, so U=2 is checked again, passes and wins.
    let new = MockSpec {
        wrong_at: None,
        generator: "b".into(),
        ..old.clone()
    };
    let (r, seen, c) = run(
        &new,
        &mut in_process(&new),
        Some(&mut store),
        &problem(64),
        &[],
        &settings(),
    );
    let r = r.unwrap();
    assert_eq!(seen.search, Some((4, 0)), "nothing reused");
    assert_eq!(c.compiles.load(Ordering::SeqCst), 4);
    assert!(r.points.iter().all(|p| !p.reused));
    assert_eq!(r.summary().wrong, 0);
    assert_eq!(r.winner.unwrap().point.to_pins(), "U=2");
    assert!(store.measurement_count().unwrap() > rows, "old rows kept");

    // The old generator's results are still there, and still only its own.
    let (r, seen, c) = run(
        &old,
        &mut in_process(&old),
        Some(&mut store),
        &problem(64),
        &[],
        &settings(),
    );
    assert_eq!(seen.search, Some((0, 4)));
    assert_eq!(c.compiles.load(Ordering::SeqCst), 0);
    assert_eq!(r.unwrap().winner.unwrap().point.to_pins(), "U=4");
}
