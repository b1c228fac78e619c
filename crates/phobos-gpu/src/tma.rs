//! TMA tensor maps: the launch ABI's by-value `CUtensorMap` parameters, and the other facts a
//! launch of generated code needs beyond [`crate::bind_args`] ([`LaunchFacts`]).
//!
//! A kernel whose GEMM main loop copies its operands with the Hopper copy engine takes, after
//! the runtime-dim ints, one `const __grid_constant__ ph::gemm::sm90::TmaDesc` per operand: 128
//! bytes, the driver's `CUtensorMap`, encoded per launch by `cuTensorMapEncodeTiled` from the
//! operand's device address and extents. The code generator describes each map as a
//! [`TensorMapParam`]; [`encode_args`] turns a description, the tensor's address and the
//! launch's runtime dims into the driver call's arguments (pure, validated, tested without a
//! GPU), and [`Gpu::encode_tensor_map`] makes the call.
//!
//! ```text
//!  bind_args(kernel, args) ──▶ BoundArgs ─┐
//!  LaunchFacts (from the emitter) ────────┼─▶ Gpu::prepare_launch ─▶ PreparedLaunch
//!  (tensor maps, outputs to zero, grid z, ┘     (maps encoded and appended, grid z set,
//!   split-K workspace)                           workspace allocated and appended)
//!                                    Gpu::launch_prepared: zero the outputs, launch (one stream)
//! ```

use crate::abi::{Arg, BoundArgs};
use crate::device::{call_error, Gpu};
use crate::error::GpuError;
use crate::launch::LaunchConfig;
use crate::module::Function;
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
/// column-major one: `[R, C]`, stride `R`).
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
}

/// The arguments of one `cuTensorMapEncodeTiled` call (rank 2).
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
        map: [u64; 2],
        tensor: Vec<usize>,
    },
    #[error("tensor map of `{param}`: {what}")]
    Invalid { param: String, what: String },
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
    Ok(TensorMapArgs {
        data_type: p.data_type,
        rank: 2,
        global_address: address,
        global_dim,
        global_strides: [bytes],
        box_dim: p.box_dim,
        element_strides: p.element_strides,
        interleave: p.interleave,
        swizzle: p.swizzle,
        l2_promotion: p.l2_promotion,
        oob_fill: p.oob_fill,
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
/// prepared launch owns ([`SplitWorkspace`]), after everything above.
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
    /// The cluster's blocks along x (1: no clusters): the clamped grid stays a multiple of it.
    pub cluster_x: u32,
    /// The split-K workspace the launch passes (kept alive as long as the prepared launch;
    /// launches of one prepared launch must not overlap, as on one stream they do not).
    pub workspace: Option<std::sync::Arc<crate::memory::DeviceBuffer>>,
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

/// The pure part of [`Gpu::prepare_launch`]: the encode arguments of every map, the ranges to
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
        // The map must cover the bound tensor's memory exactly: innermost first.
        let mut mem: Vec<usize> = t.shape.to_vec();
        if t.order == phobos_ir::MemOrder::RowMajor {
            mem.reverse();
        }
        let elem = t.dtype.size_bytes() as u32;
        if mem.len() != 2
            || mem[0] as u64 != a.global_dim[0]
            || mem[1] as u64 != a.global_dim[1]
            || a.global_strides[0] != mem[0] as u64 * elem as u64
            || elem != p.elem_bytes
        {
            return Err(TmaError::Mismatch {
                param: name(p.tensor),
                map: a.global_dim,
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
    let mut grid = bound.grid;
    if facts.grid_z > 1 {
        if grid[2] != 1 || facts.grid_z > 65535 {
            return Err(TmaError::Invalid {
                param: "the grid".into(),
                what: format!(
                    "z = {} requested over the kernel's own z = {}",
                    facts.grid_z, grid[2]
                ),
            });
        }
        grid[2] = facts.grid_z;
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
            return Err(TmaError::Invalid {
                param: "the grid".into(),
                what: format!(
                    "a persistent kernel needs a 2-D grid of at most 2^31 - 1 tiles, not {grid:?}"
                ),
            });
        }
        logical = logical.or(Some([grid[0], grid[1]]));
        grid = [tiles as u32, 1, 1];
    }
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
                    return Err(TmaError::Invalid {
                        param: "the split-K workspace".into(),
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

impl Gpu {
    /// Encodes one tensor map (`cuTensorMapEncodeTiled`; a host call, nothing is queued).
    pub fn encode_tensor_map(&self, a: &TensorMapArgs) -> Result<TensorMap, GpuError> {
        use cudarc::driver::sys;
        crate::probe::tensor_maps().map_err(GpuError::Library)?;
        self.enter()?;
        let data_type = data_type(a.data_type)?;
        let interleave = match a.interleave {
            0 => sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            1 => sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_16B,
            2 => sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_32B,
            v => return Err(GpuError::Invalid(format!("tensor map interleave {v}"))),
        };
        let swizzle = match a.swizzle {
            0 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            1 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            2 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            3 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            v => return Err(GpuError::Invalid(format!("tensor map swizzle {v}"))),
        };
        let l2 = match a.l2_promotion {
            0 => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_NONE,
            1 => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
            2 => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            3 => sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            v => return Err(GpuError::Invalid(format!("tensor map L2 promotion {v}"))),
        };
        let fill = match a.oob_fill {
            0 => sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            1 => sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
            v => return Err(GpuError::Invalid(format!("tensor map fill {v}"))),
        };
        // The driver writes its own (128-byte aligned) struct; the bytes are copied out.
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        let r = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                data_type,
                a.rank,
                a.global_address as *mut std::ffi::c_void,
                a.global_dim.as_ptr(),
                a.global_strides.as_ptr(),
                a.box_dim.as_ptr(),
                a.element_strides.as_ptr(),
                interleave,
                swizzle,
                l2,
                fill,
            )
            .result()
        };
        r.map_err(|e| GpuError::Cuda(call_error("cuTensorMapEncodeTiled", e)))?;
        Ok(TensorMap { opaque: map.opaque })
    }

    /// Completes bound arguments with the launch facts of generated code: encodes and appends
    /// the tensor maps (after the runtime dims, in order), sets the grid's z, and lists the
    /// output ranges to zero. `bound` comes from [`crate::bind_args`]`(kernel, args)`.
    pub fn prepare_launch(
        &self,
        kernel: &Kernel,
        mut bound: BoundArgs,
        args: &[Arg<'_>],
        facts: &LaunchFacts,
    ) -> Result<PreparedLaunch, GpuError> {
        let LaunchPlan {
            maps,
            zero,
            grid,
            logical,
            workspace,
        } = plan_launch(facts, kernel, &bound, args)
            .map_err(|e| GpuError::Invalid(format!("`{}`: {e}", bound.kernel)))?;
        for a in &maps {
            let m = self.encode_tensor_map(a)?;
            bound.args.tensor_map(&m);
        }
        if let Some([gx, gy]) = logical {
            bound.args.i32(gx as i32).i32(gy as i32);
        }
        let workspace = match workspace {
            None => None,
            Some(w) => {
                let buf = self.alloc(w.bytes)?;
                // Queued before any launch on this stream; the kernel leaves the counters zero.
                self.memset_raw(buf.ptr() + w.counters_at as u64, w.bytes - w.counters_at, 0)?;
                bound.args.ptr(buf.ptr());
                Some(std::sync::Arc::new(buf))
            }
        };
        bound.grid = grid;
        Ok(PreparedLaunch {
            bound,
            zero,
            persistent: logical.is_some(),
            cluster_x: facts.cluster_x.max(1),
            workspace,
        })
    }

    /// Zeroes the prepared ranges and launches, both queued on the stream in that order (so a
    /// timed launch includes the zeroing, as a split-K GEMM's cost does).
    pub fn launch_prepared(
        &self,
        f: &Function,
        p: &PreparedLaunch,
        dynamic_smem: u32,
    ) -> Result<(), GpuError> {
        for &(ptr, bytes) in &p.zero {
            self.memset_raw(ptr, bytes, 0)?;
        }
        let mut args = p.bound.args.clone();
        let mut config = LaunchConfig::of(&p.bound, dynamic_smem);
        if p.persistent {
            // As many blocks as are resident at once, at most one per tile (the driver is asked
            // once per function, not between a timed launch's events).
            let per_sm = f
                .resident_blocks_per_sm(p.bound.block, dynamic_smem)?
                .max(1);
            let resident = per_sm.saturating_mul(self.info().sm_count.max(1));
            // Whole clusters (the tile count is already a multiple of the cluster).
            let c = p.cluster_x.max(1);
            config.grid[0] = config.grid[0].min((resident / c).max(1) * c).max(1);
        }
        self.launch_raw(f, config, &mut args)
    }
}

/// The driver's data-type enumerator for a numeric value.
fn data_type(v: u32) -> Result<cudarc::driver::sys::CUtensorMapDataType, GpuError> {
    use cudarc::driver::sys::CUtensorMapDataType as T;
    Ok(match v {
        0 => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        1 => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        2 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        3 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
        4 => T::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        5 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
        6 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        7 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        8 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
        9 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        10 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
        11 => T::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
        12 => T::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
        _ => return Err(GpuError::Invalid(format!("tensor map data type {v}"))),
    })
}

#[cfg(test)]
#[path = "tma_tests.rs"]
mod tests;
