//! Stable codes of the syntax diagnostics (`E0001`..`E0099`).
//!
//! | code  | raised by | meaning |
//! | ----- | --------- | ------- |
//! | E0001 | lexer  | a character that is not part of Phobos |
//! | E0002 | lexer  | a `/* ... */` comment that never ends |
//! | E0003 | lexer  | an integer literal that does not fit in `i64` |
//! | E0004 | lexer  | a malformed number (`0x` without digits, `1e` without exponent, `12abc`) |
//! | E0005 | lexer  | a float literal too large for `f64` |
//! | E0020 | parser | expected one token or construct, found another |
//! | E0021 | parser | expected an expression |
//! | E0022 | parser | a statement not ended by a newline, `;` or `}` |
//! | E0023 | parser | an unclosed `{`, `(` or `[` |
//! | E0024 | parser | a kernel without the `kernel` keyword (or stray text at top level) |
//! | E0025 | parser | chained comparison (`a < b < c`) |
//! | E0026 | parser | a `..` range (`for i in 0..N`) instead of `range(a, b)` |
//! | E0027 | parser | `=` where a condition compares with `==` |
//! | E0028 | parser | expressions or blocks nested too deeply |
//! | E0029 | parser | tensor or tile dims in parentheses instead of brackets |
//! | E0030 | parser | a tensor dim that is not a name or an integer literal |
//! | E0031 | parser | a known attribute with the wrong arguments |
//! | E0032 | parser | a call of something that is not a name (`a.b(x)`) |
//! | E0033 | parser | an `else` without an `if` |
//! | E0034 | parser | expected a type |
//! | E0035 | parser | an empty or malformed index position (`x[]`, `x[:+ n]`) |

/// Unknown character.
pub const UNKNOWN_CHAR: &str = "E0001";
/// Unterminated block comment.
pub const UNTERMINATED_COMMENT: &str = "E0002";
/// Integer literal out of `i64` range.
pub const INT_OVERFLOW: &str = "E0003";
/// Malformed number literal.
pub const BAD_NUMBER: &str = "E0004";
/// Float literal out of `f64` range.
pub const FLOAT_OVERFLOW: &str = "E0005";
/// Expected a token or construct, found another.
pub const EXPECTED: &str = "E0020";
/// Expected an expression.
pub const EXPECTED_EXPR: &str = "E0021";
/// Statement not terminated.
pub const STMT_END: &str = "E0022";
/// Unclosed delimiter.
pub const UNCLOSED: &str = "E0023";
/// Missing `kernel` keyword or stray top-level text.
pub const MISSING_KERNEL: &str = "E0024";
/// Chained comparison.
pub const CHAINED_CMP: &str = "E0025";
/// `..` range instead of `range(..)`.
pub const DOT_RANGE: &str = "E0026";
/// `=` in a condition.
pub const ASSIGN_IN_COND: &str = "E0027";
/// Nesting too deep.
pub const TOO_DEEP: &str = "E0028";
/// Dims in parentheses.
pub const DIMS_IN_PARENS: &str = "E0029";
/// Bad tensor dim.
pub const BAD_DIM: &str = "E0030";
/// Known attribute with wrong arguments.
pub const BAD_ATTR: &str = "E0031";
/// Call of a non-name.
pub const BAD_CALLEE: &str = "E0032";
/// `else` without `if`.
pub const ELSE_WITHOUT_IF: &str = "E0033";
/// Expected a type.
pub const EXPECTED_TYPE: &str = "E0034";
/// Empty or malformed index position.
pub const BAD_INDEX: &str = "E0035";
