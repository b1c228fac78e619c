//! `phobos run`.

use std::process::ExitCode;

pub fn run(_args: &crate::args::RunArgs) -> ExitCode {
    eprintln!("error: `phobos run` is not built yet");
    ExitCode::from(2)
}
