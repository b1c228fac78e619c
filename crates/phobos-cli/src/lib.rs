//! The `phobos` and `phobos-kbench` command-line tools: clap, rendering, progress.
//! **The only crate that prints.**

/// `println!` for the tools' standard output (`print!`: `out!`): a reader that stops early
/// (`phobos emit ... | head`) ends the process quietly where the std macros would panic.
macro_rules! outln {
    () => {
        $crate::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_out(format_args!($($arg)*))
    };
}

/// Writes to standard output. A closed pipe exits with status 0 (its reader has what it wanted,
/// as with `head`); any other failure (a full disk) says so on standard error and exits with 1.
#[doc(hidden)]
pub fn write_out(args: std::fmt::Arguments) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to standard output: {e}");
        std::process::exit(1);
    }
}

/// Parses the process's arguments as clap's `parse_from` does, except for a `--help` or
/// `--version` that cannot be written: as [`write_out`], a closed pipe exits with 0 and any
/// other failure (a full disk) says so on standard error and exits with 1, where clap's own
/// exit would report success. Usage errors go to standard error and exit with 2, as clap's.
pub fn parse_args<T: clap::Parser>(args: impl IntoIterator<Item = std::ffi::OsString>) -> T {
    match T::try_parse_from(args) {
        Ok(t) => t,
        Err(e) if e.use_stderr() => e.exit(),
        Err(e) => {
            if let Err(io) = e.print() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    std::process::exit(0);
                }
                eprintln!("error: writing to standard output: {io}");
                std::process::exit(1);
            }
            std::process::exit(e.exit_code())
        }
    }
}

pub mod args;
pub mod cmd;
pub mod kbench;
pub use phobos::render;
