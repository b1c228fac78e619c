//! `Settings::compiled_reference` (CUDA C++ sources, which have no IR to interpret): every point
//! is checked on the device against the reference point's variant, never the interpreter.

mod common;

use common::*;
use phobos_tune::*;

fn compiled() -> Settings {
    Settings {
        compiled_reference: true,
        ..settings()
    }
}

fn status<'a>(r: &'a Report, pins: &str) -> &'a Outcome {
    &r.points
        .iter()
        .find(|p| p.point.to_pins() == pins)
        .unwrap_or_else(|| panic!("no point {pins}"))
        .outcome
}

#[test]
fn points_are_checked_against_the_default_point_on_the_device() {
    // U = 4 is the fastest, and wrong.
    let spec = MockSpec {
        wrong_at: Some(("U".into(), 4)),
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    let (r, _, compiler) = run(&spec, &mut ex, None, &problem(64), &[], &compiled());
    let r = r.unwrap();
    match status(&r, "U=4") {
        Outcome::Wrong(m) => {
            assert!(m.error > m.tolerance);
            // The device's variant at the default point, not the interpreter.
            assert!(m.reference.contains("variant U=1"), "{}", m.reference);
            assert!(!m.reference.contains("interpreter"), "{}", m.reference);
        }
        other => panic!("{other:?}"),
    }
    for pins in ["U=1", "U=2", "U=8"] {
        assert!(status(&r, pins).stats().is_some(), "{pins}");
    }
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=2");
    // Each point compiled once, and the reference once more for its check.
    assert_eq!(
        compiler.compiles.load(std::sync::atomic::Ordering::SeqCst),
        5
    );
}

#[test]
fn without_a_device_a_dry_run_checks_nothing() {
    let spec = MockSpec::default();
    let mut ex = in_process(&spec);
    let s = Settings {
        dry_run: true,
        ..compiled()
    };
    let (r, _, _) = run(&spec, &mut ex, None, &problem(64), &[], &s);
    let r = r.unwrap();
    assert!(r.dry_run_check.is_none());
    assert!(r.winner.is_none());
}

#[test]
fn a_default_point_the_checker_rejects_leaves_the_next_as_reference() {
    let spec = MockSpec {
        reject: Some(("U".into(), 1)),
        wrong_at: Some(("U".into(), 8)),
        ..MockSpec::default()
    };
    let mut ex = in_process(&spec);
    let (r, _, _) = run(&spec, &mut ex, None, &problem(64), &[], &compiled());
    let r = r.unwrap();
    assert!(matches!(status(&r, "U=1"), Outcome::CompileFailed(_)));
    match status(&r, "U=8") {
        Outcome::Wrong(m) => assert!(m.reference.contains("variant U=2"), "{}", m.reference),
        other => panic!("{other:?}"),
    }
    assert_eq!(r.winner.as_ref().unwrap().point.to_pins(), "U=4");
}
