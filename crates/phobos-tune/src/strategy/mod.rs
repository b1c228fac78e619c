//! Search strategies: which points of a space a run measures, and in what order.
//!
//! ```text
//! candidates (points the hard rules keep, with their prior features)
//!   ─▶ Searcher::propose(observed so far) ─▶ a batch ─▶ measured ─▶ observed ─▶ ...
//! ```
//!
//! A strategy sees only the candidates and the times observed so far. The engine measures a
//! batch with the same compile, check, timing and store as an exhaustive run; `replay` answers
//! from a recorded exhaustive run instead ([`replay`]), so a strategy is judged on exactly the
//! decisions it makes in a real run. Every strategy is deterministic given its seed.

pub mod anneal;
pub mod model;
pub mod prior;
pub mod refine;
pub mod replay;

pub use crate::space::Strategy;
pub use prior::Prior;

use phobos_ir::rng::SplitMix64;
use phobos_ir::Point;
use std::collections::HashSet;

/// Points proposed at a time by the adaptive strategies: enough to keep the compile pool busy,
/// few enough that the model learns between batches.
pub const BATCH: usize = 4;

/// One point a strategy may propose, with what is known of it before it is measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub point: Point,
    pub prior: Prior,
}

/// A measured candidate: its median time, or `None` when it failed (wrong, crashed, refused).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    pub index: usize,
    pub ms: Option<f64>,
}

/// Proposes the next candidates to measure.
pub trait Searcher {
    /// Up to `want` candidates (indices into the candidate list) never proposed or observed
    /// before; none when the strategy has nothing more to try.
    fn propose(&mut self, observed: &[Observation], want: usize) -> Vec<usize>;
}

/// How many points an adaptive strategy measures when `--max-points` is not given: 8 % of the
/// candidates (rounded), at least 16 (all of a smaller space), at most 1024.
///
/// Compiling dominates a point's cost on a GPU (a second or more against milliseconds of
/// timing), so the share of the points is close to the share of the exhaustive run's time,
/// with room below 10 % for points that compile slower than the average.
pub fn default_budget(candidates: usize) -> usize {
    ((candidates * 2 + 12) / 25).clamp(16, 1024).min(candidates)
}

/// The searcher of a strategy over these candidates, for a search of `budget` points. `first` are tried before anything else
/// (the best points of the nearest recorded problems, `--seed-from`).
pub fn searcher(
    strategy: Strategy,
    candidates: &[Candidate],
    seed: u64,
    budget: usize,
    first: &[usize],
) -> Box<dyn Searcher> {
    let inner: Box<dyn Searcher> = match strategy {
        Strategy::Exhaustive => Box::new(InOrder {
            order: (0..candidates.len()).collect(),
            next: 0,
        }),
        Strategy::Random => Box::new(refine::SampleThenRefine::new(candidates, seed, budget)),
        Strategy::Anneal => Box::new(refine::Polish::new(
            Box::new(anneal::Anneal::new(candidates, seed)),
            candidates,
            seed,
            budget,
        )),
        Strategy::Model => Box::new(refine::Polish::new(
            Box::new(model::Model::new(candidates, seed)),
            candidates,
            seed,
            budget,
        )),
    };
    Box::new(Seeded {
        first: first.to_vec(),
        inner,
    })
}

/// A strategy that picks its points up front (`exhaustive`, `random --max-points N`): every
/// candidate in order, or in a seeded random order.
pub fn in_order(strategy: Strategy, candidates: usize, seed: u64) -> Box<dyn Searcher> {
    let order = match strategy {
        Strategy::Random => Rng::new(seed).permutation(candidates),
        _ => (0..candidates).collect(),
    };
    Box::new(InOrder { order, next: 0 })
}

/// Runs a search: proposals until `max_points` are measured, the strategy stops, or
/// `out_of_time` says so. `observed` holds what is known before (results from the store);
/// `measure` measures a batch and says how many of it reached the device (a point the compiler
/// refuses, for more shared memory than the device has, costs no device time and does not
/// count against `max_points`; at most `4 * max_points` points are proposed in all). Returns
/// every observation, the earlier ones first.
pub fn drive<E>(
    searcher: &mut dyn Searcher,
    max_points: usize,
    mut observed: Vec<Observation>,
    mut measure: impl FnMut(&[usize]) -> Result<(Vec<Observation>, usize), E>,
    mut out_of_time: impl FnMut() -> bool,
) -> Result<Vec<Observation>, E> {
    let (mut spent, mut proposed) = (0, 0);
    while spent < max_points && proposed < 4 * max_points && !out_of_time() {
        let batch = searcher.propose(&observed, BATCH.min(max_points - spent));
        if batch.is_empty() {
            break;
        }
        proposed += batch.len();
        let (seen, measured) = measure(&batch)?;
        spent += measured;
        observed.extend(seen);
    }
    Ok(observed)
}

/// A fixed order (exhaustive, random), skipping what is known already.
struct InOrder {
    order: Vec<usize>,
    next: usize,
}

impl Searcher for InOrder {
    fn propose(&mut self, observed: &[Observation], want: usize) -> Vec<usize> {
        let known: HashSet<usize> = observed.iter().map(|o| o.index).collect();
        let mut out = Vec::new();
        while out.len() < want && self.next < self.order.len() {
            let i = self.order[self.next];
            self.next += 1;
            if !known.contains(&i) {
                out.push(i);
            }
        }
        out
    }
}

/// Some candidates first, then the strategy's own choices.
struct Seeded {
    first: Vec<usize>,
    inner: Box<dyn Searcher>,
}

impl Searcher for Seeded {
    fn propose(&mut self, observed: &[Observation], want: usize) -> Vec<usize> {
        let known: HashSet<usize> = observed.iter().map(|o| o.index).collect();
        let mut out: Vec<usize> = Vec::new();
        while out.len() < want && !self.first.is_empty() {
            let i = self.first.remove(0);
            if !known.contains(&i) && !out.contains(&i) {
                out.push(i);
            }
        }
        if out.len() < want {
            // The strategy sees the seeded points as taken (observed soon) so as not to
            // propose them again.
            let mut seen = observed.to_vec();
            seen.extend(out.iter().map(|&index| Observation { index, ms: None }));
            let more = self.inner.propose(&seen, want - out.len());
            out.extend(
                more.into_iter()
                    .filter(|i| !out.contains(i))
                    .collect::<Vec<_>>(),
            );
        }
        out
    }
}

/// A seeded stream of numbers (SplitMix64, as the checks' inputs).
pub(crate) struct Rng {
    key: u64,
    drawn: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng {
            key: seed ^ 0x5ea2_c4ed_0a17_e55e,
            drawn: 0,
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.drawn += 1;
        SplitMix64::at(self.key, self.drawn - 1)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// 0..n in a random order (Fisher-Yates).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
        v
    }
}

/// Each candidate's coordinates: per name, the rank of its value among the candidates' values
/// of that name (neighbours differ by one step in one name).
pub(crate) fn coordinates(candidates: &[Candidate]) -> Vec<Vec<usize>> {
    let Some(first) = candidates.first() else {
        return Vec::new();
    };
    let names = first.point.0.len();
    let mut values: Vec<Vec<i64>> = vec![Vec::new(); names];
    for c in candidates {
        for (k, (_, v)) in c.point.0.iter().enumerate().take(names) {
            values[k].push(*v);
        }
    }
    for v in &mut values {
        v.sort_unstable();
        v.dedup();
    }
    candidates
        .iter()
        .map(|c| {
            c.point
                .0
                .iter()
                .enumerate()
                .take(names)
                .map(|(k, (_, v))| values[k].binary_search(v).unwrap_or(0))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests;
