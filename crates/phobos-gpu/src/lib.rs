//! The only crate that touches the GPU: NVRTC, module load, launch, events, device query.
//!
//! - Offline (no GPU): [`nvrtc::compile`] turns CUDA C++ into PTX and CUBIN, [`resources`]
//!   reads registers, spills and shared memory from ptxas's report, [`mod@occupancy`] computes
//!   resident warps and their limiter, [`abi`] binds a problem to a kernel's launch ABI.
//! - On a GPU: [`Gpu`] (one context and stream), [`DeviceTensor`], [`Module`] and
//!   [`Function`], launches (with the TMA tensor maps and other [`LaunchFacts`] of generated
//!   code: [`Gpu::prepare_launch`]), event timing ([`Gpu::time_launches`], [`Stats`]) and cuBLAS
//!   reference GEMMs ([`Blas`]).
//!
//! Every CUDA library is probed before first use ([`probe`]): a missing library is a typed
//! error with one line to show, never a panic. Every CUDA call's result is checked
//! ([`GpuError`]); a fault poisons the [`Gpu`] and says the process must be restarted.
//! No type of cudarc appears in this API.

pub mod abi;
pub mod args;
pub mod blas;
mod blas_lt;
pub mod blas_plan;
pub mod device;
pub mod error;
pub mod launch;
pub mod launch_plan;
pub mod memory;
pub mod module;
pub mod nvrtc;
pub mod occupancy;
pub mod probe;
pub mod resources;
pub mod timing;
pub mod tma;

pub use abi::{bind_args, Arg, BindError, BoundArgs, TensorRef};
pub use args::KernelArgs;
pub use blas::Blas;
pub use device::{device_count, probe_device, DeviceInfo, Gpu};
pub use error::{CallError, GpuError};
pub use launch::LaunchConfig;
pub use launch_plan::{
    launch_grid, plan_launch, ClusterResidency, LaunchFacts, LaunchGrid, LaunchPlan,
    PreparedLaunch, SplitWorkspace, WorkspacePlan,
};
pub use memory::{DeviceBuffer, DeviceTensor};
pub use module::{FuncAttributes, Function, Module, ModuleImage};
pub use nvrtc::{
    compile, compile_many, Arch, CompileError, CompileErrorKind, CompileOptions, Compiled, Header,
};
pub use occupancy::{occupancy, Limiter, Occupancy, OccupancyInput};
pub use resources::{ResourceError, Resources};
pub use timing::{Event, Stats};
pub use tma::{
    encode_args, Extent, MapArrays, OuterArgs, OuterDim, TensorMap, TensorMapArgs, TensorMapParam,
    TmaError,
};
