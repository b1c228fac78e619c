//! GPU differential cases of the whole-row forms (`WHOLE=1`, bench/NOTES.md r16) of
//! examples/cross_entropy.ph and examples/softmax_online.ph: the row one masked tile, packed
//! (PACK=4) and, at ROW_SMEM=1, staged in shared memory by bulk copies (the online softmax's store
//! through the same buffer). Rows of every shift (an odd width over 9 rows), aligned rows, rows
//! shorter than a group of the block; cross-entropy's targets chosen so that the target's logit
//! lies in the row's unaligned head, in its unaligned tail and in the bulk-copied interior. At
//! ROWS_AHEAD=1 (bench/NOTES.md r18, softmax_row.ph too) the blocks are persistent, the next row
//! copied into a second buffer: row counts that leave blocks different numbers of rows.

use super::cases::{example_case_with, Case};
use phobos_ir::HostTensor;

/// Row r's target: its first column (the head: before the row's first 16-byte boundary unless the
/// row is aligned), its last (the tail: past its last boundary unless the row ends on one), or
/// one in the middle (the interior), by turns.
pub fn target_of(r: usize, v: i64) -> f64 {
    match r % 3 {
        0 => 0.0,
        1 => (v - 1) as f64,
        _ => (v / 2 + 3) as f64,
    }
}

/// The targets of `t` (shape [M]) set by `target_of`.
pub fn set_targets(t: &mut HostTensor, v: i64) {
    for (r, x) in t.data.iter_mut().enumerate() {
        *x = target_of(r, v);
    }
}

/// (pins, types, M, V) of every case.
pub const WHOLE_ROW_POINTS: [(&str, &str, i64, i64); 34] = [
    // 56 elements a thread at 1024 threads, two blocks a multiprocessor; every shift.
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        9,
        50257,
    ),
    // 112 elements a thread.
    (
        "BLOCK=57344 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        5,
        50257,
    ),
    // The packed row in registers (PACK=4 alone).
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=0",
        "T=bf16",
        9,
        50257,
    ),
    // Aligned rows (no shift, no head or tail).
    (
        "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        3,
        32000,
    ),
    (
        "BLOCK=32768 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        9,
        30001,
    ),
    (
        "BLOCK=8192 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        9,
        8191,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        9,
        1001,
    ),
    // Rows shorter than one 16-byte chunk: the head and tail loads alone.
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        9,
        5,
    ),
    // f16: the staged words are f16 pairs, the max reads them as f32.
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=f16",
        9,
        50257,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=f16",
        9,
        1001,
    ),
    (
        "BLOCK=16384 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=0",
        "T=f16",
        5,
        9001,
    ),
    // ROW_SMEM=2: masked in place, not realigned (every shift at 50257; at 2045 in a 2048 tile
    // the rows of shift 4 and more reach the chunk past the layout's and are realigned; a row
    // of exactly the tile; rows shorter than a chunk).
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2",
        "T=bf16",
        9,
        50257,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=2",
        "T=bf16",
        9,
        2045,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=2",
        "T=bf16",
        4,
        2048,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=2",
        "T=bf16",
        9,
        5,
    ),
    (
        "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=2",
        "T=bf16",
        3,
        32000,
    ),
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2",
        "T=f16",
        9,
        50257,
    ),
    // ONE_PASS=0 (bench/NOTES.md r30): the max and the sum of exponentials in two passes, the
    // form the bf16 points above replaced by one.
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2 ONE_PASS=0",
        "T=bf16",
        9,
        50257,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=2 ONE_PASS=0",
        "T=bf16",
        9,
        2045,
    ),
    // ROWS_AHEAD=1 (bench/NOTES.md r18): persistent blocks, the next row copied into the other
    // buffer. gpu_diff also runs these on a grid of ROWS_AHEAD_CAP blocks, so that each block
    // walks several rows (both buffers, both phases of each barrier); row counts that are not a
    // multiple of the blocks; every shift at the odd widths, an aligned width, rows shorter
    // than a chunk (copies of no bytes).
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1",
        "T=bf16",
        13,
        50257,
    ),
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        "T=bf16",
        7,
        50257,
    ),
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1",
        "T=f16",
        13,
        50257,
    ),
    (
        "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1",
        "T=bf16",
        9,
        32000,
    ),
    (
        "BLOCK=4096 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        "T=bf16",
        133,
        3001,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1",
        "T=bf16",
        301,
        2045,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1",
        "T=f16",
        133,
        1001,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        "T=bf16",
        7,
        5,
    ),
    // f32: the whole row in registers (ROW_SMEM is for 2-byte types).
    ("BLOCK=32768 THREADS=1024 WHOLE=1 PACK=4", "T=f32", 3, 32000),
    ("BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4", "T=f32", 3, 50257),
    // ROWS_AHEAD=2 (bench/NOTES.md r21): persistent blocks, the next row landing in one buffer,
    // this one read out of it into registers (packed at 2 bytes, a Tile at f32); every shift,
    // aligned rows (the f32 16-byte groups), rows shorter than a 16-byte chunk (no copy).
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
        "T=bf16",
        13,
        50257,
    ),
    (
        "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
        "T=f16",
        9,
        32000,
    ),
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROWS_AHEAD=2",
        "T=f32",
        7,
        50257,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
        "T=bf16",
        7,
        5,
    ),
    (
        "BLOCK=4096 THREADS=256 WHOLE=1 PACK=4 ROWS_AHEAD=2",
        "T=f32",
        133,
        3001,
    ),
];

/// (pins, types, M, N) of every online-softmax case.
pub const ONLINE_WHOLE_POINTS: [(&str, &str, i64, i64); 20] = [
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        9,
        50257,
    ),
    (
        "BLOCK=57344 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        5,
        50257,
    ),
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=0",
        "T=bf16",
        9,
        50257,
    ),
    (
        "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        3,
        32000,
    ),
    (
        "BLOCK=16384 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        4,
        16384,
    ),
    (
        "BLOCK=8192 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        9,
        8191,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        9,
        1001,
    ),
    (
        "BLOCK=1024 THREADS=128 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        9,
        5,
    ),
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=f16",
        9,
        50257,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=f16",
        5,
        1001,
    ),
    ("BLOCK=32768 THREADS=1024 WHOLE=1 PACK=4", "T=f32", 3, 30001),
    // ROWS_AHEAD=1: the store through the buffer before the buffer is refilled.
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        "T=bf16",
        13,
        50257,
    ),
    (
        "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        "T=bf16",
        9,
        32000,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        "T=f16",
        133,
        1001,
    ),
    (
        "BLOCK=1024 THREADS=128 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        "T=bf16",
        7,
        5,
    ),
    // ROWS_AHEAD=2: the store from registers after the next row is issued.
    (
        "BLOCK=51200 THREADS=1024 WHOLE=1 PACK=4 ROWS_AHEAD=2",
        "T=f32",
        13,
        50257,
    ),
    (
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
        "T=bf16",
        13,
        50257,
    ),
    (
        "BLOCK=32768 THREADS=1024 WHOLE=1 PACK=4 ROWS_AHEAD=2",
        "T=f32",
        9,
        32000,
    ),
    (
        "BLOCK=1024 THREADS=128 WHOLE=1 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
        "T=bf16",
        7,
        5,
    ),
    (
        "BLOCK=2048 THREADS=256 WHOLE=1 PACK=4 ROWS_AHEAD=2",
        "T=f32",
        133,
        1001,
    ),
];

/// (pins, types, M, N) of examples/softmax_row.ph's ROWS_AHEAD cases (ROW_SMEM=2: each row left
/// where its copy put it and stored from the registers, bench/NOTES.md r24).
pub const ROW_AHEAD_POINTS: [(&str, &str, i64, i64); 8] = [
    (
        "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1",
        "T=bf16",
        13,
        50257,
    ),
    (
        "BLOCK=8192 THREADS=1024 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1",
        "T=f16",
        133,
        3001,
    ),
    (
        "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        "T=bf16",
        13,
        50257,
    ),
    (
        "BLOCK=57344 THREADS=512 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        "T=f16",
        7,
        50257,
    ),
    (
        "BLOCK=8192 THREADS=1024 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        "T=bf16",
        133,
        3001,
    ),
    (
        "BLOCK=51200 THREADS=1024 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
        "T=f32",
        13,
        50257,
    ),
    (
        "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
        "T=bf16",
        7,
        50257,
    ),
    (
        "BLOCK=8192 THREADS=1024 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
        "T=f16",
        133,
        3001,
    ),
];

/// (file, width dim, pins, types, M, width) of the ROW_SPLIT cases (bench/NOTES.md r22): each row
/// on a cluster of 2 or 4 blocks. Every shift of a bf16 row, f32 rows of one-element groups and
/// aligned ones, the target's logit in any block's part, and rows narrower than one block's part
/// (the blocks past them hold only masked columns).
pub const ROW_SPLIT_POINTS: [(&str, &str, &str, &str, i64, i64); 8] = [
    (
        "cross_entropy.ph",
        "V",
        "BLOCK=57344 THREADS=512 WHOLE=1 PACK=4 ROW_SPLIT=2",
        "T=bf16",
        9,
        50257,
    ),
    (
        "cross_entropy.ph",
        "V",
        "BLOCK=32768 THREADS=256 WHOLE=1 PACK=4 ROW_SPLIT=4",
        "T=f32",
        5,
        32000,
    ),
    (
        "softmax_online.ph",
        "N",
        "BLOCK=51200 THREADS=512 WHOLE=1 PACK=4 ROW_SPLIT=2",
        "T=f32",
        13,
        50257,
    ),
    (
        "softmax_online.ph",
        "N",
        "BLOCK=16384 THREADS=256 WHOLE=1 PACK=4 ROW_SPLIT=4",
        "T=bf16",
        7,
        1001,
    ),
    (
        "softmax_online.ph",
        "N",
        "BLOCK=32768 THREADS=1024 WHOLE=1 PACK=4 ROW_SPLIT=2",
        "T=f16",
        9,
        32000,
    ),
    (
        "softmax_row.ph",
        "N",
        "BLOCK=51200 THREADS=512 PACK=4 ROW_SPLIT=2",
        "T=f32",
        13,
        50257,
    ),
    (
        "softmax_row.ph",
        "N",
        "BLOCK=57344 THREADS=512 PACK=4 ROW_SPLIT=2",
        "T=bf16",
        9,
        50257,
    ),
    (
        "softmax_row.ph",
        "N",
        "BLOCK=65536 THREADS=1024 PACK=4 ROW_SPLIT=4",
        "T=f16",
        9,
        50257,
    ),
];

/// The grid gpu_diff also runs the ROWS_AHEAD=1 cases on (`PreparedLaunch::max_blocks`).
pub const ROWS_AHEAD_CAP: u32 = 2;

/// (file, width's name, pins, types, M, width) of the one-pass cases on climbing rows (bench/NOTES.md
/// r35): row r's column c holds c / 16 + r - 40, so each thread's later groups rise far above its
/// first group's max (by 512 a group step at 8192 columns, 128 at 2048: times log2(e), more than
/// the 96 that `ph::row_max_sumexp2`'s exponents may reach above its first offset) and the thread
/// sums its groups again at its own max.
pub const CLIMB_POINTS: [(&str, &str, &str, &str, i64, i64); 4] = [
    (
        "cross_entropy.ph",
        "V",
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2 ONE_PASS=1",
        "T=bf16",
        7,
        50257,
    ),
    (
        "cross_entropy.ph",
        "V",
        "BLOCK=8192 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=2 ONE_PASS=1",
        "T=bf16",
        7,
        8191,
    ),
    (
        "softmax_online.ph",
        "N",
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2 ONE_PASS=1",
        "T=bf16",
        7,
        50257,
    ),
    (
        "softmax_online.ph",
        "N",
        "BLOCK=8192 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1 ONE_PASS=1",
        "T=f16",
        7,
        8191,
    ),
];

/// The whole-row cases of both examples, built offline (interpreter, emitted code).
pub fn whole_row_cases() -> Vec<Result<Case, String>> {
    let points = (WHOLE_ROW_POINTS.iter()).map(|p| ("cross_entropy.ph", "V", p));
    let online = (ONLINE_WHOLE_POINTS.iter()).map(|p| ("softmax_online.ph", "N", p));
    let row = (ROW_AHEAD_POINTS.iter()).map(|p| ("softmax_row.ph", "N", p));
    let split = (ROW_SPLIT_POINTS.iter()).map(|&(f, w, p, t, m, v)| (f, w, (p, t, m, v), false));
    let climb = CLIMB_POINTS.map(|(f, w, p, t, m, v)| (f, w, (p, t, m, v), true));
    let points = points
        .chain(online)
        .chain(row)
        .map(|(f, w, &p)| (f, w, p, false));
    let all = points.chain(split).chain(climb);
    all.map(|(file, width, (pins, types, m, v), climbs)| {
        let inputs = |name: &str, t: &mut HostTensor| match name {
            "Target" => set_targets(t, v),
            "X" if climbs => {
                for (i, x) in t.data.iter_mut().enumerate() {
                    let (r, c) = (i as i64 / v, i as i64 % v);
                    *x = c as f64 / 16.0 + r as f64 - 40.0;
                }
            }
            _ => {}
        };
        let dims = [("M", m), (width, v)];
        example_case_with(file, pins, Some(types), &dims, &inputs)
    })
    .collect()
}
