//! `--seed-from PATH`: the best points of the nearest recorded problems, which an adaptive
//! strategy measures first.

use super::export::open_db;
use super::UserError;
use phobos_ir::Point;
use phobos_tune::deploy::distance;
use phobos_tune::strategy::replay;
use phobos_tune::Problem;
use std::path::Path;

/// Problems taken from, nearest first.
const PROBLEMS: usize = 3;
/// Best points taken from each.
const PER_PROBLEM: usize = 2;

/// Timed points with their medians.
type Timed = Vec<(Point, f64)>;

/// The recorded problems of this kernel with their timed points, fastest first.
fn recorded(
    path: &Path,
    kernel_hash: &str,
    kernel: &str,
) -> Result<Vec<(Problem, Timed)>, UserError> {
    let sorted = |mut v: Timed| {
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        v
    };
    // A dataset is text; anything else is taken for a results database.
    if let Ok(text) = std::fs::read_to_string(path) {
        if text.trim_start().starts_with('{') {
            let sets = replay::parse(&text)
                .map_err(|e| UserError::new(format!("{}:{e}", path.display())))?;
            return Ok(sets
                .into_iter()
                .filter(|d| d.header.kernel == kernel)
                .map(|d| {
                    let pts = d
                        .points
                        .into_iter()
                        .filter_map(|p| Some((p.point, p.median_ms?)))
                        .collect();
                    (d.header.problem, sorted(pts))
                })
                .collect());
        }
    }
    let store = open_db(path)?;
    let searches = store
        .searches(Some(kernel_hash))
        .map_err(|e| UserError::new(e.to_string()))?;
    Ok(searches
        .into_iter()
        .map(|s| {
            let pts = s
                .points
                .into_iter()
                .filter_map(|(r, _, _)| Some((r.point.clone(), r.outcome.stats()?.median_ms)))
                .collect();
            (s.problem, sorted(pts))
        })
        .collect())
}

/// The points to measure first for `problem`: the best of the nearest recorded problems of
/// the same kind (dims, types, layouts), nearest first.
pub fn first_points(
    path: &Path,
    kernel_hash: &str,
    kernel: &str,
    problem: &Problem,
) -> Result<Vec<Point>, UserError> {
    let mut near: Vec<((usize, f64), Timed)> = recorded(path, kernel_hash, kernel)?
        .into_iter()
        .filter_map(|(p, pts)| Some((distance(&p, problem)?, pts)))
        .filter(|(_, pts)| !pts.is_empty())
        .collect();
    near.sort_by(|a, b| a.0 .0.cmp(&b.0 .0).then(a.0 .1.total_cmp(&b.0 .1)));
    let mut out: Vec<Point> = Vec::new();
    for (_, pts) in near.into_iter().take(PROBLEMS) {
        for (p, _) in pts.into_iter().take(PER_PROBLEM) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    Ok(out)
}
