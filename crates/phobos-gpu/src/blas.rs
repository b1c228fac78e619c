//! cuBLAS reference and baseline GEMMs: `C = A @ B` on device tensors, with A and B row- or
//! column-major and C in either order (mapped onto cuBLAS's column-major convention by
//! [`crate::blas_plan::map_to_col_major`]).
//!
//! | operands | output | path | compute |
//! | --- | --- | --- | --- |
//! | f32 | f32 | `cublasGemmEx` | `CUBLAS_COMPUTE_32F`, default math: never TF32 |
//! | f32 with `tf32` (or a `tf32` operand) | f32 | `cublasGemmEx` | `CUBLAS_COMPUTE_32F_FAST_TF32` |
//! | f64 | f64 | `cublasGemmEx` | `CUBLAS_COMPUTE_64F` |
//! | f16 / bf16 | same or f32 | `cublasGemmEx` | `CUBLAS_COMPUTE_32F` (fp32 accumulation) |
//! | i8 | i32 | `cublasGemmEx` | `CUBLAS_COMPUTE_32I` |
//! | f8e4m3 | f32, bf16, f16 | cuBLASLt `cublasLtMatmul` | `CUBLAS_COMPUTE_32F`, unit scales (unset) |
//!
//! fp8 takes only the layout cuBLASLt's fp8 kernels accept: A row-major and B column-major
//! (K contiguous in both, "TN" in cuBLAS terms), M, N and K multiples of 16, 16-byte aligned
//! pointers (every allocation is). No scale pointers are set: cuBLASLt takes an unset scale as
//! 1.0 (see `blas_lt`).
//!
//! Calls are queued on the [`Gpu`]'s stream, so [`Gpu::time_launches`] times them like kernels.

use crate::blas_plan::{map_to_col_major, plan_gemm, ColMajorGemm, GemmKind};
use crate::device::Gpu;
use crate::error::{c_text, CallError, GpuError};
use crate::memory::{DeviceBuffer, DeviceTensor};
use crate::probe;
use cudarc::cublas::sys as cb;
use phobos_ir::DType;
use std::ffi::c_void;
use std::sync::Mutex;

use crate::blas_lt::LtCache;

/// cuBLAS (and, for fp8, cuBLASLt) bound to a [`Gpu`]'s stream.
pub struct Blas {
    pub(crate) gpu: Gpu,
    handle: cb::cublasHandle_t,
    pub(crate) lt: Mutex<Option<LtCache>>,
}

// SAFETY: cuBLAS lets several threads call through one handle as long as its stream and
// workspace are not changed meanwhile; this type sets them once, at creation. The cuBLASLt
// state is behind a mutex.
unsafe impl Send for Blas {}
unsafe impl Sync for Blas {}

impl Drop for Blas {
    fn drop(&mut self) {
        if let Ok(mut lt) = self.lt.lock() {
            lt.take();
        }
        if self.gpu.inner.ctx.bind_to_thread().is_ok() {
            unsafe {
                let _ = cb::cublasDestroy_v2(self.handle);
            }
        }
    }
}

/// A cuBLAS status as a [`CallError`].
pub(crate) fn blas_error(call: &'static str, status: cb::cublasStatus_t) -> CallError {
    CallError {
        call,
        code: status as u32,
        name: c_text(unsafe { cb::cublasGetStatusName(status) }),
        message: c_text(unsafe { cb::cublasGetStatusString(status) }),
    }
}

fn check(call: &'static str, status: cb::cublasStatus_t) -> Result<(), GpuError> {
    if status == cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Blas(blas_error(call, status)))
    }
}

fn cuda_type(t: DType) -> cb::cudaDataType {
    use cb::cudaDataType::*;
    match t.arith() {
        DType::F16 => CUDA_R_16F,
        DType::BF16 => CUDA_R_16BF,
        DType::F64 => CUDA_R_64F,
        DType::I8 => CUDA_R_8I,
        DType::I32 => CUDA_R_32I,
        DType::F8E4M3 => CUDA_R_8F_E4M3,
        DType::F8E5M2 => CUDA_R_8F_E5M2,
        _ => CUDA_R_32F,
    }
}

impl Blas {
    /// Creates the cuBLAS handle on the GPU's stream. cuBLASLt is created on the first fp8
    /// GEMM.
    pub fn new(gpu: &Gpu) -> Result<Blas, GpuError> {
        probe::cublas().map_err(GpuError::Library)?;
        gpu.enter()?;
        let mut handle: cb::cublasHandle_t = std::ptr::null_mut();
        check("cublasCreate", unsafe { cb::cublasCreate_v2(&mut handle) })?;
        let blas = Blas {
            gpu: gpu.clone(),
            handle,
            lt: Mutex::new(None),
        };
        check("cublasSetStream", unsafe {
            cb::cublasSetStream_v2(handle, gpu.stream() as cb::cudaStream_t)
        })?;
        // Default math: TF32 only where a compute type asks for it.
        check("cublasSetMathMode", unsafe {
            cb::cublasSetMathMode(handle, cb::cublasMath_t::CUBLAS_DEFAULT_MATH)
        })?;
        Ok(blas)
    }

    /// Queues `C = A @ B` (see the module doc for the types and layouts). `tf32` lets fp32
    /// operands round to TF32.
    pub fn gemm(
        &self,
        a: &DeviceTensor,
        b: &DeviceTensor,
        c: &DeviceTensor,
        tf32: bool,
    ) -> Result<(), GpuError> {
        let (mnk, kind) = plan_gemm(
            (a.dtype, &a.shape, a.order),
            (b.dtype, &b.shape, b.order),
            (c.dtype, &c.shape),
            tf32,
        )?;
        let g = map_to_col_major(mnk, a.order, b.order, c.order);
        if g.m == 0 || g.n == 0 {
            return Ok(());
        }
        let (x, y) = if g.swap { (b, a) } else { (a, b) };
        self.gpu.enter()?;
        match kind {
            GemmKind::Fp8 { output } => self.gemm_fp8(&g, x.ptr(), y.ptr(), c.ptr(), output),
            _ => self.gemm_ex(&g, kind, x, y, c),
        }?;
        self.poll()
    }

    fn gemm_ex(
        &self,
        g: &ColMajorGemm,
        kind: GemmKind,
        x: &DeviceTensor,
        y: &DeviceTensor,
        c: &DeviceTensor,
    ) -> Result<(), GpuError> {
        use cb::cublasComputeType_t::*;
        let op = |t: bool| {
            if t {
                cb::cublasOperation_t::CUBLAS_OP_T
            } else {
                cb::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let compute = match kind {
            GemmKind::F32 | GemmKind::Half { .. } => CUBLAS_COMPUTE_32F,
            GemmKind::Tf32 => CUBLAS_COMPUTE_32F_FAST_TF32,
            GemmKind::F64 => CUBLAS_COMPUTE_64F,
            GemmKind::I8 => CUBLAS_COMPUTE_32I,
            GemmKind::Fp8 { .. } => unreachable!("fp8 goes through cuBLASLt"),
        };
        // alpha = 1, beta = 0 in the compute type's scalar type.
        let (one_f, zero_f) = (1.0f32, 0.0f32);
        let (one_d, zero_d) = (1.0f64, 0.0f64);
        let (one_i, zero_i) = (1i32, 0i32);
        let (alpha, beta): (*const c_void, *const c_void) = match kind {
            GemmKind::F64 => (&one_d as *const f64 as _, &zero_d as *const f64 as _),
            GemmKind::I8 => (&one_i as *const i32 as _, &zero_i as *const i32 as _),
            _ => (&one_f as *const f32 as _, &zero_f as *const f32 as _),
        };
        check("cublasGemmEx", unsafe {
            cb::cublasGemmEx(
                self.handle,
                op(g.trans_x),
                op(g.trans_y),
                g.m as i32,
                g.n as i32,
                g.k as i32,
                alpha,
                x.ptr() as *const c_void,
                cuda_type(x.dtype),
                g.ld_x as i32,
                y.ptr() as *const c_void,
                cuda_type(y.dtype),
                g.ld_y as i32,
                beta,
                c.ptr() as *mut c_void,
                cuda_type(c.dtype),
                g.ld_c as i32,
                compute,
                cb::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        })
    }

    /// Reports a fault of earlier work (cuBLAS returns before its kernels run).
    fn poll(&self) -> Result<(), GpuError> {
        use cudarc::driver::sys;
        match unsafe { sys::cuStreamQuery(self.gpu.stream()).result() } {
            Ok(()) => Ok(()),
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_READY => Ok(()),
            Err(e) => Err(self
                .gpu
                .classify(crate::device::call_error("cuStreamQuery", e))),
        }
    }

    /// The GPU this handle enqueues on.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    pub(crate) fn scratch(&self, bytes: usize) -> Result<DeviceBuffer, GpuError> {
        self.gpu.alloc(bytes)
    }
}
