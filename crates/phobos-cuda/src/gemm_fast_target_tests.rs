//! Stage sizing and shared-memory limits by [`Target`]: the mma.sync and FFMA loops run on
//! sm_80 and later, whose blocks hold less shared memory than sm_90's 227 KiB.

use super::*;

fn req(dtype: DType, tile: (u32, u32, u32), threads: u32, target: Target) -> GemmRequest {
    GemmRequest {
        dtype,
        tf32: false,
        a_k_major: true,
        b_k_major: false,
        tile_m: tile.0,
        tile_n: tile.1,
        tile_k: tile.2,
        threads,
        align_a: 16,
        align_b: 16,
        k_whole: true,
        plain_2d: true,
        target,
    }
}

#[test]
fn sm80_stages_fit_the_targets_shared_memory() {
    // 128x256x64 f16: 48 KiB a stage. sm_90a holds 4 (192 KiB of 227); sm_80 (163 KiB) and
    // sm_86 (99 KiB) only 2, where sizing by sm_90's limit gave 4 and a block that cannot launch.
    let tile = (128, 256, 64);
    let stage = (128 + 256) * 64 * 2;
    for (target, stages) in [
        (Target::sm90a(), 4),
        (Target::sm80(), 2),
        (Target::from_cc(86), 2),
    ] {
        let r = req(DType::F16, tile, 256, target);
        let p = plan_for(Strategy::Sm80, &r, &Knobs::default()).unwrap();
        assert_eq!(p.pipeline.stages, stages, "{target}");
        assert_eq!(p.smem_bytes, stages * stage, "{target}");
        assert!(p.smem_bytes <= target.max_smem_per_block(), "{target}");
    }
    // On sm_80, `select` falls to the mma.sync loop (no wgmma) with the same 2 stages.
    let p = select(
        &req(DType::F16, tile, 256, Target::sm80()),
        &Knobs::default(),
    )
    .unwrap();
    assert_eq!((p.strategy, p.pipeline.stages), (Strategy::Sm80, 2));
    // A small tile keeps the deepest ring the loop allows on every target.
    for target in [Target::sm90a(), Target::sm80(), Target::from_cc(86)] {
        let r = req(DType::F16, (64, 64, 32), 128, target);
        let p = plan_for(Strategy::Sm80, &r, &Knobs::default()).unwrap();
        assert_eq!(p.pipeline.stages, 4, "{target}");
    }
}

#[test]
fn pinned_stages_over_the_targets_limit_are_refused_with_the_limit() {
    let knobs = Knobs {
        stages: Some(4),
        ..Knobs::default()
    };
    let tile = (128, 256, 64);
    plan_for(
        Strategy::Sm80,
        &req(DType::F16, tile, 256, Target::sm90a()),
        &knobs,
    )
    .unwrap();
    let e = plan_for(
        Strategy::Sm80,
        &req(DType::F16, tile, 256, Target::sm80()),
        &knobs,
    )
    .unwrap_err();
    assert_eq!(
        e,
        Reject::Strategy(
            Strategy::Sm80,
            NoMainLoop::SmemOver {
                bytes: 196608,
                target: Target::sm80()
            }
        )
    );
    let msg = e.to_string();
    assert!(msg.contains("sm_80 allows 166912"), "{msg}");
    assert!(msg.contains("196608 bytes"), "{msg}");

    // The FFMA loop: 4 stages of 128x256x16 f32 are 96 KiB, over sm_75's 64 KiB.
    let r = |target| {
        let mut r = req(DType::F32, (128, 256, 16), 256, target);
        r.a_k_major = false;
        r
    };
    plan_for(Strategy::Ffma, &r(Target::sm90a()), &knobs).unwrap();
    let e = plan_for(Strategy::Ffma, &r(Target::from_cc(75)), &knobs).unwrap_err();
    assert!(
        matches!(
            e,
            Reject::Strategy(Strategy::Ffma, NoMainLoop::SmemOver { target, .. })
                if target == Target::from_cc(75)
        ),
        "{e}"
    );
    let msg = e.to_string();
    assert!(msg.contains("shared memory over 64 KiB"), "{msg}");
}
