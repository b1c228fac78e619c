//! What a launch of generated code needs beyond its bound arguments ([`LaunchFacts`], as the
//! code generator reports them), and the plan [`plan_launch`] makes of them without a GPU: the
//! tensor maps' encode arguments ([`crate::tma`]), the ranges to zero, the grid (split-K's z,
//! ROW_SPLIT's and clusters' x, a persistent kernel's tiles) and the split-K workspace.
//! [`crate::Gpu::prepare_launch`] carries the plan out on the device.
//!
//! ```text
//!  bind_args(kernel, args) ──▶ BoundArgs ─┐
//!  LaunchFacts (from the emitter) ────────┼─▶ Gpu::prepare_launch ─▶ PreparedLaunch
//!  (tensor maps, outputs to zero, grid z, ┘     (maps encoded and appended, grid z set,
//!   split-K workspace)                           workspace allocated and appended)
//!                                    Gpu::launch_prepared: zero the outputs, launch (one stream)
//! ```

use crate::abi::{Arg, BoundArgs};
use crate::tma::{encode_args, TensorMapArgs, TensorMapParam, TmaError};
use phobos_ir::Kernel;
use serde::{Deserialize, Serialize};

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
