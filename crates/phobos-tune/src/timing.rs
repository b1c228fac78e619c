//! How a variant is timed, independent of what times it (device events or the wall clock).

use crate::types::Stats;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Knobs of one variant's timing.
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
    /// Stop after [`EARLY_STOP_REPS`] launches when the fastest so far is this many times
    /// slower than the best variant already timed.
    pub early_stop_factor: f64,
}

impl Default for TimeSettings {
    fn default() -> TimeSettings {
        TimeSettings {
            warmup: 3,
            min_reps: 5,
            max_reps: 1000,
            budget_ms: 100.0,
            early_stop_factor: 3.0,
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
            if let Some(best) = best_ms {
                let fastest = samples.iter().copied().fold(f64::INFINITY, f64::min);
                if fastest > settings.early_stop_factor * best {
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
    /// Rounds; each times every finalist once.
    pub rounds: u32,
}

impl Default for FinalSettings {
    fn default() -> FinalSettings {
        FinalSettings {
            warmup: 3,
            rounds: 30,
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
/// over the rounds: drift then affects all of them alike.
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
    let mut samples = vec![Vec::new(); finalists];
    for round in 0..settings.rounds.max(1) as usize {
        for k in 0..finalists {
            let i = (round + k) % finalists;
            samples[i].push(launch(i).map_err(|e| (i, e))?);
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
            early_stop_factor: 3.0,
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
        let stats = measure::<()>(&s, Some(1.0), || Ok(2.0)).unwrap();
        assert!(!stats.stopped_early);
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
