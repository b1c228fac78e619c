//! The Phobos runtime: load a `.ph` kernel, launch it on the GPU or on the CPU interpreter with
//! the tuned configuration of the problem, tuning it on first use.
//!
//! ```
//! use phobos::{ArgValue, Backend, HostTensor, Policy, Runtime};
//! # let dir = tempfile::tempdir().unwrap();
//! # let db = dir.path().join("results.sqlite");
//! let rt = Runtime::new(Backend::interp())?.with_db(&db);
//! let module = rt.load_source(
//!     "scale.ph",
//!     "@autotune(BLOCK in [32, 64])\n\
//!      kernel scale(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  \
//!        let o = ctx.block.x * BLOCK\n  \
//!        Y[o :+ BLOCK] = X[o :+ BLOCK] * 2.0\n\
//!      }\n",
//! )?;
//! let mut scale = module.kernel("scale")?;
//! let x: Vec<f64> = (0..100).map(f64::from).collect();
//! let mut args = [
//!     ArgValue::Tensor(HostTensor::from_f64(phobos::DType::F32, &[100], &x)),
//!     ArgValue::Tensor(HostTensor::zeros(phobos::DType::F32, &[100])),
//! ];
//! let first = scale.launch(&mut args, Policy::TuneOnFirstUse)?;
//! assert_eq!(first.source, phobos::Source::Tuned);
//! assert_eq!(args[1].tensor().unwrap().data[99], 198.0);
//! // The second launch finds the winner in the database and the variant already compiled.
//! let again = scale.launch(&mut args, Policy::TuneOnFirstUse)?;
//! assert_eq!((again.source, again.compiled), (phobos::Source::Stored, false));
//! assert_eq!(again.point, first.point);
//! # Ok::<(), phobos::Error>(())
//! ```
//!
//! On the GPU (`Backend::cuda(0)`), tuning runs launches in worker processes that re-execute
//! the program: call [`worker_main`] first thing in `main`.
//!
//! Besides the API, this crate holds what `phobos` and `phobos-kbench` build on: the back ends
//! ([`backend`]), the checker behind the tuner's front end ([`frontend`]), the worker loop
//! ([`worker`]) and the rendering of diagnostics to text ([`render`]). It never prints.

mod args;
pub mod backend;
pub mod frontend;
pub mod recipe;
pub mod render;
mod runtime;
pub mod worker;

pub use args::Arg;
pub use phobos_gpu::{DeviceTensor, Gpu};
pub use phobos_ir::{DType, HostTensor, Point};
pub use phobos_tune::deploy::ConfigTable;
pub use phobos_tune::{ArgValue, Settings};
pub use runtime::{Backend, Error, Kernel, Launched, Module, Policy, Runtime, Source};
pub use worker::worker_main;
