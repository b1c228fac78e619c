//! Tests of the launch ABI: argument packing and every binding check, without a GPU.

use super::*;
use phobos_ir::{BinOp, DimVar, Expr, ExprKind, Launch, Lit, Param, Point, Ty};
use phobos_syntax::Span;
use proptest::prelude::*;

fn int(kind: ExprKind) -> Expr {
    Expr {
        kind,
        ty: Ty::Scalar(DType::I32),
        uniform: true,
        span: Span::default(),
    }
}

fn lit(v: i64) -> Expr {
    int(ExprKind::Lit(Lit::Int(v)))
}

fn dim(id: DimId) -> Expr {
    int(ExprKind::Dim(id))
}

fn cdiv(a: Expr, b: Expr) -> Expr {
    int(ExprKind::Cdiv(Box::new(a), Box::new(b)))
}

fn tensor(name: &str, dtype: DType, dims: Vec<Dim>, order: MemOrder) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Tensor { dtype, dims, order },
        span: Span::default(),
    }
}

fn scalar(name: &str, dtype: DType) -> Param {
    Param {
        name: name.into(),
        kind: ParamKind::Scalar { dtype },
        span: Span::default(),
    }
}

/// `gemm(A: f32[M, K], B: f32[K, N] (col-major), C: f16[M, N], alpha: f32, splits: i32)`,
/// `@aligned(K = 8)`, `@where(K >= 8)`, grid `(cdiv(N, 64), cdiv(M, 32), splits)`.
fn gemm() -> Kernel {
    let (m, k, n) = (0, 1, 2);
    let ge = Expr {
        kind: ExprKind::Binary(BinOp::Ge, Box::new(dim(k)), Box::new(lit(8))),
        ty: Ty::Scalar(DType::Bool),
        uniform: true,
        span: Span::default(),
    };
    Kernel {
        name: "gemm".into(),
        point: Point::default(),
        type_args: vec![],
        params: vec![
            tensor(
                "A",
                DType::F32,
                vec![Dim::Dyn(m), Dim::Dyn(k)],
                MemOrder::RowMajor,
            ),
            tensor(
                "B",
                DType::F32,
                vec![Dim::Dyn(k), Dim::Dyn(n)],
                MemOrder::ColMajor,
            ),
            tensor(
                "C",
                DType::F16,
                vec![Dim::Dyn(m), Dim::Dyn(n)],
                MemOrder::RowMajor,
            ),
            scalar("alpha", DType::F32),
            scalar("splits", DType::I32),
        ],
        dims: vec![
            DimVar {
                name: "M".into(),
                source: (0, 0),
            },
            DimVar {
                name: "K".into(),
                source: (0, 1),
            },
            DimVar {
                name: "N".into(),
                source: (1, 1),
            },
        ],
        aligned: vec![(k, 8)],
        launch: Launch {
            threads: 128,
            min_blocks_per_sm: None,
            max_regs: None,
        },
        grid: [
            cdiv(dim(n), lit(64)),
            cdiv(dim(m), lit(32)),
            int(ExprKind::Param(4)),
        ],
        wheres: vec![ge],
        flops: None,
        bytes: None,
        locals: vec![],
        body: vec![],
        span: Span::default(),
    }
}

struct Shapes {
    a: Vec<usize>,
    b: Vec<usize>,
    c: Vec<usize>,
}

fn shapes(m: usize, k: usize, n: usize) -> Shapes {
    Shapes {
        a: vec![m, k],
        b: vec![k, n],
        c: vec![m, n],
    }
}

fn args(s: &Shapes) -> Vec<Arg<'_>> {
    vec![
        Arg::Tensor(TensorRef {
            ptr: 0x1000,
            dtype: DType::F32,
            shape: &s.a,
            order: MemOrder::RowMajor,
        }),
        Arg::Tensor(TensorRef {
            ptr: 0x2000,
            dtype: DType::F32,
            shape: &s.b,
            order: MemOrder::ColMajor,
        }),
        Arg::Tensor(TensorRef {
            ptr: 0x3000,
            dtype: DType::F16,
            shape: &s.c,
            order: MemOrder::RowMajor,
        }),
        Arg::Scalar(0.5),
        Arg::Scalar(2.0),
    ]
}

#[test]
fn binds_and_packs_params_then_dims() {
    let s = shapes(100, 64, 130);
    let b = bind_args(&gemm(), &args(&s)).unwrap();
    assert_eq!(b.kernel, "gemm");
    assert_eq!(b.grid, [3, 4, 2]);
    assert_eq!(b.block, 128);
    assert_eq!(
        b.dims,
        vec![("M".into(), 100), ("K".into(), 64), ("N".into(), 130)]
    );
    assert_eq!(b.args.len(), 8);
    assert_eq!(b.args.bytes(0), 0x1000u64.to_le_bytes());
    assert_eq!(b.args.bytes(1), 0x2000u64.to_le_bytes());
    assert_eq!(b.args.bytes(2), 0x3000u64.to_le_bytes());
    assert_eq!(b.args.bytes(3), 0.5f32.to_le_bytes());
    assert_eq!(b.args.bytes(4), 2i32.to_le_bytes());
    assert_eq!(b.args.bytes(5), 100i32.to_le_bytes());
    assert_eq!(b.args.bytes(6), 64i32.to_le_bytes());
    assert_eq!(b.args.bytes(7), 130i32.to_le_bytes());
}

#[test]
fn a_disagreeing_dim_names_every_tensor() {
    let s = Shapes {
        a: vec![100, 64],
        b: vec![60, 130],
        c: vec![100, 130],
    };
    let e = bind_args(&gemm(), &args(&s)).unwrap_err();
    assert_eq!(
        e,
        BindError::DimDisagree {
            dim: "K".into(),
            extents: vec![("A".into(), 1, 64), ("B".into(), 0, 60)],
        }
    );
    assert_eq!(
        e.to_string(),
        "runtime dim `K` disagrees across tensors: `A` axis 1 = 64, `B` axis 0 = 60"
    );
    // The dim's source axis is listed first even when it is not the first tensor.
    let s = Shapes {
        a: vec![100, 64],
        b: vec![64, 130],
        c: vec![100, 131],
    };
    match bind_args(&gemm(), &args(&s)).unwrap_err() {
        BindError::DimDisagree { dim, extents } => {
            assert_eq!(dim, "N");
            assert_eq!(extents[0], ("B".into(), 1, 130));
            assert_eq!(extents[1], ("C".into(), 1, 131));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn aligned_dims_are_checked() {
    let s = shapes(100, 60, 130);
    let e = bind_args(&gemm(), &args(&s)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "runtime dim `K` = 60 is not a multiple of 8 (@aligned)"
    );
}

#[test]
fn where_constraints_are_checked() {
    let s = shapes(100, 0, 130);
    let e = bind_args(&gemm(), &args(&s)).unwrap_err();
    assert_eq!(
        e,
        BindError::Where {
            constraint: "K >= 8".into()
        }
    );
}

#[test]
fn an_empty_grid_is_an_error() {
    let s = shapes(0, 64, 130);
    match bind_args(&gemm(), &args(&s)).unwrap_err() {
        BindError::Grid { axis, value, .. } => assert_eq!((axis, value), ('y', 0)),
        other => panic!("{other:?}"),
    }
    let s = shapes(10, 64, 130);
    let mut a = args(&s);
    a[4] = Arg::Scalar(70000.0);
    match bind_args(&gemm(), &a).unwrap_err() {
        BindError::Grid { axis, value, .. } => assert_eq!((axis, value), ('z', 70000)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_per_argument_mismatch_is_typed() {
    let s = shapes(100, 64, 130);
    let k = gemm();
    let mut a = args(&s);
    a.pop();
    assert!(matches!(
        bind_args(&k, &a),
        Err(BindError::ArgCount {
            expected: 5,
            got: 4,
            ..
        })
    ));

    let mut a = args(&s);
    a[3] = a[0];
    assert_eq!(
        bind_args(&k, &a).unwrap_err().to_string(),
        "argument `alpha` must be a scalar"
    );
    let mut a = args(&s);
    a[0] = Arg::Scalar(1.0);
    assert_eq!(
        bind_args(&k, &a).unwrap_err().to_string(),
        "argument `A` must be a tensor"
    );

    let mut a = args(&s);
    if let Arg::Tensor(t) = &mut a[2] {
        t.dtype = DType::BF16;
    }
    assert_eq!(
        bind_args(&k, &a).unwrap_err().to_string(),
        "tensor `C` must hold f16, got bf16"
    );

    let flat = vec![100 * 64];
    let mut a = args(&s);
    if let Arg::Tensor(t) = &mut a[0] {
        t.shape = &flat;
    }
    assert!(matches!(
        bind_args(&k, &a),
        Err(BindError::Rank { expected: 2, .. })
    ));

    let mut a = args(&s);
    if let Arg::Tensor(t) = &mut a[1] {
        t.order = MemOrder::RowMajor;
    }
    assert_eq!(
        bind_args(&k, &a).unwrap_err().to_string(),
        "tensor `B` must be stored ColMajor, got RowMajor"
    );

    let mut a = args(&s);
    if let Arg::Tensor(t) = &mut a[0] {
        t.ptr = 0x1002;
    }
    assert!(matches!(
        bind_args(&k, &a),
        Err(BindError::Pointer { align: 4, .. })
    ));

    let mut a = args(&s);
    a[4] = Arg::Scalar(1.5);
    assert!(matches!(
        bind_args(&k, &a),
        Err(BindError::ScalarValue { .. })
    ));
}

#[test]
fn tf32_tensors_bind_to_f32_storage_and_static_extents_are_checked() {
    let mut k = gemm();
    if let ParamKind::Tensor { dtype, dims, .. } = &mut k.params[0].kind {
        *dtype = DType::Tf32;
        dims[0] = Dim::Static(100);
    }
    k.dims[0].source = (2, 0);
    let s = shapes(100, 64, 130);
    assert!(bind_args(&k, &args(&s)).is_ok());
    let s = Shapes {
        a: vec![99, 64],
        b: vec![64, 130],
        c: vec![100, 130],
    };
    assert_eq!(
        bind_args(&k, &args(&s)).unwrap_err().to_string(),
        "tensor `A` axis 0 must have extent 100, got 99"
    );
}

#[test]
fn dims_over_int_range_are_refused() {
    let s = shapes(1 << 31, 64, 8);
    assert!(matches!(
        bind_args(&gemm(), &args(&s)),
        Err(BindError::DimTooLarge { value, .. }) if value == 1 << 31
    ));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        rng_seed: proptest::test_runner::RngSeed::Fixed(3),
        ..ProptestConfig::default()
    })]

    #[test]
    fn grid_and_dims_follow_the_problem(m in 1usize..5000, k8 in 1usize..600, n in 1usize..5000, z in 1i32..8) {
        let s = shapes(m, k8 * 8, n);
        let mut a = args(&s);
        a[4] = Arg::Scalar(z as f64);
        let b = bind_args(&gemm(), &a).unwrap();
        prop_assert_eq!(b.grid, [n.div_ceil(64) as u32, m.div_ceil(32) as u32, z as u32]);
        prop_assert_eq!(b.args.bytes(5), (m as i32).to_le_bytes().to_vec());
        prop_assert_eq!(b.args.bytes(6), ((k8 * 8) as i32).to_le_bytes().to_vec());
        prop_assert_eq!(b.args.bytes(7), (n as i32).to_le_bytes().to_vec());
    }
}
