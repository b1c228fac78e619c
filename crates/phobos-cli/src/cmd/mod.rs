//! One module per `phobos` subcommand.

pub mod check;
pub mod emit;
pub mod run;
pub mod space;

use crate::render;
use phobos_syntax::{Diagnostic, SourceFile};
use std::process::ExitCode;

/// Why a subcommand stopped: diagnostics against the source, or one line with a hint.
pub(crate) enum Failure {
    Diagnostics(Vec<Diagnostic>),
    Message {
        message: String,
        hint: Option<String>,
    },
}

impl Failure {
    pub(crate) fn msg(message: impl Into<String>) -> Failure {
        Failure::Message {
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn hint(message: impl Into<String>, hint: impl Into<String>) -> Failure {
        Failure::Message {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

/// Reads the kernel file and runs a subcommand on it: its failure on stderr (diagnostics
/// rendered against the file, or `error:` and `hint:` lines), exit 1; else exit 0.
pub(crate) fn run_on_file(
    path: &std::path::Path,
    body: impl FnOnce(&SourceFile) -> Result<(), Failure>,
) -> ExitCode {
    let file = match std::fs::read_to_string(path) {
        Ok(text) => SourceFile::new(path.display().to_string(), text),
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", path.display());
            return ExitCode::from(1);
        }
    };
    match body(&file) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Diagnostics(diags)) => {
            eprintln!(
                "{}",
                render::render_all(&diags, &file, render::stderr_color())
            );
            ExitCode::from(1)
        }
        Err(Failure::Message { message, hint }) => {
            eprintln!("error: {message}");
            if let Some(hint) = hint {
                eprintln!("hint: {hint}");
            }
            ExitCode::from(1)
        }
    }
}

/// `M=64,N=48` (commas or spaces) as name/value pairs; the error names the item that is not of
/// the form `NAME=INTEGER`, a dim given twice, or a value outside 0 to `i32::MAX` (the extents
/// the interpreter and the generated code index with).
pub(crate) fn parse_dims(text: &str) -> Result<Vec<(String, i64)>, String> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for item in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
    {
        let parsed = item
            .split_once('=')
            .and_then(|(n, v)| Some((n.trim(), v.trim().parse::<i64>().ok()?)))
            .filter(|(n, _)| !n.is_empty());
        let Some((name, value)) = parsed else {
            return Err(format!(
                "`{item}` in --dims is not of the form NAME=INTEGER"
            ));
        };
        if !(0..=i64::from(i32::MAX)).contains(&value) {
            return Err(format!(
                "the dim {name}={value} in --dims is out of range: a dim is 0 to {}",
                i32::MAX
            ));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(format!("`{name}` is given twice in --dims"));
        }
        out.push((name.to_string(), value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse_dims;

    #[test]
    fn dims_parse_with_commas_or_spaces() {
        let dims = parse_dims("M=64, N=0 K=2147483647").unwrap();
        let want = [("M", 64), ("N", 0), ("K", 2147483647)];
        let got: Vec<(&str, i64)> = dims.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn bad_dims_are_named() {
        let err = |t: &str| parse_dims(t).unwrap_err();
        assert_eq!(
            err("M=-1"),
            "the dim M=-1 in --dims is out of range: a dim is 0 to 2147483647"
        );
        assert_eq!(
            err("M=2147483648"),
            "the dim M=2147483648 in --dims is out of range: a dim is 0 to 2147483647"
        );
        assert_eq!(err("M=4,M=5"), "`M` is given twice in --dims");
        assert_eq!(err("M"), "`M` in --dims is not of the form NAME=INTEGER");
        assert_eq!(err("=4"), "`=4` in --dims is not of the form NAME=INTEGER");
    }
}
