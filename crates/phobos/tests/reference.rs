//! A worker whose checks compare with another kernel (`--reference`, `ReferenceSpec::Kernel`):
//! the reference runs on the interpreter when it has no binary, on the same arguments.

use phobos::backend::interp::InterpDevice;
use phobos::frontend::CheckFrontend;
use phobos_ir::Point;
use phobos_syntax::SourceFile;
use phobos_tune::worker::{
    Executor, InProcess, ReferenceSpec, Reply, Request, VariantSpec, WorkerState,
};
use phobos_tune::Problem;

const TUNED: &str = "@autotune(BUG in {0, 1})\n@launch(64)\n@grid(cdiv(N, 64))\n\
    kernel twice(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  \
    let i = ctx.block.x * 64 + ctx.thread\n  if i < N {\n    Y[i] = 2.0 * X[i] + f32(BUG)\n  }\n}\n";

const REFERENCE: &str = "@launch(32)\n@grid(N)\n\
    kernel by_two(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  \
    if ctx.thread == 0 {\n    Y[ctx.block.x] = X[ctx.block.x] * 2.0\n  }\n}\n";

fn load(name: &str, text: &str) -> CheckFrontend {
    CheckFrontend::load(SourceFile::new(name, text), None).unwrap_or_else(|_| panic!("{name}"))
}

fn check(executor: &mut InProcess, bug: i64) -> Reply {
    let req = Request::Verify {
        id: 1,
        variant: VariantSpec {
            point: Point(vec![("BUG".into(), bug)]),
            artifact: None,
        },
        problem: Problem {
            dims: vec![("N".into(), 200)],
            ..Default::default()
        },
        reference: ReferenceSpec::Kernel(VariantSpec {
            point: Point::default(),
            artifact: None,
        }),
        seed: 7,
    };
    executor.call(&req).expect("the check runs")
}

#[test]
fn points_are_compared_with_the_reference_kernel() {
    let frontend = load("twice.ph", TUNED).with_reference(load("by_two.ph", REFERENCE));
    assert!(frontend
        .reference_mismatch(&load("by_two.ph", REFERENCE))
        .is_none());
    let mut executor = InProcess::new(WorkerState {
        frontend: Box::new(frontend),
        device: Box::new(InterpDevice),
        oracle: Box::new(InterpDevice),
        sampled: Default::default(),
    });
    match check(&mut executor, 0) {
        Reply::Verified { mismatch: None, .. } => {}
        other => panic!("{other:?}"),
    }
    match check(&mut executor, 1) {
        Reply::Verified {
            mismatch: Some(m), ..
        } => {
            assert_eq!(m.tensor, "Y");
            assert!(
                m.reference.starts_with("the reference kernel `by_two` at ")
                    && m.reference.ends_with(" on the interpreter"),
                "{}",
                m.reference
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_a_reference_the_worker_refuses_the_check() {
    let mut executor = InProcess::new(WorkerState {
        frontend: Box::new(load("twice.ph", TUNED)),
        device: Box::new(InterpDevice),
        oracle: Box::new(InterpDevice),
        sampled: Default::default(),
    });
    let reply = format!("{:?}", check(&mut executor, 0));
    assert!(reply.contains("without a reference kernel"), "{reply}");
}

#[test]
fn parameters_that_differ_are_named() {
    let other =
        "@launch(32)\nkernel k(X: tensor<f32>[N], Y: tensor<f16>[N]) {\n  Y[0] = f16(X[0])\n}\n";
    let why = load("twice.ph", TUNED)
        .reference_mismatch(&load("k.ph", other))
        .unwrap();
    assert_eq!(
        why,
        "parameter 2 differs: `Y: tensor<f32>[N]` here, `Y: tensor<f16>[N]` in the reference"
    );
}
