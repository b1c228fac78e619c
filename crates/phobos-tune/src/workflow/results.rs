//! Results files (`-o results.yaml`): the best configuration per problem, written as a sizes
//! file so that `--check results.yaml` and `--benchmark results.yaml` read it back.
//!
//! One flow mapping per line, keys in a fixed order, quoted like the seed's example; the measured
//! time and TFLOP/s are extra keys that sizes files ignore, and the config string (what
//! `--config` takes) follows as a comment:
//!
//! ```yaml
//! # phobos-kbench results
//! - {'M': 4864, 'N': 4096, 'K': 8192, 'rowMajorA': 'T', 'rowMajorB': 'N', 'config': {'TILE_M': 128}, 'time_ms': 0.401234, 'tflops': 406.71}  # M=4864_N=4096_K=8192_TILE_M=128_A=row_B=col
//! ```

use super::config_str::ConfigString;
use super::sizes::SizesItem;
use phobos_ir::MemOrder;
use std::fmt::Write;

/// One problem's line in a results file.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultRow {
    /// The problem and its best configuration (`None` when no configuration ran).
    pub item: SizesItem,
    /// Milliseconds per GEMM of the best configuration.
    pub time_ms: Option<f64>,
    /// TFLOP/s of the best configuration.
    pub tflops: Option<f64>,
    /// A one-line remark written as a comment (e.g. why no configuration was found).
    pub note: Option<String>,
}

impl ResultRow {
    /// A row without measurements.
    pub fn new(item: SizesItem) -> ResultRow {
        ResultRow {
            item,
            time_ms: None,
            tflops: None,
            note: None,
        }
    }

    /// A row with its time; TFLOP/s follow from `2 M N K`.
    pub fn timed(item: SizesItem, time_ms: f64) -> ResultRow {
        let tflops = item.problem.tflops(time_ms);
        ResultRow {
            time_ms: Some(time_ms).filter(|t| t.is_finite()),
            tflops,
            ..ResultRow::new(item)
        }
    }

    /// The same row with a note.
    pub fn with_note(mut self, note: impl Into<String>) -> ResultRow {
        self.note = Some(note.into());
        self
    }
}

/// A YAML single-quoted scalar.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// One comment's text on one line.
fn one_line(s: &str) -> String {
    s.split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The flow mapping of one item, as a results file writes it (no `- `, no comment).
pub fn format_item(item: &SizesItem) -> String {
    let p = &item.problem;
    let ops = &p.operands;
    let mut fields = vec![
        format!("'M': {}", p.m),
        format!("'N': {}", p.n),
        format!("'K': {}", p.k),
    ];
    for (key, order) in [("rowMajorA", ops.order_a), ("rowMajorB", ops.order_b)] {
        if let Some(o) = order {
            let letter = if o == MemOrder::RowMajor { "T" } else { "N" };
            fields.push(format!("'{key}': '{letter}'"));
        }
    }
    for (key, dtype) in [
        ("dtype_a", ops.dtype_a),
        ("dtype_b", ops.dtype_b),
        ("dtype_c", ops.dtype_c),
    ] {
        if let Some(t) = dtype {
            fields.push(format!("'{key}': '{t}'"));
        }
    }
    if let Some(point) = &item.config {
        let values: Vec<String> = point
            .0
            .iter()
            .map(|(n, v)| format!("{}: {v}", quote(n)))
            .collect();
        fields.push(format!("'config': {{{}}}", values.join(", ")));
    }
    format!("{{{}}}", fields.join(", "))
}

/// The text of a results file: `header` lines as comments, then one line per row. The file is a
/// valid sizes file (an empty list of rows writes `[]`); the same rows always give the same text.
pub fn write_results(rows: &[ResultRow], header: &[String]) -> String {
    let mut out = String::from("# phobos-kbench results\n");
    // YAML ends a comment at `\r` too, so split on both.
    for h in header {
        for line in h.replace("\r\n", "\n").split(['\n', '\r']) {
            let _ = writeln!(out, "# {}", line.trim_end());
        }
    }
    if rows.is_empty() {
        out.push_str("[]\n");
    }
    for row in rows {
        let mut line = format_item(&row.item);
        // Extra keys before the closing brace; sizes files ignore them.
        line.pop();
        if let Some(t) = row.time_ms.filter(|t| t.is_finite()) {
            let _ = write!(line, ", 'time_ms': {t:.6}");
        }
        if let Some(t) = row.tflops.filter(|t| t.is_finite()) {
            let _ = write!(line, ", 'tflops': {t:.2}");
        }
        line.push('}');
        let mut comment = Vec::new();
        if let Some(point) = &row.item.config {
            if let Ok(cs) = ConfigString::new(row.item.problem, point.clone()) {
                comment.push(cs.to_string());
            }
        }
        if let Some(note) = &row.note {
            comment.push(one_line(note));
        }
        comment.retain(|c| !c.is_empty());
        if comment.is_empty() {
            let _ = writeln!(out, "- {line}");
        } else {
            let _ = writeln!(out, "- {line}  # {}", comment.join("; "));
        }
    }
    out
}
