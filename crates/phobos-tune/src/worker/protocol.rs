//! The worker protocol: one JSON object per line over the worker's stdin (requests) and stdout
//! (replies). The main process sends `Setup` once per worker, then one job at a time and waits
//! for its reply; `Log` replies may come at any time. Lines that are not replies (a library
//! printing to stdout) are treated as log text, never as a protocol error.

use crate::backend::{Artifact, SampleSpec};
use crate::timing::{FinalSettings, TimeSettings};
use crate::types::{Backend, Checked, DeviceInfo, Failure, Mismatch, Problem, Stats};
use phobos_ir::Point;
use serde::{Deserialize, Serialize};

/// What a worker needs to rebuild the kernel on its side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    pub source_name: String,
    pub source_text: String,
    pub kernel: String,
    pub backend: Backend,
    /// Which GPU (ordinal) the worker drives.
    pub gpu: u32,
    /// The kernel the checks compare with (`--reference FILE[:NAME]`), when not the kernel's own
    /// points ([`ReferenceSpec::Kernel`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<ReferenceSource>,
}

/// A kernel of another source with the same parameters, the reference of every check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReferenceSource {
    pub source_name: String,
    pub source_text: String,
    pub kernel: String,
}

/// One variant to run: its point and, on a GPU, its binary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantSpec {
    pub point: Point,
    pub artifact: Option<Artifact>,
}

/// A library routine that computes what the kernel computes (cuBLAS for a GEMM): a reference
/// for checks and a baseline for timing. The device decides whether it has one
/// ([`crate::backend::Device::library`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LibrarySpec {
    /// A point at which the kernel instantiates for the problem: it fixes the parameters'
    /// element types, shapes and memory orders.
    pub point: Point,
    /// The tensor parameter playing `A` of `C = A @ B`.
    pub a: String,
    /// The tensor parameter playing `B`.
    pub b: String,
    /// The tensor parameter playing `C`, the output.
    pub c: String,
}

/// What a variant's output is compared against.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceSpec {
    /// The CPU interpreter at this point (the semantics).
    Interp { point: Point },
    /// The CPU interpreter at this point on a sample of the grid's blocks only, compared on the
    /// elements they wrote: for problems too large to interpret whole, of kernels whose blocks
    /// are independent (`phobos_ir::walk::blocks_independent`).
    InterpSample { point: Point, sample: SampleSpec },
    /// A variant already verified on this device.
    Variant(VariantSpec),
    /// The device's library routine (cuBLAS on a GPU) on the same inputs.
    Library(LibrarySpec),
    /// The reference kernel of the worker's setup ([`Setup::reference`]) at this point: run by
    /// the interpreter when the spec has no binary, else loaded on the device.
    Kernel(VariantSpec),
}

/// A request from the main process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    Setup(Setup),
    /// Run the variant once on fresh random inputs with poisoned outputs and compare.
    Verify {
        id: u64,
        variant: VariantSpec,
        problem: Problem,
        reference: ReferenceSpec,
        seed: u64,
    },
    /// Time the variant; `best_ms` enables the early stop.
    Time {
        id: u64,
        variant: VariantSpec,
        problem: Problem,
        settings: TimeSettings,
        best_ms: Option<f64>,
        seed: u64,
    },
    /// The interleaved final round among the leaders.
    Interleave {
        id: u64,
        variants: Vec<VariantSpec>,
        problem: Problem,
        settings: FinalSettings,
        seed: u64,
    },
    /// Time the device's library routine for the problem (the cuBLAS column of a benchmark,
    /// the measured peak); answered with `Timed`.
    TimeLibrary {
        id: u64,
        library: LibrarySpec,
        problem: Problem,
        settings: TimeSettings,
        seed: u64,
    },
    Quit,
}

impl Request {
    /// The job id, for requests that are jobs.
    pub fn id(&self) -> Option<u64> {
        match self {
            Request::Verify { id, .. }
            | Request::Time { id, .. }
            | Request::Interleave { id, .. }
            | Request::TimeLibrary { id, .. } => Some(*id),
            Request::Setup(_) | Request::Quit => None,
        }
    }

    /// The points the job runs.
    pub fn points(&self) -> Vec<&Point> {
        match self {
            Request::Verify { variant, .. } | Request::Time { variant, .. } => vec![&variant.point],
            Request::Interleave { variants, .. } => variants.iter().map(|v| &v.point).collect(),
            Request::TimeLibrary { .. } | Request::Setup(_) | Request::Quit => Vec::new(),
        }
    }
}

/// How a job failed without killing the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobFailure {
    /// The driver refused to load the binary or to launch it.
    Load(Failure),
    /// A fault: the worker exits after this reply and must be replaced.
    Fatal(Failure),
    /// The worker could not set up (bad source, no device): not the variant's fault.
    Setup(Failure),
}

/// A reply from the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Ready {
        device: DeviceInfo,
    },
    Verified {
        id: u64,
        mismatch: Option<Mismatch>,
        /// The largest relative error over the outputs compared (also when within tolerance).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_error: Option<f64>,
        /// What was compared.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checked: Option<Checked>,
    },
    Timed {
        id: u64,
        stats: Stats,
        /// A clustered variant's clusters resident at once against launched
        /// ([`crate::backend::Loaded::clusters`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clusters: Option<phobos_gpu::ClusterResidency>,
    },
    Interleaved {
        id: u64,
        stats: Vec<Stats>,
    },
    Failed {
        id: Option<u64>,
        /// For `Interleave`: which variant failed.
        index: Option<usize>,
        failure: JobFailure,
    },
    Log {
        message: String,
    },
}

/// Encodes a message as one line (with its newline).
pub fn encode<T: Serialize>(msg: &T) -> String {
    let mut s = serde_json::to_string(msg).expect("protocol messages serialize");
    s.push('\n');
    s
}

/// Decodes one line; `None` when it is not a message of this protocol. Text some library
/// printed without a newline may precede a message on its line: the message is then found at
/// its opening brace.
pub fn decode<T: for<'de> Deserialize<'de>>(line: &str) -> Option<T> {
    let line = line.trim_end();
    serde_json::from_str(line).ok().or_else(|| {
        let start = line.find("{\"")?;
        serde_json::from_str(&line[start..]).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_lines() {
        let r = Request::Time {
            id: 3,
            variant: VariantSpec {
                point: Point(vec![("U".into(), 4)]),
                artifact: None,
            },
            problem: Problem::default(),
            settings: TimeSettings::default(),
            best_ms: Some(1.5),
            seed: 9,
        };
        let line = encode(&r);
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        assert_eq!(decode::<Request>(&line), Some(r));
        assert_eq!(decode::<Reply>("running 1 test"), None);
        let log = Reply::Log {
            message: "x".into(),
        };
        assert_eq!(
            decode::<Reply>(&format!("test worker ... {}", encode(&log))),
            Some(log)
        );
    }
}
