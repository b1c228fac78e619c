//! Launching kernels: with arguments bound to a kernel's IR signature ([`crate::abi`]), or raw
//! for hand-written kernels.
//!
//! Every launch checks `cuLaunchKernel`'s result (a refused configuration is
//! [`GpuError::LaunchRejected`], the context stays usable) and then polls the stream, so that a
//! fault of an earlier kernel is reported as [`GpuError::Fault`] at the next launch. A fault of
//! this launch's own kernel shows at the next synchronizing call ([`Gpu::synchronize`], a
//! download, an event read); [`Gpu::launch_sync`] waits right away.

use crate::abi::BoundArgs;
use crate::args::KernelArgs;
use crate::device::{call_error, Gpu};
use crate::error::{is_sticky, GpuError};
use crate::module::Function;
use cudarc::driver::sys;

/// A launch configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory per block, bytes.
    pub dynamic_smem: u32,
}

impl LaunchConfig {
    /// The configuration of bound arguments: their grid, `(threads, 1, 1)` blocks.
    pub fn of(bound: &BoundArgs, dynamic_smem: u32) -> LaunchConfig {
        LaunchConfig {
            grid: bound.grid,
            block: [bound.block, 1, 1],
            dynamic_smem,
        }
    }
}

impl Gpu {
    /// Launches `f` with arguments bound by [`crate::bind_args`] and `dynamic_smem` bytes of
    /// dynamic shared memory (the kernel's limit is raised first when that is over 48 KB).
    pub fn launch(
        &self,
        f: &Function,
        bound: &BoundArgs,
        dynamic_smem: u32,
    ) -> Result<(), GpuError> {
        let mut args = bound.args.clone();
        self.launch_raw(f, LaunchConfig::of(bound, dynamic_smem), &mut args)
    }

    /// [`Gpu::launch`], then waits for the kernel: its own fault is reported here.
    pub fn launch_sync(
        &self,
        f: &Function,
        bound: &BoundArgs,
        dynamic_smem: u32,
    ) -> Result<(), GpuError> {
        self.launch(f, bound, dynamic_smem)?;
        self.synchronize()
    }

    /// Launches with a configuration and packed arguments of the caller's own.
    pub fn launch_raw(
        &self,
        f: &Function,
        cfg: LaunchConfig,
        args: &mut KernelArgs,
    ) -> Result<(), GpuError> {
        if !std::ptr::eq(f.gpu().inner.as_ref(), self.inner.as_ref()) {
            return Err(GpuError::Invalid(format!(
                "kernel `{}` was loaded through another Gpu handle",
                f.name()
            )));
        }
        self.enter()?;
        f.ensure_dynamic_smem(cfg.dynamic_smem)
            .map_err(|e| self.rejected(f, &cfg, e))?;
        let mut ptrs = args.param_ptrs();
        let r = unsafe {
            sys::cuLaunchKernel(
                f.raw(),
                cfg.grid[0],
                cfg.grid[1],
                cfg.grid[2],
                cfg.block[0],
                cfg.block[1],
                cfg.block[2],
                cfg.dynamic_smem,
                self.stream(),
                if ptrs.is_empty() {
                    std::ptr::null_mut()
                } else {
                    ptrs.as_mut_ptr()
                },
                std::ptr::null_mut(),
            )
            .result()
        };
        if let Err(e) = r {
            let err = call_error("cuLaunchKernel", e);
            return Err(if is_sticky(err.code) {
                self.classify(err)
            } else {
                GpuError::LaunchRejected {
                    kernel: f.name().to_string(),
                    grid: cfg.grid,
                    block: cfg.block[0] * cfg.block[1] * cfg.block[2],
                    dyn_smem: cfg.dynamic_smem,
                    error: err,
                }
            });
        }
        // Not-ready is the normal answer; anything else is an error of earlier work.
        match unsafe { sys::cuStreamQuery(self.stream()).result() } {
            Ok(()) => Ok(()),
            Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NOT_READY => Ok(()),
            Err(e) => Err(self.classify(call_error("cuStreamQuery", e))),
        }
    }

    /// A refusal to set up the launch (the dynamic shared memory limit) as a rejected launch.
    fn rejected(&self, f: &Function, cfg: &LaunchConfig, e: GpuError) -> GpuError {
        match e {
            GpuError::Cuda(error) => GpuError::LaunchRejected {
                kernel: f.name().to_string(),
                grid: cfg.grid,
                block: cfg.block[0] * cfg.block[1] * cfg.block[2],
                dyn_smem: cfg.dynamic_smem,
                error,
            },
            other => other,
        }
    }
}
