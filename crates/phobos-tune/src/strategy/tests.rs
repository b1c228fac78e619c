use super::replay::{Dataset, Header, Recorded};
use super::*;
use std::collections::HashSet;

/// A synthetic recorded run over TM, TN, STAGES: a smooth bowl in log space with its minimum
/// at TM=128 TN=64 STAGES=3, every 7th point failing.
fn bowl() -> Dataset {
    let mut points = Vec::new();
    let mut n = 0;
    for tm in [16, 32, 64, 128, 256] {
        for tn in [16, 32, 64, 128, 256] {
            for stages in 1..=6 {
                let d = |v: i64, at: i64| ((v as f64).log2() - (at as f64).log2()).powi(2);
                let ms = 1.0 + d(tm, 128) + 0.5 * d(tn, 64) + 0.1 * ((stages - 3) as f64).powi(2);
                n += 1;
                let failed = n % 7 == 0;
                points.push(Recorded {
                    point: Point(vec![
                        ("TM".into(), tm),
                        ("TN".into(), tn),
                        ("STAGES".into(), stages),
                    ]),
                    status: if failed { "wrong" } else { "ok" }.into(),
                    median_ms: (!failed).then_some(ms),
                    duplicate_of: None,
                    gpu_ms: if failed { 0.0 } else { 10.0 * ms },
                    compile_ms: 1.0,
                    prior: Prior {
                        tile_efficiency: 1.0,
                        wave_efficiency: 1.0,
                        blocks: 4096.0 / (tm * tn) as f64,
                        threads: 128.0,
                        outputs_per_thread: (tm * tn) as f64 / 128.0,
                    },
                });
            }
        }
    }
    Dataset {
        header: Header {
            kernel: "bowl".into(),
            problem: crate::types::Problem {
                dims: vec![("M".into(), 4096)],
                ..Default::default()
            },
            device: "synthetic".into(),
            backend: "interp".into(),
        },
        points,
    }
}

#[test]
fn every_strategy_proposes_each_candidate_once_and_is_seeded() {
    let d = bowl();
    let (candidates, _) = d.candidates();
    for strategy in Strategy::ALL {
        let run = |seed| {
            let mut s = searcher(strategy, &candidates, seed, &[]);
            let mut all = Vec::new();
            drive::<()>(
                s.as_mut(),
                candidates.len(),
                Vec::new(),
                |b| {
                    all.extend_from_slice(b);
                    let seen: Vec<Observation> = b
                        .iter()
                        .map(|&index| Observation {
                            index,
                            ms: d.points[index].median_ms,
                        })
                        .collect();
                    Ok((seen, b.len()))
                },
                || false,
            )
            .unwrap();
            all
        };
        let a = run(1);
        let distinct: HashSet<usize> = a.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            a.len(),
            "{strategy:?} proposed a point twice"
        );
        assert_eq!(a.len(), candidates.len(), "{strategy:?} stopped early");
        assert_eq!(a, run(1), "{strategy:?} is not deterministic");
        if strategy != Strategy::Exhaustive {
            assert_ne!(a, run(2), "{strategy:?} ignores its seed");
        }
    }
}

#[test]
fn replay_counts_points_time_and_the_fraction_of_the_best() {
    let d = bowl();
    let e = d.replay(Strategy::Exhaustive, None, None, 0);
    assert_eq!(e.points, 150);
    assert_eq!(e.best_fraction, 1.0);
    assert!((e.time_share - 1.0).abs() < 1e-12);
    let fastest = d
        .points
        .iter()
        .filter_map(|p| p.median_ms)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(e.best_ms, Some(fastest));
    let r = d.replay(Strategy::Random, Some(8), None, 3);
    assert_eq!(r.points, 8);
    assert!(r.best_fraction > 0.0 && r.best_fraction <= 1.0);
    assert!(r.time_share < 0.2, "{r:?}");
    // A time limit stops the search once spent.
    let t = d.replay(Strategy::Random, Some(100), Some(30.0), 3);
    assert!(t.points < 100 && t.gpu_ms + t.compile_ms >= 30.0, "{t:?}");
}

#[test]
fn the_adaptive_strategies_beat_chance_on_a_smooth_space() {
    let d = bowl();
    let mean = |s: Strategy| {
        (0..8)
            .map(|seed| d.replay(s, Some(24), None, seed).best_fraction)
            .sum::<f64>()
            / 8.0
    };
    let (random, anneal, model) = (
        mean(Strategy::Random),
        mean(Strategy::Anneal),
        mean(Strategy::Model),
    );
    assert!(model >= 0.95, "model {model}");
    assert!(model > random, "model {model} random {random}");
    assert!(anneal > random, "anneal {anneal} random {random}");
}

#[test]
fn seeded_points_come_first() {
    let d = bowl();
    let (candidates, _) = d.candidates();
    let mut s = searcher(Strategy::Model, &candidates, 0, &[40, 7]);
    let b = s.propose(&[], 4);
    assert_eq!(&b[..2], &[40, 7]);
    assert_eq!(b.len(), 4);
    assert!(!b[2..].contains(&40) && !b[2..].contains(&7));
}

#[test]
fn datasets_survive_their_text() {
    let d = bowl();
    let text = replay::write(std::slice::from_ref(&d));
    let back = replay::parse(&text).unwrap();
    assert_eq!(back, vec![d]);
    let e = replay::parse("{\"kind\":\"point\"}").unwrap_err();
    assert_eq!(e.line, 1);
}

#[test]
fn default_budgets() {
    assert_eq!(default_budget(10), 10);
    assert_eq!(default_budget(100), 16);
    assert_eq!(default_budget(2000), 100);
    assert_eq!(default_budget(100_000), 256);
}
