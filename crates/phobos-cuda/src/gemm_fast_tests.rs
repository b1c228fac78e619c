//! Which main loop a GEMM request gets (wgmma, mma.sync, FFMA), its copies, warpgroups and
//! clusters, and what the knobs steer; the configurations themselves: gemm_fast_config_tests.rs.

use super::*;

fn req(dtype: DType, a_k: bool, b_k: bool, tile: (u32, u32, u32), threads: u32) -> GemmRequest {
    GemmRequest {
        dtype,
        tf32: false,
        a_k_major: a_k,
        b_k_major: b_k,
        tile_m: tile.0,
        tile_n: tile.1,
        tile_k: tile.2,
        threads,
        align_a: 16,
        align_b: 16,
        k_whole: true,
        plain_2d: true,
        target: crate::Target::sm90a(),
    }
}

#[test]
fn f16_row_major_picks_wgmma_with_producer_warp() {
    let p = select(
        &req(DType::F16, true, false, (128, 256, 64), 288),
        &Knobs::default(),
    )
    .unwrap();
    assert_eq!(p.strategy, Strategy::Sm90);
    assert_eq!(
        p.mainloop,
        "ph::gemm::sm90::MainLoop<ph::gemm::F16, 128, 256, 64, 2, 1, 4, true, false, true>"
    );
    // 4 stages of (128 + 256) x 64 halves, 8 barriers, 1024 bytes of alignment slack.
    assert_eq!(p.smem_bytes, 4 * 49152 + 64 + 1024);
    let (a, b) = p.tma.clone().unwrap();
    assert_eq!((a.box_dim, a.k_major), ([64, 128], true));
    assert_eq!((b.box_dim, b.k_major), ([64, 64], false));
    assert_eq!(
        p.call(&CallArgs { acc: "acc", a: "A", b: "B", k0: "0", k1: "K", smem: "smem", tma: Some(("tmA", "tmB")) }),
        "ph::gemm::sm90::MainLoop<ph::gemm::F16, 128, 256, 64, 2, 1, 4, true, false, true>::run(acc, A, B, &tmA, &tmB, 0, K, smem);"
    );
}

#[test]
fn thread_count_picks_the_copy_issuer_and_warpgroups() {
    let p = select(
        &req(DType::BF16, true, true, (128, 256, 64), 256),
        &Knobs::default(),
    )
    .unwrap();
    assert!(
        p.mainloop.ends_with("2, 1, 4, true, true, false>"),
        "{}",
        p.mainloop
    );
    // 64 rows per warpgroup with 128 rows and 4 warpgroups: split N.
    let p = select(
        &req(DType::F16, true, false, (128, 256, 64), 512),
        &Knobs::default(),
    )
    .unwrap();
    assert!(p.mainloop.contains(", 64, 2, 2, "), "{}", p.mainloop);
    // 96 threads: no warpgroup; sm80 takes 3 warps only if a warp grid fits (it does not).
    assert!(plan_for(
        Strategy::Sm90,
        &req(DType::F16, true, false, (128, 128, 64), 96),
        &Knobs::default()
    )
    .is_err());
}

#[test]
fn small_tile_k_is_widened_only_when_the_loop_covers_k() {
    let mut r = req(DType::F16, true, false, (128, 128, 32), 256);
    let p = select(&r, &Knobs::default()).unwrap();
    assert_eq!((p.strategy, p.tile_k), (Strategy::Sm90, 64));
    r.k_whole = false;
    let p = select(&r, &Knobs::default()).unwrap();
    assert_eq!((p.strategy, p.tile_k), (Strategy::Sm80, 32));
}

#[test]
fn tf32_and_fp8_need_k_major_operands() {
    let mut r = req(DType::F32, true, false, (128, 256, 32), 288);
    r.tf32 = true;
    assert!(matches!(
        select(&r, &Knobs::default()),
        Err(Reject::None(_))
    ));
    r.b_k_major = true;
    let p = select(&r, &Knobs::default()).unwrap();
    assert!(p
        .mainloop
        .starts_with("ph::gemm::sm90::MainLoop<ph::gemm::TF32, 128, 256, 32,"));
    let p = select(
        &req(DType::F8E4M3, true, true, (128, 256, 128), 288),
        &Knobs::default(),
    )
    .unwrap();
    assert_eq!(p.smem_bytes, 4 * 49152 + 64 + 1024);
    assert_eq!(p.tma.unwrap().0.box_dim, [128, 128]);
    assert!(select(
        &req(DType::F8E4M3, true, false, (128, 256, 128), 288),
        &Knobs::default()
    )
    .is_err());
}

#[test]
fn exact_f32_goes_to_ffma() {
    let mut r = req(DType::F32, true, false, (128, 128, 8), 256);
    r.align_a = 4;
    r.align_b = 4;
    let p = select(&r, &Knobs::default()).unwrap();
    assert_eq!(p.strategy, Strategy::Ffma);
    assert_eq!(
        p.mainloop,
        "ph::gemm::ffma::MainLoop<128, 128, 8, 2, 4, 8, 8, true, false, 4, 4, 2>"
    );
    assert_eq!(p.smem_bytes, 2 * (8 * 132 * 2) * 4);
    r.align_b = 1;
    let p = select(&r, &Knobs::default()).unwrap();
    assert!(p.mainloop.ends_with("4, 1, 2>"));
    // STAGES sizes the cp.async ring; past 4 the loop refuses it.
    let three = Knobs {
        stages: Some(3),
        ..Knobs::default()
    };
    let p = select(&r, &three).unwrap();
    assert!(p.mainloop.ends_with("4, 1, 3>"));
    assert_eq!(p.smem_bytes, 3 * (8 * 132 * 2) * 4);
    let five = Knobs {
        stages: Some(5),
        ..Knobs::default()
    };
    assert!(select(&r, &five).is_err());
}

#[test]
fn misaligned_operands_lose_the_copy_engines_but_keep_tensor_cores() {
    let mut r = req(DType::F16, true, false, (128, 128, 32), 256);
    let p = select(&r, &Knobs::default()).unwrap();
    assert_eq!(p.copies, [OperandCopy::Tma; 2]);
    r.align_b = 2; // 4 bytes: no TMA, cp.async of 4 bytes
    let p = select(&r, &Knobs::default()).unwrap();
    assert_eq!(p.strategy, Strategy::Sm80);
    assert!(p.mainloop.ends_with("16, 4>"), "{}", p.mainloop);
    assert_eq!(
        p.copies,
        [
            OperandCopy::CpAsync { bytes: 16 },
            OperandCopy::CpAsync { bytes: 4 }
        ]
    );
    // An odd leading dimension (f16 K or N odd): still mma.sync, B register-staged.
    r.align_b = 1;
    let p = select(&r, &Knobs::default()).unwrap();
    assert_eq!(p.strategy, Strategy::Sm80);
    assert!(p.mainloop.ends_with("16, 2>"), "{}", p.mainloop);
    assert_eq!(p.copies[1], OperandCopy::RegisterStaged { align_bytes: 2 });
    // Both operands, both orders, and the 8-bit types aligned to 1 or 2 bytes.
    for (a_k, b_k) in [(true, false), (false, false), (true, true), (false, true)] {
        let mut r = req(DType::BF16, a_k, b_k, (64, 64, 32), 128);
        (r.align_a, r.align_b) = (1, 1);
        let p = select(&r, &Knobs::default()).unwrap();
        assert_eq!(p.strategy, Strategy::Sm80, "{a_k} {b_k}");
        assert_eq!(
            p.copies,
            [OperandCopy::RegisterStaged { align_bytes: 2 }; 2]
        );
    }
    let mut r = req(DType::I8, true, true, (128, 128, 64), 256);
    (r.align_a, r.align_b) = (1, 2);
    let p = select(&r, &Knobs::default()).unwrap();
    assert_eq!(
        p.copies,
        [
            OperandCopy::RegisterStaged { align_bytes: 1 },
            OperandCopy::RegisterStaged { align_bytes: 2 }
        ]
    );
    assert!(p.mainloop.ends_with("1, 2>"), "{}", p.mainloop);
}

#[test]
fn vec_copy_shifts_two_byte_aligned_16_bit_operands_only() {
    let shifted = Knobs {
        vec_copy: Some(1),
        ..Knobs::default()
    };
    // 1000x777x333's operands: A's rows (K odd) and B's k rows (N odd) aligned to 2 bytes.
    for dt in [DType::F16, DType::BF16] {
        let mut r = req(dt, true, false, (64, 64, 32), 256);
        (r.align_a, r.align_b) = (1, 1);
        let old = select(&r, &Knobs::default()).unwrap();
        assert_eq!(
            old.copies,
            [OperandCopy::RegisterStaged { align_bytes: 2 }; 2]
        );
        assert!(
            old.mainloop.ends_with("true, false, 2, 2>"),
            "{}",
            old.mainloop
        );
        let p = select(&r, &shifted).unwrap();
        assert_eq!(p.strategy, Strategy::Sm80);
        assert_eq!(p.copies, [OperandCopy::Shifted; 2]);
        assert!(
            p.mainloop.ends_with("true, false, 2, 2, 1>"),
            "{}",
            p.mainloop
        );
        // Only the copies change: the tile, stages and shared memory are the same.
        assert_eq!(
            p.mainloop.trim_end_matches(", 1>"),
            old.mainloop.trim_end_matches('>')
        );
        assert_eq!((p.smem_bytes, p.pipeline), (old.smem_bytes, old.pipeline));
        // One operand aligned: only the other is shifted.
        r.align_a = 8;
        let p = select(&r, &shifted).unwrap();
        assert_eq!(
            p.copies,
            [OperandCopy::CpAsync { bytes: 16 }, OperandCopy::Shifted]
        );
        assert!(p.mainloop.ends_with("16, 2, 1>"), "{}", p.mainloop);
    }
    // Aligned operands, 4-byte cp.async and 8-bit types aligned to 1 or 2 bytes keep their
    // copies, and the main loop's text does not mention the knob.
    let mut cases = vec![
        (req(DType::F16, true, false, (128, 128, 32), 256), 8, 8),
        (req(DType::F16, true, false, (128, 128, 32), 256), 2, 2),
        (req(DType::I8, true, true, (128, 128, 64), 256), 1, 2),
    ];
    for (r, a, b) in &mut cases {
        (r.align_a, r.align_b) = (*a, *b);
        let old = select(r, &Knobs::default()).unwrap();
        let p = select(r, &shifted).unwrap();
        assert_eq!(p, old, "{a} {b}");
        assert!(!p.copies.contains(&OperandCopy::Shifted));
    }
    assert!(OperandCopy::Shifted
        .to_string()
        .contains("shifted 16-byte loads"));
}

#[test]
fn knobs_steer_and_cross_check() {
    let r = req(DType::F16, true, false, (128, 128, 32), 256);
    let k = Knobs {
        stages: Some(3),
        group_m: Some(8),
        split_k: Some(4),
        warp_m: Some(64),
        warp_n: Some(32),
        ..Knobs::default()
    };
    let p = plan_for(Strategy::Sm80, &r, &k).unwrap();
    assert_eq!(
        p.mainloop,
        "ph::gemm::sm80::MainLoop<ph::gemm::F16, 128, 128, 32, 2, 4, 3, true, false, 16, 16>"
    );
    assert_eq!(
        p.swizzle_stmt("pm", "pn").unwrap(),
        "int pm, pn; ph::gemm::swizzle_block(blockIdx.x, blockIdx.y, gridDim.x, gridDim.y, 8, &pm, &pn);"
    );
    assert_eq!(
        p.split_k_stmt("0", "K", "kb", "ke").unwrap(),
        "int kb, ke; ph::gemm::split_k_range(0, K, 32, 4, blockIdx.z, &kb, &ke);"
    );
    let bad = Knobs {
        tile_m: Some(64),
        ..Knobs::default()
    };
    assert!(plan_for(Strategy::Sm80, &r, &bad).is_err());
    let k = Knobs {
        split_k: Some(2),
        ..Knobs::default()
    };
    assert!(plan_for(
        Strategy::Sm80,
        &req(DType::I8, true, true, (128, 128, 64), 256),
        &k
    )
    .is_err());
}

#[test]
fn sm90_reads_warp_knobs_only_as_a_split_into_its_warpgroups() {
    let r = req(DType::F16, true, false, (128, 256, 64), 256);
    // mma.sync warp tiles of the same space (8 warps of 64 x 32): not a warpgroup split.
    let warps = Knobs {
        warp_m: Some(64),
        warp_n: Some(32),
        ..Knobs::default()
    };
    let p = plan_for(Strategy::Sm90, &r, &warps).unwrap();
    assert!(
        p.mainloop.contains("128, 256, 64, 2, 1, "),
        "{}",
        p.mainloop
    );
    // 128 x 128 per warpgroup: two warpgroups side by side along N.
    let split_n = Knobs {
        warp_m: Some(128),
        warp_n: Some(128),
        ..Knobs::default()
    };
    let p = plan_for(Strategy::Sm90, &r, &split_n).unwrap();
    assert!(
        p.mainloop.contains("128, 256, 64, 1, 2, "),
        "{}",
        p.mainloop
    );
    // WARP_N alone splitting N in two.
    let n_only = Knobs {
        warp_n: Some(128),
        ..Knobs::default()
    };
    let p = plan_for(Strategy::Sm90, &r, &n_only).unwrap();
    assert!(
        p.mainloop.contains("128, 256, 64, 1, 2, "),
        "{}",
        p.mainloop
    );
}
