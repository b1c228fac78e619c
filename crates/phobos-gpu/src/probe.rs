//! Finding the CUDA libraries before cudarc touches them.
//!
//! cudarc loads libcuda, libnvrtc and libcublas on first use and panics when it cannot; every
//! entry point of this crate calls one of these probes first, so that a missing library is one
//! typed error with one clear line. A probe also checks that every symbol this crate calls is
//! there (a too-old library would otherwise panic inside cudarc at the first call).
//!
//! Where a library is not on the loader's path, the probe looks in the usual toolkit folders
//! (`$PHOBOS_CUDA_LIB`, `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`, `/usr/local/cuda/lib64`,
//! `/usr/local/cuda/targets/x86_64-linux/lib`) and, when it finds the library there, loads it
//! by full path and keeps it loaded: the loader then resolves cudarc's later load by soname to
//! that same library.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The one line printed when the CUDA driver library cannot be loaded.
pub const DRIVER_NOT_FOUND: &str = "CUDA driver (libcuda.so.1) not found: this machine has no \
NVIDIA driver, or its library folder is not on LD_LIBRARY_PATH";

/// The one line printed when NVRTC cannot be loaded.
pub const NVRTC_NOT_FOUND: &str = "NVRTC (libnvrtc.so.13) not found: install the CUDA 13 \
toolkit or `pip install nvidia-cuda-nvrtc==13.0.*` and put its lib folder on LD_LIBRARY_PATH";

/// The one line printed when cuBLAS cannot be loaded.
pub const CUBLAS_NOT_FOUND: &str = "cuBLAS (libcublas.so.13) not found: install the CUDA 13 \
toolkit or `pip install nvidia-cublas==13.*` and put its lib folder on LD_LIBRARY_PATH";

/// The one line printed when cuBLASLt cannot be loaded.
pub const CUBLASLT_NOT_FOUND: &str = "cuBLASLt (libcublasLt.so.13) not found: install the CUDA \
13 toolkit or `pip install nvidia-cublas==13.*` and put its lib folder on LD_LIBRARY_PATH";

/// NVRTC symbols this crate calls.
const NVRTC_SYMBOLS: &[&str] = &[
    "nvrtcVersion",
    "nvrtcGetErrorString",
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcDestroyProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetNumSupportedArchs",
    "nvrtcGetSupportedArchs",
];

/// Driver symbols this crate (and the parts of cudarc it uses) call.
const DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamQuery",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemGetInfo_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemsetD8Async",
    "cuModuleLoadDataEx",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuLaunchKernel",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime_v2",
    "cuEventDestroy_v2",
];

/// cuBLAS symbols this crate calls.
const CUBLAS_SYMBOLS: &[&str] = &[
    "cublasCreate_v2",
    "cublasDestroy_v2",
    "cublasSetStream_v2",
    "cublasSetMathMode",
    "cublasGemmEx",
    "cublasGetStatusName",
    "cublasGetStatusString",
];

/// cuBLASLt symbols this crate calls.
const CUBLASLT_SYMBOLS: &[&str] = &[
    "cublasLtCreate",
    "cublasLtDestroy",
    "cublasLtMatmulDescCreate",
    "cublasLtMatmulDescDestroy",
    "cublasLtMatmulDescSetAttribute",
    "cublasLtMatrixLayoutCreate",
    "cublasLtMatrixLayoutDestroy",
    "cublasLtMatmulPreferenceCreate",
    "cublasLtMatmulPreferenceDestroy",
    "cublasLtMatmulPreferenceSetAttribute",
    "cublasLtMatmulAlgoGetHeuristic",
    "cublasLtMatmul",
    "cublasLtGetStatusName",
    "cublasLtGetStatusString",
];

/// What the NVRTC probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NvrtcInfo {
    /// `nvrtcVersion()`: (major, minor).
    pub version: (i32, i32),
}

/// Loads NVRTC (once per process) and checks it; `Err` holds the one line to show.
pub fn nvrtc() -> Result<NvrtcInfo, String> {
    static PROBE: OnceLock<Result<NvrtcInfo, String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            use cudarc::nvrtc::sys;
            // SAFETY: these only dlopen the library by name and look up symbols.
            let present = || unsafe { sys::is_culib_present() };
            load_library(
                present,
                "libnvrtc.so.13",
                &["libnvrtc-builtins.so.13.0"],
                NVRTC_NOT_FOUND,
            )?;
            let lib = unsafe { sys::culib() };
            check_symbols(lib, NVRTC_SYMBOLS, "libnvrtc")?;
            let (mut major, mut minor) = (0, 0);
            // SAFETY: plain out-parameters.
            let r = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
            if r != sys::nvrtcResult::NVRTC_SUCCESS {
                return Err(format!("nvrtcVersion failed: {r:?}"));
            }
            Ok(NvrtcInfo {
                version: (major, minor),
            })
        })
        .clone()
}

/// Loads the CUDA driver library (once per process) and checks it; `Err` holds the one line
/// to show.
pub fn driver() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            use cudarc::driver::sys;
            let present = || unsafe { sys::is_culib_present() };
            load_library(present, "libcuda.so.1", &[], DRIVER_NOT_FOUND)?;
            check_symbols(unsafe { sys::culib() }, DRIVER_SYMBOLS, "libcuda")
        })
        .clone()
}

/// Checks that the driver can encode TMA tensor maps (`cuTensorMapEncodeTiled`, CUDA 12.0 on),
/// after [`driver`]; `Err` holds the one line to show.
pub fn tensor_maps() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            driver()?;
            use cudarc::driver::sys;
            check_symbols(
                unsafe { sys::culib() },
                &["cuTensorMapEncodeTiled"],
                "libcuda",
            )
        })
        .clone()
}

/// Loads cuBLAS (once per process) and checks it.
pub fn cublas() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            use cudarc::cublas::sys;
            let present = || unsafe { sys::is_culib_present() };
            load_library(
                present,
                "libcublas.so.13",
                &["libcublasLt.so.13"],
                CUBLAS_NOT_FOUND,
            )?;
            check_symbols(unsafe { sys::culib() }, CUBLAS_SYMBOLS, "libcublas")
        })
        .clone()
}

/// Loads cuBLASLt (once per process) and checks it.
pub fn cublaslt() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            use cudarc::cublaslt::sys;
            let present = || unsafe { sys::is_culib_present() };
            load_library(present, "libcublasLt.so.13", &[], CUBLASLT_NOT_FOUND)?;
            check_symbols(unsafe { sys::culib() }, CUBLASLT_SYMBOLS, "libcublasLt")
        })
        .clone()
}

/// Makes `present()` true by loading `soname` from a toolkit folder when the loader's path
/// does not have it. The `companions` found beside it are loaded first: libraries the main one
/// opens or links by soname (NVRTC's builtins, cuBLAS's cuBLASLt), which the loader could not
/// find on its path either.
fn load_library(
    present: impl Fn() -> bool,
    soname: &str,
    companions: &[&str],
    missing: &str,
) -> Result<(), String> {
    if present() {
        return Ok(());
    }
    for dir in library_dirs() {
        let path = dir.join(soname);
        if !path.is_file() {
            continue;
        }
        for companion in companions {
            let path = dir.join(companion);
            if path.is_file() {
                // SAFETY: as below; a failure here surfaces when the main library is used.
                if let Ok(lib) = unsafe { libloading::Library::new(&path) } {
                    std::mem::forget(lib);
                }
            }
        }
        // SAFETY: loading a CUDA library runs only its initializers.
        if let Ok(lib) = unsafe { libloading::Library::new(&path) } {
            // Kept loaded for the life of the process, so that cudarc's load by soname
            // finds it.
            std::mem::forget(lib);
            if present() {
                return Ok(());
            }
        }
    }
    Err(missing.to_string())
}

fn check_symbols(lib: &libloading::Library, symbols: &[&str], what: &str) -> Result<(), String> {
    let missing: Vec<&str> = symbols
        .iter()
        .copied()
        // SAFETY: the symbol is only looked up, never called here.
        .filter(|s| unsafe { lib.get::<unsafe extern "C" fn()>(s.as_bytes()) }.is_err())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{what} is too old for this build (CUDA 13): missing {}",
            missing.join(", ")
        ))
    }
}

/// Toolkit library folders to try when the loader's path lacks a library.
fn library_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(list) = std::env::var_os("PHOBOS_CUDA_LIB") {
        dirs.extend(std::env::split_paths(&list));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(root) = std::env::var_os(var) {
            dirs.push(PathBuf::from(root).join("lib64"));
        }
    }
    dirs.push("/usr/local/cuda/lib64".into());
    dirs.push("/usr/local/cuda/targets/x86_64-linux/lib".into());
    dirs
}

/// The folder holding the CUDA toolkit headers (`cuda_fp16.h`, `cuda_bf16.h`, `cuda_fp8.h`),
/// which NVRTC 13.0 does not carry: `$PHOBOS_CUDA_INCLUDE`, `$CUDA_HOME/include`,
/// `$CUDA_PATH/include`, `/usr/local/cuda/include`, then `../include` beside each folder of
/// `LD_LIBRARY_PATH` (the layout of NVIDIA's PyPI wheels). `None` when none has `cuda_fp16.h`.
pub fn cuda_include_dir() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(dir) = std::env::var_os("PHOBOS_CUDA_INCLUDE") {
            candidates.push(dir.into());
        }
        for var in ["CUDA_HOME", "CUDA_PATH"] {
            if let Some(root) = std::env::var_os(var) {
                candidates.push(PathBuf::from(root).join("include"));
            }
        }
        candidates.push("/usr/local/cuda/include".into());
        candidates.push("/usr/local/cuda/targets/x86_64-linux/include".into());
        if let Some(list) = std::env::var_os("LD_LIBRARY_PATH") {
            for dir in std::env::split_paths(&list) {
                candidates.push(dir.join("..").join("include"));
            }
        }
        candidates
            .into_iter()
            .find(|d| d.join("cuda_fp16.h").is_file())
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_lines_name_the_library_and_the_fix() {
        for line in [NVRTC_NOT_FOUND, CUBLAS_NOT_FOUND, CUBLASLT_NOT_FOUND] {
            assert!(line.contains(".so.13) not found"), "{line}");
            assert!(line.contains("LD_LIBRARY_PATH"), "{line}");
            assert!(!line.contains('\n'));
        }
    }

    #[test]
    fn an_absent_library_is_an_error_not_a_panic() {
        let r = load_library(|| false, "libphobos-does-not-exist.so.1", &[], "gone");
        assert_eq!(r, Err("gone".to_string()));
    }
}
