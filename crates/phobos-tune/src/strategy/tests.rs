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
            let mut s = searcher(strategy, &candidates, seed, candidates.len(), &[]);
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
    let mut s = searcher(Strategy::Model, &candidates, 0, 16, &[40, 7]);
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
    assert_eq!(default_budget(304), 24);
    assert_eq!(default_budget(1280), 102);
    assert_eq!(default_budget(2000), 160);
    assert_eq!(default_budget(100_000), 1024);
}

/// The coordinates of a bowl candidate.
fn at(d: &Dataset, tm: i64, tn: i64, stages: i64) -> usize {
    let (c, _) = d.candidates();
    c.iter()
        .position(|c| c.point.0.iter().map(|(_, v)| *v).eq([tm, tn, stages]))
        .unwrap()
}

#[test]
fn refinement_measures_the_neighbours_of_the_best_first() {
    let d = bowl();
    let (candidates, _) = d.candidates();
    let grid = refine::Grid::new(&candidates);
    let best = at(&d, 64, 64, 2);
    let observed = [
        Observation {
            index: at(&d, 16, 16, 1),
            ms: Some(9.0),
        },
        Observation {
            index: best,
            ms: Some(2.0),
        },
        Observation {
            index: at(&d, 64, 64, 3),
            ms: None,
        },
    ];
    let known: HashSet<usize> = observed.iter().map(|o| o.index).collect();
    let got = grid.around_best(&observed, &known, &mut Rng::new(1), 8);
    // TM 32/128, TN 32/128, STAGES 1 (3 failed, known): five neighbours, then the ones of
    // the next fastest and the diagonal ones of the best.
    let mut first: Vec<usize> = got[..5].to_vec();
    first.sort_unstable();
    let mut want = vec![
        at(&d, 32, 64, 2),
        at(&d, 128, 64, 2),
        at(&d, 64, 32, 2),
        at(&d, 64, 128, 2),
        at(&d, 64, 64, 1),
    ];
    want.sort_unstable();
    assert_eq!(first, want);
    assert_eq!(got.len(), 8);
    assert!(got.iter().all(|i| !known.contains(i)));
    let diagonal = grid.diagonal(best);
    assert!(diagonal.contains(&at(&d, 128, 128, 2)) && diagonal.contains(&at(&d, 32, 64, 1)));
    assert!(!diagonal.contains(&at(&d, 128, 64, 2)));
}

#[test]
fn random_samples_then_refines_around_its_best() {
    let d = bowl();
    let (candidates, index) = d.candidates();
    let mut s = searcher(Strategy::Random, &candidates, 4, 20, &[]);
    let grid = refine::Grid::new(&candidates);
    let mut observed: Vec<Observation> = Vec::new();
    let mut batches = Vec::new();
    while observed.len() < 20 {
        let b = s.propose(&observed, 4);
        assert!(!b.is_empty());
        batches.push(b.clone());
        observed.extend(b.iter().map(|&i| Observation {
            index: i,
            ms: d.points[index[i]].median_ms,
        }));
    }
    // 8 sampled (40 % of 20), then each batch around the points measured before it.
    let mut seen = 0;
    for b in &batches {
        if seen >= 8 {
            let before: Vec<usize> = observed[..seen]
                .iter()
                .filter(|o| o.ms.is_some())
                .map(|o| o.index)
                .collect();
            for i in b {
                assert!(
                    before
                        .iter()
                        .any(|&j| grid.neighbours(j).contains(i) || grid.diagonal(j).contains(i)),
                    "{i} of {b:?} is not around a point measured"
                );
            }
        }
        seen += b.len();
    }
    // On the smooth bowl, refinement does better than a plain sample of as many points.
    let mean = |max: Option<usize>| {
        (0..8)
            .map(|seed| d.replay(Strategy::Random, max, None, seed).best_fraction)
            .sum::<f64>()
            / 8.0
    };
    let (refined, sampled) = (mean(None), mean(Some(default_budget(150))));
    assert!(refined > sampled, "refined {refined} sampled {sampled}");
}
