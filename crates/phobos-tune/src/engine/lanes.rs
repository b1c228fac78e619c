//! The search with several workers (`--gpus 0,1`): compiled points go to whichever lane is
//! idle, each lane checks then times its point, and the main thread ends each point as its
//! lane reports back. Compiling stays on the shared thread pool; the store and the observer
//! are touched only here, on the main thread.

use super::run::State;
use super::{Event, TuneError};
use crate::backend::CompileResult;
use crate::worker::{LaneDone, LaneJob, WorkerPool};
use std::collections::VecDeque;
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// How long to wait for a lane before looking at the compile results again.
const POLL: Duration = Duration::from_millis(20);

impl State<'_, '_> {
    fn lanes(&mut self) -> &mut WorkerPool {
        self.tuner
            .executor
            .pool()
            .expect("search_lanes runs only with a pool")
    }

    pub(super) fn search_lanes(
        &mut self,
        compiled: Receiver<(usize, CompileResult)>,
        mut pending: usize,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        let mut queue: VecDeque<usize> = VecDeque::new();
        let mut in_flight = 0usize;
        loop {
            while let Ok((i, res)) = compiled.try_recv() {
                pending -= 1;
                self.compiled_one(i, res, &mut queue, observer)?;
            }
            while self.lanes().idle() > 0 {
                let Some(i) = queue.pop_front() else { break };
                if self.out_of_time() {
                    continue;
                }
                let (verify, time) = self.point_requests(i, observer);
                let job = LaneJob {
                    tag: i,
                    verify,
                    time,
                };
                match self.lanes().submit(job) {
                    Ok(_) => in_flight += 1,
                    Err(job) => {
                        // Every lane is gone: the point cannot run.
                        self.settle(
                            job.tag,
                            Err(crate::worker::Crash {
                                what: "no worker of the pool is left".into(),
                            }),
                            None,
                            None,
                            observer,
                        )?;
                    }
                }
            }
            if in_flight == 0 && queue.is_empty() && pending == 0 {
                return Ok(());
            }
            if in_flight > 0 {
                let wait = if pending > 0 {
                    POLL
                } else {
                    Duration::from_secs(1)
                };
                if let Some(done) = self.lanes().next_done(wait) {
                    in_flight -= 1;
                    self.lane_done(done, observer)?;
                }
            } else if pending > 0 {
                match compiled.recv() {
                    Ok((i, res)) => {
                        pending -= 1;
                        self.compiled_one(i, res, &mut queue, observer)?;
                    }
                    Err(_) => pending = 0,
                }
            }
        }
    }

    fn lane_done(
        &mut self,
        done: LaneDone,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        for line in done.logs {
            let who = done
                .ordinal
                .map_or_else(|| format!("worker {}", done.lane), |o| format!("gpu {o}"));
            observer(Event::Log(format!("{who}: {line}")));
        }
        self.phases.check_ms += done.verify_ms;
        self.phases.timing_ms += done.time_ms;
        if let Some(ordinal) = done.ordinal {
            observer(Event::Ran {
                point: &self.points[done.tag],
                ordinal,
            });
        }
        self.settle(done.tag, done.verify, done.time, done.ordinal, observer)
    }
}
