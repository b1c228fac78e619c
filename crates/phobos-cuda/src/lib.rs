//! Typed tile IR to readable CUDA C++ over a prelude of tile primitives; pure, builds without CUDA.
//!
//! ```text
//!  .ph ──lexer──▶ tokens ──parser──▶ AST ──checker──▶ typed IR (phobos_ir::Kernel, one point)
//!                                                         │
//!   phobos-cuda (this crate)                              ▼
//!     gemm_match   recognize GEMM main loops ─────▶ mainloop: strategy per loop (FFMA today)
//!     plan         tile IR with layouts: a layout per tile local (Blocked, FfmaAcc, strategy
//!                  accumulators), declaration sites, conversions where layouts differ
//!     emit         CUDA C++ text: per-thread scalar code as plain C++, tile statements as
//!                  calls into cuda/phobos_prelude.cuh (+ reduce/dot headers when used),
//!                  barriers only where shared memory or a stored tensor is reused
//!                                                         │
//!                                                         ▼
//!   phobos-gpu:  CUDA C++ ──NVRTC──▶ PTX ──ptxas/driver──▶ cubin ──load──▶ CUfunction
//! ```
//!
//! **Invariants.** Code generation never reports a user error: its input already passed the
//! checker, and anything it cannot lower is an [`EmitError::Unsupported`] naming the construct
//! (a bug to fix or a check the checker must add). The interpreter defines the semantics; the
//! generated code is judged against it. Nothing here prints or touches a GPU.

pub mod ctype;
mod emit;
// The tensor-core main loops' selection (cuda/gemm/ and src/gemm_fast*.rs, kept by their
// author); `x % n == 0` reads as the formulas of cuda/gemm/README.md there.
#[allow(clippy::manual_is_multiple_of)]
pub mod gemm_fast;
pub mod gemm_match;
pub mod gemm_split;
pub mod launch;
pub mod layout;
pub mod mainloop;
pub mod names;
mod plan;
pub use gemm_fast::{CopyIssuer, Pipeline};
pub use gemm_split::{SplitRecord, SplitReduce};
pub use mainloop::GemmRecord;
pub use plan::{
    Blocker, Bound, DotRecord, Extent, LoopRecord, MaskRecord, MmaInstr, MmaType, NoMma, NoOverlap,
    NoWgmma, Overlap, Schedule, TensorDot,
};
pub mod specialize;
pub mod target;
mod visit;
pub use target::Target;

pub use launch::TmaParam;
pub use specialize::{assume_aligned, problem_alignment, specialize_alignment};

use phobos_ir::{Kernel, ParamId};
use phobos_syntax::{SourceFile, Span};

/// The prelude: tile type, layouts contract, Blocked, loads/stores, conversions, broadcasts.
pub const PRELUDE_HEADER: &str = "phobos_prelude.cuh";
/// Reductions, transpose and tile element reads.
pub const REDUCE_HEADER: &str = "phobos_reduce.cuh";
/// FFMA dot products and the FFMA GEMM main loop.
pub const DOT_HEADER: &str = "phobos_dot.cuh";
/// Dots outside recognized GEMM loops on tensor cores (mma.sync) and their row vectors.
pub const MMA_HEADER: &str = "phobos_mma.cuh";
/// Dots on tensor cores through K-major staging: tf32, fp8, i8/u8, and a K of no whole k steps.
pub const MMA_K_HEADER: &str = "phobos_mma_k.cuh";
/// `atomic_add`, `atomic_max` and `atomic_min` on elements and tiles.
pub const ATOMIC_HEADER: &str = "phobos_atomic.cuh";
/// Stores emitted a vector group at a time (`ph::load_group`, `ph::store_group`).
pub const GROUP_HEADER: &str = "phobos_group.cuh";
/// Tile loads of 2-byte rows known to be unaligned (`ph::load_tile_shifted`).
pub const SHIFTED_HEADER: &str = "phobos_shifted.cuh";

/// The text of a header the generated code may include, by its include name.
pub fn header_text(name: &str) -> Option<&'static str> {
    match name {
        PRELUDE_HEADER => Some(include_str!("../cuda/phobos_prelude.cuh")),
        REDUCE_HEADER => Some(include_str!("../cuda/phobos_reduce.cuh")),
        DOT_HEADER => Some(include_str!("../cuda/phobos_dot.cuh")),
        MMA_HEADER => Some(include_str!("../cuda/phobos_mma.cuh")),
        MMA_K_HEADER => Some(include_str!("../cuda/phobos_mma_k.cuh")),
        ATOMIC_HEADER => Some(include_str!("../cuda/phobos_atomic.cuh")),
        GROUP_HEADER => Some(include_str!("../cuda/phobos_group.cuh")),
        SHIFTED_HEADER => Some(include_str!("../cuda/phobos_shifted.cuh")),
        _ => gemm_fast::headers()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t),
    }
}

/// How to emit.
#[derive(Clone, Debug, Default)]
pub struct EmitOptions {
    /// The kernel's source file: `#line` directives map NVRTC messages back to its lines.
    /// Without it the code has no `#line` directives.
    pub source: Option<SourceFile>,
}

/// The architecture the generated code targets when none is given, compute capability times
/// ten: sm_90a (wgmma and TMA), [`Target::default`].
pub const DEFAULT_ARCH: u32 = Target::sm90a().cc();

/// Which main loops recognized GEMMs may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmPolicy {
    /// The tensor-core loops of `cuda/gemm/` where one applies, else FFMA (the default).
    Fastest,
    /// Every GEMM on the FFMA loop of `phobos_dot.cuh`.
    FfmaOnly,
}

/// Generated CUDA C++ for one kernel at one point, and what the launch needs to know.
#[derive(Clone, Debug, PartialEq)]
pub struct Emitted {
    /// The translation unit (includes the headers by name).
    pub source: String,
    /// The `extern "C"` entry point.
    pub entry: String,
    /// Headers to pass to NVRTC as named headers: (include name, text).
    pub headers: Vec<(String, String)>,
    /// Dynamic shared memory the launch must provide (above 48 KiB the host raises the limit).
    pub dynamic_smem_bytes: u32,
    /// Threads per block (1-D).
    pub threads: u32,
    /// `@launch(.., .., max_regs)`: pass as `-maxrregcount` (CUDA does not accept it next to
    /// `__launch_bounds__` in the source).
    pub max_regs: Option<u32>,
    /// Strategy and layout choices, one line each.
    pub notes: Vec<String>,
    /// How each dot outside the recognized GEMM loops is lowered (typed; `notes` renders it).
    pub dots: Vec<DotRecord>,
    /// Each loop with a wgmma dot outside the recognized GEMM loops: whether its dots overlap
    /// the rest of the iteration, or why not (typed; `notes` renders it).
    pub loops: Vec<LoopRecord>,
    /// Each `where` statement whose mask a block-uniform test skips on the tiles that need
    /// none (typed; `notes` renders it).
    pub masks: Vec<MaskRecord>,
    /// How each recognized GEMM loop runs, in program order (typed; `notes` renders it).
    pub gemms: Vec<GemmRecord>,
    /// One block per tile, the persistent schedule, or why SCHEDULE=2 was not applied (typed;
    /// `notes` renders it).
    pub schedule: Schedule,
    /// Tensor-map parameters the kernel takes after the runtime-dim ints, in order (one
    /// `const __grid_constant__ ph::gemm::sm90::TmaDesc` each): what the host encodes per
    /// launch. Empty unless a GEMM runs the wgmma + TMA main loop.
    pub tma: Vec<TmaParam>,
    /// Tensors the host must zero right before every launch (SPLIT_K outputs: the parts add
    /// into them with atomics), inside any timed region.
    pub zero_before_launch: Vec<ParamId>,
    /// SPLIT_K through an f32 workspace ([`SplitReduce::Workspace`]): the kernel takes one more
    /// parameter, `float*`, after the tensor maps, pointing at [`SplitWorkspace::bytes`] the
    /// host allocates (and zeroes once) with the launch.
    pub split_workspace: Option<SplitWorkspace>,
    /// Blocks along the grid's z axis (SPLIT_K parts): 1 means the kernel's own grid. Above 1
    /// the kernel's grid has z = 1 and the launch uses this instead.
    pub grid_z: u32,
    /// SCHEDULE=2 (persistent) applied: the kernel loops over the tiles of its grid and takes the grid's
    /// x and y extents as two more `int` parameters after the tensor maps; the host launches
    /// as many blocks as are resident at once (see `phobos_gpu::LaunchFacts`).
    pub persistent: bool,
    /// CLUSTER=2 applied: the kernel is compiled with `__cluster_dims__(cluster, 1, 1)`, so the
    /// host rounds the grid's x up to a multiple of it (the extra blocks' tiles are past M and
    /// store nothing). 1: no cluster.
    pub cluster: u32,
}

/// The f32 workspace of a split k loop whose C is not f32: `parts` slices of C's elements (at
/// C's own element offsets), then one `unsigned` counter per block of the launch's x-y grid.
/// The counters must be zero before the first launch; every launch leaves them zero (the part
/// that arrives last resets its tile's), so the workspace is allocated and zeroed once and
/// reused by every launch of one problem (one launch at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitWorkspace {
    /// The output C (whose element count sizes the slices).
    pub c: ParamId,
    /// SPLIT_K.
    pub parts: u32,
}

impl SplitWorkspace {
    /// Bytes for a C of `c_elems` elements and an x-y grid of `tiles` blocks, and the byte
    /// offset of the counters.
    pub fn bytes(&self, c_elems: usize, tiles: usize) -> (usize, usize) {
        let counters = self.parts as usize * c_elems * 4;
        (counters + tiles * 4, counters)
    }
}

/// Why a kernel could not be lowered.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EmitError {
    /// A construct the code generator does not handle (yet): a bug, or a check the checker
    /// must add.
    #[error("code generation does not support {what}")]
    Unsupported { what: String, span: Span },
}

/// Lowers a checked kernel at one point to CUDA C++ for sm_90a ([`DEFAULT_ARCH`]).
pub fn emit(kernel: &Kernel, opts: &EmitOptions) -> Result<Emitted, EmitError> {
    emit::emit_kernel(kernel, opts, GemmPolicy::Fastest, &Target::default())
}

/// [`emit`] with a choice of GEMM main loops.
pub fn emit_with_policy(
    kernel: &Kernel,
    opts: &EmitOptions,
    policy: GemmPolicy,
) -> Result<Emitted, EmitError> {
    emit::emit_kernel(kernel, opts, policy, &Target::default())
}

/// [`emit`] for a target: the Hopper main loop and wgmma only where [`Target::wgmma`] holds,
/// mma.sync only where [`Target::mma_sync`] does.
pub fn emit_for_target(
    kernel: &Kernel,
    opts: &EmitOptions,
    target: &Target,
) -> Result<Emitted, EmitError> {
    emit::emit_kernel(kernel, opts, GemmPolicy::Fastest, target)
}

/// [`emit_for_target`] for a compute capability times ten ([`Target::from_cc`]: `90` is
/// sm_90a; below 90 the Hopper main loop is never chosen; below 80 neither is mma.sync).
pub fn emit_for_arch(kernel: &Kernel, opts: &EmitOptions, arch: u32) -> Result<Emitted, EmitError> {
    emit_for_target(kernel, opts, &Target::from_cc(arch))
}
