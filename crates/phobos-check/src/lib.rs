//! Semantic checks, the shape environment and lowering to the typed tile IR.
//!
//! **Every user error is born here** (or in the parser): a kernel that passes
//! [`instantiate`] at a point must compile and run correctly at that point.

pub mod space;

pub use space::{Name, PinError, Space};
