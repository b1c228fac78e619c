//! The typed tile IR: one kernel at one point of its shape environment.
//!
//! The checker produces it; the interpreter executes it; the code generator lowers it to CUDA.
//! Everything the front end knows is explicit here, so that neither back end needs the AST:
//!
//! - **Monomorphic.** Every shape-environment name is bound to its value and folded into
//!   constants, every element-type parameter is bound, every tile shape is a list of integers.
//! - **Typed.** Every expression carries its [`Ty`] and whether it is uniform across the block.
//! - **Explicit conversions.** Binary operands have the same element type (the checker inserts
//!   [`ExprKind::Cast`]); tile operands have the same shape (the checker inserts
//!   [`ExprKind::Broadcast`]); a value stored to a tensor already has the tensor's element type.
//! - **Resolved names.** Locals, parameters and runtime dims are indices into the kernel's tables.
//!   Shadowing creates a new local.
//!
//! Layouts (which thread holds which tile element, registers or shared memory) are not part of
//! this IR: they are decided by the code generator, which may annotate this IR in side tables.

use crate::dtype::DType;
use phobos_syntax::Span;
use serde::{Deserialize, Serialize};

pub type LocalId = usize;
pub type ParamId = usize;
pub type DimId = usize;

/// A bound point of the shape environment, in declaration order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Point(pub Vec<(String, i64)>);

impl Point {
    pub fn get(&self, name: &str) -> Option<i64> {
        self.0.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// `TILE_M=32 TILE_N=64`, the form `--autotune` accepts.
    pub fn to_pins(&self) -> String {
        self.0
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Memory order of a tensor parameter. Indexing in the kernel is always logical; the order only
/// changes which logical dim is contiguous in memory. `ColMajor` reverses the dim order
/// (for rank 2: element `[i, j]` lives at `i + j * rows`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemOrder {
    #[default]
    RowMajor,
    ColMajor,
}

/// A kernel at one point: everything a back end needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    /// The bound shape environment.
    pub point: Point,
    /// Element-type parameters as bound, in declaration order.
    pub type_args: Vec<(String, DType)>,
    /// Parameters in signature order (the launch argument order).
    pub params: Vec<Param>,
    /// Runtime dims, each read at launch from the first tensor axis that names it.
    pub dims: Vec<DimVar>,
    /// `@aligned(K = 8)`: runtime dims the host guarantees to be multiples of a value
    /// (checked at launch).
    pub aligned: Vec<(DimId, i64)>,
    pub launch: Launch,
    /// Blocks per grid axis: uniform i32 expressions over dims, constants and scalar
    /// parameters (from `@grid`, or inferred, or `1`).
    pub grid: [Expr; 3],
    /// `@where` constraints (bool, over dims and constants): a problem violating one is
    /// not run. Already-true constraints are dropped; a false constant one rejects the point
    /// in the checker.
    pub wheres: Vec<Expr>,
    /// `@flops(..)` and `@bytes(..)` (i64 or f64 expressions over dims).
    pub flops: Option<Expr>,
    pub bytes: Option<Expr>,
    /// Every `let`/`var`/loop variable; each declaration is its own slot.
    pub locals: Vec<Local>,
    pub body: Vec<Stmt>,
    /// The span of the kernel in its source file.
    pub span: Span,
}

/// `@launch(threads, min_blocks_per_sm, max_regs)` with constants folded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Launch {
    /// Threads per block (default 256).
    pub threads: u32,
    pub min_blocks_per_sm: Option<u32>,
    /// A register cap per thread (`maxrregcount`).
    pub max_regs: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// A tensor in device memory.
    Tensor {
        dtype: DType,
        dims: Vec<Dim>,
        order: MemOrder,
    },
    /// A scalar passed by value; always uniform.
    Scalar { dtype: DType },
}

/// One extent of a tensor: known at compile time, or a runtime dim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Static(i64),
    Dyn(DimId),
}

#[derive(Clone, Debug, PartialEq)]
pub struct DimVar {
    pub name: String,
    /// The tensor parameter and axis whose extent defines this dim at launch; every other
    /// axis with the same name must agree.
    pub source: (ParamId, usize),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    pub name: String,
    pub ty: Ty,
    /// Holds the same value in every thread of the block. Tiles are always uniform.
    pub uniform: bool,
    pub mutable: bool,
    pub span: Span,
}

/// The static shape of a tile: rank 1 or 2, every extent >= 1.
pub type Shape = Vec<i64>;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// A per-thread (or uniform) scalar.
    Scalar(DType),
    /// A block-level tile of a static shape.
    Tile(DType, Shape),
}

impl Ty {
    pub fn dtype(&self) -> DType {
        match self {
            Ty::Scalar(t) | Ty::Tile(t, _) => *t,
        }
    }

    pub fn shape(&self) -> Option<&[i64]> {
        match self {
            Ty::Scalar(_) => None,
            Ty::Tile(_, s) => Some(s),
        }
    }

    pub fn is_tile(&self) -> bool {
        matches!(self, Ty::Tile(..))
    }
}

/// `ctx.*` values; all i32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ctx {
    /// `ctx.block.x|y|z` (axis 0, 1, 2): uniform.
    Block(u8),
    /// `ctx.grid.x|y|z`: uniform.
    Grid(u8),
    /// `ctx.thread`: per thread, 0..threads.
    Thread,
    /// `ctx.threads`: uniform, the block size.
    Threads,
    /// `ctx.warp` = thread / 32: per thread.
    Warp,
    /// `ctx.lane` = thread % 32: per thread.
    Lane,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
    /// True when the value is the same in every thread (always true for tiles).
    pub uniform: bool,
    pub span: Span,
}

/// A literal value, interpreted by the expression's type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lit {
    Int(i64),
    Float(f64),
    Bool(bool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Arithmetic negation.
    Neg,
    /// Logical not on bool, bitwise not on integers.
    Not,
}

/// Binary operators. Operands always have the same element type. Comparisons produce bool.
/// Integer arithmetic wraps at the type's width; integer `/` and `%` truncate toward zero
/// (C semantics); `Shr` is arithmetic on signed types. `And`/`Or` take bools and do not
/// short-circuit (both sides are pure).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Min,
    Max,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    /// The operator as written (`+`, `<=`, `min`), for messages and dumps.
    pub fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Rem => "%",
            Min => "min",
            Max => "max",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
            Shl => "<<",
            Shr => ">>",
            And => "&&",
            Or => "||",
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// Elementwise math on floats (f16/bf16/f8 are computed in f32 and rounded back).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    Exp,
    Exp2,
    Log,
    Sqrt,
    Rsqrt,
    Abs,
    Tanh,
    Log2,
    /// log(1 + x), accurate near 0.
    Log1p,
    /// exp(x) - 1, accurate near 0.
    Expm1,
    Sin,
    Cos,
    Erf,
    Floor,
    Ceil,
    /// To the nearest integer, halves to even (NumPy's `round`, CUDA's `rint`).
    Round,
    /// 1 / (1 + exp(-x)).
    Sigmoid,
}

/// Elementwise functions of several operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFnN {
    /// `pow(x, y)` = x^y (float operands of the result type).
    Pow,
    /// `fma(a, b, c)` = a * b + c, rounded once (float operands of the result type).
    Fma,
    /// `rand(seed, offset)`: an f32 uniform in [0, 1] from Philox4x32-10 on (seed, offset),
    /// as Triton's `tl.rand` (integer operands; see [`crate::eval::philox`]).
    Rand,
    /// `randn(seed, offset)`: an f32 standard normal (Box-Muller on two Philox outputs), as
    /// Triton's `tl.randn`.
    Randn,
}

/// The read-modify-write of an atomic statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// `atomic_add`: the element becomes `old + v` (wrapping for integers, rounded to the
    /// element type for floats).
    Add,
    /// `atomic_max`: the element becomes `max(old, v)` (`BinOp::Max`'s semantics).
    Max,
    /// `atomic_min`: the element becomes `min(old, v)`.
    Min,
}

impl AtomicOp {
    /// The function as written: `atomic_add`, `atomic_max`, `atomic_min`.
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "atomic_add",
            AtomicOp::Max => "atomic_max",
            AtomicOp::Min => "atomic_min",
        }
    }

    /// The binary operator that computes the new value from the old one and the operand.
    pub fn bin_op(self) -> BinOp {
        match self {
            AtomicOp::Add => BinOp::Add,
            AtomicOp::Max => BinOp::Max,
            AtomicOp::Min => BinOp::Min,
        }
    }

    /// Whether the operation is defined on tensors of element type `t`: `i32`, `u32` and `f32`
    /// for all three, and `f64`, `f16` and `bf16` for `atomic_add` (the types CUDA's atomics
    /// cover).
    pub fn supports(self, t: DType) -> bool {
        match t {
            DType::I32 | DType::U32 | DType::F32 => true,
            DType::F64 | DType::F16 | DType::BF16 => self == AtomicOp::Add,
            _ => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Lit(Lit),
    /// A runtime dim (i32, uniform).
    Dim(DimId),
    /// A scalar parameter (uniform).
    Param(ParamId),
    Local(LocalId),
    Ctx(Ctx),
    /// Scalar or elementwise on a tile.
    Unary(UnOp, Box<Expr>),
    /// Scalar op scalar, tile op tile (same shape), tile op scalar, or scalar op tile.
    /// A scalar operand of a tile operation is uniform.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// Scalar or elementwise: `Abs` also applies to integers.
    Math(MathFn, Box<Expr>),
    /// Scalar or elementwise, operands broadcast like `Select`'s (of `self.ty`'s element type
    /// for `Pow`/`Fma`; integers for `Rand`/`Randn`).
    MathN(MathFnN, Vec<Expr>),
    /// `where(cond, a, b)`: cond is bool; shapes already broadcast to the result.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Conversion to `self.ty`'s element type (same shape): float to int truncates toward
    /// zero and saturates (NaN to 0); to a narrower float rounds to nearest even.
    Cast(Box<Expr>),
    /// `cdiv(a, b)` on integers: ceil(a / b) for b > 0.
    Cdiv(Box<Expr>, Box<Expr>),
    /// A scalar or a tile broadcast to `self.ty`'s shape (NumPy rules: right-aligned,
    /// extent-1 axes and missing leading axes stretch).
    Broadcast(Box<Expr>),
    /// Reads from a tensor parameter. All `Index::At` gives a scalar (uniform when the
    /// indices are); otherwise a tile whose shape is the span lengths in order.
    /// Elements outside the tensor read as zero.
    Load {
        tensor: ParamId,
        index: Vec<Index>,
        /// The cache eviction hint written on the access (`cache = evict_last`); a hint only:
        /// it never changes the values read.
        cache: Eviction,
    },
    /// One element of a tile value (indices out of range read as zero).
    TileGet {
        tile: Box<Expr>,
        index: Vec<Expr>,
    },
    /// A reduction. `axis: None` reduces everything to a uniform scalar; `Some(a)` keeps the
    /// axis with extent 1 (`rowsum(t)` on `[R, C]` gives `[R, 1]`).
    Reduce {
        op: ReduceOp,
        axis: Option<usize>,
        arg: Box<Expr>,
    },
    /// `dot(a, b)` = a @ b (`[M, K] x [K, N]`) or, with `trans_b`, `dot_t(a, b)` = a @ bᵀ
    /// (`[M, K] x [N, K]`). Operands share an element type; the result is
    /// `tile<dot_acc(T)>[M, N]`. `tf32` lets f32 operands be rounded to TF32.
    Dot {
        a: Box<Expr>,
        b: Box<Expr>,
        trans_b: bool,
        tf32: bool,
    },
    /// Rank-2 transpose.
    Transpose(Box<Expr>),
    /// The same elements in row-major order under `self.ty`'s shape (same element count):
    /// `reshape(t, [..])`, and `t[:, None]` / `t[None, :]` (a new axis of extent 1).
    Reshape(Box<Expr>),
    /// `arange(n)`: `tile<i32>[n]` holding 0, 1, .., n-1.
    Arange(i64),
}

/// The cache eviction priority of a tensor access (`X[i, j, cache = evict_last]`): a hint to
/// the memory system about how long the lines it touches should stay cached. It never changes
/// the values read or stored; the interpreter ignores it and back ends may too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Eviction {
    /// No hint (`evict_normal`, or nothing written).
    #[default]
    Normal,
    /// Lines likely to be used again soon: evicted after the others (`evict_last`).
    Last,
    /// Lines used once: evicted before the others (`evict_first`).
    First,
    /// Read or written without allocating in the first-level cache (`no_allocate`).
    NoAllocate,
}

impl Eviction {
    /// Every hint, in the order the docs list them.
    pub const ALL: [Eviction; 4] = [
        Eviction::First,
        Eviction::Last,
        Eviction::Normal,
        Eviction::NoAllocate,
    ];

    /// The spelling in source (`cache = evict_last`).
    pub fn name(self) -> &'static str {
        match self {
            Eviction::Normal => "evict_normal",
            Eviction::Last => "evict_last",
            Eviction::First => "evict_first",
            Eviction::NoAllocate => "no_allocate",
        }
    }

    /// The hint spelled `name` in source.
    pub fn from_name(name: &str) -> Option<Eviction> {
        Eviction::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// One position of a tensor access.
#[derive(Clone, Debug, PartialEq)]
pub enum Index {
    /// One element; drops the dim. An i32 expression.
    At(Expr),
    /// `start :+ len` with a static length. `X[:]` over a static dim is `Span { 0, dim }`;
    /// `a : b` is `Span { a, b - a }` once the checker has proved `b - a` constant.
    Span { start: Expr, len: i64 },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// Declares-and-initializes or assigns a local (`let`, `var`, `=`, and compound assignment,
    /// desugared: `acc += x` is `acc = acc + x`).
    Assign {
        local: LocalId,
        value: Expr,
    },
    /// Writes a scalar element or a tile into a tensor; `value` already has the tensor's element
    /// type and the access's shape. Out-of-bounds elements are not stored.
    Store {
        tensor: ParamId,
        index: Vec<Index>,
        value: Expr,
        /// The cache eviction hint written on the access; never changes what is stored.
        cache: Eviction,
    },
    /// `atomic_add(X[..], v)`, `atomic_max`, `atomic_min`: a read-modify-write of tensor
    /// elements that concurrent threads and blocks cannot interleave. `value` already has the
    /// tensor's element type (and, for a tile access, its shape). With every index `At`, each
    /// active thread updates one element, and `old` (when bound) receives the value the element
    /// held before that thread's update (a per-thread local; zero outside the tensor). With a
    /// span, the block updates each element of the tile once, like a tile store, and `old` is
    /// `None`. Out-of-bounds elements are not updated. The order of the updates of one element
    /// is unspecified (the interpreter applies them in thread, then block, order).
    Atomic {
        op: AtomicOp,
        tensor: ParamId,
        index: Vec<Index>,
        value: Expr,
        old: Option<LocalId>,
    },
    /// `for var in range(start, end, step)`: runs var = start, start+step, .. while var < end.
    /// A step <= 0 runs no iterations. `unroll` copies of the body per loop test; every factor
    /// runs the same iterations. `start`/`end`/`step` are evaluated once, before the loop.
    For {
        var: LocalId,
        start: Expr,
        end: Expr,
        step: Expr,
        unroll: u32,
        body: Vec<Stmt>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    If {
        cond: Expr,
        then_body: Vec<Stmt>,
        else_body: Vec<Stmt>,
    },
    Break,
    Continue,
}
