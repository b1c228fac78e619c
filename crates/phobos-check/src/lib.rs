//! Semantic checks, the shape environment and lowering to the typed tile IR.
//!
//! **Every user error is born here** (or in the parser): a kernel that passes
//! [`instantiate`] at a point must compile and run correctly at that point. The code generator
//! never reports a user error.
//!
//! The pipeline and the API:
//!
//! - [`load`] parses a file and runs the kernel-level checks (attributes, the shape environment,
//!   type parameters, parameter types, duplicate kernels), giving a [`Module`] with one
//!   [`KernelInfo`] per kernel: what a host needs to know (names, dtypes, dims, the [`Space`]).
//! - A [`Variant`] picks a point, element types and memory orders (from the CLI strings with
//!   [`KernelInfo::variant`], or [`KernelInfo::default_variant`]).
//! - [`instantiate`] checks the body at that variant and lowers it to [`phobos_ir::Kernel`].
//! - [`check_module`] is what `phobos check` reports; [`eval_where`] evaluates `@where` for a
//!   problem (with [`phobos_ir::eval`], like the grid, `@flops` and `@bytes`).
//!
//! ```
//! use phobos_syntax::SourceFile;
//! let src = "@autotune(B in [64, 256])\nkernel scale(X: tensor<f32>[N]) {\n  \
//!            let i = ctx.block.x * B\n  X[i :+ B] = X[i :+ B] * 2.0\n}\n";
//! let module = phobos_check::load(SourceFile::new("k.ph", src)).unwrap();
//! let info = module.kernel(None).unwrap();
//! assert_eq!(info.space.size(), 3);
//! let variant = info.variant(Some("B=128"), None, None).unwrap();
//! let kernel = phobos_check::instantiate(&module, info, &variant).unwrap();
//! assert_eq!(kernel.point.get("B"), Some(128));
//! assert!(phobos_check::check_module(&module).is_empty());
//! ```

mod check;
pub mod codes;
pub mod cuda_cpp;
mod kernel;
mod knobs;
mod lower;
mod module;
pub mod space;
mod suggest;
mod variant;

pub use check::{
    check_module, check_variant, eval_where, instantiate, instantiate_with_warnings, outside_space,
    where_diagnostic, MAX_CHECKED_POINTS,
};
pub use kernel::{is_reserved, source_dtype, KNOWN_ATTRS, MAX_TENSOR_RANK};
pub use lower::{MAX_TILE_ELEMS, MAX_UNROLL};
pub use module::{load, DimInfo, Elem, KernelInfo, Module, ParamInfo, ParamInfoKind};
pub use space::{parse_pins, Name, PinError, Points, Space};
pub use variant::{Variant, VariantError};
