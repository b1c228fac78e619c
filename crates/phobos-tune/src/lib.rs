//! phobos-kbench's engine: space, prune, compile, verify, time, pick, store.
//!
//! ```text
//! Frontend (check) ─▶ space + pins ─▶ prune ─▶ Compiler (pool) ─▶ dedupe
//!        ─▶ Executor: worker process { verify against the interpreter, time } ─▶ final round
//!        ─▶ Report (winner, speed-up) ; every outcome committed to the Store as it arrives
//! ```
//!
//! **This crate owns no GPU state in its main process** (launches happen in a worker process)
//! **and never prints** (the CLI renders its events and reports).

pub mod backend;
pub mod cache;
pub mod deploy;
pub mod engine;
pub mod facts;
pub mod hash;
pub mod irwalk;
pub mod occupancy;
pub mod prune;
pub mod reduce;
pub mod shard;
pub mod space;
pub mod store;
pub mod strategy;
pub mod timing;
pub mod types;
pub mod verify;
pub mod worker;
pub mod workflow;

pub use backend::{
    ArgValue, Artifact, CompileResult, Compiled, Compiler, Device, Frontend, Loaded, RunError,
    SampleSpec, SampledRun,
};
pub use engine::{tune, Event, PhaseTimes, Report, Settings, Summary, TuneError, Tuner, Winner};
pub use store::{Store, StoreError};
pub use types::*;
