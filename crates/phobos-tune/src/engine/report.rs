//! What a run produces: every point's result, the winner, and how to reproduce it.

use crate::types::{Backend, Checked, DeviceInfo, PointResult, Problem, Stats};
use phobos_ir::Point;
use serde::Serialize;

/// The fastest correct point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Winner {
    pub point: Point,
    pub stats: Stats,
    /// The default point's median over the winner's, when the default point was timed.
    pub speedup_vs_default: Option<f64>,
}

/// Counts per status, for the summary line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub points: usize,
    pub timed: usize,
    pub pruned: usize,
    pub compile_failed: usize,
    pub load_failed: usize,
    pub wrong: usize,
    pub crashed: usize,
    pub duplicate: usize,
    pub compiled: usize,
    /// Of all the above, how many came from the store.
    pub reused: usize,
}

/// The interpreter check `--dry-run` makes of the reference point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DryRunCheck {
    pub point: Point,
    /// `None` when the interpreter ran it and the outputs were written; else what went wrong.
    pub error: Option<String>,
    /// What it compared, when it ran.
    pub checked: Option<Checked>,
}

/// What the correctness check of one point compared (points checked in this run).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointCheck {
    pub point: Point,
    pub checked: Checked,
}

/// Where a run's time went, in milliseconds. Compiles run on a pool while the worker checks
/// and times, so the phases of the search overlap: `compile_ms`, `check_ms` and `timing_ms`
/// are sums over their jobs, `search_ms` the wall clock of the whole search.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PhaseTimes {
    /// The space, instantiating and hashing every point, the store's results, pruning.
    pub space_ms: f64,
    /// Compiles (summed over the pool's threads).
    pub compile_ms: f64,
    /// Correctness checks (summed over the worker's jobs).
    pub check_ms: f64,
    /// Timing jobs (summed).
    pub timing_ms: f64,
    /// The search, wall clock: from the first compile to the last point's end.
    pub search_ms: f64,
    /// The interleaved final round.
    pub final_ms: f64,
    /// The whole run, wall clock.
    pub total_ms: f64,
}

/// The result of one tuning run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub kernel: String,
    pub kernel_hash: String,
    pub backend: Backend,
    pub compiler: String,
    pub device: DeviceInfo,
    pub problem: Problem,
    /// The user's pins.
    pub pins: Vec<(String, i64)>,
    /// The point speed-ups are measured against.
    pub default_point: Point,
    /// The point correctness is judged against (on the interpreter).
    pub reference_point: Option<Point>,
    /// Every point the run searched (the whole pinned space for `exhaustive`; those the
    /// strategy picked otherwise), in space order.
    pub points: Vec<PointResult>,
    /// How the points were picked.
    pub strategy: crate::space::Strategy,
    /// The points the strategy chose among (after pruning, for an adaptive strategy).
    pub candidates: usize,
    /// Where the time went.
    pub phases: PhaseTimes,
    pub winner: Option<Winner>,
    pub dry_run: bool,
    pub dry_run_check: Option<DryRunCheck>,
    /// Times a worker had to be replaced.
    pub worker_restarts: u32,
    /// What each point checked in this run compared, in space order.
    pub checks: Vec<PointCheck>,
}

impl Report {
    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            points: self.points.len(),
            ..Summary::default()
        };
        for p in &self.points {
            let n = match p.outcome.status() {
                "ok" => &mut s.timed,
                "pruned" => &mut s.pruned,
                "compile-failed" => &mut s.compile_failed,
                "load-failed" => &mut s.load_failed,
                "wrong" => &mut s.wrong,
                "crashed" => &mut s.crashed,
                "duplicate" => &mut s.duplicate,
                _ => &mut s.compiled,
            };
            *n += 1;
            s.reused += p.reused as usize;
        }
        s
    }

    /// What the check of one point compared, when it was checked in this run.
    pub fn check(&self, point: &Point) -> Option<&Checked> {
        self.checks
            .iter()
            .find(|c| &c.point == point)
            .map(|c| &c.checked)
    }

    /// The result of one point.
    pub fn point(&self, point: &Point) -> Option<&PointResult> {
        self.points.iter().find(|p| &p.point == point)
    }

    /// Points sorted by median time (timed ones first, fastest first), then the rest in order.
    pub fn by_time(&self) -> Vec<&PointResult> {
        let mut v: Vec<&PointResult> = self.points.iter().collect();
        v.sort_by(|a, b| {
            let key = |p: &PointResult| p.outcome.stats().map_or(f64::INFINITY, |s| s.median_ms);
            key(a).total_cmp(&key(b))
        });
        v
    }
}

impl Summary {
    /// "27 points: 24 timed, 2 pruned, 1 failed to compile" (zero counts left out).
    pub fn line(&self) -> String {
        let parts: Vec<String> = [
            (self.timed, "timed"),
            (self.compiled, "compiled"),
            (self.duplicate, "duplicate binaries"),
            (self.pruned, "pruned"),
            (self.compile_failed, "failed to compile"),
            (self.load_failed, "refused by the driver"),
            (self.wrong, "wrong"),
            (self.crashed, "crashed"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        let mut line = format!(
            "{} point{}: {}",
            self.points,
            if self.points == 1 { "" } else { "s" },
            if parts.is_empty() {
                "none run".to_string()
            } else {
                parts.join(", ")
            }
        );
        if self.reused > 0 {
            line.push_str(&format!(" ({} from the results database)", self.reused));
        }
        line
    }
}
