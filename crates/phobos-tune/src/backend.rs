//! The seams the engine is built around: small traits the front end, the compilers and the
//! devices implement, so each piece plugs in on its own.
//!
//! ```text
//!   main process                                   worker process
//!   Frontend: space, @where, instantiate, eval     Frontend (same source, re-read)
//!   Compiler: emit + compile (thread pool)  ──────▶ Device: load, run once, time
//!   Store, reporting                               Device (interpreter): the reference
//! ```

use crate::types::{Backend, DeviceInfo, Failure, Problem, PruneReason, Resources};
use crate::worker::LibrarySpec;
use phobos_check::Space;
use phobos_ir::{HostTensor, Kernel, Point};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The kernel being tuned, as the front end (parser and checker) sees it.
pub trait Frontend: Send + Sync {
    fn kernel_name(&self) -> &str;
    /// Hash of the source text and the kernel name: the store's kernel key.
    fn kernel_hash(&self) -> &str;
    /// The declared `@autotune` names and their choices.
    fn space(&self) -> &Space;
    /// The source text of the first `@where` that is false at this point for this problem.
    fn where_violation(&self, point: &Point, problem: &Problem) -> Result<Option<String>, Failure>;
    /// Whether a `@where` over the point's names alone is false, so that the point is outside
    /// the space whatever the problem: a search walks a product too large to search whole for
    /// the points inside ([`crate::space::MAX_WALKED_POINTS`]). Must be cheap next to
    /// [`Frontend::instantiate`]; the default keeps every point.
    fn outside_space(&self, _point: &Point, _problem: &Problem) -> bool {
        false
    }
    /// The kernel at this point, with the problem's element types and layouts bound. A point
    /// the checker rejects is a failure (the variant "does not compile").
    fn instantiate(&self, point: &Point, problem: &Problem) -> Result<Kernel, Failure>;
    /// The kernel of another source the checks compare with (`--reference`), if any: same
    /// parameters in the same order.
    fn reference(&self) -> Option<&dyn Frontend> {
        None
    }
}

/// Where a compiled variant lives for the worker to load it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// The binary (cubin or PTX) in the variant cache.
    pub path: PathBuf,
    /// The kernel's entry symbol.
    pub entry: String,
    /// Dynamic shared memory to request at launch.
    pub dynamic_smem_bytes: u64,
}

/// A variant ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Compiled {
    /// Equal hashes mean equal binaries: only one of them is timed.
    pub binary_hash: String,
    /// What the worker loads; `None` for the interpreter, which needs only the point.
    pub artifact: Option<Artifact>,
    /// Registers, spills and shared memory (occupancy is added by the engine).
    pub resources: Option<Resources>,
    pub from_cache: bool,
    pub compile_ms: f64,
    /// Why the cached binary could not be trusted, when it was damaged and compiled again.
    pub repaired: Option<String>,
}

/// How compiling one point ended.
#[derive(Clone, Debug, PartialEq)]
pub enum CompileResult {
    /// A hardware limit the emitter revealed (shared memory), before the compiler ran.
    Pruned(PruneReason),
    Failed(Failure),
    Ok(Compiled),
}

/// The environment variable naming a tag the compilers add to what the code generator
/// produces (a comment line in CUDA source, a line after the IR for the interpreter): it
/// changes every point's generated code without changing the generator, for tests of the
/// store's key. Unset or empty: no tag.
pub const GENERATOR_TAG_ENV: &str = "PHOBOS_GENERATOR_TAG";

/// The tag [`GENERATOR_TAG_ENV`] names, if any.
pub fn generator_tag() -> Option<String> {
    std::env::var(GENERATOR_TAG_ENV)
        .ok()
        .filter(|t| !t.is_empty())
}

/// Turns instantiated kernels into runnable variants; runs in the main process, on many
/// threads at once.
pub trait Compiler: Sync {
    fn backend(&self) -> Backend;
    /// `nvrtc 13.0` or `interp`: part of the store key.
    fn version(&self) -> String;
    /// Emits and compiles one variant for a device with these limits.
    fn compile(&self, kernel: &Kernel, device: &DeviceInfo) -> CompileResult;
    /// A hash of what the code generator produces for this point (the emitted source with
    /// its headers; the IR for the interpreter), `None` when it produces nothing. Stored with
    /// every result: a result is reused only while the generator still produces this code.
    fn codegen_hash(&self, kernel: &Kernel) -> Option<String>;
}

/// A kernel argument in parameter order.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    Tensor(HostTensor),
    Scalar(f64),
}

impl ArgValue {
    pub fn tensor(&self) -> Option<&HostTensor> {
        match self {
            ArgValue::Tensor(t) => Some(t),
            ArgValue::Scalar(_) => None,
        }
    }
}

/// A failed run on a device. `fatal` means the device context is unusable afterwards (a
/// fault): the worker reports it and exits so that a fresh one takes over.
#[derive(Clone, Debug, PartialEq)]
pub struct RunError {
    pub failure: Failure,
    pub fatal: bool,
}

impl RunError {
    /// A failure the device survives (the driver refused a launch).
    pub fn refused(log: impl Into<String>) -> RunError {
        RunError {
            failure: Failure::from_log(log),
            fatal: false,
        }
    }
}

/// Something that runs variants: the GPU, or the interpreter. Lives in the worker process.
pub trait Device {
    fn info(&self) -> DeviceInfo;
    /// Loads a variant. An error here is the driver refusing the binary.
    fn load(
        &mut self,
        kernel: &Kernel,
        artifact: Option<&Artifact>,
        problem: &Problem,
    ) -> Result<Box<dyn Loaded>, RunError>;

    /// The device's library routine for what `kernel` computes (cuBLAS for a GEMM, with the
    /// operands `spec` names), loaded for one problem; refused when the device has none or the
    /// library cannot do this case (element types, layouts, shapes).
    fn library(
        &mut self,
        kernel: &Kernel,
        spec: &LibrarySpec,
        problem: &Problem,
    ) -> Result<Box<dyn Loaded>, RunError> {
        let _ = (kernel, spec, problem);
        Err(RunError::refused(format!(
            "{} has no library routine to compare or time against",
            self.info().name
        )))
    }
}

/// How a device that can runs a sample of a launch's blocks ([`Loaded::run_sample`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleSpec {
    /// Seeds which blocks are picked.
    pub seed: u64,
    /// The time the sample may take, in milliseconds (the first block always runs).
    pub budget_ms: u64,
    /// At most this many random blocks besides the corners and edges.
    pub random_blocks: usize,
}

/// What a sampled run wrote and covered.
#[derive(Clone, Debug, PartialEq)]
pub struct SampledRun {
    /// By parameter (in order): which elements the sampled blocks wrote, one flag per element
    /// in row-major order; `None` for scalars.
    pub written: Vec<Option<Vec<bool>>>,
    pub coverage: crate::types::BlockCoverage,
}

/// A variant loaded on a device, for one problem.
pub trait Loaded {
    /// Runs once on these arguments and leaves the results in them.
    fn run(&mut self, args: &mut [ArgValue]) -> Result<(), RunError>;
    /// [`Loaded::run`] for checks whose inputs are the same whenever `key` is (a sampled
    /// check's kept inputs): a device may keep the tensors the kernel only reads resident
    /// across jobs, uploading from `args` only the first time and the tensors the kernel
    /// writes every time.
    fn run_kept(&mut self, key: &str, args: &mut [ArgValue]) -> Result<(), RunError> {
        let _ = key;
        self.run(args)
    }
    /// Makes these arguments resident for repeated timed launches.
    fn prepare(&mut self, args: &[ArgValue]) -> Result<(), RunError>;
    /// [`Loaded::prepare`] for timing inputs that are the same whenever `key` is (a problem's,
    /// made once per problem and kernel signature): a device may keep them resident across
    /// jobs and share them among every variant prepared with the same key, so that each
    /// point's timing job does not copy the problem's tensors again. Launches of one variant
    /// after another then find the outputs the previous ones wrote, as repeated launches of
    /// one variant already do.
    fn prepare_reused(&mut self, key: &str, args: &[ArgValue]) -> Result<(), RunError> {
        let _ = key;
        self.prepare(args)
    }
    /// One launch on the prepared arguments (after flushing the L2 cache, on a GPU), timed in
    /// milliseconds.
    fn launch_timed(&mut self) -> Result<f64, RunError>;

    /// After [`Loaded::prepare`]: for a launch in thread block clusters, how many of its
    /// clusters the device holds at once against how many it has; `None` without clusters
    /// (and on devices without them).
    fn clusters(&self) -> Option<phobos_gpu::ClusterResidency> {
        None
    }

    /// Runs a sample of the launch's blocks on these arguments (the interpreter can: blocks
    /// never communicate) and leaves their stores in them; `None` when the device runs whole
    /// launches only.
    fn run_sample(
        &mut self,
        args: &mut [ArgValue],
        sample: &SampleSpec,
    ) -> Result<Option<SampledRun>, RunError> {
        let _ = (args, sample);
        Ok(None)
    }

    /// What runs, for messages (`cuBLAS`, `cuBLASLt`); `None` for a compiled variant.
    fn describe(&self) -> Option<String> {
        None
    }
}
