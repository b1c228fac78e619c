//! The fast GEMM plans' configurations: every one the GPU harness instantiates is valid and its
//! accumulator layout covers the tile, invalid ones say why, the headers include only each
//! other, and the tile walks (GROUP_M and cluster swizzles, split-K ranges) are bijections.

use super::cfg::{FfmaCfg, Sm80Cfg, Sm90Cfg};
use super::*;
use proptest::prelude::{prop_assert, prop_assert_eq, proptest, ProptestConfig};
use std::collections::HashSet;

/// Clusters are of two blocks sharing either operand, or of four sharing A (CLUSTER=5), whose
/// quarter of a 192- or 128-row A box is whole swizzle atoms; four sharing B, or three, are
/// refused with the main loop's reason.
#[test]
fn clusters_of_four_share_only_a() {
    let (s90, _, _) = harness_cfgs();
    let mut c = s90
        .into_iter()
        .find(|c| c.bm == 128 && c.elem_bytes == 2 && c.a_k && !c.b_k && c.producer_warp)
        .expect("a 128-row f16 producer-warp configuration");
    let why = Some(NoClusterLoop::Size);
    assert_eq!(
        NoClusterLoop::Size.to_string(),
        "clusters are of two blocks, or of four sharing A"
    );
    assert_eq!(c.cluster_blocker(4, SharedOperand::A), None);
    assert_eq!(c.cluster_blocker(4, SharedOperand::B), why);
    assert_eq!(c.cluster_blocker(3, SharedOperand::A), why);
    assert_eq!(c.cluster_blocker(2, SharedOperand::B), None);
    c.bm = 192;
    assert_eq!(c.cluster_blocker(4, SharedOperand::A), None);
    // 20 rows a quarter: not whole 8-row atoms.
    c.bm = 80;
    let why = NoClusterLoop::RowsNotWholeAtoms(SharedOperand::A);
    assert_eq!(c.cluster_blocker(4, SharedOperand::A), Some(why));
    assert_eq!(
        why.to_string(),
        "the A tile's rows do not split into whole swizzle atoms"
    );
}

/// The configurations bench/gemm_dev/harness.cu instantiates: all valid here too.
fn harness_cfgs() -> (Vec<Sm90Cfg>, Vec<Sm80Cfg>, Vec<FfmaCfg>) {
    let s90 = |dt, es, bm, bn, bk, wg_m, st, a_k, b_k, pw| Sm90Cfg {
        dt,
        elem_bytes: es,
        bm,
        bn,
        bk,
        wg_m,
        wg_n: 1,
        stages: st,
        a_k,
        b_k,
        producer_warp: pw,
        cluster: 1,
        release: Release::AfterNext,
        b_issue: BIssue::Shares,
        shared: SharedOperand::B,
    };
    let s80 = |dt, es, bm, bn, bk, wm, wn, st, a_k, b_k, v| Sm80Cfg {
        dt,
        elem_bytes: es,
        bm,
        bn,
        bk,
        warps_m: wm,
        warps_n: wn,
        stages: st,
        a_k,
        b_k,
        va: v,
        vb: v,
        shift: false,
    };
    let ff = |bm, bn, bk, wm, wn, tm, tn, a_k, b_k, v| FfmaCfg {
        bm,
        bn,
        bk,
        warps_m: wm,
        warps_n: wn,
        tm,
        tn,
        a_k,
        b_k,
        va: v,
        vb: v,
        stages: 2,
    };
    let (f16, bf16, tf32, e4, e5) = (
        "ph::gemm::F16",
        "ph::gemm::BF16",
        "ph::gemm::TF32",
        "ph::gemm::F8E4M3",
        "ph::gemm::F8E5M2",
    );
    (
        vec![
            s90(f16, 2, 128, 256, 64, 2, 4, true, false, true),
            s90(f16, 2, 128, 256, 64, 2, 4, true, false, false),
            s90(f16, 2, 128, 256, 64, 2, 3, true, false, true),
            s90(f16, 2, 128, 256, 64, 2, 4, true, true, true),
            s90(f16, 2, 128, 256, 64, 2, 4, false, false, true),
            s90(f16, 2, 256, 128, 64, 2, 4, true, false, false),
            s90(f16, 2, 128, 128, 64, 2, 6, true, false, false),
            s90(f16, 2, 128, 128, 64, 1, 6, true, false, false),
            s90(f16, 2, 128, 128, 64, 2, 3, true, false, false),
            s90(f16, 2, 128, 128, 64, 2, 3, true, false, true),
            s90(bf16, 2, 128, 128, 64, 2, 3, true, false, false),
            s90(bf16, 2, 128, 256, 64, 2, 4, true, false, true),
            s90(tf32, 4, 128, 256, 32, 2, 4, true, true, true),
            s90(tf32, 4, 128, 128, 32, 2, 6, true, true, false),
            s90(e4, 1, 128, 256, 128, 2, 4, true, true, true),
            s90(e5, 1, 128, 128, 128, 2, 6, true, true, false),
        ],
        vec![
            s80(f16, 2, 128, 256, 32, 2, 4, 3, true, false, 16),
            s80(f16, 2, 128, 128, 32, 2, 2, 4, true, false, 16),
            s80(f16, 2, 128, 128, 32, 2, 4, 4, true, true, 16),
            s80(f16, 2, 128, 128, 32, 2, 4, 4, false, false, 16),
            s80(f16, 2, 128, 128, 32, 2, 4, 3, true, false, 4),
            s80(bf16, 2, 128, 128, 64, 2, 4, 3, true, false, 16),
            s80(tf32, 4, 128, 128, 32, 2, 4, 3, true, true, 16),
            s80(e4, 1, 128, 128, 64, 2, 4, 4, true, true, 16),
        ],
        vec![
            ff(128, 128, 8, 2, 4, 8, 8, true, false, 4),
            ff(128, 128, 8, 2, 4, 8, 8, true, true, 4),
            ff(128, 128, 16, 2, 4, 8, 8, true, false, 4),
            ff(128, 128, 8, 4, 2, 8, 8, true, false, 4),
            ff(128, 64, 8, 2, 2, 8, 8, true, false, 4),
            ff(128, 128, 8, 2, 4, 8, 8, false, false, 4),
            ff(128, 128, 8, 2, 4, 8, 8, true, false, 1),
            ff(64, 64, 16, 2, 2, 4, 8, true, false, 4),
        ],
    )
}

/// Every in-tile element held by exactly one (thread, register) pair.
fn covers_tile(
    r: u32,
    c: u32,
    threads: u32,
    n: u32,
    coord: impl Fn(u32, u32) -> Option<(u32, u32)>,
) {
    let mut seen = HashSet::new();
    for t in 0..threads {
        for i in 0..n {
            if let Some((rr, cc)) = coord(t, i) {
                assert!(rr < r && cc < c, "({rr}, {cc}) outside {r} x {c}");
                assert!(seen.insert((rr, cc)), "({rr}, {cc}) held twice");
            }
        }
    }
    assert_eq!(seen.len() as u32, r * c);
}

#[test]
fn harness_configurations_are_valid_and_their_layouts_cover_the_tile() {
    let (s90, s80, ff) = harness_cfgs();
    for c in &s90 {
        c.validate().unwrap_or_else(|e| panic!("{}: {e}", c.cpp()));
        covers_tile(c.bm, c.bn, c.threads(), c.acc_regs(), |t, i| c.coord(t, i));
    }
    for c in &s80 {
        c.validate(Target::sm90a())
            .unwrap_or_else(|e| panic!("{}: {e}", c.cpp()));
        covers_tile(c.bm, c.bn, c.threads(), c.acc_regs(), |t, i| c.coord(t, i));
    }
    for c in &ff {
        c.validate(Target::sm90a())
            .unwrap_or_else(|e| panic!("{}: {e}", c.cpp()));
        covers_tile(c.bm, c.bn, c.threads(), c.tm * c.tn, |t, i| c.coord(t, i));
    }
}

#[test]
fn invalid_configurations_say_why() {
    let (s90, s80, _) = harness_cfgs();
    let mut c = s90[0].clone();
    c.stages = 5; // 5 x 48 KiB does not fit
    let e = c.validate().unwrap_err();
    assert_eq!(
        e,
        NoMainLoop::WgmmaSmemOver {
            bytes: c.smem_bytes()
        }
    );
    assert_eq!(e.to_string(), "shared memory over 227 KiB");
    let mut c = s90[5].clone(); // 256 x 128: two m64 rows per warpgroup
    c.producer_warp = true;
    let e = c.validate().unwrap_err();
    assert_eq!(e, NoMainLoop::ProducerWarpRegisters);
    assert!(e.to_string().contains("producer warp"));
    let mut c = s80[6].clone();
    c.b_k = false;
    let e = c.validate(Target::sm90a()).unwrap_err();
    assert_eq!(e, NoMainLoop::MmaNeedsKMajor);
    assert!(e.to_string().contains("K-major"));
}

#[test]
fn headers_include_only_each_other() {
    let names: HashSet<&str> = headers().iter().map(|(n, _)| *n).collect();
    for (name, text) in headers() {
        for line in text.lines().filter(|l| l.starts_with("#include")) {
            let inc = line
                .split('"')
                .nth(1)
                .unwrap_or_else(|| panic!("{name}: {line}"));
            // The prelude is in every generated kernel; store_tma.cuh builds on its tiles.
            let prelude = inc == crate::PRELUDE_HEADER && name == "gemm/store_tma.cuh";
            assert!(
                names.contains(inc) || prelude,
                "{name} includes {inc}, not a registered header"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]

    #[test]
    fn swizzle_is_a_bijection(grid_m in 1u32..40, grid_n in 1u32..40, group_m in 1u32..12) {
        let mut seen = HashSet::new();
        for by in 0..grid_n {
            for bx in 0..grid_m {
                let (pm, pn) = swizzle_block(bx, by, grid_m, grid_n, group_m);
                prop_assert!(pm < grid_m && pn < grid_n);
                prop_assert!(seen.insert((pm, pn)));
            }
        }
    }

    #[test]
    fn cluster_swizzle_is_a_bijection_and_pairs_share_b(clusters in 1u32..20, grid_n in 1u32..40, group_m in 1u32..12) {
        let grid_x = 2 * clusters;
        let mut seen = HashSet::new();
        for by in 0..grid_n {
            for bx in (0..grid_x).step_by(2) {
                let (m0, n0) = cluster_swizzle_block(bx, by, grid_x, grid_n, group_m, 2);
                let (m1, n1) = cluster_swizzle_block(bx + 1, by, grid_x, grid_n, group_m, 2);
                // The two blocks of a cluster: one N tile (one B tile), neighbouring M tiles.
                prop_assert_eq!(n0, n1);
                prop_assert_eq!((m0 % 2, m1), (0, m0 + 1));
                for (pm, pn) in [(m0, n0), (m1, n1)] {
                    prop_assert!(pm < grid_x && pn < grid_n);
                    prop_assert!(seen.insert((pm, pn)));
                }
            }
        }
    }

    #[test]
    fn cluster_n_swizzle_is_a_bijection_and_pairs_share_a(grid_m in 1u32..40, clusters in 1u32..20, group_m in 1u32..12) {
        let grid_y = 2 * clusters;
        let mut seen = HashSet::new();
        for by in (0..grid_y).step_by(2) {
            for bx in 0..grid_m {
                let (m0, n0) = cluster_n_swizzle_block(bx, by, grid_m, grid_y, group_m, 2);
                let (m1, n1) = cluster_n_swizzle_block(bx, by + 1, grid_m, grid_y, group_m, 2);
                // The two blocks of a cluster: one M tile (one A tile), neighbouring N tiles.
                prop_assert_eq!(m0, m1);
                prop_assert_eq!((n0 % 2, n1), (0, n0 + 1));
                for (pm, pn) in [(m0, n0), (m1, n1)] {
                    prop_assert!(pm < grid_m && pn < grid_y);
                    prop_assert!(seen.insert((pm, pn)));
                }
            }
        }
    }

    #[test]
    fn cluster_n_swizzle_is_a_bijection_and_fours_share_a(grid_m in 1u32..40, clusters in 1u32..10, group_m in 1u32..12) {
        let grid_y = 4 * clusters;
        let mut seen = HashSet::new();
        for by in (0..grid_y).step_by(4) {
            for bx in 0..grid_m {
                let blocks: Vec<_> = (0..4)
                    .map(|r| cluster_n_swizzle_block(bx, by + r, grid_m, grid_y, group_m, 4))
                    .collect();
                // The four blocks of a cluster: one M tile (one A tile), four neighbouring N tiles.
                let (m0, n0) = blocks[0];
                prop_assert_eq!(n0 % 4, 0);
                for (r, &(pm, pn)) in blocks.iter().enumerate() {
                    prop_assert_eq!((pm, pn), (m0, n0 + r as u32));
                    prop_assert!(pm < grid_m && pn < grid_y);
                    prop_assert!(seen.insert((pm, pn)));
                }
            }
        }
    }

    #[test]
    fn split_k_parts_tile_the_range(lo in 0i64..100, span in 0i64..5000, tk in 1i64..130, split in 1i64..9) {
        let hi = lo + span;
        let mut next = lo;
        for z in 0..split {
            let (b, e) = split_k_range(lo, hi, tk, split, z);
            prop_assert!(b <= e);
            if b < e {
                prop_assert_eq!(b, next);
                prop_assert_eq!((b - lo) % tk, 0);
                next = e;
            }
        }
        prop_assert_eq!(next, hi);
    }
}
