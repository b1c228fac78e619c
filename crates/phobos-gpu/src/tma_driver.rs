//! The driver side of tensor maps and launch plans: encoding (`cuTensorMapEncodeTiled`),
//! preparing and launching (see the parent module and [`crate::launch_plan`]).

use super::{TensorMap, TensorMapArgs};
use crate::abi::{Arg, BoundArgs};
use crate::device::{call_error, Gpu};
use crate::error::GpuError;
use crate::launch::LaunchConfig;
use crate::launch_plan::{plan_launch, LaunchFacts, LaunchPlan, PreparedLaunch};
use crate::module::Function;
use phobos_ir::Kernel;

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
        let arrays = a.arrays();
        if arrays.global_dim.len() != a.rank as usize {
            return Err(GpuError::Invalid(format!("tensor map of rank {}", a.rank)));
        }
        let r = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                data_type,
                a.rank,
                a.global_address as *mut std::ffi::c_void,
                arrays.global_dim.as_ptr(),
                arrays.global_strides.as_ptr(),
                arrays.box_dim.as_ptr(),
                arrays.element_strides.as_ptr(),
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
            cluster: facts.cluster_dims(),
            max_blocks: None,
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
        config.grid = self.launch_grid(f, p, dynamic_smem)?;
        self.launch_raw(f, config, &mut args)
    }

    /// The grid [`Gpu::launch_prepared`] launches `p` with: its own, or for a persistent kernel
    /// as many blocks as are resident at once, at most one per tile, in whole clusters.
    pub fn launch_grid(
        &self,
        f: &Function,
        p: &PreparedLaunch,
        dynamic_smem: u32,
    ) -> Result<[u32; 3], GpuError> {
        let mut grid = p.bound.grid;
        if p.persistent {
            // The driver is asked once per function, not between a timed launch's events.
            let per_sm = f
                .resident_blocks_per_sm(p.bound.block, dynamic_smem)?
                .max(1);
            let mut resident = per_sm.saturating_mul(self.info().sm_count.max(1));
            let c = p.cluster[0].max(1);
            if c > 1 {
                // Whole clusters, as many as the GPCs hold at once.
                let clusters = f.resident_clusters(p.bound.block, dynamic_smem, [c, 1, 1])?;
                if clusters > 0 {
                    resident = resident.min(clusters.saturating_mul(c));
                }
            }
            let resident = p.max_blocks.map_or(resident, |m| resident.min(m.max(1)));
            // Whole clusters (the tile count is already a multiple of the cluster).
            grid[0] = grid[0].min((resident / c).max(1) * c).max(1);
        }
        Ok(grid)
    }

    /// How many of `p`'s clusters the device holds at once against how many its launch has
    /// (`None` without clusters): a clustered launch of more than fit runs in waves, which the
    /// resident blocks per multiprocessor do not show (a cluster's blocks share one GPC).
    pub fn cluster_residency(
        &self,
        f: &Function,
        p: &PreparedLaunch,
        dynamic_smem: u32,
    ) -> Result<Option<crate::ClusterResidency>, GpuError> {
        let dims = p.cluster.map(|d| d.max(1));
        if dims.iter().product::<u32>() <= 1 {
            return Ok(None);
        }
        let grid = self.launch_grid(f, p, dynamic_smem)?;
        let launched = (0..3).map(|i| grid[i].div_ceil(dims[i])).product();
        let resident = f.resident_clusters(p.bound.block, dynamic_smem, dims)?;
        Ok(Some(crate::ClusterResidency {
            dims,
            resident,
            launched,
        }))
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
