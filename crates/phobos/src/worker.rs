//! The worker process: where launches run while the main process tunes (see
//! `phobos_tune::worker`). `phobos-kbench --worker` is one; a program tuning through
//! [`crate::Runtime`] on the GPU is its own worker, re-executed with [`WORKER_ENV`] set, and
//! calls [`worker_main`] first thing in `main` to serve there.

use crate::backend::interp::InterpDevice;
use crate::frontend::{CheckFrontend, LoadError};
use phobos_syntax::SourceFile;
use phobos_tune::worker::{serve, Setup, WorkerError, WorkerProcess, WorkerState};
use phobos_tune::{Backend, Device, Failure};

fn make_state(setup: &Setup) -> Result<WorkerState, Failure> {
    let load = |name: &str, text: &str, kernel: &str| {
        let file = SourceFile::new(name, text);
        CheckFrontend::load(file, Some(kernel)).map_err(|e| match e {
            LoadError::Diagnostics(d, f) => {
                Failure::from_log(crate::render::render_all(&d, &f, false))
            }
            LoadError::Kernel(m) => Failure::from_log(m),
        })
    };
    let mut frontend = load(&setup.source_name, &setup.source_text, &setup.kernel)?;
    if let Some(r) = &setup.reference {
        frontend = frontend.with_reference(load(&r.source_name, &r.source_text, &r.kernel)?);
    }
    let device: Box<dyn Device> = match setup.backend {
        Backend::Interp => Box::new(InterpDevice),
        Backend::Cuda => crate::backend::cuda::open_device(setup.gpu)?,
    };
    Ok(WorkerState {
        frontend: Box::new(frontend),
        device,
        oracle: Box::new(InterpDevice),
        sampled: Default::default(),
    })
}

/// The environment variable that makes [`worker_main`] serve: set on the program's own
/// re-execution as a worker.
pub const WORKER_ENV: &str = "PHOBOS_WORKER";

/// Serves jobs on stdin/stdout until told to quit; returns the exit code.
pub fn serve_stdio() -> i32 {
    let stdin = std::io::stdin();
    serve(stdin.lock(), std::io::stdout(), make_state)
}

/// The worker entry point of a program that tunes on the GPU through [`crate::Runtime`]: call
/// it first in `main`. In the program's own re-execution as a worker ([`WORKER_ENV`] set) it
/// serves launches and exits the process; otherwise it returns at once.
///
/// ```
/// // First thing in `main`; here it returns at once: this process is not a worker.
/// phobos::worker_main();
/// ```
pub fn worker_main() {
    if std::env::var_os(WORKER_ENV).is_some() {
        std::process::exit(serve_stdio());
    }
}

/// How this program, run again, is told to be a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Summons {
    /// An argument (`phobos-kbench --worker`).
    Arg(&'static str),
    /// [`WORKER_ENV`] set, for programs calling [`worker_main`].
    Env,
}

/// Starts this program again as a worker for `setup`.
pub fn start_self(
    summons: Summons,
    setup: Setup,
    job_timeout: std::time::Duration,
) -> Result<WorkerProcess, WorkerError> {
    let exe = std::env::current_exe()
        .map_err(|e| WorkerError::Spawn(format!("cannot find this program: {e}")))?;
    WorkerProcess::start(
        move || {
            let mut c = std::process::Command::new(&exe);
            match summons {
                Summons::Arg(a) => c.arg(a),
                Summons::Env => c.env(WORKER_ENV, "1"),
            };
            c
        },
        setup,
        job_timeout,
    )
}
