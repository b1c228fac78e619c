//! The fast GEMM main loops' schedules through the emitter: GROUP_M's block remapping, the
//! persistent tile loop (SCHEDULE=2/3), the TMA C store, and clusters sharing an operand tile
//! by multicast (CLUSTER), with snapshots of the emitted code.

mod common;

use common::fast::{aligned_dims, emit_text, emitted, gemm_text, render};
use phobos_cuda::gemm_fast::TmaOperand;
use phobos_cuda::{
    BIssue, Blocker, Emitted, NoCluster, NoProducerLoop, NoTmaStore, Release, Schedule,
    SharedOperand,
};
use phobos_ir::{DType, Dim};

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
    // The note is the record's rendering.
    assert!(
        e.notes.contains(&e.schedule.note(2)),
        "{}",
        e.notes.join("\n")
    );
    assert!(phobos::backend::cuda::launch_facts(&e).persistent);
    insta::assert_snapshot!(render(&e));

    // Without a producer warp, with SPLIT_K, or with a block barrier around the main loop (a
    // reduction of the accumulator): one block per tile, and the notes say why.
    let cases = [
        (
            POINT.to_string(),
            "@launch(256)",
            "TC(acc)",
            Blocker::MainLoop(NoProducerLoop::NoProducerWarp),
        ),
        (
            POINT.replace("SCHEDULE in [2]", "SCHEDULE in [2], SPLIT_K in [2]"),
            "@launch(288)",
            "TC(acc)",
            Blocker::SplitK,
        ),
        (
            POINT.to_string(),
            "@launch(288)",
            "TC(acc / sum(acc))",
            Blocker::Surroundings,
        ),
    ];
    for (point, launch, store, why) in cases {
        let text = gemm_text(&point, launch).replace(
            "C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = TC(acc)",
            &format!("C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = {store}"),
        );
        let e = emit_text(&text, "TA=f16,TB=f16,TC=f32");
        assert!(!e.persistent, "{why}");
        assert_eq!(
            e.schedule,
            Schedule::NotApplied(why),
            "{}",
            e.notes.join("\n")
        );
        assert!(!e.source.contains("run_persistent"), "{why}");
        // The note is the record's rendering.
        assert!(
            e.notes.contains(&e.schedule.note(2)),
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
            NoTmaStore::SplitAtomics,
        ),
        (
            POINT.replace("TILE_N in [256]", "TILE_N in [128]"),
            "TA=f16,TB=f16,TC=f16",
            // 3 stages of 128x64 + 64x128 f16, their barriers and the slack: 99376 bytes.
            NoTmaStore::NoRoom {
                mainloop_bytes: 99376,
            },
        ),
    ];
    for (point, types, why) in cases {
        let e = emit_text(&gemm_text(&point, "@launch(288)"), types);
        assert!(!e.source.contains("store_tile_tma"), "{why}");
        assert!(
            e.tma.iter().all(|t| t.spec.operand != TmaOperand::C),
            "{why}"
        );
        assert_eq!(e.c_store, Some(Err(why)), "{}", e.notes.join("\n"));
        // The note is the record's rendering.
        assert!(
            e.notes.contains(&why.to_string()),
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
    assert_eq!(e.cluster_refused, None);
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
            NoCluster::MainLoop(NoProducerLoop::NoProducerWarp),
            "needs a producer warp",
        ),
        (
            POINT.to_string(),
            "@launch(288)",
            (
                "B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]",
                "B[kt :+ TILE_K, (pn + pm % 1) * TILE_N :+ TILE_N]",
            ),
            NoCluster::DependsOnBlock(SharedOperand::B),
            "depends on ctx.block.x",
        ),
        (
            POINT.to_string(),
            "@launch(288)",
            (
                "B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]",
                "B[kt :+ TILE_K, (pn + ctx.grid.x * 0) * TILE_N :+ TILE_N]",
            ),
            NoCluster::ReadsGridX,
            "reads ctx.grid.x",
        ),
    ];
    for (point, launch, (from, to), why, says) in cases {
        let text = gemm_text(&point, launch).replace(from, to);
        assert!(text.contains(to));
        let e = emit_text(&text, "TA=f16,TB=f16,TC=f32");
        assert_eq!(e.cluster, 1, "{why}");
        assert!(!e.source.contains("__cluster_dims__"), "{why}");
        assert_eq!(e.cluster_refused, Some(why), "{}", e.notes.join("\n"));
        // The note is the record's rendering, in the words a user reads.
        assert!(why.to_string().contains(says), "{why}");
        assert!(
            e.notes.contains(&why.note(2)),
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
    assert_eq!(three.schedule, Schedule::Persistent);
    assert!(three.notes.contains(&three.schedule.note(3)));
    assert!(!three.notes.contains(&three.schedule.note(2)));

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
