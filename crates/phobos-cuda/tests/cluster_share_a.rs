//! CLUSTER=4: clusters of two blocks on neighbouring N tiles of one M tile that share A through
//! multicast copies (`MainLoop`'s SHARE_A), under the persistent schedule only: the plan
//! record, the main loop's template, the tensor-map boxes, the tile walk and the notes.

mod common;

use common::fast::{aligned_dims, gemm_text, kernel_of};
use phobos_cuda::{emit, BIssue, EmitOptions, Emitted, NoCluster, Release, SharedOperand};

const POINT: &str =
    "@autotune(TILE_M in [128], TILE_N in [192], TILE_K in [64], STAGES in [4], GROUP_M in [8], SCHEDULE in [3], CLUSTER in [4])";

fn emit_text(text: &str, types: &str) -> Emitted {
    let (k, src) = kernel_of(text, types, &aligned_dims());
    emit(&k, &EmitOptions { source: Some(src) }).unwrap()
}

/// The emitted text with its tensor maps on top.
fn render(e: &Emitted) -> String {
    let mut out = format!(
        "// entry {}, {} threads, {} bytes of dynamic shared memory, cluster {}\n",
        e.entry, e.threads, e.dynamic_smem_bytes, e.cluster
    );
    for t in &e.tma {
        out.push_str(&format!(
            "// tensor map {}: tensor #{} {}, {}\n",
            t.name, t.tensor, t.dtype, t.spec
        ));
    }
    out.push_str(&e.source);
    out
}

/// CLUSTER=`knob` was refused for `why`: the record says so, and the notes render it in the
/// words a user reads (`says`).
fn refused(e: &phobos_cuda::Emitted, why: NoCluster, knob: u32, says: &str) {
    assert_eq!(e.cluster_refused, Some(why), "{}", e.notes.join("\n"));
    let note = why.note(knob);
    assert_eq!(
        note,
        format!("CLUSTER={knob} not applied (one block per cluster): {says}")
    );
    assert!(e.notes.contains(&note), "{}", e.notes.join("\n"));
}

#[test]
fn cluster_4_shares_a_between_neighbouring_n_tiles() {
    let e = emit_text(&gemm_text(POINT, "@launch(288)"), "TA=f16,TB=f16,TC=f16");
    let g = &e.gemms[0];
    assert_eq!(
        (e.persistent, e.cluster, g.shared, g.b_issue, g.release),
        (
            true,
            2,
            Some(SharedOperand::A),
            Some(BIssue::Shares),
            Some(Release::OwnCompletion)
        ),
        "{}",
        e.notes.join("\n")
    );
    assert_eq!(e.cluster_refused, None);
    // CLUSTER, RELEASE_OWN, B_ONE_ISSUER, SHARE_A.
    assert!(e.source.contains(
        "ph::gemm::sm90::MainLoop<ph::gemm::F16, 128, 192, 64, 2, 1, 4, true, false, true, 2, true, false, true>::run_persistent("
    ));
    assert!(e.source.contains("__cluster_dims__(2, 1, 1)"));
    // The pairs walk the N tiles rounded up to whole clusters, two N tiles of one M tile each.
    assert!(e.source.contains("const int ph_cy = (ph_gy + 1) / 2;"));
    assert!(e
        .source
        .contains("ph::gemm::cluster_n_swizzle_block(ph_tile % ph_gx, ph_tile / ph_gx * 2 + (int)blockIdx.x % 2, ph_gx, ph_cy * 2, 8, 2, &ph_bx, &ph_by);"));
    assert!(!e.source.contains("ph::gemm::cluster_swizzle_block("));
    // A's box is half the tile's rows (each block copies 64 of 128), B's is whole.
    assert_eq!(e.tma[0].spec.box_dim, [64, 64]);
    assert_eq!(e.tma[1].spec.box_dim, [64, 64]);
    insta::assert_snapshot!(render(&e));

    // SCHEDULE=2: RELEASE_OWN false, SHARE_A still spelled.
    let two = emit_text(
        &gemm_text(
            &POINT.replace("SCHEDULE in [3]", "SCHEDULE in [2]"),
            "@launch(288)",
        ),
        "TA=f16,TB=f16,TC=f16",
    );
    assert_eq!(two.gemms[0].release, Some(Release::AfterNext));
    assert!(two
        .source
        .contains(", 4, true, false, true, 2, false, false, true>::run_persistent("));

    // CLUSTER=2 at the same point shares B: no SHARE_A, the M-tile pair walk, A's box whole.
    let b = emit_text(
        &gemm_text(
            &POINT.replace("CLUSTER in [4]", "CLUSTER in [2]"),
            "@launch(288)",
        ),
        "TA=f16,TB=f16,TC=f16",
    );
    assert_eq!(b.gemms[0].shared, Some(SharedOperand::B));
    assert!(b
        .source
        .contains(", 4, true, false, true, 2, true>::run_persistent("));
    assert!(b.source.contains("ph::gemm::cluster_swizzle_block("));
    assert_eq!(
        (b.tma[0].spec.box_dim, b.tma[1].spec.box_dim),
        ([64, 128], [64, 32])
    );
}

#[test]
fn cluster_4_needs_the_persistent_schedule_and_an_a_tile_free_of_block_y() {
    // One block per tile: no cluster, and the notes say why.
    let one = emit_text(
        &gemm_text(&POINT.replace(", SCHEDULE in [3]", ""), "@launch(288)"),
        "TA=f16,TB=f16,TC=f16",
    );
    assert_eq!(
        (one.persistent, one.cluster, one.gemms[0].shared),
        (false, 1, Some(SharedOperand::B))
    );
    refused(
        &one,
        NoCluster::ShareANeedsPersistent,
        4,
        "sharing A needs the persistent schedule (SCHEDULE=2 or 3)",
    );
    assert!(!one.source.contains("__cluster_dims__"));

    // A's rows read ctx.block.y: the two blocks of a pair would need different A tiles.
    let text = gemm_text(
        POINT,
        "@launch(288)\n@grid(cdiv(M, TILE_M), cdiv(N, TILE_N))",
    )
    .replace(
        "let pm = ctx.block.x",
        "let pm = ctx.block.x + 0 * ctx.block.y",
    );
    let y = emit_text(&text, "TA=f16,TB=f16,TC=f16");
    assert_eq!(y.cluster, 1, "{}", y.notes.join("\n"));
    refused(
        &y,
        NoCluster::DependsOnBlock(SharedOperand::A),
        4,
        "A's tile or the k range depends on ctx.block.y",
    );
}

#[test]
fn cluster_4_falls_back_with_the_persistent_schedule() {
    // A block barrier around the main loop (a reduction of the accumulator) rules the
    // persistent schedule out after planning: the cluster goes too, and the notes say why.
    let text = gemm_text(POINT, "@launch(288)").replace(
        "C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = TC(acc)",
        "C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = TC(acc / sum(acc))",
    );
    let e = emit_text(&text, "TA=f16,TB=f16,TC=f32");
    assert_eq!(
        (e.persistent, e.cluster, e.gemms[0].shared),
        (false, 1, Some(SharedOperand::B)),
        "{}",
        e.notes.join("\n")
    );
    assert!(!e.source.contains("__cluster_dims__"));
    // The main loop of one block per tile (RELEASE_OWN spelled, as SCHEDULE=3 leaves it), no
    // SHARE_A and no walk over pairs of N tiles.
    assert!(
        e.source.contains(", 4, true, false, true, 1, true>::run("),
        "{}",
        e.source
    );
    assert!(!e.source.contains("cluster_n_swizzle_block"));
    refused(
        &e,
        NoCluster::PersistentRuledOut,
        4,
        "sharing A needs the persistent schedule, which the code around the main loop rules out",
    );
    // The kernel's point is still the one asked for.
    assert!(e.source.contains("CLUSTER=4"));
}

/// CLUSTER=5: the same, four blocks on four neighbouring N tiles, each copying a quarter of every
/// A stage (48 of 192 rows); the tile walk steps in units of four N tiles.
#[test]
fn cluster_5_shares_a_between_four_neighbouring_n_tiles() {
    let point = POINT
        .replace(
            "TILE_M in [128], TILE_N in [192]",
            "TILE_M in [192], TILE_N in [128]",
        )
        .replace("CLUSTER in [4]", "CLUSTER in [5]");
    let e = emit_text(&gemm_text(&point, "@launch(416)"), "TA=f16,TB=f16,TC=f16");
    let g = &e.gemms[0];
    assert_eq!(
        (e.persistent, e.cluster, g.shared, g.b_issue),
        (true, 4, Some(SharedOperand::A), Some(BIssue::Shares)),
        "{}",
        e.notes.join("\n")
    );
    assert!(e.source.contains(
        "ph::gemm::sm90::MainLoop<ph::gemm::F16, 192, 128, 64, 3, 1, 4, true, false, true, 4, true, false, true>::run_persistent("
    ));
    assert!(e.source.contains("__cluster_dims__(4, 1, 1)"));
    assert!(e.source.contains("const int ph_cy = (ph_gy + 3) / 4;"));
    assert!(e
        .source
        .contains("ph::gemm::cluster_n_swizzle_block(ph_tile % ph_gx, ph_tile / ph_gx * 4 + (int)blockIdx.x % 4, ph_gx, ph_cy * 4, 8, 4, &ph_bx, &ph_by);"));
    // A's box is a quarter of the tile's rows, B's whole (N-major, 64-column slabs).
    assert_eq!(e.tma[0].spec.box_dim, [64, 48]);
    assert_eq!(e.tma[1].spec.box_dim, [64, 64]);
    assert_eq!(e.cluster_refused, None);

    // Without the persistent schedule: no cluster, and the notes say why.
    let one = emit_text(
        &gemm_text(&point.replace(", SCHEDULE in [3]", ""), "@launch(416)"),
        "TA=f16,TB=f16,TC=f16",
    );
    assert_eq!((one.persistent, one.cluster), (false, 1));
    refused(
        &one,
        NoCluster::ShareANeedsPersistent,
        5,
        "sharing A needs the persistent schedule (SCHEDULE=2 or 3)",
    );
}
