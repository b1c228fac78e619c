//! Several workers sharing one search (`--gpus 0,1`): each worker lives on a thread of its
//! own and runs one point at a time (the check, then the timing); the engine hands points to
//! idle lanes and collects what they return. Compiling stays in the main process, shared by
//! every lane.
//!
//! A lane's executor is built on the lane's thread, so it need not be `Send` (an in-process
//! interpreter works as well as a worker process). Synchronous calls (the final round, which
//! must time every leader on one device) go to lane 0.

use super::pool::{Crash, Executor, WorkerError};
use super::protocol::{Reply, Request};
use crate::types::DeviceInfo;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Builds one lane's executor, on the lane's thread.
pub type MakeExecutor = Box<dyn FnOnce() -> Result<Box<dyn Executor>, WorkerError> + Send>;

/// One point's work for a lane: the check, then, only when it passes, the timing.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneJob {
    /// The engine's index of the point.
    pub tag: usize,
    /// The check.
    pub verify: Request,
    /// The timing, run only after the check passes.
    pub time: Request,
}

/// What a lane did with a [`LaneJob`].
#[derive(Debug)]
pub struct LaneDone {
    pub tag: usize,
    /// The lane that ran it (0-based, in the order the pool was started).
    pub lane: usize,
    /// The GPU it ran on, when the lane's worker has one.
    pub ordinal: Option<u32>,
    /// The check's reply.
    pub verify: Result<Reply, Crash>,
    /// `None` when the check did not pass (nothing was timed).
    pub time: Option<Result<Reply, Crash>>,
    /// Log lines the worker produced meanwhile.
    pub logs: Vec<String>,
    /// How long the check and the timing took, in ms (phase times).
    pub verify_ms: f64,
    pub time_ms: f64,
}

type CallReply = (Result<Reply, Crash>, Vec<String>);

enum Msg {
    Job(Box<LaneJob>),
    Call(Box<Request>, Sender<CallReply>),
}

struct Lane {
    tx: Option<Sender<Msg>>,
    busy: bool,
    /// Jobs handed to this lane so far: idle lanes with fewer go first, so that every lane
    /// takes part even when jobs trickle in.
    jobs: usize,
    device: DeviceInfo,
    ordinal: Option<u32>,
    restarts: Arc<AtomicU32>,
    handle: Option<JoinHandle<()>>,
}

/// Workers running point jobs in parallel, one per lane (see the module docs).
pub struct WorkerPool {
    lanes: Vec<Lane>,
    done: Receiver<LaneDone>,
    logs: Vec<String>,
}

fn lane_loop(
    lane: usize,
    mut ex: Box<dyn Executor>,
    jobs: Receiver<Msg>,
    done: Sender<LaneDone>,
    restarts: Arc<AtomicU32>,
) {
    let ordinal = ex.ordinal();
    for msg in jobs {
        match msg {
            Msg::Job(job) => {
                // A panic in an in-process executor must still answer the job, or the search
                // would wait for it forever.
                let (mut verify_ms, mut time_ms) = (0.0, 0.0);
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let start = std::time::Instant::now();
                    let verify = ex.call(&job.verify);
                    verify_ms = start.elapsed().as_secs_f64() * 1e3;
                    let passed = matches!(verify, Ok(Reply::Verified { mismatch: None, .. }));
                    let start = std::time::Instant::now();
                    let time = passed.then(|| ex.call(&job.time));
                    time_ms = start.elapsed().as_secs_f64() * 1e3;
                    (verify, time)
                }));
                let (verify, time) = ran.unwrap_or_else(|p| {
                    let what = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "unknown panic".into());
                    let crash = Crash {
                        what: format!("the worker panicked: {what}"),
                    };
                    (Err(crash), None)
                });
                restarts.store(ex.restarts(), Ordering::SeqCst);
                let d = LaneDone {
                    tag: job.tag,
                    lane,
                    ordinal,
                    verify,
                    time,
                    logs: ex.take_logs(),
                    verify_ms,
                    time_ms,
                };
                if done.send(d).is_err() {
                    return;
                }
            }
            Msg::Call(req, reply) => {
                let r = ex.call(&req);
                restarts.store(ex.restarts(), Ordering::SeqCst);
                let _ = reply.send((r, ex.take_logs()));
            }
        }
    }
}

impl WorkerPool {
    /// Starts one lane per maker (all at once) and waits until each reports its device; when
    /// one fails, every lane is stopped and the first failure is returned.
    pub fn start(makers: Vec<MakeExecutor>) -> Result<WorkerPool, WorkerError> {
        let (done_tx, done) = channel();
        let mut starting = Vec::new();
        for (i, make) in makers.into_iter().enumerate() {
            let (tx, rx) = channel::<Msg>();
            let (ready_tx, ready_rx) = channel();
            let done_tx = done_tx.clone();
            let restarts = Arc::new(AtomicU32::new(0));
            let counter = restarts.clone();
            let handle = std::thread::spawn(move || match make() {
                Ok(ex) => {
                    let _ = ready_tx.send(Ok((ex.device().clone(), ex.ordinal())));
                    lane_loop(i, ex, rx, done_tx, counter);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            });
            starting.push((tx, ready_rx, restarts, handle));
        }
        let mut pool = WorkerPool {
            lanes: Vec::new(),
            done,
            logs: Vec::new(),
        };
        let mut first_error = None;
        for (i, (tx, ready_rx, restarts, handle)) in starting.into_iter().enumerate() {
            let ready = ready_rx.recv().unwrap_or_else(|_| {
                Err(WorkerError::Died(format!(
                    "worker {i} of the pool stopped while starting"
                )))
            });
            match ready {
                Ok((device, ordinal)) => pool.lanes.push(Lane {
                    tx: Some(tx),
                    busy: false,
                    jobs: 0,
                    device,
                    ordinal,
                    restarts,
                    handle: Some(handle),
                }),
                Err(e) => {
                    drop(tx);
                    let _ = handle.join();
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            // Dropping the pool stops the lanes that did start.
            Some(e) => Err(e),
            None if pool.lanes.is_empty() => Err(WorkerError::Spawn(
                "a pool needs at least one worker".into(),
            )),
            None => Ok(pool),
        }
    }

    /// How many lanes (workers) the pool has.
    pub fn lanes(&self) -> usize {
        self.lanes.len()
    }

    /// Lanes without a job.
    pub fn idle(&self) -> usize {
        self.lanes.iter().filter(|l| !l.busy).count()
    }

    /// Each lane's GPU ordinal and device, in lane order.
    pub fn devices(&self) -> Vec<(Option<u32>, &DeviceInfo)> {
        self.lanes.iter().map(|l| (l.ordinal, &l.device)).collect()
    }

    /// Hands a job to an idle lane (the one that has had the fewest jobs) and returns the lane;
    /// gives the job back when every lane is busy or gone.
    pub fn submit(&mut self, job: LaneJob) -> Result<usize, Box<LaneJob>> {
        let job = Box::new(job);
        let Some(i) = (0..self.lanes.len())
            .filter(|&i| !self.lanes[i].busy && self.lanes[i].tx.is_some())
            .min_by_key(|&i| (self.lanes[i].jobs, i))
        else {
            return Err(job);
        };
        let lane = &mut self.lanes[i];
        let tx = lane.tx.as_ref().expect("filtered on a live lane");
        match tx.send(Msg::Job(job)) {
            Ok(()) => {
                lane.busy = true;
                lane.jobs += 1;
                Ok(i)
            }
            Err(std::sync::mpsc::SendError(Msg::Job(job))) => {
                lane.tx = None;
                Err(job)
            }
            Err(_) => unreachable!("a job message comes back as sent"),
        }
    }

    /// The next finished job, waiting at most `timeout`.
    pub fn next_done(&mut self, timeout: Duration) -> Option<LaneDone> {
        let d = self.done.recv_timeout(timeout).ok()?;
        if let Some(l) = self.lanes.get_mut(d.lane) {
            l.busy = false;
        }
        Some(d)
    }

    /// Jobs handed to each lane so far, in lane order.
    pub fn jobs_per_lane(&self) -> Vec<usize> {
        self.lanes.iter().map(|l| l.jobs).collect()
    }
}

impl Executor for WorkerPool {
    fn device(&self) -> &DeviceInfo {
        &self.lanes[0].device
    }

    /// Runs on lane 0, after whatever job it has.
    fn call(&mut self, req: &Request) -> Result<Reply, Crash> {
        let (tx, rx) = channel();
        let sent = self.lanes[0]
            .tx
            .as_ref()
            .is_some_and(|l| l.send(Msg::Call(Box::new(req.clone()), tx)).is_ok());
        if !sent {
            return Err(Crash {
                what: "the first worker of the pool is gone".into(),
            });
        }
        match rx.recv() {
            Ok((reply, logs)) => {
                self.logs.extend(logs);
                reply
            }
            Err(_) => Err(Crash {
                what: "the first worker of the pool stopped".into(),
            }),
        }
    }

    fn take_logs(&mut self) -> Vec<String> {
        std::mem::take(&mut self.logs)
    }

    fn restarts(&self) -> u32 {
        self.lanes
            .iter()
            .map(|l| l.restarts.load(Ordering::SeqCst))
            .sum()
    }

    fn ordinal(&self) -> Option<u32> {
        self.lanes[0].ordinal
    }

    fn pool(&mut self) -> Option<&mut WorkerPool> {
        Some(self)
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        // Closing a lane's channel ends its loop; its executor quits its worker on drop.
        for l in &mut self.lanes {
            l.tx = None;
        }
        for l in &mut self.lanes {
            if let Some(h) = l.handle.take() {
                let _ = h.join();
            }
        }
    }
}
