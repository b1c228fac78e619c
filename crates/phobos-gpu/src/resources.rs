//! What a compiled kernel costs per thread and per block, read without a GPU.
//!
//! ptxas reports registers, spills, stack frame, static shared memory and barriers for every
//! entry function when asked (`-v`). NVRTC passes `--ptxas-options=-v` on to its built-in ptxas
//! and puts the report in the program log of a CUBIN compile, so the in-process route costs
//! nothing extra ([`crate::CompileOptions::ptxas_verbose`], on by default). For a PTX-only
//! compile, [`of_compiled`] runs the standalone `ptxas` (`$PHOBOS_PTXAS`, else `ptxas` on
//! `PATH`) on the PTX for the same target and register cap.

use crate::nvrtc::Compiled;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use thiserror::Error;

/// Per-kernel resource usage from ptxas's report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Resources {
    /// Registers per thread.
    pub registers: u32,
    /// Bytes stored to local memory because registers ran out, per thread.
    pub spill_store_bytes: u32,
    /// Bytes loaded back from those spills, per thread.
    pub spill_load_bytes: u32,
    /// Local memory per thread: the kernel's stack frame, or the cumulative stack size
    /// including callees when ptxas reports a larger one.
    pub stack_frame_bytes: u32,
    /// Static shared memory per block (`__shared__` arrays; dynamic shared memory is given at
    /// launch and not included).
    pub static_smem_bytes: u32,
    /// Named barriers the kernel uses (`__syncthreads` is barrier 0, counted as 1).
    pub barriers: u32,
}

impl Resources {
    /// True when the kernel spills registers to local memory.
    pub fn spills(&self) -> bool {
        self.spill_store_bytes > 0 || self.spill_load_bytes > 0
    }
}

/// Why resources could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ResourceError {
    #[error(
        "ptxas not found: set PHOBOS_PTXAS or put the CUDA toolkit's bin folder on PATH \
         (`pip install nvidia-cuda-nvcc==13.0.*` ships one)"
    )]
    PtxasNotFound,
    #[error("ptxas failed ({status}): {first_line}")]
    Ptxas {
        status: String,
        first_line: String,
        /// Everything ptxas wrote.
        output: String,
    },
    #[error("the compile log holds no ptxas resource report")]
    NoReport,
    #[error("kernel `{kernel}` is not in the resource report (it has: {})", found.join(", "))]
    KernelNotFound { kernel: String, found: Vec<String> },
    #[error("{0}")]
    Io(String),
}

/// Parses a ptxas `-v` report (from NVRTC's log or from standalone ptxas) into the resources
/// of each entry function, by name as ptxas prints it. Non-entry device functions are left
/// out. Lines that are not part of the report (warnings, compiler notes) are ignored.
pub fn parse_report(report: &str) -> BTreeMap<String, Resources> {
    let mut all: BTreeMap<String, Resources> = BTreeMap::new();
    let mut entries: Vec<String> = Vec::new();
    let mut entry: Option<String> = None;
    let mut props_for: Option<String> = None;
    for raw in report.lines() {
        let line = raw.trim();
        // NVRTC prefixes continuation lines with "ptxas         ."
        let body = line
            .strip_prefix("ptxas")
            .map(|rest| rest.trim_start())
            .map(|rest| rest.strip_prefix('.').unwrap_or(rest))
            .map(|rest| {
                rest.strip_prefix("info")
                    .map(|r| r.trim_start())
                    .unwrap_or(rest)
            })
            .map(|rest| rest.strip_prefix(':').unwrap_or(rest).trim())
            .unwrap_or(line);
        if let Some(rest) = body.strip_prefix("Compiling entry function") {
            if let Some(name) = quoted(rest) {
                entries.push(name.clone());
                all.entry(name.clone()).or_default();
                entry = Some(name);
            }
        } else if let Some(rest) = body.strip_prefix("Function properties for") {
            props_for = Some(rest.trim().to_string());
        } else if body.contains("bytes stack frame") {
            if let Some(name) = &props_for {
                let r = all.entry(name.clone()).or_default();
                for item in body.split(',') {
                    let item = item.trim();
                    let n = leading_number(item);
                    if item.ends_with("bytes stack frame") {
                        r.stack_frame_bytes = r.stack_frame_bytes.max(n);
                    } else if item.ends_with("bytes spill stores") {
                        r.spill_store_bytes = n;
                    } else if item.ends_with("bytes spill loads") {
                        r.spill_load_bytes = n;
                    }
                }
            }
        } else if let Some(rest) = body.strip_prefix("Used ") {
            if let Some(name) = &entry {
                let r = all.entry(name.clone()).or_default();
                for item in rest.split(',') {
                    let item = item.trim();
                    if item.ends_with("registers") {
                        r.registers = leading_number(item);
                    } else if let Some(b) = item.strip_prefix("used ") {
                        if b.ends_with("barriers") || b.ends_with("barrier") {
                            r.barriers = leading_number(b);
                        }
                    } else if item.ends_with("bytes smem") {
                        r.static_smem_bytes = leading_number(item);
                    } else if item.ends_with("bytes cumulative stack size") {
                        r.stack_frame_bytes = r.stack_frame_bytes.max(leading_number(item));
                    }
                }
            }
        }
    }
    all.retain(|name, _| entries.contains(name));
    all
}

/// The text between the first pair of single quotes.
fn quoted(s: &str) -> Option<String> {
    let start = s.find('\'')? + 1;
    let len = s[start..].find('\'')?;
    Some(s[start..start + len].to_string())
}

fn leading_number(s: &str) -> u32 {
    s.split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or(0)
}

/// The resources of `kernel` in a compiled module: from NVRTC's log when it holds the report,
/// else by running ptxas on the PTX.
pub fn of_compiled(compiled: &Compiled, kernel: &str) -> Result<Resources, ResourceError> {
    let report = if compiled.log.contains("Compiling entry function") {
        compiled.log.clone()
    } else {
        run_ptxas(
            &compiled.ptx,
            &compiled.options.arch.sm(),
            compiled.options.max_registers,
        )?
    };
    pick(&parse_report(&report), kernel)
}

/// The resources of one kernel out of a parsed report.
pub fn pick(
    report: &BTreeMap<String, Resources>,
    kernel: &str,
) -> Result<Resources, ResourceError> {
    if report.is_empty() {
        return Err(ResourceError::NoReport);
    }
    report
        .get(kernel)
        .copied()
        .ok_or_else(|| ResourceError::KernelNotFound {
            kernel: kernel.to_string(),
            found: report.keys().cloned().collect(),
        })
}

/// The ptxas to run: `$PHOBOS_PTXAS`, else `ptxas` from `PATH`.
pub fn ptxas_path() -> PathBuf {
    std::env::var_os("PHOBOS_PTXAS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("ptxas"))
}

/// Runs `ptxas -v -arch=<sm> [-maxrregcount=N]` on PTX text and returns its report.
pub fn run_ptxas(ptx: &str, sm: &str, max_registers: Option<u32>) -> Result<String, ResourceError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "phobos-{}-{}.ptx",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, ptx)
        .map_err(|e| ResourceError::Io(format!("{}: {e}", path.display())))?;
    let mut cmd = Command::new(ptxas_path());
    cmd.arg("-v").arg(format!("-arch={sm}"));
    if let Some(n) = max_registers {
        cmd.arg(format!("-maxrregcount={n}"));
    }
    cmd.arg(&path).arg("-o").arg("/dev/null");
    let out = cmd.output();
    let _ = std::fs::remove_file(&path);
    let out = match out {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ResourceError::PtxasNotFound)
        }
        Err(e) => return Err(ResourceError::Io(format!("running ptxas: {e}"))),
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        let first_line = text
            .lines()
            .find(|l| l.contains("error") || l.contains("fatal"))
            .or_else(|| text.lines().next())
            .unwrap_or("")
            .trim()
            .to_string();
        return Err(ResourceError::Ptxas {
            status: out.status.to_string(),
            first_line,
            output: text,
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NVRTC_SM90A: &str = include_str!("fixtures/nvrtc_sm90a.txt");
    const NVRTC_SM80: &str = include_str!("fixtures/nvrtc_sm80.txt");
    const PTXAS_SM90A: &str = include_str!("fixtures/ptxas_sm90a.txt");
    const PTXAS_MAXREG: &str = include_str!("fixtures/ptxas_sm90a_maxreg32.txt");

    fn r(regs: u32, st: u32, ld: u32, stack: u32, smem: u32, bars: u32) -> Resources {
        Resources {
            registers: regs,
            spill_store_bytes: st,
            spill_load_bytes: ld,
            stack_frame_bytes: stack,
            static_smem_bytes: smem,
            barriers: bars,
        }
    }

    #[test]
    fn nvrtc_log_sm90a() {
        let rep = parse_report(NVRTC_SM90A);
        assert_eq!(
            rep.keys().collect::<Vec<_>>(),
            ["named_barriers", "spill", "tiled", "uses_const"]
        );
        assert_eq!(rep["spill"], r(64, 1232, 1236, 544, 0, 0));
        assert_eq!(rep["tiled"], r(20, 0, 0, 0, 6272, 1));
        assert_eq!(rep["named_barriers"], r(10, 0, 0, 0, 0, 4));
        assert_eq!(rep["uses_const"], r(10, 0, 0, 0, 0, 0));
        assert!(rep["spill"].spills());
        assert!(!rep["tiled"].spills());
    }

    #[test]
    fn nvrtc_log_sm80_with_cmem() {
        let rep = parse_report(NVRTC_SM80);
        assert_eq!(rep["spill"], r(64, 1240, 1240, 560, 0, 0));
        assert_eq!(rep["tiled"], r(18, 0, 0, 0, 6272, 1));
        assert_eq!(rep["uses_const"], r(8, 0, 0, 0, 0, 0));
    }

    #[test]
    fn standalone_ptxas_matches_the_in_process_report() {
        assert_eq!(parse_report(PTXAS_SM90A), parse_report(NVRTC_SM90A));
        // The warnings and register-limit notes before the report are skipped.
        assert_eq!(parse_report(PTXAS_MAXREG), parse_report(NVRTC_SM90A));
    }

    #[test]
    fn device_functions_do_not_overwrite_entries() {
        let rep = parse_report(NVRTC_SM90A);
        assert!(!rep.contains_key("_Z6helperPKfi"));
    }

    #[test]
    fn older_used_line_without_barriers() {
        let text = "ptxas info    : Compiling entry function 'k' for 'sm_70'\n\
                    ptxas info    : Function properties for k\n\
                    \x20   16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
                    ptxas info    : Used 32 registers, 1024 bytes smem, 352 bytes cmem[0]\n";
        assert_eq!(parse_report(text)["k"], r(32, 8, 4, 16, 1024, 0));
    }

    #[test]
    fn pick_says_which_kernels_exist() {
        let rep = parse_report(NVRTC_SM90A);
        assert_eq!(pick(&rep, "tiled").unwrap().registers, 20);
        let e = pick(&rep, "nope").unwrap_err();
        assert_eq!(
            e.to_string(),
            "kernel `nope` is not in the resource report (it has: named_barriers, spill, tiled, uses_const)"
        );
        assert_eq!(pick(&BTreeMap::new(), "k"), Err(ResourceError::NoReport));
    }
}
