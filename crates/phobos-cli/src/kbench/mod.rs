//! `phobos-kbench`: tune a kernel's `@autotune` space. The engine is phobos-tune; this module
//! reads the command line, builds the back ends, and renders what the engine reports.
//!
//! Modes: tuning (problems from the command line or a sizes file, `-o` results), `--check`
//! (verify stored configurations), `--benchmark` (time them against the peak and cuBLAS) and
//! `--config` (one configuration from its config string).

pub mod args;
mod bench;
mod check;
mod export;
mod html;
mod json;
mod merge;
mod one;
mod problem;
mod problems;
mod reference;
mod render;
mod replay;
mod seed_from;
mod session;
mod shard;
mod sizes_file;
mod stored;
mod tune;

use args::{Command, KbenchArgs};
use session::Session;
use std::process::ExitCode;

/// A user error: one line, and a hint when there is a fix to suggest. An error whose details
/// were already printed (rendered diagnostics) has no message.
struct UserError {
    message: Option<String>,
    hint: Option<String>,
}

impl UserError {
    fn new(message: impl Into<String>) -> UserError {
        UserError {
            message: Some(message.into()),
            hint: None,
        }
    }

    /// Exit 1 without another line: the diagnostics are on stderr already.
    fn printed() -> UserError {
        UserError {
            message: None,
            hint: None,
        }
    }

    fn hint(mut self, hint: impl Into<String>) -> UserError {
        self.hint = Some(hint.into());
        self
    }
}

/// The entry point of the `phobos-kbench` binary.
pub fn main() -> ExitCode {
    let args = KbenchArgs::from_env();
    if args.worker {
        std::process::exit(phobos::worker::serve_stdio());
    }
    let result = match &args.command {
        Some(Command::Merge(m)) => merge::run(m),
        Some(Command::Export(e)) => export::run(e),
        Some(Command::Record(r)) => replay::record(r),
        Some(Command::Replay(r)) => replay::run(r),
        Some(Command::Report(r)) => html::run(r),
        None => run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if let Some(m) = e.message {
                eprintln!("error: {m}");
            }
            if let Some(h) = e.hint {
                eprintln!("hint: {h}");
            }
            ExitCode::from(1)
        }
    }
}

/// Which of the modes the flags ask for; two at once is an error.
enum Mode {
    Tune,
    Check(std::path::PathBuf),
    Benchmark(std::path::PathBuf),
    Config(String),
}

fn mode(args: &KbenchArgs) -> Result<Mode, UserError> {
    let mut modes = Vec::new();
    if let Some(c) = args.check_file() {
        modes.push(Mode::Check(c.map_err(UserError::new)?));
    }
    if let Some(b) = args.benchmark_file() {
        modes.push(Mode::Benchmark(b.map_err(UserError::new)?));
    }
    if let Some(c) = &args.config {
        modes.push(Mode::Config(c.clone()));
    }
    if modes.len() > 1 {
        return Err(UserError::new(
            "--check, --benchmark and --config are separate runs: give one of them",
        ));
    }
    let m = modes.pop().unwrap_or(Mode::Tune);
    if args.dry_run && args.output.is_some() {
        return Err(UserError::new(
            "-o writes the best timed configurations; --dry-run times nothing",
        ));
    }
    if !matches!(m, Mode::Tune) && args.output.is_some() {
        return Err(UserError::new(
            "-o writes the results of tuning; --check, --benchmark and --config do not tune",
        ));
    }
    Ok(m)
}

fn run(args: &KbenchArgs) -> Result<ExitCode, UserError> {
    let mode = mode(args)?;
    let shard = match mode {
        Mode::Tune => {
            let shard =
                shard::resolve(args, &|name| std::env::var(name).ok()).map_err(UserError::new)?;
            if args.seed_from.is_some() && !args.strategy.searches_adaptively(args.max_points) {
                return Err(UserError::new(format!(
                    "--seed-from says which points an adaptive search measures first; \
                     --strategy {} measures the points it picks up front",
                    args.strategy.name()
                ))
                .hint("add --strategy model (or anneal)"));
            }
            if shard.is_some() && args.strategy.searches_adaptively(args.max_points) {
                return Err(UserError::new(format!(
                    "--strategy {} picks its points as results come in: it cannot be split \
                     over shards",
                    args.strategy.name()
                ))
                .hint("shard --strategy exhaustive or --strategy random --max-points N"));
            }
            shard
        }
        // A scheduler's variables say nothing to a run that does not tune.
        _ if args.shard.is_some() || args.shards.is_some() => {
            return Err(UserError::new(
                "--shard splits a tuning job; --check, --benchmark and --config run whole",
            ))
        }
        _ => None,
    };
    if let (Some(g), Some(_)) = (&shard, &args.output) {
        return Err(UserError::new(format!(
            "-o writes the best configurations, but shard {} ({}) sees only its share of the points",
            g.shard, g.from
        ))
        .hint("merge the shards' databases (phobos-kbench merge), then run the same command without the shard, with --db MERGED -o FILE: it measures nothing again"));
    }
    if let Some(out) = &args.output {
        writable(out).map_err(|e| {
            UserError::new(format!("cannot write {}: {e}", out.display()))
                .hint("-o names a file in an existing folder you can write to")
        })?;
    }
    let mut session = Session::open(args, shard.as_ref().map(|g| g.shard))?;
    // Stored configurations are checked against the interpreter, which cannot run C++.
    if session.frontend.cuda().is_some() && !matches!(mode, Mode::Tune) {
        return Err(UserError::new(format!(
            "{} is CUDA C++: --check, --benchmark and --config take Phobos kernels",
            session.file_name
        ))
        .hint("tune it (docs/cuda.md); its results are in the store, -o and --json"));
    }
    match mode {
        Mode::Check(path) => {
            let jobs = sizes_file::load(&session, &path)?;
            check::run(&session, jobs)
        }
        Mode::Benchmark(path) => {
            let jobs = sizes_file::load(&session, &path)?;
            bench::run(&session, jobs)
        }
        Mode::Config(text) => {
            let job = one::job(&session, &text)?;
            one::run(&session, job)
        }
        Mode::Tune => {
            let jobs = tune_jobs(args, &session)?;
            tune::run(&mut session, jobs, shard)
        }
    }
}

/// Whether a file can be written, checked before a run so that its results are not lost at
/// the end: an existing file is opened for appending (and not changed), a new one is created
/// and removed again.
fn writable(path: &std::path::Path) -> std::io::Result<()> {
    use std::fs::OpenOptions;
    if path.is_dir() {
        return Err(std::io::Error::other("it is a folder"));
    }
    if path.exists() {
        return OpenOptions::new().append(true).open(path).map(drop);
    }
    OpenOptions::new().write(true).create_new(true).open(path)?;
    std::fs::remove_file(path)
}

/// The problems to tune: a sizes file's, or the command line's.
fn tune_jobs(args: &KbenchArgs, session: &Session) -> Result<Vec<problems::Job>, UserError> {
    if let Some(path) = &args.sizes {
        let dims_given = args.dims.is_some() || args.m.is_some();
        if dims_given || args.n.is_some() || args.k.is_some() {
            return Err(UserError::new(format!(
                "the problems come from {}: leave out --dims and -m/-n/-k",
                path.display()
            )));
        }
        return sizes_file::load(session, path);
    }
    let info = session.frontend.info();
    let job = problems::from_command_line(args, info, &session.names).map_err(UserError::new)?;
    // Element types and layouts are checked against the signature first.
    info.variant(
        None,
        nonempty(&job.problem.types_text()).as_deref(),
        nonempty(&job.problem.layouts_text()).as_deref(),
    )
    .map_err(|e| UserError::new(e.to_string()))?;
    if job.gemm.is_some() && problems::gemm_flags(args) {
        problems::instantiates(&session.frontend, &job.problem).map_err(UserError::new)?;
    }
    Ok(vec![job])
}

fn nonempty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}
