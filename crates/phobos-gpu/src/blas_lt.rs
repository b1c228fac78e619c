//! fp8 e4m3 GEMM through cuBLASLt (cuBLAS's `cublasGemmEx` has no fp8). A plan (descriptors,
//! layouts and the heuristic's candidate algorithms) is made once per problem shape and output
//! type and reused, so repeated calls cost one `cublasLtMatmul` each.
//!
//! The call is the one cuBLASLt's fp8 kernels take on Hopper: `TRANSA = T`, `TRANSB = N`, both
//! stored operands K-contiguous (`K x cols`, leading dimension K), no scale pointers (an unset
//! scale is 1.0) and fp32 compute and scale types: the call seen running on an H200 (cuBLASLt
//! 13.0), where an earlier version with unit A/B scale pointers was refused
//! (`CUBLAS_STATUS_NOT_SUPPORTED` from `cublasLtMatmul`). The heuristic's algorithms are tried
//! in order; the first that the library accepts is kept for the plan.

use crate::blas::Blas;
use crate::blas_plan::ColMajorGemm;
use crate::error::{c_text, CallError, GpuError};
use crate::memory::DeviceBuffer;
use crate::probe;
use cudarc::cublaslt::sys as lt;
use phobos_ir::DType;
use std::collections::HashMap;
use std::ffi::c_void;

/// Workspace cuBLASLt may use per call.
const WORKSPACE_BYTES: usize = 64 << 20;

/// How many of the heuristic's algorithms a plan keeps as fallbacks.
const CANDIDATES: usize = 8;

/// cuBLASLt state of a [`Blas`]: handle, workspace and plans by problem.
pub(crate) struct LtCache {
    handle: lt::cublasLtHandle_t,
    workspace: DeviceBuffer,
    plans: HashMap<PlanKey, LtPlan>,
}

// SAFETY: used only under the `Blas`'s mutex with the context bound.
unsafe impl Send for LtCache {}

type PlanKey = (usize, usize, usize, usize, usize, usize, DType);

struct LtPlan {
    desc: lt::cublasLtMatmulDesc_t,
    layouts: [lt::cublasLtMatrixLayout_t; 3],
    /// The heuristic's algorithms, best first; the first one known to run comes first once a
    /// call succeeded.
    algos: Vec<lt::cublasLtMatmulAlgo_t>,
}

impl Drop for LtPlan {
    fn drop(&mut self) {
        unsafe {
            for l in self.layouts {
                if !l.is_null() {
                    let _ = lt::cublasLtMatrixLayoutDestroy(l);
                }
            }
            if !self.desc.is_null() {
                let _ = lt::cublasLtMatmulDescDestroy(self.desc);
            }
        }
    }
}

impl Drop for LtCache {
    fn drop(&mut self) {
        self.plans.clear();
        unsafe {
            let _ = lt::cublasLtDestroy(self.handle);
        }
    }
}

fn lt_error(call: &'static str, status: lt::cublasStatus_t) -> CallError {
    CallError {
        call,
        code: status as u32,
        name: c_text(unsafe { lt::cublasLtGetStatusName(status) }),
        message: c_text(unsafe { lt::cublasLtGetStatusString(status) }),
    }
}

fn check(call: &'static str, status: lt::cublasStatus_t) -> Result<(), GpuError> {
    if status == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Blas(lt_error(call, status)))
    }
}

fn lt_type(t: DType) -> lt::cudaDataType {
    use lt::cudaDataType::*;
    match t {
        DType::F16 => CUDA_R_16F,
        DType::BF16 => CUDA_R_16BF,
        DType::F8E4M3 => CUDA_R_8F_E4M3,
        _ => CUDA_R_32F,
    }
}

unsafe fn set_desc<T>(
    desc: lt::cublasLtMatmulDesc_t,
    attr: lt::cublasLtMatmulDescAttributes_t,
    value: &T,
) -> Result<(), GpuError> {
    check("cublasLtMatmulDescSetAttribute", unsafe {
        lt::cublasLtMatmulDescSetAttribute(
            desc,
            attr,
            value as *const T as *const c_void,
            std::mem::size_of::<T>(),
        )
    })
}

/// The stored shapes (rows, cols, leading dimension) of X, Y and D of a column-major call,
/// before `op`: X is `k x m` when transposed, Y is `k x n` when not.
fn stored_shapes(g: &ColMajorGemm) -> [(usize, usize, usize); 3] {
    let (xr, xc) = if g.trans_x { (g.k, g.m) } else { (g.m, g.k) };
    let (yr, yc) = if g.trans_y { (g.n, g.k) } else { (g.k, g.n) };
    [(xr, xc, g.ld_x), (yr, yc, g.ld_y), (g.m, g.n, g.ld_c)]
}

impl LtCache {
    pub(crate) fn new(blas: &Blas) -> Result<LtCache, GpuError> {
        probe::cublaslt().map_err(GpuError::Library)?;
        let workspace = blas.scratch(WORKSPACE_BYTES)?;
        let mut handle: lt::cublasLtHandle_t = std::ptr::null_mut();
        check("cublasLtCreate", unsafe { lt::cublasLtCreate(&mut handle) })?;
        Ok(LtCache {
            handle,
            workspace,
            plans: HashMap::new(),
        })
    }

    fn plan(&mut self, g: &ColMajorGemm, output: DType) -> Result<&mut LtPlan, GpuError> {
        let key = (g.m, g.n, g.k, g.ld_x, g.ld_y, g.ld_c, output);
        if !self.plans.contains_key(&key) {
            let plan = self.make_plan(g, output)?;
            self.plans.insert(key, plan);
        }
        Ok(self.plans.get_mut(&key).expect("inserted above"))
    }

    fn make_plan(&self, g: &ColMajorGemm, output: DType) -> Result<LtPlan, GpuError> {
        use lt::cublasLtMatmulDescAttributes_t::*;
        // The fp8 kernels exist only for "TN"; plan_gemm admits no other layout.
        if !g.trans_x || g.trans_y {
            return Err(GpuError::Invalid(format!(
                "fp8 GEMM needs op(X) = T and op(Y) = N, got {}{}",
                if g.trans_x { 'T' } else { 'N' },
                if g.trans_y { 'T' } else { 'N' }
            )));
        }
        let mut plan = LtPlan {
            desc: std::ptr::null_mut(),
            layouts: [std::ptr::null_mut(); 3],
            algos: Vec::new(),
        };
        unsafe {
            check(
                "cublasLtMatmulDescCreate",
                lt::cublasLtMatmulDescCreate(
                    &mut plan.desc,
                    lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    lt::cudaDataType::CUDA_R_32F,
                ),
            )?;
            // cublasOperation_t, a C enum (an `int`): N = 0, T = 1.
            let (t, n) = (1i32, 0i32);
            set_desc(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t)?;
            set_desc(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n)?;
            let types = [DType::F8E4M3, DType::F8E4M3, output];
            for ((slot, (rows, cols, ld)), t) in
                plan.layouts.iter_mut().zip(stored_shapes(g)).zip(types)
            {
                check(
                    "cublasLtMatrixLayoutCreate",
                    lt::cublasLtMatrixLayoutCreate(
                        slot,
                        lt_type(t),
                        rows as u64,
                        cols as u64,
                        ld as i64,
                    ),
                )?;
            }
            let mut pref: lt::cublasLtMatmulPreference_t = std::ptr::null_mut();
            check(
                "cublasLtMatmulPreferenceCreate",
                lt::cublasLtMatmulPreferenceCreate(&mut pref),
            )?;
            let ws = WORKSPACE_BYTES as u64;
            let set = check(
                "cublasLtMatmulPreferenceSetAttribute",
                lt::cublasLtMatmulPreferenceSetAttribute(
                    pref,
                    lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    &ws as *const u64 as *const c_void,
                    8,
                ),
            );
            let mut results: Vec<lt::cublasLtMatmulHeuristicResult_t> =
                vec![std::mem::zeroed(); CANDIDATES];
            let mut found = 0i32;
            let heur = set.and_then(|_| {
                check(
                    "cublasLtMatmulAlgoGetHeuristic",
                    lt::cublasLtMatmulAlgoGetHeuristic(
                        self.handle,
                        plan.desc,
                        plan.layouts[0],
                        plan.layouts[1],
                        plan.layouts[2],
                        plan.layouts[2],
                        pref,
                        CANDIDATES as i32,
                        results.as_mut_ptr(),
                        &mut found,
                    ),
                )
            });
            let _ = lt::cublasLtMatmulPreferenceDestroy(pref);
            heur?;
            plan.algos = results
                .iter()
                .take(found.max(0) as usize)
                .filter(|r| r.state == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS)
                .filter(|r| r.workspaceSize <= WORKSPACE_BYTES)
                .map(|r| r.algo)
                .collect();
            if plan.algos.is_empty() {
                return Err(GpuError::Blas(lt_error(
                    "cublasLtMatmulAlgoGetHeuristic",
                    lt::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED,
                )));
            }
        }
        Ok(plan)
    }
}

impl Blas {
    /// `D = op(X) op(Y)` in fp8 with fp32 accumulation; `x`, `y`, `d` are device addresses.
    pub(crate) fn gemm_fp8(
        &self,
        g: &ColMajorGemm,
        x: u64,
        y: u64,
        d: u64,
        output: DType,
    ) -> Result<(), GpuError> {
        let mut guard = self
            .lt
            .lock()
            .map_err(|_| GpuError::Invalid("the cuBLASLt state lock is poisoned".into()))?;
        if guard.is_none() {
            *guard = Some(LtCache::new(self)?);
        }
        let cache = guard.as_mut().expect("created above");
        let (handle, ws, ws_len) = (cache.handle, cache.workspace.ptr(), cache.workspace.len());
        let plan = cache.plan(g, output)?;
        let (one, zero) = (1.0f32, 0.0f32);
        let mut last = lt::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED;
        for i in 0..plan.algos.len() {
            let status = unsafe {
                lt::cublasLtMatmul(
                    handle,
                    plan.desc,
                    &one as *const f32 as *const c_void,
                    x as *const c_void,
                    plan.layouts[0],
                    y as *const c_void,
                    plan.layouts[1],
                    &zero as *const f32 as *const c_void,
                    d as *const c_void,
                    plan.layouts[2],
                    d as *mut c_void,
                    plan.layouts[2],
                    &plan.algos[i],
                    ws as *mut c_void,
                    ws_len,
                    self.gpu.stream() as lt::cudaStream_t,
                )
            };
            if status == lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                // Later calls start with the algorithm that ran.
                plan.algos.swap(0, i);
                return Ok(());
            }
            last = status;
            // Only a refusal of this algorithm is worth another try; anything else (a bad
            // pointer, a failed launch) would fail the same way again.
            if status != lt::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED {
                break;
            }
        }
        check("cublasLtMatmul", last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blas_plan::map_to_col_major;
    use phobos_ir::MemOrder::*;

    /// The layouts of the fp8 call that runs on the H200: for a row-major C = A @ B with A
    /// row-major (M x K) and B column-major (K x N), X is B's memory (K x N, ld K), Y is A's
    /// (K x M, ld K) and D is Cᵀ column-major (N x M, ld N).
    #[test]
    fn fp8_layouts_are_the_ones_cublaslt_runs() {
        let (m, n, k) = (32, 48, 64);
        let g = map_to_col_major((m, n, k), RowMajor, ColMajor, RowMajor);
        assert!(g.swap && g.trans_x && !g.trans_y);
        assert_eq!(stored_shapes(&g), [(k, n, k), (k, m, k), (n, m, n)]);
        // A column-major C keeps the operands in place: X = A's memory, Y = B's.
        let g = map_to_col_major((m, n, k), RowMajor, ColMajor, ColMajor);
        assert!(!g.swap && g.trans_x && !g.trans_y);
        assert_eq!(stored_shapes(&g), [(k, m, k), (k, n, k), (m, n, m)]);
    }
}
