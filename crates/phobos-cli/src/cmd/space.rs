//! `phobos space`.

use std::process::ExitCode;

pub fn run(_args: &crate::args::SpaceArgs) -> ExitCode {
    eprintln!("error: `phobos space` is not built yet");
    ExitCode::from(2)
}
