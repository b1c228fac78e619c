//! `phobos emit`.

use std::process::ExitCode;

pub fn run(_args: &crate::args::EmitArgs) -> ExitCode {
    eprintln!("error: `phobos emit` is not built yet");
    ExitCode::from(2)
}
