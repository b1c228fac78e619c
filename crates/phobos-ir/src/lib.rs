//! The typed tile IR shared by the interpreter and the code generator, element types and
//! host tensors.
//!
//! **This crate holds data, not policy:** it never reports a user error (its input already
//! passed the checker) and never touches a GPU.

pub mod dtype;
pub mod eval;
pub mod host;
pub mod ir;
pub mod knobs;
pub mod npy;
pub mod print;
pub mod rng;
pub mod walk;

pub use dtype::DType;
pub use host::{relative_error, HostTensor};
pub use ir::*;
pub use print::print_kernel;
