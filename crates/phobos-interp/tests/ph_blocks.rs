//! Running chosen blocks of a grid: the elements they store (their write masks), sampled runs
//! within a time budget, and which kernels a host may sample.

mod common;

use common::ph::kernel;
use phobos_interp::host::random_tensor;
use phobos_interp::{
    pick_blocks, Args, BlockRole, Config, Error, Launch, SampleConfig, DEFAULT_SAMPLE_BUDGET,
};
use phobos_ir::walk::{block_dependence, blocks_independent, BlockDependence};
use phobos_ir::DType;
use std::collections::HashSet;
use std::time::Duration;

/// A 2-D tiled kernel with ragged edges: each block scales one 8x8 tile of X into Y.
const TILED: &str = r#"
@launch(32)
@grid(cdiv(M, 8), cdiv(N, 8))
kernel tiled(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let r = ctx.block.x * 8
  let c = ctx.block.y * 8
  Y[r :+ 8, c :+ 8] = 2.0 * X[r :+ 8, c :+ 8] + 1.0
}
"#;

fn tiled_launch(k: &phobos_ir::Kernel, m: usize, n: usize) -> Launch<'_> {
    let x = random_tensor(DType::F32, &[m, n], 1);
    let y = random_tensor(DType::F32, &[m, n], 2);
    Launch::new(k, Args::new().set("X", x).set("Y", y)).unwrap()
}

/// The elements of `Y` ([M, N] row-major) the 8x8 tile of block (bx, by) covers.
fn tile_elements(m: usize, n: usize, bx: usize, by: usize) -> HashSet<usize> {
    let mut out = HashSet::new();
    for r in bx * 8..((bx + 1) * 8).min(m) {
        for c in by * 8..((by + 1) * 8).min(n) {
            out.insert(r * n + c);
        }
    }
    out
}

#[test]
fn chosen_blocks_store_what_the_whole_launch_stores_there_and_nothing_else() {
    let k = kernel(TILED, None, None, None);
    let (m, n) = (21, 30); // a 3 x 4 grid, ragged along both axes
    let launch = tiled_launch(&k, m, n);
    assert_eq!(launch.grid(), [3, 4, 1]);
    let whole = launch.run(&Config::default()).unwrap();
    let blocks = [[2, 3, 0], [0, 1, 0]];
    let part = launch.run_blocks(&Config::default(), &blocks).unwrap();
    let mut want: HashSet<usize> = tile_elements(m, n, 2, 3);
    want.extend(tile_elements(m, n, 0, 1));
    let mask = part.mask("Y").unwrap();
    let got: HashSet<usize> = (0..m * n).filter(|&i| mask.get(i)).collect();
    assert_eq!(got, want);
    assert_eq!(mask.count(), want.len());
    // X is only read: nothing written.
    assert_eq!(part.mask("X").unwrap().count(), 0);
    let (y_part, y_whole) = (
        &part.tensors.iter().find(|(n, _)| n == "Y").unwrap().1,
        whole.get("Y").unwrap(),
    );
    let y_input = launch.tensor("Y").unwrap();
    for i in 0..m * n {
        let expect = if want.contains(&i) {
            y_whole.data[i]
        } else {
            y_input.data[i]
        };
        assert_eq!(y_part.data[i], expect, "element {i}");
    }
    assert!(part.steps > 0 && part.steps < whole.steps);
}

#[test]
fn every_block_is_the_whole_launch() {
    let k = kernel(TILED, None, None, None);
    let launch = tiled_launch(&k, 17, 9);
    let all: Vec<[i64; 3]> = (0..2)
        .flat_map(|y| (0..3).map(move |x| [x, y, 0]))
        .collect();
    let part = launch.run_blocks(&Config::default(), &all).unwrap();
    let whole = launch.run(&Config::default()).unwrap();
    assert_eq!(part.tensors, whole.tensors);
    assert_eq!(part.mask("Y").unwrap().count(), 17 * 9);
    assert_eq!(part.steps, whole.steps);
}

#[test]
fn a_block_outside_the_grid_is_an_error() {
    let k = kernel(TILED, None, None, None);
    let launch = tiled_launch(&k, 16, 16);
    let err = launch
        .run_blocks(&Config::default(), &[[0, 0, 0], [2, 0, 0]])
        .unwrap_err();
    assert_eq!(
        err,
        Error::BlockOutsideGrid {
            block: [2, 0, 0],
            grid: [2, 2, 1]
        }
    );
    assert_eq!(
        err.to_string(),
        "block [2, 0, 0] is outside the grid [2, 2, 1]"
    );
}

#[test]
fn picks_corners_edges_then_seeded_random_blocks() {
    // 1-D: the two ends, then random blocks; no edges.
    let p = pick_blocks([100, 1, 1], 7, 16);
    assert_eq!(p[0], ([0, 0, 0], BlockRole::Corner));
    assert_eq!(p[1], ([99, 0, 0], BlockRole::Corner));
    assert_eq!(p.len(), 18);
    assert!(p[2..].iter().all(|(_, r)| *r == BlockRole::Random));
    let distinct: HashSet<[i64; 3]> = p.iter().map(|(b, _)| *b).collect();
    assert_eq!(distinct.len(), 18);
    assert_eq!(pick_blocks([100, 1, 1], 7, 16), p, "seeded");
    assert_ne!(pick_blocks([100, 1, 1], 8, 16), p);

    // 2-D: four corners (first and last block first), one block inside each of the four
    // edges, then random blocks.
    let p = pick_blocks([10, 7, 1], 3, 5);
    let roles: Vec<BlockRole> = p.iter().map(|(_, r)| *r).collect();
    assert_eq!(
        roles,
        [
            [BlockRole::Corner; 4].as_slice(),
            &[BlockRole::Edge; 4],
            &[BlockRole::Random; 5]
        ]
        .concat()
    );
    assert_eq!(p[0].0, [0, 0, 0]);
    assert_eq!(p[1].0, [9, 6, 0]);
    for (b, _) in &p[4..8] {
        let on_x_end = b[0] == 0 || b[0] == 9;
        let on_y_end = b[1] == 0 || b[1] == 6;
        assert!(on_x_end != on_y_end, "{b:?} is inside one edge");
    }
    for (b, _) in &p {
        assert!((0..10).contains(&b[0]) && (0..7).contains(&b[1]) && b[2] == 0);
    }
    let distinct: HashSet<[i64; 3]> = p.iter().map(|(b, _)| *b).collect();
    assert_eq!(distinct.len(), p.len());

    // 3-D: eight corners, twelve edges.
    let p = pick_blocks([5, 4, 3], 1, 0);
    let count = |r| p.iter().filter(|(_, x)| *x == r).count();
    assert_eq!((count(BlockRole::Corner), count(BlockRole::Edge)), (8, 12));

    // A grid no larger than the sample runs whole: corners and edges first, then the rest in
    // a seeded random order.
    let p = pick_blocks([5, 2, 1], 0, 16);
    assert_eq!(p.len(), 10);
    assert!(p[..4].iter().all(|(_, r)| *r == BlockRole::Corner));
    assert!(p[4..6].iter().all(|(_, r)| *r == BlockRole::Edge));
    assert!(p[6..].iter().all(|(_, r)| *r == BlockRole::Random));
    let distinct: HashSet<[i64; 3]> = p.iter().map(|(b, _)| *b).collect();
    assert_eq!(distinct.len(), 10);
    let order = |seed| -> Vec<[i64; 3]> {
        pick_blocks([40, 1, 1], seed, usize::MAX)
            .iter()
            .map(|(b, _)| *b)
            .collect()
    };
    assert_eq!(order(1).len(), 40);
    assert_eq!(order(1), order(1));
    assert_ne!(order(1), order(2));
    let mut sorted = order(1)[2..].to_vec();
    sorted.sort_by_key(|b| b[0]);
    assert_ne!(sorted, order(1)[2..].to_vec(), "not in grid order");
    assert!(pick_blocks([0, 4, 1], 0, 16).is_empty());
}

#[test]
fn a_sample_covers_its_blocks_and_agrees_with_the_whole_launch_there() {
    let k = kernel(TILED, None, None, None);
    let (m, n) = (8 * 20 - 3, 8 * 30 - 5); // a 20 x 30 grid, ragged along both axes
    let launch = tiled_launch(&k, m, n);
    let whole = launch.run(&Config::default()).unwrap();
    let sample = SampleConfig {
        seed: 11,
        budget: DEFAULT_SAMPLE_BUDGET,
        random_blocks: 16,
    };
    let s = launch.run_sample(&Config::default(), &sample).unwrap();
    let c = &s.coverage;
    assert_eq!(
        (c.grid_blocks, c.corners, c.edges, c.random),
        (600, 4, 4, 16)
    );
    assert_eq!(c.blocks(), 24);
    assert!(!c.complete());
    let mask = s.output.mask("Y").unwrap();
    let mut want = HashSet::new();
    for (b, _) in pick_blocks(launch.grid(), 11, 16) {
        want.extend(tile_elements(m, n, b[0] as usize, b[1] as usize));
    }
    assert_eq!(mask.count(), want.len());
    // The last block's tile is ragged: 5 rows by 3 columns.
    assert!(tile_elements(m, n, 19, 29).len() == 5 * 3);
    let y = &s.output.tensors.iter().find(|(n, _)| n == "Y").unwrap().1;
    for &i in &want {
        assert!(mask.get(i));
        assert_eq!(y.data[i], whole.get("Y").unwrap().data[i]);
    }
}

#[test]
fn the_budget_bounds_a_sample_and_a_small_grid_runs_whole() {
    let k = kernel(TILED, None, None, None);
    let launch = tiled_launch(&k, 160, 240);
    // No time at all: the first block still runs, and nothing after it.
    let none = SampleConfig {
        budget: Duration::ZERO,
        ..SampleConfig::default()
    };
    let s = launch.run_sample(&Config::default(), &none).unwrap();
    assert_eq!((s.coverage.blocks(), s.coverage.corners), (1, 1));
    assert_eq!(s.output.mask("Y").unwrap().count(), 64);

    let small = tiled_launch(&k, 20, 20);
    let s = small
        .run_sample(&Config::default(), &SampleConfig::default())
        .unwrap();
    assert!(s.coverage.complete());
    assert_eq!(s.coverage.grid_blocks, 9);
    let whole = small.run(&Config::default()).unwrap();
    assert_eq!(s.output.tensors, whole.tensors);
}

#[test]
fn kernels_that_read_what_they_write_are_not_sampled() {
    let copy = kernel(TILED, None, None, None);
    assert!(blocks_independent(&copy));
    assert_eq!(block_dependence(&copy), None);
    let in_place = kernel(
        "@launch(32)\nkernel scale(a: f32, X: tensor<f32>[N]) {\n  \
         let i = ctx.block.x * 64\n  X[i :+ 64] = a * X[i :+ 64]\n}\n",
        None,
        None,
        None,
    );
    assert!(!blocks_independent(&in_place));
    let why = block_dependence(&in_place).unwrap();
    assert_eq!(why, BlockDependence::ReadsWritten { tensor: "X".into() });
    assert_eq!(why.to_string(), "it reads `X`, which it also writes");
}

#[test]
fn kernels_with_atomics_are_not_sampled() {
    let hist = kernel(
        "@launch(32)\n@grid(cdiv(N, 32))\nkernel hist(X: tensor<i32>[N], H: tensor<i32>[B]) {\n  \
         let i = ctx.block.x * 32 + ctx.thread\n  atomic_add(H[X[i]], 1)\n}\n",
        None,
        None,
        None,
    );
    assert!(!blocks_independent(&hist));
    let why = block_dependence(&hist).unwrap();
    assert_eq!(why, BlockDependence::Atomics { tensor: "H".into() });
    assert_eq!(why.to_string(), "its blocks update `H` with atomics");
}
