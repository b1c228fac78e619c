//! Phobos syntax: tokens, lexer, parser and the AST with spans.
//!
//! This crate knows nothing about types, shapes or GPUs. It turns text into an [`ast::File`]
//! and reports every syntax error it finds as a [`Diagnostic`], recovering where it can.
//!
//! ```
//! use phobos_syntax::{parse, SourceFile};
//! let file = SourceFile::new("k.ph", "kernel k(X: tensor<f32>[N]) {\n  X[0] = 1.0\n}\n");
//! let (ast, diags) = parse(&file);
//! assert!(diags.is_empty());
//! assert_eq!(ast.kernels[0].name.name, "k");
//! ```

pub mod ast;
pub mod codes;
pub mod diag;
pub mod lexer;
pub mod parser;
pub mod print;
pub mod span;
pub mod spans;
pub mod token;

pub use diag::{has_errors, Diagnostic, Severity};
pub use lexer::lex;
pub use parser::{parse, parse_expr};
pub use print::{print_expr, print_file};
pub use span::{SourceFile, Span};
