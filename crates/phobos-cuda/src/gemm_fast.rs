//! Fast GEMM main loops: which strategy of `cuda/gemm/` a recognized GEMM at one point uses,
//! with which template arguments, how much shared memory, and what the emitter writes to call
//! it. Three strategies, tried in this order where the element type allows:
//!
//! - [`Strategy::Sm90`]: wgmma from shared memory fed by TMA (f16, bf16, tf32, fp8; sm_90a).
//! - [`Strategy::Sm80`]: mma.sync + ldmatrix + cp.async pipeline (f16, bf16, tf32, fp8, i8).
//! - [`Strategy::Ffma`]: register-tiled exact fp32 on FFMA.
//!
//! Every configuration [`plan_for`] returns satisfies the headers' static_asserts (mirrored in
//! `gemm_fast_cfg`), so it compiles; `cuda/gemm/README.md` has the formulas and the contract.

#[path = "gemm_fast_cfg.rs"]
pub mod cfg;
#[path = "gemm_fast_knobs.rs"]
pub mod knobs;
#[path = "gemm_fast_reject.rs"]
mod reject;
#[path = "gemm_fast_strategies.rs"]
mod strategies;
#[path = "gemm_fast_tma.rs"]
pub mod tma;

use crate::Target;
use cfg::Sm90Cfg;
pub use cfg::{BIssue, CopyIssuer, NoClusterLoop, OperandCopy, Pipeline, Release, SharedOperand};
pub use knobs::Knobs;
use phobos_ir::DType;
pub use reject::NoMainLoop;
use strategies::{plan_ffma, plan_sm80, plan_sm90};
pub use tma::{TmaOperand, TmaSpec};

/// The headers of the strategies, as NVRTC named headers: (include name, text). The generated
/// source includes `gemm/sm90.cuh`, `gemm/sm80.cuh`, `gemm/ffma.cuh` and `gemm/sched.cuh` by
/// these names; they include each other by the same names.
pub fn headers() -> [(&'static str, &'static str); 8] {
    [
        ("gemm/ptx.cuh", include_str!("../cuda/gemm/ptx.cuh")),
        (
            "gemm/wgmma_ops.cuh",
            include_str!("../cuda/gemm/wgmma_ops.cuh"),
        ),
        ("gemm/sm90.cuh", include_str!("../cuda/gemm/sm90.cuh")),
        (
            "gemm/store_tma.cuh",
            include_str!("../cuda/gemm/store_tma.cuh"),
        ),
        ("gemm/sm80.cuh", include_str!("../cuda/gemm/sm80.cuh")),
        ("gemm/ffma.cuh", include_str!("../cuda/gemm/ffma.cuh")),
        ("gemm/sched.cuh", include_str!("../cuda/gemm/sched.cuh")),
        (
            "gemm/epilogue.cuh",
            include_str!("../cuda/gemm/epilogue.cuh"),
        ),
    ]
}

/// A main-loop strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    Sm90,
    Sm80,
    Ffma,
}

/// What the emitter knows about a recognized GEMM (from `GemmMatch` and the kernel).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmRequest {
    /// Element type of A and B.
    pub dtype: DType,
    /// The dot may run in TF32 (`GemmMatch::tf32`).
    pub tf32: bool,
    /// A's k axis is contiguous (`GemmOperand::k_inner`): row-major `[M, K]`.
    pub a_k_major: bool,
    /// B's k axis is contiguous: `[N, K]` as `dot_t` reads it, or a column-major `[K, N]`.
    pub b_k_major: bool,
    /// The loop's tile: TILE_M, TILE_N and its k step.
    pub tile_m: u32,
    pub tile_n: u32,
    pub tile_k: u32,
    /// Threads per block (`@launch`).
    pub threads: u32,
    /// Elements that each operand's base pointer and leading dimension are known to be
    /// multiples of (1 when nothing is known; from `@aligned` or a launch-time check).
    pub align_a: u32,
    pub align_b: u32,
    /// The loop is `range(0, K, TK)` with K the k extent of both operands: the main loop may
    /// then step k by its own tile (a multiple of 128 bytes on sm90) instead of TK.
    pub k_whole: bool,
    /// Both operands are whole 2-D tensors (no batch index): required for tensor maps.
    pub plain_2d: bool,
    /// The target: the sm90 loop needs [`Target::wgmma`] and [`Target::tma`], the sm80 loop
    /// [`Target::mma_sync`].
    pub target: Target,
}

/// A chosen main loop and what calling it takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemmPlan {
    pub strategy: Strategy,
    /// The C++ main-loop type; its accumulator layout is `<mainloop>::Layout`.
    pub mainloop: String,
    /// The accumulator tile's register type: `float`, or `int` for i8.
    pub acc_ctype: &'static str,
    /// Header to include (NVRTC name); see [`headers`] for the set to register.
    pub header: &'static str,
    /// Threads the block must have (equal to the request's).
    pub threads: u32,
    /// Dynamic shared memory the main loop needs (the host raises the limit above 48 KiB).
    pub smem_bytes: u32,
    /// The main loop's own k step (the loop's TK unless `k_whole` let it choose).
    pub tile_k: u32,
    pub group_m: u32,
    pub split_k: u32,
    /// sm90 with a producer warp: the block loops over tiles and the call is `run_persistent`
    /// (set by the kernel's plan, which decides whether the whole kernel can loop).
    pub persistent: bool,
    /// sm90: the tensor maps of A and B the host encodes per launch.
    pub tma: Option<(TmaSpec, TmaSpec)>,
    /// sm90: the main loop's configuration (what `mainloop` spells; its `cluster` is set by
    /// [`GemmPlan::apply_cluster`]).
    pub sm90: Option<Box<Sm90Cfg>>,
    /// How A and B reach shared memory, and why at that width.
    pub copies: [OperandCopy; 2],
    /// The shared-memory pipeline: stages, k step, and who issues the copies.
    pub pipeline: Pipeline,
}

/// The C++ expressions a main-loop call is made of.
#[derive(Clone, Copy, Debug)]
pub struct CallArgs<'a> {
    /// The accumulator tile (`ph::Tile<T, L>`).
    pub acc: &'a str,
    /// `ph::Operand` values of A and B.
    pub a: &'a str,
    pub b: &'a str,
    /// The loop's bounds; with SPLIT_K, the block's part from [`GemmPlan::split_k_stmt`].
    pub k0: &'a str,
    pub k1: &'a str,
    /// `unsigned char*` to the main loop's dynamic shared memory.
    pub smem: &'a str,
    /// sm90: the kernel's two `TmaDesc` parameter names (A, B).
    pub tma: Option<(&'a str, &'a str)>,
}

/// Why no fast main loop applies; the emitter falls back to its generic strategy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Reject {
    #[error("{0:?}: {1}")]
    Strategy(Strategy, NoMainLoop),
    #[error("no fast main loop: {}", .0.iter().map(|r| r.to_string()).collect::<Vec<_>>().join("; "))]
    None(Vec<Reject>),
}

fn rej(s: Strategy, why: NoMainLoop) -> Reject {
    Reject::Strategy(s, why)
}

/// The fastest strategy that applies, trying them in the order of the module doc.
pub fn select(req: &GemmRequest, knobs: &Knobs) -> Result<GemmPlan, Reject> {
    let mut why = Vec::new();
    for s in [Strategy::Sm90, Strategy::Sm80, Strategy::Ffma] {
        match plan_for(s, req, knobs) {
            Ok(p) => return Ok(p),
            Err(e) => why.push(e),
        }
    }
    Err(Reject::None(why))
}

/// The plan of one strategy, or why it does not apply.
pub fn plan_for(s: Strategy, req: &GemmRequest, knobs: &Knobs) -> Result<GemmPlan, Reject> {
    if let Some((knob, tile)) = [(knobs.tile_m, req.tile_m), (knobs.tile_n, req.tile_n)]
        .into_iter()
        .find_map(|(k, t)| k.filter(|&k| k != t).map(|k| (k, t)))
    {
        return Err(rej(s, NoMainLoop::TileDiffersFromKnob { tile, knob }));
    }
    let split_k = knobs.split_k();
    if split_k > 1 && req.dtype == DType::I8 {
        return Err(rej(s, NoMainLoop::SplitKOfI8));
    }
    match s {
        Strategy::Sm90 => plan_sm90(req, knobs),
        Strategy::Sm80 => plan_sm80(req, knobs),
        Strategy::Ffma => plan_ffma(req, knobs),
    }
    .map(|mut p| {
        p.group_m = knobs.group_m();
        p.split_k = split_k;
        p
    })
}

impl GemmPlan {
    /// The accumulator layout type (for `Layout::External`).
    pub fn layout(&self) -> String {
        format!("typename {}::Layout", self.mainloop)
    }

    /// Runs the main loop in thread block clusters of `n` blocks along M that share B (the
    /// kernel's plan decides whether the kernel around it allows that): the main loop's
    /// template and B's tensor-map box change; the emitter adds the cluster dimensions and the
    /// cluster-aware block order. `issue`: which blocks copy B ([`BIssue::Rank0`]: B's box
    /// stays whole). `shared`: [`SharedOperand::A`] shares A instead (neighbouring N tiles of
    /// one M tile, the persistent schedule only): A's box is split, B's stays whole.
    pub fn apply_cluster(
        &mut self,
        n: u32,
        issue: BIssue,
        shared: SharedOperand,
    ) -> Result<(), NoClusterLoop> {
        let Some(c) = self.sm90.as_deref_mut() else {
            return Err(NoClusterLoop::NotWgmma);
        };
        if let Some(why) = c.cluster_blocker(n, shared) {
            return Err(why);
        }
        c.cluster = n;
        c.b_issue = issue;
        c.shared = shared;
        self.mainloop = c.cpp();
        if shared == SharedOperand::A {
            if let Some((a, _)) = self.tma.as_mut() {
                if a.k_major {
                    a.box_dim[1] = c.bm / n;
                } else if c.a_split_rows() {
                    a.box_dim[1] = c.bk / n;
                }
            }
            return Ok(());
        }
        if let Some((_, b)) = self.tma.as_mut().filter(|_| issue == BIssue::Shares) {
            if b.k_major {
                b.box_dim[1] = c.bn / n;
            } else if c.b_split_rows() {
                b.box_dim[1] = c.bk / n;
            }
        }
        Ok(())
    }

    /// Hands each stage's slot back as soon as its own MMAs complete (SCHEDULE=3; the kernel's
    /// plan applies it to the persistent schedule only): the main loop's template changes.
    pub fn apply_release_own(&mut self) -> Result<(), &'static str> {
        let Some(c) = self.sm90.as_deref_mut() else {
            return Err("it needs the wgmma main loop");
        };
        if !self.persistent {
            return Err("it needs the persistent schedule");
        }
        c.release = Release::OwnCompletion;
        self.mainloop = c.cpp();
        Ok(())
    }

    /// The statement that replaces the loop (see [`CallArgs`]).
    pub fn call(&self, c: &CallArgs<'_>) -> String {
        let CallArgs {
            acc,
            a,
            b,
            k0,
            k1,
            smem,
            ..
        } = c;
        match (self.strategy, c.tma) {
            (Strategy::Sm90, Some((ta, tb))) if self.persistent => format!(
                "{}::run_persistent({acc}, {a}, {b}, &{ta}, &{tb}, {k0}, {k1}, {smem}, {PIPE});",
                self.mainloop
            ),
            (Strategy::Sm90, Some((ta, tb))) => format!(
                "{}::run({acc}, {a}, {b}, &{ta}, &{tb}, {k0}, {k1}, {smem});",
                self.mainloop
            ),
            _ => format!(
                "{}::run({acc}, {a}, {b}, {k0}, {k1}, {smem});",
                self.mainloop
            ),
        }
    }

    /// Declarations of the block's (pm, pn) tile indices under GROUP_M (from blockIdx.x/y as
    /// M-tile/N-tile indices); `None` when GROUP_M is 1.
    pub fn swizzle_stmt(&self, pm: &str, pn: &str) -> Option<String> {
        (self.group_m > 1).then(|| {
            format!(
                "int {pm}, {pn}; ph::gemm::swizzle_block(blockIdx.x, blockIdx.y, gridDim.x, gridDim.y, {}, &{pm}, &{pn});",
                self.group_m
            )
        })
    }

    /// Declarations of this block's k range under SPLIT_K (blockIdx.z of gridDim.z =
    /// SPLIT_K parts); `None` when SPLIT_K is 1.
    pub fn split_k_stmt(&self, k0: &str, k1: &str, kb: &str, ke: &str) -> Option<String> {
        (self.split_k > 1).then(|| {
            format!(
                "int {kb}, {ke}; ph::gemm::split_k_range({k0}, {k1}, {}, {}, blockIdx.z, &{kb}, &{ke});",
                self.tile_k, self.split_k
            )
        })
    }
}

/// The persistent schedule's pipeline counter, declared before the kernel's tile loop.
pub const PIPE: &str = "ph_pipe";

/// Mirror of `ph::gemm::swizzle_block` (grid-level remap; a bijection of the grid).
pub fn swizzle_block(bx: u32, by: u32, grid_m: u32, grid_n: u32, group_m: u32) -> (u32, u32) {
    if group_m <= 1 || grid_m == 0 || grid_n == 0 {
        return (bx, by);
    }
    let pid = by as u64 * grid_m as u64 + bx as u64;
    let per_group = group_m as u64 * grid_n as u64;
    let first_m = (pid / per_group) as u32 * group_m;
    let rows = (grid_m - first_m).min(group_m);
    let in_group = (pid % per_group) as u32;
    (first_m + in_group % rows, in_group / rows)
}

/// Mirror of `ph::gemm::cluster_swizzle_block`: whole clusters of `cluster` blocks along x
/// swizzled as units; a cluster's blocks on consecutive M tiles of one N tile. `grid_x` is a
/// multiple of `cluster`.
pub fn cluster_swizzle_block(
    bx: u32,
    by: u32,
    grid_x: u32,
    grid_n: u32,
    group_m: u32,
    cluster: u32,
) -> (u32, u32) {
    let g = (group_m / cluster).max(1);
    let (cm, cn) = swizzle_block(bx / cluster, by, grid_x / cluster, grid_n, g);
    (cm * cluster + bx % cluster, cn)
}

/// Mirror of `ph::gemm::cluster_n_swizzle_block`: whole clusters of `cluster` blocks along y
/// (`by` and `grid_y` in blocks, `grid_y` a multiple of `cluster`) swizzled as units; a
/// cluster's blocks on consecutive N tiles of one M tile.
pub fn cluster_n_swizzle_block(
    bx: u32,
    by: u32,
    grid_m: u32,
    grid_y: u32,
    group_m: u32,
    cluster: u32,
) -> (u32, u32) {
    let (m, cn) = swizzle_block(bx, by / cluster, grid_m, grid_y / cluster, group_m);
    (m, cn * cluster + by % cluster)
}

/// Mirror of `ph::gemm::split_k_range`: part `z` of `split_k` of [k_lo, k_hi) in whole tiles.
pub fn split_k_range(k_lo: i64, k_hi: i64, tile_k: i64, split_k: i64, z: i64) -> (i64, i64) {
    if split_k <= 1 {
        return (k_lo, k_hi);
    }
    let span = (k_hi - k_lo).max(0);
    let tiles = (span + tile_k - 1) / tile_k;
    let per = (tiles + split_k - 1) / split_k;
    let b = k_lo + z * per * tile_k;
    (b.min(k_hi), (b + per * tile_k).min(k_hi))
}

#[cfg(test)]
#[path = "gemm_fast_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "gemm_fast_config_tests.rs"]
mod config_tests;

#[cfg(test)]
#[path = "gemm_fast_target_tests.rs"]
mod target_tests;
