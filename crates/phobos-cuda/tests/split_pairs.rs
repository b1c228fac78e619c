//! SPLIT_K on 128-row tiles with a producer warp (`@launch(288)`, one block per tile), as
//! `examples/gemm_small.ph` declares it for small problems, and the workspace's 8-byte pairs:
//! each part's partial tile and the last part's sum move two adjacent columns an access.

mod common;

use phobos_cuda::{CopyIssuer, Emitted, SplitRecord, SplitReduce};

const SMALL: &str = "examples/gemm_small.ph";
const P512: [(&str, i64); 3] = [("M", 512), ("N", 512), ("K", 4096)];

fn small_at(pins: &str, types: &str, dims: &[(&str, i64)]) -> Emitted {
    common::specialized(common::source(SMALL), pins, types, dims)
}

fn pins(tile_n: u32, stages: u32, split_k: u32) -> String {
    format!(
        "TILE_M=128 TILE_N={tile_n} TILE_K=64 THREADS=288 STAGES={stages} SPLIT_K={split_k} \
         SCHEDULE=1 GROUP_M=1 SPLIT_REDUCE=3 CLUSTER=1"
    )
}

#[test]
fn the_small_space_splits_128_row_tiles_where_they_are_few() {
    let split288 = |ps: Vec<phobos_ir::Point>| {
        ps.into_iter()
            .filter(|p| p.get("THREADS") == Some(288) && p.get("SPLIT_K") != Some(1))
            .collect::<Vec<_>>()
    };
    // 512x512x4096: 16 and 12 tiles of 128x128 and 128x192, each in 2, 4 or 8 parts, 3 or 4
    // stages, the paired workspace (SPLIT_REDUCE=3), alone or in clusters of two; one block per tile (no
    // persistent split); 128x256 unsplit (its 128 accumulators a thread and the split's sum
    // spill).
    let p = split288(common::points_where(SMALL, &P512));
    assert_eq!(p.len(), 2 * 3 * 2 * 2, "{p:?}");
    assert!(p.iter().all(|p| p.get("SPLIT_REDUCE") == Some(3)));
    assert_eq!(
        p.iter().filter(|p| p.get("CLUSTER") == Some(2)).count(),
        p.len() / 2
    );
    assert!(p.iter().all(|p| p.get("SCHEDULE") == Some(1)));
    assert!(p.iter().all(|p| p.get("TILE_N") != Some(256)));
    for n in [128, 192] {
        let parts: std::collections::BTreeSet<i64> = p
            .iter()
            .filter(|p| p.get("TILE_N") == Some(n))
            .filter_map(|p| p.get("SPLIT_K"))
            .collect();
        assert_eq!(
            parts.into_iter().collect::<Vec<_>>(),
            [2, 4, 8],
            "TILE_N={n}"
        );
    }
    // 3000x2000x1000 has 264 tiles of 128x192 or more: no split, and 288-thread clusters only
    // under the persistent schedules, SCHEDULE 2 and 3 (tests/persistent_192.rs).
    let p = common::points_where(SMALL, &[("M", 3000), ("N", 2000), ("K", 1000)]);
    assert!(p.iter().all(|p| p.get("THREADS") != Some(288)
        || p.get("CLUSTER") == Some(1)
        || p.get("SCHEDULE") >= Some(2)));
    assert!(split288(p).is_empty());
}

#[test]
fn a_split_128x128_tile_goes_through_the_workspace_in_pairs() {
    let e = small_at(&pins(128, 4, 8), "TA=f16,TB=f16,TC=f16", &P512);
    assert_eq!(e.grid_z, 8, "{}", e.notes.join("\n"));
    assert_eq!(
        e.gemms[0].split,
        Some(SplitRecord {
            parts: 8,
            reduce: SplitReduce::Workspace,
            pairs: true,
            cluster_refused: None
        })
    );
    assert_eq!(
        e.gemms[0].pipeline.map(|p| p.issuer),
        Some(CopyIssuer::ProducerWarp)
    );
    assert!(e
        .source
        .contains("MainLoop<ph::gemm::F16, 128, 128, 64, 2, 1, 4, true, false, true>::run("));

    assert!(e
        .source
        .contains("ph::split_store_partial_pairs(ph::split_slice("));
    assert!(e.source.contains(", ph_split_n, 8, (int)blockIdx.z, acc);"));

    // Compiled: no spills, and the partial stores and the sum's loads are 8-byte accesses (the
    // element-wise forms remain for rows that are not 8-byte aligned, and at the edge). The
    // default workspace (SPLIT_REDUCE=1) on a 160-thread point has none.
    let points = [
        (pins(128, 4, 8), "TA=f16,TB=f16,TC=f16"),
        (pins(192, 4, 8), "TA=bf16,TB=bf16,TC=bf16"),
        (
            pins(128, 4, 4).replace("CLUSTER=1", "CLUSTER=2"),
            "TA=f16,TB=f16,TC=f16",
        ),
        (
            "TILE_M=64 TILE_N=64 TILE_K=64 THREADS=160 STAGES=12 SPLIT_K=2 SCHEDULE=1 GROUP_M=1 \
             SPLIT_REDUCE=1 CLUSTER=1"
                .to_string(),
            "TA=f16,TB=f16,TC=f16",
        ),
    ];
    let emitted: Vec<Emitted> = points.iter().map(|(p, t)| small_at(p, t, &P512)).collect();
    assert!(!emitted[3].source.contains("_pairs("));
    let labels: Vec<String> = (points.iter()).map(|(p, t)| format!("{p} {t}")).collect();
    let Some(compiled) = common::assert_no_spills(&emitted, &labels) else {
        return;
    };
    for (label, (c, _)) in labels.iter().zip(&compiled) {
        let pairs = label.contains("SPLIT_REDUCE=3");
        assert_eq!(c.ptx.contains("st.global.cg.v2.f32"), pairs, "{label}");
        assert_eq!(c.ptx.contains("ld.global.cg.v2.f32"), pairs, "{label}");
    }
}

#[test]
fn split_128_row_tiles_share_b_in_clusters() {
    // Two blocks on neighbouring M tiles, one k part: each copies half of every B stage (128
    // columns: one 64-column slab each), multicast into both.
    let e = small_at(
        &pins(128, 4, 4).replace("CLUSTER=1", "CLUSTER=2"),
        "TA=f16,TB=f16,TC=f16",
        &P512,
    );
    assert_eq!((e.cluster, e.grid_z), (2, 4), "{}", e.notes.join("\n"));
    assert_eq!(
        e.gemms[0].split.map(|s| s.reduce),
        Some(SplitReduce::Workspace)
    );
    assert!(e
        .source
        .contains("MainLoop<ph::gemm::F16, 128, 128, 64, 2, 1, 4, true, false, true, 2>::run("));
}
