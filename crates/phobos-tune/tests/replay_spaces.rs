//! The goal of the search strategies, on the exhaustive runs recorded on the H200
//! (bench/spaces/h200_*.jsonl): with its default settings, every strategy reaches 0.98 of the
//! exhaustive best on average over seeds, in at most a tenth of the exhaustive run's device
//! and compile time. The replay is CPU-only and deterministic.

use phobos_tune::strategy::replay::{self, Dataset};
use phobos_tune::strategy::{default_budget, Strategy};

/// Seeds per strategy and dataset (the docs' table uses 10; the model's replay is the
/// slowest, a few hundred milliseconds a search in a debug build).
const SEEDS: u64 = 4;

fn datasets(prefix: &str) -> Vec<(String, Dataset)> {
    let dir = format!("{}/../../bench/spaces", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(".jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(format!("{dir}/{f}")).unwrap();
        for d in replay::parse(&text).unwrap() {
            out.push((f.clone(), d));
        }
    }
    out
}

/// The mean best fraction and mean time share over the seeds, and the worst best fraction.
fn replay(d: &Dataset, s: Strategy, max_points: Option<usize>) -> (f64, f64, f64, usize) {
    let runs: Vec<_> = (0..SEEDS)
        .map(|k| d.replay(s, max_points, None, k))
        .collect();
    let n = runs.len() as f64;
    (
        runs.iter().map(|r| r.best_fraction).sum::<f64>() / n,
        runs.iter().map(|r| r.best_fraction).fold(1.0, f64::min),
        runs.iter().map(|r| r.time_share).sum::<f64>() / n,
        runs.iter().map(|r| r.points).max().unwrap_or(0),
    )
}

/// Whether a replay meets the goal.
fn meets(best: f64, share: f64) -> bool {
    best >= 0.98 && share <= 0.10
}

#[test]
fn every_default_reaches_the_goal_on_the_h200_spaces() {
    let data = datasets("h200_");
    assert_eq!(data.len(), 6, "the six recorded H200 runs");
    let mut misses = Vec::new();
    let mut table = String::new();
    for (file, d) in &data {
        let budget = default_budget(d.candidates().0.len());
        for s in [Strategy::Random, Strategy::Anneal, Strategy::Model] {
            let (best, worst, share, points) = replay(d, s, None);
            assert_eq!(points, budget, "{file} {s:?}: the default budget");
            let line = format!(
                "{file} {} {}: {points} points, best {best:.3} (worst {worst:.3}), time {:.1} %\n",
                d.header.problem.dims_text(),
                s.name(),
                100.0 * share
            );
            if !meets(best, share) {
                misses.push(line.clone());
            }
            table.push_str(&line);
        }
    }
    assert!(
        misses.is_empty(),
        "misses:\n{}\nall:\n{table}",
        misses.concat()
    );
}

/// The goal is not met by chance: on the attention space (two points of 1280 within 2 % of
/// the best), a uniform sample of 16 points misses it, and so does the sample of the old
/// default budget (a twentieth of the space) without refinement.
#[test]
fn a_uniform_sample_misses_the_goal() {
    let data = datasets("h200_attention");
    let (_, d) = &data[0];
    let (best, _, share, _) = replay(d, Strategy::Random, Some(16));
    assert!(!meets(best, share), "best {best} share {share}");
    let (best, _, share, _) = replay(d, Strategy::Random, Some(64));
    assert!(!meets(best, share), "best {best} share {share}");
}
