//! `phobos check`.

use std::process::ExitCode;

pub fn run(_args: &crate::args::CheckArgs) -> ExitCode {
    eprintln!("error: `phobos check` is not built yet");
    ExitCode::from(2)
}
