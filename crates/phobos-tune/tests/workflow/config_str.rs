//! Config strings: the printed form, parsing, errors, and print-then-parse for any config.

use phobos_ir::{DType, MemOrder, Point};
use phobos_tune::workflow::{ConfigStrError, ConfigString, GemmProblem, Operands};
use proptest::prelude::*;

fn point(values: &[(&str, i64)]) -> Point {
    Point(values.iter().map(|&(n, v)| (n.to_string(), v)).collect())
}

fn gemm() -> ConfigString {
    let mut problem = GemmProblem::new(4864, 4096, 8192);
    problem.operands = Operands {
        dtype_a: Some(DType::BF16),
        dtype_b: Some(DType::BF16),
        dtype_c: Some(DType::F32),
        order_a: Some(MemOrder::RowMajor),
        order_b: Some(MemOrder::ColMajor),
    };
    let p = point(&[
        ("TILE_M", 128),
        ("TILE_N", 128),
        ("TILE_K", 32),
        ("STAGES", 3),
    ]);
    ConfigString::new(problem, p).unwrap()
}

#[test]
fn prints_dims_then_tuning_values_then_operands() {
    assert_eq!(
        gemm().to_string(),
        "M=4864_N=4096_K=8192_TILE_M=128_TILE_N=128_TILE_K=32_STAGES=3_A=bf16-row_B=bf16-col_C=f32"
    );
    let bare = ConfigString::new(GemmProblem::new(16, 8, 128), Point::default()).unwrap();
    assert_eq!(bare.to_string(), "M=16_N=8_K=128");
}

#[test]
fn parses_what_it_prints_and_the_aliases() {
    let cs: ConfigString = gemm().to_string().parse().unwrap();
    assert_eq!(cs, gemm());
    let cs: ConfigString = " M=16_N=8_K=128_BLOCK_SIZE_M=64_SPLIT_K=2_A=col-fp16_B=bf8_C=fp32 "
        .parse()
        .unwrap();
    assert_eq!((cs.problem.m, cs.problem.n, cs.problem.k), (16, 8, 128));
    assert_eq!(cs.point, point(&[("BLOCK_SIZE_M", 64), ("SPLIT_K", 2)]));
    let ops = cs.problem.operands;
    assert_eq!(
        (ops.dtype_a, ops.order_a),
        (Some(DType::F16), Some(MemOrder::ColMajor))
    );
    assert_eq!((ops.dtype_b, ops.order_b), (Some(DType::F8E5M2), None));
    assert_eq!(ops.dtype_c, Some(DType::F32));
}

#[test]
fn names_with_underscores_and_digits_are_unambiguous() {
    let p = point(&[("X2", 64), ("_A", 1), ("TILE__K", -3), ("A", 7), ("M", 5)]);
    let cs = ConfigString::new(GemmProblem::new(1, 2, 3), p.clone()).unwrap();
    let text = cs.to_string();
    assert_eq!(text, "M=1_N=2_K=3_X2=64__A=1_TILE__K=-3_A=7_M=5");
    assert_eq!(text.parse::<ConfigString>().unwrap().point, p);
}

#[test]
fn malformed_strings_say_where_and_why() {
    let cases = [
        ("", "the config string is empty"),
        (
            "M16_N8_K128_BM64",
            "at column 1: `M16` is not of the form NAME=VALUE",
        ),
        (
            "M=16_N=8",
            "at column 9: expected `K=<dim>`, found `the end`",
        ),
        (
            "N=8_M=16_K=1",
            "at column 1: expected `M=<dim>`, found `N=8`",
        ),
        ("M=0_N=8_K=1", "at column 1: M must be a positive integer"),
        (
            "M=1_N=2147483648_K=1",
            "at column 5: N must be a positive integer",
        ),
        (
            "M=1_N=1_K=1_TILE_M=12x",
            "at column 13: the value of `TILE_M` must be an integer, not `12x`",
        ),
        (
            "M=1_N=1_K=1_TILE_M=row",
            "`TILE_M=row`: only the operands A, B and C take",
        ),
        ("M=1_N=1_K=1_X=1_X=2", "at column 17: `X` is given twice"),
        ("M=1_N=1_K=1_A=f16_A=bf16", "`A` is given twice"),
        ("M=1_N=1_K=1_", "is not of the form NAME=VALUE"),
        ("M=1_N=1_K=1_X=", "`X=` is not of the form NAME=VALUE"),
        ("M=1_N=1_K=1_X=1=2", "`X=1=2` is not of the form NAME=VALUE"),
        ("M=1_N=1_K=1_TILE-M=2", "`TILE-M=2` is not of the form"),
        (
            "M=1_N=1_K=1_A=bf17",
            "`bf17` in `A=bf17` is not an element type or a layout (row, col)",
        ),
        (
            "M=1_N=1_K=1_C=f32-col",
            "`col` in `C=f32-col` is not an element type (C has no layout)",
        ),
        ("M=1_N=1_K=1_B=row-col", "`B layout` is given twice"),
        ("M=1_N=1_K=1_B=f16-bf16", "`B element type` is given twice"),
    ];
    for (text, want) in cases {
        let err = text.parse::<ConfigString>().expect_err(text).to_string();
        assert!(err.contains(want), "{text:?}: {err}");
    }
}

#[test]
fn configs_that_could_not_be_read_back_are_not_printed() {
    let p = GemmProblem::new(1, 1, 1);
    for name in ["A=B", "", "1X", "TILE M", "X-Y"] {
        let err = ConfigString::new(p, point(&[(name, 1)])).unwrap_err();
        assert_eq!(
            err,
            ConfigStrError::BadName {
                name: name.to_string()
            }
        );
    }
    assert!(matches!(
        ConfigString::new(p, point(&[("X", 1), ("X", 2)])),
        Err(ConfigStrError::Duplicate { .. })
    ));
    assert!(matches!(
        ConfigString::new(GemmProblem::new(0, 1, 1), Point::default()),
        Err(ConfigStrError::BadDim { .. })
    ));
}

fn dtype() -> impl Strategy<Value = Option<DType>> {
    prop::option::of(prop::sample::select(DType::ALL.to_vec()))
}

fn order() -> impl Strategy<Value = Option<MemOrder>> {
    prop::option::of(prop_oneof![
        Just(MemOrder::RowMajor),
        Just(MemOrder::ColMajor)
    ])
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        rng_seed: proptest::test_runner::RngSeed::Fixed(2),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn print_then_parse_is_the_identity(
        dims in (1..=i32::MAX as i64, 1..=i32::MAX as i64, 1..=i32::MAX as i64),
        ops in (dtype(), dtype(), dtype(), order(), order()),
        names in prop::collection::vec("[A-Za-z_][A-Za-z0-9_]{0,10}", 0..8),
        values in prop::collection::vec(any::<i64>(), 8),
    ) {
        let mut names = names;
        names.dedup();
        names.sort();
        names.dedup();
        let p = Point(names.into_iter().zip(values).collect());
        let (dtype_a, dtype_b, dtype_c, order_a, order_b) = ops;
        let problem = GemmProblem {
            m: dims.0,
            n: dims.1,
            k: dims.2,
            operands: Operands { dtype_a, dtype_b, dtype_c, order_a, order_b },
        };
        let cs = ConfigString::new(problem, p).unwrap();
        let text = cs.to_string();
        prop_assert_eq!(text.parse::<ConfigString>(), Ok(cs), "{}", text);
    }

    #[test]
    fn parsing_never_panics_and_accepts_only_what_it_prints(text in "[MNKABC_=0-9a-z\\-]{0,40}") {
        if let Ok(cs) = text.parse::<ConfigString>() {
            let again = cs.to_string().parse::<ConfigString>();
            prop_assert_eq!(again, Ok(cs));
        }
    }
}
