//! The anneal strategy: simulated annealing over the space's grid.
//!
//! Neighbours of a point differ from it by one step in one name (the next smaller or larger
//! value among the candidates). Each batch is made of unmeasured neighbours of the current
//! point; the current point moves to the batch's best when it is faster, or, with the
//! Metropolis probability `exp(-Δ/T)` of its log-time loss, when it is slower; the temperature
//! falls with every batch. With no unmeasured neighbour left, the walk restarts at a random
//! point. The first batch is the model's (`model::spread`): the point the prior scores best,
//! then points spread over the space.

use super::refine::Grid;
use super::{Candidate, Observation, Rng, Searcher};
use std::collections::HashSet;

/// Starting temperature, in log-time units (0.2 ≈ accepting a 20 % loss with probability 1/e).
const T0: f64 = 0.2;
/// Cooling per batch.
const COOLING: f64 = 0.8;

pub struct Anneal {
    grid: Grid,
    /// The model's scaled features and prior scores, for the first batch.
    x: Vec<Vec<f64>>,
    prior: Vec<f64>,
    rng: Rng,
    proposed: HashSet<usize>,
    current: Option<(usize, f64)>,
    temperature: f64,
    /// How many observations the walk has looked at.
    seen: usize,
}

impl Anneal {
    pub fn new(candidates: &[Candidate], seed: u64) -> Anneal {
        Anneal {
            grid: Grid::new(candidates),
            x: super::model::features(candidates),
            prior: candidates.iter().map(|c| c.prior.score()).collect(),
            rng: Rng::new(seed ^ 0x616e_6e65_616c_0000),
            proposed: HashSet::new(),
            current: None,
            temperature: T0,
            seen: 0,
        }
    }

    /// Moves the walk with the observations it has not looked at yet (one batch).
    fn step(&mut self, observed: &[Observation]) {
        let new = &observed[self.seen.min(observed.len())..];
        self.seen = observed.len();
        let Some((i, ms)) = new
            .iter()
            .filter_map(|o| Some((o.index, o.ms?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return;
        };
        let accept = match self.current {
            None => true,
            Some((_, cur)) if ms <= cur => true,
            Some((_, cur)) => {
                let loss = ms.ln() - cur.ln();
                self.rng.unit() < (-loss / self.temperature.max(1e-9)).exp()
            }
        };
        if accept {
            self.current = Some((i, ms));
        }
        self.temperature *= COOLING;
    }
}

impl Searcher for Anneal {
    fn propose(&mut self, observed: &[Observation], want: usize) -> Vec<usize> {
        self.step(observed);
        let mut known: HashSet<usize> = observed.iter().map(|o| o.index).collect();
        known.extend(self.proposed.iter().copied());
        let n = self.x.len();
        let mut out = Vec::new();
        if let Some((cur, _)) = self.current {
            let mut near: Vec<usize> = self
                .grid
                .neighbours(cur)
                .into_iter()
                .filter(|j| !known.contains(j))
                .collect();
            while out.len() < want && !near.is_empty() {
                let k = self.rng.below(near.len());
                out.push(near.swap_remove(k));
            }
        }
        // The first batch as the model's (the prior's best, then spread out).
        if self.current.is_none() && observed.iter().all(|o| o.ms.is_none()) {
            out = super::model::spread(&self.x, &self.prior, &mut self.rng, &known, want);
        }
        // A random restart: a walk with nothing left around it.
        let free = n.saturating_sub(known.len());
        while out.len() < want.min(free) {
            let j = self.rng.below(n);
            if !known.contains(&j) && !out.contains(&j) {
                out.push(j);
            }
        }
        self.proposed.extend(out.iter().copied());
        out
    }
}
