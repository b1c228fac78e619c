//! Local refinement around the best points measured, and the random strategy built on it.
//!
//! The spaces the tuner searches have their fastest points in a small region (on the recorded
//! H200 spaces, one to a few dozen points of a thousand within 2 % of the best): a uniform
//! sample of a tenth of the space misses it more often than not, but its best points are
//! usually a step or two away from it. Refinement measures the unmeasured neighbours (one name
//! one step away, as in `anneal`) of the fastest point measured, then of the next fastest, and
//! so on, so each batch moves with what was just learnt.

use super::{coordinates, Candidate, Observation, Rng, Searcher};
use std::collections::{HashMap, HashSet};

/// The candidates on the space's grid: neighbours differ by one step in one name.
pub(crate) struct Grid {
    coords: Vec<Vec<usize>>,
    at: HashMap<Vec<usize>, usize>,
}

impl Grid {
    pub fn new(candidates: &[Candidate]) -> Grid {
        let coords = coordinates(candidates);
        let at = coords
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, c)| (c, i))
            .collect();
        Grid { coords, at }
    }

    /// The candidates one step away from `i` in one name.
    pub fn neighbours(&self, i: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let c = &self.coords[i];
        for k in 0..c.len() {
            for up in [false, true] {
                let mut n = c.clone();
                if up {
                    n[k] += 1;
                } else if n[k] > 0 {
                    n[k] -= 1;
                } else {
                    continue;
                }
                if let Some(&j) = self.at.get(&n) {
                    out.push(j);
                }
            }
        }
        out
    }

    /// The candidates one step away from `i` in each of two names (a diagonal move: a tile
    /// and the threads that share it grow together).
    pub fn diagonal(&self, i: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let c = &self.coords[i];
        for a in 0..c.len() {
            for b in a + 1..c.len() {
                for (da, db) in [(-1, -1), (-1, 1), (1, -1), (1, 1)] {
                    let (Some(x), Some(y)) =
                        (c[a].checked_add_signed(da), c[b].checked_add_signed(db))
                    else {
                        continue;
                    };
                    let mut n = c.clone();
                    n[a] = x;
                    n[b] = y;
                    if let Some(&j) = self.at.get(&n) {
                        out.push(j);
                    }
                }
            }
        }
        out
    }

    /// Up to `want` candidates not in `known`: the neighbours of the fastest point observed
    /// (in a random order), then of the second and third fastest, then the diagonal
    /// neighbours of the fastest (a way out of a local minimum along one name), then the
    /// neighbours of the fourth fastest and so on. Fewer when all of those are measured.
    pub fn around_best(
        &self,
        observed: &[Observation],
        known: &HashSet<usize>,
        rng: &mut Rng,
        want: usize,
    ) -> Vec<usize> {
        let mut timed: Vec<(usize, f64)> = observed
            .iter()
            .filter_map(|o| Some((o.index, o.ms?)))
            .collect();
        timed.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let mut rings: Vec<Vec<usize>> = Vec::new();
        for (r, &(i, _)) in timed.iter().enumerate() {
            rings.push(self.neighbours(i));
            if r + 1 == RINGS.min(timed.len()) {
                rings.push(self.diagonal(timed[0].0));
            }
        }
        let mut out = Vec::new();
        for ring in rings {
            if out.len() >= want {
                break;
            }
            let mut near: Vec<usize> = ring
                .into_iter()
                .filter(|j| !known.contains(j) && !out.contains(j))
                .collect();
            while out.len() < want && !near.is_empty() {
                let k = rng.below(near.len());
                out.push(near.swap_remove(k));
            }
        }
        out
    }
}

/// How many of the fastest points have their neighbours measured before the diagonal
/// neighbours of the fastest.
const RINGS: usize = 3;

/// `anneal` and `model` spend the last `1 / POLISH_DIVISOR` of a budget of at least
/// [`POLISH_FROM`] points refining around the best points found ([`Polish`]).
pub const POLISH_DIVISOR: usize = 4;
/// The smallest budget with a refinement: the few points of a smaller one are the strategy's
/// own (its best guesses are already near its best point).
pub const POLISH_FROM: usize = 32;

/// A strategy whose last quarter of the budget refines around the best points found: the
/// strategy explores, the refinement makes sure the region of the best is measured (a
/// surrogate's guesses and a walk's last steps often leave a neighbour of the best point one
/// step away unmeasured, and on the recorded spaces that neighbour is often the best).
/// Falls back to the strategy when nothing is left around the best.
pub struct Polish {
    inner: Box<dyn Searcher>,
    grid: Grid,
    rng: Rng,
    /// Points the strategy proposes before refining starts.
    explore: usize,
    proposed: HashSet<usize>,
}

impl Polish {
    pub fn new(
        inner: Box<dyn Searcher>,
        candidates: &[Candidate],
        seed: u64,
        budget: usize,
    ) -> Polish {
        Polish {
            inner,
            grid: Grid::new(candidates),
            rng: Rng::new(seed ^ 0x706f_6c69_7368_0000),
            explore: if budget >= POLISH_FROM {
                budget - budget / POLISH_DIVISOR
            } else {
                budget
            },
            proposed: HashSet::new(),
        }
    }
}

impl Searcher for Polish {
    fn propose(&mut self, observed: &[Observation], want: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let explore = want.min(self.explore.saturating_sub(self.proposed.len()));
        if explore > 0 {
            out = self.inner.propose(observed, explore);
        }
        if out.len() < want && self.proposed.len() + out.len() >= self.explore {
            let mut known: HashSet<usize> = observed.iter().map(|o| o.index).collect();
            known.extend(self.proposed.iter().copied());
            known.extend(out.iter().copied());
            let more = self
                .grid
                .around_best(observed, &known, &mut self.rng, want - out.len());
            out.extend(more);
        }
        if out.len() < want {
            // Nothing left around the best: the strategy goes on. It sees the refinement's
            // points as taken, so as not to propose them again.
            let mut seen = observed.to_vec();
            seen.extend(
                self.proposed
                    .iter()
                    .chain(&out)
                    .map(|&index| Observation { index, ms: None }),
            );
            let more = self.inner.propose(&seen, want - out.len());
            out.extend(
                more.into_iter()
                    .filter(|i| !out.contains(i))
                    .collect::<Vec<_>>(),
            );
        }
        self.proposed.extend(out.iter().copied());
        out
    }
}

/// The random strategy with its default budget: a uniform sample of 40 % of the budget, then
/// refinement around the best points found for the rest (a uniform draw again when no
/// neighbour is left).
pub struct SampleThenRefine {
    order: Vec<usize>,
    next: usize,
    grid: Grid,
    rng: Rng,
    /// Points drawn uniformly before refining.
    sample: usize,
    proposed: HashSet<usize>,
}

impl SampleThenRefine {
    pub fn new(candidates: &[Candidate], seed: u64, budget: usize) -> SampleThenRefine {
        let mut rng = Rng::new(seed);
        SampleThenRefine {
            order: rng.permutation(candidates.len()),
            next: 0,
            grid: Grid::new(candidates),
            rng,
            sample: (budget * 2).div_ceil(5),
            proposed: HashSet::new(),
        }
    }

    fn draw(&mut self, known: &HashSet<usize>, want: usize, out: &mut Vec<usize>) {
        while out.len() < want && self.next < self.order.len() {
            let i = self.order[self.next];
            self.next += 1;
            if !known.contains(&i) && !out.contains(&i) {
                out.push(i);
            }
        }
    }
}

impl Searcher for SampleThenRefine {
    fn propose(&mut self, observed: &[Observation], want: usize) -> Vec<usize> {
        let mut known: HashSet<usize> = observed.iter().map(|o| o.index).collect();
        known.extend(self.proposed.iter().copied());
        let mut out = Vec::new();
        let sample = want.min(self.sample.saturating_sub(self.proposed.len()));
        self.draw(&known, sample, &mut out);
        if out.len() < want {
            known.extend(out.iter().copied());
            let more = self
                .grid
                .around_best(observed, &known, &mut self.rng, want - out.len());
            out.extend(more);
        }
        self.draw(&known, want, &mut out);
        self.proposed.extend(out.iter().copied());
        out
    }
}
