//! How a variant is timed, independent of what times it (device events or the wall clock).

use crate::types::Stats;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Knobs of one variant's timing.
///
/// In a search these are the search's (`Settings::time`): a small budget per point
/// ([`SEARCH_BUDGET_MS`]), since the final round re-times the leaders at the full one
/// ([`FinalSettings::budget_ms`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeSettings {
    /// Untimed launches first: caches, clocks and lazy module loading settle.
    pub warmup: u32,
    /// At least this many timed launches (unless stopped early).
    pub min_reps: u32,
    /// At most this many.
    pub max_reps: u32,
    /// Keep repeating until the timed launches add up to this much.
    pub budget_ms: f64,
    /// Stop after [`EARLY_STOP_REPS`] launches when the fastest so far is more than this many
    /// times the best median already timed (`None`: never stop early).
    pub early_stop_factor: Option<f64>,
}

/// The search's default budget per point, in ms of measured time: enough repeats of a GEMM of
/// a fraction of a millisecond to rank it, while the leaders get the full budget
/// ([`FULL_BUDGET_MS`]) in the final round.
pub const SEARCH_BUDGET_MS: f64 = 10.0;
/// The default full budget: what each leader gets in the final round.
pub const FULL_BUDGET_MS: f64 = 100.0;
/// The default early-stop margin: a point whose fastest launch is already more than 1.5× the
/// best median cannot be a leader (the gaps between leaders are a few percent).
pub const EARLY_STOP_FACTOR: f64 = 1.5;

impl Default for TimeSettings {
    fn default() -> TimeSettings {
        TimeSettings {
            warmup: 3,
            min_reps: 5,
            max_reps: 1000,
            budget_ms: SEARCH_BUDGET_MS,
            early_stop_factor: Some(EARLY_STOP_FACTOR),
        }
    }
}

/// Launches timed before the early-stop test: enough that one slow launch does not decide.
pub const EARLY_STOP_REPS: usize = 3;

/// Times a variant: `launch` runs it once and returns its time in milliseconds.
///
/// The budget counts timed milliseconds, not wall time, so a fast kernel gets many repeats and a
/// slow one few; a wall-clock guard (ten budgets) bounds the overhead between launches.
pub fn measure<E>(
    settings: &TimeSettings,
    best_ms: Option<f64>,
    mut launch: impl FnMut() -> Result<f64, E>,
) -> Result<Stats, E> {
    for _ in 0..settings.warmup {
        launch()?;
    }
    let wall_limit = Duration::from_secs_f64((settings.budget_ms * 10.0).max(1.0) / 1000.0);
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut total = 0.0;
    let mut stopped_early = false;
    while (samples.len() as u32) < settings.max_reps.max(1) {
        let t = launch()?;
        samples.push(t);
        total += t;
        if samples.len() == EARLY_STOP_REPS {
            if let (Some(best), Some(factor)) = (best_ms, settings.early_stop_factor) {
                let fastest = samples.iter().copied().fold(f64::INFINITY, f64::min);
                if fastest > factor * best {
                    stopped_early = true;
                    break;
                }
            }
        }
        let enough = samples.len() as u32 >= settings.min_reps;
        if enough && (total >= settings.budget_ms || start.elapsed() >= wall_limit) {
            break;
        }
    }
    Ok(Stats::from_samples(&samples, stopped_early).expect("at least one finite sample"))
}

/// Knobs of the final round.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FinalSettings {
    /// Launches of every finalist, round-robin, before any is timed.
    pub warmup: u32,
    /// At least this many rounds; each times every finalist once.
    pub rounds: u32,
    /// More rounds until every finalist's timed launches add up to this much (ms): the full
    /// budget, which the search spent only a fraction of on each point.
    #[serde(default)]
    pub budget_ms: f64,
    /// At most this many rounds (and never fewer than `rounds`).
    #[serde(default = "default_max_rounds")]
    pub max_rounds: u32,
}

fn default_max_rounds() -> u32 {
    1000
}

impl Default for FinalSettings {
    fn default() -> FinalSettings {
        FinalSettings {
            warmup: 3,
            rounds: 30,
            budget_ms: FULL_BUDGET_MS,
            max_rounds: default_max_rounds(),
        }
    }
}

/// The interleaved final round among the leaders.
///
/// Timing candidates one after another lets the machine's state pick the winner: the first one
/// runs on a cool GPU at boost clock, the later ones after it has heated up and throttled (or the
/// other way round after an idle spell), and a few percent of drift is as large as the gaps
/// between leaders. So every finalist is warmed up together, then each round launches every
/// finalist once, starting from a different one each round, and each finalist's median is taken
/// over the rounds: drift then affects all of them alike. Rounds go on after `rounds` until
/// every finalist has `budget_ms` of timed launches (at most `max_rounds`), a wall-clock guard
/// (ten budgets per finalist) bounding the time between launches.
///
/// `launch(i)` runs finalist `i` once. An error stops the round and names the finalist.
pub fn interleave<E>(
    finalists: usize,
    settings: &FinalSettings,
    mut launch: impl FnMut(usize) -> Result<f64, E>,
) -> Result<Vec<Stats>, (usize, E)> {
    for _ in 0..settings.warmup {
        for i in 0..finalists {
            launch(i).map_err(|e| (i, e))?;
        }
    }
    let min_rounds = settings.rounds.max(1) as usize;
    let max_rounds = (settings.max_rounds as usize).max(min_rounds);
    let wall_limit = Duration::from_secs_f64(
        (settings.budget_ms.max(0.0) * 10.0 * finalists as f64).max(1.0) / 1000.0,
    );
    let start = Instant::now();
    let mut samples = vec![Vec::new(); finalists];
    let mut totals = vec![0.0f64; finalists];
    for round in 0..max_rounds {
        let budget_met = totals.iter().all(|&t| t >= settings.budget_ms);
        if round >= min_rounds && (budget_met || start.elapsed() >= wall_limit) {
            break;
        }
        for k in 0..finalists {
            let i = (round + k) % finalists;
            let t = launch(i).map_err(|e| (i, e))?;
            samples[i].push(t);
            totals[i] += t;
        }
    }
    Ok(samples
        .iter()
        .map(|s| Stats::from_samples(s, false).expect("at least one round"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_bounds_repeats() {
        let s = TimeSettings {
            warmup: 2,
            min_reps: 5,
            max_reps: 1000,
            budget_ms: 10.0,
            early_stop_factor: Some(3.0),
        };
        let mut calls = 0;
        let stats = measure::<()>(&s, None, || {
            calls += 1;
            Ok(1.0)
        })
        .unwrap();
        assert_eq!(stats.reps, 10);
        assert_eq!(calls, 12);
        // A slow kernel still gets min_reps.
        let stats = measure::<()>(&s, None, || Ok(50.0)).unwrap();
        assert_eq!(stats.reps, 5);
        assert!(!stats.stopped_early);
    }

    #[test]
    fn far_slower_than_best_stops_early() {
        let s = TimeSettings::default();
        let stats = measure::<()>(&s, Some(1.0), || Ok(5.0)).unwrap();
        assert!(stats.stopped_early);
        assert_eq!(stats.reps as usize, EARLY_STOP_REPS);
        // The default margin is 1.5x the best median: 1.6x stops, 1.4x does not.
        let stats = measure::<()>(&s, Some(1.0), || Ok(1.6)).unwrap();
        assert!(stats.stopped_early);
        let stats = measure::<()>(&s, Some(1.0), || Ok(1.4)).unwrap();
        assert!(!stats.stopped_early);
        assert!(stats.reps >= s.min_reps);
        // The fastest launch decides: one fast launch among slow ones keeps the point going.
        let mut n = 0;
        let stats = measure::<()>(&s, Some(1.0), || {
            n += 1;
            Ok(if n == 5 { 1.2 } else { 5.0 })
        })
        .unwrap();
        assert!(!stats.stopped_early, "warm-up 3, then 5.0, 1.2, 5.0");
        // Turned off, nothing stops early.
        let off = TimeSettings {
            early_stop_factor: None,
            ..TimeSettings::default()
        };
        assert!(
            !measure::<()>(&off, Some(1.0), || Ok(5.0))
                .unwrap()
                .stopped_early
        );
    }

    #[test]
    fn final_round_fills_the_full_budget() {
        // Finalists of 1 ms and 4 ms, a full budget of 100 ms: rounds go on until each has
        // 100 ms, the faster one's 100 rounds, far past the minimum of 3.
        let s = FinalSettings {
            warmup: 0,
            rounds: 3,
            budget_ms: 100.0,
            max_rounds: 1000,
        };
        let stats = interleave::<()>(2, &s, |i| Ok(if i == 0 { 1.0 } else { 4.0 })).unwrap();
        assert_eq!((stats[0].reps, stats[1].reps), (100, 100));
        // No budget: the minimum number of rounds.
        let rounds_only = FinalSettings {
            budget_ms: 0.0,
            ..s.clone()
        };
        let stats = interleave::<()>(2, &rounds_only, |_| Ok(1.0)).unwrap();
        assert_eq!(stats[0].reps, 3);
        // The cap holds.
        let capped = FinalSettings {
            max_rounds: 10,
            ..s
        };
        let stats = interleave::<()>(2, &capped, |_| Ok(1.0)).unwrap();
        assert_eq!(stats[1].reps, 10);
    }

    #[test]
    fn errors_propagate() {
        let s = TimeSettings::default();
        let mut n = 0;
        let r = measure(&s, None, || {
            n += 1;
            if n == 4 {
                Err("launch failed")
            } else {
                Ok(1.0)
            }
        });
        assert_eq!(r.unwrap_err(), "launch failed");
    }

    #[test]
    fn interleave_rotates_and_counts() {
        let mut order = Vec::new();
        let stats = interleave::<()>(
            3,
            &FinalSettings {
                warmup: 1,
                rounds: 2,
                budget_ms: 0.0,
                max_rounds: 2,
            },
            |i| {
                order.push(i);
                Ok(1.0 + i as f64)
            },
        )
        .unwrap();
        // Warm-up 0 1 2, then round 0 from 0, round 1 from 1.
        assert_eq!(order, vec![0, 1, 2, 0, 1, 2, 1, 2, 0]);
        assert_eq!(stats.len(), 3);
        assert_eq!(stats[2].median_ms, 3.0);
        assert_eq!(stats[0].reps, 2);
        let err = interleave(2, &FinalSettings::default(), |i| {
            if i == 1 {
                Err("bad")
            } else {
                Ok(1.0)
            }
        });
        assert_eq!(err.unwrap_err(), (1, "bad"));
    }
}
