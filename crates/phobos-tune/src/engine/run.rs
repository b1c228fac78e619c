//! The search proper: compile results in, verification and timing jobs out, then the final
//! round (the winner is picked in `finish.rs`).

use super::{compile, Event, Settings, Slot, TuneError, Tuner};
use crate::backend::{CompileResult, Compiled};
use crate::occupancy::occupancy;
use crate::store::{Phase, RunKey, VariantRow};
use crate::types::{Outcome, PointResult, Problem, Resources, CRASHED_AGAIN};
use crate::worker::{Crash, JobFailure, ReferenceSpec, Reply, Request, VariantSpec};
use phobos_ir::Point;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::mpsc::channel;

pub(super) struct State<'t, 'a> {
    pub tuner: Tuner<'a>,
    pub settings: &'t Settings,
    pub problem: &'t Problem,
    pub key: RunKey,
    pub run_id: Option<i64>,
    pub points: &'t [Point],
    pub slots: Vec<Slot>,
    pub reference_point: Option<Point>,
    /// The first variant verified in this run: the reference for problems too large for the
    /// interpreter that cannot be shrunk.
    pub verified: Option<VariantSpec>,
    /// With `Settings::compiled_reference`: the compiled reference point, once looked for
    /// (`Some(None)`: no point compiles).
    pub compiled_reference: Option<Option<VariantSpec>>,
    pub best_ms: Option<f64>,
    pub compiled: HashMap<usize, Compiled>,
    /// Binary hash to the first point that produced it.
    pub binaries: HashMap<String, usize>,
    pub new_measurements: usize,
    pub next_id: u64,
    /// The points of a completed final round, and their search medians: after the round the
    /// winner is one of them (the times of the round, interleaved back to back, are not
    /// comparable with the search times of the others).
    pub finalists: Vec<usize>,
    pub search_ms: HashMap<usize, f64>,
    /// Points whose stored crash may have been transient, run again in this run.
    pub retrying: HashSet<String>,
    /// The hash of what the code generator produced for each point (`None` where the checker
    /// refused it): stored with its results, which are reused only for the same code.
    pub codegen: Vec<Option<String>>,
    /// Each point's prior features (adaptive strategies only; empty otherwise).
    pub priors: Vec<Option<crate::strategy::Prior>>,
    pub phases: super::PhaseTimes,
    /// No point starts its check after this (`max_time`).
    pub deadline: Option<std::time::Instant>,
    /// The points the strategy chose among.
    pub candidates: usize,
}

pub(super) fn crash_outcome(reply: Result<Reply, Crash>) -> Outcome {
    match reply {
        Ok(Reply::Failed { failure, .. }) => match failure {
            JobFailure::Load(f) => Outcome::LoadFailed(f),
            JobFailure::Fatal(f) => Outcome::Crashed(format!("fault: {}", f.first_line)),
            JobFailure::Setup(f) => Outcome::Crashed(format!("worker setup: {}", f.first_line)),
        },
        Ok(other) => Outcome::Crashed(format!("unexpected worker reply: {other:?}")),
        Err(c) => Outcome::Crashed(c.what),
    }
}

impl State<'_, '_> {
    /// A fresh job id; each job's inputs are seeded from the run's seed and its id, so every
    /// check sees new data and a rerun with the same `--seed` sees the same data.
    pub(super) fn job_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(super) fn seed(&self, id: u64) -> u64 {
        crate::reduce::job_seed(self.settings.seed, id)
    }

    pub(super) fn call(
        &mut self,
        req: &Request,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<Reply, Crash> {
        let reply = self.tuner.executor.call(req);
        for line in self.tuner.executor.take_logs() {
            observer(Event::Log(format!("worker: {line}")));
        }
        reply
    }

    /// Ends a point that never reached a device: store it, tell the observer, keep it.
    pub fn finish(
        &mut self,
        i: usize,
        outcome: Outcome,
        resources: Option<Resources>,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        self.finish_on(i, outcome, resources, None, observer)
    }

    /// Ends a point that ran on the GPU `ordinal` (stored with it).
    pub fn finish_on(
        &mut self,
        i: usize,
        outcome: Outcome,
        resources: Option<Resources>,
        ordinal: Option<u32>,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        let outcome = match outcome {
            Outcome::Crashed(what) if self.retrying.contains(&self.points[i].to_pins()) => {
                Outcome::Crashed(format!("{CRASHED_AGAIN}{what}"))
            }
            o => o,
        };
        let slot = &self.slots[i];
        let r = PointResult {
            point: self.points[i].clone(),
            outcome,
            resources,
            flops: slot.flops,
            bytes: slot.bytes,
            reused: false,
        };
        if let Some(store) = self.tuner.store.as_deref_mut() {
            if !self.settings.dry_run {
                let codegen = self.codegen[i].as_deref();
                store.record_on(self.run_id, &self.key, codegen, &r, Phase::Search, ordinal)?;
            }
        }
        observer(Event::Point(&r));
        self.slots[i].result = Some(r);
        Ok(())
    }

    /// Whether the run's time (`max_time`) is up: no point starts after that.
    pub(super) fn out_of_time(&self) -> bool {
        self.deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
    }

    /// Compiles, checks and times every point still to run.
    pub fn search(
        &mut self,
        pool: &rayon::ThreadPool,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        let all: Vec<usize> = (0..self.slots.len()).collect();
        self.search_only(pool, &all, observer)
    }

    /// Compiles, checks and times those of `indices` still to run.
    pub(super) fn search_only(
        &mut self,
        pool: &rayon::ThreadPool,
        indices: &[usize],
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        let (tx, rx) = channel();
        let mut pending = 0usize;
        for &i in indices {
            let slot = &self.slots[i];
            if let (Some(k), None) = (&slot.kernel, &slot.result) {
                compile::spawn(
                    pool,
                    self.tuner.compiler.clone(),
                    k.clone(),
                    self.tuner.device.clone(),
                    self.settings.compile_timeout,
                    i,
                    tx.clone(),
                );
                pending += 1;
            }
        }
        drop(tx);
        if self.tuner.executor.pool().is_some_and(|p| p.lanes() > 1) {
            return self.search_lanes(rx, pending, observer);
        }
        let mut queue: VecDeque<usize> = VecDeque::new();
        loop {
            while let Ok((i, res)) = rx.try_recv() {
                pending -= 1;
                self.compiled_one(i, res, &mut queue, observer)?;
            }
            if let Some(i) = queue.pop_front() {
                if !self.out_of_time() {
                    self.run_point(i, observer)?;
                }
                continue;
            }
            if pending == 0 {
                break;
            }
            match rx.recv() {
                Ok((i, res)) => {
                    pending -= 1;
                    self.compiled_one(i, res, &mut queue, observer)?;
                }
                Err(_) => break,
            }
        }
        Ok(())
    }

    pub(super) fn compiled_one(
        &mut self,
        i: usize,
        res: CompileResult,
        queue: &mut VecDeque<usize>,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        let mut row = VariantRow {
            point: self.points[i].clone(),
            arch: self.tuner.device.arch(),
            binary_hash: None,
            status: "compile-failed".into(),
            reason: None,
            log: None,
            resources: None,
            compile_ms: 0.0,
        };
        match res {
            CompileResult::Pruned(reason) => {
                self.finish(i, Outcome::Pruned(reason), None, observer)
            }
            CompileResult::Failed(f) => {
                row.reason = Some(f.first_line.clone());
                row.log = Some(f.log.clone());
                if let Some(store) = self.tuner.store.as_deref_mut() {
                    store.record_variant(
                        self.run_id,
                        &self.key,
                        self.codegen[i].as_deref(),
                        &row,
                    )?;
                }
                self.finish(i, Outcome::CompileFailed(f), None, observer)
            }
            CompileResult::Ok(mut c) => {
                if let Some(why) = c.repaired.take() {
                    observer(Event::Log(format!(
                        "{}: {why}; compiled it again",
                        self.points[i].to_pins()
                    )));
                }
                let device = &self.tuner.device;
                if let Some(r) = c.resources.as_mut() {
                    r.occupancy = occupancy(r.threads, r.registers, r.smem_bytes, device);
                }
                self.phases.compile_ms += c.compile_ms;
                row.status = "ok".into();
                row.binary_hash = Some(c.binary_hash.clone());
                row.resources = c.resources.clone();
                row.compile_ms = c.compile_ms;
                if let Some(store) = self.tuner.store.as_deref_mut() {
                    store.record_variant(
                        self.run_id,
                        &self.key,
                        self.codegen[i].as_deref(),
                        &row,
                    )?;
                }
                let resources = c.resources.clone();
                if let Some(&j) = self.binaries.get(&c.binary_hash) {
                    let of = self.points[j].clone();
                    return self.finish(i, Outcome::Duplicate(of), resources, observer);
                }
                self.binaries.insert(c.binary_hash.clone(), i);
                self.compiled.insert(i, c);
                if self.settings.dry_run {
                    self.finish(i, Outcome::Compiled, resources, observer)
                } else {
                    queue.push_back(i);
                    Ok(())
                }
            }
        }
    }

    pub(super) fn spec(&self, i: usize) -> VariantSpec {
        VariantSpec {
            point: self.points[i].clone(),
            artifact: self.compiled.get(&i).and_then(|c| c.artifact.clone()),
        }
    }

    /// The check and the timing of one compiled point, with fresh job ids.
    pub(super) fn point_requests(
        &mut self,
        i: usize,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> (Request, Request) {
        let spec = self.spec(i);
        let (check_problem, reference) = self.check_plan(i, observer);
        let id = self.job_id();
        // A sampled check runs on the sample's inputs, the same for every check of the run.
        let seed = match &reference {
            ReferenceSpec::InterpSample { sample, .. } => sample.seed,
            _ => self.seed(id),
        };
        let verify = Request::Verify {
            id,
            variant: spec.clone(),
            problem: check_problem,
            reference,
            seed,
        };
        let id = self.job_id();
        let time = Request::Time {
            id,
            variant: spec,
            problem: self.problem.clone(),
            settings: self.settings.time.clone(),
            best_ms: self.best_ms,
            seed: self.seed(id),
        };
        (verify, time)
    }

    fn run_point(
        &mut self,
        i: usize,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        let (verify, time) = self.point_requests(i, observer);
        let start = std::time::Instant::now();
        let checked = self.call(&verify, observer);
        self.phases.check_ms += start.elapsed().as_secs_f64() * 1e3;
        let passed = matches!(checked, Ok(Reply::Verified { mismatch: None, .. }));
        let start = std::time::Instant::now();
        let timed = passed.then(|| self.call(&time, observer));
        self.phases.timing_ms += start.elapsed().as_secs_f64() * 1e3;
        let ordinal = self.tuner.executor.ordinal();
        self.settle(i, checked, timed, ordinal, observer)
    }

    /// Ends a point from its check's reply and, when the check passed, its timing's.
    pub(super) fn settle(
        &mut self,
        i: usize,
        checked: Result<Reply, Crash>,
        timed: Option<Result<Reply, Crash>>,
        ordinal: Option<u32>,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        let mut resources = self.compiled.get(&i).and_then(|c| c.resources.clone());
        if let Ok(Reply::Verified { checked, .. }) = &checked {
            self.slots[i].check = checked.clone();
        }
        match checked {
            Ok(Reply::Verified { mismatch: None, .. }) => {}
            Ok(Reply::Verified {
                mismatch: Some(m), ..
            }) => return self.finish_on(i, Outcome::Wrong(m), resources, ordinal, observer),
            other => return self.finish_on(i, crash_outcome(other), resources, ordinal, observer),
        }
        if self.verified.is_none() {
            self.verified = Some(self.spec(i));
        }
        match timed {
            Some(Ok(Reply::Timed {
                stats, clusters, ..
            })) => {
                if let Some(r) = resources.as_mut() {
                    r.clusters = clusters;
                }
                self.new_measurements += 1;
                self.best_ms = Some(
                    self.best_ms
                        .map_or(stats.median_ms, |b| b.min(stats.median_ms)),
                );
                self.finish_on(i, Outcome::Timed(stats), resources, ordinal, observer)
            }
            Some(other) => self.finish_on(i, crash_outcome(other), resources, ordinal, observer),
            None => self.finish_on(
                i,
                Outcome::Crashed("checked, but the worker did not time it".into()),
                resources,
                ordinal,
                observer,
            ),
        }
    }

    /// A spec for a leader that was not compiled in this run (its result came from the store).
    fn recompile(&mut self, i: usize) -> Option<VariantSpec> {
        if self.compiled.contains_key(&i) {
            return Some(self.spec(i));
        }
        let k = self
            .tuner
            .frontend
            .instantiate(&self.points[i], self.problem)
            .ok()?;
        match self.tuner.compiler.compile(&k, &self.tuner.device) {
            CompileResult::Ok(c) => {
                self.compiled.insert(i, c);
                Some(self.spec(i))
            }
            _ => None,
        }
    }

    pub fn final_round(&mut self, observer: &mut dyn FnMut(Event<'_>)) -> Result<(), TuneError> {
        let nothing_new = self.new_measurements == 0 && !self.settings.final_round_always;
        // A search timed at less than the full budget re-times even a lone leader at the full
        // budget; otherwise a round needs two to compare.
        let reduced = self.settings.time.budget_ms < self.settings.final_round.budget_ms;
        let min_leaders = if reduced { 1 } else { 2 };
        if self.settings.dry_run || nothing_new || self.settings.finalists < min_leaders {
            return Ok(());
        }
        let mut timed: Vec<(usize, f64)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let stats = s.result.as_ref()?.outcome.stats()?;
                // A candidate stopped early is far slower than the best: not a leader.
                (!stats.stopped_early).then_some((i, stats.median_ms))
            })
            .collect();
        timed.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut leaders = Vec::new();
        let mut specs = Vec::new();
        for (i, _) in timed.into_iter().take(self.settings.finalists) {
            if let Some(s) = self.recompile(i) {
                leaders.push(i);
                specs.push(s);
            }
        }
        if leaders.len() < min_leaders {
            return Ok(());
        }
        let names: Vec<Point> = leaders.iter().map(|&i| self.points[i].clone()).collect();
        observer(Event::FinalRound { leaders: &names });
        let id = self.job_id();
        let req = Request::Interleave {
            id,
            variants: specs,
            problem: self.problem.clone(),
            settings: self.settings.final_round.clone(),
            seed: self.seed(id),
        };
        match self.call(&req, observer) {
            Ok(Reply::Interleaved { stats, .. }) if stats.len() == leaders.len() => {
                for &i in &leaders {
                    if let Some(s) = self.slots[i]
                        .result
                        .as_ref()
                        .and_then(|r| r.outcome.stats())
                    {
                        self.search_ms.insert(i, s.median_ms);
                    }
                }
                self.finalists = leaders.clone();
                for (&i, s) in leaders.iter().zip(stats) {
                    self.final_result(i, Outcome::Timed(s), observer)?;
                }
            }
            Ok(Reply::Failed {
                index: Some(k),
                failure,
                ..
            }) if k < leaders.len() => {
                // A leader that fails now, after passing before, must not win.
                let o = crash_outcome(Ok(Reply::Failed {
                    id: None,
                    index: None,
                    failure,
                }));
                observer(Event::Log(format!(
                    "final round stopped by {}: {}; the others keep their search times",
                    self.points[leaders[k]].to_pins(),
                    o.reason().unwrap_or_default()
                )));
                self.final_result(leaders[k], o, observer)?;
            }
            other => {
                let what = match other {
                    Err(c) => c.what,
                    Ok(r) => format!("unexpected reply {r:?}"),
                };
                observer(Event::Log(format!(
                    "final round failed ({what}); keeping the search times"
                )));
            }
        }
        Ok(())
    }

    fn final_result(
        &mut self,
        i: usize,
        outcome: Outcome,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        let Some(r) = self.slots[i].result.as_mut() else {
            return Ok(());
        };
        r.outcome = outcome;
        r.reused = false;
        let ordinal = self.tuner.executor.ordinal();
        if let Some(store) = self.tuner.store.as_deref_mut() {
            let codegen = self.codegen[i].as_deref();
            store.record_on(self.run_id, &self.key, codegen, r, Phase::Final, ordinal)?;
        }
        observer(Event::Log(format!(
            "final round: {} {}",
            r.point.to_pins(),
            r.outcome.stats().map_or_else(
                || r.outcome.status().to_string(),
                |s| format!("{:.4} ms", s.median_ms)
            )
        )));
        Ok(())
    }
}
