//! The fast GEMM main loops through the emitter: snapshots of gemm_typed at a wgmma point, the
//! launch facts (tensor maps, SPLIT_K zeroing and grid), and the choice at the edges (alignment,
//! threads, dtypes, epilogues).

mod common;

use common::fast::{aligned_dims, emit_text, emitted, gemm_text, kernel_of, render};
use phobos_cuda::gemm_fast::{OperandCopy, Strategy};
use phobos_cuda::{
    emit_for_target, BIssue, CopyIssuer, EmitOptions, GemmPolicy, GemmRecord, NoMainLoop, NoSplit,
    Pipeline, Release, SharedOperand, SplitRecord, SplitReduce, SplitWorkspace, Target,
};
use phobos_ir::{DType, Dim};

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
            shared: Some(SharedOperand::B),
            rejected: vec![]
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
            shared: None,
            rejected: vec![(Strategy::Sm90, NoMainLoop::TmaMisaligned)]
        }]
    );
    // Nothing on FFMA: the GEMM is the mma.sync loop (above), and no other dot falls back.
    assert!(e.dots.iter().all(|d| d.lowering.is_ok()), "{:?}", e.dots);
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
    assert!(
        s.source.contains(", true, false, 2, 2, 1>::run("),
        "{}",
        s.source
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
            shared: None,
            rejected: vec![]
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
    assert_eq!(
        e.gemms[0].rejected,
        [
            (Strategy::Sm90, NoMainLoop::NeedsSm90a),
            (
                Strategy::Sm80,
                NoMainLoop::SmemOver {
                    bytes: 4 * 48 * 1024,
                    target: Target::sm80()
                }
            )
        ]
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
    assert_eq!(e.gemms[0].strategy, Some(Strategy::Sm80));
    assert_eq!(
        e.gemms[0].rejected,
        [(Strategy::Sm90, NoMainLoop::NeedsSm90a)]
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
    assert_eq!(
        e.gemms[0].pipeline.map(|p| p.issuer),
        Some(CopyIssuer::ProducerWarp)
    );
    assert!(e.gemms[0].rejected.is_empty());
    // 160 threads: one warpgroup plus a producer warp cannot hold 128 x 256 accumulators.
    let e = emit_text(
        &gemm_text(WGMMA_POINT, "@launch(160)"),
        "TA=f16,TB=f16,TC=f32",
    );
    assert!(e.tma.is_empty());
    assert_eq!(
        e.gemms[0].rejected,
        [
            (Strategy::Sm90, NoMainLoop::TooManyAccumulators),
            (Strategy::Sm80, NoMainLoop::NoMmaWarpGrid)
        ],
        "{}",
        e.notes.join("\n")
    );
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
        assert_eq!(
            e.gemms[0].rejected.first(),
            Some(&(Strategy::Sm90, NoMainLoop::WgmmaNeedsKMajor)),
            "{types}"
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
    assert_eq!(e.gemms[0].strategy, None);
    assert_eq!(
        e.gemms[0].rejected,
        [(Strategy::Ffma, NoMainLoop::ElementsPerThread(8))]
    );
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
            let split = splits.then_some(SplitRecord {
                parts: 2,
                reduce,
                pairs: false,
                cluster_refused: None,
            });
            assert_eq!(e.gemms[0].split, split, "{why}");
            let refused = (!splits).then_some(NoSplit::NotLinear);
            assert_eq!(e.split_refused, refused, "{why}");
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
    let why = NoSplit::CNotFloat {
        c: "C".into(),
        dtype: DType::I32,
    };
    assert_eq!(e.split_refused, Some(why.clone()));
    // The note is the record's rendering.
    assert!(e.notes.contains(&why.note(2)), "{}", e.notes.join("\n"));
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
    assert_eq!(
        e.gemms[0].split,
        Some(SplitRecord {
            parts: 3,
            reduce: SplitReduce::Workspace,
            pairs: false,
            cluster_refused: None
        })
    );
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
