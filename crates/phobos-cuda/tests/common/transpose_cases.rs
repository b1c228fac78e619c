//! Differential cases of examples/transpose.ph at chosen points and ragged problems: tiles in
//! flight past M, 2-byte elements, VEC_COPY=1's shifted 16-byte accesses and STORE_LINES=1's
//! stores by line windows, at every row shift.

use super::cases::{example_case, Case};

/// The transpose cases (bench/NOTES.md r17, r19, r37c, r40, r42, r43).
pub fn transpose_cases() -> Vec<Result<Case, String>> {
    let mut cases = Vec::new();
    // The transpose with two tiles in flight (bench/NOTES.md r17): the last block's tiles past
    // M (ragged M; 2 and 4 tiles a block), odd N, a block of one tile's rows past M entirely.
    for (pins, m, n) in [
        ("TILE_R=64 TILE_C=32 TILES=4 THREADS=512 AHEAD=2", 333, 45),
        ("TILE_R=16 TILE_C=64 TILES=2 THREADS=128 AHEAD=2", 77, 131),
        ("TILE_R=32 TILE_C=32 TILES=4 THREADS=256 AHEAD=2", 97, 33),
    ] {
        cases.push(example_case(
            "transpose.ph",
            pins,
            None,
            &[("M", m), ("N", n)],
        ));
    }
    // 2-byte elements (8-element groups): odd M and N (rows of every shift 0..7, by the shifted
    // loads and element stores), aligned rows (16-byte loads and stores), two tiles in flight
    // past M, a tile wider than the problem; bf16 and f16.
    for (pins, types, m, n) in [
        ("TILE_R=64 TILE_C=64 TILES=2 THREADS=256", "T=bf16", 131, 67),
        (
            "TILE_R=128 TILE_C=64 TILES=4 THREADS=1024 AHEAD=2",
            "T=bf16",
            301,
            77,
        ),
        ("TILE_R=32 TILE_C=32 TILES=1 THREADS=128", "T=bf16", 64, 128),
        (
            "TILE_R=16 TILE_C=64 TILES=2 THREADS=128 AHEAD=2",
            "T=f16",
            99,
            203,
        ),
        ("TILE_R=64 TILE_C=16 TILES=1 THREADS=256", "T=f16", 3, 1),
    ] {
        cases.push(example_case(
            "transpose.ph",
            pins,
            Some(types),
            &[("M", m), ("N", n)],
        ));
    }
    // VEC_COPY=1 (bench/NOTES.md r19): unaligned f32 rows by shifted 16-byte loads and
    // transposed stores. Odd M and N (every row shift 0..3), N ≡ 1, 2, 3 (mod 4), only X's or
    // only Y's rows unaligned, tiles partly or mostly outside, one-row and one-column problems.
    for (pins, m, n) in [
        (
            "TILE_R=64 TILE_C=32 TILES=2 THREADS=512 AHEAD=2",
            1001,
            3001,
        ),
        ("TILE_R=64 TILE_C=64 TILES=1 THREADS=512", 333, 45),
        ("TILE_R=16 TILE_C=32 TILES=1 THREADS=128", 33, 65),
        ("TILE_R=16 TILE_C=32 TILES=1 THREADS=128", 7, 5),
        // 2-element groups (a 16 x 16 tile at 128 threads): `load_tile`'s run-time checks.
        ("TILE_R=16 TILE_C=16 TILES=1 THREADS=128", 35, 67),
        ("TILE_R=32 TILE_C=32 TILES=4 THREADS=256 AHEAD=2", 130, 94),
        ("TILE_R=16 TILE_C=64 TILES=2 THREADS=128 AHEAD=2", 99, 203),
        ("TILE_R=64 TILE_C=16 TILES=4 THREADS=256", 128, 77),
        ("TILE_R=32 TILE_C=64 TILES=1 THREADS=256", 77, 256),
        ("TILE_R=16 TILE_C=64 TILES=1 THREADS=128", 1, 37),
        ("TILE_R=64 TILE_C=16 TILES=2 THREADS=256", 3, 1),
    ] {
        cases.push(example_case(
            "transpose.ph",
            &format!("{pins} VEC_COPY=1"),
            None,
            &[("M", m), ("N", n)],
        ));
    }
    // STORE_LINES=1 (bench/NOTES.md r37c, r40): Y's unaligned rows stored by warp windows on
    // 128-byte lines. f32: odd M and N (every row shift 0..31 met), M ≡ 2 (mod 4), only X's
    // rows unaligned (windows not taken), tiles with fewer Y rows than warps, rows shorter than a
    // line, several tiles a block, one-row and one-column problems. 2-byte types (r43: a lane a
    // pair, one 4-byte store where both lie in the segment): the same, row shifts 0..63, and
    // M ≡ 4 (mod 8) (rows aligned to 8 bytes only). 256-row tiles in both types (r48).
    for (pins, types, m, n) in [
        (
            "TILE_R=128 TILE_C=64 TILES=1 THREADS=1024",
            None,
            1001,
            3001,
        ),
        (
            "TILE_R=64 TILE_C=32 TILES=2 THREADS=512 AHEAD=2",
            None,
            333,
            45,
        ),
        ("TILE_R=128 TILE_C=16 TILES=1 THREADS=1024", None, 77, 131),
        ("TILE_R=16 TILE_C=16 TILES=1 THREADS=128", None, 35, 67),
        (
            "TILE_R=32 TILE_C=32 TILES=4 THREADS=256 AHEAD=2",
            None,
            130,
            94,
        ),
        ("TILE_R=32 TILE_C=64 TILES=1 THREADS=256", None, 128, 77),
        ("TILE_R=16 TILE_C=64 TILES=1 THREADS=128", None, 1, 37),
        ("TILE_R=64 TILE_C=16 TILES=2 THREADS=256", None, 3, 1),
        (
            "TILE_R=128 TILE_C=64 TILES=1 THREADS=1024",
            Some("T=bf16"),
            1001,
            3001,
        ),
        (
            "TILE_R=64 TILE_C=32 TILES=2 THREADS=512 AHEAD=2",
            Some("T=bf16"),
            333,
            45,
        ),
        (
            "TILE_R=128 TILE_C=16 TILES=1 THREADS=1024",
            Some("T=f16"),
            77,
            131,
        ),
        (
            "TILE_R=16 TILE_C=16 TILES=1 THREADS=128",
            Some("T=bf16"),
            35,
            67,
        ),
        (
            "TILE_R=32 TILE_C=32 TILES=4 THREADS=256 AHEAD=2",
            Some("T=f16"),
            130,
            94,
        ),
        (
            "TILE_R=64 TILE_C=64 TILES=1 THREADS=512",
            Some("T=bf16"),
            132,
            77,
        ),
        (
            "TILE_R=32 TILE_C=64 TILES=1 THREADS=256",
            Some("T=bf16"),
            128,
            77,
        ),
        (
            "TILE_R=16 TILE_C=64 TILES=1 THREADS=128",
            Some("T=f16"),
            1,
            37,
        ),
        (
            "TILE_R=64 TILE_C=16 TILES=2 THREADS=256",
            Some("T=bf16"),
            3,
            1,
        ),
        // 256-row tiles (r48), two a block: a tile inside Y's columns and one at its edge.
        (
            "TILE_R=256 TILE_C=64 TILES=2 THREADS=1024 AHEAD=2",
            Some("T=bf16"),
            601,
            77,
        ),
        ("TILE_R=256 TILE_C=32 TILES=1 THREADS=512", None, 601, 77),
    ] {
        cases.push(example_case(
            "transpose.ph",
            &format!("{pins} STORE_LINES=1"),
            types,
            &[("M", m), ("N", n)],
        ));
    }
    cases
}
