//! The tuner's vocabulary: configurations, problems, outcomes, resources and timing statistics.
//!
//! Everything here is plain, serializable data: the engine produces it, the store keeps it, the
//! worker protocol carries it and the CLI renders it.

use phobos_ir::{DType, MemOrder, Point};
use serde::{Deserialize, Serialize};
use std::fmt;

#[path = "types_check.rs"]
mod check;
pub use check::{BlockCoverage, CheckReference, CheckScope, Checked, Mismatch};

/// One configuration: a value for every declared `@autotune` name, in declaration order.
pub type Config = Point;

/// Which machine runs the variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// CUDA C++ through NVRTC, timed on the GPU with device events.
    Cuda,
    /// The CPU interpreter standing in for the device, timed by the wall clock.
    Interp,
}

impl Backend {
    /// The spelling `--backend` accepts.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cuda => "cuda",
            Backend::Interp => "interp",
        }
    }

    /// Parses `cuda` or `interp`.
    pub fn parse(s: &str) -> Option<Backend> {
        match s {
            "cuda" => Some(Backend::Cuda),
            "interp" => Some(Backend::Interp),
            _ => None,
        }
    }
}

/// What the kernel runs on besides its points: runtime dims, element types, layouts, scalars.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    /// Runtime dims by name (`M=4096`).
    pub dims: Vec<(String, i64)>,
    /// Element-type parameters bound by the user (`TA=bf16`); the rest take their defaults.
    pub types: Vec<(String, DType)>,
    /// Memory orders of tensor parameters (`B=col`); the rest are row-major.
    pub layouts: Vec<(String, MemOrder)>,
    /// Scalar arguments by parameter name (`alpha=1.5`).
    pub args: Vec<(String, f64)>,
}

impl Problem {
    /// The value of a runtime dim.
    pub fn dim(&self, name: &str) -> Option<i64> {
        self.dims.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// The value of a scalar argument.
    pub fn arg(&self, name: &str) -> Option<f64> {
        self.args.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// The memory order of a tensor parameter (row-major unless given).
    pub fn layout(&self, tensor: &str) -> MemOrder {
        self.layouts
            .iter()
            .find(|(n, _)| n == tensor)
            .map_or(MemOrder::RowMajor, |&(_, o)| o)
    }

    /// `M=64,N=32` in the order given, the form `--dims` accepts.
    pub fn dims_text(&self) -> String {
        join_pairs(self.dims.iter().map(|(n, v)| (n.as_str(), v.to_string())))
    }

    /// `TA=f16,TC=f32`, the form `--types` accepts.
    pub fn types_text(&self) -> String {
        join_pairs(self.types.iter().map(|(n, t)| (n.as_str(), t.to_string())))
    }

    /// `B=col`, the form `--layout` accepts.
    pub fn layouts_text(&self) -> String {
        join_pairs(self.layouts.iter().map(|(n, o)| {
            let o = match o {
                MemOrder::RowMajor => "row",
                MemOrder::ColMajor => "col",
            };
            (n.as_str(), o.to_string())
        }))
    }

    /// A canonical text that identifies the problem in the store: every part sorted by name,
    /// so the order of flags does not matter.
    pub fn key(&self) -> String {
        let sorted = |mut v: Vec<(String, String)>| {
            v.sort();
            v.iter()
                .map(|(n, x)| format!("{n}={x}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let dims = sorted(
            self.dims
                .iter()
                .map(|(n, v)| (n.clone(), v.to_string()))
                .collect(),
        );
        let types = sorted(
            self.types
                .iter()
                .map(|(n, t)| (n.clone(), t.to_string()))
                .collect(),
        );
        let layouts = sorted(
            self.layouts
                .iter()
                .filter(|(_, o)| *o != MemOrder::RowMajor)
                .map(|(n, _)| (n.clone(), "col".to_string()))
                .collect(),
        );
        let args = sorted(
            self.args
                .iter()
                .map(|(n, v)| (n.clone(), v.to_string()))
                .collect(),
        );
        format!("dims[{dims}] types[{types}] layouts[{layouts}] args[{args}]")
    }
}

fn join_pairs<'a>(pairs: impl Iterator<Item = (&'a str, String)>) -> String {
    pairs
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A failure with its first line (for one-line reports) and the whole log (for the store).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub first_line: String,
    pub log: String,
}

impl Failure {
    /// Builds a failure from a log, taking its first non-empty line as the summary.
    pub fn from_log(log: impl Into<String>) -> Failure {
        let log = log.into();
        let first_line = log
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("(no message)")
            .to_string();
        Failure { first_line, log }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.first_line)
    }
}

/// Why a point was dropped before compiling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "rule")]
pub enum PruneReason {
    /// An `@where` constraint is false for this problem: which one, and with which dims
    /// (`violates @where(K % 64 == 0) with K=100`).
    Where { constraint: String },
    /// More threads per block than the device allows.
    Threads { threads: u32, limit: u32 },
    /// More shared memory per block than the device allows.
    SharedMemory { bytes: u64, limit: u64 },
    /// The large-tile heuristic: a tile extent far larger than the problem's extent
    /// (switched off by `--no-prune-large`).
    TileTooLarge {
        tensor: String,
        axis: usize,
        tile: i64,
        extent: i64,
    },
}

impl fmt::Display for PruneReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PruneReason::Where { constraint } => f.write_str(constraint),
            PruneReason::Threads { threads, limit } => {
                write!(f, "{threads} threads per block, over the limit of {limit}")
            }
            PruneReason::SharedMemory { bytes, limit } => {
                write!(
                    f,
                    "{bytes} bytes of shared memory, over the limit of {limit}"
                )
            }
            PruneReason::TileTooLarge {
                tensor,
                axis,
                tile,
                extent,
            } => write!(
                f,
                "tile of {tile} over {tensor} axis {axis} of extent {extent} \
                 (more than {}x larger; --no-prune-large keeps it)",
                crate::prune::LARGE_TILE_FACTOR
            ),
        }
    }
}

/// Timing statistics of one variant, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Relative spread: the interquartile range over the median.
    pub spread: f64,
    pub reps: u32,
    /// Timing stopped after a few repeats because the variant was far slower than the best.
    pub stopped_early: bool,
}

impl Stats {
    /// Statistics of a list of samples (at least one).
    pub fn from_samples(samples: &[f64], stopped_early: bool) -> Option<Stats> {
        if samples.is_empty() || samples.iter().any(|s| !s.is_finite()) {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let q = |p: f64| -> f64 {
            let x = p * (s.len() - 1) as f64;
            let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
            s[lo] + (s[hi] - s[lo]) * (x - lo as f64)
        };
        let median = q(0.5);
        let iqr = q(0.75) - q(0.25);
        Some(Stats {
            median_ms: median,
            min_ms: s[0],
            max_ms: s[s.len() - 1],
            spread: if median > 0.0 { iqr / median } else { 0.0 },
            reps: s.len() as u32,
            stopped_early,
        })
    }
}

/// How one point ended. Every point of the space gets exactly one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "detail")]
pub enum Outcome {
    /// Dropped before compiling.
    Pruned(PruneReason),
    /// The checker, the code generator or the compiler refused it.
    CompileFailed(Failure),
    /// The driver refused to load the binary or to launch it.
    LoadFailed(Failure),
    /// Its output disagreed with the reference: it can never win.
    Wrong(Mismatch),
    /// The worker died or hung while running it.
    Crashed(String),
    /// Same binary as an earlier point; timed once, as that point.
    Duplicate(Point),
    /// Compiled and not run (`--dry-run`).
    Compiled,
    /// Verified and timed.
    Timed(Stats),
}

impl Outcome {
    /// The one-word status shown to users and stored: ok, pruned, compile-failed, ...
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Pruned(_) => "pruned",
            Outcome::CompileFailed(_) => "compile-failed",
            Outcome::LoadFailed(_) => "load-failed",
            Outcome::Wrong(_) => "wrong",
            Outcome::Crashed(_) => "crashed",
            Outcome::Duplicate(_) => "duplicate",
            Outcome::Compiled => "compiled",
            Outcome::Timed(_) => "ok",
        }
    }

    /// The reason in one line, for everything but a timed point.
    pub fn reason(&self) -> Option<String> {
        match self {
            Outcome::Pruned(r) => Some(r.to_string()),
            Outcome::CompileFailed(f) | Outcome::LoadFailed(f) => Some(f.first_line.clone()),
            Outcome::Wrong(m) => Some(format!(
                "{}: relative error {:.3e} over tolerance {:.1e} against {}",
                m.tensor, m.error, m.tolerance, m.reference
            )),
            Outcome::Crashed(what) => Some(what.clone()),
            Outcome::Duplicate(p) => Some(format!("same binary as {}", p.to_pins())),
            Outcome::Compiled | Outcome::Timed(_) => None,
        }
    }

    pub fn stats(&self) -> Option<&Stats> {
        match self {
            Outcome::Timed(s) => Some(s),
            _ => None,
        }
    }
}

/// Starts the reason of a crash that happened again when it was retried: it is kept.
pub const CRASHED_AGAIN: &str = "again after a retry: ";

/// Starts the failure of a job whose worker could not create the GPU's context (after it had
/// described the device): nothing the point did.
pub const OPEN_FAILED: &str = "could not open the GPU";

/// Whether a crash may not recur: a signal from outside the worker (the OOM killer's or a
/// user's SIGKILL, SIGTERM, SIGINT, SIGHUP), a timeout, the device out of memory, or a worker
/// that could not start or open its GPU. Such a crash is retried once on the next run; any
/// other (a fault, a panic, SIGSEGV) is deterministic and its stored row is reused with its
/// reason.
pub fn crash_is_transient(what: &str) -> bool {
    const TRANSIENT: [&str; 10] = [
        OPEN_FAILED,
        "SIGKILL",
        "SIGTERM",
        "SIGINT",
        "SIGHUP",
        "no answer within",
        "OUT_OF_MEMORY",
        "out of memory",
        "could not restart the worker",
        "no worker",
    ];
    !what.starts_with(CRASHED_AGAIN) && TRANSIENT.iter().any(|t| what.contains(t))
}

/// What limits how many blocks fit on one multiprocessor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Limiter {
    /// Warps (threads) per multiprocessor.
    Warps,
    Registers,
    #[serde(rename = "smem")]
    SharedMemory,
    /// The hardware's cap on resident blocks.
    Blocks,
}

impl Limiter {
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "smem",
            Limiter::Blocks => "blocks",
        }
    }
}

/// Theoretical occupancy of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Occupancy {
    pub active_warps_per_sm: u32,
    pub max_warps_per_sm: u32,
    pub blocks_per_sm: u32,
    pub limiter: Limiter,
}

/// What one compiled variant uses (ptxas and the emitter), and the occupancy that follows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    pub registers: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    /// Static plus dynamic shared memory per block.
    pub smem_bytes: u64,
    pub threads: u32,
    pub occupancy: Option<Occupancy>,
    /// A clustered launch: how many of its clusters the device holds at once against how many
    /// it has (the worker asks the driver when it times the variant; `None` without clusters
    /// or before a timing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<phobos_gpu::ClusterResidency>,
}

impl Resources {
    /// Bytes spilled to local memory (stores plus loads).
    pub fn spill_bytes(&self) -> u32 {
        self.spill_store_bytes + self.spill_load_bytes
    }
}

/// The device a run measures on, as the worker reports it: the name and driver results are
/// stored under, and for a GPU the driver's description of it (`phobos_gpu::DeviceInfo`, the
/// one description of a GPU: pruning's limits and occupancy are read from it). No hardware
/// fact is kept twice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// What results are stored under: the GPU's name, `cpu-interpreter`, or a stand-in's.
    pub name: String,
    pub driver: String,
    /// What the driver says of the GPU; `None` for the interpreter.
    pub gpu: Option<Box<phobos_gpu::DeviceInfo>>,
}

impl DeviceInfo {
    /// The CPU interpreter as a "device": no hardware limits beyond the language's.
    pub fn interpreter() -> DeviceInfo {
        DeviceInfo {
            name: "cpu-interpreter".into(),
            driver: "none".into(),
            gpu: None,
        }
    }

    /// A GPU as its driver describes it.
    pub fn of_gpu(i: &phobos_gpu::DeviceInfo) -> DeviceInfo {
        DeviceInfo {
            name: i.name.clone(),
            driver: i.driver_version_string(),
            gpu: Some(Box::new(i.clone())),
        }
    }

    /// The NVRTC target, with the architecture-specific one where the chip has it (`sm_90a`
    /// on Hopper: wgmma and TMA exist only there); `cpu` for the interpreter.
    pub fn arch(&self) -> String {
        self.gpu.as_deref().map_or_else(
            || "cpu".into(),
            |g| phobos_gpu::nvrtc::Arch::for_device(g.cc).sm(),
        )
    }

    /// Multiprocessors (1 on the interpreter, which runs one block at a time).
    pub fn sm_count(&self) -> u32 {
        self.gpu.as_deref().map_or(1, |g| g.sm_count)
    }

    /// Threads one block may have (1024 on the interpreter, as on every GPU Phobos targets).
    pub fn max_threads_per_block(&self) -> u32 {
        self.gpu
            .as_deref()
            .map_or(1024, |g| g.max_threads_per_block)
    }

    /// The largest shared memory one block may use (the opt-in limit); no limit on the
    /// interpreter.
    pub fn max_smem_per_block(&self) -> u64 {
        self.gpu
            .as_deref()
            .map_or(u64::MAX, |g| g.smem_per_block_optin as u64)
    }
}

/// One point as it ended, with what is known about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    pub point: Point,
    pub outcome: Outcome,
    pub resources: Option<Resources>,
    /// `@flops` and `@bytes` for the problem, when declared.
    pub flops: Option<f64>,
    pub bytes: Option<f64>,
    /// Taken from the store instead of measured in this run.
    pub reused: bool,
}

impl PointResult {
    /// TFLOP/s at the median time, when the kernel declares its flops.
    pub fn tflops(&self) -> Option<f64> {
        let s = self.outcome.stats()?;
        Some(self.flops? / (s.median_ms * 1e-3) / 1e12)
    }

    /// GB/s at the median time, when the kernel declares its bytes.
    pub fn gbps(&self) -> Option<f64> {
        let s = self.outcome.stats()?;
        Some(self.bytes? / (s.median_ms * 1e-3) / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_median_and_spread() {
        let s = Stats::from_samples(&[4.0, 1.0, 2.0, 3.0, 5.0], false).unwrap();
        assert_eq!(s.median_ms, 3.0);
        assert_eq!(s.min_ms, 1.0);
        assert_eq!(s.max_ms, 5.0);
        assert!((s.spread - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.reps, 5);
        assert!(Stats::from_samples(&[], false).is_none());
        assert!(Stats::from_samples(&[1.0, f64::NAN], false).is_none());
    }

    #[test]
    fn problem_key_ignores_order() {
        let a = Problem {
            dims: vec![("M".into(), 64), ("N".into(), 32)],
            ..Default::default()
        };
        let b = Problem {
            dims: vec![("N".into(), 32), ("M".into(), 64)],
            layouts: vec![("A".into(), MemOrder::RowMajor)],
            ..Default::default()
        };
        assert_eq!(a.key(), b.key());
        assert_eq!(a.dims_text(), "M=64,N=32");
    }

    #[test]
    fn failure_takes_first_nonempty_line() {
        let f = Failure::from_log("\n  error: too big\nmore\n");
        assert_eq!(f.first_line, "error: too big");
    }

    #[test]
    fn outcome_serializes_with_status_tag() {
        let o = Outcome::Crashed("signal 6".into());
        let j = serde_json::to_value(&o).unwrap();
        assert_eq!(j["status"], "crashed");
        let back: Outcome = serde_json::from_value(j).unwrap();
        assert_eq!(back, o);
    }
}
