//! Phobos syntax: tokens, lexer, parser and the AST with spans.
//!
//! This crate knows nothing about types, shapes or GPUs. It turns text into an [`ast::File`]
//! and reports every syntax error it finds as a [`Diagnostic`], recovering where it can.

pub mod ast;
pub mod diag;
pub mod span;

pub use diag::{has_errors, Diagnostic, Severity};
pub use span::{SourceFile, Span};
