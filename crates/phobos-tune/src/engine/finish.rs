//! The end of a run: the dry run's interpreter check, and the report with the winner.

use super::run::{crash_outcome, State};
use super::{DryRunCheck, Event, PointCheck, Report, TuneError, Winner};
use crate::space::Pinned;
use crate::types::{Outcome, PointResult, Stats};
use crate::verify::elements;
use crate::worker::{ReferenceSpec, Reply, Request, VariantSpec};
use phobos_ir::Point;

impl State<'_, '_> {
    fn dry_run_check(&mut self, observer: &mut dyn FnMut(Event<'_>)) -> Option<DryRunCheck> {
        // Without an IR to interpret, a dry run (no device) has nothing to check against.
        if self.settings.compiled_reference || self.settings.external_reference.is_some() {
            return None;
        }
        let point = self.reference_point.clone()?;
        let i = self.points.iter().position(|p| p == &point)?;
        let kernel = self.slots[i].kernel.clone()?;
        // The checked variant runs on the interpreter too (a dry run has no device): only a
        // problem it can run whole is checked, never a sample of a large one.
        let problem = if elements(&kernel, self.problem)
            .is_some_and(|e| e <= self.settings.verify_max_elements)
        {
            self.problem.clone()
        } else {
            self.reduced_problem(&kernel, &point)?
        };
        let reference = ReferenceSpec::Interp {
            point: point.clone(),
        };
        let id = self.job_id();
        let req = Request::Verify {
            id,
            variant: VariantSpec {
                point: point.clone(),
                artifact: None,
            },
            problem,
            reference,
            seed: self.seed(id),
        };
        let (error, checked) = match self.call(&req, observer) {
            Ok(Reply::Verified {
                mismatch: None,
                checked,
                ..
            }) => (None, checked),
            Ok(Reply::Verified {
                mismatch: Some(m),
                checked,
                ..
            }) => (Outcome::Wrong(m).reason(), checked),
            other => (crash_outcome(other).reason(), None),
        };
        Some(DryRunCheck {
            point,
            error,
            checked,
        })
    }

    pub fn report(
        mut self,
        pinned: Pinned,
        default_point: Point,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<Report, TuneError> {
        let dry_run_check = if self.settings.dry_run {
            self.dry_run_check(observer)
        } else {
            None
        };
        let checks: Vec<PointCheck> = self
            .slots
            .iter_mut()
            .zip(self.points)
            .filter_map(|(s, p)| {
                Some(PointCheck {
                    point: p.clone(),
                    checked: s.check.take()?,
                })
            })
            .collect();
        // The points that ended, by their slot: every point of an exhaustive search; an
        // adaptive one's picks; not those a time limit left unmeasured.
        let ended: Vec<(usize, PointResult)> = self
            .slots
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| Some((i, s.result.take()?)))
            .collect();
        // After a final round the winner is the fastest finalist in that round. A point
        // stopped early was timed only until it was far slower than the best: never a winner.
        let candidate = |i: usize| self.finalists.is_empty() || self.finalists.contains(&i);
        let best = ended
            .iter()
            .filter(|(i, _)| candidate(*i))
            .filter_map(|(i, p)| Some((*i, p, p.outcome.stats()?)))
            .filter(|(_, _, s)| !s.stopped_early)
            .min_by(|a, b| a.2.median_ms.total_cmp(&b.2.median_ms));
        let default_index = ended
            .iter()
            .find(|(_, p)| p.point == default_point)
            .map(|(i, _)| *i);
        let default_ms = ended
            .iter()
            .find(|(_, p)| p.point == default_point)
            .and_then(|(_, p)| p.outcome.stats())
            .map(|s: &Stats| s.median_ms);
        let winner_codegen = best.and_then(|(i, _, _)| self.codegen[i].clone());
        let winner = best.map(|(i, p, s)| {
            // The speed-up compares times of one kind: the final round's when the default
            // point ran in it too, else both search times.
            let default_in_final = default_index.is_some_and(|d| self.finalists.contains(&d));
            let winner_ms = if default_in_final {
                s.median_ms
            } else {
                self.search_ms.get(&i).copied().unwrap_or(s.median_ms)
            };
            Winner {
                point: p.point.clone(),
                stats: s.clone(),
                speedup_vs_default: default_ms.map(|d| d / winner_ms),
            }
        });
        if let (Some(store), Some(run)) = (self.tuner.store.as_deref_mut(), self.run_id) {
            let codegen = winner_codegen.as_deref();
            store.finish_run(run, winner.as_ref().map(|w| (&w.point, codegen)))?;
        }
        let points: Vec<PointResult> = ended.into_iter().map(|(_, p)| p).collect();
        Ok(Report {
            kernel: self.key.kernel_name.clone(),
            kernel_hash: self.key.kernel_hash.clone(),
            backend: self.key.backend,
            compiler: self.key.compiler.clone(),
            device: self.tuner.executor.device().clone(),
            problem: self.problem.clone(),
            pins: pinned.pins,
            default_point,
            reference_point: self.reference_point.clone(),
            points,
            winner,
            dry_run: self.settings.dry_run,
            dry_run_check,
            worker_restarts: self.tuner.executor.restarts(),
            checks,
            strategy: self.settings.strategy,
            candidates: self.candidates,
            phases: self.phases.clone(),
        })
    }
}
