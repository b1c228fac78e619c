//! What the lowering produces: folded constants, typed literals, explicit casts and
//! broadcasts, desugared compound assignment, static slices.

mod common;
use common::{lower, lower_at};
use phobos_ir::{self as ir, DType, Ty};

/// The value of the `n`-th top-level statement (an Assign or a Store).
fn value(k: &ir::Kernel, n: usize) -> &ir::Expr {
    match &k.body[n].kind {
        ir::StmtKind::Assign { value, .. } | ir::StmtKind::Store { value, .. } => value,
        other => panic!("statement {n} is {other:?}"),
    }
}

fn local_ty(k: &ir::Kernel, name: &str) -> Ty {
    k.locals
        .iter()
        .rev()
        .find(|l| l.name == name)
        .unwrap()
        .ty
        .clone()
}

#[test]
fn shape_environment_names_fold_into_literals() {
    let k = lower_at(
        "@autotune(T in [16, 64])\nkernel k(X: tensor<f32>[N]) {\n  var t: tile<f32>[T * 2] = 0.0\n  X[0 :+ T * 2] = t\n}\n",
        Some("T=32"),
    );
    assert_eq!(local_ty(&k, "t"), Ty::Tile(DType::F32, vec![64]));
    match &k.body[1].kind {
        ir::StmtKind::Store { index, .. } => {
            assert!(
                matches!(&index[0], ir::Index::Span { len: 64, start } if start.kind == ir::ExprKind::Lit(ir::Lit::Int(0)))
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn weak_literals_take_the_other_operand_type() {
    let k = lower("kernel k(X: tensor<f16>[N]) {\n  let x = X[0] * 2\n  X[0] = x\n}\n");
    let ir::ExprKind::Binary(ir::BinOp::Mul, _, rhs) = &value(&k, 0).kind else {
        panic!()
    };
    assert_eq!(rhs.ty, Ty::Scalar(DType::F16));
    assert_eq!(rhs.kind, ir::ExprKind::Lit(ir::Lit::Float(2.0)));
    assert_eq!(local_ty(&k, "x"), Ty::Scalar(DType::F16));
}

#[test]
fn literals_default_to_i32_and_f32() {
    let k = lower("kernel k(X: tensor<f32>[N]) {\n  var i = 3\n  var f = 1.5\n  X[i] = f\n}\n");
    assert_eq!(local_ty(&k, "i"), Ty::Scalar(DType::I32));
    assert_eq!(local_ty(&k, "f"), Ty::Scalar(DType::F32));
}

#[test]
fn let_of_a_constant_is_folded_and_stays_weak() {
    let k = lower("kernel k(X: tensor<f16>[N]) {\n  let scale = 0.5\n  X[0] = X[0] * scale\n}\n");
    assert!(k.locals.is_empty(), "{:?}", k.locals);
    let ir::ExprKind::Binary(_, _, rhs) = &value(&k, 0).kind else {
        panic!()
    };
    assert_eq!(rhs.ty, Ty::Scalar(DType::F16));
}

#[test]
fn constant_arithmetic_folds() {
    let k =
        lower("kernel k(X: tensor<i32>[N]) {\n  X[0] = (7 + 5) / 4 * i32(3.9) + cdiv(10, 4)\n}\n");
    assert_eq!(value(&k, 0).kind, ir::ExprKind::Lit(ir::Lit::Int(12)));
    let k = lower("kernel k(X: tensor<u8>[N]) {\n  X[0] = u8(250) + u8(10)\n}\n");
    assert_eq!(value(&k, 0).kind, ir::ExprKind::Lit(ir::Lit::Int(4)));
}

#[test]
fn compound_assignment_is_desugared() {
    let k = lower(
        "kernel k(X: tensor<f32>[N]) {\n  var acc: f32 = 0.0\n  acc += X[1]\n  X[0] = acc\n}\n",
    );
    let ir::StmtKind::Assign { local, value } = &k.body[1].kind else {
        panic!()
    };
    let ir::ExprKind::Binary(ir::BinOp::Add, lhs, _) = &value.kind else {
        panic!()
    };
    assert_eq!(lhs.kind, ir::ExprKind::Local(*local));
}

#[test]
fn compound_store_loads_then_stores() {
    let k = lower("kernel k(X: tensor<f32>[N]) {\n  X[ctx.thread] *= 2.0\n}\n");
    let ir::StmtKind::Store { value, .. } = &k.body[0].kind else {
        panic!()
    };
    let ir::ExprKind::Binary(ir::BinOp::Mul, lhs, _) = &value.kind else {
        panic!()
    };
    assert!(matches!(lhs.kind, ir::ExprKind::Load { tensor: 0, .. }));
}

#[test]
fn stores_convert_to_the_tensor_type() {
    let k = lower(
        "kernel k(X: tensor<f16>[64]) {\n  var t: tile<f32>[64] = 1.0\n  X[0 :+ 64] = t\n}\n",
    );
    let v = value(&k, 1);
    assert!(matches!(v.kind, ir::ExprKind::Cast(_)));
    assert_eq!(v.ty, Ty::Tile(DType::F16, vec![64]));
}

#[test]
fn splat_stores_broadcast_explicitly() {
    let k = lower("kernel k(X: tensor<f32>[64, 64]) {\n  X[0 :+ 8, 0 :+ 64] = 0.0\n}\n");
    let v = value(&k, 0);
    assert!(matches!(v.kind, ir::ExprKind::Broadcast(_)));
    assert_eq!(v.ty, Ty::Tile(DType::F32, vec![8, 64]));
}

#[test]
fn tile_operands_broadcast_explicitly() {
    let k = lower(
        "kernel k(X: tensor<f32>[64, 64]) {\n  let t = X[0 :+ 8, 0 :+ 64]\n  let r = rowmax(t)\n  X[0 :+ 8, 0 :+ 64] = t - r\n}\n",
    );
    assert_eq!(local_ty(&k, "r"), Ty::Tile(DType::F32, vec![8, 1]));
    let ir::ExprKind::Binary(ir::BinOp::Sub, a, b) = &value(&k, 2).kind else {
        panic!()
    };
    assert!(matches!(a.kind, ir::ExprKind::Local(_)));
    assert!(matches!(b.kind, ir::ExprKind::Broadcast(_)));
    assert_eq!(b.ty, Ty::Tile(DType::F32, vec![8, 64]));
}

#[test]
fn rank_one_and_rank_two_broadcast_right_aligned() {
    let k = lower(
        "kernel k(X: tensor<f32>[8, 64]) {\n  let t = X[0 :+ 8, 0 :+ 64]\n  let m = where(arange(64) < 10, t, 0.0)\n  X[0 :+ 8, 0 :+ 64] = m\n}\n",
    );
    let ir::ExprKind::Select(c, a, b) = &value(&k, 1).kind else {
        panic!()
    };
    for e in [c, a, b] {
        assert_eq!(e.ty.shape(), Some(&[8i64, 64][..]));
    }
}

#[test]
fn reductions_keep_dims_or_give_a_uniform_scalar() {
    let k = lower(
        "kernel k(X: tensor<f32>[8, 64]) {\n  let t = X[0 :+ 8, 0 :+ 64]\n  let a = sum(t, axis=0)\n  let b = max(t, axis=-1)\n  let c = sum(t)\n  X[0, 0] = c + sum(a) + min(b)\n}\n",
    );
    assert_eq!(local_ty(&k, "a"), Ty::Tile(DType::F32, vec![1, 64]));
    assert_eq!(local_ty(&k, "b"), Ty::Tile(DType::F32, vec![8, 1]));
    assert_eq!(local_ty(&k, "c"), Ty::Scalar(DType::F32));
    assert!(k.locals.iter().find(|l| l.name == "c").unwrap().uniform);
}

#[test]
fn ranges_with_a_constant_difference_are_static() {
    let k = lower(
        "kernel k(X: tensor<f32>[N]) {\n  let i = ctx.block.x * 64\n  X[i : i + 64] = 0.0\n}\n",
    );
    let ir::StmtKind::Store { index, .. } = &k.body[1].kind else {
        panic!()
    };
    assert!(matches!(index[0], ir::Index::Span { len: 64, .. }));
}

#[test]
fn whole_static_dims_and_integer_indices() {
    let k = lower(
        "@autotune(D in [64])\nkernel k(Q: tensor<f16>[B, N, D], O: tensor<f32>[B, N, D]) {\n  let q = Q[ctx.block.y, ctx.block.x * 16 :+ 16, :]\n  O[ctx.block.y, ctx.block.x * 16 :+ 16, 0 :] = f32(q)\n}\n",
    );
    assert_eq!(local_ty(&k, "q"), Ty::Tile(DType::F16, vec![16, 64]));
    let ir::StmtKind::Store { index, .. } = &k.body[1].kind else {
        panic!()
    };
    assert!(matches!(index[0], ir::Index::At(_)));
    assert!(
        matches!(&index[2], ir::Index::Span { len: 64, start } if start.kind == ir::ExprKind::Lit(ir::Lit::Int(0)))
    );
}

#[test]
fn element_access_is_a_scalar() {
    let k =
        lower("kernel k(X: tensor<f32>[M, N]) {\n  let x = X[1, ctx.thread]\n  X[0, 0] = x\n}\n");
    assert_eq!(local_ty(&k, "x"), Ty::Scalar(DType::F32));
    assert!(!k.locals[0].uniform);
}

#[test]
fn dot_accumulates_by_dtype_and_flags_tf32() {
    let src = |attr: &str, t: &str| {
        format!("{attr}kernel k(A: tensor<{t}>[M, K], C: tensor<f32>[M, M]) {{\n  let a = A[0 :+ 32, 0 :+ 16]\n  let c = dot_t(a, a)\n  C[0 :+ 32, 0 :+ 32] = f32(c)\n}}\n")
    };
    let dot = |k: &ir::Kernel| match &value(k, 1).kind {
        ir::ExprKind::Dot { tf32, trans_b, .. } => (*tf32, *trans_b, value(k, 1).ty.clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        dot(&lower(&src("", "f16"))),
        (false, true, Ty::Tile(DType::F32, vec![32, 32]))
    );
    assert_eq!(
        dot(&lower(&src("", "i8"))).2,
        Ty::Tile(DType::I32, vec![32, 32])
    );
    assert!(!dot(&lower(&src("", "f32"))).0);
    assert!(dot(&lower(&src("@allow_tf32\n", "f32"))).0);
    assert!(dot(&lower(&src("", "tf32"))).0);
}

#[test]
fn type_parameters_bind_per_variant() {
    let src = "kernel k<T = f16>(X: tensor<T>[N], Y: tensor<f32>[N]) {\n  Y[0] = f32(X[0]) + f32(T(1.5))\n}\n";
    let m = common::module(src);
    let info = m.kernel(None).unwrap();
    let v = info.variant(None, Some("T=bf16"), None).unwrap();
    let k = phobos_check::instantiate(&m, info, &v).unwrap();
    assert_eq!(k.type_args, vec![("T".to_string(), DType::BF16)]);
    assert!(matches!(
        k.params[0].kind,
        ir::ParamKind::Tensor {
            dtype: DType::BF16,
            ..
        }
    ));
}

#[test]
fn ctx_threads_is_the_launch_size() {
    let k = lower("@launch(128)\nkernel k(X: tensor<i32>[N]) {\n  X[0] = ctx.threads\n}\n");
    assert_eq!(value(&k, 0).kind, ir::ExprKind::Lit(ir::Lit::Int(128)));
    assert_eq!(k.launch.threads, 128);
}

#[test]
fn unroll_factors_and_ranges() {
    let k = lower_at(
        "@autotune(U in [1, 8])\nkernel k(X: tensor<f32>[N]) {\n  for<unroll U> i in range(N) {\n    X[i] = 0.0\n  }\n}\n",
        Some("U=4"),
    );
    let ir::StmtKind::For {
        unroll,
        start,
        step,
        ..
    } = &k.body[0].kind
    else {
        panic!()
    };
    assert_eq!(*unroll, 4);
    assert_eq!(start.kind, ir::ExprKind::Lit(ir::Lit::Int(0)));
    assert_eq!(step.kind, ir::ExprKind::Lit(ir::Lit::Int(1)));
}

#[test]
fn shadowing_creates_a_new_local() {
    let k =
        lower("kernel k(X: tensor<f32>[N]) {\n  let x = X[0]\n  let x = x * 2.0\n  X[0] = x\n}\n");
    assert_eq!(k.locals.len(), 2);
    let ir::ExprKind::Local(l) = value(&k, 2).kind else {
        panic!()
    };
    assert_eq!(l, 1);
}

#[test]
fn attributes_lower_at_the_point() {
    let k = lower_at(
        "@autotune(T in [16, 64], S in [1, 2])\n@where(K % (T * S) == 0)\n@where(T >= 16)\n@aligned(K = T)\n@flops(2 * M * K)\n@bytes(4.0 * M)\n@launch(T * 4, 2, 128)\nkernel k(X: tensor<f32>[M, K]) {\n  X[0, 0] = 0.0\n}\n",
        Some("T=32 S=2"),
    );
    assert_eq!(k.wheres.len(), 1, "the constant-true where is dropped");
    assert_eq!(k.aligned, vec![(1, 32)]);
    assert_eq!(
        k.launch,
        ir::Launch {
            threads: 128,
            min_blocks_per_sm: Some(2),
            max_regs: Some(128)
        }
    );
    assert_eq!(k.flops.as_ref().unwrap().ty, Ty::Scalar(DType::I64));
    assert_eq!(k.bytes.as_ref().unwrap().ty, Ty::Scalar(DType::F64));
    let env =
        phobos_ir::eval::Bindings::new(&k, &[("M".into(), 100_000), ("K".into(), 100_000)], &[]);
    assert_eq!(
        phobos_ir::eval::eval_i64(k.flops.as_ref().unwrap(), &env),
        Ok(20_000_000_000)
    );
}

#[test]
fn a_float_times_dims_stays_f64_in_flops() {
    // `4.0 * N` is f64, and so is that times another dim or a scalar parameter.
    let k = lower(
        "@launch(128)\n@grid(N)\n@flops(4.0 * N * N / (1 + causal))\n@bytes(2 * N * 1.5 * N)\nkernel k(X: tensor<f32>[N, N], causal: i32) {\n  X[0, 0] = 0.0\n}\n",
    );
    assert_eq!(k.flops.as_ref().unwrap().ty, Ty::Scalar(DType::F64));
    assert_eq!(k.bytes.as_ref().unwrap().ty, Ty::Scalar(DType::F64));
    let env = phobos_ir::eval::Bindings::new(
        &k,
        &[("N".into(), 100_000)],
        &[("causal".into(), phobos_ir::eval::Value::Int(1))],
    );
    let flops = phobos_ir::eval::eval(k.flops.as_ref().unwrap(), &env).unwrap();
    assert_eq!(flops.as_f64(), 2e10);
    let bytes = phobos_ir::eval::eval(k.bytes.as_ref().unwrap(), &env).unwrap();
    assert_eq!(bytes.as_f64(), 3e10);
}

#[test]
fn sizeof_is_the_bytes_of_an_element_type() {
    // A type parameter (at its default) and a named type; a weak integer, i64 in `@bytes`.
    let k = lower(
        "@launch(128)\n@bytes(2 * sizeof(T) * M + sizeof(f32))\nkernel k<T = bf16>(X: tensor<T>[M]) {\n  X[0] = T(sizeof(T))\n}\n",
    );
    assert_eq!(k.bytes.as_ref().unwrap().ty, Ty::Scalar(DType::I64));
    let env = phobos_ir::eval::Bindings::new(&k, &[("M".into(), 1000)], &[]);
    assert_eq!(
        phobos_ir::eval::eval_i64(k.bytes.as_ref().unwrap(), &env),
        Ok(4004)
    );
    let d = common::error(
        "@launch(128)\n@bytes(sizeof(M))\nkernel k(X: tensor<f32>[M]) {\n  X[0] = 0.0\n}\n",
        "E0506",
    );
    assert!(
        d.message.contains("`sizeof` takes an element type"),
        "{d:?}"
    );
}

#[test]
fn eviction_hints_are_fields_of_loads_and_stores() {
    let k = lower(
        "kernel k(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  Y[0, cache = evict_first] = X[0, cache = evict_last] + X[1, cache = no_allocate] + X[2]\n  Y[1, cache = evict_normal] = 1.0\n  Y[2, cache = evict_last] += 1.0\n}\n",
    );
    let hint = |e: &ir::Expr| match &e.kind {
        ir::ExprKind::Load { cache, .. } => *cache,
        other => panic!("{other:?}"),
    };
    let store_hint = |n: usize| match &k.body[n].kind {
        ir::StmtKind::Store { cache, .. } => *cache,
        other => panic!("{other:?}"),
    };
    assert_eq!(store_hint(0), ir::Eviction::First);
    let ir::ExprKind::Binary(ir::BinOp::Add, ab, c) = &value(&k, 0).kind else {
        panic!()
    };
    let ir::ExprKind::Binary(ir::BinOp::Add, a, b) = &ab.kind else {
        panic!()
    };
    assert_eq!(
        [hint(a), hint(b), hint(c)],
        [
            ir::Eviction::Last,
            ir::Eviction::NoAllocate,
            ir::Eviction::Normal
        ]
    );
    // `evict_normal` is no hint; a compound store gives its hint to its load and its store.
    assert_eq!(store_hint(1), ir::Eviction::Normal);
    assert_eq!(store_hint(2), ir::Eviction::Last);
    let ir::ExprKind::Binary(ir::BinOp::Add, cur, _) = &value(&k, 2).kind else {
        panic!()
    };
    assert_eq!(hint(cur), ir::Eviction::Last);
    let printed = ir::print_kernel(&k);
    assert!(
        printed.contains("store Y[0:i32, cache = evict_first]"),
        "{printed}"
    );
    assert!(
        printed.contains("X[0:i32, cache = evict_last]"),
        "{printed}"
    );
    for h in ir::Eviction::ALL {
        assert_eq!(ir::Eviction::from_name(h.name()), Some(h));
    }
    assert_eq!(ir::Eviction::from_name("evict_lst"), None);
}
