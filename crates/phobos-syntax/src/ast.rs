//! The abstract syntax tree. Every node carries the span of the source it came from.
//!
//! The AST is what the parser saw, nothing more: names are unresolved, `ctx.block.x` is a chain
//! of field accesses, casts are calls (`f32(x)`), and `range(..)` is an ordinary call in `for`.
//! The checker (phobos-check) gives all of it meaning.

use crate::span::Span;

/// A name as written, with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A whole `.ph` file: a list of kernels.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub kernels: Vec<Kernel>,
}

/// `@attr... kernel name<T = f16>(params) { body }`
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub attrs: Vec<Attr>,
    pub name: Ident,
    pub type_params: Vec<TypeParam>,
    pub params: Vec<Param>,
    pub body: Block,
    /// From the first attribute (or `kernel`) to the closing brace.
    pub span: Span,
}

/// An element-type parameter: `TA` or `TA = f16`.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeParam {
    pub name: Ident,
    pub default: Option<Ident>,
    pub span: Span,
}

/// A kernel parameter `name: type`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: TypeExpr,
    pub span: Span,
}

/// A type as written.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeExpr {
    /// `f32`, `i32`, or an element-type parameter `TA`.
    Scalar(Ident),
    /// `tensor<T>[M, K]`: dims are names or integer literals.
    Tensor {
        elem: Ident,
        dims: Vec<DimExpr>,
        span: Span,
    },
    /// `tile<T>[TILE_M, 64]`: dims are constant expressions.
    Tile {
        elem: Ident,
        dims: Vec<Expr>,
        span: Span,
    },
}

impl TypeExpr {
    pub fn span(&self) -> Span {
        match self {
            TypeExpr::Scalar(id) => id.span,
            TypeExpr::Tensor { span, .. } | TypeExpr::Tile { span, .. } => *span,
        }
    }
}

/// One dim of a tensor type.
#[derive(Clone, Debug, PartialEq)]
pub enum DimExpr {
    Name(Ident),
    Lit(i64, Span),
}

impl DimExpr {
    pub fn span(&self) -> Span {
        match self {
            DimExpr::Name(id) => id.span,
            DimExpr::Lit(_, span) => *span,
        }
    }
}

/// `@name(args)`. The parser knows the argument grammar of each known attribute;
/// an unknown attribute keeps its raw argument text so the checker can warn and move on.
#[derive(Clone, Debug, PartialEq)]
pub struct Attr {
    pub name: Ident,
    pub kind: AttrKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AttrKind {
    /// `@autotune(TILE_M in [32, 128], D in [64])`
    Autotune(Vec<AutotuneEntry>),
    /// `@launch(threads[, min_blocks_per_sm[, max_regs]])`
    Launch(Vec<Expr>),
    /// `@grid(x[, y[, z]])`
    Grid(Vec<Expr>),
    /// `@where(expr)`
    Where(Expr),
    /// `@aligned(K = 8, N = TILE_N)`: the runtime dim is a multiple of the value.
    Aligned(Vec<(Ident, Expr)>),
    /// `@flops(expr)`
    Flops(Expr),
    /// `@bytes(expr)`
    Bytes(Expr),
    /// `@allow_tf32`: f32 `dot`s of this kernel may run in TF32.
    AllowTf32,
    /// Any other name; the arguments are kept as source text (possibly empty).
    Unknown(String),
}

/// `NAME in [v1, v2, ...]` or `NAME in {v1, v2, ...}`. Values stay expressions so the checker
/// can reject non-integers with a span.
#[derive(Clone, Debug, PartialEq)]
pub struct AutotuneEntry {
    pub name: Ident,
    pub values: Vec<Expr>,
    /// Which brackets enclose the values (the two follow different rules).
    pub list: ChoiceList,
    /// Span of the `[...]` list.
    pub list_span: Span,
    pub span: Span,
}

/// The brackets of an `@autotune` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChoiceList {
    /// `[..]`: one value, two inclusive bounds or three or more listed values (seed 000).
    Brackets,
    /// `{..}`: the values listed, any number of them, in the order written.
    Braces,
}

/// `{ stmts }`
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOp {
    Set,
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `let x: T = e` (`mutable: false`) or `var x: T = e` (`mutable: true`).
    /// The parser accepts a missing initializer so the checker can explain it.
    Let {
        name: Ident,
        mutable: bool,
        ty: Option<TypeExpr>,
        init: Option<Expr>,
    },
    /// `place op= value`; the place is a name or an index expression (`C[..] = acc`).
    Assign {
        target: Expr,
        op: AssignOp,
        value: Expr,
    },
    /// A bare expression.
    Expr(Expr),
    /// `for<unroll U> i in iter { .. }`; `iter` is normally `range(a, b[, c])`.
    For {
        unroll: Option<Expr>,
        var: Ident,
        iter: Expr,
        body: Block,
    },
    While {
        cond: Expr,
        body: Block,
    },
    /// `if c { } else if d { } else { }`: `else if` nests an `If` statement in `els`.
    If {
        cond: Expr,
        then: Block,
        els: Option<Box<Stmt>>,
    },
    /// A block used as a statement (only produced for `else { .. }`).
    Block(Block),
    Break,
    Continue,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitOr,
    BitXor,
    BitAnd,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::BitAnd => "&",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Bool(bool),
    Name(Ident),
    /// `base.field`, e.g. the chain `ctx.block.x`.
    Field {
        base: Box<Expr>,
        field: Ident,
    },
    Unary {
        op: UnOp,
        arg: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `callee(args)`: built-ins, casts (`f32(x)`, `TC(x)`) and `range(..)`.
    Call {
        callee: Ident,
        args: Vec<Arg>,
    },
    /// `base[i, a :+ n, a : b, :]`, optionally followed by named options
    /// (`X[r, c :+ n, cache = evict_last]`).
    Index {
        base: Box<Expr>,
        indices: Vec<IndexExpr>,
        options: Vec<IndexOption>,
    },
    /// `[a, b, ...]`: a list, such as the shape argument of `reshape(t, [R, C])`.
    List(Vec<Expr>),
}

/// A call argument, positional or named (`axis = 1`).
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
}

/// A named option after the indices of `[...]`: `cache = evict_last`. The parser accepts any
/// name and value; the checker decides what they mean.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexOption {
    pub name: Ident,
    pub value: Expr,
}

/// One position inside `[...]`.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexExpr {
    /// `i`: one element; drops the dim.
    At(Expr),
    /// `start :+ len`
    Span { start: Expr, len: Expr, span: Span },
    /// `start : end`, `start :`, `: end` or `:` alone (the whole dim).
    Range {
        start: Option<Expr>,
        end: Option<Expr>,
        span: Span,
    },
}

impl IndexExpr {
    pub fn span(&self) -> Span {
        match self {
            IndexExpr::At(e) => e.span,
            IndexExpr::Span { span, .. } | IndexExpr::Range { span, .. } => *span,
        }
    }
}
