//! The GEMM workflow pieces: sizes files, results files, config strings, dtype/layout binding.

#[path = "workflow/bind.rs"]
mod bind;
#[path = "workflow/config_str.rs"]
mod config_str;
#[path = "workflow/results.rs"]
mod results;
#[path = "workflow/sizes.rs"]
mod sizes;

use phobos_syntax::{Diagnostic, SourceFile};
use phobos_tune::workflow::location;

/// A fixture's text.
pub fn fixture(name: &str) -> SourceFile {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    SourceFile::new(name, text)
}

/// One line per diagnostic (`file:line:col: error[E1004]: message`), then its help and notes.
pub fn report<'a>(file: &SourceFile, diags: impl IntoIterator<Item = &'a Diagnostic>) -> String {
    let mut out = String::new();
    for d in diags {
        let severity = if d.is_error() { "error" } else { "warning" };
        out += &format!(
            "{}: {severity}[{}]: {}\n",
            location(file, d),
            d.code,
            d.message
        );
        for l in &d.secondary {
            let (line, col) = file.line_col(l.span.lo);
            out += &format!("  {line}:{col}: {}\n", l.message);
        }
        for n in &d.notes {
            out += &format!("  note: {n}\n");
        }
        if let Some(h) = &d.help {
            out += &format!("  help: {h}\n");
        }
    }
    out
}

#[test]
fn diagnostic_codes_are_unique_and_documented() {
    let all = phobos_tune::workflow::codes::ALL;
    for (i, (code, doc)) in all.iter().enumerate() {
        assert!(
            code.len() == 5 && (code.starts_with('E') || code.starts_with('W')),
            "{code}"
        );
        assert!(!doc.trim().is_empty(), "{code}");
        assert!(all[..i].iter().all(|(c, _)| c != code), "{code} twice");
    }
}
