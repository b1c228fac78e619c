//! One entry of a sizes file: its keys, each judged on its own, and the item they make.

use super::config_str::ConfigString;
use super::fields::{dim, dtype, layout, stored_config, unknown_key, unsupported};
use super::sizes::{Entry, SizesItem};
use super::yaml::Node;
use super::{codes, GemmProblem, Operands};
use phobos_ir::Point;
use phobos_syntax::{Diagnostic, SourceFile, Span};

/// Known keys, for suggestions.
pub(crate) const KNOWN: [&str; 11] = [
    "M",
    "N",
    "K",
    "rowMajorA",
    "rowMajorB",
    "dtype_a",
    "dtype_b",
    "dtype_c",
    "config",
    "tflops",
    "time_ms",
];

/// Parses one element of the sequence.
pub(crate) fn entry(file: &SourceFile, index: usize, node: &Node) -> Entry {
    let span = node.span();
    let mut out = Entry {
        index,
        span,
        line: file.line_col(span.lo).0,
        item: None,
        duplicate_of: None,
        diagnostics: Vec::new(),
    };
    let Node::Map { pairs, .. } = node else {
        out.diagnostics.push(
            Diagnostic::error(
                codes::ENTRY_NOT_MAPPING,
                format!(
                    "a problem is a mapping like {{M: 4096, N: 4096, K: 4096}}, not {}",
                    node.describe(file)
                ),
                span,
            )
            .with_label("expected a mapping"),
        );
        return out;
    };
    let d = &mut out.diagnostics;
    let mut dims: [Option<i64>; 3] = [None; 3];
    // Given at all, valid or not: an invalid dim is reported once, not also as missing.
    let mut given = [false; 3];
    let mut ops = Operands::default();
    let mut config: Option<(Option<ConfigString>, Point)> = None;
    let mut seen: Vec<(&str, Span)> = Vec::new();
    for (k, v) in pairs {
        let key = match k {
            Node::Scalar { text, .. } => text.as_str(),
            _ => {
                d.push(unsupported(k, "a key must be a plain name such as `M`"));
                continue;
            }
        };
        if let Some(&(_, first)) = seen.iter().find(|(s, _)| *s == key) {
            d.push(
                Diagnostic::error(
                    codes::DUP_KEY,
                    format!("`{key}` is given twice in this problem"),
                    k.span(),
                )
                .with_label("given again here")
                .with_secondary(first, "first given here")
                .with_help("keep one of the two"),
            );
            continue;
        }
        seen.push((key, k.span()));
        let dim_index = ["M", "N", "K"].iter().position(|d| *d == key);
        if let Some(i) = dim_index {
            given[i] = true;
        }
        if let Node::Unsupported { .. } = v {
            d.push(unsupported(v, "write the value itself"));
            continue;
        }
        let result = match key {
            _ if dim_index.is_some() => {
                dim(file, key, v).map(|x| dims[dim_index.unwrap_or(0)] = Some(x))
            }
            "rowMajorA" => layout(file, key, v).map(|o| ops.order_a = Some(o)),
            "rowMajorB" => layout(file, key, v).map(|o| ops.order_b = Some(o)),
            "dtype_a" => dtype(file, key, v).map(|t| ops.dtype_a = Some(t)),
            "dtype_b" => dtype(file, key, v).map(|t| ops.dtype_b = Some(t)),
            "dtype_c" => dtype(file, key, v).map(|t| ops.dtype_c = Some(t)),
            "config" => stored_config(file, v).map(|c| config = Some(c)),
            "tflops" | "time_ms" => Ok(()),
            _ => {
                d.push(unknown_key(key, k.span()));
                Ok(())
            }
        };
        if let Err(e) = result {
            d.push(e);
        }
    }
    let missing: Vec<&str> = ["M", "N", "K"]
        .into_iter()
        .zip(given)
        .filter(|&(_, g)| !g)
        .map(|(n, _)| n)
        .collect();
    if !missing.is_empty() {
        d.push(
            Diagnostic::error(
                codes::MISSING_KEY,
                format!("this problem has no {}", missing.join(", ")),
                span,
            )
            .with_label(format!("missing {}", missing.join(", ")))
            .with_help("each problem needs M, N and K, e.g. `- {M: 4096, N: 4096, K: 4096}`"),
        );
    }
    if d.iter().any(Diagnostic::is_error) {
        return out;
    }
    let [Some(m), Some(n), Some(k)] = dims else {
        return out;
    };
    let mut problem = GemmProblem {
        m,
        n,
        k,
        operands: ops,
    };
    let config = match config {
        None => None,
        Some((None, point)) => Some(point),
        Some((Some(cs), point)) => match agree(&problem, &cs) {
            Ok(filled) => {
                problem.operands = filled;
                Some(point)
            }
            Err(msg) => {
                let config_value = pairs.iter().find_map(|(k, v)| match k {
                    Node::Scalar { text, .. } if text == "config" => Some(v.span()),
                    _ => None,
                });
                let message = format!("the config string disagrees with its entry: {msg}");
                d.push(
                    Diagnostic::error(codes::BAD_CONFIG, message, config_value.unwrap_or(span))
                        .with_label("this config string")
                        .with_help("make the string and the entry describe the same problem"),
                );
                return out;
            }
        },
    };
    out.item = Some(SizesItem { problem, config });
    out
}

/// The entry's operands filled from a config string, or what disagrees.
fn agree(p: &GemmProblem, cs: &ConfigString) -> Result<Operands, String> {
    let q = &cs.problem;
    for (name, a, b) in [("M", p.m, q.m), ("N", p.n, q.n), ("K", p.k, q.k)] {
        if a != b {
            return Err(format!("{name} is {a} in the entry and {b} in the string"));
        }
    }
    let (a, b) = (&p.operands, &q.operands);
    let dtypes = [
        ("dtype_a", a.dtype_a, b.dtype_a),
        ("dtype_b", a.dtype_b, b.dtype_b),
        ("dtype_c", a.dtype_c, b.dtype_c),
    ];
    for (name, x, y) in dtypes {
        if let (Some(x), Some(y)) = (x, y) {
            if x != y {
                return Err(format!("{name} is {x} in the entry and {y} in the string"));
            }
        }
    }
    for (name, x, y) in [
        ("rowMajorA", a.order_a, b.order_a),
        ("rowMajorB", a.order_b, b.order_b),
    ] {
        if let (Some(x), Some(y)) = (x, y) {
            if x != y {
                return Err(format!(
                    "{name} is {x:?} in the entry and {y:?} in the string"
                ));
            }
        }
    }
    Ok(a.or(b))
}
