//! Runtime and binding errors: typed, with the span or the names and extents involved.

mod common;

use common::build::*;
use phobos_interp::{Args, Config, Error, Launch};
use phobos_ir::*;

fn tid() -> Expr {
    ctx(Ctx::Thread)
}

#[test]
fn integer_division_by_zero_names_the_span() {
    let mut b = KernelBuilder::new("k", 8);
    let o = b.tensor("O", DType::I32, &["8"]);
    let div = at(bin(BinOp::Div, int(10), bin(BinOp::Sub, tid(), int(3))), 40);
    let k = b.finish(
        [int(1), int(1), int(1)],
        vec![store(o, vec![ati(tid())], div)],
    );
    let err = phobos_interp::run(
        &k,
        Args::new().push(HostTensor::zeros(DType::I32, &[8])),
        &Config::default(),
    )
    .unwrap_err();
    assert_eq!(err, Error::DivisionByZero { span: span(40) });
    assert_eq!(err.span(), Some(span(40)));
}

#[test]
fn a_runaway_while_stops_at_the_step_budget() {
    let mut b = KernelBuilder::new("k", 32);
    let (x, xe) = b.local("x", Ty::Scalar(DType::I32), false);
    let body = vec![
        assign(x, int(0)),
        stmt_at(
            StmtKind::While {
                cond: lit(1.0, DType::Bool),
                body: vec![assign(x, add(xe, int(1)))],
            },
            7,
        ),
    ];
    let k = b.finish([int(1), int(1), int(1)], body);
    let config = Config {
        step_budget: 10_000,
    };
    let err = phobos_interp::run(&k, Args::new(), &config).unwrap_err();
    assert_eq!(
        err,
        Error::StepBudget {
            budget: 10_000,
            span: span(7)
        }
    );
    assert!(err.help().unwrap().contains("step budget"));
}

#[test]
fn out_of_range_shifts_are_errors() {
    let mut b = KernelBuilder::new("k", 1);
    let o = b.tensor("O", DType::I32, &["1"]);
    let sh = at(bin(BinOp::Shl, int(1), int(32)), 3);
    let k = b.finish(
        [int(1), int(1), int(1)],
        vec![store(o, vec![ati(int(0))], sh)],
    );
    let err = phobos_interp::run(
        &k,
        Args::new().push(HostTensor::zeros(DType::I32, &[1])),
        &Config::default(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        Error::ShiftOutOfRange {
            amount: 32,
            dtype: DType::I32,
            span: span(3)
        }
    );
}

/// `A[M, K] B[K, N] C[M, N]` reading nothing.
fn abc() -> Kernel {
    let mut b = KernelBuilder::new("gemm", 32);
    b.tensor("A", DType::F32, &["M", "K"]);
    b.tensor("B", DType::F32, &["K", "N"]);
    b.tensor("C", DType::F32, &["M", "4"]);
    b.finish([int(1), int(1), int(1)], vec![])
}

fn t(shape: &[usize]) -> HostTensor {
    HostTensor::zeros(DType::F32, shape)
}

#[test]
fn disagreeing_extents_name_both_tensors() {
    let k = abc();
    let err = Launch::new(
        &k,
        Args::new()
            .push(t(&[4, 5]))
            .push(t(&[6, 3]))
            .push(t(&[4, 4])),
    )
    .unwrap_err();
    assert_eq!(
        err,
        Error::DimMismatch {
            dim: "K".into(),
            first: "`A` (axis 1)".into(),
            first_extent: 5,
            second: "`B` (axis 0)".into(),
            second_extent: 6,
        }
    );
    assert_eq!(
        err.to_string(),
        "the dim `K` disagrees: `A` (axis 1) has extent 5, but `B` (axis 0) has 6"
    );
    let err = Launch::new(
        &k,
        Args::new()
            .push(t(&[4, 5]))
            .push(t(&[5, 3]))
            .push(t(&[4, 3])),
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::StaticExtent { ref name, axis: 1, expected: 4, found: 3 } if name == "C")
    );
}

#[test]
fn binding_checks_names_kinds_types_and_ranks() {
    let k = abc();
    let ok = Launch::new(
        &k,
        Args::new()
            .set("C", t(&[2, 4]))
            .set("B", t(&[3, 7]))
            .set("A", t(&[2, 3])),
    )
    .unwrap();
    assert_eq!(
        ok.dims(),
        vec![("M".into(), 2), ("K".into(), 3), ("N".into(), 7)]
    );
    let err = Launch::new(&k, Args::new().set("D", t(&[1]))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`D` is not a parameter of `gemm` (parameters: A, B, C)"
    );
    let err = Launch::new(&k, Args::new().push(t(&[2, 3])).set("A", t(&[2, 3]))).unwrap_err();
    assert_eq!(err, Error::DuplicateArg { name: "A".into() });
    let err = Launch::new(&k, Args::new().push(t(&[2, 3]))).unwrap_err();
    assert_eq!(
        err,
        Error::MissingArg {
            name: "B".into(),
            kind: "tensor"
        }
    );
    let err = Launch::new(&k, Args::new().push(1.0).push(t(&[3, 7])).push(t(&[2, 4]))).unwrap_err();
    assert!(matches!(
        err,
        Error::WrongKind {
            expected: "tensor",
            found: "scalar",
            ..
        }
    ));
    let f16 = HostTensor::zeros(DType::F16, &[2, 3]);
    let err = Launch::new(&k, Args::new().push(f16).push(t(&[3, 7])).push(t(&[2, 4]))).unwrap_err();
    assert!(matches!(
        err,
        Error::WrongDType {
            expected: DType::F32,
            found: DType::F16,
            ..
        }
    ));
    let err = Launch::new(
        &k,
        Args::new().push(t(&[6])).push(t(&[3, 7])).push(t(&[2, 4])),
    )
    .unwrap_err();
    assert!(matches!(err, Error::WrongRank { expected: 2, .. }));
}

#[test]
fn aligned_where_and_scalars_are_checked() {
    let mut b = KernelBuilder::new("k", 32);
    b.tensor("X", DType::F32, &["N"]);
    let s = b.scalar("s", DType::I32);
    let n = b.dim("N");
    let mut k = b.finish([int(1), int(1), int(1)], vec![]);
    k.aligned = vec![(0, 8)];
    k.wheres = vec![at(bin(BinOp::Lt, n, mul(s, int(10))), 9)];
    let run = |len: usize, s: f64| Launch::new(&k, Args::new().push(t(&[len])).push(s)).map(|_| ());
    assert_eq!(run(16, 2.0), Ok(()));
    assert_eq!(
        run(12, 2.0),
        Err(Error::Misaligned {
            dim: "N".into(),
            extent: 12,
            multiple: 8
        })
    );
    let err = run(24, 2.0).unwrap_err();
    assert_eq!(err.to_string(), "the problem violates @where(N < s * 10)");
    assert_eq!(err.span(), Some(span(9)));
    assert!(matches!(run(16, 2.5), Err(Error::BadScalar { .. })));
    assert!(matches!(run(16, 3e9), Err(Error::BadScalar { .. })));
}
