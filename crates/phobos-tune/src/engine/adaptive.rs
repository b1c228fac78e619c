//! The search of an adaptive strategy (`anneal`, `model`): batches the strategy proposes,
//! each compiled, checked and timed like any point, their times fed back before the next.

use super::run::State;
use super::{Event, TuneError};
use crate::strategy::{default_budget, drive, searcher, Candidate, Observation};
use crate::types::Outcome;

impl State<'_, '_> {
    /// A slot's time as the strategy sees it: its median, a duplicate binary's original's, or
    /// `None` when it failed.
    fn observed_ms(&self, i: usize) -> Option<f64> {
        let r = self.slots[i].result.as_ref()?;
        match &r.outcome {
            Outcome::Duplicate(of) => {
                let j = self.points.iter().position(|p| p == of)?;
                Some(self.slots[j].result.as_ref()?.outcome.stats()?.median_ms)
            }
            o => o.stats().map(|s| s.median_ms),
        }
    }

    pub(super) fn search_adaptive(
        &mut self,
        pool: &rayon::ThreadPool,
        observer: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), TuneError> {
        // The candidates: points left to run after pruning, and points the store answered.
        let slots: Vec<usize> = (0..self.slots.len())
            .filter(|&i| {
                let s = &self.slots[i];
                let prior = self.priors.get(i).copied().flatten();
                prior.is_some() && (s.kernel.is_some() || s.result.is_some())
            })
            .collect();
        let candidates: Vec<Candidate> = slots
            .iter()
            .map(|&i| Candidate {
                point: self.points[i].clone(),
                prior: self.priors[i].unwrap_or_default(),
            })
            .collect();
        self.candidates = candidates.len();
        let known: Vec<Observation> = slots
            .iter()
            .enumerate()
            .filter(|(_, &i)| self.slots[i].result.is_some())
            .map(|(c, &i)| Observation {
                index: c,
                ms: self.observed_ms(i),
            })
            .collect();
        let first: Vec<usize> = self
            .settings
            .first_points
            .iter()
            .filter_map(|p| candidates.iter().position(|c| &c.point == p))
            .collect();
        let budget = self
            .settings
            .max_points
            .unwrap_or_else(|| default_budget(candidates.len()));
        observer(Event::Log(format!(
            "strategy {}: at most {budget} of {} candidate points, in batches",
            self.settings.strategy.name(),
            candidates.len()
        )));
        let mut s = searcher(
            self.settings.strategy,
            &candidates,
            self.settings.seed,
            budget,
            &first,
        );
        let deadline = self.deadline;
        drive::<TuneError>(
            s.as_mut(),
            budget,
            known,
            |batch| {
                let picked: Vec<usize> = batch.iter().map(|&c| slots[c]).collect();
                self.search_only(pool, &picked, observer)?;
                let seen = batch
                    .iter()
                    .map(|&c| Observation {
                        index: c,
                        ms: self.observed_ms(slots[c]),
                    })
                    .collect();
                // Points the compiler refused (or pruned, for its shared memory) never
                // reached the device.
                let measured = picked
                    .iter()
                    .filter(|&&i| {
                        !matches!(
                            self.slots[i].result.as_ref().map(|r| &r.outcome),
                            Some(Outcome::Pruned(_) | Outcome::CompileFailed(_)) | None
                        )
                    })
                    .count();
                Ok((seen, measured))
            },
            || deadline.is_some_and(|d| std::time::Instant::now() >= d),
        )?;
        Ok(())
    }
}
