//! The main side of the worker: spawn, feed, watch, replace.
//!
//! **The main process owns no GPU state.** Every launch happens in a child process; when it
//! dies (a fault, an abort) or stops answering (a hung kernel, killed after the job timeout),
//! the job is answered with a [`Crash`], a fresh worker is started for the next job, and the
//! search goes on.

use super::protocol::{decode, encode, JobFailure, Reply, Request, Setup};
use super::serve::{handle, WorkerState};
use crate::types::{DeviceInfo, Failure};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A job that killed or hung its worker.
#[derive(Clone, Debug, PartialEq)]
pub struct Crash {
    pub what: String,
}

/// Why no worker could be started at all.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WorkerError {
    #[error("cannot start the worker process: {0}")]
    Spawn(String),
    #[error("the worker could not set up: {0}")]
    Setup(Failure),
    #[error("the worker died while starting: {0}")]
    Died(String),
}

/// Something that runs jobs: a worker process, or (for the interpreter in tests and dry runs)
/// the handler called in-process.
pub trait Executor {
    /// The device the jobs run on.
    fn device(&self) -> &DeviceInfo;
    /// Runs one job and waits for its reply.
    fn call(&mut self, req: &Request) -> Result<Reply, Crash>;
    /// Log lines the worker produced since the last call.
    fn take_logs(&mut self) -> Vec<String>;
    /// How many times a worker was replaced.
    fn restarts(&self) -> u32 {
        0
    }
    /// The GPU ordinal the jobs run on (the worker's `Setup::gpu`); `None` in-process.
    fn ordinal(&self) -> Option<u32> {
        None
    }
    /// Several workers that run point jobs at once (`--gpus 0,1`); `None` for one worker.
    fn pool(&mut self) -> Option<&mut super::lanes::WorkerPool> {
        None
    }
}

/// Runs jobs in this process. Only for backends without GPU state (the interpreter).
pub struct InProcess {
    state: WorkerState,
    device: DeviceInfo,
}

impl InProcess {
    pub fn new(state: WorkerState) -> InProcess {
        let device = state.device.info();
        InProcess { state, device }
    }
}

impl Executor for InProcess {
    fn device(&self) -> &DeviceInfo {
        &self.device
    }

    fn call(&mut self, req: &Request) -> Result<Reply, Crash> {
        Ok(handle(&mut self.state, req))
    }

    fn take_logs(&mut self) -> Vec<String> {
        Vec::new()
    }
}

enum Line {
    Reply(Reply),
    Text(String),
    Eof,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Line>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

/// Lines of worker stderr kept to explain a crash.
const STDERR_TAIL: usize = 20;

/// A worker process, restarted on demand.
pub struct WorkerProcess {
    command: Box<dyn Fn() -> Command + Send>,
    setup: Setup,
    running: Option<Running>,
    device: DeviceInfo,
    /// How long one job may take before the worker is presumed hung.
    pub job_timeout: Duration,
    /// How long a worker may take to start and answer `Setup`.
    pub start_timeout: Duration,
    logs: Vec<String>,
    restarts: u32,
}

impl WorkerProcess {
    /// Starts a worker (`command()` must run the worker loop on stdin/stdout) and waits until it
    /// reports its device.
    pub fn start(
        command: impl Fn() -> Command + Send + 'static,
        setup: Setup,
        job_timeout: Duration,
    ) -> Result<WorkerProcess, WorkerError> {
        let mut w = WorkerProcess {
            command: Box::new(command),
            setup,
            running: None,
            device: DeviceInfo::interpreter(),
            job_timeout,
            start_timeout: Duration::from_secs(120),
            logs: Vec::new(),
            restarts: 0,
        };
        w.device = w.spawn()?;
        Ok(w)
    }

    fn spawn(&mut self) -> Result<DeviceInfo, WorkerError> {
        let mut child = (self.command)()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| WorkerError::Spawn(e.to_string()))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let msg = match decode::<Reply>(&line) {
                    Some(r) => Line::Reply(r),
                    None => Line::Text(line),
                };
                if tx.send(msg).is_err() {
                    return;
                }
            }
            let _ = tx.send(Line::Eof);
        });
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr_tail.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            }
        });
        self.running = Some(Running {
            child,
            stdin,
            lines,
            stderr_tail,
        });
        match self.exchange(&Request::Setup(self.setup.clone()), self.start_timeout) {
            Ok(Reply::Ready { device }) => Ok(device),
            Ok(Reply::Failed {
                failure: JobFailure::Setup(f),
                ..
            }) => {
                self.kill();
                Err(WorkerError::Setup(f))
            }
            Ok(other) => {
                self.kill();
                Err(WorkerError::Died(format!(
                    "unexpected first reply {other:?}"
                )))
            }
            Err(c) => Err(WorkerError::Died(c.what)),
        }
    }

    fn kill(&mut self) {
        if let Some(mut r) = self.running.take() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }

    /// Sends a request and waits for its reply, collecting logs. On a crash or a timeout the
    /// worker is gone afterwards.
    fn exchange(&mut self, req: &Request, timeout: Duration) -> Result<Reply, Crash> {
        let Some(r) = self.running.as_mut() else {
            return Err(Crash {
                what: "no worker".into(),
            });
        };
        if r.stdin
            .write_all(encode(req).as_bytes())
            .and_then(|_| r.stdin.flush())
            .is_err()
        {
            return Err(self.reap("the worker closed its input"));
        }
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let r = self.running.as_mut().expect("running");
            match r.lines.recv_timeout(left) {
                Ok(Line::Reply(Reply::Log { message })) | Ok(Line::Text(message)) => {
                    self.logs.push(message)
                }
                Ok(Line::Reply(reply)) => {
                    if let Reply::Failed {
                        failure: JobFailure::Fatal(f),
                        ..
                    } = &reply
                    {
                        // The worker exits after a fatal fault: collect it now.
                        let what = format!("fault: {}", f.first_line);
                        let _ = self.reap(&what);
                    }
                    return Ok(reply);
                }
                Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.reap("the worker died"));
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    return Err(Crash {
                        what: format!(
                            "no answer within {:.0} s: the worker was killed",
                            timeout.as_secs_f64()
                        ),
                    });
                }
            }
        }
    }

    /// Waits for a dead worker and describes how it died.
    fn reap(&mut self, what: &str) -> Crash {
        let Some(mut r) = self.running.take() else {
            return Crash { what: what.into() };
        };
        let status = r.child.wait().ok();
        // Give the stderr reader a moment to drain the last lines.
        std::thread::sleep(Duration::from_millis(50));
        let tail: Vec<String> = r
            .stderr_tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        let mut what = what.to_string();
        if let Some(s) = status {
            what.push_str(&format!(" ({})", describe_exit(s)));
        }
        if let Some(last) = tail.iter().rev().find(|l| !l.trim().is_empty()) {
            what.push_str(&format!(": {}", last.trim()));
        }
        Crash { what }
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(sig) = status.signal() {
        let name = match sig {
            6 => "SIGABRT",
            9 => "SIGKILL",
            11 => "SIGSEGV",
            7 => "SIGBUS",
            8 => "SIGFPE",
            4 => "SIGILL",
            15 => "SIGTERM",
            _ => "",
        };
        format!("signal {sig} {name}").trim_end().to_string()
    } else {
        format!("exit code {}", status.code().unwrap_or(-1))
    }
}

impl Executor for WorkerProcess {
    fn device(&self) -> &DeviceInfo {
        &self.device
    }

    fn call(&mut self, req: &Request) -> Result<Reply, Crash> {
        if self.running.is_none() {
            self.restarts += 1;
            if let Err(e) = self.spawn() {
                return Err(Crash {
                    what: format!("could not restart the worker: {e}"),
                });
            }
        }
        self.exchange(req, self.job_timeout)
    }

    fn take_logs(&mut self) -> Vec<String> {
        std::mem::take(&mut self.logs)
    }

    fn restarts(&self) -> u32 {
        self.restarts
    }

    fn ordinal(&self) -> Option<u32> {
        Some(self.setup.gpu)
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if let Some(r) = self.running.as_mut() {
            let _ = r.stdin.write_all(encode(&Request::Quit).as_bytes());
            let _ = r.stdin.flush();
        }
        if let Some(mut r) = self.running.take() {
            // A worker gets a moment to quit on its own, then is killed.
            for _ in 0..20 {
                if let Ok(Some(_)) = r.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}
