//! Typed errors: bad bindings found before a launch, and runtime errors with the span of the
//! expression or statement that raised them.

use phobos_ir::DType;
use phobos_syntax::Span;

/// Everything that can stop a launch. Binding errors name the parameters, dims and extents
/// involved; runtime errors carry the span of the IR node that raised them.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("`{name}` is not a parameter of `{kernel}` (parameters: {params})")]
    UnknownParam {
        name: String,
        kernel: String,
        params: String,
    },
    #[error("`{kernel}` takes {params} parameters, but {given} values were given by position")]
    TooManyArgs {
        kernel: String,
        params: usize,
        given: usize,
    },
    #[error("the parameter `{name}` is given twice")]
    DuplicateArg { name: String },
    #[error("no value for the {kind} parameter `{name}`")]
    MissingArg { name: String, kind: &'static str },
    #[error("`{name}` is a {expected} parameter, but a {found} was given")]
    WrongKind {
        name: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("`{name}` holds {expected}, but the tensor given holds {found}")]
    WrongDType {
        name: String,
        expected: DType,
        found: DType,
    },
    #[error("`{name}` has rank {expected}, but the tensor given has shape {found:?}")]
    WrongRank {
        name: String,
        expected: usize,
        found: Vec<usize>,
    },
    #[error("axis {axis} of `{name}` has the static extent {expected}, but the tensor given has {found}")]
    StaticExtent {
        name: String,
        axis: usize,
        expected: i64,
        found: usize,
    },
    #[error("the dim `{dim}` disagrees: {first} has extent {first_extent}, but {second} has {second_extent}")]
    DimMismatch {
        dim: String,
        first: String,
        first_extent: i64,
        second: String,
        second_extent: i64,
    },
    #[error("the dim `{dim}` = {extent} is out of range (0 to 2147483647)")]
    DimOutOfRange { dim: String, extent: i64 },
    #[error("@aligned: the dim `{dim}` = {extent} is not a multiple of {multiple}")]
    Misaligned {
        dim: String,
        extent: i64,
        multiple: i64,
    },
    #[error("the scalar `{name}` = {value} is not a value of {dtype}")]
    BadScalar {
        name: String,
        dtype: DType,
        value: f64,
    },
    #[error("no value for the runtime dims {}", .names.join(", "))]
    MissingDims { names: Vec<String> },
    #[error("the dim `{name}` is given twice")]
    DuplicateDim { name: String },
    #[error("`{name}` is not a runtime dim of `{kernel}` (runtime dims: {dims})")]
    UnknownDim {
        name: String,
        kernel: String,
        dims: String,
    },
    #[error("`{name}` is {fixed} at this point of the shape environment, but {given} was given")]
    FixedDim {
        name: String,
        fixed: i64,
        given: i64,
    },
    #[error("the problem violates @where({constraint})")]
    WhereViolated { constraint: String, span: Span },
    #[error("the grid has {value} blocks along {axis}")]
    BadGrid { axis: char, value: i64, span: Span },
    #[error("integer division by zero")]
    DivisionByZero { span: Span },
    #[error("shift by {amount} is out of range for {dtype}")]
    ShiftOutOfRange {
        amount: i64,
        dtype: DType,
        span: Span,
    },
    #[error("the launch ran past its budget of {budget} steps")]
    StepBudget { budget: u64, span: Span },
    /// A host asked for a block the grid does not have ([`crate::Launch::run_blocks`]).
    #[error("block {block:?} is outside the grid {grid:?}")]
    BlockOutsideGrid { block: [i64; 3], grid: [i64; 3] },
    /// The IR broke one of its own invariants: a bug in the checker, never the user's error.
    #[error("internal error (the checked IR is inconsistent): {message}")]
    Internal { message: String, span: Span },
}

impl Error {
    /// The span in the kernel's source this error points at, when it has one.
    pub fn span(&self) -> Option<Span> {
        match self {
            Error::WhereViolated { span, .. }
            | Error::BadGrid { span, .. }
            | Error::DivisionByZero { span }
            | Error::ShiftOutOfRange { span, .. }
            | Error::StepBudget { span, .. }
            | Error::Internal { span, .. } => Some(*span),
            _ => None,
        }
    }

    /// A suggestion of how to fix it, when there is one.
    pub fn help(&self) -> Option<String> {
        Some(match self {
            Error::StepBudget { .. } => {
                "a loop that never ends? If the work is real, raise the step budget".into()
            }
            Error::DimMismatch { dim, .. } => {
                format!("every tensor axis named `{dim}` must have the same extent")
            }
            Error::Misaligned { multiple, .. } => {
                format!("pad the tensors to a multiple of {multiple}")
            }
            Error::DivisionByZero { .. } => "guard the division with a check of the divisor".into(),
            Error::Internal { .. } => "please report this kernel: the checker accepted it".into(),
            _ => return None,
        })
    }

    pub(crate) fn internal(message: impl Into<String>, span: Span) -> Error {
        Error::Internal {
            message: message.into(),
            span,
        }
    }

    /// Attaches a span to an error of scalar arithmetic.
    pub(crate) fn from_eval(e: phobos_ir::eval::EvalError, span: Span) -> Error {
        use phobos_ir::eval::EvalError;
        match e {
            EvalError::DivByZero => Error::DivisionByZero { span },
            EvalError::ShiftOutOfRange(amount, dtype) => Error::ShiftOutOfRange {
                amount,
                dtype,
                span,
            },
            other => Error::internal(other.to_string(), span),
        }
    }
}
