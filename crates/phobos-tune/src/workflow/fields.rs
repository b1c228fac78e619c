//! The values of a sizes-file entry's keys: dims, layouts, element types, stored configs, and
//! the diagnostics for keys that are unknown or values that are not what the key needs.

use super::config_str::{is_name, ConfigString};
use super::entry::KNOWN;
use super::yaml::{Node, Value};
use super::{codes, MAX_DIM};
use phobos_ir::{DType, MemOrder, Point};
use phobos_syntax::{Diagnostic, SourceFile, Span};

/// An error for a YAML feature sizes files do not use (an alias, a tag, a complex key).
pub(crate) fn unsupported(node: &Node, help: &str) -> Diagnostic {
    let what = match node {
        Node::Unsupported { what, .. } => *what,
        _ => "a collection as a key",
    };
    Diagnostic::error(
        codes::UNSUPPORTED_YAML,
        format!("sizes files do not use {what}"),
        node.span(),
    )
    .with_label("not supported here")
    .with_help(help.to_string())
}

/// The warning for an unknown key, with the closest known key or where tuning values go.
pub(crate) fn unknown_key(key: &str, span: Span) -> Diagnostic {
    let d = Diagnostic::warning(
        codes::UNKNOWN_KEY,
        format!("unknown key `{key}` (ignored)"),
        span,
    )
    .with_label("unknown key");
    let close = KNOWN
        .iter()
        .map(|k| {
            (
                if k.eq_ignore_ascii_case(key) {
                    0
                } else {
                    edit_distance(k, key)
                },
                k,
            )
        })
        // A one-letter key is at distance 1 of every one-letter key: suggest only closer ones.
        .filter(|&(d, _)| d <= 2 && d < key.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k);
    if let Some(k) = close {
        d.with_help(format!("did you mean `{k}`?"))
    } else if is_name(key) && key.chars().all(|c| !c.is_ascii_lowercase()) {
        d.with_help(format!(
            "tuning values go under `config`, e.g. `config: {{{key}: ..}}`"
        ))
    } else {
        d.with_note(format!("known keys: {}", KNOWN.join(", ")))
    }
}

/// Levenshtein distance, for key suggestions.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// An error about the value of `key`, with `help`.
fn wrong(code: &'static str, node: &Node, message: String, help: String) -> Diagnostic {
    Diagnostic::error(code, message, node.span())
        .with_label("this value")
        .with_help(help)
}

/// `M`, `N` or `K`: a plain positive integer that fits in i32.
pub(crate) fn dim(file: &SourceFile, key: &str, v: &Node) -> Result<i64, Diagnostic> {
    let range_help =
        || format!("dims are positive and at most {MAX_DIM} (kernels read them as i32)");
    match v.value() {
        Some(Value::Int(x)) if (1..=MAX_DIM).contains(&x) => Ok(x),
        Some(Value::Int(x)) if x < 1 => Err(wrong(
            codes::DIM_RANGE,
            v,
            format!("{key} must be positive, not {x}"),
            range_help(),
        )),
        Some(Value::Int(_) | Value::BigInt) => Err(wrong(
            codes::DIM_RANGE,
            v,
            format!("{key} = {} is too large", file.snippet(v.span())),
            range_help(),
        )),
        Some(Value::Str(s)) if !s.is_empty() && s.trim().parse::<i64>().is_ok() => Err(wrong(
            codes::WRONG_KIND,
            v,
            format!("{key} must be an integer, not {}", v.describe(file)),
            format!("remove the quotes: `{key}: {}`", s.trim()),
        )),
        Some(Value::Float(f)) if f.fract() == 0.0 && f.abs() < 1e15 => Err(wrong(
            codes::WRONG_KIND,
            v,
            format!("{key} must be an integer, not {}", v.describe(file)),
            format!("write `{key}: {}`", f as i64),
        )),
        _ => Err(wrong(
            codes::WRONG_KIND,
            v,
            format!("{key} must be an integer, not {}", v.describe(file)),
            format!("write e.g. `{key}: 4096`"),
        )),
    }
}

/// `rowMajorA`/`rowMajorB`: 'T' or true (row-major), 'N' or false (column-major).
pub(crate) fn layout(file: &SourceFile, key: &str, v: &Node) -> Result<MemOrder, Diagnostic> {
    match v.value() {
        Some(Value::Str("T" | "t")) | Some(Value::Bool(true)) => Ok(MemOrder::RowMajor),
        Some(Value::Str("N" | "n")) | Some(Value::Bool(false)) => Ok(MemOrder::ColMajor),
        _ => Err(wrong(
            codes::BAD_LAYOUT,
            v,
            format!(
                "{key} must be 'T' or 'N' (or true/false), not {}",
                v.describe(file)
            ),
            "'T' (true) is row-major, 'N' (false) is column-major".to_string(),
        )),
    }
}

/// `dtype_a`/`dtype_b`/`dtype_c`: a name [`DType::parse`] accepts.
pub(crate) fn dtype(file: &SourceFile, key: &str, v: &Node) -> Result<DType, Diagnostic> {
    let help = || {
        "valid: fp32 tf32 fp16 bf16 fp8 bf8 int8, or a Phobos type name (f32, f16, f8e4m3, i8, ...)"
            .to_string()
    };
    match v.value() {
        Some(Value::Str(s)) => DType::parse(s).ok_or_else(|| {
            wrong(
                codes::UNKNOWN_DTYPE,
                v,
                format!("unknown element type `{s}` for {key}"),
                help(),
            )
        }),
        _ => Err(wrong(
            codes::WRONG_KIND,
            v,
            format!("{key} must be a type name, not {}", v.describe(file)),
            help(),
        )),
    }
}

/// `config`: a config string (kept, to check against the entry) or a mapping `{NAME: value}`.
pub(crate) fn stored_config(
    file: &SourceFile,
    v: &Node,
) -> Result<(Option<ConfigString>, Point), Diagnostic> {
    let bad = |node: &Node, message: String, help: &str| {
        Diagnostic::error(codes::BAD_CONFIG, message, node.span())
            .with_label("here")
            .with_help(help.to_string())
    };
    match v {
        Node::Scalar { text, .. } if matches!(v.value(), Some(Value::Str(_))) => {
            let cs: ConfigString = text.parse().map_err(|e| {
                bad(
                    v,
                    format!("invalid config string: {e}"),
                    "a config string looks like `M=64_N=64_K=64_TILE_M=32`",
                )
            })?;
            let point = cs.point.clone();
            Ok((Some(cs), point))
        }
        Node::Map { pairs, .. } => {
            let mut point = Point::default();
            let mut spans: Vec<Span> = Vec::new();
            for (k, x) in pairs {
                let name = match k.value() {
                    Some(Value::Str(s)) if is_name(s) => s,
                    _ => {
                        return Err(bad(
                            k,
                            format!("`{}` is not a tuning name", file.snippet(k.span())),
                            "tuning names are identifiers such as TILE_M",
                        ))
                    }
                };
                if let Some(i) = point.0.iter().position(|(n, _)| n == name) {
                    return Err(Diagnostic::error(
                        codes::DUP_KEY,
                        format!("`{name}` is given twice in config"),
                        k.span(),
                    )
                    .with_label("given again here")
                    .with_secondary(spans[i], "first given here"));
                }
                match x.value() {
                    Some(Value::Int(i)) => point.0.push((name.to_string(), i)),
                    _ => {
                        return Err(Diagnostic::error(
                            codes::WRONG_KIND,
                            format!(
                                "the value of `{name}` in config must be an integer, not {}",
                                x.describe(file)
                            ),
                            x.span(),
                        )
                        .with_label("this value"))
                    }
                }
                spans.push(k.span());
            }
            Ok((None, point))
        }
        _ => Err(bad(
            v,
            format!(
                "config must be a config string or a mapping of tuning values, not {}",
                v.describe(file)
            ),
            "write e.g. `config: {TILE_M: 128, TILE_N: 64}`",
        )),
    }
}
