//! TMA tensor maps: the launch ABI's by-value `CUtensorMap` parameters, and the other facts a
//! launch of generated code needs beyond [`crate::bind_args`] ([`LaunchFacts`]).
//!
//! A kernel whose GEMM main loop copies its operands with the Hopper copy engine takes, after
//! the runtime-dim ints, one `const __grid_constant__ ph::gemm::sm90::TmaDesc` per operand: 128
//! bytes, the driver's `CUtensorMap`, encoded per launch by `cuTensorMapEncodeTiled` from the
//! operand's device address and extents. The code generator describes each map as a
//! [`TensorMapParam`]; [`encode_args`] turns a description, the tensor's address and the
//! launch's runtime dims into the driver call's arguments (pure, validated, tested without a
//! GPU), and [`crate::Gpu::encode_tensor_map`] makes the call.
//!
//! ```text
//!  bind_args(kernel, args) ──▶ BoundArgs ─┐
//!  LaunchFacts (from the emitter) ────────┼─▶ Gpu::prepare_launch ─▶ PreparedLaunch
//!  (tensor maps, outputs to zero, grid z, ┘     (maps encoded and appended, grid z set,
//!   split-K workspace)                           workspace allocated and appended)
//!                                    Gpu::launch_prepared: zero the outputs, launch (one stream)
//! ```

use crate::abi::{Arg, BoundArgs};
use phobos_ir::Kernel;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The 128 bytes of a `CUtensorMap`, as the kernel receives them (`ph::gemm::sm90::TmaDesc`
/// has the same size and alignment).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorMap {
    pub opaque: [u64; 16],
}

impl TensorMap {
    /// The map's bytes, little-endian.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.opaque.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// An extent of a tensor map: a constant, or runtime dim `Dim(id)` (`ir::Kernel::dims` order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Extent {
    Static(u64),
    Dim(usize),
}

/// One tensor-map parameter of a kernel: everything `cuTensorMapEncodeTiled` needs except the
/// launch-time values (the tensor's address and the runtime dims). The map is rank 2: the
/// tensor's memory as `global_dim[1]` lines of `global_dim[0]` elements, consecutive lines
/// `line_stride` elements apart (for a row-major `[R, C]` tensor: `[C, R]`, stride `C`; for a
/// column-major one: `[R, C]`, stride `R`). With `outer` it is rank 3: `outer.extent` planes
/// of those lines, dense (consecutive planes `global_dim[1] * line_stride` elements apart): a
/// row-major `[B, N, D]` tensor is `[D, N]`, stride `D`, outer `B`. A box then stops at its
/// plane's last line: the lines past `global_dim[1]` read as zeros, never the next plane's.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorMapParam {
    /// The tensor parameter (index into `ir::Kernel::params`) whose memory the map covers.
    pub tensor: usize,
    /// `CUtensorMapDataType` (0 `UINT8`, 6 `FLOAT16`, 7 `FLOAT32`, 9 `BFLOAT16`, ...).
    pub data_type: u32,
    /// Bytes per element of the tensor.
    pub elem_bytes: u32,
    /// `globalDim`, innermost (contiguous) first.
    pub global_dim: [Extent; 2],
    /// `globalStrides[0]` in elements.
    pub line_stride: Extent,
    /// `boxDim`, innermost first: the elements one copy brings into shared memory.
    pub box_dim: [u32; 2],
    /// `elementStrides`.
    pub element_strides: [u32; 2],
    /// `CUtensorMapInterleave`, `CUtensorMapSwizzle`, `CUtensorMapL2promotion`,
    /// `CUtensorMapFloatOOBfill` as their numeric values.
    pub interleave: u32,
    pub swizzle: u32,
    pub l2_promotion: u32,
    pub oob_fill: u32,
    /// The third (outermost) dimension of a rank-3 map; `None`: rank 2.
    #[serde(default)]
    pub outer: Option<OuterDim>,
}

/// The outermost dimension of a rank-3 tensor map ([`TensorMapParam::outer`]): how many planes,
/// and how many of them one box spans (`elementStrides[2]` is 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OuterDim {
    pub extent: Extent,
    pub box_dim: u32,
}

/// The arguments of one `cuTensorMapEncodeTiled` call. Rank 2 uses the arrays below; rank 3
/// adds `outer` (its `globalDim[2]`, `globalStrides[1]` in bytes, `boxDim[2]`,
/// `elementStrides[2]`): [`TensorMapArgs::arrays`] gives the driver's arrays of either rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMapArgs {
    pub data_type: u32,
    pub rank: u32,
    pub global_address: u64,
    pub global_dim: [u64; 2],
    pub global_strides: [u64; 1],
    pub box_dim: [u32; 2],
    pub element_strides: [u32; 2],
    pub interleave: u32,
    pub swizzle: u32,
    pub l2_promotion: u32,
    pub oob_fill: u32,
    pub outer: Option<OuterArgs>,
}

/// The third dimension of a rank-3 map's encode arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OuterArgs {
    pub global_dim: u64,
    /// Bytes between consecutive planes.
    pub stride: u64,
    pub box_dim: u32,
    pub element_stride: u32,
}

/// The driver's arrays of one encode call, `rank` entries each (`rank - 1` strides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapArrays {
    pub global_dim: Vec<u64>,
    pub global_strides: Vec<u64>,
    pub box_dim: Vec<u32>,
    pub element_strides: Vec<u32>,
}

impl TensorMapArgs {
    /// `globalDim`, `globalStrides`, `boxDim` and `elementStrides` as the driver takes them.
    pub fn arrays(&self) -> MapArrays {
        let mut m = MapArrays {
            global_dim: self.global_dim.to_vec(),
            global_strides: self.global_strides.to_vec(),
            box_dim: self.box_dim.to_vec(),
            element_strides: self.element_strides.to_vec(),
        };
        if let Some(o) = self.outer {
            m.global_dim.push(o.global_dim);
            m.global_strides.push(o.stride);
            m.box_dim.push(o.box_dim);
            m.element_strides.push(o.element_stride);
        }
        m
    }
}

/// Why a tensor map cannot describe a launch's tensor (the driver would refuse it, or the
/// description does not match the bound tensor).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TmaError {
    #[error("tensor map of parameter #{tensor}: the parameter is not a bound tensor")]
    NotATensor { tensor: usize },
    #[error("tensor map of `{param}`: base address {address:#x} is not 16-byte aligned")]
    Misaligned { param: String, address: u64 },
    #[error(
        "tensor map of `{param}`: lines {bytes} bytes apart; the copy engine needs a multiple \
         of 16 below 2^40 (specialize the variant on the problem's alignment)"
    )]
    Stride { param: String, bytes: u64 },
    #[error("tensor map of `{param}`: extent {extent} is out of range (1 ..= 2^32)")]
    Extent { param: String, extent: i64 },
    #[error("tensor map of `{param}`: runtime dim #{dim} is not bound")]
    UnboundDim { param: String, dim: usize },
    #[error(
        "tensor map of `{param}`: the map covers {map:?} elements (innermost first) but the \
         tensor holds {tensor:?}"
    )]
    Mismatch {
        param: String,
        map: Vec<u64>,
        tensor: Vec<usize>,
    },
    #[error("tensor map of `{param}`: {what}")]
    Invalid { param: String, what: String },
    /// A launch that no map is at fault for: its grid or its split-K workspace (`part`).
    #[error("{part}: {what}")]
    Launch { part: &'static str, what: String },
}

/// Resolves an extent against the runtime dims; `None` for an unbound dim.
fn resolve(e: Extent, dims: &[i64]) -> Option<i64> {
    match e {
        Extent::Static(n) => Some(n as i64),
        Extent::Dim(id) => dims.get(id).copied(),
    }
}

/// The `cuTensorMapEncodeTiled` arguments of `p` for a tensor at `address` (its parameter is
/// called `param` in messages) with the launch's runtime dims (`ir::Kernel::dims` order).
/// Checks everything the driver checks for the maps this crate passes, so that a refusal is a
/// [`TmaError`] that says why.
pub fn encode_args(
    p: &TensorMapParam,
    param: &str,
    address: u64,
    dims: &[i64],
) -> Result<TensorMapArgs, TmaError> {
    let param = param.to_string();
    // Only a runtime dim can be unbound: a constant always resolves.
    let get = |e: Extent| {
        resolve(e, dims).ok_or_else(|| TmaError::UnboundDim {
            param: param.clone(),
            dim: match e {
                Extent::Dim(d) => d,
                Extent::Static(_) => 0,
            },
        })
    };
    let invalid = |what: String| TmaError::Invalid {
        param: param.clone(),
        what,
    };
    if !address.is_multiple_of(16) {
        return Err(TmaError::Misaligned { param, address });
    }
    let mut global_dim = [0u64; 2];
    for (g, e) in global_dim.iter_mut().zip(p.global_dim) {
        let v = get(e)?;
        if !(1..=1i64 << 32).contains(&v) {
            return Err(TmaError::Extent { param, extent: v });
        }
        *g = v as u64;
    }
    let line = get(p.line_stride)?;
    let bytes = (line.max(0) as u64).saturating_mul(p.elem_bytes as u64);
    if line < global_dim[0] as i64 || !bytes.is_multiple_of(16) || bytes >= 1 << 40 {
        return Err(TmaError::Stride { param, bytes });
    }
    if !matches!(p.elem_bytes, 1 | 2 | 4 | 8) || p.data_type > 12 {
        return Err(invalid(format!(
            "data type {} of {}-byte elements",
            p.data_type, p.elem_bytes
        )));
    }
    if p.box_dim.iter().any(|&b| !(1..=256).contains(&b)) {
        return Err(invalid(format!("box {:?} (1 ..= 256 per dim)", p.box_dim)));
    }
    let inner_bytes = p.box_dim[0] * p.elem_bytes;
    // Without interleave the box's inner extent is whole 16-byte pieces, and a swizzled box
    // is at most one swizzle span wide (32, 64 or 128 bytes).
    let span = match p.swizzle {
        0 => u32::MAX,
        1 => 32,
        2 => 64,
        3 => 128,
        s => return Err(invalid(format!("swizzle mode {s}"))),
    };
    if p.interleave != 0 || !inner_bytes.is_multiple_of(16) || inner_bytes > span {
        return Err(invalid(format!(
            "box rows of {inner_bytes} bytes with interleave {} and swizzle {}",
            p.interleave, p.swizzle
        )));
    }
    if p.element_strides.iter().any(|&s| !(1..=8).contains(&s)) {
        return Err(invalid(format!(
            "element strides {:?} (1 ..= 8)",
            p.element_strides
        )));
    }
    if p.l2_promotion > 3 || p.oob_fill > 1 {
        return Err(invalid(format!(
            "L2 promotion {} / fill {}",
            p.l2_promotion, p.oob_fill
        )));
    }
    let outer = match p.outer {
        None => None,
        Some(o) => {
            let planes = get(o.extent)?;
            if !(1..=1i64 << 32).contains(&planes) {
                return Err(TmaError::Extent {
                    param,
                    extent: planes,
                });
            }
            // Dense planes: `global_dim[1]` lines of `line` elements each.
            let stride = bytes.saturating_mul(global_dim[1]);
            if stride >= 1 << 40 {
                return Err(TmaError::Stride {
                    param,
                    bytes: stride,
                });
            }
            if !(1..=256).contains(&o.box_dim) {
                return Err(invalid(format!(
                    "box {:?} x {} (1 ..= 256 per dim)",
                    p.box_dim, o.box_dim
                )));
            }
            Some(OuterArgs {
                global_dim: planes as u64,
                stride,
                box_dim: o.box_dim,
                element_stride: 1,
            })
        }
    };
    Ok(TensorMapArgs {
        data_type: p.data_type,
        rank: if outer.is_some() { 3 } else { 2 },
        global_address: address,
        global_dim,
        global_strides: [bytes],
        box_dim: p.box_dim,
        element_strides: p.element_strides,
        interleave: p.interleave,
        swizzle: p.swizzle,
        l2_promotion: p.l2_promotion,
        oob_fill: p.oob_fill,
        outer,
    })
}

/// What a launch of generated code needs beyond the IR signature, as the code generator
/// reports it (`phobos_cuda::Emitted`): the tensor-map parameters after the runtime dims, the
/// tensors to zero before the launch (SPLIT_K outputs accumulated with atomics), and the grid's
/// z extent when it is not the kernel's own (SPLIT_K parts; 0 or 1: the kernel's grid).
/// `persistent`: the kernel loops over the tiles of its logical grid (x, y), which it takes as
/// two more `int` parameters after the tensor maps; the launch has as many blocks as fit on the
/// device at once, at most one per tile. `cluster_x` above 1: the kernel is compiled with
/// `__cluster_dims__(cluster_x, 1, 1)`, so the grid's x is rounded up to a multiple of it (a
/// persistent kernel's launch: a multiple of it, its clusters walking the tiles in whole
/// clusters, `cluster_x` neighbouring M tiles of the logical grid rounded up).
/// `split_workspace`: the kernel takes one more parameter, a `float*` to a workspace the
/// prepared launch owns ([`SplitWorkspace`]), after everything above. `row_split` above 1: each
/// block of the kernel's grid runs as a cluster of that many blocks along x (ROW_SPLIT; the
/// kernel is compiled with `__cluster_dims__(row_split, 1, 1)`), so the launch's x grid is the
/// kernel's times it. `cluster_z` above 1: the kernel is compiled with
/// `__cluster_dims__(1, 1, cluster_z)` (SPLIT_REDUCE=4: a tile's split parts, `grid_z` of them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LaunchFacts {
    pub tensor_maps: Vec<TensorMapParam>,
    pub zero_before_launch: Vec<usize>,
    pub grid_z: u32,
    #[serde(default)]
    pub persistent: bool,
    #[serde(default)]
    pub cluster_x: u32,
    #[serde(default)]
    pub split_workspace: Option<SplitWorkspace>,
    #[serde(default)]
    pub row_split: u32,
    #[serde(default)]
    pub cluster_z: u32,
}

impl LaunchFacts {
    /// The kernel's `__cluster_dims__`: ROW_SPLIT's or CLUSTER's blocks along x, SPLIT_REDUCE=4's
    /// parts along z; `[1, 1, 1]` without clusters.
    pub fn cluster_dims(&self) -> [u32; 3] {
        [
            self.cluster_x.max(self.row_split).max(1),
            1,
            self.cluster_z.max(1),
        ]
    }
}

/// The f32 workspace of a split-K GEMM whose C is not f32 (`phobos_cuda::SplitWorkspace`):
/// `parts` slices of tensor `c`'s elements, then one 4-byte counter per block of the x-y grid.
/// The counters start at zero and every launch leaves them zero, so the workspace is
/// allocated and zeroed once per prepared launch, not before each launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SplitWorkspace {
    pub c: usize,
    pub parts: u32,
}

/// Where a prepared launch's split-K workspace lies: its size, and the byte range of the
/// counters (to zero once, when allocated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkspacePlan {
    pub bytes: usize,
    pub counters_at: usize,
}

/// A launch ready to go: bound arguments with the tensor maps appended, and the device ranges
/// (address, bytes) to zero right before it.
#[derive(Clone, Debug)]
pub struct PreparedLaunch {
    pub bound: BoundArgs,
    pub zero: Vec<(u64, usize)>,
    /// A persistent kernel: `bound.grid.x` is its tile count, clamped at launch to the blocks
    /// that fit on the device at once.
    pub persistent: bool,
    /// The kernel's compiled cluster dimensions (`[1, 1, 1]`: no clusters): CLUSTER's and
    /// ROW_SPLIT's along x, SPLIT_REDUCE=4's along z. A persistent kernel's clamped grid stays
    /// a multiple of its x.
    pub cluster: [u32; 3],
    /// A persistent kernel's grid clamped further, to at most this many blocks (`None`: the
    /// resident blocks): tests set it so that every block walks several logical blocks even
    /// at problems smaller than the device.
    pub max_blocks: Option<u32>,
    /// The split-K workspace the launch passes (kept alive as long as the prepared launch;
    /// launches of one prepared launch must not overlap, as on one stream they do not).
    pub workspace: Option<std::sync::Arc<crate::memory::DeviceBuffer>>,
}

/// How many of a clustered launch's clusters the device holds at once
/// ([`crate::Gpu::cluster_residency`]): a launch of more clusters than that runs the rest in
/// later waves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterResidency {
    /// The compiled cluster dimensions.
    pub dims: [u32; 3],
    /// Clusters resident at once (`cuOccupancyMaxActiveClusters`).
    pub resident: u32,
    /// Clusters the launch has.
    pub launched: u32,
}

impl ClusterResidency {
    /// Blocks a cluster.
    pub fn size(&self) -> u32 {
        self.dims.iter().product()
    }
    /// Rounds of resident clusters the launch takes (0 when none fits).
    pub fn waves(&self) -> u32 {
        if self.resident == 0 {
            0
        } else {
            self.launched.div_ceil(self.resident)
        }
    }
}

/// What [`plan_launch`] computes without a GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// The encode arguments of every tensor map, in parameter order.
    pub maps: Vec<TensorMapArgs>,
    /// Device ranges (address, bytes) to zero before the launch.
    pub zero: Vec<(u64, usize)>,
    /// The launch's grid (a persistent kernel's: its tile count along x, to be clamped to the
    /// blocks resident at once).
    pub grid: [u32; 3],
    /// A persistent kernel's logical grid (x, y), passed after the tensor maps.
    pub logical: Option<[u32; 2]>,
    /// The split-K workspace to allocate and pass last.
    pub workspace: Option<WorkspacePlan>,
}

/// The blocks a launch has, from the kernel's own grid for the problem (its `@grid`): before
/// a persistent kernel's clamp to the blocks resident at once, which needs the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchGrid {
    /// The launch's grid (a persistent kernel's: its tile count along x, in whole clusters).
    pub grid: [u32; 3],
    /// A persistent kernel's logical grid (x, y), passed after the tensor maps.
    pub logical: Option<[u32; 2]>,
}

/// The grid part of [`plan_launch`] (`phobos emit` prints it on its launch line): the z the
/// kernel asks for, ROW_SPLIT's blocks along x, whole clusters, a persistent kernel's tiles.
pub fn launch_grid(facts: &LaunchFacts, mut grid: [u32; 3]) -> Result<LaunchGrid, TmaError> {
    if facts.grid_z > 1 {
        if grid[2] != 1 || facts.grid_z > 65535 {
            return Err(TmaError::Launch {
                part: "the grid",
                what: format!(
                    "z = {} requested over the kernel's own z = {}",
                    facts.grid_z, grid[2]
                ),
            });
        }
        grid[2] = facts.grid_z;
    }
    if facts.row_split > 1 {
        let x = grid[0] as u64 * facts.row_split as u64;
        if x > i32::MAX as u64 || facts.persistent || facts.cluster_x > 1 {
            return Err(TmaError::Launch {
                part: "the grid",
                what: format!(
                    "x = {} blocks of {} (ROW_SPLIT) exceeds 2^31 - 1 or meets another cluster",
                    grid[0], facts.row_split
                ),
            });
        }
        grid[0] = x as u32;
    }
    let mut logical = None;
    if facts.cluster_x > 1 {
        // A persistent kernel's logical grid keeps the tile counts; its launch covers them in
        // whole clusters.
        if facts.persistent {
            logical = Some([grid[0], grid[1]]);
        }
        grid[0] = grid[0].div_ceil(facts.cluster_x) * facts.cluster_x;
    }
    if facts.persistent {
        let tiles = grid[0] as u64 * grid[1] as u64;
        if grid[2] != 1 || tiles > i32::MAX as u64 {
            return Err(TmaError::Launch {
                part: "the grid",
                what: format!(
                    "a persistent kernel needs a 2-D grid of at most 2^31 - 1 tiles, not {grid:?}"
                ),
            });
        }
        logical = logical.or(Some([grid[0], grid[1]]));
        grid = [tiles as u32, 1, 1];
    }
    Ok(LaunchGrid { grid, logical })
}

/// The pure part of [`crate::Gpu::prepare_launch`]: the encode arguments of every map, the ranges to
/// zero and the grid, for arguments `args` bound as `bound`.
pub fn plan_launch(
    facts: &LaunchFacts,
    kernel: &Kernel,
    bound: &BoundArgs,
    args: &[Arg<'_>],
) -> Result<LaunchPlan, TmaError> {
    let tensor = |id: usize| match args.get(id) {
        Some(Arg::Tensor(t)) => Ok(t),
        _ => Err(TmaError::NotATensor { tensor: id }),
    };
    let name = |id: usize| {
        kernel
            .params
            .get(id)
            .map_or_else(|| format!("parameter #{id}"), |p| p.name.clone())
    };
    let dims: Vec<i64> = bound.dims.iter().map(|(_, v)| *v).collect();
    let mut maps = Vec::with_capacity(facts.tensor_maps.len());
    for p in &facts.tensor_maps {
        let t = tensor(p.tensor)?;
        let a = encode_args(p, &name(p.tensor), t.ptr, &dims)?;
        // The map must cover the bound tensor's memory exactly: innermost first, dense.
        let mut mem: Vec<usize> = t.shape.to_vec();
        if t.order == phobos_ir::MemOrder::RowMajor {
            mem.reverse();
        }
        let elem = t.dtype.size_bytes() as u64;
        let arrays = a.arrays();
        let mut dense = elem;
        let strides_match = arrays
            .global_strides
            .iter()
            .zip(&arrays.global_dim)
            .all(|(&s, &d)| {
                dense *= d;
                s == dense
            });
        if mem.len() != a.rank as usize
            || mem
                .iter()
                .zip(&arrays.global_dim)
                .any(|(&m, &g)| m as u64 != g)
            || !strides_match
            || elem != p.elem_bytes as u64
        {
            return Err(TmaError::Mismatch {
                param: name(p.tensor),
                map: arrays.global_dim,
                tensor: mem,
            });
        }
        maps.push(a);
    }
    let mut zero = Vec::with_capacity(facts.zero_before_launch.len());
    for &id in &facts.zero_before_launch {
        let t = tensor(id)?;
        let n: usize = t.shape.iter().product();
        zero.push((t.ptr, n * t.dtype.size_bytes()));
    }
    let LaunchGrid { grid, logical } = launch_grid(facts, bound.grid)?;
    let workspace = match facts.split_workspace {
        None => None,
        Some(w) => {
            let c = tensor(w.c)?;
            let elems: usize = c.shape.iter().product();
            let tiles = grid[0] as usize * grid[1] as usize;
            let counters_at = (w.parts as usize)
                .checked_mul(elems)
                .and_then(|n| n.checked_mul(4));
            let bytes = counters_at.and_then(|b| b.checked_add(tiles * 4));
            match (counters_at, bytes) {
                (Some(counters_at), Some(bytes)) if w.parts > 1 && logical.is_none() => {
                    Some(WorkspacePlan { bytes, counters_at })
                }
                _ => {
                    return Err(TmaError::Launch {
                        part: "the split-K workspace",
                        what: format!(
                            "{} parts of {elems} elements over a grid of {grid:?}",
                            w.parts
                        ),
                    })
                }
            }
        }
    };
    Ok(LaunchPlan {
        maps,
        zero,
        grid,
        logical,
        workspace,
    })
}

#[path = "tma_driver.rs"]
mod driver;

#[cfg(test)]
#[path = "tma_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "tma_rank3_tests.rs"]
mod rank3_tests;
