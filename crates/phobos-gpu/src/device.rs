//! The device: probing the driver, what the device can do ([`DeviceInfo`]), and the [`Gpu`]
//! handle (one context and one stream on one device) every GPU operation goes through.
//!
//! A worker process creates one `Gpu` and keeps it: creation retains the device's primary
//! context (hundreds of milliseconds the first time), everything after is cheap. `Gpu` is
//! `Clone` (a reference count) and `Send + Sync`; every call binds the context to the calling
//! thread first.

use crate::error::{is_sticky, CallError, GpuError};
use crate::probe;
use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUdevice_attribute as A};
use cudarc::driver::CudaContext;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// What a device is and what it can do, read once from the driver.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub ordinal: usize,
    /// e.g. `NVIDIA H200`.
    pub name: String,
    /// Compute capability (major, minor).
    pub cc: (u32, u32),
    pub sm_count: u32,
    pub warp_size: u32,
    pub max_threads_per_block: u32,
    pub max_threads_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub regs_per_sm: u32,
    pub regs_per_block: u32,
    /// Shared memory per SM, all of it (the carveout at its largest).
    pub smem_per_sm: u32,
    /// Shared memory a block gets without opting in (48 KB).
    pub smem_per_block: u32,
    /// Shared memory a block may get after raising its dynamic limit.
    pub smem_per_block_optin: u32,
    /// Shared memory the driver reserves per block (1 KB since sm_80).
    pub reserved_smem_per_block: u32,
    pub l2_bytes: u64,
    /// Peak SM clock, kHz.
    pub sm_clock_khz: u32,
    /// Peak memory clock, kHz.
    pub mem_clock_khz: u32,
    pub mem_bus_width_bits: u32,
    /// Total device memory.
    pub total_mem_bytes: u64,
    /// `cuDriverGetVersion`, e.g. 13000 for CUDA 13.0.
    pub driver_version: i32,
}

impl DeviceInfo {
    /// Peak DRAM bandwidth from the memory clock and bus width (double data rate), GB/s. A
    /// datasheet-style figure: measured copies reach 85-90% of it.
    pub fn peak_mem_bandwidth_gbs(&self) -> f64 {
        2.0 * self.mem_clock_khz as f64 * 1e3 * (self.mem_bus_width_bits as f64 / 8.0) / 1e9
    }

    /// Maximum resident warps per SM.
    pub fn max_warps_per_sm(&self) -> u32 {
        self.max_threads_per_sm / self.warp_size.max(1)
    }

    /// `13.0` from 13000.
    pub fn driver_version_string(&self) -> String {
        format!(
            "{}.{}",
            self.driver_version / 1000,
            (self.driver_version % 1000) / 10
        )
    }

    /// The lent H200 as its driver describes it (driver 580, CUDA 13.0), for planning and
    /// pruning without a GPU. L2 is what PyTorch reported there; clocks and bus width are the
    /// part's specification.
    pub fn h200() -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H200".to_string(),
            cc: (9, 0),
            sm_count: 132,
            warp_size: 32,
            max_threads_per_block: 1024,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
            regs_per_sm: 65536,
            regs_per_block: 65536,
            smem_per_sm: 233_472,
            smem_per_block: 49_152,
            smem_per_block_optin: 232_448,
            reserved_smem_per_block: 1024,
            l2_bytes: 60 * 1024 * 1024,
            sm_clock_khz: 1_980_000,
            mem_clock_khz: 3_201_000,
            mem_bus_width_bits: 6144,
            total_mem_bytes: 143_771 * 1024 * 1024,
            driver_version: 13000,
        }
    }
}

/// A failed driver call as a [`CallError`] with the driver's name and text for the code.
pub(crate) fn call_error(call: &'static str, e: DriverError) -> CallError {
    CallError {
        call,
        code: e.0 as u32,
        name: e
            .error_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{:?}", e.0)),
        message: e
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// Loads the driver and initializes it: absence of the library, of a device or of a working
/// driver each become their own error.
fn init_driver() -> Result<(), GpuError> {
    probe::driver().map_err(|line| {
        if line == probe::DRIVER_NOT_FOUND {
            GpuError::DriverNotFound
        } else {
            GpuError::Library(line)
        }
    })?;
    result::init().map_err(|e| {
        let err = call_error("cuInit", e);
        // No device, a stub or mismatched driver, a device in use: nothing to run on.
        if matches!(err.code, 3 | 34 | 36 | 46 | 100 | 803 | 804 | 999) {
            GpuError::NoDevice(err.to_string())
        } else {
            GpuError::Cuda(err)
        }
    })
}

/// The number of CUDA devices; an error when there is no driver or it cannot start.
pub fn device_count() -> Result<usize, GpuError> {
    init_driver()?;
    result::device::get_count()
        .map(|n| n.max(0) as usize)
        .map_err(|e| GpuError::Cuda(call_error("cuDeviceGetCount", e)))
}

/// One context and one stream on one device; see the module doc.
#[derive(Clone)]
pub struct Gpu {
    pub(crate) inner: Arc<GpuInner>,
}

pub(crate) struct GpuInner {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: sys::CUstream,
    pub(crate) info: DeviceInfo,
    /// Set by the first fault: the reason, repeated to every later caller.
    poisoned: Mutex<Option<String>>,
    /// The L2 flush buffer (device pointer, bytes), allocated on first use.
    pub(crate) flush: Mutex<Option<(u64, usize)>>,
}

// SAFETY: the raw stream belongs to the context, which the driver lets any thread use once
// bound; every use binds it first.
unsafe impl Send for GpuInner {}
unsafe impl Sync for GpuInner {}

impl Drop for GpuInner {
    fn drop(&mut self) {
        // Errors are ignored: after a fault every call fails, and nothing can be done.
        let _ = self.ctx.bind_to_thread();
        unsafe {
            if let Ok(Some((ptr, _))) = self.flush.lock().map(|g| *g) {
                let _ = sys::cuMemFree_v2(ptr);
            }
            let _ = sys::cuStreamDestroy_v2(self.stream);
        }
    }
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Gpu({} #{})",
            self.inner.info.name, self.inner.info.ordinal
        )
    }
}

/// Loads and initializes the driver and checks that device `ordinal` exists.
fn device_handle(ordinal: usize) -> Result<sys::CUdevice, GpuError> {
    init_driver()?;
    let count = result::device::get_count()
        .map_err(|e| GpuError::Cuda(call_error("cuDeviceGetCount", e)))?
        .max(0) as usize;
    if count == 0 {
        return Err(GpuError::NoDevice("the driver reports 0 devices".into()));
    }
    if ordinal >= count {
        return Err(GpuError::BadOrdinal { ordinal, count });
    }
    result::device::get(ordinal as i32).map_err(|e| GpuError::Cuda(call_error("cuDeviceGet", e)))
}

/// What device `ordinal` is, from the driver alone: no context is created (that is what
/// [`Gpu::new`] spends its time on), so a worker can describe its device at once and create
/// the context while the caller goes on.
pub fn probe_device(ordinal: usize) -> Result<DeviceInfo, GpuError> {
    let dev = device_handle(ordinal)?;
    query_info(dev, ordinal).map_err(GpuError::Cuda)
}

impl Gpu {
    /// Opens device `ordinal`: loads the driver, retains its primary context and creates a
    /// stream.
    pub fn new(ordinal: usize) -> Result<Gpu, GpuError> {
        let dev = device_handle(ordinal)?;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| GpuError::Cuda(call_error("cuDevicePrimaryCtxRetain", e)))?;
        let info = query_info(dev, ordinal).map_err(GpuError::Cuda)?;
        let stream = result::stream::create(result::stream::StreamKind::Default)
            .map_err(|e| GpuError::Cuda(call_error("cuStreamCreate", e)))?;
        Ok(Gpu {
            inner: Arc::new(GpuInner {
                ctx,
                stream,
                info,
                poisoned: Mutex::new(None),
                flush: Mutex::new(None),
            }),
        })
    }

    /// What this device is and can do.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// Free and total device memory, bytes.
    pub fn mem_info(&self) -> Result<(usize, usize), GpuError> {
        self.enter()?;
        self.check("cuMemGetInfo", result::mem_get_info())
    }

    /// Waits for everything queued on this handle's stream; a fault in a kernel launched
    /// earlier surfaces here (or at the next download or event read) as [`GpuError::Fault`].
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.enter()?;
        self.check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.inner.stream).result()
        })
    }

    /// True once a fault has made the context unusable.
    pub fn is_poisoned(&self) -> bool {
        self.inner
            .poisoned
            .lock()
            .map(|p| p.is_some())
            .unwrap_or(true)
    }

    /// Refuses work on a poisoned context, and binds the context to this thread.
    pub(crate) fn enter(&self) -> Result<(), GpuError> {
        if let Some(reason) = self.inner.poisoned.lock().ok().and_then(|p| p.clone()) {
            return Err(GpuError::Poisoned(reason));
        }
        self.inner
            .ctx
            .bind_to_thread()
            .map_err(|e| self.classify(call_error("cuCtxSetCurrent", e)))
    }

    /// Turns a driver result into ours: a sticky error poisons this handle.
    pub(crate) fn check<T>(
        &self,
        call: &'static str,
        r: Result<T, DriverError>,
    ) -> Result<T, GpuError> {
        r.map_err(|e| self.classify(call_error(call, e)))
    }

    /// A failed call as a [`GpuError`]: [`GpuError::Fault`] (and poisoning) for sticky codes,
    /// [`GpuError::Cuda`] otherwise.
    pub(crate) fn classify(&self, err: CallError) -> GpuError {
        if is_sticky(err.code) {
            if let Ok(mut p) = self.inner.poisoned.lock() {
                p.get_or_insert_with(|| err.to_string());
            }
            GpuError::Fault(err)
        } else {
            GpuError::Cuda(err)
        }
    }

    /// The raw stream, for the libraries (cuBLAS) that enqueue on it.
    pub(crate) fn stream(&self) -> sys::CUstream {
        self.inner.stream
    }
}

fn query_info(dev: sys::CUdevice, ordinal: usize) -> Result<DeviceInfo, CallError> {
    // SAFETY: `dev` is a device handle of the initialized driver; attribute queries need no
    // context.
    let attribute = |a: A| unsafe { result::device::get_attribute(dev, a) };
    let get = |a: A| -> Result<u32, CallError> {
        attribute(a)
            .map(|v| v.max(0) as u32)
            .map_err(|e| call_error("cuDeviceGetAttribute", e))
    };
    // Informational attributes: a driver that does not answer them reads as 0.
    let optional = |a: A| attribute(a).map(|v| v.max(0) as u32).unwrap_or(0);
    let name = result::device::get_name(dev).map_err(|e| call_error("cuDeviceGetName", e))?;
    // SAFETY: as above.
    let total =
        unsafe { result::device::total_mem(dev) }.map_err(|e| call_error("cuDeviceTotalMem", e))?;
    let mut driver_version = 0;
    unsafe { sys::cuDriverGetVersion(&mut driver_version).result() }
        .map_err(|e| call_error("cuDriverGetVersion", e))?;
    Ok(DeviceInfo {
        ordinal,
        name,
        cc: (
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        sm_count: get(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        warp_size: get(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        max_threads_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_threads_per_sm: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        max_blocks_per_sm: get(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
        regs_per_sm: get(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        regs_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)?,
        smem_per_sm: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
        smem_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        smem_per_block_optin: get(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        reserved_smem_per_block: get(A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)?,
        l2_bytes: get(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        sm_clock_khz: optional(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        mem_clock_khz: optional(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        mem_bus_width_bits: optional(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        total_mem_bytes: total as u64,
        driver_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h200_figures_are_consistent() {
        let d = DeviceInfo::h200();
        assert_eq!(d.max_warps_per_sm(), 64);
        let bw = d.peak_mem_bandwidth_gbs();
        assert!((4700.0..5000.0).contains(&bw), "{bw}");
        assert_eq!(d.driver_version_string(), "13.0");
        assert!(d.smem_per_block_optin + d.reserved_smem_per_block <= d.smem_per_sm);
    }
}
