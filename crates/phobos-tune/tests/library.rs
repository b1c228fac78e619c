//! The library reference and baseline (cuBLAS on a GPU) through the worker protocol: a check
//! against the device's library routine, the error reported also when it passes, the
//! library's timing, and a clear refusal from a device without one.

mod common;

use common::*;
use phobos_ir::{Kernel, Point};
use phobos_tune::timing::TimeSettings;
use phobos_tune::worker::{
    handle, JobFailure, LibrarySpec, ReferenceSpec, Reply, Request, VariantSpec, WorkerState,
};
use phobos_tune::*;

/// The mock device plus a "library" that computes `O = 2 X` exactly, or `2 X + off`.
struct WithLibrary {
    inner: MockDevice,
    off: f64,
}

struct LibLoaded {
    off: f64,
}

impl Loaded for LibLoaded {
    fn run(&mut self, args: &mut [ArgValue]) -> Result<(), RunError> {
        let x = args[0].tensor().unwrap().clone();
        if let ArgValue::Tensor(o) = &mut args[1] {
            for (o, x) in o.data.iter_mut().zip(&x.data) {
                *o = 2.0 * x + self.off;
            }
        }
        Ok(())
    }
    fn prepare(&mut self, _args: &[ArgValue]) -> Result<(), RunError> {
        Ok(())
    }
    fn launch_timed(&mut self) -> Result<f64, RunError> {
        Ok(0.25)
    }
    fn describe(&self) -> Option<String> {
        Some("mockBLAS".into())
    }
}

impl Device for WithLibrary {
    fn info(&self) -> DeviceInfo {
        self.inner.info()
    }
    fn load(
        &mut self,
        kernel: &Kernel,
        artifact: Option<&Artifact>,
        problem: &Problem,
    ) -> Result<Box<dyn Loaded>, RunError> {
        self.inner.load(kernel, artifact, problem)
    }
    fn library(
        &mut self,
        _kernel: &Kernel,
        spec: &LibrarySpec,
        _problem: &Problem,
    ) -> Result<Box<dyn Loaded>, RunError> {
        assert_eq!((spec.a.as_str(), spec.c.as_str()), ("X", "O"));
        Ok(Box::new(LibLoaded { off: self.off }))
    }
}

fn worker_state(spec: &MockSpec, off: Option<f64>) -> WorkerState {
    let mut s = state(spec);
    if let Some(off) = off {
        s.device = Box::new(WithLibrary {
            inner: MockDevice {
                spec: spec.clone(),
                oracle: false,
            },
            off,
        });
    }
    s
}

fn library() -> LibrarySpec {
    LibrarySpec {
        point: Point(vec![("U".into(), 1)]),
        a: "X".into(),
        b: "X".into(),
        c: "O".into(),
    }
}

fn verify(point: i64) -> Request {
    Request::Verify {
        id: 7,
        variant: VariantSpec {
            point: Point(vec![("U".into(), point)]),
            artifact: None,
        },
        problem: problem(100),
        reference: ReferenceSpec::Library(library()),
        seed: 3,
    }
}

#[test]
fn a_check_against_the_library_passes_with_its_error() {
    let spec = MockSpec::default();
    let mut s = worker_state(&spec, Some(0.0));
    match handle(&mut s, &verify(4)) {
        Reply::Verified {
            id: 7,
            mismatch: None,
            max_error: Some(e),
            checked: Some(c),
        } => {
            assert_eq!(e, 0.0);
            assert_eq!(c.reference, CheckReference::Library);
            assert_eq!(c.scope, CheckScope::Whole { elements: 100 });
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_library_that_disagrees_fails_the_check_and_names_itself() {
    let spec = MockSpec::default();
    let mut s = worker_state(&spec, Some(0.5));
    match handle(&mut s, &verify(4)) {
        Reply::Verified {
            mismatch: Some(m),
            max_error: Some(e),
            ..
        } => {
            assert!(e > m.tolerance && e == m.error, "{m:?}");
            assert!(m.reference.starts_with("mockBLAS for N=100"), "{m:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_library_is_timed_like_a_variant() {
    let spec = MockSpec::default();
    let mut s = worker_state(&spec, Some(0.0));
    let req = Request::TimeLibrary {
        id: 9,
        library: library(),
        problem: problem(100),
        settings: TimeSettings {
            warmup: 1,
            min_reps: 3,
            max_reps: 5,
            budget_ms: 1.0,
            early_stop_factor: Some(3.0),
        },
        seed: 1,
    };
    match handle(&mut s, &req) {
        Reply::Timed {
            id: 9,
            stats,
            clusters: None,
        } => assert_eq!(stats.median_ms, 0.25),
        other => panic!("{other:?}"),
    }
    assert_eq!(req.id(), Some(9));
    assert!(req.points().is_empty());
}

#[test]
fn a_device_without_a_library_refuses_in_one_line() {
    let spec = MockSpec::default();
    let mut s = worker_state(&spec, None);
    match handle(&mut s, &verify(4)) {
        Reply::Failed {
            failure: JobFailure::Load(f),
            ..
        } => assert_eq!(
            f.first_line,
            "mock-device has no library routine to compare or time against"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_check_against_the_interpreter_reports_its_error_too() {
    let spec = MockSpec::default();
    let mut s = worker_state(&spec, None);
    let req = Request::Verify {
        id: 1,
        variant: VariantSpec {
            point: Point(vec![("U".into(), 2)]),
            artifact: None,
        },
        problem: problem(50),
        reference: ReferenceSpec::Interp {
            point: Point(vec![("U".into(), 1)]),
        },
        seed: 5,
    };
    match handle(&mut s, &req) {
        Reply::Verified {
            mismatch: None,
            max_error: Some(e),
            ..
        } => assert_eq!(e, 0.0),
        other => panic!("{other:?}"),
    }
}
