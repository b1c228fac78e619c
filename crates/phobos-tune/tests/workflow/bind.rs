//! Binding GEMM problems to small kernels written here.

use phobos_check::{load, KernelInfo, Module};
use phobos_ir::{DType, MemOrder};
use phobos_syntax::SourceFile;
use phobos_tune::workflow::{bind, BindError, GemmProblem, Operands, TensorNames};

const BODY: &str = "{\n  let x = ctx.block.x\n}\n";

fn module(signature: &str) -> Module {
    let src = format!("{signature} {BODY}");
    load(SourceFile::new("k.ph", src.clone())).unwrap_or_else(|d| panic!("{src}\n{d:#?}"))
}

fn kernel(m: &Module) -> &KernelInfo {
    m.kernel(None).unwrap()
}

fn problem(m: i64, n: i64, k: i64, ops: Operands) -> GemmProblem {
    GemmProblem {
        m,
        n,
        k,
        operands: ops,
    }
}

fn typed() -> Module {
    module(
        "@autotune(TILE in [32, 64])\nkernel gemm<TA = f16, TB = f16, TC = f32>(\
         A: tensor<TA>[M, K], B: tensor<TB>[K, N], C: tensor<TC>[M, N])",
    )
}

#[test]
fn binds_dims_types_and_orders_of_a_typed_gemm() {
    let m = typed();
    let k = kernel(&m);
    let ops = Operands {
        dtype_a: Some(DType::BF16),
        dtype_b: Some(DType::BF16),
        dtype_c: Some(DType::F32),
        order_a: Some(MemOrder::RowMajor),
        order_b: Some(MemOrder::ColMajor),
    };
    let b = bind(k, &problem(4864, 4096, 8192, ops), &TensorNames::default()).unwrap();
    assert_eq!(
        b.dims,
        vec![
            ("M".to_string(), 4864),
            ("K".to_string(), 8192),
            ("N".to_string(), 4096)
        ]
    );
    assert_eq!(b.types_text(), "TA=bf16,TB=bf16,TC=f32");
    assert_eq!(b.layouts_text(), "A=row,B=col");
    // The strings are what the checker's variant builder takes.
    let v = k
        .variant(None, Some(&b.types_text()), Some(&b.layouts_text()))
        .unwrap();
    assert_eq!(v.types, b.types);
    assert!(v.orders.contains(&("B".to_string(), MemOrder::ColMajor)));
    let p = b.to_problem();
    assert_eq!(p.dim("N"), Some(4096));
    assert_eq!(p.layout("B"), MemOrder::ColMajor);
}

#[test]
fn unset_dtypes_leave_the_defaults_and_tf32_binds_tf32() {
    let m = typed();
    let ops = Operands {
        dtype_a: Some(DType::Tf32),
        ..Operands::default()
    };
    let b = bind(kernel(&m), &problem(8, 8, 8, ops), &TensorNames::default()).unwrap();
    assert_eq!(b.types, vec![("TA".to_string(), DType::Tf32)]);
    assert!(b.layouts.is_empty());
}

#[test]
fn a_shared_type_parameter_needs_one_dtype() {
    let m =
        module("kernel g<T = f16>(A: tensor<T>[M, K], B: tensor<T>[K, N], C: tensor<f32>[M, N])");
    let same = Operands {
        dtype_a: Some(DType::BF16),
        dtype_b: Some(DType::BF16),
        ..Operands::default()
    };
    let b = bind(kernel(&m), &problem(8, 8, 8, same), &TensorNames::default()).unwrap();
    assert_eq!(b.types, vec![("T".to_string(), DType::BF16)]);
    let mixed = Operands {
        dtype_b: Some(DType::F16),
        ..same
    };
    let e = bind(
        kernel(&m),
        &problem(8, 8, 8, mixed),
        &TensorNames::default(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "operands A and B share the type parameter `T`, but dtype_a = bf16 and dtype_b = f16"
    );
}

#[test]
fn concrete_element_types_must_match() {
    let plain =
        module("kernel g(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N])");
    let ops = |t| Operands {
        dtype_a: Some(t),
        dtype_c: Some(DType::F32),
        ..Operands::default()
    };
    let b = bind(
        kernel(&plain),
        &problem(8, 8, 8, ops(DType::F32)),
        &TensorNames::default(),
    )
    .unwrap();
    assert!(b.types.is_empty());
    let e = bind(
        kernel(&plain),
        &problem(8, 8, 8, ops(DType::BF16)),
        &TensorNames::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("operand A (`A`) is declared f32, but dtype_a = bf16"),
        "{e}"
    );
    let e = bind(
        kernel(&plain),
        &problem(8, 8, 8, ops(DType::Tf32)),
        &TensorNames::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("or @allow_tf32 on the kernel"),
        "{e}"
    );
    let tf32 = module(
        "@allow_tf32\nkernel g(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N])",
    );
    assert!(bind(
        kernel(&tf32),
        &problem(8, 8, 8, ops(DType::Tf32)),
        &TensorNames::default()
    )
    .is_ok());
}

#[test]
fn operand_tensors_can_be_renamed() {
    let m = module("kernel g(X: tensor<f32>[P, R], W: tensor<f32>[R, Q], Y: tensor<f32>[P, Q])");
    let p = problem(64, 32, 16, Operands::default());
    let e = bind(kernel(&m), &p, &TensorNames::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel `g` has no tensor `A` for operand A (its tensors: X, W, Y); map the operands to tensors, e.g. A=X,B=W,C=Y"
    );
    let names = TensorNames::parse("A=X, B=W,C=Y").unwrap();
    let b = bind(kernel(&m), &p, &names).unwrap();
    assert_eq!(
        b.dims,
        vec![
            ("P".to_string(), 64),
            ("R".to_string(), 16),
            ("Q".to_string(), 32)
        ]
    );
    for bad in ["A", "D=X", "A=X,A=Y", "B="] {
        assert!(
            matches!(
                TensorNames::parse(bad),
                Err(BindError::BadTensorNames { .. })
            ),
            "{bad}"
        );
    }
    let same = TensorNames::parse("B=A").unwrap();
    assert_eq!(
        bind(kernel(&m), &p, &same).unwrap_err().to_string(),
        "A and B both name the tensor `A`"
    );
}

#[test]
fn static_and_declared_axes() {
    let m = module("kernel g(A: tensor<f32>[M, 64], B: tensor<f32>[64, N], C: tensor<f32>[M, N])");
    assert!(bind(
        kernel(&m),
        &problem(8, 8, 64, Operands::default()),
        &TensorNames::default()
    )
    .is_ok());
    let e = bind(
        kernel(&m),
        &problem(8, 8, 128, Operands::default()),
        &TensorNames::default(),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "axis 1 of `A` is fixed at 64, but K = 128");
    let m = module("@autotune(T in [16])\nkernel g(A: tensor<f32>[M, T], B: tensor<f32>[T, N], C: tensor<f32>[M, N])");
    let e = bind(
        kernel(&m),
        &problem(8, 8, 16, Operands::default()),
        &TensorNames::default(),
    )
    .unwrap_err();
    assert!(matches!(e, BindError::Declared { axis: 1, .. }), "{e}");
}

#[test]
fn a_transposed_declaration_conflicts_when_dims_differ() {
    let m = module("kernel g(A: tensor<f32>[M, K], B: tensor<f32>[N, K], C: tensor<f32>[M, N])");
    let e = bind(
        kernel(&m),
        &problem(8, 16, 32, Operands::default()),
        &TensorNames::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "`K` is K at A axis 1 and N at B axis 1, but the problem has K = 32, N = 16"
        ),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("a transposed operand is a col-major layout"),
        "{e}"
    );
}

#[test]
fn shapes_and_parameters_that_do_not_fit() {
    let names = TensorNames::default();
    let p = problem(8, 8, 8, Operands::default());
    let m = module("kernel g(A: tensor<f32>[M], B: tensor<f32>[K, N], C: tensor<f32>[M, N])");
    assert_eq!(
        bind(kernel(&m), &p, &names).unwrap_err().to_string(),
        "operand A (`A`) has rank 1; a GEMM operand is a matrix A[M, K]"
    );
    let m = module("kernel g(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: f32)");
    assert_eq!(
        bind(kernel(&m), &p, &names).unwrap_err().to_string(),
        "`C` (operand C) is a scalar parameter of `g`, not a tensor (its tensors: A, B)"
    );
    let m = module("kernel g(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N], D: tensor<f32>[L])");
    assert_eq!(
        bind(kernel(&m), &p, &names).unwrap_err().to_string(),
        "the runtime dim `L` of `D` is not an axis of the GEMM operands; the GEMM workflow cannot size it"
    );
    let m = module("kernel g<T>(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<T>[M, N])");
    assert!(matches!(
        bind(kernel(&m), &p, &names),
        Err(BindError::UnboundType { .. })
    ));
    let ops = Operands {
        dtype_c: Some(DType::F16),
        ..Operands::default()
    };
    assert!(bind(kernel(&m), &problem(8, 8, 8, ops), &names).is_ok());
    let e = bind(kernel(&m), &problem(0, 8, 8, ops), &names).unwrap_err();
    assert_eq!(e.to_string(), "M = 0 is not a positive i32");
}

#[test]
fn extra_tensors_over_the_same_dims_are_fine() {
    let m = module(
        "kernel g(A: tensor<f32>[M, K], B: tensor<f32>[K, N], bias: tensor<f32>[N], C: tensor<f32>[M, N], alpha: f32)",
    );
    let b = bind(
        kernel(&m),
        &problem(8, 4, 2, Operands::default()),
        &TensorNames::default(),
    )
    .unwrap();
    assert_eq!(b.dims.len(), 3);
    assert_eq!(b.to_problem().dim("K"), Some(2));
}
