//! `phobos-kbench`: compile every point of a kernel's `@autotune` space, check each against the
//! interpreter, time the rest and keep the fastest.

fn main() -> std::process::ExitCode {
    phobos_cli::kbench::main()
}
