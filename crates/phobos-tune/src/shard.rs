//! Splitting one tuning job over independent processes (`--shard I/N`): the work is a list of
//! units (one point of one problem), each with a predicted cost, dealt to N shards so that every
//! unit goes to exactly one shard and the shards' predicted totals stay close.
//!
//! The split is a pure function of the unit list, so N processes started from the same command
//! line (the same kernel, sizes file and pins) agree on it without talking to each other. They
//! share nothing at run time: each writes its own results database, merged afterwards
//! (`Store::merge`).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::fmt;

/// The most shards a job may be split into: enough for any cluster's array of GPUs, and few
/// enough that dealing a space's points to them stays quick.
pub const MAX_SHARDS: usize = 4096;

/// Shard `index` of `count` (`0 <= index < count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// Why a shard cannot be made from what was given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("`{0}` is not a shard: write I/N with 0 <= I < N, e.g. 0/4")]
    Syntax(String),
    #[error("shard {index} of {count} does not exist: the shards of {count} are 0 to {last}", last = count.saturating_sub(1))]
    OutOfRange { index: usize, count: usize },
    #[error("a job split into 0 shards covers nothing: give at least 1")]
    NoShards,
    #[error("{count} shards are more than the {MAX_SHARDS} a job may be split into")]
    TooMany { count: usize },
}

impl Shard {
    /// A shard, checked.
    pub fn new(index: usize, count: usize) -> Result<Shard, ShardError> {
        if count == 0 {
            return Err(ShardError::NoShards);
        }
        if count > MAX_SHARDS {
            return Err(ShardError::TooMany { count });
        }
        if index >= count {
            return Err(ShardError::OutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }

    /// `I/N`, as `--shard` takes it.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax(text.to_string());
        let (i, n) = text.trim().split_once('/').ok_or_else(syntax)?;
        let i: usize = i.trim().parse().map_err(|_| syntax())?;
        let n: usize = n.trim().parse().map_err(|_| syntax())?;
        Shard::new(i, n)
    }

    /// Which shard each unit goes to, given the units' predicted costs in a fixed order.
    ///
    /// Longest first onto the least loaded shard (ties: the unit listed first, the lowest
    /// shard): a greedy that keeps the largest total within the largest unit of the mean. Units
    /// of equal cost, as the points of one problem are, go round the shards in order, so each
    /// shard gets a slice of every problem rather than whole problems.
    pub fn assign(costs: &[f64], count: usize) -> Vec<usize> {
        let count = count.max(1);
        let mut order: Vec<usize> = (0..costs.len()).collect();
        // Stable: equal costs keep the order they were listed in.
        order.sort_by(|&a, &b| clean(costs[b]).total_cmp(&clean(costs[a])));
        // The least loaded shard, ties to the lowest: a heap keeps this O(log N) a unit.
        let mut load: BinaryHeap<Reverse<(Load, usize)>> =
            (0..count).map(|s| Reverse((Load(0.0), s))).collect();
        let mut owner = vec![0usize; costs.len()];
        for u in order {
            let Reverse((Load(l), s)) = load.pop().expect("at least one shard");
            load.push(Reverse((Load(l + clean(costs[u])), s)));
            owner[u] = s;
        }
        owner
    }

    /// The units of a list that belong to this shard (indices into `costs`, in order).
    pub fn select(&self, costs: &[f64]) -> Vec<usize> {
        Shard::assign(costs, self.count)
            .into_iter()
            .enumerate()
            .filter(|&(_, s)| s == self.index)
            .map(|(u, _)| u)
            .collect()
    }
}

/// A shard's predicted total, ordered by `total_cmp`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Load(f64);

impl Eq for Load {}

impl PartialOrd for Load {
    fn partial_cmp(&self, other: &Load) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Load {
    fn cmp(&self, other: &Load) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A cost that is not a positive finite number counts as the smallest unit of work.
fn clean(c: f64) -> f64 {
    if c.is_finite() && c > 0.0 {
        c
    } else {
        f64::MIN_POSITIVE
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a point of a problem is predicted to cost, in seconds: one compile, then timing until
/// the budget of measured time, or longer when `min_reps` launches of the problem's `work`
/// (FLOPs, or elements) at `rate` per second take more than the budget. Only the ratios
/// matter: they weigh a large problem's points above a small one's.
pub fn predicted_cost_s(work: f64, rate: f64, budget_ms: f64, min_reps: u32) -> f64 {
    const COMPILE_S: f64 = 1.0;
    let launches_s = if rate > 0.0 && work.is_finite() {
        f64::from(min_reps) * work.max(0.0) / rate
    } else {
        0.0
    };
    COMPILE_S + (budget_ms.max(0.0) / 1e3).max(launches_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_what_does_not_exist() {
        assert_eq!(Shard::parse("1/4"), Ok(Shard { index: 1, count: 4 }));
        assert_eq!(Shard::parse(" 0 / 1 "), Ok(Shard { index: 0, count: 1 }));
        assert_eq!(
            Shard::parse("4/4"),
            Err(ShardError::OutOfRange { index: 4, count: 4 })
        );
        assert_eq!(Shard::parse("0/0"), Err(ShardError::NoShards));
        assert_eq!(
            Shard::parse("0/4097"),
            Err(ShardError::TooMany { count: 4097 })
        );
        assert!(Shard::parse("4095/4096").is_ok());
        for bad in ["1", "a/4", "1/b", "-1/4", "1/4/2", ""] {
            assert!(
                matches!(Shard::parse(bad), Err(ShardError::Syntax(_))),
                "{bad}"
            );
        }
        assert_eq!(
            ShardError::OutOfRange { index: 4, count: 4 }.to_string(),
            "shard 4 of 4 does not exist: the shards of 4 are 0 to 3"
        );
        assert_eq!(Shard::new(2, 3).unwrap().to_string(), "2/3");
    }

    #[test]
    fn every_unit_goes_to_exactly_one_shard() {
        let costs: Vec<f64> = (0..37).map(|i| 1.0 + (i % 5) as f64).collect();
        for count in 1..=6 {
            let mut seen = vec![0; costs.len()];
            for index in 0..count {
                for u in (Shard { index, count }).select(&costs) {
                    seen[u] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{count} shards: {seen:?}");
        }
    }

    #[test]
    fn equal_units_go_round_the_shards() {
        assert_eq!(Shard::assign(&[1.0; 7], 3), vec![0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn totals_are_balanced_by_cost() {
        // Two problems: 12 points costing 10 each, 12 costing 1 each.
        let costs: Vec<f64> = (0..24).map(|i| if i < 12 { 1.0 } else { 10.0 }).collect();
        let owner = Shard::assign(&costs, 4);
        let mut load = [0.0; 4];
        for (u, &s) in owner.iter().enumerate() {
            load[s] += costs[u];
        }
        let (lo, hi) = load
            .iter()
            .fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
        assert!(hi - lo <= 10.0, "{load:?}");
        assert_eq!(load.iter().sum::<f64>(), 132.0);
        // Each shard gets a slice of the large problem, not the whole of it.
        for s in 0..4 {
            assert_eq!(owner[12..].iter().filter(|&&o| o == s).count(), 3);
        }
    }

    #[test]
    fn the_split_depends_only_on_the_costs() {
        let costs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, f64::NAN, 0.0];
        assert_eq!(Shard::assign(&costs, 3), Shard::assign(&costs, 3));
        assert_eq!(Shard::assign(&costs, 1), vec![0; costs.len()]);
    }

    #[test]
    fn large_problems_are_predicted_to_cost_more() {
        let small = predicted_cost_s(2.0 * 64.0 * 64.0 * 64.0, 1e8, 100.0, 3);
        let large = predicted_cost_s(2.0 * 512.0 * 512.0 * 512.0, 1e8, 100.0, 3);
        assert_eq!(small, 1.1);
        assert!(large > 5.0 * small, "{small} {large}");
        // On a fast device the budget, not the launches, bounds the timing.
        assert_eq!(predicted_cost_s(1e12, 1e15, 100.0, 3), 1.1);
    }
}
