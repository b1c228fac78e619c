//! The first half of the one compile → load → launch recipe: a point of a kernel, for a
//! problem, checked and compiled for a device. [`crate::Kernel::launch`], phobos-kbench's
//! `--check`, `--benchmark` and `--config` go through [`compile_point`]; `phobos run` compiles
//! the kernel its flags describe with the same back-end compiler (`CudaCompiler`, through the
//! variant cache), and its tests show it lands on the same cache entry. The second half is the
//! back end's `load` (`CudaDevice::load_variant` on the GPU) and `run` (`CudaLoaded::run_args`).

use crate::frontend::CheckFrontend;
use phobos_ir::{Kernel, Point};
use phobos_tune::{CompileResult, Compiled, Compiler, DeviceInfo, Frontend, Problem, PruneReason};

/// Why a point could not be compiled for a problem.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PointError {
    /// A `@where` of the kernel is false for this point and problem (`violates @where(..)
    /// with ..`).
    #[error("{0}")]
    Where(String),
    /// The checker refused the point with the problem's types and layouts (its first line).
    #[error("{0}")]
    Check(String),
    /// The problem does not fit the kernel (an unknown dim, a broken `@aligned` fact...).
    #[error("{0}")]
    Problem(String),
    /// The generated code does not compile (the compiler's first line).
    #[error("does not compile: {0}")]
    Compile(String),
    /// The variant cannot run on this device.
    #[error("cannot run on this device: {0}")]
    Pruned(PruneReason),
}

/// The kernel at `point` for `problem` (within its `@where`, checked, its facts valid for the
/// problem) and its compiled variant for `device`.
pub fn compile_point(
    frontend: &CheckFrontend,
    compiler: &dyn Compiler,
    device: &DeviceInfo,
    point: &Point,
    problem: &Problem,
) -> Result<(Kernel, Compiled), PointError> {
    if let Some(c) = frontend
        .where_violation(point, problem)
        .map_err(|f| PointError::Check(f.first_line))?
    {
        return Err(PointError::Where(c));
    }
    let kernel = frontend
        .instantiate(point, problem)
        .map_err(|f| PointError::Check(f.first_line))?;
    phobos_tune::facts::validate(&kernel, problem)
        .map_err(|e| PointError::Problem(e.to_string()))?;
    match compiler.compile(&kernel, device) {
        CompileResult::Ok(c) => Ok((kernel, c)),
        CompileResult::Failed(f) => Err(PointError::Compile(f.first_line)),
        CompileResult::Pruned(r) => Err(PointError::Pruned(r)),
    }
}
