use super::*;
use crate::ir::{DimVar, Launch, Param, Point, Ty};
use phobos_syntax::Span;

fn e(kind: ExprKind, t: DType) -> Expr {
    Expr {
        kind,
        ty: Ty::Scalar(t),
        uniform: true,
        span: Span::default(),
    }
}

fn int(v: i64, t: DType) -> Expr {
    e(ExprKind::Lit(Lit::Int(v)), t)
}

fn bin(op: BinOp, a: Expr, b: Expr, t: DType) -> Expr {
    e(ExprKind::Binary(op, Box::new(a), Box::new(b)), t)
}

fn kernel() -> Kernel {
    let lit = int(1, DType::I32);
    Kernel {
        name: "k".into(),
        point: Point::default(),
        type_args: vec![],
        params: vec![
            Param {
                name: "X".into(),
                kind: ParamKind::Tensor {
                    dtype: DType::F32,
                    dims: vec![crate::ir::Dim::Dyn(0)],
                    order: Default::default(),
                },
                span: Span::default(),
            },
            Param {
                name: "alpha".into(),
                kind: ParamKind::Scalar { dtype: DType::F32 },
                span: Span::default(),
            },
        ],
        dims: vec![DimVar {
            name: "K".into(),
            source: (0, 0),
        }],
        aligned: vec![],
        launch: Launch {
            threads: 256,
            min_blocks_per_sm: None,
            max_regs: None,
        },
        grid: [lit.clone(), lit.clone(), lit],
        wheres: vec![],
        flops: None,
        bytes: None,
        locals: vec![],
        body: vec![],
        span: Span::default(),
    }
}

#[test]
fn integers_wrap_at_their_width() {
    let sum = bin(
        BinOp::Add,
        int(i32::MAX as i64, DType::I32),
        int(1, DType::I32),
        DType::I32,
    );
    assert_eq!(eval(&sum, &Constants), Ok(Value::Int(i32::MIN as i64)));
    let u = bin(
        BinOp::Sub,
        int(0, DType::U32),
        int(1, DType::U32),
        DType::U32,
    );
    assert_eq!(eval(&u, &Constants), Ok(Value::Int(u32::MAX as i64)));
    let b = bin(
        BinOp::Mul,
        int(100, DType::I8),
        int(3, DType::I8),
        DType::I8,
    );
    assert_eq!(eval(&b, &Constants), Ok(Value::Int(44)));
}

#[test]
fn division_truncates_and_cdiv_rounds_up() {
    let d = bin(
        BinOp::Div,
        int(-7, DType::I32),
        int(2, DType::I32),
        DType::I32,
    );
    assert_eq!(eval_i64(&d, &Constants), Ok(-3));
    let r = bin(
        BinOp::Rem,
        int(-7, DType::I32),
        int(2, DType::I32),
        DType::I32,
    );
    assert_eq!(eval_i64(&r, &Constants), Ok(-1));
    let c = e(
        ExprKind::Cdiv(
            Box::new(int(100, DType::I32)),
            Box::new(int(32, DType::I32)),
        ),
        DType::I32,
    );
    assert_eq!(eval_i64(&c, &Constants), Ok(4));
    let c = e(
        ExprKind::Cdiv(Box::new(int(-7, DType::I32)), Box::new(int(2, DType::I32))),
        DType::I32,
    );
    assert_eq!(eval_i64(&c, &Constants), Ok(-3));
    let z = bin(
        BinOp::Div,
        int(1, DType::I32),
        int(0, DType::I32),
        DType::I32,
    );
    assert_eq!(eval(&z, &Constants), Err(EvalError::DivByZero));
}

#[test]
fn shifts_out_of_range_are_errors() {
    let s = bin(
        BinOp::Shl,
        int(1, DType::I32),
        int(32, DType::I32),
        DType::I32,
    );
    assert!(matches!(
        eval(&s, &Constants),
        Err(EvalError::ShiftOutOfRange(32, _))
    ));
    let s = bin(
        BinOp::Shr,
        int(-8, DType::I32),
        int(1, DType::I32),
        DType::I32,
    );
    assert_eq!(eval_i64(&s, &Constants), Ok(-4));
}

#[test]
fn floats_round_to_their_type() {
    let x = bin(
        BinOp::Add,
        e(ExprKind::Lit(Lit::Float(1.0)), DType::F16),
        e(ExprKind::Lit(Lit::Float(1.0 / 4096.0)), DType::F16),
        DType::F16,
    );
    assert_eq!(eval(&x, &Constants), Ok(Value::Float(1.0)));
    let c = e(
        ExprKind::Cast(Box::new(e(ExprKind::Lit(Lit::Float(-2.7)), DType::F32))),
        DType::I32,
    );
    assert_eq!(eval(&c, &Constants), Ok(Value::Int(-2)));
    let c = e(ExprKind::Cast(Box::new(int(300, DType::I32))), DType::U8);
    assert_eq!(eval(&c, &Constants), Ok(Value::Int(44)));
}

#[test]
fn dims_and_params_come_from_bindings() {
    let k = kernel();
    let dim = e(ExprKind::Dim(0), DType::I64);
    let cond = bin(
        BinOp::Eq,
        bin(BinOp::Rem, dim.clone(), int(64, DType::I64), DType::I64),
        int(0, DType::I64),
        DType::Bool,
    );
    let b = Bindings::new(&k, &[("K".into(), 128), ("Z".into(), 3)], &[]);
    assert_eq!(eval_bool(&cond, &b), Ok(true));
    let b = Bindings::new(&k, &[("K".into(), 100)], &[]);
    assert_eq!(eval_bool(&cond, &b), Ok(false));
    let none = Bindings::new(&k, &[], &[]);
    assert_eq!(
        eval_bool(&cond, &none),
        Err(EvalError::UnboundDim("K".into()))
    );
    let p = e(ExprKind::Param(1), DType::F32);
    let b = Bindings::new(&k, &[], &[("alpha".into(), Value::Float(0.1))]);
    assert_eq!(eval(&p, &b), Ok(Value::Float(0.1f32 as f64)));
    assert_eq!(display(&cond, &k), "K % 64 == 0");
    let wide = e(
        ExprKind::Cast(Box::new(e(ExprKind::Dim(0), DType::I32))),
        DType::I64,
    );
    assert_eq!(display(&wide, &k), "K");
}

#[test]
fn non_uniform_values_do_not_evaluate() {
    let t = e(ExprKind::Ctx(Ctx::Thread), DType::I32);
    assert!(matches!(
        eval(&t, &Constants),
        Err(EvalError::NotUniformScalar(_))
    ));
    let l = e(ExprKind::Local(0), DType::I32);
    assert!(matches!(
        eval(&l, &Constants),
        Err(EvalError::NotUniformScalar(_))
    ));
}

#[test]
fn display_parenthesizes_by_precedence() {
    let k = kernel();
    let dim = e(ExprKind::Dim(0), DType::I32);
    let x = bin(
        BinOp::Mul,
        bin(BinOp::Add, dim.clone(), int(1, DType::I32), DType::I32),
        int(2, DType::I32),
        DType::I32,
    );
    assert_eq!(display(&x, &k), "(K + 1) * 2");
    let m = bin(BinOp::Max, dim, int(2, DType::I32), DType::I32);
    assert_eq!(display(&m, &k), "max(K, 2)");
}

#[test]
fn erf_matches_published_values() {
    // Abramowitz and Stegun, table 7.1 (to 10 places), and the symmetric and saturated ends.
    for (x, want) in [
        (0.1, 0.112_462_916_0),
        (0.5, 0.520_499_877_8),
        (1.0, 0.842_700_792_9),
        (1.5, 0.966_105_146_5),
        (2.0, 0.995_322_265_0),
        (3.0, 0.999_977_909_5),
    ] {
        assert!((erf(x) - want).abs() < 1e-10, "erf({x}) = {}", erf(x));
        assert!((erf(-x) + want).abs() < 1e-10, "erf(-{x}) = {}", erf(-x));
    }
    assert_eq!(erf(0.0), 0.0);
    assert_eq!(erf(7.0), 1.0);
    assert_eq!(erf(f64::NEG_INFINITY), -1.0);
    assert!(erf(f64::NAN).is_nan());
}

#[test]
fn new_math_functions_follow_numpy() {
    let f = |m: MathFn, x: f64| match math(m, Value::Float(x), DType::F64) {
        Value::Float(y) => y,
        v => panic!("{v:?}"),
    };
    // Halves to even, like numpy.round.
    assert_eq!(f(MathFn::Round, 2.5), 2.0);
    assert_eq!(f(MathFn::Round, 3.5), 4.0);
    assert_eq!(f(MathFn::Round, -0.5), -0.0);
    assert_eq!(f(MathFn::Floor, -1.25), -2.0);
    assert_eq!(f(MathFn::Ceil, -1.25), -1.0);
    assert_eq!(f(MathFn::Log2, 8.0), 3.0);
    assert_eq!(f(MathFn::Log1p, 1e-20), 1e-20);
    assert_eq!(f(MathFn::Expm1, 1e-20), 1e-20);
    assert_eq!(f(MathFn::Sigmoid, 0.0), 0.5);
    assert!((f(MathFn::Sin, 1.0) - 0.841_470_984_807_896_5).abs() < 1e-15);
    assert!((f(MathFn::Cos, 1.0) - 0.540_302_305_868_139_8).abs() < 1e-15);
    // f16 computes in f32 and rounds: sigmoid(1) = 0.7310585.. rounds to 0.73095703125.
    assert_eq!(
        math(MathFn::Sigmoid, Value::Float(1.0), DType::F16),
        Value::Float(0.730_957_031_25)
    );
}

#[test]
fn philox_matches_the_random123_known_answers() {
    // Random123's kat_vectors for philox4x32 with 10 rounds.
    assert_eq!(
        philox4x32_10([0; 4], [0; 2]),
        [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
    );
    assert_eq!(
        philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
        [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
    );
    assert_eq!(
        philox4x32_10(
            [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
            [0xa409_3822, 0x299f_31d0]
        ),
        [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
    );
    assert_eq!(philox(0, 0), philox4x32_10([0; 4], [0; 2]));
    assert_eq!(philox(5 << 32 | 7, 9), philox4x32_10([9, 0, 0, 0], [7, 5]));
}

#[test]
fn uniform_floats_fold_the_sign_and_scale_by_two_to_the_minus_31() {
    assert_eq!(uint_to_uniform(0), 0.0);
    assert_eq!(uint_to_uniform(1 << 30), 0.5);
    // -1 as an i32 folds to 0; i32::MIN folds to i32::MAX, which rounds to 2^31 in f32.
    assert_eq!(uint_to_uniform(u32::MAX), 0.0);
    assert_eq!(uint_to_uniform(1 << 31), 1.0);
    let r = |o: i64| match math_n(MathFnN::Rand, &[Value::Int(42), Value::Int(o)], DType::F32) {
        Value::Float(x) => x,
        v => panic!("{v:?}"),
    };
    let xs: Vec<f64> = (0..4096).map(r).collect();
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    assert!(xs.iter().all(|x| (0.0..=1.0).contains(x)));
    assert!((mean - 0.5).abs() < 0.02, "{mean}");
    let n = |o: i64| match math_n(MathFnN::Randn, &[Value::Int(42), Value::Int(o)], DType::F32) {
        Value::Float(x) => x,
        v => panic!("{v:?}"),
    };
    let ns: Vec<f64> = (0..4096).map(n).collect();
    let mean = ns.iter().sum::<f64>() / ns.len() as f64;
    let var = ns.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / ns.len() as f64;
    assert!(mean.abs() < 0.05 && (var - 1.0).abs() < 0.1, "{mean} {var}");
}
