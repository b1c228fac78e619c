//! Command-line arguments of `phobos`, shared by its subcommands.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "phobos", version, about = "The Phobos tile kernel compiler")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check kernels and print diagnostics (exit 0 clean, 1 on errors).
    Check(CheckArgs),
    /// Print the shape environment (search space) of kernels.
    Space(SpaceArgs),
    /// Run a kernel on the GPU, or on the CPU interpreter with --interpret.
    Run(RunArgs),
    /// Print the generated CUDA C++ (or PTX, or the tile IR) of a kernel at one point.
    Emit(EmitArgs),
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// `.ph` files to check.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// Which kernel, at which point, with which bindings.
#[derive(Args, Debug, Clone)]
pub struct KernelArgs {
    /// The `.ph` file.
    pub file: PathBuf,
    /// Kernel name (needed when the file has several).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Pins of shape-environment names, e.g. "TILE_M=64 TILE_N=128".
    #[arg(long)]
    pub autotune: Option<String>,
    /// Element-type parameters, e.g. "TA=bf16,TC=f32".
    #[arg(long)]
    pub types: Option<String>,
    /// Tensor memory orders, e.g. "B=col" (row is the default).
    #[arg(long)]
    pub layout: Option<String>,
}

#[derive(Args, Debug)]
pub struct SpaceArgs {
    /// `.ph` files, in order.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Only this kernel (in every file that has it; an error if none does).
    #[arg(long)]
    pub kernel: Option<String>,
    /// Pins of shape-environment names, e.g. "TILE_M=64".
    #[arg(long)]
    pub autotune: Option<String>,
    /// One JSON object per kernel on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub kernel: KernelArgs,
    /// Runtime dims, e.g. "M=512,N=512,K=256".
    #[arg(long)]
    pub dims: Option<String>,
    /// Input tensor from an .npy file: NAME=PATH (repeatable).
    #[arg(long = "input", value_name = "NAME=PATH")]
    pub inputs: Vec<String>,
    /// Scalar parameter value: NAME=VALUE (repeatable).
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    pub args: Vec<String>,
    /// Write every tensor after the run to DIR/NAME.npy.
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Seed for the random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Run on the CPU reference interpreter.
    #[arg(long, conflicts_with = "compare")]
    pub interpret: bool,
    /// Run on the GPU and on the interpreter and report the error per output.
    #[arg(long)]
    pub compare: bool,
}

#[derive(Args, Debug)]
pub struct EmitArgs {
    #[command(flatten)]
    pub kernel: KernelArgs,
    /// A problem's runtime dims, e.g. "M=4096,N=4096,K=4096": the code is specialized on their
    /// alignment as `phobos run` and the tuner compile it (the fast GEMM main loops need it),
    /// and a problem that violates the kernel's `@where` at this point is refused. The first
    /// line then gives the problem's `@grid` and the launch's blocks (with its clusters and a
    /// persistent kernel's logical grid).
    #[arg(long)]
    pub dims: Option<String>,
    /// CUDA C++ (the default).
    #[arg(long, group = "what")]
    pub cuda: bool,
    /// PTX from NVRTC.
    #[arg(long, group = "what")]
    pub ptx: bool,
    /// The typed tile IR.
    #[arg(long, group = "what")]
    pub ir: bool,
}
