//! Sizes files: a YAML sequence of GEMM problems, the seed's format.
//!
//! ```yaml
//! - {'M': 4864, 'N': 4096, 'K': 8192, 'rowMajorA': 'T', 'rowMajorB': 'N'}
//! - {M: 8192, N: 8192, K: 8192, dtype_a: bf16, dtype_b: bf16, config: {TILE_M: 128, TILE_N: 64}}
//! ```
//!
//! Keys: `M`, `N`, `K` (required, positive, at most `i32::MAX`); `rowMajorA`, `rowMajorB`
//! (`'T'` row-major, `'N'` column-major, or `true`/`false`); `dtype_a`, `dtype_b`, `dtype_c`
//! (any name [`phobos_ir::DType::parse`] accepts: `fp32 tf32 fp16 bf16 fp8 bf8 int8`, `f16`, ...);
//! `config` (the stored tuning point: a config string or a mapping `{NAME: value}`);
//! `tflops`, `time_ms` (written by results files, ignored here). Any other key is a warning.
//!
//! Each entry is judged on its own ([`Entry`]): the caller rejects the file when any entry has
//! an error, or skips the bad ones; nothing is ever guessed.

use super::entry::entry;
use super::yaml::{self, Node};
use super::{codes, GemmProblem};
use phobos_ir::Point;
use phobos_syntax::{Diagnostic, SourceFile, Span};
use std::collections::HashMap;

/// One problem of a sizes file and its stored configuration, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizesItem {
    /// Dims, operand types and orders.
    pub problem: GemmProblem,
    /// The stored tuning point (`config`), in the order written.
    pub config: Option<Point>,
}

/// One entry of a sizes file: its item when it has no errors, and its diagnostics.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Position in the sequence, from 0.
    pub index: usize,
    /// The entry's text in the file.
    pub span: Span,
    /// The 1-based line where the entry starts.
    pub line: usize,
    /// The parsed item; `None` when any diagnostic of this entry is an error.
    pub item: Option<SizesItem>,
    /// The index of an earlier entry with the same problem (a warning, not an error).
    pub duplicate_of: Option<usize>,
    /// Errors and warnings about this entry, in file order.
    pub diagnostics: Vec<Diagnostic>,
}

/// A parsed sizes file: one [`Entry`] per element of the sequence.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SizesFile {
    /// The entries in file order.
    pub entries: Vec<Entry>,
}

impl SizesFile {
    /// Every item, or every error when any entry has one (the default: reject the file).
    pub fn items(&self) -> Result<Vec<&SizesItem>, Vec<&Diagnostic>> {
        if self.has_errors() {
            return Err(self
                .diagnostics()
                .into_iter()
                .filter(|d| d.is_error())
                .collect());
        }
        Ok(self
            .entries
            .iter()
            .filter_map(|e| e.item.as_ref())
            .collect())
    }

    /// The items of the entries without errors (`--skip-bad-entries`).
    pub fn good_items(&self) -> Vec<&SizesItem> {
        self.entries
            .iter()
            .filter_map(|e| e.item.as_ref())
            .collect()
    }

    /// The entries with errors.
    pub fn bad_entries(&self) -> Vec<&Entry> {
        self.entries.iter().filter(|e| e.item.is_none()).collect()
    }

    /// Whether any entry has an error.
    pub fn has_errors(&self) -> bool {
        self.entries.iter().any(|e| e.item.is_none())
    }

    /// Every diagnostic (errors and warnings), in file order.
    pub fn diagnostics(&self) -> Vec<&Diagnostic> {
        self.entries.iter().flat_map(|e| &e.diagnostics).collect()
    }
}

/// Parses a sizes file. A file that is not YAML or not one sequence is one error; otherwise
/// every element becomes an [`Entry`] with its own diagnostics.
pub fn parse_sizes(file: &SourceFile) -> Result<SizesFile, Diagnostic> {
    let items = match yaml::parse(file)? {
        Some(Node::Seq { items, .. }) => items,
        None => {
            return Err(Diagnostic::error(
                codes::NOT_A_SEQUENCE,
                "the sizes file has no problems",
                Span::new(0, 0),
            )
            .with_help("write one problem per line, e.g. `- {M: 4096, N: 4096, K: 4096}`"))
        }
        Some(other) => {
            let mut d = Diagnostic::error(
                codes::NOT_A_SEQUENCE,
                format!(
                    "a sizes file is a sequence of problems, not {}",
                    other.describe(file)
                ),
                other.span(),
            )
            .with_label("expected `- {M: .., N: .., K: ..}` entries");
            if matches!(other, Node::Map { .. }) {
                d = d.with_help("start each problem with `- ` to make a sequence");
            }
            return Err(d);
        }
    };
    let mut entries: Vec<Entry> = items
        .iter()
        .enumerate()
        .map(|(i, n)| entry(file, i, n))
        .collect();
    // The first entry of each problem, by position: one pass, so a file of a million entries
    // is checked in about a second.
    let mut firsts: HashMap<GemmProblem, usize> = HashMap::new();
    for i in 0..entries.len() {
        let Some(item) = &entries[i].item else {
            continue;
        };
        let first = *firsts.entry(item.problem).or_insert(i);
        if first != i {
            let (index, span) = (entries[first].index, entries[first].span);
            let e = &mut entries[i];
            e.duplicate_of = Some(index);
            e.diagnostics.push(
                Diagnostic::warning(codes::DUP_PROBLEM, "this problem is listed twice", e.span)
                    .with_label("same dims, element types and layouts")
                    .with_secondary(span, "first listed here")
                    .with_help("remove one of the two entries"),
            );
        }
    }
    Ok(SizesFile { entries })
}
