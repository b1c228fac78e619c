//! The error model of the GPU runtime: every CUDA call's result is checked and turned into a
//! typed error that says which call failed, with the driver's name and message for the code.
//!
//! A *fault* (illegal address, misaligned access, trap, timeout, ...) is sticky: the driver
//! refuses every later call in that context, so the process that owns it must be restarted.
//! [`GpuError::Fault`] says so, and the [`crate::Gpu`] that saw it answers every later call with
//! [`GpuError::Poisoned`] instead of touching the dead context.

use crate::abi::BindError;
use crate::probe::DRIVER_NOT_FOUND;
use std::fmt;
use thiserror::Error;

/// A failed CUDA driver, cuBLAS or NVRTC call: which call, the numeric code and the library's
/// name and description of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallError {
    /// The API function that failed, e.g. `cuLaunchKernel`.
    pub call: &'static str,
    /// The numeric result code (`CUresult`, `cublasStatus_t`, ...).
    pub code: u32,
    /// The symbolic name of the code, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
    pub name: String,
    /// The library's description of the code.
    pub message: String,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {} ({})", self.call, self.name, self.code)?;
        if !self.message.is_empty() && self.message != self.name {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

/// Everything that can go wrong on the GPU side, one variant per way the caller must react.
#[derive(Debug, Error)]
pub enum GpuError {
    /// libcuda could not be loaded (no driver on this machine).
    #[error("{DRIVER_NOT_FOUND}")]
    DriverNotFound,
    /// A CUDA library is present but unusable (too old: symbols missing), or cuBLAS is absent;
    /// the string is the one line to show.
    #[error("{0}")]
    Library(String),
    /// The driver loaded but reports no usable device (`cuInit` or the device count said so).
    #[error("no CUDA device available: {0}")]
    NoDevice(String),
    /// A device ordinal past the last device.
    #[error("CUDA device {ordinal} does not exist: this machine has {count} device(s)")]
    BadOrdinal { ordinal: usize, count: usize },
    /// A CUDA call failed; the context is still usable.
    #[error("{0}")]
    Cuda(CallError),
    /// A kernel faulted (or the device failed): the context is unusable from now on.
    #[error(
        "GPU fault: {0}; the CUDA context is now unusable, every later call in this process \
         fails: restart the process"
    )]
    Fault(CallError),
    /// A call on a context that already saw a fault; nothing was sent to the driver.
    #[error("the CUDA context is unusable after an earlier fault ({0}): restart the process")]
    Poisoned(String),
    /// The driver refused to launch a kernel with this configuration (too many threads, too
    /// much shared memory, too many registers for the block); the context is still usable.
    #[error(
        "launch of `{kernel}` rejected (grid {grid:?}, block {block}, {dyn_smem} bytes dynamic \
         shared memory): {error}"
    )]
    LaunchRejected {
        kernel: String,
        grid: [u32; 3],
        block: u32,
        dyn_smem: u32,
        error: CallError,
    },
    /// The driver refused a module (bad image, wrong architecture, unresolved symbol).
    #[error("loading the module failed: {error}{}", first_line_suffix(log))]
    ModuleLoad {
        error: CallError,
        /// The JIT error log followed by its info log, as the driver wrote them.
        log: String,
    },
    /// The module holds no function of that name.
    #[error("no kernel named `{name}` in the module (is it declared extern \"C\"?)")]
    NoSuchFunction { name: String },
    /// The launch arguments do not fit the kernel's signature.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// A cuBLAS or cuBLASLt call failed (`CUBLAS_STATUS_NOT_SUPPORTED` for a type or layout
    /// combination the library does not offer).
    #[error("{0}")]
    Blas(CallError),
    /// A request this crate refuses before touching the driver (sizes that do not match, ...).
    #[error("{0}")]
    Invalid(String),
}

/// A C string a library returned (a status name or message); empty for null.
pub(crate) fn c_text(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // Status names and messages are static NUL-terminated strings of the library.
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    }
}

fn first_line_suffix(log: &str) -> String {
    match log.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => format!(" ({line})"),
        None => String::new(),
    }
}

impl GpuError {
    /// True when the CUDA context that produced this error can no longer be used.
    pub fn is_fatal(&self) -> bool {
        matches!(self, GpuError::Fault(_) | GpuError::Poisoned(_))
    }
}

/// True for the driver result codes after which a context is unusable ("sticky" errors): the
/// kernel faulted, trapped or timed out, or the device itself failed.
pub fn is_sticky(code: u32) -> bool {
    matches!(
        code,
        214 // CUDA_ERROR_ECC_UNCORRECTABLE
            | 220 // CUDA_ERROR_NVLINK_UNCORRECTABLE
            | 226 // CUDA_ERROR_CONTAINED
            | 700 // CUDA_ERROR_ILLEGAL_ADDRESS
            | 702 // CUDA_ERROR_LAUNCH_TIMEOUT
            | 709 // CUDA_ERROR_CONTEXT_IS_DESTROYED
            | 710 // CUDA_ERROR_ASSERT
            | 714 // CUDA_ERROR_HARDWARE_STACK_ERROR
            | 715 // CUDA_ERROR_ILLEGAL_INSTRUCTION
            | 716 // CUDA_ERROR_MISALIGNED_ADDRESS
            | 717 // CUDA_ERROR_INVALID_ADDRESS_SPACE
            | 718 // CUDA_ERROR_INVALID_PC
            | 719 // CUDA_ERROR_LAUNCH_FAILED
            | 999 // CUDA_ERROR_UNKNOWN
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(code: u32) -> CallError {
        CallError {
            call: "cuStreamSynchronize",
            code,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            message: "an illegal memory access was encountered".into(),
        }
    }

    #[test]
    fn faults_are_sticky_and_config_errors_are_not() {
        for code in [700, 716, 719, 702, 710] {
            assert!(is_sticky(code), "{code}");
        }
        // invalid value, out of resources, not ready, out of memory
        for code in [1, 701, 600, 2, 0] {
            assert!(!is_sticky(code), "{code}");
        }
    }

    #[test]
    fn fault_message_says_the_context_is_unusable() {
        let e = GpuError::Fault(call(700));
        let text = e.to_string();
        assert!(text.contains("cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)"));
        assert!(text.contains("unusable"), "{text}");
        assert!(e.is_fatal());
        assert!(!GpuError::Cuda(call(1)).is_fatal());
    }

    #[test]
    fn module_load_error_shows_the_first_log_line() {
        let e = GpuError::ModuleLoad {
            error: call(218),
            log: "\nptxas fatal   : Unresolved extern function 'f'\nmore".into(),
        };
        assert!(e
            .to_string()
            .ends_with("(ptxas fatal   : Unresolved extern function 'f')"));
    }
}
