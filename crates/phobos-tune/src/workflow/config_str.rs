//! The one-line description of one configuration that the tuner prints and `--config STR`
//! accepts (the seed's `M16_N8_K128_BM64_BN64_...`, made unambiguous for UPPER_SNAKE names).
//!
//! ```text
//! config   := dims ("_" field)*
//! dims     := "M=" dim "_N=" dim "_K=" dim          (always first, in this order)
//! field    := NAME "=" int                          (a tuning value: the value is an integer)
//!           | ("A" | "B") "=" part ("-" part)?      (an operand: the value starts with a letter;
//!           | "C" "=" dtype                          part is an element type or row/col)
//! NAME     := [A-Za-z_][A-Za-z0-9_]*
//! int      := "-"? [0-9]+          dim := a positive int that fits in i32
//! ```
//!
//! Why it is unambiguous: a value never contains `_` or `=`, so the first `_` after a value ends
//! its field and a key is everything up to the next `=` (keys may contain `_`). A value that
//! starts with a letter is an operand field, any other is a tuning value. The printer writes
//! dims, then tuning values in declaration order, then `A`, `B`, `C` (each only when known):
//! `M=4864_N=4096_K=8192_TILE_M=128_TILE_N=128_STAGES=3_A=bf16_B=bf16-col_C=f32`.

use super::{GemmProblem, Operands, MAX_DIM};
use phobos_ir::{DType, MemOrder, Point};
use std::fmt;
use std::str::FromStr;

/// A GEMM problem and a tuning point, as one config string describes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigString {
    /// Dims, operand types and orders.
    pub problem: GemmProblem,
    /// The tuning values in order.
    pub point: Point,
}

/// Why a config string could not be parsed or printed. Columns count characters from 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigStrError {
    /// Nothing to parse.
    #[error("the config string is empty (expected e.g. M=64_N=64_K=64_TILE_M=32)")]
    Empty,
    /// A field that is not `NAME=VALUE`.
    #[error("at column {col}: `{field}` is not of the form NAME=VALUE (fields are joined by `_`)")]
    Malformed { col: usize, field: String },
    /// The string does not start with `M=.._N=.._K=..`.
    #[error("at column {col}: expected `{expected}=<dim>`, found `{found}` (a config string starts with M=.._N=.._K=..)")]
    MissingDim {
        col: usize,
        expected: &'static str,
        found: String,
    },
    /// A dim that is not a positive i32.
    #[error(
        "at column {col}: {name} must be a positive integer of at most {MAX_DIM}, not `{value}`"
    )]
    BadDim {
        col: usize,
        name: String,
        value: String,
    },
    /// A tuning value that is not an integer.
    #[error("at column {col}: the value of `{name}` must be an integer, not `{value}`")]
    BadValue {
        col: usize,
        name: String,
        value: String,
    },
    /// A word value on a key other than A, B or C.
    #[error("at column {col}: `{name}={value}`: only the operands A, B and C take an element type or layout; tuning values are integers")]
    NotAnOperand {
        col: usize,
        name: String,
        value: String,
    },
    /// An operand value part that is neither an element type nor a layout.
    #[error("at column {col}: `{part}` in `{name}={value}` is not {expected}")]
    BadOperand {
        col: usize,
        name: String,
        value: String,
        part: String,
        expected: &'static str,
    },
    /// A key or an operand part given twice.
    #[error("at column {col}: `{name}` is given twice")]
    Duplicate { col: usize, name: String },
    /// A name that the grammar cannot carry (printing only).
    #[error(
        "`{name}` cannot appear in a config string: names are identifiers (letters, digits, `_`)"
    )]
    BadName { name: String },
}

/// Whether `s` is a NAME of the grammar.
pub(crate) fn is_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn order_name(o: MemOrder) -> &'static str {
    match o {
        MemOrder::RowMajor => "row",
        MemOrder::ColMajor => "col",
    }
}

impl ConfigString {
    /// A config string of a problem and a point; fails for a dim that is not a positive i32, a
    /// name that is not an identifier or a name given twice (none of which could be read back).
    pub fn new(problem: GemmProblem, point: Point) -> Result<ConfigString, ConfigStrError> {
        for (name, v) in [("M", problem.m), ("N", problem.n), ("K", problem.k)] {
            if !(1..=MAX_DIM).contains(&v) {
                return Err(ConfigStrError::BadDim {
                    col: 1,
                    name: name.to_string(),
                    value: v.to_string(),
                });
            }
        }
        for (i, (name, _)) in point.0.iter().enumerate() {
            if !is_name(name) {
                return Err(ConfigStrError::BadName { name: name.clone() });
            }
            if point.0[..i].iter().any(|(n, _)| n == name) {
                return Err(ConfigStrError::Duplicate {
                    col: 1,
                    name: name.clone(),
                });
            }
        }
        Ok(ConfigString { problem, point })
    }
}

impl fmt::Display for ConfigString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.problem;
        write!(f, "M={}_N={}_K={}", p.m, p.n, p.k)?;
        for (name, v) in &self.point.0 {
            write!(f, "_{name}={v}")?;
        }
        let ops = &p.operands;
        for (op, dtype, order) in [
            ("A", ops.dtype_a, ops.order_a),
            ("B", ops.dtype_b, ops.order_b),
            ("C", ops.dtype_c, None),
        ] {
            let parts: Vec<&str> = dtype
                .map(DType::name)
                .into_iter()
                .chain(order.map(order_name))
                .collect();
            if !parts.is_empty() {
                write!(f, "_{op}={}", parts.join("-"))?;
            }
        }
        Ok(())
    }
}

/// One `key=value` field with the column (1-based, in characters) where it starts.
struct Field<'a> {
    col: usize,
    key: &'a str,
    value: &'a str,
}

/// Splits a config string into fields (see the module docs for why this split is unique).
fn fields(s: &str) -> Result<Vec<Field<'_>>, ConfigStrError> {
    let mut out = Vec::new();
    let mut start = 0;
    loop {
        let rest = &s[start..];
        let col = s[..start].chars().count() + 1;
        let malformed = |field: &str| ConfigStrError::Malformed {
            col,
            field: field.to_string(),
        };
        let Some(eq) = rest.find('=') else {
            return Err(malformed(rest.split('_').next().unwrap_or(rest)));
        };
        let end = rest[eq + 1..].find('_').map_or(rest.len(), |i| eq + 1 + i);
        let (key, value) = (&rest[..eq], &rest[eq + 1..end]);
        if !is_name(key) || value.is_empty() || value.contains('=') {
            return Err(malformed(&rest[..end]));
        }
        out.push(Field { col, key, value });
        if end == rest.len() {
            return Ok(out);
        }
        start += end + 1;
        if start == s.len() {
            return Err(ConfigStrError::Malformed {
                col: s.chars().count(),
                field: "_".to_string(),
            });
        }
    }
}

/// Parses one operand value (`bf16`, `col`, `bf16-col`) into its element type and order.
fn operand(f: &Field<'_>) -> Result<(Option<DType>, Option<MemOrder>), ConfigStrError> {
    let (mut dtype, mut order) = (None, None);
    let expected = if f.key == "C" {
        "an element type (C has no layout)"
    } else {
        "an element type or a layout (row, col)"
    };
    for part in f.value.split('-') {
        let err = |expected| ConfigStrError::BadOperand {
            col: f.col,
            name: f.key.to_string(),
            value: f.value.to_string(),
            part: part.to_string(),
            expected,
        };
        match (part, DType::parse(part)) {
            ("row" | "col", _) if f.key != "C" => {
                if order.is_some() {
                    return Err(ConfigStrError::Duplicate {
                        col: f.col,
                        name: format!("{} layout", f.key),
                    });
                }
                order = Some(if part == "row" {
                    MemOrder::RowMajor
                } else {
                    MemOrder::ColMajor
                });
            }
            (_, Some(t)) => {
                if dtype.is_some() {
                    return Err(ConfigStrError::Duplicate {
                        col: f.col,
                        name: format!("{} element type", f.key),
                    });
                }
                dtype = Some(t);
            }
            _ => return Err(err(expected)),
        }
    }
    Ok((dtype, order))
}

impl FromStr for ConfigString {
    type Err = ConfigStrError;

    /// Parses a config string (surrounding whitespace is ignored).
    fn from_str(s: &str) -> Result<ConfigString, ConfigStrError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(ConfigStrError::Empty);
        }
        let fields = fields(s)?;
        let mut dims = [0i64; 3];
        for (i, name) in ["M", "N", "K"].into_iter().enumerate() {
            let Some(f) = fields.get(i).filter(|f| f.key == name) else {
                return Err(ConfigStrError::MissingDim {
                    col: fields.get(i).map_or(s.chars().count() + 1, |f| f.col),
                    expected: name,
                    found: fields
                        .get(i)
                        .map_or("the end".to_string(), |f| format!("{}={}", f.key, f.value)),
                });
            };
            dims[i] = f
                .value
                .parse()
                .ok()
                .filter(|v| (1..=MAX_DIM).contains(v))
                .ok_or_else(|| ConfigStrError::BadDim {
                    col: f.col,
                    name: name.to_string(),
                    value: f.value.to_string(),
                })?;
        }
        let mut point = Point::default();
        let mut ops = Operands::default();
        let mut seen_ops: Vec<&str> = Vec::new();
        for f in &fields[3..] {
            if f.value.starts_with(|c: char| c.is_ascii_alphabetic()) {
                let (dtype, order) = match f.key {
                    "A" | "B" | "C" => operand(f)?,
                    _ => {
                        return Err(ConfigStrError::NotAnOperand {
                            col: f.col,
                            name: f.key.to_string(),
                            value: f.value.to_string(),
                        })
                    }
                };
                if seen_ops.contains(&f.key) {
                    return Err(ConfigStrError::Duplicate {
                        col: f.col,
                        name: f.key.to_string(),
                    });
                }
                seen_ops.push(f.key);
                match f.key {
                    "A" => (ops.dtype_a, ops.order_a) = (dtype, order),
                    "B" => (ops.dtype_b, ops.order_b) = (dtype, order),
                    _ => ops.dtype_c = dtype,
                }
                continue;
            }
            let v = f
                .value
                .parse::<i64>()
                .map_err(|_| ConfigStrError::BadValue {
                    col: f.col,
                    name: f.key.to_string(),
                    value: f.value.to_string(),
                })?;
            if point.get(f.key).is_some() {
                return Err(ConfigStrError::Duplicate {
                    col: f.col,
                    name: f.key.to_string(),
                });
            }
            point.0.push((f.key.to_string(), v));
        }
        let [m, n, k] = dims;
        Ok(ConfigString {
            problem: GemmProblem {
                m,
                n,
                k,
                operands: ops,
            },
            point,
        })
    }
}
