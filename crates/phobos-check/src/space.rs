//! The shape environment: the names `@autotune` declares and their choices (seed 000's table).

use phobos_syntax::Span;
use serde::Serialize;

/// One declared name with its choices; the first choice is the default.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Name {
    pub name: String,
    pub choices: Vec<i64>,
    #[serde(skip)]
    pub span: Span,
}

/// The space of a kernel: the product of its names' choices.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Space {
    pub names: Vec<Name>,
}

/// Why a pin (`--autotune "A=1 B=2"`) could not be applied.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PinError {
    #[error("`{text}` is not of the form NAME=VALUE")]
    Malformed { text: String },
    #[error("`{name}` is not declared in @autotune (declared: {declared})")]
    Undeclared { name: String, declared: String },
    #[error("`{name}` is pinned twice")]
    Duplicate { name: String },
}
