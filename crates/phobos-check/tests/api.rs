//! The library API: load, kernel selection, variants, check_module, eval_where.

mod common;
use phobos_check::{
    check_variant, eval_where, instantiate, load, DimInfo, Elem, ParamInfoKind, VariantError,
};
use phobos_ir::{DType, MemOrder};
use phobos_syntax::SourceFile;

fn example(name: &str) -> phobos_check::Module {
    let path = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    common::module(&std::fs::read_to_string(path).unwrap())
}

#[test]
fn kernel_info_describes_the_signature() {
    let m = example("gemm_typed.ph");
    let k = m.kernel(None).unwrap();
    assert_eq!(k.name, "gemm_typed");
    assert_eq!(
        k.type_params,
        vec![
            ("TA".into(), Some(DType::F16)),
            ("TB".into(), Some(DType::F16)),
            ("TC".into(), Some(DType::F32))
        ]
    );
    assert_eq!(k.tensor_names(), ["A", "B", "C"]);
    assert_eq!(k.runtime_dims(), ["M", "K", "N"]);
    let ParamInfoKind::Tensor { elem, dims } = &k.params[0].kind else {
        panic!()
    };
    assert_eq!(elem, &Elem::Param("TA".into()));
    assert_eq!(
        dims,
        &[DimInfo::Runtime("M".into()), DimInfo::Runtime("K".into())]
    );
    let m = example("flash_attention.ph");
    let k = m.kernel(None).unwrap();
    let ParamInfoKind::Tensor { dims, .. } = &k.param("Q").unwrap().kind else {
        panic!()
    };
    assert_eq!(dims[2], DimInfo::Declared("D".into()));
    assert!(matches!(
        k.param("scale").unwrap().kind,
        ParamInfoKind::Scalar {
            elem: Elem::Concrete(DType::F32)
        }
    ));
}

#[test]
fn kernel_selection() {
    let m = common::module("kernel a(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\nkernel b(X: tensor<f32>[N]) {\n  X[0] = 1.0\n}\n");
    assert_eq!(m.kernel(Some("b")).unwrap().index, 1);
    assert_eq!(
        m.kernel(None).unwrap_err(),
        "t.ph has several kernels; choose one with --kernel (a, b)"
    );
    assert_eq!(
        m.kernel(Some("c")).unwrap_err(),
        "t.ph has no kernel `c` (kernels: a, b)"
    );
}

#[test]
fn variants_from_cli_strings() {
    let m = example("gemm_typed.ph");
    let k = m.kernel(None).unwrap();
    let v = k
        .variant(
            Some("TILE_M=128"),
            Some("TA=bf16, TB = bf16"),
            Some("B=col"),
        )
        .unwrap();
    assert_eq!(v.point.get("TILE_M"), Some(128));
    assert_eq!(v.types[0], ("TA".into(), DType::BF16));
    assert_eq!(v.types[2], ("TC".into(), DType::F32));
    assert_eq!(
        v.orders,
        vec![
            ("A".into(), MemOrder::RowMajor),
            ("B".into(), MemOrder::ColMajor),
            ("C".into(), MemOrder::RowMajor)
        ]
    );
    let ir = instantiate(&m, k, &v).unwrap();
    assert!(matches!(
        ir.params[1].kind,
        phobos_ir::ParamKind::Tensor {
            order: MemOrder::ColMajor,
            dtype: DType::BF16,
            ..
        }
    ));

    let err = |a: Option<&str>, t: Option<&str>, l: Option<&str>| {
        k.variant(a, t, l).unwrap_err().to_string()
    };
    assert_eq!(
        err(None, Some("TX=f16"), None),
        "`TX` is not a type parameter of `gemm_typed` (type parameters: TA, TB, TC)"
    );
    assert!(err(None, Some("TA=f17"), None)
        .starts_with("unknown element type `f17` for `TA` (valid: bool, i8"));
    assert_eq!(
        err(None, None, Some("Z=col")),
        "`Z` is not a tensor parameter of `gemm_typed` (tensors: A, B, C)"
    );
    assert_eq!(
        err(None, None, Some("A=diag")),
        "unknown layout `diag` for `A` (valid: row, col)"
    );
    assert!(err(Some("M=4"), None, None)
        .starts_with("`M` is not declared in @autotune (declared: TILE_M, TILE_N, TILE_K, WARP_M"));
    assert_eq!(
        err(None, Some("TA"), None),
        "`TA` is not of the form NAME=VALUE"
    );
}

#[test]
fn tuner_dtype_aliases_are_accepted() {
    let m = example("gemm_typed.ph");
    let k = m.kernel(None).unwrap();
    let v = k
        .variant(None, Some("TA=fp16,TB=fp16,TC=fp32"), None)
        .unwrap();
    assert_eq!(v.types[1], ("TB".into(), DType::F16));
}

#[test]
fn unbound_type_parameters() {
    let m = common::module("kernel k<T>(X: tensor<T>[N]) {\n  X[0] = T(1)\n}\n");
    let k = m.kernel(None).unwrap();
    assert_eq!(
        k.default_variant().unwrap_err(),
        VariantError::Unbound { name: "T".into() }
    );
    assert_eq!(check_variant(k).types, vec![("T".into(), DType::F32)]);
    assert!(phobos_check::check_module(&m).is_empty());
}

#[test]
fn instantiate_rejects_foreign_points() {
    let m = example("gemm.ph");
    let k = m.kernel(None).unwrap();
    let mut v = k.default_variant().unwrap();
    v.point.0.pop();
    v.point.0.push(("BOGUS".into(), 1));
    let d = instantiate(&m, k, &v).unwrap_err();
    let msgs: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        msgs,
        [
            "the point gives no value for `TILE_K`",
            "`BOGUS` is not declared in @autotune (declared: TILE_M, TILE_N, TILE_K)"
        ]
    );
    assert!(d.iter().all(|d| d.code == "E0109"));
}

#[test]
fn pinned_values_outside_the_choices_are_checked() {
    let m = example("gemm.ph");
    let k = m.kernel(None).unwrap();
    let v = k.variant(Some("TILE_M=0"), None, None).unwrap();
    let d = instantiate(&m, k, &v).unwrap_err();
    assert_eq!(d[0].code, "E0605");
}

#[test]
fn load_errors_and_warnings() {
    let err = load(SourceFile::new("x.ph", "kernel k( {\n")).unwrap_err();
    assert!(err
        .iter()
        .any(|d| d.is_error() && d.code.starts_with("E00")));
    let m = load(SourceFile::new(
        "x.ph",
        "@fast\nkernel k(X: tensor<f32>[N]) {\n  X[0] = 0.0\n}\n",
    ))
    .unwrap();
    assert_eq!(m.warnings.len(), 1);
    assert_eq!(m.warnings[0].code, "W0001");
    assert_eq!(phobos_check::check_module(&m), m.warnings);
}

#[test]
fn eval_where_for_problems() {
    let m = example("gemm_typed.ph");
    let k = m.kernel(None).unwrap();
    let ir = instantiate(&m, k, &k.default_variant().unwrap()).unwrap();
    let dims = |k_: i64| {
        vec![
            ("M".to_string(), 64),
            ("N".to_string(), 64),
            ("K".to_string(), k_),
        ]
    };
    assert_eq!(eval_where(&ir, &dims(4096)), Ok(None));
    assert_eq!(
        eval_where(&ir, &dims(100)),
        Ok(Some("violates @where(K % 8 == 0) with K=100".into()))
    );
    assert_eq!(
        eval_where(&ir, &[]),
        Err("the runtime dim `K` has no value".into())
    );
}

#[test]
fn where_over_declared_names_and_dims() {
    let m = common::module(
        "@autotune(SPLIT_K in [1, 4], TILE_K in [16, 32])\n@where(K % (SPLIT_K * TILE_K) == 0)\nkernel k(X: tensor<f32>[M, K]) {\n  X[0, 0] = 0.0\n}\n",
    );
    let k = m.kernel(None).unwrap();
    let ir = instantiate(
        &m,
        k,
        &k.variant(Some("SPLIT_K=4 TILE_K=32"), None, None).unwrap(),
    )
    .unwrap();
    assert_eq!(
        eval_where(&ir, &[("K".into(), 64), ("M".into(), 1)]),
        Ok(Some("violates @where(K % 128 == 0) with K=64".into()))
    );
    assert_eq!(eval_where(&ir, &[("K".into(), 256)]), Ok(None));
}
