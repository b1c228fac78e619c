//! SPLIT_K reduced through distributed shared memory (SPLIT_REDUCE=4): the parts of an output
//! tile form a thread block cluster along z, reduce-scatter their f32 partial tiles into each
//! other's shared memory, and each stores TILE_N / SPLIT_K of the tile's columns, as
//! `examples/gemm_small.ph` declares it for 512x512x4096: the typed record, the space, the
//! code, and the registers.

mod common;

use phobos_cuda::{emit, EmitOptions, Emitted, NoClusterSplit, SplitRecord, SplitReduce};

const SMALL: &str = "examples/gemm_small.ph";
const P512: [(&str, i64); 3] = [("M", 512), ("N", 512), ("K", 4096)];

fn small_at(pins: &str, types: &str, dims: &[(&str, i64)]) -> Emitted {
    common::specialized(common::source(SMALL), pins, types, dims)
}

/// A 160-thread point (one consumer warpgroup, a producer warp) reduced in a cluster.
fn pins(tile_n: u32, stages: u32, split_k: u32) -> String {
    format!(
        "TILE_M=64 TILE_N={tile_n} TILE_K=64 THREADS=160 STAGES={stages} SPLIT_K={split_k} \
         SCHEDULE=1 GROUP_M=1 SPLIT_REDUCE=4 CLUSTER=1"
    )
}

#[test]
fn the_small_space_reduces_in_clusters_where_it_splits() {
    let cluster_reduced = |dims: &[(&str, i64)]| {
        common::points_where(SMALL, dims)
            .into_iter()
            .filter(|p| p.get("SPLIT_REDUCE") == Some(4))
            .collect::<Vec<_>>()
    };
    // 512x512x4096: the deep ring's points (64x64 at 6, 8 and 12 stages, 64x128 at 6 and 8)
    // in 2 or 4 parts, without CLUSTER's B sharing.
    let p = cluster_reduced(&P512);
    assert_eq!(p.len(), (3 + 2) * 2, "{p:?}");
    assert!(p.iter().all(|p| p.get("THREADS") == Some(160)
        && p.get("CLUSTER") == Some(1)
        && matches!(p.get("SPLIT_K"), Some(2 | 4))));
    assert_eq!(
        p.iter().filter(|p| p.get("TILE_N") == Some(128)).count(),
        2 * 2
    );
    // No split at 3000x2000x1000 (enough tiles), no tensor map at 1000x777x333.
    assert!(cluster_reduced(&[("M", 3000), ("N", 2000), ("K", 1000)]).is_empty());
    assert!(cluster_reduced(&[("M", 1000), ("N", 777), ("K", 333)]).is_empty());
}

#[test]
fn the_cluster_reduction_is_recorded_and_needs_no_workspace() {
    for (tile_n, split_k, c, slice) in [
        (64, 2, "f16", 32),
        (64, 4, "bf16", 16),
        (128, 4, "f16", 32),
        (128, 2, "f32", 64),
    ] {
        let types = format!("TA=f16,TB=f16,TC={c}");
        let e = small_at(&pins(tile_n, 6, split_k), &types, &P512);
        let why = e.notes.join("\n");
        assert_eq!(
            e.gemms[0].split,
            Some(SplitRecord {
                parts: split_k,
                reduce: SplitReduce::Cluster,
                pairs: false,
                cluster_refused: None,
            }),
            "{why}"
        );
        // Grid z carries the parts; no workspace, nothing zeroed (an f32 C too), no B cluster.
        assert_eq!((e.grid_z, e.cluster), (split_k, 1));
        assert_eq!(e.split_workspace, None);
        assert!(e.zero_before_launch.is_empty());
        assert!(!e.source.contains("ph_split_ws"), "{}", e.source);
        assert!(!e.source.contains("store_tile_tma"), "{}", e.source);
        let dims = format!("__global__ void __cluster_dims__(1, 1, {split_k}) ");
        assert!(e.source.contains(&dims), "{}", e.source);
        let reduce = format!("::reduce_split_dsmem<{split_k}>(acc, ph_smem);");
        assert!(e.source.contains(&reduce), "{}", e.source);
        let narrow = format!("(int)ph::gemm::cluster_rank() * {slice}, {slice}), ");
        assert!(e.source.contains(&narrow), "{}", e.source);
    }
}

#[test]
fn loops_the_cluster_cannot_reduce_take_the_paired_workspace() {
    // gemm_typed.ph without its @where: CLUSTER=2 already clusters blocks along M; the
    // mma.sync loop has no reduction in distributed shared memory; a cluster holds at most 8
    // blocks.
    let at = |m: u32, n: u32, k: u32, extra: &str| {
        format!(
            "@autotune(TILE_M in [{m}], TILE_N in [{n}], TILE_K in [{k}], STAGES in [6], \
             SPLIT_REDUCE in [4]{extra})"
        )
    };
    let cases = [
        (
            at(64, 64, 64, ", SPLIT_K in [2], CLUSTER in [2]"),
            "@launch(160)",
            2,
            2,
            NoClusterSplit::ClusterAlongM,
        ),
        (
            at(64, 64, 32, ", SPLIT_K in [2]"),
            "@launch(256)",
            2,
            1,
            NoClusterSplit::NotWgmma,
        ),
        (
            at(64, 128, 64, ", SPLIT_K in [16]"),
            "@launch(160)",
            16,
            1,
            NoClusterSplit::TooManyParts,
        ),
    ];
    for (autotune, launch, parts, cluster, why) in cases {
        let text = common::fast::gemm_text(&autotune, launch);
        let dims = [("M", 512), ("N", 512), ("K", 16384)];
        let (k, src) = common::fast::kernel_of(&text, "TA=f16,TB=f16,TC=f16", &dims);
        let e = emit(&k, &EmitOptions { source: Some(src) }).unwrap();
        let notes = e.notes.join("\n");
        assert_eq!(
            e.gemms[0].split,
            Some(SplitRecord {
                parts,
                reduce: SplitReduce::Workspace,
                pairs: true,
                cluster_refused: Some(why),
            }),
            "{autotune}: {notes}"
        );
        // The note is the record's rendering.
        assert!(e.notes.contains(&why.note()), "{autotune}: {notes}");
        assert_eq!(e.cluster, cluster, "{autotune}");
        assert!(e.split_workspace.is_some(), "{autotune}");
        assert!(!e.source.contains("reduce_split_dsmem"), "{autotune}");
        assert!(!e.source.contains("__cluster_dims__(1, 1,"), "{autotune}");
    }
}

#[test]
fn cluster_split_snapshot() {
    let e = small_at(&pins(64, 8, 2), "TA=f16,TB=f16,TC=f16", &P512);
    insta::assert_snapshot!(format!(
        "// {} threads, {} bytes of dynamic shared memory, grid z {}\n{}",
        e.threads, e.dynamic_smem_bytes, e.grid_z, e.source
    ));
}

#[test]
fn cluster_split_points_compile_without_spills() {
    // The space's SPLIT_REDUCE=4 points at 512x512x4096 (and bf16), through NVRTC and ptxas.
    let points = [
        (pins(64, 8, 2), "TA=f16,TB=f16,TC=f16"),
        (pins(64, 12, 4), "TA=f16,TB=f16,TC=f16"),
        (pins(64, 6, 4), "TA=bf16,TB=bf16,TC=bf16"),
        (pins(128, 6, 2), "TA=f16,TB=f16,TC=f16"),
        (pins(128, 8, 4), "TA=bf16,TB=bf16,TC=bf16"),
    ];
    let emitted: Vec<Emitted> = points
        .iter()
        .map(|(p, types)| small_at(p, types, &P512))
        .collect();
    for e in &emitted {
        assert_eq!(
            e.gemms[0].split.map(|s| s.reduce),
            Some(SplitReduce::Cluster)
        );
    }
    let labels: Vec<String> = (points.iter()).map(|(p, t)| format!("{p} {t}")).collect();
    let Some(compiled) = common::assert_no_spills(&emitted, &labels) else {
        return;
    };
    for (label, (_, res)) in labels.iter().zip(&compiled) {
        // No workspace addresses, no counter: fewer registers than the workspace's 92 at
        // 64x64 (bench/NOTES.md v12) and the paired workspace's 102 at 64x128.
        let cap = if label.contains("TILE_N=64 ") {
            80
        } else {
            110
        };
        assert!(res.registers <= cap, "{label}: {} registers", res.registers);
    }
}
