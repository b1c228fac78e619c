//! `phobos`: check, inspect, emit and run Phobos kernels.

use phobos_cli::args::{Cli, Command};
use phobos_cli::cmd;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli: Cli = phobos_cli::parse_args(std::env::args_os());
    match &cli.command {
        Command::Check(a) => cmd::check::run(a),
        Command::Space(a) => cmd::space::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Emit(a) => cmd::emit::run(a),
    }
}
