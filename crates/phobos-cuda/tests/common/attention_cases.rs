//! Attention's loop forms as differential cases (tests/attention_forms.rs runs them on the GPU
//! against the interpreter and compiles them offline): flash_attention and its D=128 form at the
//! tuner's winners and their neighbours, every form of the overlapped loop (PINGPONG, RING,
//! PRODUCER, PERSIST, WALK, three consumer warpgroups) at ragged N, causal and not, f16 and bf16.

use super::cases::Case;
use super::mma_cases::typed_cases_of;
use super::source;

/// The attention example (head dimension 64) and its form at head dimension 128.
pub const FA: &str = "examples/flash_attention.ph";
pub const D128: &str = "examples/flash_attention_d128.ph";

/// The grid of a persistent case's capped run on the GPU: below every such case's logical grid
/// (10 to 32 logical blocks), so that each block walks five to sixteen of them.
pub const PERSIST_CAP: u32 = 2;

/// The forms at the tuner's winners and their neighbours: serial and overlapped loops, one or
/// two warpgroups (taking turns at PINGPONG=1), the streamed buffers behind block barriers or an
/// mbarrier ring (RING=1), f16 and bf16, D=64 and 128, causal and not, N leaving a ragged last
/// tile.
pub fn form_cases() -> Vec<Case> {
    let fa = source(FA);
    let d128 = source(D128);
    let mut out = Vec::new();
    for (types, seed) in [("T=f16", 41), ("T=bf16", 42)] {
        out.extend(typed_cases_of(
            &fa,
            Some(types),
            &[
                (
                    "BR=64 BC=128 THREADS=128 MIN_BLOCKS=3 OVERLAP=0",
                    &[("BH", 2), ("N", 300)],
                ),
                (
                    "BR=64 BC=128 THREADS=128 MIN_BLOCKS=1 OVERLAP=1 CAUSAL=1",
                    &[("BH", 2), ("N", 300)],
                ),
                (
                    "BR=128 BC=128 THREADS=256 OVERLAP=0 CAUSAL=1",
                    &[("BH", 1), ("N", 257)],
                ),
                (
                    "BR=64 BC=128 THREADS=128 MIN_BLOCKS=1 OVERLAP=2",
                    &[("BH", 2), ("N", 300)],
                ),
                (
                    "BR=128 BC=128 THREADS=256 OVERLAP=1 PINGPONG=1 CAUSAL=1",
                    &[("BH", 1), ("N", 300)],
                ),
            ],
            seed,
        ));
        out.extend(typed_cases_of(
            &d128,
            Some(types),
            &[
                (
                    "BR=64 BC=64 THREADS=128 OVERLAP=1",
                    &[("BH", 2), ("N", 200)],
                ),
                (
                    "BR=64 BC=64 THREADS=128 OVERLAP=0 CAUSAL=1",
                    &[("BH", 2), ("N", 200)],
                ),
                (
                    "BR=128 BC=64 THREADS=256 OVERLAP=1 CAUSAL=1",
                    &[("BH", 1), ("N", 193)],
                ),
                (
                    "BR=64 BC=64 THREADS=128 OVERLAP=2 CAUSAL=1",
                    &[("BH", 2), ("N", 200)],
                ),
                (
                    "BR=128 BC=64 THREADS=256 OVERLAP=1 PINGPONG=1",
                    &[("BH", 2), ("N", 193)],
                ),
                (
                    "BR=128 BC=64 THREADS=256 OVERLAP=2 PINGPONG=1 CAUSAL=1",
                    &[("BH", 1), ("N", 300)],
                ),
            ],
            seed + 10,
        ));
    }
    // The mbarrier ring (RING=1): enough key tiles that every buffer is filled and released
    // three times or more (the phases' parities wrap), one and two warpgroups, taking turns or
    // not, causal and not.
    out.extend(typed_cases_of(
        &fa,
        Some("T=f16"),
        &[(
            "BR=128 BC=64 THREADS=256 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 CAUSAL=1",
            &[("BH", 1), ("N", 700)],
        )],
        51,
    ));
    out.extend(typed_cases_of(
        &fa,
        Some("T=bf16"),
        &[(
            "BR=64 BC=64 THREADS=128 MIN_BLOCKS=1 OVERLAP=2 RING=1",
            &[("BH", 2), ("N", 601)],
        )],
        52,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=f16"),
        &[
            (
                "BR=128 BC=64 THREADS=256 OVERLAP=2 PINGPONG=1 RING=1",
                &[("BH", 1), ("N", 700)],
            ),
            (
                "BR=64 BC=64 THREADS=128 OVERLAP=1 RING=1",
                &[("BH", 1), ("N", 577)],
            ),
        ],
        53,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=bf16"),
        &[(
            "BR=128 BC=128 THREADS=256 OVERLAP=1 RING=1 CAUSAL=1",
            &[("BH", 1), ("N", 1000)],
        )],
        54,
    ));
    // The ring filled by a producer warp (PRODUCER=1, THREADS = 128 * warpgroups + 32) or
    // warpgroup (PRODUCER=2, + 128, setmaxnreg) with TMA: ragged N (577, 700, 1000: the last
    // key tile's rows past N read as zeros by the rank-3 maps, never the next head's), BH above
    // one, one and two consumer warpgroups, causal and not, f16 and bf16, D=64 and 128.
    out.extend(typed_cases_of(
        &fa,
        Some("T=f16"),
        &[
            (
                "BR=128 BC=64 THREADS=288 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=1 CAUSAL=1",
                &[("BH", 1), ("N", 700)],
            ),
            (
                "BR=128 BC=128 THREADS=384 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2",
                &[("BH", 2), ("N", 577)],
            ),
        ],
        55,
    ));
    out.extend(typed_cases_of(
        &fa,
        Some("T=bf16"),
        &[(
            "BR=64 BC=64 THREADS=160 MIN_BLOCKS=1 OVERLAP=2 RING=1 PRODUCER=1",
            &[("BH", 2), ("N", 1000)],
        )],
        56,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=f16"),
        &[
            (
                "BR=128 BC=64 THREADS=384 OVERLAP=2 PINGPONG=1 RING=1 PRODUCER=2",
                &[("BH", 2), ("N", 577)],
            ),
            (
                "BR=64 BC=64 THREADS=256 OVERLAP=1 RING=1 PRODUCER=2 CAUSAL=1",
                &[("BH", 2), ("N", 577)],
            ),
            (
                "BR=64 BC=64 THREADS=160 OVERLAP=1 RING=1 PRODUCER=1",
                &[("BH", 1), ("N", 577)],
            ),
        ],
        57,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=bf16"),
        &[
            (
                "BR=128 BC=64 THREADS=288 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=1 CAUSAL=1",
                &[("BH", 1), ("N", 577)],
            ),
            (
                "BR=128 BC=128 THREADS=384 OVERLAP=1 RING=1 PRODUCER=2",
                &[("BH", 1), ("N", 1000)],
            ),
        ],
        58,
    ));
    // Persistent blocks (PERSIST=1, with PRODUCER=2): the GPU test runs each at a grid capped
    // below the logical grid ([`PERSIST_CAP`] blocks), so that every block walks several logical
    // blocks and the ring's counter runs on across them (the phases wrap mid-block), and
    // uncapped; ragged N, BH 1-3, one and two consumer warpgroups, causal and not.
    out.extend(typed_cases_of(
        &fa,
        Some("T=f16"),
        &[
            (
                "BR=128 BC=128 THREADS=384 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=1 CAUSAL=1",
                &[("BH", 3), ("N", 577)],
            ),
            (
                "BR=64 BC=64 THREADS=256 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=1",
                &[("BH", 2), ("N", 1000)],
            ),
        ],
        59,
    ));
    out.extend(typed_cases_of(
        &fa,
        Some("T=bf16"),
        &[(
            "BR=128 BC=64 THREADS=384 MIN_BLOCKS=1 OVERLAP=2 RING=1 PRODUCER=2 PERSIST=1",
            &[("BH", 2), ("N", 1000)],
        )],
        60,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=f16"),
        &[
            (
                "BR=128 BC=128 THREADS=384 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=1",
                &[("BH", 3), ("N", 1000)],
            ),
            (
                "BR=64 BC=64 THREADS=256 OVERLAP=2 RING=1 PRODUCER=2 PERSIST=1 CAUSAL=1",
                &[("BH", 1), ("N", 577)],
            ),
        ],
        61,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=bf16"),
        &[(
            "BR=128 BC=64 THREADS=384 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=1 CAUSAL=1",
            &[("BH", 2), ("N", 577)],
        )],
        62,
    ));
    // PERSIST=2: q loaded by the producer too (a third map, boxes of BR rows; the rows past N
    // read as zeros).
    out.extend(typed_cases_of(
        &fa,
        Some("T=bf16"),
        &[(
            "BR=128 BC=128 THREADS=384 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=2 CAUSAL=1",
            &[("BH", 2), ("N", 577)],
        )],
        63,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=f16"),
        &[
            (
                "BR=128 BC=64 THREADS=384 OVERLAP=2 RING=1 PRODUCER=2 PERSIST=2",
                &[("BH", 3), ("N", 1000)],
            ),
            (
                "BR=64 BC=64 THREADS=256 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=2 CAUSAL=1",
                &[("BH", 2), ("N", 577)],
            ),
        ],
        64,
    ));
    // WALK=1: the logical blocks walked in a snake, x slowest. At the capped grid of 2 blocks
    // the odd rounds deal them backwards, and an odd count of logical blocks (5 x 3, causal and
    // not) ends in an odd round whose low block is past the end while the high one is not.
    out.extend(typed_cases_of(
        &fa,
        Some("T=f16"),
        &[
            (
                "BR=128 BC=128 THREADS=384 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=2 WALK=1 CAUSAL=1",
                &[("BH", 3), ("N", 577)],
            ),
            (
                "BR=64 BC=64 THREADS=256 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=1 WALK=1",
                &[("BH", 2), ("N", 1000)],
            ),
        ],
        65,
    ));
    out.extend(typed_cases_of(
        &fa,
        Some("T=bf16"),
        &[(
            "BR=128 BC=64 THREADS=384 MIN_BLOCKS=1 OVERLAP=2 RING=1 PRODUCER=2 PERSIST=2 WALK=1 CAUSAL=1",
            &[("BH", 1), ("N", 577)],
        )],
        66,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=f16"),
        &[
            (
                "BR=128 BC=128 THREADS=384 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=2 WALK=1 CAUSAL=1",
                &[("BH", 3), ("N", 577)],
            ),
            (
                "BR=128 BC=64 THREADS=384 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=1 WALK=1",
                &[("BH", 3), ("N", 577)],
            ),
        ],
        67,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=bf16"),
        &[
            (
                "BR=128 BC=64 THREADS=384 OVERLAP=2 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=2 WALK=1",
                &[("BH", 3), ("N", 1000)],
            ),
            (
                "BR=64 BC=64 THREADS=256 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=1 WALK=1 CAUSAL=1",
                &[("BH", 2), ("N", 577)],
            ),
        ],
        68,
    ));
    // WALK=2: the row blocks in pairs, x with gx - 1 - x (bench/NOTES.md a18). N=577 at BR=128
    // is 5 row blocks a head: the middle one (x = 2) is a unit of one, its second skipped; N=1000
    // at BR=128 is 8 (four whole pairs); BR=64 at N=577 is 10. At the capped grid of 2 blocks
    // each block walks many units, causal and not.
    out.extend(typed_cases_of(
        &d128,
        Some("T=bf16"),
        &[
            (
                "BR=128 BC=128 THREADS=384 OVERLAP=2 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=2 WALK=2 CAUSAL=1",
                &[("BH", 3), ("N", 577)],
            ),
            (
                "BR=128 BC=64 THREADS=384 OVERLAP=2 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=2 WALK=2",
                &[("BH", 3), ("N", 1000)],
            ),
        ],
        70,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=f16"),
        &[(
            "BR=64 BC=64 THREADS=256 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=1 WALK=2 CAUSAL=1",
            &[("BH", 2), ("N", 577)],
        )],
        71,
    ));
    out.extend(typed_cases_of(
        &fa,
        Some("T=f16"),
        &[(
            "BR=128 BC=128 THREADS=384 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=2 WALK=2 CAUSAL=1",
            &[("BH", 3), ("N", 1000)],
        )],
        72,
    ));
    // BR=192: three consumer warpgroups beside the producer warpgroup (setmaxnreg 24 / 160).
    // 192 rows divide neither 1000 nor 4096: each head's last row block has rows past N (the q
    // box's rows read as zeros, the O store masked), and causal's reversed row blocks put it
    // first. BC=128 spills at 160 registers but must still be right.
    out.extend(typed_cases_of(
        &fa,
        Some("T=f16"),
        &[
            (
                "BR=192 BC=64 THREADS=512 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2",
                &[("BH", 2), ("N", 1000)],
            ),
            (
                "BR=192 BC=128 THREADS=512 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=2 CAUSAL=1",
                &[("BH", 3), ("N", 1000)],
            ),
            (
                "BR=192 BC=64 THREADS=512 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=2 CAUSAL=1",
                &[("BH", 1), ("N", 4096)],
            ),
        ],
        69,
    ));
    out.extend(typed_cases_of(
        &fa,
        Some("T=bf16"),
        &[
            (
                "BR=192 BC=64 THREADS=512 MIN_BLOCKS=1 OVERLAP=2 RING=1 PRODUCER=2 PERSIST=2",
                &[("BH", 2), ("N", 1000)],
            ),
            (
                "BR=192 BC=128 THREADS=512 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2 CAUSAL=1",
                &[("BH", 2), ("N", 1000)],
            ),
            (
                "BR=192 BC=64 THREADS=512 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=1 WALK=1 CAUSAL=1",
                &[("BH", 3), ("N", 577)],
            ),
        ],
        70,
    ));
    // RAGGED=1 (bench/NOTES.md a17): causal BR=192's row blocks aligned to N's end, the first
    // clamped to row 0 and overlapping the second (at N=577 by 191 rows, at N=1000 by 152, at
    // N=4096 by 128): the overlapped rows are written twice with the same values. The
    // persistent ones also run at the capped grid, where the snake's odd rounds run backwards.
    out.extend(typed_cases_of(
        &fa,
        Some("T=f16"),
        &[
            (
                "BR=192 BC=128 THREADS=512 MIN_BLOCKS=1 OVERLAP=2 RING=1 PRODUCER=2 PERSIST=2 WALK=1 CAUSAL=1 RAGGED=1",
                &[("BH", 3), ("N", 1000)],
            ),
            (
                "BR=192 BC=128 THREADS=512 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=2 CAUSAL=1 RAGGED=1",
                &[("BH", 1), ("N", 4096)],
            ),
            (
                "BR=192 BC=64 THREADS=512 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2 CAUSAL=1 RAGGED=1",
                &[("BH", 2), ("N", 577)],
            ),
        ],
        71,
    ));
    out.extend(typed_cases_of(
        &fa,
        Some("T=bf16"),
        &[
            (
                "BR=192 BC=128 THREADS=512 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2 PERSIST=2 WALK=1 CAUSAL=1 RAGGED=1",
                &[("BH", 2), ("N", 577)],
            ),
            (
                "BR=192 BC=64 THREADS=512 MIN_BLOCKS=1 OVERLAP=2 RING=1 PRODUCER=2 PERSIST=1 CAUSAL=1 RAGGED=1",
                &[("BH", 3), ("N", 1000)],
            ),
        ],
        72,
    ));
    out.into_iter()
        .map(|c| c.unwrap_or_else(|e| panic!("{e}")))
        .collect()
}
