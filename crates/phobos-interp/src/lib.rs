//! The CPU reference interpreter: the semantics of Phobos.
//!
//! **The interpreter defines what a kernel means; GPU output is judged against it.** It executes
//! a checked [`phobos_ir::Kernel`] on the CPU, one block at a time in grid order, the block's
//! threads in lockstep as vectors of per-thread values under an active mask. It is simple on
//! purpose and never optimized at the cost of clarity.
//!
//! ```
//! use phobos_interp::{Args, Config, Launch};
//! use phobos_ir::{DType, HostTensor};
//! use phobos_syntax::SourceFile;
//!
//! let src = "@launch(32)\nkernel scale(a: f32, X: tensor<f32>[N]) {\n  \
//!            let i = ctx.block.x * 64\n  X[i :+ 64] = a * X[i :+ 64]\n}\n";
//! let module = phobos_check::load(SourceFile::new("scale.ph", src)).unwrap();
//! let info = module.kernel(None).unwrap();
//! let kernel = phobos_check::instantiate(&module, info, &info.default_variant().unwrap()).unwrap();
//!
//! let x = HostTensor::from_f64(DType::F32, &[100], &vec![1.5; 100]);
//! let launch = Launch::new(&kernel, Args::new().push(2.0).push(x)).unwrap();
//! assert_eq!(launch.dims(), vec![("N".to_string(), 100)]);
//! assert_eq!(launch.grid(), [2, 1, 1]);
//! let out = launch.run(&Config::default()).unwrap();
//! assert_eq!(out.get("X").unwrap().data, vec![3.0; 100]);
//! ```
//!
//! Semantics decided here (beyond the IR's doc comments), all tested:
//! - Scalar arithmetic, casts and math are [`phobos_ir::eval`]'s, applied lane by lane and element
//!   by element: integers wrap, floats are computed in f64 and rounded to their type after every
//!   operation (f16/bf16/fp8 through f32, as the device computes them), integer division by zero
//!   and out-of-range shifts are errors, float-to-int casts saturate (NaN to 0), int-to-int casts
//!   wrap.
//! - A failure in a thread that is not active (outside its `if`) is not an error.
//! - Reductions: sums are exact (integers, then wrapped) or computed in f64 and rounded once to
//!   the element type; `max`/`min` ignore NaN unless every element is NaN (CUDA's `fmaxf`).
//! - `dot` starts each element at zero and accumulates the products in order of `k` in
//!   `DType::dot_acc` (f32 sums rounded every step; integer sums exact, then wrapped); with
//!   `tf32`, f32 inputs are rounded to TF32 (to nearest, ties away from zero) first.
//! - `for<unroll U>` runs exactly the iterations of the plain loop, for every U.
//! - Loads outside the tensor (negative indices included) read zero; such stores are skipped.
//!   When several threads store one element, the highest thread's value is kept.
//! - Atomics update in place in thread order, then block order; an element atomic's old value
//!   is what the element held before that thread's update (zero outside the tensor). The GPU
//!   may order the updates of one element differently: float sums agree up to that order.
//! - A launch stops with [`Error::StepBudget`] after [`Config::step_budget`] steps.
//! - Blocks never communicate: a host may run a chosen subset of the grid's blocks
//!   ([`Launch::run_blocks`], [`Launch::run_sample`]) and compare exactly the elements they
//!   stored ([`WriteMask`]).
//! - Values are f64 like [`phobos_ir::HostTensor`]'s, so i64 values are exact up to 2^53.

mod access;
mod bind;
mod error;
mod exec;
mod expr;
pub mod host;
mod sample;
mod tile;
mod value;

pub use bind::{Arg, Args, Launch, Output};
pub use error::Error;
pub use exec::{Config, DEFAULT_STEP_BUDGET};
pub use sample::{
    pick_blocks, BlockRole, BlocksOutput, Coverage, SampleConfig, SampledOutput, WriteMask,
    DEFAULT_SAMPLE_BUDGET,
};

/// Binds `args` to `kernel` and runs it: [`Launch::new`] then [`Launch::run`].
pub fn run(kernel: &phobos_ir::Kernel, args: Args, config: &Config) -> Result<Output, Error> {
    Launch::new(kernel, args)?.run(config)
}
