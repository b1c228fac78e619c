//! Loading compiled code into the context and looking at its kernels: attributes, the dynamic
//! shared memory limit, and occupancy (the driver's figure, and ours with its limiter).

use crate::device::{call_error, Gpu};
use crate::error::GpuError;
use crate::nvrtc::Compiled;
use crate::occupancy::{occupancy, Occupancy, OccupancyInput};
use cudarc::driver::sys::{self, CUfunction_attribute as F, CUjit_option as J};
use serde::{Deserialize, Serialize};
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// What the driver loads: machine code for this device, or PTX it assembles at load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleImage {
    Cubin(Vec<u8>),
    Ptx(String),
}

impl ModuleImage {
    /// The CUBIN of a compile when it has one, else its PTX.
    pub fn from_compiled(c: &Compiled) -> ModuleImage {
        match &c.cubin {
            Some(bin) => ModuleImage::Cubin(bin.clone()),
            None => ModuleImage::Ptx(c.ptx.clone()),
        }
    }
}

/// A loaded module; unloaded when the last [`Module`] or [`Function`] of it is dropped.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

struct ModuleInner {
    gpu: Gpu,
    module: sys::CUmodule,
    /// The JIT's info log (non-empty mostly for PTX images).
    log: String,
}

// SAFETY: a module handle may be used from any thread with its context bound.
unsafe impl Send for ModuleInner {}
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if self.gpu.inner.ctx.bind_to_thread().is_ok() {
            unsafe {
                let _ = sys::cuModuleUnload(self.module);
            }
        }
    }
}

/// A kernel's static attributes, as the driver reports them for the loaded code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FuncAttributes {
    pub num_regs: u32,
    /// Local memory per thread (stack frame and spills).
    pub local_bytes: u32,
    pub static_smem_bytes: u32,
    pub const_bytes: u32,
    /// The largest block this kernel can be launched with (its launch bounds and registers).
    pub max_threads_per_block: u32,
    /// The current dynamic shared memory limit.
    pub max_dynamic_smem_bytes: u32,
    /// PTX and binary versions, major * 10 + minor.
    pub ptx_version: u32,
    pub binary_version: u32,
}

/// A cluster occupancy question: threads a block, dynamic shared memory, blocks a cluster.
type ClusterQuery = (u32, u32, [u32; 3]);

/// A kernel of a loaded module.
pub struct Function {
    module: Module,
    func: sys::CUfunction,
    name: String,
    attrs: FuncAttributes,
    /// The dynamic shared memory limit as last set.
    max_dyn: AtomicU32,
    /// [`Function::resident_blocks_per_sm`]'s answers, by (threads, dynamic shared memory).
    resident: std::sync::Mutex<Vec<((u32, u32), u32)>>,
    /// [`Function::resident_clusters`]'s answers.
    clusters: std::sync::Mutex<Vec<(ClusterQuery, u32)>>,
}

// SAFETY: as for the module.
unsafe impl Send for Function {}
unsafe impl Sync for Function {}

const LOG_BYTES: usize = 16 * 1024;

impl Gpu {
    /// Loads a CUBIN or PTX image; a refusal keeps the JIT's error and info logs.
    pub fn load_module(&self, image: &ModuleImage) -> Result<Module, GpuError> {
        self.enter()?;
        let ptx_c;
        let data: *const c_void = match image {
            ModuleImage::Cubin(bin) => bin.as_ptr() as *const c_void,
            ModuleImage::Ptx(text) => {
                ptx_c = CString::new(text.as_str())
                    .map_err(|_| GpuError::Invalid("PTX contains a NUL byte".into()))?;
                ptx_c.as_ptr() as *const c_void
            }
        };
        let mut info = vec![0u8; LOG_BYTES];
        let mut error = vec![0u8; LOG_BYTES];
        let mut opts = [
            J::CU_JIT_INFO_LOG_BUFFER,
            J::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            J::CU_JIT_ERROR_LOG_BUFFER,
            J::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            J::CU_JIT_LOG_VERBOSE,
        ];
        // Integer options travel in the pointer itself, as the driver API specifies.
        let mut values: [*mut c_void; 5] = [
            info.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut(LOG_BYTES),
            error.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut(LOG_BYTES),
            std::ptr::without_provenance_mut(1),
        ];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                data,
                opts.len() as u32,
                opts.as_mut_ptr(),
                values.as_mut_ptr(),
            )
            .result()
        };
        let text = |b: &[u8]| {
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).trim().to_string()
        };
        let (info, error) = (text(&info), text(&error));
        if let Err(e) = r {
            let err = call_error("cuModuleLoadDataEx", e);
            if crate::error::is_sticky(err.code) {
                return Err(self.classify(err));
            }
            let log = [error, info]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            return Err(GpuError::ModuleLoad { error: err, log });
        }
        Ok(Module {
            inner: Arc::new(ModuleInner {
                gpu: self.clone(),
                module,
                log: info,
            }),
        })
    }

    /// Loads the result of [`crate::compile`] (its CUBIN, or its PTX when it has none).
    pub fn load_compiled(&self, compiled: &Compiled) -> Result<Module, GpuError> {
        self.load_module(&ModuleImage::from_compiled(compiled))
    }
}

impl Module {
    /// The JIT info log of the load.
    pub fn log(&self) -> &str {
        &self.inner.log
    }

    /// The kernel named `name` (an `extern "C"` name, or the mangled one).
    pub fn function(&self, name: &str) -> Result<Function, GpuError> {
        let gpu = &self.inner.gpu;
        gpu.enter()?;
        let c_name =
            CString::new(name).map_err(|_| GpuError::NoSuchFunction { name: name.into() })?;
        let mut func: sys::CUfunction = std::ptr::null_mut();
        let r = unsafe {
            sys::cuModuleGetFunction(&mut func, self.inner.module, c_name.as_ptr()).result()
        };
        if let Err(e) = r {
            let err = call_error("cuModuleGetFunction", e);
            // CUDA_ERROR_NOT_FOUND
            return Err(if err.code == 500 {
                GpuError::NoSuchFunction { name: name.into() }
            } else {
                gpu.classify(err)
            });
        }
        let get = |a: F| -> Result<u32, GpuError> {
            let mut v = 0i32;
            gpu.check("cuFuncGetAttribute", unsafe {
                sys::cuFuncGetAttribute(&mut v, a, func).result()
            })?;
            Ok(v.max(0) as u32)
        };
        let attrs = FuncAttributes {
            num_regs: get(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            local_bytes: get(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            static_smem_bytes: get(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            const_bytes: get(F::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            max_threads_per_block: get(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_dynamic_smem_bytes: get(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
            ptx_version: get(F::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: get(F::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        };
        Ok(Function {
            module: self.clone(),
            func,
            name: name.to_string(),
            max_dyn: AtomicU32::new(attrs.max_dynamic_smem_bytes),
            resident: std::sync::Mutex::new(Vec::new()),
            clusters: std::sync::Mutex::new(Vec::new()),
            attrs,
        })
    }
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Module({:p})", self.inner.module)
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Function({}, {:?})", self.name, self.attrs)
    }
}

impl Function {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Attributes as read at lookup (the dynamic limit as last set through this handle).
    pub fn attributes(&self) -> FuncAttributes {
        FuncAttributes {
            max_dynamic_smem_bytes: self.max_dyn.load(Ordering::Relaxed),
            ..self.attrs
        }
    }

    pub(crate) fn gpu(&self) -> &Gpu {
        &self.module.inner.gpu
    }

    pub(crate) fn raw(&self) -> sys::CUfunction {
        self.func
    }

    /// Raises (or lowers) the dynamic shared memory a launch may ask for; needed above 48 KB.
    /// Over the device's opt-in limit the driver refuses with a typed error.
    pub fn set_max_dynamic_smem(&self, bytes: u32) -> Result<(), GpuError> {
        let gpu = self.gpu();
        gpu.enter()?;
        gpu.check(
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
            unsafe {
                sys::cuFuncSetAttribute(
                    self.func,
                    F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes as i32,
                )
                .result()
            },
        )?;
        self.max_dyn.store(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Makes sure a launch with `bytes` of dynamic shared memory is allowed.
    pub(crate) fn ensure_dynamic_smem(&self, bytes: u32) -> Result<(), GpuError> {
        if bytes > self.max_dyn.load(Ordering::Relaxed) {
            self.set_max_dynamic_smem(bytes)?;
        }
        Ok(())
    }

    /// Resident blocks per SM as the driver computes it
    /// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
    pub fn driver_blocks_per_sm(&self, threads: u32, dynamic_smem: u32) -> Result<u32, GpuError> {
        let gpu = self.gpu();
        gpu.enter()?;
        let mut n = 0i32;
        gpu.check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut n,
                self.func,
                threads as i32,
                dynamic_smem as usize,
            )
            .result()
        })?;
        Ok(n.max(0) as u32)
    }

    /// [`Function::driver_blocks_per_sm`] asked once per (threads, dynamic shared memory) and
    /// remembered: a persistent launch needs it every time, and a driver query between a timed
    /// launch's events would count as the kernel's time.
    pub fn resident_blocks_per_sm(&self, threads: u32, dynamic_smem: u32) -> Result<u32, GpuError> {
        let key = (threads, dynamic_smem);
        let mut memo = self.resident.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&(_, n)) = memo.iter().find(|(k, _)| *k == key) {
            return Ok(n);
        }
        self.ensure_dynamic_smem(dynamic_smem)?;
        let n = self.driver_blocks_per_sm(threads, dynamic_smem)?;
        memo.push((key, n));
        Ok(n)
    }

    /// Clusters of `cluster` blocks (x, y, z) resident on the device at once, as the driver
    /// computes it (`cuOccupancyMaxActiveClusters`, the kernel compiled with those cluster
    /// dimensions), asked once per (threads, dynamic shared memory, cluster) and remembered. A
    /// cluster's blocks share one GPC, so this can be fewer than the resident blocks over `cluster`
    /// (four-block clusters on a GPC of 18 multiprocessors leave two idle): a persistent
    /// launch of more clusters than this runs the rest in a second wave.
    pub fn resident_clusters(
        &self,
        threads: u32,
        dynamic_smem: u32,
        cluster: [u32; 3],
    ) -> Result<u32, GpuError> {
        let key = (threads, dynamic_smem, cluster);
        let mut memo = self.clusters.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&(_, n)) = memo.iter().find(|(k, _)| *k == key) {
            return Ok(n);
        }
        self.ensure_dynamic_smem(dynamic_smem)?;
        let gpu = self.gpu();
        gpu.enter()?;
        let config = sys::CUlaunchConfig {
            gridDimX: cluster[0],
            gridDimY: cluster[1],
            gridDimZ: cluster[2],
            blockDimX: threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: dynamic_smem,
            hStream: std::ptr::null_mut(),
            attrs: std::ptr::null_mut(),
            numAttrs: 0,
        };
        let mut n = 0i32;
        gpu.check("cuOccupancyMaxActiveClusters", unsafe {
            sys::cuOccupancyMaxActiveClusters(&mut n, self.func, &config).result()
        })?;
        let n = n.max(0) as u32;
        memo.push((key, n));
        Ok(n)
    }

    /// The inputs of our occupancy calculation for a launch of this kernel; `barriers` from the
    /// resource report when known (else 1).
    pub fn occupancy_input(
        &self,
        threads: u32,
        dynamic_smem: u32,
        barriers: Option<u32>,
    ) -> OccupancyInput {
        let a = self.attributes();
        let default_dyn = self
            .gpu()
            .info()
            .smem_per_block
            .saturating_sub(a.static_smem_bytes);
        OccupancyInput {
            threads,
            registers: a.num_regs,
            static_smem: a.static_smem_bytes,
            dynamic_smem,
            barriers: barriers.unwrap_or(1),
            max_threads_per_block: Some(a.max_threads_per_block),
            max_dynamic_smem: (a.max_dynamic_smem_bytes != default_dyn)
                .then_some(a.max_dynamic_smem_bytes),
        }
    }

    /// Our occupancy for a launch (warps per SM and the limiter), from the kernel's attributes
    /// and the device's limits.
    pub fn occupancy(&self, threads: u32, dynamic_smem: u32, barriers: Option<u32>) -> Occupancy {
        occupancy(
            self.gpu().info(),
            &self.occupancy_input(threads, dynamic_smem, barriers),
        )
    }
}
