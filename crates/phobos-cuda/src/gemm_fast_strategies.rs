//! The planner of each strategy: a main loop's template arguments at one point (tiles, warps,
//! stages, copy issuers) from the loop's request and the knobs, or why the strategy does not
//! apply.

use super::cfg::{self, dt_cpp, FfmaCfg, Sm80Cfg, Sm90Cfg, SM90_SMEM_LIMIT};
use super::tma::TMA_L2_PROMOTION_128B;
use super::{
    rej, BIssue, CopyIssuer, GemmPlan, GemmRequest, Knobs, NoMainLoop, OperandCopy, Pipeline,
    Reject, Release, SharedOperand, Strategy, TmaOperand, TmaSpec,
};
use phobos_ir::DType;

/// The main loop's k step: the loop's TK when it is a multiple of `unit`, else (only when the
/// loop covers the whole K, so that the main loop's tiles mask exactly like the loop's) the
/// smallest multiple of `unit` at least `pref`. The TILE_K knob is the loop's TK already.
fn main_tile_k(req: &GemmRequest, unit: u32, pref: u32) -> Option<u32> {
    let tk = req.tile_k;
    if tk > 0 && tk % unit == 0 {
        Some(tk)
    } else if req.k_whole {
        Some(pref.max(unit).div_ceil(unit) * unit)
    } else {
        None
    }
}

pub(super) fn plan_sm90(req: &GemmRequest, knobs: &Knobs) -> Result<GemmPlan, Reject> {
    let s = Strategy::Sm90;
    if !(req.target.wgmma() && req.target.tma()) {
        return Err(rej(s, NoMainLoop::NeedsSm90a));
    }
    let dt = match req.dtype {
        DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2 => dt_cpp(req.dtype, false),
        DType::F32 | DType::Tf32 if req.tf32 || req.dtype == DType::Tf32 => {
            dt_cpp(DType::Tf32, true)
        }
        _ => None,
    }
    .ok_or_else(|| rej(s, NoMainLoop::NoWgmma(req.dtype)))?;
    let es = req.dtype.size_bytes() as u32;
    if !req.plain_2d {
        return Err(rej(s, NoMainLoop::NotPlain2d));
    }
    if !req.k_whole {
        return Err(rej(s, NoMainLoop::KNotWhole));
    }
    if (req.align_a * es) % 16 != 0 || (req.align_b * es) % 16 != 0 {
        return Err(rej(s, NoMainLoop::TmaMisaligned));
    }
    let (consumers, producer_warp) = match req.threads % 128 {
        0 => (req.threads / 128, false),
        32 => (req.threads / 128, true),
        _ => return Err(rej(s, NoMainLoop::ThreadsNotWarpgroups)),
    };
    let kb = 128 / es;
    let bk = main_tile_k(req, kb, kb).ok_or_else(|| rej(s, NoMainLoop::TileKNotLines))?;
    let (bm, bn) = (req.tile_m, req.tile_n);
    // WARP_M x WARP_N is a warpgroup's tile when it splits the block into exactly the
    // consumer warpgroups; otherwise (e.g. the warp tiles of mma.sync or FFMA points of the same
    // space) it does not apply here and the default split holds: along M while warpgroups get
    // at least 64 rows, then along N.
    let knob_wg_n = knobs.warp_n.filter(|&wn| {
        let wg_n = if wn > 0 && bn % wn == 0 { bn / wn } else { 0 };
        let wg_m_ok = knobs
            .warp_m
            .is_none_or(|wm| wm > 0 && bm % wm == 0 && (bm / wm) * wg_n == consumers);
        wg_n > 0 && consumers % wg_n == 0 && wg_m_ok
    });
    let wg_n = match knob_wg_n {
        Some(wn) => bn / wn,
        None if bm / 64 < consumers && consumers > 0 => consumers / (bm / 64).max(1),
        None => 1,
    };
    if wg_n == 0 || consumers % wg_n != 0 {
        return Err(rej(s, NoMainLoop::WarpgroupsDoNotTile));
    }
    let mut c = Sm90Cfg {
        dt,
        elem_bytes: es,
        bm,
        bn,
        bk,
        wg_m: consumers / wg_n,
        wg_n,
        stages: 2,
        a_k: req.a_k_major,
        b_k: req.b_k_major,
        producer_warp,
        cluster: 1,
        release: Release::AfterNext,
        b_issue: BIssue::Shares,
        shared: SharedOperand::B,
    };
    c.stages = match knobs.stages {
        Some(st) => st,
        None => ((SM90_SMEM_LIMIT - 1024) / (c.stage_bytes() + 16)).clamp(2, 6),
    };
    c.validate().map_err(|e| rej(s, e))?;
    let operand = |op, k_major, rows| {
        TmaSpec::new(op, req.dtype, k_major, rows)
            .map(|t| t.with_l2_promotion(TMA_L2_PROMOTION_128B))
    };
    let tma = (
        operand(TmaOperand::A, c.a_k, if c.a_k { bm } else { bk }),
        operand(TmaOperand::B, c.b_k, if c.b_k { bn } else { bk }),
    );
    let (Some(ta), Some(tb)) = tma else {
        return Err(rej(s, NoMainLoop::NoTensorMapType));
    };
    Ok(GemmPlan {
        strategy: s,
        mainloop: c.cpp(),
        acc_ctype: "float",
        header: "gemm/sm90.cuh",
        threads: c.threads(),
        smem_bytes: c.smem_bytes(),
        tile_k: bk,
        group_m: 1,
        split_k: 1,
        persistent: false,
        tma: Some((ta, tb)),
        copies: [OperandCopy::Tma; 2],
        pipeline: c.pipeline(),
        sm90: Some(Box::new(c)),
    })
}

/// (WARPS_M, WARPS_N) for `warps` warps over a bm x bn tile: the knobs' warp tile if given,
/// else the most square warp tile whose sides are multiples of `quantum`.
fn warp_grid(bm: u32, bn: u32, warps: u32, knobs: &Knobs, quantum: u32) -> Option<(u32, u32)> {
    if let (Some(wm), Some(wn)) = (knobs.warp_m, knobs.warp_n) {
        return (bm % wm == 0 && bn % wn == 0 && (bm / wm) * (bn / wn) == warps)
            .then_some((bm / wm, bn / wn));
    }
    (1..=warps)
        .filter(|m| warps % m == 0)
        .map(|m| (m, warps / m))
        .filter(|&(m, n)| {
            bm % m == 0 && bn % n == 0 && (bm / m) % quantum == 0 && (bn / n) % quantum == 0
        })
        .min_by_key(|&(m, n)| (bm / m).abs_diff(bn / n))
}

pub(super) fn plan_sm80(req: &GemmRequest, knobs: &Knobs) -> Result<GemmPlan, Reject> {
    let s = Strategy::Sm80;
    if !req.target.mma_sync() {
        return Err(rej(s, NoMainLoop::NeedsSm80));
    }
    let tf32 = req.tf32 || req.dtype == DType::Tf32;
    let dt = match req.dtype {
        DType::F32 | DType::Tf32 if tf32 => dt_cpp(DType::Tf32, true),
        DType::F32 | DType::Tf32 => None,
        d => dt_cpp(d, false),
    }
    .ok_or_else(|| rej(s, NoMainLoop::NoMmaSync(req.dtype)))?;
    let es = req.dtype.size_bytes() as u32;
    let ks = cfg::mma_k(es);
    // 64-byte staged lines by default: BK = 32 f16, 16 tf32, 64 for 8-bit types.
    let bk = main_tile_k(req, ks, 2 * ks).ok_or_else(|| rej(s, NoMainLoop::TileKNotMmaK))?;
    if req.threads % 32 != 0 {
        return Err(rej(s, NoMainLoop::ThreadsNotWarps));
    }
    let (warps_m, warps_n) = warp_grid(req.tile_m, req.tile_n, req.threads / 32, knobs, 16)
        .ok_or_else(|| rej(s, NoMainLoop::NoMmaWarpGrid))?;
    // The widest copy the operand's alignment allows: cp.async of 16, 8 or 4 bytes, or, aligned
    // to under 4 bytes, register-staged element loads (`OperandCopy::RegisterStaged`), or with
    // VEC_COPY=1 and a 16-bit type shifted 16-byte loads (`OperandCopy::Shifted`).
    let width = |align: u32| (align * es).min(16);
    let mut c = Sm80Cfg {
        dt,
        elem_bytes: es,
        bm: req.tile_m,
        bn: req.tile_n,
        bk,
        warps_m,
        warps_n,
        stages: 2,
        a_k: req.a_k_major,
        b_k: req.b_k_major,
        va: width(req.align_a),
        vb: width(req.align_b),
        shift: knobs.shifted_copies(),
    };
    // Without STAGES: as many stages as the target's shared memory holds, an even count
    // (floor(limit / two stages) pairs), 2 to 4.
    let limit = req.target.max_smem_per_block();
    c.stages = match knobs.stages {
        Some(st) => st,
        None => (limit / c.smem_bytes().max(1) * 2).clamp(2, 4),
    };
    c.validate(req.target).map_err(|e| rej(s, e))?;
    Ok(GemmPlan {
        strategy: s,
        mainloop: c.cpp(),
        acc_ctype: if req.dtype == DType::I8 {
            "int"
        } else {
            "float"
        },
        header: "gemm/sm80.cuh",
        threads: c.threads(),
        smem_bytes: c.smem_bytes(),
        tile_k: bk,
        group_m: 1,
        split_k: 1,
        persistent: false,
        tma: None,
        sm90: None,
        copies: [c.copy(false), c.copy(true)],
        pipeline: Pipeline {
            stages: c.stages,
            tile_k: bk,
            issuer: CopyIssuer::AllThreads,
        },
    })
}

/// The FFMA loop's pipeline depth when the kernel does not declare STAGES.
const FFMA_STAGES: u32 = 2;

pub(super) fn plan_ffma(req: &GemmRequest, knobs: &Knobs) -> Result<GemmPlan, Reject> {
    let s = Strategy::Ffma;
    if req.dtype != DType::F32 || req.tf32 {
        return Err(rej(s, NoMainLoop::FfmaNotExactF32));
    }
    let bk = req.tile_k;
    if req.threads % 32 != 0 || req.threads == 0 {
        return Err(rej(s, NoMainLoop::ThreadsNotWarps));
    }
    let per_thread = req.tile_m * req.tile_n / req.threads;
    let (tm, tn) = match (knobs.tile_tm, knobs.tile_tn) {
        (Some(a), Some(b)) => (a, b),
        _ => match per_thread {
            128 => (8, 16),
            64 => (8, 8),
            32 => (8, 4),
            16 => (4, 4),
            _ => return Err(rej(s, NoMainLoop::ElementsPerThread(per_thread))),
        },
    };
    let warps = req.threads / 32;
    let (warps_m, warps_n) = match (knobs.warp_m, knobs.warp_n) {
        (Some(_), Some(_)) => warp_grid(req.tile_m, req.tile_n, warps, knobs, 4),
        _ => (1..=warps)
            .filter(|m| warps % m == 0)
            .map(|m| (m, warps / m))
            .filter(|&(m, n)| {
                let (wm, wn) = (req.tile_m / m, req.tile_n / n);
                req.tile_m % m == 0
                    && req.tile_n % n == 0
                    && wm % tm == 0
                    && wn % tn == 0
                    && (wm / tm) * (wn / tn) == 32
            })
            .min_by_key(|&(m, n)| (req.tile_m / m).abs_diff(req.tile_n / n)),
    }
    .ok_or_else(|| rej(s, NoMainLoop::NoFfmaWarpGrid))?;
    let width = |align: u32, contiguous: u32| {
        [4u32, 2, 1]
            .into_iter()
            .find(|v| align % v == 0 && contiguous % v == 0)
            .unwrap_or(1)
    };
    let c = FfmaCfg {
        bm: req.tile_m,
        bn: req.tile_n,
        bk,
        warps_m,
        warps_n,
        tm,
        tn,
        a_k: req.a_k_major,
        b_k: req.b_k_major,
        va: width(req.align_a, if req.a_k_major { bk } else { req.tile_m }),
        vb: width(req.align_b, if req.b_k_major { bk } else { req.tile_n }),
        stages: knobs.stages.unwrap_or(FFMA_STAGES),
    };
    c.validate(req.target).map_err(|e| rej(s, e))?;
    Ok(GemmPlan {
        strategy: s,
        mainloop: c.cpp(),
        acc_ctype: "float",
        header: "gemm/ffma.cuh",
        threads: c.threads(),
        smem_bytes: c.smem_bytes(),
        tile_k: bk,
        group_m: 1,
        split_k: 1,
        persistent: false,
        tma: None,
        sm90: None,
        copies: [c.va, c.vb].map(|v| OperandCopy::CpAsync { bytes: 4 * v }),
        pipeline: Pipeline {
            stages: c.stages,
            tile_k: bk,
            issuer: CopyIssuer::AllThreads,
        },
    })
}
