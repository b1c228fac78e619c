//! The template arguments of each main loop in `cuda/gemm/`, their constraints (the headers'
//! static_asserts, checked here first so a chosen configuration always compiles), shared-memory
//! formulas, and Rust mirrors of their accumulator layouts.

use phobos_ir::DType;

use super::NoMainLoop;
use crate::Target;

/// Largest dynamic shared memory a block may opt into on sm_90 (227 KiB): the wgmma loop's
/// stage count is sized against it; the mma.sync and FFMA loops, which also run on other
/// targets, take their target's [`crate::Target::max_smem_per_block`].
pub const SM90_SMEM_LIMIT: u32 = crate::Target::sm90a().max_smem_per_block();

/// The deepest ring of the wgmma loop (`gemm/sm90.cuh`'s static_assert): 13 stages of 64x64x64
/// f16 tiles are what cuBLAS runs small problems with; shared memory bounds it before this does.
pub const SM90_MAX_STAGES: u32 = 16;

/// `Ok` when `bytes` of shared memory fit one block on `target`.
fn smem_fits(bytes: u32, target: Target) -> Result<(), NoMainLoop> {
    if bytes <= target.max_smem_per_block() {
        return Ok(());
    }
    Err(NoMainLoop::SmemOver { bytes, target })
}

/// The `ph::gemm::Dt` enumerator of an operand type as a main loop reads it.
pub fn dt_cpp(dtype: DType, tf32: bool) -> Option<&'static str> {
    Some(match dtype {
        DType::F16 => "ph::gemm::F16",
        DType::BF16 => "ph::gemm::BF16",
        DType::F32 if tf32 => "ph::gemm::TF32",
        DType::Tf32 => "ph::gemm::TF32",
        DType::F8E4M3 => "ph::gemm::F8E4M3",
        DType::F8E5M2 => "ph::gemm::F8E5M2",
        DType::I8 => "ph::gemm::I8",
        _ => return None,
    })
}

/// The k extent of one MMA instruction step for the element size: always 32 bytes of k.
pub fn mma_k(elem_bytes: u32) -> u32 {
    32 / elem_bytes
}

fn b(x: bool) -> &'static str {
    if x {
        "true"
    } else {
        "false"
    }
}

/// `ph::gemm::sm90::MainLoop<DT, BM, BN, BK, WG_M, WG_N, STAGES, A_KMAJOR, B_KMAJOR, PRODUCER_WARP>`,
/// and `CLUSTER` after them when it is above 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sm90Cfg {
    pub dt: &'static str,
    pub elem_bytes: u32,
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub wg_m: u32,
    pub wg_n: u32,
    pub stages: u32,
    pub a_k: bool,
    pub b_k: bool,
    pub producer_warp: bool,
    /// Blocks of a thread block cluster sharing B (1: no cluster).
    pub cluster: u32,
    /// When a consumer warp hands a stage's slot back (the persistent schedule).
    pub release: Release,
    /// Under a cluster, which blocks copy the shared B (`MainLoop::B_ONE_ISSUER`).
    pub b_issue: BIssue,
    /// Under a cluster, the operand its blocks share (`MainLoop::SHARE_A`).
    pub shared: SharedOperand,
}

/// The operand the blocks of a cluster share through multicast copies (CLUSTER=2 and 3: B;
/// CLUSTER=4: A).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SharedOperand {
    /// The blocks run neighbouring M tiles of one N tile and share its B tile (without a
    /// cluster, nothing is shared).
    #[default]
    B,
    /// The blocks run neighbouring N tiles of one M tile and share its A tile, each copying
    /// 1/CLUSTER of every A stage; the persistent schedule only (CLUSTER=4).
    A,
}

/// Why the main loop cannot run in a cluster whose blocks share an operand tile
/// ([`crate::gemm_fast::GemmPlan::apply_cluster`]); all but [`NoClusterLoop::NotWgmma`] are the
/// header's static_asserts ([`Sm90Cfg::cluster_blocker`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoClusterLoop {
    /// The GEMM's plan is not the wgmma main loop (it has no [`Sm90Cfg`]).
    NotWgmma,
    /// Clusters are of two blocks, or of four sharing A.
    Size,
    /// The shared operand is K-major and each block's share of its tile's rows is not whole
    /// 8-row swizzle atoms.
    RowsNotWholeAtoms(SharedOperand),
    /// The shared operand is M- or N-major and neither its 128-byte slabs nor its k rows
    /// split evenly among the blocks.
    SlabsUneven(SharedOperand),
}

impl std::fmt::Display for NoClusterLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |s: &SharedOperand| match s {
            SharedOperand::A => "A",
            SharedOperand::B => "B",
        };
        match self {
            NoClusterLoop::NotWgmma => write!(f, "it needs the wgmma main loop"),
            NoClusterLoop::Size => write!(f, "clusters are of two blocks, or of four sharing A"),
            NoClusterLoop::RowsNotWholeAtoms(s) => write!(
                f,
                "the {} tile's rows do not split into whole swizzle atoms",
                name(s)
            ),
            NoClusterLoop::SlabsUneven(s) => write!(
                f,
                "the {} tile's 128-byte slabs and their k rows do not split evenly",
                name(s)
            ),
        }
    }
}

/// Which blocks of a cluster copy its shared B tile (CLUSTER=2 or 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BIssue {
    /// Every block copies its share (1/CLUSTER of each stage's B) multicast to all (CLUSTER=2);
    /// without a cluster, the block copies its whole B.
    #[default]
    Shares,
    /// The cluster's rank 0 copies each stage's whole B box multicast to all, the others none
    /// of it (CLUSTER=3): whether a multicast box is served from L2 once whatever its size.
    Rank0,
}

/// When the consumers of the persistent schedule hand a stage's slot back to the producer
/// (`MainLoop::RELEASE_OWN`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Release {
    /// Stage t - 1's slot after stage t's MMAs are issued (`wgmma.wait_group 1`): the MMAs
    /// stay back to back, and one finished slot is held while the consumers wait on a late
    /// stage (SCHEDULE=2).
    #[default]
    AfterNext,
    /// Each stage's slot as soon as its own MMAs complete (`wgmma.wait_group 0`): every slot
    /// in flight while the consumers wait (SCHEDULE=3).
    OwnCompletion,
}

impl Sm90Cfg {
    pub fn consumers(&self) -> u32 {
        self.wg_m * self.wg_n * 128
    }
    /// The pipeline this configuration runs.
    pub fn pipeline(&self) -> Pipeline {
        Pipeline {
            stages: self.stages,
            tile_k: self.bk,
            issuer: if self.producer_warp {
                CopyIssuer::ProducerWarp
            } else {
                CopyIssuer::Thread0
            },
        }
    }
    pub fn threads(&self) -> u32 {
        self.consumers() + if self.producer_warp { 32 } else { 0 }
    }
    pub fn stage_bytes(&self) -> u32 {
        (self.bm + self.bn) * self.bk * self.elem_bytes
    }
    /// `MainLoop::SMEM_BYTES`: stages, two 8-byte barriers per stage, 1024 bytes of alignment slack.
    pub fn smem_bytes(&self) -> u32 {
        self.stages * self.stage_bytes() + self.stages * 16 + 1024
    }
    /// Accumulator registers per consumer thread.
    pub fn acc_regs(&self) -> u32 {
        (self.bm / self.wg_m) * (self.bn / self.wg_n) / 128
    }
    /// Under a cluster, an N-major B too narrow to split by 64-column slabs is split by k
    /// rows: each block copies `bk / cluster` rows of every slab (`MainLoop::B_SPLIT_ROWS`).
    pub fn b_split_rows(&self) -> bool {
        self.cluster > 1
            && self.b_issue == BIssue::Shares
            && self.shared == SharedOperand::B
            && !self.b_k
            && (self.bn / (128 / self.elem_bytes)) % self.cluster != 0
    }
    /// Under a cluster sharing A, an M-major A too narrow to split by 64-row slabs is split by
    /// k rows (`MainLoop::A_SPLIT_ROWS`).
    pub fn a_split_rows(&self) -> bool {
        self.cluster > 1
            && self.shared == SharedOperand::A
            && !self.a_k
            && (self.bm / (128 / self.elem_bytes)) % self.cluster != 0
    }
    pub fn cpp(&self) -> String {
        let mut s = format!(
            "ph::gemm::sm90::MainLoop<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}>",
            self.dt,
            self.bm,
            self.bn,
            self.bk,
            self.wg_m,
            self.wg_n,
            self.stages,
            b(self.a_k),
            b(self.b_k),
            b(self.producer_warp)
        );
        if self.shared == SharedOperand::A {
            let own = self.release == Release::OwnCompletion;
            s.insert_str(
                s.len() - 1,
                &format!(", {}, {}, false, true", self.cluster, b(own)),
            );
        } else if self.b_issue == BIssue::Rank0 {
            let own = self.release == Release::OwnCompletion;
            s.insert_str(
                s.len() - 1,
                &format!(", {}, {}, true", self.cluster, b(own)),
            );
        } else if self.release == Release::OwnCompletion {
            s.insert_str(s.len() - 1, &format!(", {}, true", self.cluster));
        } else if self.cluster > 1 {
            s.insert_str(s.len() - 1, &format!(", {}", self.cluster));
        }
        s
    }
    /// Why `shared` cannot be shared by a cluster of `n` blocks (each copies `1 / n` of it), or
    /// `None`: the header's static_asserts.
    pub fn cluster_blocker(&self, n: u32, shared: SharedOperand) -> Option<NoClusterLoop> {
        let kb = 128 / self.elem_bytes;
        let (k_major, mn) = match shared {
            SharedOperand::A => (self.a_k, self.bm),
            SharedOperand::B => (self.b_k, self.bn),
        };
        if n != 2 && !(n == 4 && shared == SharedOperand::A) {
            Some(NoClusterLoop::Size)
        } else if k_major && (mn / n) % 8 != 0 {
            Some(NoClusterLoop::RowsNotWholeAtoms(shared))
        } else if !k_major && (mn / kb) % n != 0 && (self.bk / n) % 8 != 0 {
            Some(NoClusterLoop::SlabsUneven(shared))
        } else {
            None
        }
    }
    /// The header's static_asserts plus what this crate requires to avoid spills.
    pub fn validate(&self) -> Result<(), NoMainLoop> {
        let es = self.elem_bytes;
        let kb = 128 / es;
        let (wgm, wgn) = (self.bm / self.wg_m.max(1), self.bn / self.wg_n.max(1));
        let checks: [(bool, NoMainLoop); 12] = [
            (
                es == 2 || (self.a_k && self.b_k),
                NoMainLoop::WgmmaNeedsKMajor,
            ),
            (
                (1..=4).contains(&(self.wg_m * self.wg_n)),
                NoMainLoop::ConsumerWarpgroups,
            ),
            (
                self.bm % self.wg_m == 0 && (wgm == 64 || wgm == 128),
                NoMainLoop::WarpgroupRows,
            ),
            (
                self.bn % self.wg_n == 0 && wgn % 32 == 0 && wgn <= 256,
                NoMainLoop::WarpgroupN,
            ),
            (self.bk % kb == 0, NoMainLoop::BkNotLines),
            (
                self.bm <= 256 && self.bn <= 256 && self.bk <= 256,
                NoMainLoop::TmaBoxTooLarge,
            ),
            (self.a_k || self.bm % kb == 0, NoMainLoop::MMajorASlabs),
            (self.b_k || wgn % kb == 0, NoMainLoop::NMajorBSlabs),
            (
                (2..=SM90_MAX_STAGES).contains(&self.stages),
                NoMainLoop::Stages {
                    max: SM90_MAX_STAGES,
                },
            ),
            (
                self.smem_bytes() <= SM90_SMEM_LIMIT,
                NoMainLoop::WgmmaSmemOver {
                    bytes: self.smem_bytes(),
                },
            ),
            (self.acc_regs() <= 128, NoMainLoop::TooManyAccumulators),
            (
                // A producer warp rounds the block to 3 warpgroups' worth of registers (168
                // per thread): two m64 rows of 128 accumulators no longer fit.
                !self.producer_warp || wgm == 64 || self.acc_regs() <= 64,
                NoMainLoop::ProducerWarpRegisters,
            ),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, why)) => Err(*why),
            None => Ok(()),
        }
    }
    /// Mirror of `AccLayout::coord`.
    pub fn coord(&self, tid: u32, i: u32) -> Option<(u32, u32)> {
        let (wgm, wgn) = (self.bm / self.wg_m, self.bn / self.wg_n);
        let n = (wgm / 64) * wgn / 2;
        if tid >= self.consumers() || i >= n {
            return None;
        }
        let (g, t) = (tid / 128, tid % 128);
        let (wm, wn) = (g % self.wg_m, g / self.wg_m);
        let (w, l) = (t / 32, t % 32);
        let (mi, j) = (i / (wgn / 2), i % (wgn / 2));
        Some((
            wm * wgm + mi * 64 + 16 * w + l / 4 + 8 * ((j / 2) % 2),
            wn * wgn + 8 * (j / 4) + 2 * (l % 4) + j % 2,
        ))
    }
    pub fn regs_per_thread(&self) -> u32 {
        self.acc_regs()
    }
}

/// How a main loop moves one operand from global to shared memory: the plan's typed decision
/// (`phobos emit` renders it; tests assert on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperandCopy {
    /// TMA boxes (the wgmma loop): the copy engine zero-fills past the tensor's extents.
    Tma,
    /// cp.async of `bytes` (16, 8 or 4) a piece, zero-filled by `src-size` past the operand;
    /// under 16 when that is all the operand's base and leading dimension are aligned to.
    CpAsync { bytes: u32 },
    /// No cp.async fits: the operand is aligned to `align_bytes` (1 or 2) only (a 16-bit type
    /// with an odd leading dimension), so each thread loads its elements into registers,
    /// masked and zero outside the operand, and stores 4-byte pieces to shared memory after
    /// the current tile's MMAs.
    RegisterStaged { align_bytes: u32 },
    /// As `RegisterStaged`, for a 16-bit operand aligned to 2 bytes (VEC_COPY=1): each thread
    /// reads the two aligned 16-byte vectors covering each of its 8-element pieces (only those
    /// holding an element inside the operand), and after the current tile's MMAs shifts the
    /// piece into place, zeroes what lies outside the operand and stores it (16 bytes).
    Shifted,
}

impl std::fmt::Display for OperandCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OperandCopy::Tma => write!(f, "TMA"),
            OperandCopy::CpAsync { bytes: 16 } => write!(f, "cp.async 16 B"),
            OperandCopy::CpAsync { bytes } => {
                write!(f, "cp.async {bytes} B (aligned to {bytes} B only)")
            }
            OperandCopy::RegisterStaged { align_bytes } => write!(
                f,
                "register-staged element loads (aligned to {align_bytes} B: no cp.async fits)"
            ),
            OperandCopy::Shifted => write!(
                f,
                "register-staged shifted 16-byte loads (aligned to 2 B: two aligned vectors an \
                 8-element piece, shifted into place)"
            ),
        }
    }
}

/// Who issues a main loop's copies into shared memory (`GemmRecord::pipeline`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyIssuer {
    /// Every thread of the block issues its share of cp.async (mma.sync, FFMA loops).
    AllThreads,
    /// Thread 0 issues the TMA copies between its own MMAs (the wgmma loop at
    /// `@launch(128 * warpgroups)`): a slot is refilled only after its consumers released it
    /// and thread 0 reached that point of its own loop.
    Thread0,
    /// A 33rd warp issues every TMA copy as soon as a slot is released (the wgmma loop at
    /// `@launch(128 * warpgroups + 32)`): `STAGES - 1` k tiles stay in flight.
    ProducerWarp,
}

/// A main loop's shared-memory pipeline: its depth, its k step, and who fills it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pipeline {
    pub stages: u32,
    pub tile_k: u32,
    pub issuer: CopyIssuer,
}

impl std::fmt::Display for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let who = match self.issuer {
            CopyIssuer::AllThreads => "every thread issues its copies",
            CopyIssuer::Thread0 => {
                "thread 0 issues the copies between its MMAs (a producer warp needs 32 more \
                 threads in @launch)"
            }
            CopyIssuer::ProducerWarp => "a producer warp issues the copies",
        };
        write!(f, "{} stages of k {}, {who}", self.stages, self.tile_k)
    }
}

#[path = "gemm_fast_cfg_sm80_ffma.rs"]
mod sm80_ffma;
pub use sm80_ffma::{FfmaCfg, Sm80Cfg};
