//! `phobos-kbench --worker`: the process that runs launches (see phobos_tune::worker).

use super::frontend::{CheckFrontend, LoadError};
use super::interp::InterpDevice;
use phobos_syntax::SourceFile;
use phobos_tune::worker::{serve, Setup, WorkerState};
use phobos_tune::{Backend, Device, Failure};

fn make_state(setup: &Setup) -> Result<WorkerState, Failure> {
    let file = SourceFile::new(setup.source_name.clone(), setup.source_text.clone());
    let frontend = CheckFrontend::load(file, Some(&setup.kernel)).map_err(|e| match e {
        LoadError::Diagnostics(d, f) => Failure::from_log(crate::render::render_all(&d, &f, false)),
        LoadError::Kernel(m) => Failure::from_log(m),
    })?;
    let device: Box<dyn Device> = match setup.backend {
        Backend::Interp => Box::new(InterpDevice),
        Backend::Cuda => super::cuda::open_device(setup.gpu)?,
    };
    Ok(WorkerState {
        frontend: Box::new(frontend),
        device,
        oracle: Box::new(InterpDevice),
    })
}

/// Serves jobs on stdin/stdout until told to quit; returns the exit code.
pub fn main() -> i32 {
    let stdin = std::io::stdin();
    serve(stdin.lock(), std::io::stdout(), make_state)
}
