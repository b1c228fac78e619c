//! Isolation: timing and verification launches run in a worker process, fed jobs and returning
//! results as JSON lines over pipes.

pub mod lanes;
pub mod pool;
pub mod protocol;
pub mod serve;

pub use lanes::{LaneDone, LaneJob, MakeExecutor, WorkerPool};
pub use pool::{Crash, Executor, InProcess, WorkerError, WorkerProcess};
pub use protocol::{
    JobFailure, LibrarySpec, ReferenceSource, ReferenceSpec, Reply, Request, Setup, VariantSpec,
};
pub use serve::{handle, serve, WorkerState, ABORT_HOOK, CORRUPT_HOOK, HANG_HOOK};
