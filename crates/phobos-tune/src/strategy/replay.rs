//! Replaying a strategy on a recorded exhaustive run: which points it would have measured,
//! what it would have picked, and what that would have cost, without a GPU.
//!
//! A dataset is one exhaustive run of one kernel on one problem: every point with its outcome,
//! the time its measurement took and its prior features ([`super::prior`]). Datasets are kept
//! as JSON Lines (`phobos-kbench record` writes them from a results database): a `dataset` line
//! opens each one, a `point` line per point follows.

use super::{drive, searcher, Candidate, Observation, Prior, Strategy};
use phobos_ir::Point;
use serde::{Deserialize, Serialize};

/// The first line of a dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub kernel: String,
    pub problem: crate::types::Problem,
    pub device: String,
    pub backend: String,
}

/// One recorded point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    pub point: Point,
    /// `ok`, `pruned`, `wrong`, `duplicate`, ... (`Outcome::status`).
    pub status: String,
    /// The search's median time, when timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ms: Option<f64>,
    /// For a duplicate binary: the point it duplicates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<Point>,
    /// Time on the device: repetitions times the median (0 when not timed).
    pub gpu_ms: f64,
    /// The compile's time (0 when not compiled).
    pub compile_ms: f64,
    pub prior: Prior,
}

/// A recorded exhaustive run.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    pub header: Header,
    pub points: Vec<Recorded>,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Dataset(Header),
    Point(Recorded),
}

/// What is wrong with a dataset file, with its line.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct DatasetError {
    pub line: usize,
    pub message: String,
}

/// The datasets of a JSON Lines text.
pub fn parse(text: &str) -> Result<Vec<Dataset>, DatasetError> {
    let mut out: Vec<Dataset> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |message: String| DatasetError {
            line: n + 1,
            message,
        };
        match serde_json::from_str::<Line>(line).map_err(|e| err(e.to_string()))? {
            Line::Dataset(header) => out.push(Dataset {
                header,
                points: Vec::new(),
            }),
            Line::Point(p) => match out.last_mut() {
                Some(d) => d.points.push(p),
                None => return Err(err("a point before any `dataset` line".into())),
            },
        }
    }
    Ok(out)
}

/// The datasets as JSON Lines.
pub fn write(datasets: &[Dataset]) -> String {
    let mut s = String::new();
    for d in datasets {
        let line = |l: &Line| serde_json::to_string(l).expect("plain data serializes");
        s.push_str(&line(&Line::Dataset(d.header.clone())));
        s.push('\n');
        for p in &d.points {
            s.push_str(&line(&Line::Point(p.clone())));
            s.push('\n');
        }
    }
    s
}

/// What a strategy would have done on a dataset.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Replayed {
    pub strategy: String,
    pub seed: u64,
    /// Points it measured.
    pub points: usize,
    /// Points the exhaustive run searched (its candidates: those not pruned).
    pub exhaustive_points: usize,
    /// The exhaustive best time over the best time among the points measured (1 when it found
    /// the best; 0 when it found no valid point).
    pub best_fraction: f64,
    pub best_ms: Option<f64>,
    pub exhaustive_best_ms: Option<f64>,
    pub best_point: Option<Point>,
    /// Device and compile time spent on the points measured.
    pub gpu_ms: f64,
    pub compile_ms: f64,
    /// Of the exhaustive run's device and compile time, the share spent.
    pub time_share: f64,
}

impl Dataset {
    /// The points a strategy chooses among (those the exhaustive run did not prune), with
    /// their indices in `points`.
    pub fn candidates(&self) -> (Vec<Candidate>, Vec<usize>) {
        let keep: Vec<usize> = (0..self.points.len())
            .filter(|&i| self.points[i].status != "pruned")
            .collect();
        let c = keep
            .iter()
            .map(|&i| Candidate {
                point: self.points[i].point.clone(),
                prior: self.points[i].prior,
            })
            .collect();
        (c, keep)
    }

    /// A point's recorded time, a duplicate's being its original's.
    fn time(&self, i: usize) -> Option<f64> {
        let p = &self.points[i];
        match (&p.median_ms, &p.duplicate_of) {
            (Some(ms), _) => Some(*ms),
            (None, Some(of)) => self.points.iter().find(|q| &q.point == of)?.median_ms,
            _ => None,
        }
    }

    /// Replays a strategy: at most `max_points` points (its default budget when `None`) and
    /// at most `max_ms` of device and compile time.
    pub fn replay(
        &self,
        strategy: Strategy,
        max_points: Option<usize>,
        max_ms: Option<f64>,
        seed: u64,
    ) -> Replayed {
        let (candidates, index) = self.candidates();
        let budget = max_points.unwrap_or_else(|| match strategy {
            Strategy::Exhaustive => candidates.len(),
            _ => super::default_budget(candidates.len()),
        });
        // `random --max-points N` draws its points up front, as the engine does.
        let mut s = if strategy.searches_adaptively(max_points) {
            searcher(strategy, &candidates, seed, budget, &[])
        } else {
            super::in_order(strategy, candidates.len(), seed)
        };
        let (mut gpu_ms, mut compile_ms) = (0.0, 0.0);
        let spent = std::cell::Cell::new(0.0);
        let observed = drive::<()>(
            s.as_mut(),
            budget,
            Vec::new(),
            |batch| {
                let mut out = Vec::new();
                for &c in batch {
                    let p = &self.points[index[c]];
                    gpu_ms += p.gpu_ms;
                    compile_ms += p.compile_ms;
                    spent.set(spent.get() + p.gpu_ms + p.compile_ms);
                    out.push(Observation {
                        index: c,
                        ms: self.time(index[c]),
                    });
                }
                // The candidates are the points the recorded run did not prune: each one
                // reached the device.
                let n = out.len();
                Ok((out, n))
            },
            || max_ms.is_some_and(|m| spent.get() >= m),
        )
        .unwrap_or_default();
        let best = observed
            .iter()
            .filter_map(|o| Some((o.index, o.ms?)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let exhaustive_best = (0..self.points.len())
            .filter_map(|i| self.points[i].median_ms)
            .min_by(f64::total_cmp);
        let total: f64 = self.points.iter().map(|p| p.gpu_ms + p.compile_ms).sum();
        Replayed {
            strategy: strategy.name().into(),
            seed,
            points: observed.len(),
            exhaustive_points: candidates.len(),
            best_fraction: match (exhaustive_best, best) {
                (Some(e), Some((_, b))) => e / b,
                _ => 0.0,
            },
            best_ms: best.map(|b| b.1),
            exhaustive_best_ms: exhaustive_best,
            best_point: best.map(|(i, _)| candidates[i].point.clone()),
            gpu_ms,
            compile_ms,
            time_share: if total > 0.0 {
                (gpu_ms + compile_ms) / total
            } else {
                0.0
            },
        }
    }
}
