//! GEMM recognition and shared-memory accounting, from `.ph` sources through the checker.

mod common;

use phobos_cuda::gemm_match::find_gemms;
use phobos_cuda::{emit, emit_with_policy, EmitOptions, GemmPolicy, Target};
use phobos_ir::{DType, Kernel, MemOrder};
use phobos_syntax::SourceFile;

/// The kernel of a `.ph` text at its default point (and `types`, `layout` bindings).
fn kernel(text: &str, types: Option<&str>, layout: Option<&str>) -> Kernel {
    let module =
        phobos_check::load(SourceFile::new("t.ph", text)).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let variant = info.variant(None, types, layout).unwrap();
    phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"))
}

/// A GEMM kernel whose loop body is `body` (A: [M, K], B: [K, N], Bt: [N, K]).
fn gemm_with(body: &str) -> String {
    format!(
        "@autotune(TM in [32], TN in [32], TK in [8])\n@launch(256)\n\
         kernel g(A: tensor<f32>[M, K], B: tensor<f32>[K, N], Bt: tensor<f32>[N, K], C: tensor<f32>[M, N]) {{\n\
         \x20 let pm = ctx.block.x\n  let pn = ctx.block.y\n\
         \x20 var acc: tile<f32>[TM, TN] = 0.0\n\
         {body}\n\
         \x20 C[pm * TM :+ TM, pn * TN :+ TN] = acc\n}}\n"
    )
}

#[test]
fn matches_the_seed_gemm() {
    let ks = common::kernels_at("examples/gemm.ph", "", None);
    let m = find_gemms(&ks[0]);
    assert_eq!(m.len(), 1);
    let g = &m[0];
    assert_eq!((g.tile_m, g.tile_n, g.tile_k), (32, 32, 8));
    assert!(g.a.k_inner && !g.b.k_inner && !g.trans_b);
    assert_eq!(g.acc_dtype, DType::F32);
    assert_eq!(ks[0].locals[g.acc].name, "acc");
    assert_eq!(g.epilogue.len(), 1, "the store reads acc");
}

#[test]
fn matches_gemm_typed_with_its_types() {
    let ks = common::kernels_at(
        "examples/gemm_typed.ph",
        "TILE_M=128",
        Some("TA=bf16,TB=bf16,TC=f32"),
    );
    let m = find_gemms(&ks[0]);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].a.dtype, DType::BF16);
    assert_eq!((m[0].tile_m, m[0].tile_n, m[0].tile_k), (128, 64, 32));
}

#[test]
fn matches_inline_loads_dot_t_and_column_major() {
    let k = kernel(
        &gemm_with(
            "  for k in range(0, K, TK) {\n    acc += dot_t(A[pm * TM :+ TM, k :+ TK], Bt[pn * TN :+ TN, k :+ TK])\n  }",
        ),
        None,
        None,
    );
    let m = find_gemms(&k);
    assert_eq!(m.len(), 1);
    assert!(m[0].trans_b && m[0].a.k_inner && m[0].b.k_inner);

    let k = kernel(
        &gemm_with("  for k in range(0, K, TK) {\n    let b = B[k :+ TK, pn * TN :+ TN]\n    let a = A[pm * TM :+ TM, k :+ TK]\n    acc = dot(a, b) + acc\n  }"),
        None,
        Some("A=col"),
    );
    let m = find_gemms(&k);
    assert_eq!(m.len(), 1, "operand order and `dot + acc` do not matter");
    assert_eq!(m[0].a.order, MemOrder::ColMajor);
    assert!(!m[0].a.k_inner, "a column-major A is m-contiguous");
}

#[test]
fn rejects_near_misses() {
    let near_misses = [
        // The step differs from the k span.
        "  for k in range(0, K, 4) {\n    acc += dot(A[pm * TM :+ TM, k :+ TK], B[k :+ TK, pn * TN :+ TN])\n  }",
        // Not an accumulation of the dot alone.
        "  for k in range(0, K, TK) {\n    acc += dot(A[pm * TM :+ TM, k :+ TK], B[k :+ TK, pn * TN :+ TN]) * 2.0\n  }",
        // Another statement in the body.
        "  for k in range(0, K, TK) {\n    let a = A[pm * TM :+ TM, k :+ TK]\n    C[0, 0] = 1.0\n    acc += dot(a, B[k :+ TK, pn * TN :+ TN])\n  }",
        // The operand is used after the loop.
        "  var a: tile<f32>[TM, TK] = 0.0\n  for k in range(0, K, TK) {\n    a = A[pm * TM :+ TM, k :+ TK]\n    acc += dot(a, B[k :+ TK, pn * TN :+ TN])\n  }\n  C[0 :+ TM, 0 :+ TK] = a",
        // The m start moves with k.
        "  for k in range(0, K, TK) {\n    acc += dot(A[k :+ TM, k :+ TK], B[k :+ TK, pn * TN :+ TN])\n  }",
        // The k span is not the loop variable.
        "  for k in range(0, K, TK) {\n    acc += dot(A[pm * TM :+ TM, 0 :+ TK], B[k :+ TK, pn * TN :+ TN])\n  }",
    ];
    for body in near_misses {
        let k = kernel(&gemm_with(body), None, None);
        assert!(find_gemms(&k).is_empty(), "matched:\n{body}");
        // Still lowered, by the generic dot.
        emit(&k, &EmitOptions::default()).unwrap_or_else(|e| panic!("{body}: {e}"));
    }
}

#[test]
fn dynamic_smem_covers_the_main_loop_and_scratch() {
    // FFMA main loop: two buffers of TK x (BM + 4) and TK x (BN + 4) floats.
    let ks = common::kernels_at("examples/gemm.ph", "TILE_M=128 TILE_N=128 TILE_K=32", None);
    let e = emit(&ks[0], &EmitOptions::default()).unwrap();
    assert_eq!(e.dynamic_smem_bytes, 2 * 32 * (132 + 132) * 4);
    // No shared memory at all for per-thread code.
    let ks = common::kernels_at("examples/partial_sums.ph", "U=4", None);
    assert_eq!(
        emit(&ks[0], &EmitOptions::default())
            .unwrap()
            .dynamic_smem_bytes,
        0
    );
    // Softmax: the row reductions of the [2, 256] tile stay in registers (128 threads, groups
    // of 4: 64 groups a row over two warps), so the scratch holds one partial per warp-part of
    // each row: 2 rows x 2 floats, rounded to 16 bytes.
    let ks = common::kernels_at("examples/softmax.ph", "ROWS=2 BLOCK=256", None);
    let e = emit(&ks[0], &EmitOptions::default()).unwrap();
    assert_eq!(e.dynamic_smem_bytes, (2 * 2 * 4_u32).div_ceil(16) * 16);
    // A column reduction stages the tile: [64, 32] floats at a 33-float row stride, plus 32
    // partials.
    let text = "@launch(256)\nkernel cols(X: tensor<f32>[M, 32], S: tensor<f32>[1, 32]) {\n  \
                S[0 :+ 1, 0 :+ 32] = sum(X[ctx.block.x * 64 :+ 64, 0 :+ 32], axis=0)\n}\n";
    let module = phobos_check::load(SourceFile::new("cols.ph", text)).unwrap();
    let info = &module.kernels[0];
    let k = phobos_check::instantiate(&module, info, &info.default_variant().unwrap()).unwrap();
    let e = emit(&k, &EmitOptions::default()).unwrap();
    assert_eq!(e.dynamic_smem_bytes, 64 * 33 * 4 + 32 * 4);
    assert!(e
        .source
        .contains(&format!("ph::Scratch<{}>", e.dynamic_smem_bytes)));
}

#[test]
fn tensor_core_loops_when_aligned_and_unaligned() {
    let text = std::fs::read_to_string(common::root().join("examples/gemm_typed.ph"))
        .unwrap()
        .replace("@where(K % 8 == 0)", "@where(K % 8 == 0)\n@aligned(N = 8)");
    let module = phobos_check::load(SourceFile::new("t.ph", text)).unwrap();
    let info = &module.kernels[0];
    let k = phobos_check::instantiate(
        &module,
        info,
        &info.variant(Some("TILE_M=128"), None, None).unwrap(),
    )
    .unwrap();
    let fast = emit(&k, &EmitOptions::default()).unwrap();
    assert!(
        fast.source.contains("ph::gemm::sm90::MainLoop"),
        "{}",
        fast.source
    );
    // A and B; and C, whose tile the kernel stores through shared memory and TMA.
    assert_eq!(fast.tma.len(), 3);
    assert!(fast.source.contains("ph::gemm::sm90::store_tile_tma<"));
    // For sm_80 the same kernel takes mma.sync.
    let sm80 = phobos_cuda::emit_for_target(&k, &EmitOptions::default(), &Target::sm80()).unwrap();
    assert!(
        sm80.source.contains("ph::gemm::sm80::MainLoop"),
        "{}",
        sm80.source
    );
    assert!(sm80.tma.is_empty());
    assert!(fast.headers.iter().any(|(n, _)| n == "gemm/ptx.cuh"));
    let ffma = emit_with_policy(&k, &EmitOptions::default(), GemmPolicy::FfmaOnly).unwrap();
    assert!(ffma.source.contains("ph::FfmaGemm"));
    // Without the alignment of N, B's rows may start anywhere: no TMA and no cp.async, but
    // still mma.sync, with B's elements loaded into registers.
    let ks = common::kernels_at("examples/gemm_typed.ph", "TILE_M=128", None);
    let e = emit(&ks[0], &EmitOptions::default()).unwrap();
    assert!(!e.source.contains("ph::FfmaGemm"), "{}", e.source);
    assert!(e.source.contains("ph::gemm::sm80::MainLoop"));
    assert_eq!(
        e.gemms[0].copies.map(|c| c[1]),
        Some(phobos_cuda::gemm_fast::OperandCopy::RegisterStaged { align_bytes: 2 })
    );
    assert!(
        e.gemms[0]
            .rejected
            .iter()
            .any(|(s, _)| *s == phobos_cuda::gemm_fast::Strategy::Sm90),
        "{:?}",
        e.gemms[0].rejected
    );
}
