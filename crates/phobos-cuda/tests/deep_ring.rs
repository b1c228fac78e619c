//! The wgmma loop on one consumer warpgroup with a producer warp (`@launch(160)`) and a deep
//! ring of stages, as `examples/gemm_small.ph` declares it for small problems: the plan's typed
//! record of the pipeline, the notes, the space a problem reaches, and a snapshot of the code.

mod common;

use phobos_cuda::gemm_fast::{OperandCopy, Strategy};
use phobos_cuda::{
    emit, BIssue, CopyIssuer, EmitOptions, Emitted, GemmRecord, NoMainLoop, Pipeline, Release,
    SharedOperand, SplitRecord, SplitReduce,
};

const SMALL: &str = "examples/gemm_small.ph";

/// gemm_small at `pins` with `types`, specialized on `dims` as the tuner compiles it.
fn small_at(pins: &str, types: &str, dims: &[(&str, i64)]) -> Emitted {
    common::specialized(common::source(SMALL), pins, types, dims)
}

const P512: [(&str, i64); 3] = [("M", 512), ("N", 512), ("K", 4096)];

fn pins(tile_n: u32, stages: u32, split_k: u32) -> String {
    format!(
        "TILE_M=64 TILE_N={tile_n} TILE_K=64 THREADS=160 STAGES={stages} SPLIT_K={split_k} \
         SCHEDULE=1 GROUP_M=1 SPLIT_REDUCE=1 CLUSTER=1"
    )
}

#[test]
fn one_warpgroup_with_a_producer_warp_is_recorded() {
    let e = small_at(&pins(64, 12, 4), "TA=f16,TB=f16,TC=f16", &P512);
    assert_eq!(
        e.gemms,
        [GemmRecord {
            strategy: Some(Strategy::Sm90),
            copies: Some([OperandCopy::Tma; 2]),
            pipeline: Some(Pipeline {
                stages: 12,
                tile_k: 64,
                issuer: CopyIssuer::ProducerWarp
            }),
            split: Some(SplitRecord {
                parts: 4,
                reduce: SplitReduce::Workspace,
                pairs: false,
                cluster_refused: None
            }),
            release: Some(Release::AfterNext),
            b_issue: Some(BIssue::Shares),
            shared: Some(SharedOperand::B),
            rejected: vec![],
        }]
    );
    assert_eq!(e.threads, 160);
    // 12 stages of 64x64 + 64x64 f16, their barriers, the alignment slack.
    assert_eq!(e.dynamic_smem_bytes, 12 * 16384 + 12 * 16 + 1024);
    assert!(
        e.source
            .contains("sm90::MainLoop<ph::gemm::F16, 64, 64, 64, 1, 1, 12, true, false, true>"),
        "{}",
        e.source
    );
    // An f32 C keeps the atomics; 64x128 runs 8 stages.
    let e = small_at(&pins(128, 8, 2), "TA=bf16,TB=bf16,TC=f32", &P512);
    assert_eq!(
        e.gemms[0].pipeline,
        Some(Pipeline {
            stages: 8,
            tile_k: 64,
            issuer: CopyIssuer::ProducerWarp
        })
    );
    assert_eq!(
        e.gemms[0].split,
        Some(SplitRecord {
            parts: 2,
            reduce: SplitReduce::AtomicAdd,
            pairs: false,
            cluster_refused: None
        })
    );
}

#[test]
fn thread_zero_issuing_is_recorded_as_such() {
    // The same tile at 128 threads: thread 0 issues between its MMAs, the ring as declared.
    let e = small_at(
        "TILE_M=64 TILE_N=64 TILE_K=32 THREADS=128 STAGES=4 SPLIT_K=1 SCHEDULE=1 GROUP_M=1 \
         SPLIT_REDUCE=1 CLUSTER=1",
        "TA=f16,TB=f16,TC=f16",
        &P512,
    );
    assert_eq!(e.gemms[0].strategy, Some(Strategy::Sm90));
    assert_eq!(
        e.gemms[0].pipeline,
        Some(Pipeline {
            stages: 4,
            tile_k: 64,
            issuer: CopyIssuer::Thread0
        })
    );
}

#[test]
fn a_ring_past_shared_memory_is_refused_with_the_reason() {
    // 12 stages of 64x128 are 288 KiB: no wgmma loop (and gemm_small's @where keeps the point
    // out of its space).
    let text = std::fs::read_to_string(common::root().join(SMALL)).unwrap();
    let text = text.replace("@where(THREADS != 160 || TILE_N == 64 || STAGES <= 8)", "");
    let src = phobos_syntax::SourceFile::new(SMALL, text);
    let module = phobos_check::load(src.clone()).unwrap();
    let info = &module.kernels[0];
    let v = info
        .variant(Some(&pins(128, 12, 1)), Some("TA=f16,TB=f16,TC=f16"), None)
        .unwrap();
    let mut k = phobos_check::instantiate(&module, info, &v).unwrap();
    let dims: Vec<(String, i64)> = P512.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    phobos_cuda::specialize_alignment(&mut k, &dims);
    let e = emit(&k, &EmitOptions { source: Some(src) }).unwrap();
    assert_ne!(e.gemms[0].strategy, Some(Strategy::Sm90));
    assert!(
        matches!(
            e.gemms[0].rejected.first(),
            Some((Strategy::Sm90, NoMainLoop::WgmmaSmemOver { bytes })) if *bytes > 227 * 1024
        ),
        "{:?}",
        e.gemms[0].rejected
    );
}

#[test]
fn the_small_space_reaches_the_deep_ring_where_tma_applies() {
    let at160 = |ps: &[phobos_ir::Point]| {
        ps.iter()
            .filter(|p| p.get("THREADS") == Some(160))
            .cloned()
            .collect::<Vec<_>>()
    };
    // 512x512x4096: 64x64 at 6, 8 and 12 stages, SPLIT_K 1, 2, 4 (64 tiles: at most 264
    // blocks); 64x128 at 6 and 8, SPLIT_K up to 8; split points at the three SPLIT_REDUCE values
    // 1 to 3, each alone and in clusters of two, and reduced in a cluster of their parts
    // (SPLIT_REDUCE=4, 2 or 4 parts, tests/split_dsmem.rs).
    let p = at160(&common::points_where(SMALL, &P512));
    let count = |n: i64| p.iter().filter(|p| p.get("TILE_N") == Some(n)).count();
    assert_eq!(
        (count(64), count(128)),
        (2 * 3 * 7 + 3 * 2, 2 * 2 * 10 + 2 * 2),
        "{p:?}"
    );
    let reduced_in_clusters = p
        .iter()
        .filter(|p| p.get("SPLIT_REDUCE") == Some(4))
        .count();
    assert_eq!(
        p.iter().filter(|p| p.get("CLUSTER") == Some(2)).count(),
        (p.len() - reduced_in_clusters) / 2
    );
    assert!(p.iter().all(|p| p.get("TILE_K") == Some(64)));
    assert!(p.iter().all(|p| p.get("STAGES").is_some_and(|s| s >= 6)));
    // 1000x777x333: odd K and N, no tensor map: none.
    assert!(at160(&common::points_where(
        SMALL,
        &[("M", 1000), ("N", 777), ("K", 333)]
    ))
    .is_empty());
    // Only the deep ring's points and split 128-row tiles are clustered.
    assert!(common::points_where(SMALL, &P512)
        .iter()
        .all(|p| p.get("CLUSTER") == Some(1)
            || p.get("THREADS") == Some(160)
            || (p.get("THREADS") == Some(288) && p.get("SPLIT_K") != Some(1))));
    // 3000x2000x1000: 1504 tiles of 64x64, no split.
    let p = at160(&common::points_where(
        SMALL,
        &[("M", 3000), ("N", 2000), ("K", 1000)],
    ));
    assert_eq!(p.len(), 2 * 5, "{p:?}");
    assert!(p.iter().all(|p| p.get("SPLIT_K") == Some(1)));
}

#[test]
fn clusters_share_b_with_split_k() {
    // 64x64 tiles of an N-major B are one 64-column slab: each block of the cluster copies
    // half of its k rows (a box of 32 rows), multicast into both.
    let e = small_at(
        &pins(64, 12, 2).replace("CLUSTER=1", "CLUSTER=2"),
        "TA=f16,TB=f16,TC=f16",
        &P512,
    );
    assert_eq!(e.cluster, 2, "{}", e.notes.join("\n"));
    assert_eq!(e.grid_z, 2);
    assert_eq!(
        e.gemms[0].split,
        Some(SplitRecord {
            parts: 2,
            reduce: SplitReduce::Workspace,
            pairs: false,
            cluster_refused: None
        })
    );
    let b = e.tma.iter().find(|t| t.name.ends_with("tma1")).unwrap();
    assert_eq!(b.spec.box_dim, [64, 32]);
    assert!(e
        .source
        .contains("MainLoop<ph::gemm::F16, 64, 64, 64, 1, 1, 12, true, false, true, 2>::run("));
    // 64x128: every block copies one of the two slabs (boxes of 64 k rows, as unclustered).
    let e = small_at(
        &pins(128, 8, 4).replace("CLUSTER=1", "CLUSTER=2"),
        "TA=f16,TB=f16,TC=f32",
        &P512,
    );
    assert_eq!((e.cluster, e.grid_z), (2, 4));
    let b = e.tma.iter().find(|t| t.name.ends_with("tma1")).unwrap();
    assert_eq!(b.spec.box_dim, [64, 64]);
    assert_eq!(
        e.gemms[0].split.map(|s| s.reduce),
        Some(SplitReduce::AtomicAdd)
    );
}

#[test]
fn deep_ring_cluster_split_snapshot() {
    // cuBLAS's shape for 512x512x4096: 64x64 tiles, a deep ring, clusters of 2, split K.
    let e = small_at(
        &pins(64, 12, 2).replace("CLUSTER=1", "CLUSTER=2"),
        "TA=f16,TB=f16,TC=f16",
        &P512,
    );
    insta::assert_snapshot!(format!(
        "// {} threads, {} bytes of dynamic shared memory, grid z {}\n{}",
        e.threads, e.dynamic_smem_bytes, e.grid_z, e.source
    ));
}

#[test]
fn deep_ring_points_compile_without_spills() {
    // The space's 160-thread points as a 512x512x4096 problem compiles them (the CI compile
    // test compiles every point unspecialized, where no tensor map applies).
    let points = [
        (pins(64, 6, 1), "TA=f16,TB=f16,TC=f16"),
        (pins(64, 12, 4), "TA=f16,TB=f16,TC=f16"),
        (
            pins(64, 12, 2).replace("CLUSTER=1", "CLUSTER=2"),
            "TA=f16,TB=f16,TC=f16",
        ),
        (
            pins(64, 8, 4).replace("CLUSTER=1", "CLUSTER=2"),
            "TA=bf16,TB=bf16,TC=bf16",
        ),
        (
            pins(128, 8, 4).replace("CLUSTER=1", "CLUSTER=2"),
            "TA=f16,TB=f16,TC=f32",
        ),
        (pins(128, 8, 1), "TA=f16,TB=f16,TC=f16"),
    ];
    let emitted: Vec<Emitted> = points
        .iter()
        .map(|(p, types)| small_at(p, types, &P512))
        .collect();
    for e in &emitted {
        assert_eq!(
            e.gemms[0].pipeline.map(|p| p.issuer),
            Some(CopyIssuer::ProducerWarp)
        );
    }
    let labels: Vec<String> = (points.iter()).map(|(p, t)| format!("{p} {t}")).collect();
    let Some(compiled) = common::assert_no_spills(&emitted, &labels) else {
        return;
    };
    for (label, (_, res)) in labels.iter().zip(&compiled) {
        // One warpgroup of 64 or 128 f32 accumulators, no second warpgroup's share.
        assert!(res.registers <= 168, "{label}: {} registers", res.registers);
    }
}
