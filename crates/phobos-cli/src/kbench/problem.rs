//! The problem from the command line: `--dims`/`-m -n -k`, `--types`, `--layout`, `--arg`.

use super::args::KbenchArgs;
use phobos_ir::{DType, MemOrder};
use phobos_tune::workflow::MAX_DIM;
use phobos_tune::Problem;

fn pairs(text: &str, what: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for item in text.split([',', ' ', '\t']).filter(|s| !s.is_empty()) {
        let Some((n, v)) = item.split_once('=') else {
            return Err(format!("{what}: `{item}` is not of the form NAME=VALUE"));
        };
        let (n, v) = (n.trim(), v.trim());
        if n.is_empty() || v.is_empty() {
            return Err(format!("{what}: `{item}` is not of the form NAME=VALUE"));
        }
        if out.iter().any(|(o, _)| o == n) {
            return Err(format!("{what}: `{n}` is given twice"));
        }
        out.push((n.to_string(), v.to_string()));
    }
    Ok(out)
}

/// Builds the problem; errors are one line for the user.
pub fn from_args(a: &KbenchArgs) -> Result<Problem, String> {
    let mut p = Problem::default();
    for (n, v) in pairs(a.dims.as_deref().unwrap_or(""), "--dims")? {
        let value: i64 = v
            .parse()
            .map_err(|_| format!("--dims: `{n}={v}` is not a whole number"))?;
        p.dims.push((n, value));
    }
    for (flag, name, value) in [("-m", "M", a.m), ("-n", "N", a.n), ("-k", "K", a.k)] {
        if let Some(v) = value {
            if p.dim(name).is_some() {
                return Err(format!("{name} is given by both --dims and {flag}"));
            }
            p.dims.push((name.to_string(), v));
        }
    }
    for (n, v) in &p.dims {
        if !(1..=MAX_DIM).contains(v) {
            return Err(format!(
                "the dim {n}={v} is out of range: a dim is 1 to {MAX_DIM}"
            ));
        }
    }
    for (n, v) in pairs(a.types.as_deref().unwrap_or(""), "--types")? {
        let t = DType::parse(&v).ok_or_else(|| {
            format!(
                "--types: unknown element type `{v}` for `{n}` (valid: {})",
                DType::ALL.map(|t| t.name()).join(", ")
            )
        })?;
        p.types.push((n, t));
    }
    for (n, v) in pairs(a.layout.as_deref().unwrap_or(""), "--layout")? {
        let o = match v.to_ascii_lowercase().as_str() {
            "row" | "r" | "row_major" => MemOrder::RowMajor,
            "col" | "c" | "col_major" | "column" => MemOrder::ColMajor,
            _ => {
                return Err(format!(
                    "--layout: unknown layout `{v}` for `{n}` (valid: row, col)"
                ))
            }
        };
        p.layouts.push((n, o));
    }
    for item in &a.args {
        for (n, v) in pairs(item, "--arg")? {
            let x: f64 = v
                .parse()
                .map_err(|_| format!("--arg: `{n}={v}` is not a number"))?;
            p.args.push((n, x));
        }
    }
    Ok(p)
}
