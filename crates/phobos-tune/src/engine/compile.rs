//! Compiling on the thread pool, each compile under a timeout.
//!
//! NVRTC runs in-process and cannot be interrupted, so a compile that overruns its timeout is
//! reported as failed and its thread is left to finish on its own; the search does not wait.

use crate::backend::{CompileResult, Compiler};
use crate::types::{DeviceInfo, Failure};
use phobos_ir::Kernel;
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Queues one compile on the pool; its result arrives on `done` tagged with `index`.
pub fn spawn(
    pool: &rayon::ThreadPool,
    compiler: Arc<dyn Compiler + Send + Sync>,
    kernel: Kernel,
    device: DeviceInfo,
    timeout: Duration,
    index: usize,
    done: Sender<(usize, CompileResult)>,
) {
    pool.spawn(move || {
        let (tx, rx) = channel();
        let start = Instant::now();
        std::thread::spawn(move || {
            let _ = tx.send(compiler.compile(&kernel, &device));
        });
        let result = rx.recv_timeout(timeout).unwrap_or_else(|_| {
            CompileResult::Failed(Failure::from_log(format!(
                "compile timed out after {:.0} s",
                start.elapsed().as_secs_f64()
            )))
        });
        let _ = done.send((index, result));
    });
}
