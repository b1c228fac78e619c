//! The fast GEMM main loops through the emitter: snapshots of gemm_typed at a wgmma point, the
//! launch facts (tensor maps, SPLIT_K zeroing and grid), and the choice at the edges (alignment,
//! threads, dtypes, epilogues).

mod common;

use common::fast::{aligned_dims, gemm_text, kernel_of};
use phobos_cuda::gemm_fast::{OperandCopy, Strategy, TmaOperand};
use phobos_cuda::{
    emit, emit_for_target, BIssue, Blocker, CopyIssuer, EmitOptions, Emitted, GemmPolicy,
    GemmRecord, Pipeline, Release, Schedule, SharedOperand, SplitRecord, SplitReduce,
    SplitWorkspace, Target,
};
use phobos_ir::{DType, Dim};

/// The emitted text with its launch facts on top.
fn render(e: &Emitted) -> String {
    let mut out = format!(
        "// entry {}, {} threads, {} bytes of dynamic shared memory, grid z {}, zero {:?}\n",
        e.entry, e.threads, e.dynamic_smem_bytes, e.grid_z, e.zero_before_launch
    );
    for t in &e.tma {
        out.push_str(&format!(
            "// tensor map {}: tensor #{} {}, globalDim {:?}, line stride {:?}, {}\n",
            t.name, t.tensor, t.dtype, t.global_dim, t.line_stride, t.spec
        ));
    }
    out.push_str(&e.source);
    out
}

fn emitted(autotune: &str, types: &str, dims: &[(&str, i64)]) -> Emitted {
    let (k, src) = kernel_of(&gemm_text(autotune, "@launch(256)"), types, dims);
    emit(&k, &EmitOptions { source: Some(src) }).unwrap()
}

/// A kernel text emitted for the aligned problem.
fn emit_text(text: &str, types: &str) -> Emitted {
    let (k, src) = kernel_of(text, types, &aligned_dims());
    emit(&k, &EmitOptions { source: Some(src) }).unwrap()
}

/// A note of `e` that starts with `prefix` and gives `why`.
fn has_note(e: &Emitted, prefix: &str, why: &str) -> bool {
    e.notes
        .iter()
        .any(|n| n.starts_with(prefix) && n.contains(why))
}

const WGMMA_POINT: &str =
    "@autotune(TILE_M in [128], TILE_N in [256], TILE_K in [64], STAGES in [4])";

#[test]
fn gemm_typed_wgmma_f16() {
    let e = emitted(WGMMA_POINT, "TA=f16,TB=f16,TC=f32", &aligned_dims());
    assert!(e.source.contains(
        "ph::gemm::sm90::MainLoop<ph::gemm::F16, 128, 256, 64, 2, 1, 4, true, false, false>"
    ));
    // A, B, and C (the tile's store goes through shared memory and TMA).
    assert_eq!(e.tma.len(), 3);
    insta::assert_snapshot!(render(&e));
}

#[test]
fn gemm_typed_wgmma_bf16() {
    let e = emitted(WGMMA_POINT, "TA=bf16,TB=bf16,TC=bf16", &aligned_dims());
    assert!(e
        .source
        .contains("ph::gemm::sm90::MainLoop<ph::gemm::BF16, 128, 256, 64"));
    insta::assert_snapshot!(render(&e));
}

#[test]
fn group_m_and_split_k_snapshot() {
    let e = emitted(
        "@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [64], STAGES in [3], GROUP_M in [8], SPLIT_K in [3])",
        "TA=f16,TB=f16,TC=f32",
        &aligned_dims(),
    );
    assert_eq!(e.grid_z, 3);
    assert_eq!(e.zero_before_launch, vec![2]);
    insta::assert_snapshot!(render(&e));
}

#[test]
fn tensor_maps_describe_the_operands_in_memory_order() {
    let e = emitted(WGMMA_POINT, "TA=f16,TB=f16,TC=f32", &aligned_dims());
    let (a, b) = (&e.tma[0], &e.tma[1]);
    // A [M, K] row-major: K innermost; B [K, N] row-major: N innermost.
    let (m, k, n) = (Dim::Dyn(0), Dim::Dyn(1), Dim::Dyn(2));
    assert_eq!((a.tensor, a.global_dim, a.line_stride), (0, [k, m], k));
    assert_eq!((b.tensor, b.global_dim, b.line_stride), (1, [n, k], n));
    assert_eq!((a.spec.box_dim, b.spec.box_dim), ([64, 128], [64, 64]));
    // C [M, N] row-major, stored through TMA: N innermost.
    let c = &e.tma[2];
    assert_eq!((c.tensor, c.global_dim, c.line_stride), (2, [n, m], n));
    assert!(e.source.contains(
        "int K, int N, const __grid_constant__ ph::gemm::sm90::TmaDesc ph_tma0, \
         const __grid_constant__ ph::gemm::sm90::TmaDesc ph_tma1, \
         const __grid_constant__ ph::gemm::sm90::TmaDesc ph_tma2)"
    ));
    // Encoded as a launch encodes them (M = 1000, K = 512, N = 392 at 0x1000 and 0x2000).
    let facts = phobos::backend::cuda::launch_facts(&e);
    let dims = [1000, 512, 392];
    let args = phobos_gpu::encode_args(&facts.tensor_maps[0], "A", 0x1000, &dims).unwrap();
    assert_eq!(
        (args.global_dim, args.global_strides),
        ([512, 1000], [1024])
    );
    let args = phobos_gpu::encode_args(&facts.tensor_maps[1], "B", 0x2000, &dims).unwrap();
    assert_eq!((args.global_dim, args.global_strides), ([392, 512], [784]));
    // f32 C: boxes of 32 columns (128 bytes) by 64 rows.
    let args = phobos_gpu::encode_args(&facts.tensor_maps[2], "C", 0x3000, &dims).unwrap();
    assert_eq!(
        (args.global_dim, args.global_strides, args.box_dim),
        ([392, 1000], [1568], [32, 64])
    );
}

#[test]
fn unaligned_problems_keep_tensor_cores_and_say_how() {
    // Aligned: TMA for both operands.
    let e = emitted(WGMMA_POINT, "TA=f16,TB=f16,TC=f32", &aligned_dims());
    assert_eq!(
        e.gemms,
        [GemmRecord {
            strategy: Some(Strategy::Sm90),
            copies: Some([OperandCopy::Tma; 2]),
            pipeline: Some(Pipeline {
                stages: 4,
                tile_k: 64,
                issuer: CopyIssuer::Thread0
            }),
            split: None,
            release: Some(Release::AfterNext),
            b_issue: Some(BIssue::Shares),
            shared: Some(SharedOperand::B)
        }]
    );
    // K = 72 (8-aligned), N = 45: B's leading dim is odd, no TMA and no cp.async: mma.sync
    // with B register-staged.
    let e = emitted(
        WGMMA_POINT,
        "TA=f16,TB=f16,TC=f32",
        &[("M", 77), ("N", 45), ("K", 72)],
    );
    assert!(e.tma.is_empty());
    assert!(!e.source.contains("ph::FfmaGemm<"), "{}", e.source);
    assert_eq!(
        e.gemms,
        [GemmRecord {
            strategy: Some(Strategy::Sm80),
            copies: Some([
                OperandCopy::CpAsync { bytes: 16 },
                OperandCopy::RegisterStaged { align_bytes: 2 }
            ]),
            pipeline: Some(Pipeline {
                stages: 4,
                tile_k: 64,
                issuer: CopyIssuer::AllThreads
            }),
            split: None,
            release: None,
            b_issue: None,
            shared: None
        }]
    );
    let notes = e.notes.join("\n");
    assert!(
        notes.contains("no Sm90 main loop: tensor maps need 16-byte aligned"),
        "{notes}"
    );
    assert!(
        notes.contains("copies: A cp.async 16 B, B register-staged element loads"),
        "{notes}"
    );
    assert!(!notes.contains("FFMA"), "{notes}");
    // K = 333 and N = 777: both operands register-staged, in bf16 too.
    let e = emitted(
        "@autotune(TILE_M in [64], TILE_N in [64], TILE_K in [32], STAGES in [3])",
        "TA=bf16,TB=bf16,TC=bf16",
        &[("M", 1000), ("N", 777), ("K", 333)],
    );
    assert_eq!(
        e.gemms[0].copies,
        Some([OperandCopy::RegisterStaged { align_bytes: 2 }; 2])
    );
    // VEC_COPY=1: the same operands by shifted 16-byte vectors, said in the notes; the main
    // loop's type gains SHIFT = 1 and nothing else.
    let s = emitted(
        "@autotune(TILE_M in [64], TILE_N in [64], TILE_K in [32], STAGES in [3], VEC_COPY in [1])",
        "TA=bf16,TB=bf16,TC=bf16",
        &[("M", 1000), ("N", 777), ("K", 333)],
    );
    assert_eq!(s.gemms[0].copies, Some([OperandCopy::Shifted; 2]));
    assert_eq!(s.gemms[0].pipeline, e.gemms[0].pipeline);
    let notes = s.notes.join("\n");
    assert!(
        notes.contains(", true, false, 2, 2, 1> (k step 32)")
            && notes.contains("copies: A register-staged shifted 16-byte loads"),
        "{notes}"
    );
    // An FFMA-only policy is recorded as the generic loop.
    let (k, _) = kernel_of(
        &gemm_text(WGMMA_POINT, "@launch(256)"),
        "TA=f16,TB=f16,TC=f32",
        &aligned_dims(),
    );
    let e =
        phobos_cuda::emit_with_policy(&k, &EmitOptions::default(), GemmPolicy::FfmaOnly).unwrap();
    assert_eq!(
        e.gemms,
        [GemmRecord {
            strategy: None,
            copies: None,
            pipeline: None,
            split: None,
            release: None,
            b_issue: None,
            shared: None
        }]
    );
    // N = 48 (16-aligned), K = 36 (4-aligned: 8 bytes): mma.sync with 8-byte copies of A.
    let e = emitted(
        "@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [32], STAGES in [3])",
        "TA=f16,TB=f16,TC=f32",
        &[("M", 77), ("N", 48), ("K", 36)],
    );
    assert!(
        e.source.contains(
            "ph::gemm::sm80::MainLoop<ph::gemm::F16, 128, 128, 32, 2, 4, 3, true, false, 8, 16>"
        ),
        "{}",
        e.notes.join("\n")
    );
}

#[test]
fn arch_below_90_never_takes_wgmma() {
    let (k, src) = kernel_of(
        &gemm_text(WGMMA_POINT, "@launch(256)"),
        "TA=f16,TB=f16,TC=f32",
        &aligned_dims(),
    );
    let e = emit_for_target(&k, &EmitOptions { source: Some(src) }, &Target::sm80()).unwrap();
    assert!(e.tma.is_empty());
    // 4 stages of 128x256x64 are 192 KiB, over sm_80's 163 KiB: not mma.sync either.
    assert!(
        e.notes
            .iter()
            .any(|n| n.contains("no Sm80 main loop: shared memory over 163 KiB")),
        "{}",
        e.notes.join("\n")
    );
    // 3 stages (144 KiB) fit: the mma.sync loop.
    let (k, src) = kernel_of(
        &gemm_text(&WGMMA_POINT.replace("[4]", "[3]"), "@launch(256)"),
        "TA=f16,TB=f16,TC=f32",
        &aligned_dims(),
    );
    let e = emit_for_target(&k, &EmitOptions { source: Some(src) }, &Target::sm80()).unwrap();
    assert!(e.tma.is_empty());
    assert!(
        e.source.contains("ph::gemm::sm80::MainLoop<"),
        "{}",
        e.notes.join("\n")
    );
}

#[test]
fn launch_threads_pick_the_copy_issuer() {
    let e = emit_text(
        &gemm_text(
            "@autotune(TILE_M in [128], TILE_N in [256], TILE_K in [64], STAGES in [4])",
            "@launch(288)",
        ),
        "TA=bf16,TB=bf16,TC=f32",
    );
    // A producer warp: two consumer warpgroups of 64 rows each, the warp on top.
    assert!(
        e.source.contains(
            "ph::gemm::sm90::MainLoop<ph::gemm::BF16, 128, 256, 64, 2, 1, 4, true, false, true>"
        ),
        "{}",
        e.notes.join("\n")
    );
    assert!(e
        .notes
        .iter()
        .any(|n| n.contains("a producer warp issues the copies")));
    // 160 threads: one warpgroup plus a producer warp cannot hold 128 x 256 accumulators.
    let e = emit_text(
        &gemm_text(WGMMA_POINT, "@launch(160)"),
        "TA=f16,TB=f16,TC=f32",
    );
    assert!(e.tma.is_empty());
    assert!(e.notes.iter().any(|n| n.contains("no Sm90 main loop")));
}

#[test]
fn tf32_and_fp8_take_wgmma_only_k_major() {
    // A row-major [M, K] is K-major, B row-major [K, N] is not: tf32 and fp8 wgmma refuse it.
    for types in ["TA=tf32,TB=tf32,TC=f32", "TA=f8e4m3,TB=f8e4m3,TC=f32"] {
        let e = emitted(
            "@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [64], STAGES in [3])",
            types,
            &aligned_dims(),
        );
        assert!(e.tma.is_empty(), "{types}");
        assert!(
            e.notes.iter().any(|n| n.contains("needs K-major A and B")),
            "{types}: {}",
            e.notes.join("\n")
        );
    }
    // With B given as [N, K] through dot_t, both are K-major.
    for (types, dt) in [
        ("TA=tf32,TB=tf32,TC=f32", "TF32"),
        ("TA=f8e4m3,TB=f8e4m3,TC=f32", "F8E4M3"),
        ("TA=f8e5m2,TB=f8e5m2,TC=f32", "F8E5M2"),
    ] {
        let e = emit_text(
            &common::fast::gemm_t_text(
                "@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [64], STAGES in [3])",
            ),
            types,
        );
        assert!(
            e.source.contains(&format!(
                "ph::gemm::sm90::MainLoop<ph::gemm::{dt}, 128, 128,"
            )),
            "{types}: {}",
            e.notes.join("\n")
        );
        assert_eq!(
            e.tma[1].global_dim,
            [Dim::Dyn(1), Dim::Dyn(2)],
            "B [N, K]: K innermost"
        );
    }
}

#[test]
fn exact_f32_takes_the_register_tiled_ffma_loop() {
    let e = emitted(
        "@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [8])",
        "TA=f32,TB=f32,TC=f32",
        &aligned_dims(),
    );
    assert!(
        e.source
            .contains("ph::gemm::ffma::MainLoop<128, 128, 8, 2, 4, 8, 8, true, false, 4, 4, 2>"),
        "{}",
        e.notes.join("\n")
    );
    // 64 x 32 over 256 threads: 8 per thread, no thread tile of 4 or 8 per side.
    let e = emitted(
        "@autotune(TILE_M in [64], TILE_N in [32], TILE_K in [8])",
        "TA=f32,TB=f32,TC=f32",
        &aligned_dims(),
    );
    assert!(e.source.contains("ph::FfmaGemm<"));
    assert!(e
        .notes
        .iter()
        .any(|n| n.contains("no Ffma main loop: 8 elements per thread")));
}

#[test]
fn split_k_needs_a_linear_epilogue() {
    let at = "@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [64], STAGES in [3], SPLIT_K in [2])";
    // A scaled store splits; a bias or an activation does not (f32 C: atomics; f16 C: the
    // workspace, the cast applied once by the last part).
    for (types, reduce, call) in [
        (
            "TA=f16,TB=f16,TC=f32",
            SplitReduce::AtomicAdd,
            "ph::atomic_add_tile(",
        ),
        (
            "TA=f16,TB=f16,TC=f16",
            SplitReduce::Workspace,
            "ph::split_arrive(",
        ),
    ] {
        for (epilogue, splits) in [
            ("TC(acc)", true),
            ("TC(acc * 0.5)", true),
            ("TC(acc + 1.0)", false),
            ("TC(max(acc, 0.0))", false),
        ] {
            let text = gemm_text(at, "@launch(256)").replace(
                "C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = TC(acc)",
                &format!("C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = {epilogue}"),
            );
            let e = emit_text(&text, types);
            let why = format!("{types} {epilogue}: {}", e.notes.join("\n"));
            assert_eq!(e.grid_z > 1, splits, "{why}");
            assert_eq!(e.source.contains(call), splits, "{why}");
            let split = splits.then_some(SplitRecord { parts: 2, reduce });
            assert_eq!(e.gemms[0].split, split, "{why}");
            if !splits {
                assert!(has_note(&e, "SPLIT_K=2 not applied", "linear"), "{why}");
            }
            // Atomics zero C before each launch; the workspace is the launch's own.
            let atomics = splits && reduce == SplitReduce::AtomicAdd;
            assert_eq!(e.zero_before_launch == vec![2], atomics, "{why}");
            assert_eq!(
                e.split_workspace,
                (splits && !atomics).then_some(SplitWorkspace { c: 2, parts: 2 }),
                "{why}"
            );
        }
    }
    // An integer C is not split.
    let e = emit_text(&gemm_text(at, "@launch(256)"), "TA=f16,TB=f16,TC=i32");
    assert_eq!(e.grid_z, 1);
    assert!(has_note(&e, "SPLIT_K=2 not applied", "`C` holds i32"));
}

#[test]
fn split_k_into_a_16_bit_c_goes_through_the_workspace() {
    let e = emitted(
        "@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [64], STAGES in [3], GROUP_M in [8], SPLIT_K in [3])",
        "TA=f16,TB=f16,TC=f16",
        &aligned_dims(),
    );
    assert_eq!(e.grid_z, 3);
    assert!(e.zero_before_launch.is_empty());
    assert!(has_note(&e, "SPLIT_K=3: ", "f32 workspace slices"));
    // The workspace pointer is the last parameter, after the tensor maps.
    assert!(e
        .source
        .contains("ph::gemm::sm90::TmaDesc ph_tma1, float* __restrict__ ph_split_ws)"));
    let facts = phobos::backend::cuda::launch_facts(&e);
    assert_eq!(
        facts.split_workspace,
        Some(phobos_gpu::SplitWorkspace { c: 2, parts: 3 })
    );
    insta::assert_snapshot!(render(&e));
}

#[test]
fn group_m_remaps_block_indices_only() {
    let e = emitted(
        "@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [64], STAGES in [3], GROUP_M in [4])",
        "TA=bf16,TB=bf16,TC=f32",
        &aligned_dims(),
    );
    assert!(e.source.contains(
        "ph::gemm::swizzle_block((int)blockIdx.x, (int)blockIdx.y, (int)gridDim.x, (int)gridDim.y, 4, &ph_bx, &ph_by);"
    ));
    assert!(!e.source.contains("(int)blockIdx.x *"), "{}", e.source);
    assert_eq!((e.grid_z, e.tma.len()), (1, 2));
    let _ = DType::F16;
}

#[test]
fn the_persistent_schedule_loops_over_tiles() {
    const POINT: &str =
        "@autotune(TILE_M in [128], TILE_N in [256], TILE_K in [64], STAGES in [4], GROUP_M in [8], SCHEDULE in [2])";
    let e = emit_text(&gemm_text(POINT, "@launch(288)"), "TA=f16,TB=f16,TC=f16");
    assert!(e.persistent, "{}", e.notes.join("\n"));
    assert_eq!(e.schedule, Schedule::Persistent);
    assert!(e.source.contains("::run_persistent(acc, "));
    assert!(e.source.contains(
        "const __grid_constant__ ph::gemm::sm90::TmaDesc ph_tma2, int ph_gx, int ph_gy)"
    ));
    assert!(e
        .notes
        .iter()
        .any(|n| n.starts_with("SCHEDULE=2 (persistent): each block loops")));
    assert!(phobos::backend::cuda::launch_facts(&e).persistent);
    insta::assert_snapshot!(render(&e));

    // Without a producer warp, with SPLIT_K, or with a block barrier around the main loop (a
    // reduction of the accumulator): one block per tile, and the notes say why.
    let cases = [
        (
            POINT.to_string(),
            "@launch(256)",
            "TC(acc)",
            "needs a producer warp",
            false,
        ),
        (
            POINT.replace("SCHEDULE in [2]", "SCHEDULE in [2], SPLIT_K in [2]"),
            "@launch(288)",
            "TC(acc)",
            "SPLIT_K uses the grid's z axis",
            false,
        ),
        (
            POINT.to_string(),
            "@launch(288)",
            "TC(acc / sum(acc))",
            "synchronizes the block or uses shared memory",
            true,
        ),
    ];
    for (point, launch, store, why, surroundings) in cases {
        let text = gemm_text(&point, launch).replace(
            "C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = TC(acc)",
            &format!("C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = {store}"),
        );
        let e = emit_text(&text, "TA=f16,TB=f16,TC=f32");
        assert!(!e.persistent, "{why}");
        match &e.schedule {
            Schedule::NotApplied(Blocker::Surroundings) => assert!(surroundings, "{why}"),
            Schedule::NotApplied(Blocker::Plan(reason)) => {
                assert!(!surroundings && reason.contains(why), "{why}: {reason}")
            }
            other => panic!("{why}: {other:?}"),
        }
        assert!(!e.source.contains("run_persistent"), "{why}");
        assert!(
            has_note(&e, "SCHEDULE=2 not applied", why),
            "{why}: {}",
            e.notes.join("\n")
        );
    }
}

#[test]
fn the_c_store_stages_through_shared_memory_and_tma() {
    const POINT: &str =
        "@autotune(TILE_M in [128], TILE_N in [256], TILE_K in [64], STAGES in [3], GROUP_M in [8], SCHEDULE in [2])";
    let e = emit_text(&gemm_text(POINT, "@launch(288)"), "TA=f16,TB=f16,TC=f16");
    assert!(e.persistent, "{}", e.notes.join("\n"));
    // C [M, N] row-major: N innermost, boxes of 64 columns (128 bytes) by 64 rows.
    let c = &e.tma[2];
    let (m, n) = (Dim::Dyn(0), Dim::Dyn(2));
    assert_eq!((c.tensor, c.global_dim, c.line_stride), (2, [n, m], n));
    assert_eq!((c.spec.operand, c.spec.box_dim), (TmaOperand::C, [64, 64]));
    // Staged past the main loop's 148528 bytes: the 128 x 256 f16 tile and 1024 of slack.
    assert!(e.source.contains(
        "ph::gemm::sm90::store_tile_tma<false, 1>(ph::Region<ph::f16>{C, ph::mul(pm, 128), ph::mul(pn, 256), M, N, N, 1, true}, acc, &ph_tma2, ph_smem + 148528);"
    ), "{}", e.source);
    assert_eq!(e.dynamic_smem_bytes, 148528 + 128 * 256 * 2 + 1024);
    assert!(e.source.contains("#include \"gemm/store_tma.cuh\""));
    insta::assert_snapshot!(render(&e));

    // One block per tile: the issuing threads wait for the copies before the block exits.
    let one = POINT.replace("SCHEDULE in [2]", "SCHEDULE in [1]");
    let e = emit_text(&gemm_text(&one, "@launch(288)"), "TA=f16,TB=f16,TC=bf16");
    assert!(
        e.source
            .contains("ph::gemm::sm90::store_tile_tma<true, 1>("),
        "{}",
        e.source
    );

    // Where no staging buffer fits beside the stages without costing a block per
    // multiprocessor, or the store adds: the register store, and the notes say why.
    let cases = [
        (
            POINT.replace("SCHEDULE in [2]", "SPLIT_K in [2]"),
            "TA=f16,TB=f16,TC=f32",
            "SPLIT_K adds partial tiles",
        ),
        (
            POINT.replace("TILE_N in [256]", "TILE_N in [128]"),
            "TA=f16,TB=f16,TC=f16",
            "or lower the blocks per multiprocessor",
        ),
    ];
    for (point, types, why) in cases {
        let e = emit_text(&gemm_text(&point, "@launch(288)"), types);
        assert!(!e.source.contains("store_tile_tma"), "{why}");
        assert!(
            e.tma.iter().all(|t| t.spec.operand != TmaOperand::C),
            "{why}"
        );
        assert!(
            has_note(&e, "C store: registers to global memory", why),
            "{why}: {}",
            e.notes.join("\n")
        );
    }
}

#[test]
fn clusters_share_b_through_multicast() {
    const POINT: &str =
        "@autotune(TILE_M in [128], TILE_N in [256], TILE_K in [64], STAGES in [4], GROUP_M in [8], CLUSTER in [2])";
    let e = emit_text(&gemm_text(POINT, "@launch(288)"), "TA=f16,TB=f16,TC=f16");
    assert_eq!(e.cluster, 2, "{}", e.notes.join("\n"));
    assert!(e
        .source
        .contains("extern \"C\" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(288)"));
    assert!(e.source.contains(
        "ph::gemm::sm90::MainLoop<ph::gemm::F16, 128, 256, 64, 2, 1, 4, true, false, true, 2>::run("
    ));
    assert!(e.source.contains("ph::gemm::cluster_swizzle_block((int)blockIdx.x, (int)blockIdx.y, (int)gridDim.x, (int)gridDim.y, 8, 2, &ph_bx, &ph_by);"));
    // The GEMM's note names the loop the kernel calls.
    assert!(e.notes.iter().any(
        |n| n.contains("MainLoop<ph::gemm::F16, 128, 256, 64, 2, 1, 4, true, false, true, 2>")
    ));
    // N-major B keeps its 64-column box (each block copies every other slab).
    assert_eq!(e.tma[1].spec.box_dim, [64, 64]);
    assert_eq!(phobos::backend::cuda::launch_facts(&e).cluster_x, 2);
    insta::assert_snapshot!(render(&e));

    // K-major B (fp8 through dot_t): each block copies half of the box's rows.
    let e = emit_text(
        &common::fast::gemm_t_text(POINT).replace("@launch(256)", "@launch(288)"),
        "TA=f8e4m3,TB=f8e4m3,TC=f32",
    );
    assert_eq!(e.cluster, 2, "{}", e.notes.join("\n"));
    assert_eq!(e.tma[1].spec.box_dim, [128, 128]);
    assert_eq!(e.tma[0].spec.box_dim, [128, 128]);

    // Where the blocks of a cluster might not share B or both run the loop: one block per
    // cluster, and the notes say why.
    let cases = [
        (
            POINT.to_string(),
            "@launch(256)",
            ("let pn = ctx.block.y", "let pn = ctx.block.y"),
            "needs a producer warp",
        ),
        (
            POINT.to_string(),
            "@launch(288)",
            (
                "B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]",
                "B[kt :+ TILE_K, (pn + pm % 1) * TILE_N :+ TILE_N]",
            ),
            "depends on ctx.block.x",
        ),
        (
            POINT.to_string(),
            "@launch(288)",
            (
                "B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]",
                "B[kt :+ TILE_K, (pn + ctx.grid.x * 0) * TILE_N :+ TILE_N]",
            ),
            "reads ctx.grid.x",
        ),
    ];
    for (point, launch, (from, to), why) in cases {
        let text = gemm_text(&point, launch).replace(from, to);
        assert!(text.contains(to));
        let e = emit_text(&text, "TA=f16,TB=f16,TC=f32");
        assert_eq!(e.cluster, 1, "{why}");
        assert!(!e.source.contains("__cluster_dims__"), "{why}");
        assert!(
            has_note(&e, "CLUSTER=2 not applied", why),
            "{why}: {}",
            e.notes.join("\n")
        );
    }
    // The persistent schedule combines with it: the tile loop steps in whole clusters.
    let text = gemm_text(
        &POINT.replace("CLUSTER in [2]", "CLUSTER in [2], SCHEDULE in [2]"),
        "@launch(288)",
    );
    let e = emit_text(&text, "TA=f16,TB=f16,TC=f16");
    assert_eq!(
        (e.cluster, e.persistent),
        (2, true),
        "{}",
        e.notes.join("\n")
    );
    assert!(e
        .source
        .contains(", true, false, true, 2>::run_persistent("));
    assert!(e.source.contains("ph_tile += (int)gridDim.x / 2) {"));
    // SPLIT_K combines with it: the cluster's blocks share blockIdx.z, hence the k range.
    let text = gemm_text(
        &POINT.replace("CLUSTER in [2]", "CLUSTER in [2], SPLIT_K in [2]"),
        "@launch(288)",
    );
    let e = emit_text(&text, "TA=f16,TB=f16,TC=f32");
    assert_eq!((e.cluster, e.grid_z), (2, 2), "{}", e.notes.join("\n"));
}

#[test]
fn schedule_3_releases_each_stage_when_its_own_mmas_complete() {
    const POINT: &str =
        "@autotune(TILE_M in [128], TILE_N in [192], TILE_K in [64], STAGES in [4], GROUP_M in [8], SCHEDULE in [3], CLUSTER in [2])";
    let e = emit_text(&gemm_text(POINT, "@launch(288)"), "TA=f16,TB=f16,TC=f16");
    assert_eq!(
        (e.persistent, e.cluster, e.gemms[0].release),
        (true, 2, Some(Release::OwnCompletion)),
        "{}",
        e.notes.join("\n")
    );
    assert_eq!(e.schedule, Schedule::Persistent);
    assert!(e.source.contains(
        "ph::gemm::sm90::MainLoop<ph::gemm::F16, 128, 192, 64, 2, 1, 4, true, false, true, 2, true>::run_persistent("
    ));
    assert!(has_note(
        &e,
        "SCHEDULE=3: each consumer warpgroup",
        "wait_group 0"
    ));
    // The GEMM's note names the loop the kernel calls.
    assert!(e
        .notes
        .iter()
        .any(|n| n.contains("true, false, true, 2, true> (k step 64)")));
    insta::assert_snapshot!(render(&e));

    // SCHEDULE=2 at the same point: the same code but for the main loop's last template
    // argument (and the notes).
    let two = emit_text(
        &gemm_text(
            &POINT.replace("SCHEDULE in [3]", "SCHEDULE in [2]"),
            "@launch(288)",
        ),
        "TA=f16,TB=f16,TC=f16",
    );
    assert_eq!(two.gemms[0].release, Some(Release::AfterNext));
    let code = |e: &Emitted| -> Vec<String> {
        (e.source.lines())
            .filter(|l| !l.trim_start().starts_with("//"))
            .map(|l| l.replace(", 2, true>", ", 2>"))
            .collect()
    };
    assert_eq!(code(&e), code(&two));
    assert!(!two.source.contains(", 2, true>"));

    // Without a cluster the template spells CLUSTER = 1 before it.
    let one = emit_text(
        &gemm_text(&POINT.replace(", CLUSTER in [2]", ""), "@launch(288)"),
        "TA=f16,TB=f16,TC=f16",
    );
    assert_eq!(one.gemms[0].release, Some(Release::OwnCompletion));
    assert!(one
        .source
        .contains(", 4, true, false, true, 1, true>::run_persistent("));

    // Where the persistent schedule does not apply (no producer warp), neither does the early
    // release: one block per tile, the default release.
    let e = emit_text(&gemm_text(POINT, "@launch(256)"), "TA=f16,TB=f16,TC=f16");
    assert!(!e.persistent);
    assert_eq!(e.gemms[0].release, Some(Release::AfterNext));
    assert!(!e.source.contains(", true>::run"), "{}", e.source);
}

#[test]
fn cluster_3_has_rank_0_copy_the_whole_b_box() {
    const POINT: &str =
        "@autotune(TILE_M in [128], TILE_N in [192], TILE_K in [64], STAGES in [4], GROUP_M in [8], SCHEDULE in [2], CLUSTER in [3])";
    let e = emit_text(&gemm_text(POINT, "@launch(288)"), "TA=f16,TB=f16,TC=f16");
    assert_eq!(
        (e.persistent, e.cluster, e.gemms[0].b_issue),
        (true, 2, Some(BIssue::Rank0)),
        "{}",
        e.notes.join("\n")
    );
    assert!(e.source.contains(
        "ph::gemm::sm90::MainLoop<ph::gemm::F16, 128, 192, 64, 2, 1, 4, true, false, true, 2, false, true>::run_persistent("
    ));
    assert!(e.source.contains("__cluster_dims__(2, 1, 1)"));
    // B's box is whole (64 k rows of each 64-column slab), as without a cluster.
    assert_eq!(e.tma[1].spec.box_dim, [64, 64]);
    assert!(has_note(
        &e,
        "CLUSTER=3: thread block clusters of 2 blocks",
        "rank 0 copies all of it"
    ));
    insta::assert_snapshot!(render(&e));

    // CLUSTER=2 at the same point: each block copies half of the slabs' k rows; the same code
    // but for the main loop's template tail (and the notes).
    let two = emit_text(
        &gemm_text(
            &POINT.replace("CLUSTER in [3]", "CLUSTER in [2]"),
            "@launch(288)",
        ),
        "TA=f16,TB=f16,TC=f16",
    );
    assert_eq!(two.gemms[0].b_issue, Some(BIssue::Shares));
    assert_eq!(two.tma[1].spec.box_dim, [64, 32]);
    assert!(!two.source.contains(", 2, false, true>"));
    let code = |e: &Emitted| -> Vec<String> {
        (e.source.lines())
            .filter(|l| !l.trim_start().starts_with("//"))
            .map(|l| l.replace(", 2, false, true>", ", 2>"))
            .collect()
    };
    assert_eq!(code(&e), code(&two));

    // Under SCHEDULE=3 the template spells RELEASE_OWN before it, and the schedule's note
    // names the value chosen.
    let three = emit_text(
        &gemm_text(
            &POINT.replace("SCHEDULE in [2]", "SCHEDULE in [3]"),
            "@launch(288)",
        ),
        "TA=f16,TB=f16,TC=f16",
    );
    assert_eq!(
        (three.gemms[0].release, three.gemms[0].b_issue),
        (Some(Release::OwnCompletion), Some(BIssue::Rank0))
    );
    assert!(three
        .source
        .contains(", 4, true, false, true, 2, true, true>::run_persistent("));
    assert!(has_note(
        &three,
        "SCHEDULE=3 (persistent)",
        "each block loops"
    ));
    assert!(!three.notes.iter().any(|n| n.starts_with("SCHEDULE=2")));

    // A K-major B (dot_t) one block per cluster pair: rank 0's box is all BN rows.
    let t = emit_text(
        &common::fast::gemm_t_text(
            "@autotune(TILE_M in [128], TILE_N in [256], TILE_K in [128], STAGES in [4], CLUSTER in [3])",
        )
        .replace("@launch(256)", "@launch(288)"),
        "TA=f8e4m3,TB=f8e4m3,TC=f32",
    );
    assert_eq!(
        (t.cluster, t.gemms[0].b_issue),
        (2, Some(BIssue::Rank0)),
        "{}",
        t.notes.join("\n")
    );
    assert_eq!(t.tma[1].spec.box_dim, [128, 256]);
    assert!(t
        .source
        .contains(", true, true, true, 2, false, true>::run("));
}
