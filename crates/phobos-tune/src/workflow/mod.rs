//! GEMM tuning workflows (seed 002): sizes files, results files, config strings and the binding
//! of GEMM problem fields to a kernel's dims, element types and memory orders.
//!
//! - [`sizes`] reads a YAML sizes file (`- {'M': 4864, 'N': 4096, 'K': 8192, 'rowMajorA': 'T'}`)
//!   into one [`sizes::Entry`] per problem, each with its own diagnostics, so a caller can reject
//!   the file or skip the bad entries.
//! - [`results`] writes the best configuration per problem as a file that is itself a sizes file.
//! - [`config_str`] prints and parses the one-line description of one configuration
//!   (`M=4864_N=4096_K=8192_TILE_M=128_A=bf16_B=bf16-col_C=f32`).
//! - [`mod@bind`] maps a [`GemmProblem`] to a kernel: runtime dims, type parameters, tensor orders.
//!
//! Everything here is pure (no I/O, no printing): callers read and write the files.

// Errors here are diagnostics about a user's file, made once per run on a cold path; boxing
// them would only make every caller unbox.
#![allow(clippy::result_large_err)]

pub mod bind;
pub mod config_str;
mod entry;
mod fields;
pub mod results;
pub mod sizes;
mod yaml;

use phobos_ir::{DType, MemOrder};
use phobos_syntax::{Diagnostic, SourceFile};

pub use bind::{bind, BindError, Binding, TensorNames};
pub use config_str::{ConfigStrError, ConfigString};
pub use results::{format_item, write_results, ResultRow};
pub use sizes::{parse_sizes, Entry, SizesFile, SizesItem};

/// The largest dim a GEMM problem may have: kernels read dims as `i32`.
pub const MAX_DIM: i64 = i32::MAX as i64;

/// Element types and memory orders of a GEMM's operands; `None` where not given (the caller's
/// defaults, then the kernel's, apply).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Operands {
    /// Element type of A (`dtype_a`).
    pub dtype_a: Option<DType>,
    /// Element type of B (`dtype_b`).
    pub dtype_b: Option<DType>,
    /// Element type of C, the output (`dtype_c`).
    pub dtype_c: Option<DType>,
    /// Memory order of A (`rowMajorA`; `--col-a` makes it column-major).
    pub order_a: Option<MemOrder>,
    /// Memory order of B (`rowMajorB`; `--col-b` makes it column-major).
    pub order_b: Option<MemOrder>,
}

impl Operands {
    /// Each field that is `None` here taken from `fallback` (a file entry over the CLI flags).
    pub fn or(self, fallback: &Operands) -> Operands {
        Operands {
            dtype_a: self.dtype_a.or(fallback.dtype_a),
            dtype_b: self.dtype_b.or(fallback.dtype_b),
            dtype_c: self.dtype_c.or(fallback.dtype_c),
            order_a: self.order_a.or(fallback.order_a),
            order_b: self.order_b.or(fallback.order_b),
        }
    }

    /// The fields of a file entry (`self`) that contradict the command line's flags: the entry
    /// wins, and each line says which field overrides which flag.
    pub fn overrides(&self, flags: &Operands) -> Vec<String> {
        let mut out = Vec::new();
        let types = [
            ("dtype_a", "--dtype-a", self.dtype_a, flags.dtype_a),
            ("dtype_b", "--dtype-b", self.dtype_b, flags.dtype_b),
            ("dtype_c", "--dtype-c", self.dtype_c, flags.dtype_c),
        ];
        for (field, flag, entry, given) in types {
            if let (Some(e), Some(g)) = (entry, given) {
                if e != g {
                    out.push(format!(
                        "`{field}: {}` overrides `{flag} {}`",
                        e.name(),
                        g.name()
                    ));
                }
            }
        }
        let orders = [
            ("rowMajorA", "--col-a", self.order_a, flags.order_a),
            ("rowMajorB", "--col-b", self.order_b, flags.order_b),
        ];
        for (field, flag, entry, given) in orders {
            if let (Some(e), Some(g)) = (entry, given) {
                if e != g {
                    let letter = if e == MemOrder::RowMajor { 'T' } else { 'N' };
                    out.push(format!("`{field}: '{letter}'` overrides `{flag}`"));
                }
            }
        }
        out
    }
}

/// One GEMM problem: `C[M, N] = A[M, K] @ B[K, N]` with its operands' types and orders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmProblem {
    /// Rows of A and C.
    pub m: i64,
    /// Columns of B and C.
    pub n: i64,
    /// Columns of A, rows of B (the reduction).
    pub k: i64,
    /// Element types and memory orders of A, B and C.
    pub operands: Operands,
}

impl GemmProblem {
    /// A problem with the given dims and no operand types or orders.
    pub fn new(m: i64, n: i64, k: i64) -> GemmProblem {
        GemmProblem {
            m,
            n,
            k,
            operands: Operands::default(),
        }
    }

    /// Floating-point operations of one GEMM, `2 M N K`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// TFLOP/s at a time per GEMM in milliseconds (`None` unless the time is positive and finite).
    pub fn tflops(&self, time_ms: f64) -> Option<f64> {
        (time_ms.is_finite() && time_ms > 0.0).then(|| self.flops() / (time_ms * 1e-3) / 1e12)
    }

    /// The seed's `trans` column: one letter per operand, `N` for row-major (as stored) and `T`
    /// for column-major (stored transposed); `rowMajorA: 'T', rowMajorB: 'N'` is `NT`.
    pub fn trans(&self) -> String {
        let letter = |o: Option<MemOrder>| match o.unwrap_or_default() {
            MemOrder::RowMajor => 'N',
            MemOrder::ColMajor => 'T',
        };
        [letter(self.operands.order_a), letter(self.operands.order_b)]
            .iter()
            .collect()
    }
}

/// `file:line:col` of a diagnostic's primary span (1-based), for one-line reports and tests.
pub fn location(file: &SourceFile, diag: &Diagnostic) -> String {
    let (line, col) = file.line_col(diag.primary.span.lo);
    format!("{}:{line}:{col}", file.name)
}

/// Stable codes of the workflow diagnostics (sizes files); docs/tuner.md lists them.
pub mod codes {
    macro_rules! codes {
        ($($(#[doc = $doc:literal])* $name:ident = $code:literal;)*) => {
            $($(#[doc = $doc])* pub const $name: &str = $code;)*
            /// Every workflow code with its one-line meaning, in order.
            pub const ALL: &[(&str, &str)] = &[$(($code, concat!($($doc),*))),*];
        };
    }

    codes! {
        /// The sizes file is not valid YAML.
        YAML_SYNTAX = "E1001";
        /// The sizes file is not one sequence of problems.
        NOT_A_SEQUENCE = "E1002";
        /// An entry is not a mapping.
        ENTRY_NOT_MAPPING = "E1003";
        /// An entry lacks `M`, `N` or `K`.
        MISSING_KEY = "E1004";
        /// A value has the wrong kind (a string or float where an integer belongs, ...).
        WRONG_KIND = "E1005";
        /// A dim that is not positive or does not fit in i32.
        DIM_RANGE = "E1006";
        /// An unknown element type.
        UNKNOWN_DTYPE = "E1007";
        /// A `rowMajorA`/`rowMajorB` value other than 'T', 'N', true or false.
        BAD_LAYOUT = "E1008";
        /// A key given twice in one entry.
        DUP_KEY = "E1009";
        /// A stored configuration that is malformed or disagrees with its entry.
        BAD_CONFIG = "E1010";
        /// YAML features sizes files do not use (aliases, tags, complex keys).
        UNSUPPORTED_YAML = "E1011";
        /// An unknown key in an entry (ignored).
        UNKNOWN_KEY = "W1001";
        /// The same problem listed twice.
        DUP_PROBLEM = "W1002";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_that_contradicts_a_flag_is_named() {
        let flags = Operands {
            dtype_a: Some(DType::F16),
            order_b: Some(MemOrder::ColMajor),
            ..Operands::default()
        };
        let entry = Operands {
            dtype_a: Some(DType::BF16),
            dtype_c: Some(DType::F32),
            order_b: Some(MemOrder::RowMajor),
            ..Operands::default()
        };
        assert_eq!(
            entry.overrides(&flags),
            [
                "`dtype_a: bf16` overrides `--dtype-a f16`",
                "`rowMajorB: 'T'` overrides `--col-b`"
            ]
        );
        // Agreeing or absent fields override nothing.
        assert!(flags.overrides(&flags).is_empty());
        assert!(Operands::default().overrides(&flags).is_empty());
    }
}
