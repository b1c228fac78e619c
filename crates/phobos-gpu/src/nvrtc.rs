//! CUDA C++ to PTX and CUBIN with NVRTC, in-process, without a GPU.
//!
//! [`compile`] takes the source, named header texts (the code generator's prelude is one, passed
//! as e.g. `phobos_prelude.cuh` and included by that name) and [`CompileOptions`]; it returns
//! the PTX, the CUBIN when asked for a real `sm_` target, NVRTC's log and the exact flags used.
//! With [`CompileOptions::ptxas_verbose`] (the default) the log of a CUBIN compile carries
//! ptxas's resource report, which [`crate::resources`] parses.
//!
//! NVRTC compiles distinct programs from several threads at once; [`compile_many`] runs a batch
//! on a thread pool (see the crate README for the measured scaling).

use crate::probe;
use cudarc::nvrtc::sys;
use rayon::prelude::*;
use std::ffi::{c_char, CString};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// A GPU target: compute capability plus whether it is the architecture-specific (`a`) variant
/// that enables `wgmma` and `setmaxnreg` on sm_90.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
    /// The `a` suffix: code for exactly this chip (sm_90a runs only on compute capability 9.0).
    pub specific: bool,
}

impl Arch {
    /// `sm_90a`: the H100/H200 with wgmma; the default.
    pub const SM_90A: Arch = Arch::new(9, 0, true);
    /// `sm_90`: Hopper without the architecture-specific instructions.
    pub const SM_90: Arch = Arch::new(9, 0, false);
    /// `sm_80`: the A100.
    pub const SM_80: Arch = Arch::new(8, 0, false);

    /// An architecture from its parts.
    pub const fn new(major: u32, minor: u32, specific: bool) -> Arch {
        Arch {
            major,
            minor,
            specific,
        }
    }

    /// Parses `sm_90a`, `sm_90`, `compute_90a`, `90a` or `9.0`.
    pub fn parse(s: &str) -> Option<Arch> {
        let s = s.trim();
        let s = s
            .strip_prefix("sm_")
            .or_else(|| s.strip_prefix("compute_"))
            .unwrap_or(s);
        let (digits, specific) = match s.strip_suffix('a') {
            Some(d) => (d, true),
            None => (s, false),
        };
        if let Some((ma, mi)) = digits.split_once('.') {
            return Some(Arch::new(ma.parse().ok()?, mi.parse().ok()?, specific));
        }
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (ma, mi) = digits.split_at(digits.len() - 1);
        Some(Arch::new(ma.parse().ok()?, mi.parse().ok()?, specific))
    }

    /// The best target for a device of this compute capability: the architecture-specific
    /// variant where one exists (9.0 and 10.x), so that generated code may use every
    /// instruction of the chip.
    pub fn for_device(cc: (u32, u32)) -> Arch {
        Arch::new(cc.0, cc.1, cc.0 == 9 || cc.0 == 10)
    }

    /// `sm_90a`: the real target NVRTC and ptxas produce machine code for.
    pub fn sm(self) -> String {
        format!("sm_{}", self.digits())
    }

    /// `compute_90a`: the virtual target (PTX only).
    pub fn compute(self) -> String {
        format!("compute_{}", self.digits())
    }

    fn digits(self) -> String {
        let suffix = if self.specific { "a" } else { "" };
        format!("{}{}{suffix}", self.major, self.minor)
    }
}

impl Default for Arch {
    fn default() -> Arch {
        Arch::SM_90A
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sm())
    }
}

/// A header the source may `#include "name"` without it existing on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The name the source includes, e.g. `phobos_prelude.cuh`.
    pub name: String,
    /// Its text, shared between the many variants compiled with it.
    pub source: Arc<str>,
}

impl Header {
    /// A named header text.
    pub fn new(name: impl Into<String>, source: impl Into<Arc<str>>) -> Header {
        Header {
            name: name.into(),
            source: source.into(),
        }
    }
}

/// Everything that determines an NVRTC compile besides the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// The target (default `sm_90a`).
    pub arch: Arch,
    /// In-memory headers, included by name.
    pub headers: Vec<Header>,
    /// Extra include folders (`-I`).
    pub include_dirs: Vec<PathBuf>,
    /// Adds the CUDA toolkit's include folder when one is found (see
    /// [`crate::probe::cuda_include_dir`]), for `cuda_fp16.h` and friends; default true.
    pub cuda_include: bool,
    /// `-D` definitions: `(name, Some(value))` is `-Dname=value`, `(name, None)` is `-Dname`.
    pub defines: Vec<(String, Option<String>)>,
    /// A register cap per thread (`--maxrregcount`).
    pub max_registers: Option<u32>,
    /// `-lineinfo`: source lines in the machine code, for profilers; default false.
    pub line_info: bool,
    /// `--use_fast_math`: approximate division, sqrt and transcendentals, flush to zero;
    /// default false (IEEE results).
    pub fast_math: bool,
    /// Produce a CUBIN for `arch` (`--gpu-architecture=sm_..`) besides the PTX; when false only
    /// PTX for `compute_..` is made and the driver assembles it at load. Default true.
    pub cubin: bool,
    /// Ask ptxas for its resource report (`--ptxas-options=-v`); it lands in the log of a CUBIN
    /// compile. Default true.
    pub ptxas_verbose: bool,
    /// Further flags, passed last, verbatim.
    pub extra_flags: Vec<String>,
    /// The file name NVRTC reports in diagnostics (default `phobos_kernel.cu`).
    pub program_name: String,
}

impl Default for CompileOptions {
    fn default() -> CompileOptions {
        CompileOptions {
            arch: Arch::SM_90A,
            headers: Vec::new(),
            include_dirs: Vec::new(),
            cuda_include: true,
            defines: Vec::new(),
            max_registers: None,
            line_info: false,
            fast_math: false,
            cubin: true,
            ptxas_verbose: true,
            extra_flags: Vec::new(),
            program_name: "phobos_kernel.cu".to_string(),
        }
    }
}

impl CompileOptions {
    /// Default options for one target.
    pub fn for_arch(arch: Arch) -> CompileOptions {
        CompileOptions {
            arch,
            ..CompileOptions::default()
        }
    }

    /// Adds an in-memory header (builder style).
    pub fn header(mut self, name: impl Into<String>, source: impl Into<Arc<str>>) -> Self {
        self.headers.push(Header::new(name, source));
        self
    }

    /// The NVRTC flags these options stand for, given the toolkit include folder to add (if
    /// any). Pure: this is what [`Compiled::flags`] records.
    pub fn flags_with(&self, cuda_include: Option<&std::path::Path>) -> Vec<String> {
        let mut flags = Vec::new();
        let target = if self.cubin {
            self.arch.sm()
        } else {
            self.arch.compute()
        };
        flags.push(format!("--gpu-architecture={target}"));
        if let Some(n) = self.max_registers {
            flags.push(format!("--maxrregcount={n}"));
        }
        if self.line_info {
            flags.push("-lineinfo".to_string());
        }
        if self.fast_math {
            flags.push("--use_fast_math".to_string());
        }
        if self.cubin && self.ptxas_verbose {
            flags.push("--ptxas-options=-v".to_string());
        }
        for dir in &self.include_dirs {
            flags.push(format!("--include-path={}", dir.display()));
        }
        if self.cuda_include {
            if let Some(dir) = cuda_include {
                flags.push(format!("--include-path={}", dir.display()));
            }
        }
        for (name, value) in &self.defines {
            flags.push(match value {
                Some(v) => format!("-D{name}={v}"),
                None => format!("-D{name}"),
            });
        }
        flags.extend(self.extra_flags.iter().cloned());
        flags
    }

    /// The NVRTC flags for this machine (the toolkit include folder found here, if any).
    pub fn flags(&self) -> Vec<String> {
        self.flags_with(probe::cuda_include_dir().as_deref())
    }
}

/// The output of a successful compile.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// PTX text (for the virtual target when `cubin` was off, else the real one).
    pub ptx: String,
    /// Machine code for `options.arch`, when `options.cubin` was set.
    pub cubin: Option<Vec<u8>>,
    /// NVRTC's log: warnings, and ptxas's resource report when asked for.
    pub log: String,
    /// The options as given.
    pub options: CompileOptions,
    /// The exact flags passed to NVRTC.
    pub flags: Vec<String>,
    /// `nvrtcVersion()` of the library that compiled it.
    pub nvrtc_version: (i32, i32),
    /// Wall time of the compile.
    pub elapsed: Duration,
}

/// Why a compile failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileErrorKind {
    /// libnvrtc could not be loaded; the string is the one line to show.
    NvrtcNotFound(String),
    /// The source (or a header) does not compile; the log says why.
    Compilation,
    /// Another NVRTC call failed (an unknown flag is `NVRTC_ERROR_INVALID_OPTION`).
    Api { call: &'static str, status: String },
    /// The input cannot be passed to NVRTC (a NUL byte in the source, a header or a flag).
    InvalidInput(String),
}

/// A failed compile, with everything needed to reproduce and explain it.
#[derive(Clone, Debug, Error)]
#[error("{}", self.summary())]
pub struct CompileError {
    pub kind: CompileErrorKind,
    /// NVRTC's full log (empty when NVRTC never ran).
    pub log: String,
    /// The options as given (boxed: they are large and errors travel far).
    pub options: Box<CompileOptions>,
    /// The exact flags passed (or that would have been passed) to NVRTC.
    pub flags: Vec<String>,
}

impl CompileError {
    /// One line: what failed and the first error of the log.
    pub fn summary(&self) -> String {
        match &self.kind {
            CompileErrorKind::NvrtcNotFound(line) => line.clone(),
            CompileErrorKind::InvalidInput(why) => format!("cannot compile: {why}"),
            CompileErrorKind::Compilation => match summarize_log(&self.log) {
                Some(first) => format!("compile error: {first}"),
                None => "compile error (NVRTC wrote no log)".to_string(),
            },
            CompileErrorKind::Api { call, status } => match summarize_log(&self.log) {
                Some(first) => format!("{call} failed: {status}: {first}"),
                None => format!("{call} failed: {status}"),
            },
        }
    }
}

/// The first error line of an NVRTC log, with a count of the others:
/// `k.cu(3): error: identifier "x" is undefined (and 1 more error)`. Falls back to the first
/// non-empty line when no line says `error`.
pub fn summarize_log(log: &str) -> Option<String> {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let is_error = |l: &&str| {
        (l.contains("error:") || l.contains("error :")) && !l.contains("errors detected")
    };
    let errors: Vec<&str> = lines.iter().copied().filter(is_error).collect();
    let first = errors.first().or(lines.first())?;
    Some(match errors.len() {
        0 | 1 => first.to_string(),
        2 => format!("{first} (and 1 more error)"),
        n => format!("{first} (and {} more errors)", n - 1),
    })
}

/// Compiles CUDA C++ to PTX (and CUBIN) with NVRTC. No GPU needed.
pub fn compile(source: &str, options: &CompileOptions) -> Result<Compiled, CompileError> {
    let flags = options.flags();
    let fail = |kind, log: String| CompileError {
        kind,
        log,
        options: Box::new(options.clone()),
        flags: flags.clone(),
    };
    let info = probe::nvrtc()
        .map_err(|line| fail(CompileErrorKind::NvrtcNotFound(line), String::new()))?;
    let c = |what: &str, s: &str| {
        CString::new(s).map_err(|_| {
            fail(
                CompileErrorKind::InvalidInput(format!("{what} contains a NUL byte")),
                String::new(),
            )
        })
    };
    let c_source = c("the source", source)?;
    let c_name = c("the program name", &options.program_name)?;
    let mut c_header_names = Vec::with_capacity(options.headers.len());
    let mut c_header_sources = Vec::with_capacity(options.headers.len());
    for h in &options.headers {
        c_header_names.push(c("a header name", &h.name)?);
        c_header_sources.push(c(&format!("header `{}`", h.name), &h.source)?);
    }
    let c_flags = flags
        .iter()
        .map(|f| c("a flag", f))
        .collect::<Result<Vec<_>, _>>()?;

    let start = Instant::now();
    let names: Vec<*const c_char> = c_header_names.iter().map(|s| s.as_ptr()).collect();
    let sources: Vec<*const c_char> = c_header_sources.iter().map(|s| s.as_ptr()).collect();
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: every pointer refers to a live CString for the duration of the call; NVRTC
    // copies the texts.
    let r = unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            c_source.as_ptr(),
            c_name.as_ptr(),
            names.len() as i32,
            if sources.is_empty() {
                std::ptr::null()
            } else {
                sources.as_ptr()
            },
            if names.is_empty() {
                std::ptr::null()
            } else {
                names.as_ptr()
            },
        )
    };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(fail(api("nvrtcCreateProgram", r), String::new()));
    }
    let program = Program(prog);
    let flag_ptrs: Vec<*const c_char> = c_flags.iter().map(|s| s.as_ptr()).collect();
    // SAFETY: a live program and live flag strings.
    let r =
        unsafe { sys::nvrtcCompileProgram(program.0, flag_ptrs.len() as i32, flag_ptrs.as_ptr()) };
    let log = program.log();
    match r {
        sys::nvrtcResult::NVRTC_SUCCESS => {}
        sys::nvrtcResult::NVRTC_ERROR_COMPILATION => {
            return Err(fail(CompileErrorKind::Compilation, log));
        }
        other => return Err(fail(api("nvrtcCompileProgram", other), log)),
    }
    let ptx_bytes = program
        .output(sys::nvrtcGetPTXSize, sys::nvrtcGetPTX)
        .map_err(|(call, r)| fail(api(call, r), log.clone()))?;
    let ptx = String::from_utf8_lossy(trim_nul(&ptx_bytes)).into_owned();
    let cubin = if options.cubin {
        let bytes = program
            .output(sys::nvrtcGetCUBINSize, sys::nvrtcGetCUBIN)
            .map_err(|(call, r)| fail(api(call, r), log.clone()))?;
        Some(bytes)
    } else {
        None
    };
    Ok(Compiled {
        ptx,
        cubin,
        log,
        options: options.clone(),
        flags,
        nvrtc_version: info.version,
        elapsed: start.elapsed(),
    })
}

/// Compiles a batch on a thread pool of `threads` threads (0: rayon's global pool, one thread
/// per core). Results come back in the order of `jobs`.
pub fn compile_many<S>(
    jobs: &[(S, CompileOptions)],
    threads: usize,
) -> Vec<Result<Compiled, CompileError>>
where
    S: AsRef<str> + Sync,
{
    let run = || {
        jobs.par_iter()
            .map(|(src, opts)| compile(src.as_ref(), opts))
            .collect::<Vec<_>>()
    };
    if threads == 0 {
        return run();
    }
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(run),
        // No pool (the system refused threads): compile one after another.
        Err(_) => jobs
            .iter()
            .map(|(src, opts)| compile(src.as_ref(), opts))
            .collect(),
    }
}

/// The architectures this NVRTC can target, e.g. `[75, 80, .., 90, 100, ..]` (compute
/// capability as major * 10 + minor).
pub fn supported_archs() -> Result<Vec<u32>, String> {
    probe::nvrtc()?;
    let mut n = 0;
    // SAFETY: out-parameter, then a buffer of the size NVRTC reported.
    let r = unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS || n < 0 {
        return Err(format!("nvrtcGetNumSupportedArchs failed: {r:?}"));
    }
    let mut archs = vec![0i32; n as usize];
    let r = unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("nvrtcGetSupportedArchs failed: {r:?}"));
    }
    Ok(archs.into_iter().map(|a| a as u32).collect())
}

/// The version of the NVRTC this process loaded, or the line saying it is missing.
pub fn nvrtc_version() -> Result<(i32, i32), String> {
    probe::nvrtc().map(|i| i.version)
}

fn api(call: &'static str, r: sys::nvrtcResult) -> CompileErrorKind {
    CompileErrorKind::Api {
        call,
        status: format!("{r:?}"),
    }
}

fn trim_nul(bytes: &[u8]) -> &[u8] {
    match bytes.iter().position(|&b| b == 0) {
        Some(end) => &bytes[..end],
        None => bytes,
    }
}

/// Owns an `nvrtcProgram` and destroys it on every path out of [`compile`].
struct Program(sys::nvrtcProgram);

type SizeFn = unsafe fn(sys::nvrtcProgram, *mut usize) -> sys::nvrtcResult;
type FillFn = unsafe fn(sys::nvrtcProgram, *mut c_char) -> sys::nvrtcResult;

impl Program {
    fn log(&self) -> String {
        match self.output(sys::nvrtcGetProgramLogSize, sys::nvrtcGetProgramLog) {
            Ok(bytes) => String::from_utf8_lossy(trim_nul(&bytes))
                .trim_end()
                .to_string(),
            Err((call, r)) => format!("({call} failed: {r:?})"),
        }
    }

    /// Reads one output (log, PTX, CUBIN) through its size and fill calls.
    fn output(
        &self,
        size: SizeFn,
        fill: FillFn,
    ) -> Result<Vec<u8>, (&'static str, sys::nvrtcResult)> {
        let mut n = 0usize;
        // SAFETY: a live program; the buffer has the size NVRTC reported.
        let r = unsafe { size(self.0, &mut n) };
        if r != sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(("nvrtcGet*Size", r));
        }
        let mut buf = vec![0u8; n];
        if n == 0 {
            return Ok(buf);
        }
        let r = unsafe { fill(self.0, buf.as_mut_ptr() as *mut c_char) };
        if r != sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(("nvrtcGet*", r));
        }
        Ok(buf)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: destroyed once, here; a failure leaks the program and nothing else.
        unsafe {
            let _ = sys::nvrtcDestroyProgram(&mut self.0);
        }
    }
}

#[cfg(test)]
#[path = "nvrtc_tests.rs"]
mod tests;
