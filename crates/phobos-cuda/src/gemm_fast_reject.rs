//! Why a main loop of `cuda/gemm/` does not apply to a recognized GEMM: the planners' checks
//! ([`super::plan_for`]) and the headers' static_asserts the configurations mirror
//! ([`super::cfg::Sm90Cfg::validate`], [`super::cfg::Sm80Cfg::validate`],
//! [`super::cfg::FfmaCfg::validate`]). The notes render them with [`std::fmt::Display`].

use phobos_ir::DType;

use super::cfg::SM90_SMEM_LIMIT;
use crate::Target;

/// Why one main loop was not taken for a GEMM (`Reject::Strategy`, `GemmRecord::rejected`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoMainLoop {
    /// The loop's tile differs from the point's TILE_M or TILE_N knob.
    TileDiffersFromKnob { tile: u32, knob: u32 },
    /// SPLIT_K reduces the parts with f32 atomics, and i8 accumulates in i32.
    SplitKOfI8,
    /// The wgmma loop needs a target with wgmma and TMA (sm_90a).
    NeedsSm90a,
    /// The mma.sync loop needs a target with mma.sync (sm_80 or later).
    NeedsSm80,
    /// wgmma has no instruction for the operands' element type.
    NoWgmma(DType),
    /// mma.sync has no instruction for the operands' element type (or exact f32).
    NoMmaSync(DType),
    /// Tensor maps need whole 2-D operands: an operand has a batch index.
    NotPlain2d,
    /// The copy engine masks k only at the tensor's K, and the loop does not cover the whole K.
    KNotWhole,
    /// A base or leading dimension is not 16-byte aligned, as tensor maps need.
    TmaMisaligned,
    /// The block's threads are not 128 per warpgroup (plus 32 for a producer warp).
    ThreadsNotWarpgroups,
    /// TILE_K is not whole 128-byte lines, and the loop does not cover the whole K.
    TileKNotLines,
    /// The consumer warpgroups do not split the block's tile evenly.
    WarpgroupsDoNotTile,
    /// tf32 and fp8 wgmma need both operands K-major.
    WgmmaNeedsKMajor,
    /// The wgmma loop takes 1 to 4 consumer warpgroups.
    ConsumerWarpgroups,
    /// A warpgroup's tile is not 64 or 128 rows.
    WarpgroupRows,
    /// A warpgroup's N is not a multiple of 32 of at most 256.
    WarpgroupN,
    /// BK is not whole 128-byte lines.
    BkNotLines,
    /// A TMA box side is over 256 elements.
    TmaBoxTooLarge,
    /// M-major A is loaded in 64-row slabs, and BM is not whole slabs.
    MMajorASlabs,
    /// N-major B is read in 64-column slabs, and a warpgroup's N is not whole slabs.
    NMajorBSlabs,
    /// STAGES is outside `2..=max` for the main loop.
    Stages { max: u32 },
    /// The wgmma loop's stages need more shared memory than [`SM90_SMEM_LIMIT`].
    WgmmaSmemOver { bytes: u32 },
    /// The stages need more shared memory than `target` allows one block.
    SmemOver { bytes: u32, target: Target },
    /// A thread would hold more than 128 accumulators.
    TooManyAccumulators,
    /// With a producer warp a thread has 168 registers: warpgroups of 128 rows do not fit.
    ProducerWarpRegisters,
    /// No tensor map type for the element type.
    NoTensorMapType,
    /// TILE_K is not a multiple of the MMA instruction's k, and the loop does not cover the
    /// whole K.
    TileKNotMmaK,
    /// The block's threads are not whole warps.
    ThreadsNotWarps,
    /// No split of the warps gives warp tiles whose sides are multiples of 16.
    NoMmaWarpGrid,
    /// tf32 and 8-bit operands of mma.sync must both be K-major.
    MmaNeedsKMajor,
    /// BK is not a multiple of the MMA instruction's k.
    BkNotMmaK,
    /// The warps do not divide the block's tile.
    WarpsDoNotDivide,
    /// A warp's tile is not a multiple of 16 x 16.
    WarpTileNot16,
    /// A copy width is not 1, 2, 4, 8 or 16 bytes of at least one element.
    CopyWidth,
    /// The staged lines are not whole 32-byte pairs of copy chunks.
    StagedLines,
    /// The FFMA loop computes exact f32 only.
    FfmaNotExactF32,
    /// The block's tile gives each thread this many elements: no thread tile fits it.
    ElementsPerThread(u32),
    /// No split of the warps gives each warp 32 thread tiles.
    NoFfmaWarpGrid,
    /// A thread tile side is not 4, 8 or 16, or the tile is over 128 elements.
    ThreadTile,
    /// A warp's tile is not 32 thread tiles.
    WarpTileNot32ThreadTiles,
    /// A load width is not 1, 2 or 4 floats.
    LoadWidth,
    /// A load width does not divide the staged lines.
    LoadWidthLines,
    /// A K-major operand needs the block's threads to be a multiple of TILE_K.
    KMajorThreads,
    /// The plan runs `needs` threads and `@launch` gives `launch`.
    Threads { needs: u32, launch: u32 },
}

impl std::fmt::Display for NoMainLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use NoMainLoop as N;
        let text = match self {
            N::TileDiffersFromKnob { tile, knob } => {
                return write!(
                    f,
                    "the loop's tile {tile} differs from the knob Some({knob})"
                )
            }
            N::SplitKOfI8 => "SPLIT_K reduces with f32 atomics; i8 accumulates in i32",
            N::NeedsSm90a => "needs sm_90a",
            N::NeedsSm80 => "needs sm_80",
            N::NoWgmma(dt) => return write!(f, "no wgmma for {dt}"),
            N::NoMmaSync(dt) => return write!(f, "no mma.sync for {dt}"),
            N::NotPlain2d => "tensor maps need whole 2-D operands (no batch index)",
            N::KNotWhole => {
                "the copy engine masks k only at the tensor's K: the loop must cover it"
            }
            N::TmaMisaligned => "tensor maps need 16-byte aligned bases and leading dimensions",
            N::ThreadsNotWarpgroups => {
                "threads must be 128 per warpgroup (+32 for a producer warp)"
            }
            N::TileKNotLines => "TILE_K is not whole 128-byte lines",
            N::WarpgroupsDoNotTile => "consumer warpgroups do not tile the block",
            N::WgmmaNeedsKMajor => "tf32/fp8 wgmma needs K-major A and B",
            N::ConsumerWarpgroups => "1..4 consumer warpgroups",
            N::WarpgroupRows => "64 or 128 rows per warpgroup",
            N::WarpgroupN => "warpgroup N a multiple of 32, at most 256",
            N::BkNotLines => "BK must be whole 128-byte lines",
            N::TmaBoxTooLarge => "TMA boxes are at most 256 per dimension",
            N::MMajorASlabs => "M-major A is loaded in 64-row slabs",
            N::NMajorBSlabs => "N-major B is read in 64-column slabs",
            N::Stages { max } => return write!(f, "STAGES in 2..{max}"),
            N::WgmmaSmemOver { .. } => {
                return write!(f, "shared memory over {} KiB", SM90_SMEM_LIMIT / 1024)
            }
            N::SmemOver { bytes, target } => {
                let limit = target.max_smem_per_block();
                return write!(
                    f,
                    "shared memory over {} KiB ({bytes} bytes; {target} allows {limit})",
                    limit / 1024
                );
            }
            N::TooManyAccumulators => "more than 128 accumulators per thread",
            N::ProducerWarpRegisters => {
                "a producer warp leaves 168 registers: use 64 rows per warpgroup"
            }
            N::NoTensorMapType => "no tensor map type",
            N::TileKNotMmaK => "TILE_K is not a multiple of the MMA k",
            N::ThreadsNotWarps => "threads must be whole warps",
            N::NoMmaWarpGrid => "no warp grid with 16 x 16-multiple warp tiles",
            N::MmaNeedsKMajor => "tf32 and 8-bit operands must both be K-major",
            N::BkNotMmaK => "BK must be a multiple of the MMA k",
            N::WarpsDoNotDivide => "warps divide the tile",
            N::WarpTileNot16 => "warp tile must be a multiple of 16 x 16",
            N::CopyWidth => "copy width 1, 2, 4, 8 or 16 bytes, at least one element",
            N::StagedLines => "staged lines must be whole 32-byte pairs of chunks",
            N::FfmaNotExactF32 => "FFMA main loop is exact f32 only",
            N::ElementsPerThread(n) => return write!(f, "{n} elements per thread"),
            N::NoFfmaWarpGrid => "no warp grid of 32 thread tiles per warp",
            N::ThreadTile => "thread tile of 4, 8 or 16 per side, at most 128 elements",
            N::WarpTileNot32ThreadTiles => "a warp tile is 32 thread tiles",
            N::LoadWidth => "load width 1, 2 or 4 floats",
            N::LoadWidthLines => "load width divides the staged lines",
            N::KMajorThreads => {
                "a K-major operand needs the block's threads to be a multiple of TILE_K"
            }
            N::Threads { needs, launch } => {
                return write!(f, "it needs {needs} threads, @launch gives {launch}")
            }
        };
        f.write_str(text)
    }
}
