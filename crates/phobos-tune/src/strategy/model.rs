//! The model strategy: a Gaussian process over the point's values and its prior features
//! ([`super::prior`]), picking the candidates of highest expected improvement.
//!
//! - Features: each name's value (log2 when all values are positive) and each prior feature,
//!   scaled to [0, 1] over the candidates.
//! - Target: the log of the median time, standardized. A point that failed (wrong, crashed,
//!   refused) is not proposed again and does not enter the model: a failure says nothing of
//!   the time of its neighbours.
//! - First batch (nothing timed yet): the point the prior scores best, then points spread
//!   over those it scores within 10 % of the best (each the farthest from those taken, of a
//!   few random draws), then over the rest: the prior as a prior.
//! - Then batches by expected improvement, each pick added to the model at its predicted time
//!   before the next (the "kriging believer"), so a batch spreads over distinct guesses.

use super::{Candidate, Observation, Rng, Searcher};
use std::collections::HashSet;

/// Candidates scored per pick at most; a larger space is scored on a seeded sample.
const SCORED: usize = 4096;
/// Observation noise on the standardized target.
const NOISE: f64 = 0.05;

pub struct Model {
    x: Vec<Vec<f64>>,
    prior: Vec<f64>,
    rng: Rng,
    proposed: HashSet<usize>,
}

impl Model {
    pub fn new(candidates: &[Candidate], seed: u64) -> Model {
        Model {
            x: features(candidates),
            prior: candidates.iter().map(|c| c.prior.score()).collect(),
            rng: Rng::new(seed ^ 0x6d6f_6465_6c00_0000),
            proposed: HashSet::new(),
        }
    }

    fn first_batch(&mut self, known: &HashSet<usize>, want: usize) -> Vec<usize> {
        spread(&self.x, &self.prior, &mut self.rng, known, want)
    }
}

impl Searcher for Model {
    fn propose(&mut self, observed: &[Observation], want: usize) -> Vec<usize> {
        let mut known: HashSet<usize> = observed.iter().map(|o| o.index).collect();
        known.extend(self.proposed.iter().copied());
        // Nothing timed yet (the start, or only failures so far): spread out.
        let picks = if observed.iter().all(|o| o.ms.is_none()) {
            self.first_batch(&known, want)
        } else {
            self.by_improvement(observed, &known, want)
        };
        self.proposed.extend(picks.iter().copied());
        picks
    }
}

impl Model {
    fn by_improvement(
        &mut self,
        observed: &[Observation],
        known: &HashSet<usize>,
        want: usize,
    ) -> Vec<usize> {
        let mut xs: Vec<&[f64]> = Vec::new();
        let mut ys: Vec<f64> = Vec::new();
        for o in observed {
            if let Some(ms) = o.ms {
                xs.push(&self.x[o.index]);
                ys.push(ms.ln());
            }
        }
        let mut free: Vec<usize> = (0..self.x.len()).filter(|i| !known.contains(i)).collect();
        if free.len() > SCORED {
            let order = self.rng.permutation(free.len());
            free = order.into_iter().take(SCORED).map(|k| free[k]).collect();
            free.sort_unstable();
        }
        let mut picks = Vec::new();
        while picks.len() < want && !free.is_empty() {
            let Some(gp) = Gp::fit(&xs, &ys) else { break };
            let best = gp.best;
            let (k, _) = free
                .iter()
                .enumerate()
                .map(|(k, &i)| {
                    let (mu, sd) = gp.predict(&self.x[i]);
                    (k, expected_improvement(best, mu, sd))
                })
                .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
            let i = free.swap_remove(k);
            let (mu, _) = gp.predict(&self.x[i]);
            xs.push(&self.x[i]);
            ys.push(mu * gp.scale + gp.mean);
            picks.push(i);
        }
        picks
    }
}

/// A first batch: the candidate the prior scores best, then points spread over those it scores
/// within 10 % of the best (each the farthest from those taken, of a few random draws), then over
/// the rest. `x` are the scaled features ([`features`]), `prior` the scores.
pub(super) fn spread(
    x: &[Vec<f64>],
    prior: &[f64],
    rng: &mut Rng,
    known: &HashSet<usize>,
    want: usize,
) -> Vec<usize> {
    let free: Vec<usize> = (0..x.len()).filter(|i| !known.contains(i)).collect();
    let Some(&best) = free
        .iter()
        .max_by(|&&a, &&b| prior[a].total_cmp(&prior[b]).then(b.cmp(&a)))
    else {
        return Vec::new();
    };
    let top = prior[best];
    let mut good: Vec<usize> = free
        .iter()
        .copied()
        .filter(|&i| i != best && prior[i] >= 0.9 * top)
        .collect();
    let mut rest: Vec<usize> = free
        .iter()
        .copied()
        .filter(|&i| i != best && prior[i] < 0.9 * top)
        .collect();
    // Spread over the good ones: each next point the farthest from those taken (of a few
    // random draws), then over the rest.
    let mut out = vec![best];
    for pool in [&mut good, &mut rest] {
        while out.len() < want && !pool.is_empty() {
            let mut pick = rng.below(pool.len());
            let mut far = f64::NEG_INFINITY;
            for _ in 0..16 {
                let k = rng.below(pool.len());
                let d = out
                    .iter()
                    .map(|&o| distance2(&x[o], &x[pool[k]]))
                    .fold(f64::INFINITY, f64::min);
                if d > far {
                    far = d;
                    pick = k;
                }
            }
            out.push(pool.swap_remove(pick));
        }
    }
    out
}

/// The candidates' features, each scaled to [0, 1] (a constant feature is 0).
pub(super) fn features(candidates: &[Candidate]) -> Vec<Vec<f64>> {
    let raw: Vec<Vec<f64>> = candidates
        .iter()
        .map(|c| {
            let mut f: Vec<f64> = c.point.0.iter().map(|(_, v)| *v as f64).collect();
            f.extend(c.prior.features());
            f
        })
        .collect();
    let Some(d) = raw.first().map(Vec::len) else {
        return raw;
    };
    let names = candidates[0].point.0.len();
    let mut out = raw.clone();
    for j in 0..d {
        let column: Vec<f64> = raw
            .iter()
            .map(|r| r.get(j).copied().unwrap_or(0.0))
            .collect();
        let log = j < names && column.iter().all(|&v| v > 0.0);
        let t = |v: f64| if log { v.log2() } else { v };
        let lo = column.iter().copied().map(t).fold(f64::INFINITY, f64::min);
        let hi = column
            .iter()
            .copied()
            .map(t)
            .fold(f64::NEG_INFINITY, f64::max);
        for (r, &v) in out.iter_mut().zip(&column) {
            if r.len() > j {
                r[j] = if hi > lo {
                    (t(v) - lo) / (hi - lo)
                } else {
                    0.0
                };
            }
        }
    }
    out
}

/// A Gaussian process with a squared-exponential kernel on standardized targets.
struct Gp<'a> {
    xs: Vec<&'a [f64]>,
    chol: Vec<Vec<f64>>,
    alpha: Vec<f64>,
    mean: f64,
    scale: f64,
    /// The best (lowest) standardized target.
    best: f64,
    length2: f64,
}

impl<'a> Gp<'a> {
    fn fit(xs: &[&'a [f64]], ys: &[f64]) -> Option<Gp<'a>> {
        let n = ys.len();
        if n == 0 {
            return None;
        }
        let mean = ys.iter().sum::<f64>() / n as f64;
        let var = ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n as f64;
        let scale = var.sqrt().max(1e-6);
        let z: Vec<f64> = ys.iter().map(|y| (y - mean) / scale).collect();
        let d = xs[0].len().max(1) as f64;
        let length2 = (0.2 * d.sqrt()).powi(2);
        let mut k = vec![vec![0.0; n]; n];
        for i in 0..n {
            for j in 0..=i {
                let v = rbf(xs[i], xs[j], length2) + if i == j { NOISE } else { 0.0 };
                k[i][j] = v;
                k[j][i] = v;
            }
        }
        let chol = cholesky(k)?;
        let alpha = solve_upper_t(&chol, &solve_lower(&chol, &z));
        Some(Gp {
            xs: xs.to_vec(),
            chol,
            alpha,
            mean,
            scale,
            best: z.iter().copied().fold(f64::INFINITY, f64::min),
            length2,
        })
    }

    /// Mean and standard deviation of the standardized target at `x`.
    fn predict(&self, x: &[f64]) -> (f64, f64) {
        let k: Vec<f64> = self.xs.iter().map(|a| rbf(a, x, self.length2)).collect();
        let mu = k.iter().zip(&self.alpha).map(|(a, b)| a * b).sum();
        let v = solve_lower(&self.chol, &k);
        let var = (1.0 - v.iter().map(|a| a * a).sum::<f64>()).max(1e-12);
        (mu, var.sqrt())
    }
}

fn distance2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}

fn rbf(a: &[f64], b: &[f64], length2: f64) -> f64 {
    (-distance2(a, b) / (2.0 * length2)).exp()
}

/// The lower Cholesky factor, or `None` when the matrix is not positive definite.
fn cholesky(mut a: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    for j in 0..n {
        let s: f64 = (0..j).map(|k| a[j][k] * a[j][k]).sum();
        let d = a[j][j] - s;
        if d <= 0.0 {
            return None;
        }
        a[j][j] = d.sqrt();
        for i in j + 1..n {
            let s: f64 = (0..j).map(|k| a[i][k] * a[j][k]).sum();
            a[i][j] = (a[i][j] - s) / a[j][j];
        }
        for v in a[j].iter_mut().skip(j + 1) {
            *v = 0.0;
        }
    }
    Some(a)
}

/// `L y = b`.
fn solve_lower(l: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; b.len()];
    for i in 0..b.len() {
        let s: f64 = (0..i).map(|k| l[i][k] * y[k]).sum();
        y[i] = (b[i] - s) / l[i][i];
    }
    y
}

/// `Lᵀ x = y`.
fn solve_upper_t(l: &[Vec<f64>], y: &[f64]) -> Vec<f64> {
    let n = y.len();
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[k][i] * x[k]).sum();
        x[i] = (y[i] - s) / l[i][i];
    }
    x
}

/// Expected improvement below `best` of a normal `(mu, sd)`.
fn expected_improvement(best: f64, mu: f64, sd: f64) -> f64 {
    let z = (best - mu) / sd;
    (best - mu) * normal_cdf(z) + sd * (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// Φ(z), from erf (Abramowitz and Stegun 7.1.26, error below 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normal_cdf_and_the_solver_are_right() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.96) - 0.975).abs() < 1e-3);
        assert!((normal_cdf(-1.0) - 0.158_655).abs() < 1e-5);
        let l = cholesky(vec![vec![4.0, 2.0], vec![2.0, 3.0]]).unwrap();
        let x = solve_upper_t(&l, &solve_lower(&l, &[2.0, 1.0]));
        // [4 2; 2 3] x = [2 1] → x = [0.5, 0]
        assert!((x[0] - 0.5).abs() < 1e-12 && x[1].abs() < 1e-12, "{x:?}");
        assert!(cholesky(vec![vec![1.0, 2.0], vec![2.0, 1.0]]).is_none());
    }

    #[test]
    fn the_process_interpolates_what_it_saw() {
        let a = [0.0, 0.0];
        let b = [1.0, 1.0];
        let gp = Gp::fit(&[&a, &b], &[1.0, 3.0]).unwrap();
        let (mu_a, sd_a) = gp.predict(&a);
        let (mu_b, _) = gp.predict(&b);
        assert!(mu_a < mu_b, "{mu_a} {mu_b}");
        let (_, sd_far) = gp.predict(&[5.0, 5.0]);
        assert!(sd_far > sd_a, "{sd_far} {sd_a}");
        // Improvement is likelier where the mean is low.
        assert!(
            expected_improvement(gp.best, mu_a, sd_a) > expected_improvement(gp.best, mu_b, sd_a)
        );
    }
}
