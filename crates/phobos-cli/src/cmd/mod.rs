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
/// the form `NAME=INTEGER`.
pub(crate) fn parse_dims(text: &str) -> Result<Vec<(String, i64)>, String> {
    let mut out = Vec::new();
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
        out.push((name.to_string(), value));
    }
    Ok(out)
}
