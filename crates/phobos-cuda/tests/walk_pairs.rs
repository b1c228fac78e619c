//! The paired walk's order (`WALK=2`, `Walk::Paired`, bench/NOTES.md a18) as a model of the
//! emitted loop (tests/persist.rs checks the emitted lines): every logical block dealt once, and
//! causal's work balanced over the persistent blocks.

/// The logical blocks block `j` of `g` takes in the emitted paired walk (tests/persist.rs's `PAIRED` lines).
fn paired(gx: i64, gy: i64, g: i64, j: i64) -> Vec<(i64, i64)> {
    let half = (gx + 1) >> 1;
    let mut out = Vec::new();
    for round in 0.. {
        let unit = j + (round >> 1) * g;
        if unit >= half * gy {
            break;
        }
        let p = unit % half;
        if round & 1 == 1 && 2 * p + 1 == gx {
            continue;
        }
        let bx = if round & 1 == 1 { gx - 1 - p } else { p };
        out.push((bx, unit / half));
    }
    out
}

#[test]
fn the_pairs_deal_every_logical_block_once_and_balance_causal() {
    for (gx, gy, g) in [
        (5, 3, 2),
        (8, 2, 2),
        (5, 1, 2),
        (9, 1, 4),
        (32, 64, 132),
        (1, 3, 2),
    ] {
        let mut all: Vec<(i64, i64)> = (0..g).flat_map(|j| paired(gx, gy, g, j)).collect();
        all.sort_unstable();
        let grid: Vec<(i64, i64)> = (0..gx).flat_map(|x| (0..gy).map(move |y| (x, y))).collect();
        assert_eq!(all, grid, "{gx} x {gy} over {g}");
    }
    // Causal's work per logical block is gx - bx key tiles: every pair carries gx + 1, so at
    // gx = 32, BH = 64 (1024 pairs) on 132 blocks the heaviest block takes 8 pairs (264 key
    // tiles) where the mean is 256 and round robin's heaviest 288 (bench/NOTES.md a18).
    let (gx, gy, g) = (32, 64, 132);
    let load = |blocks: Vec<(i64, i64)>| blocks.iter().map(|(x, _)| gx - x).sum::<i64>();
    let most = (0..g).map(|j| load(paired(gx, gy, g, j))).max().unwrap();
    assert_eq!(most, 264);
}
