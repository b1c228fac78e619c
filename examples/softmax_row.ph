// Row softmax of wide rows read once: one row a block, the whole row one BLOCK-wide tile held in
// registers between its two reductions and its store (softmax.ph's form for rows of 8k to 64k;
// softmax_online.ph reads such rows twice). The tile is masked past the runtime column count N:
// the masked elements are -inf before the max, so exp gives them 0 in the sum; those past N are
// never stored. BLOCK need not be a power of two: 57344 is 56 elements a thread at 1024 threads,
// the fewest groups of 8 that hold a 50257-wide row.
//
// PACK (a knob): 1 holds the bf16 or f16 row two elements to a 32-bit register, each use
// converting its element, so a bf16 row of 50257 takes 28 registers a thread at 1024 threads
// where its f32 tile (56) spills; the load is ph::load_row_packed (16-byte vectors, unaligned
// rows through a warp shuffle). 2 also stores unaligned rows by aligned 16-byte vectors
// (ph::store_row_shifted) instead of 8 two-byte stores a group, at some registers; 3 is 2 with
// fewer instructions an element (the column masks against the thread's first column, the
// store's T(..) rounded once). f32 sees only PACK=3's masks. 4 (bench/NOTES.md r14) is 3 with
// the mask written once, at the load (-inf past the row, filled in the packed registers), so
// neither pass masks, and the max taken on the packed row, two elements an instruction. An f32
// row of 50257 does not fit one block's registers (64 a thread at 1024 threads):
// softmax_online.ph.
//
// ROW_SMEM (a knob, with PACK=4 and 2-byte T; bench/NOTES.md r15): 1 stages the row in shared
// memory instead of registers (its interior by bulk copies on an mbarrier, the whole row's bytes
// in flight at once), each pass reading it a 16-byte chunk a group, the store written through
// the same buffer; the freed registers let two blocks share a multiprocessor (a bf16 row of
// 57344 takes 112 KB), one's load overlapping the other's arithmetic and store. Without the row
// in registers, a thread may hold up to 128 of its elements. ROW_SMEM=2 (bench/NOTES.md r24)
// leaves the row where its copy put it (rows of 50257 start at a different 2-byte offset each),
// masked in place, and stores each group from the registers it is computed in when Y's row
// starts at X's offset: no realigning moves, no barrier before the store. ROWS_AHEAD (a knob,
// with ROW_SMEM; bench/NOTES.md r18): 1 makes the blocks persistent, each looping over the rows
// `ctx.block.x`, `+ gridDim.x`, .., the row in two buffers: the next row's copy in flight while
// this one is computed and stored (one block a multiprocessor at BLOCK=57344).
// ROWS_AHEAD=2 (a knob, with the row in registers: ROW_SMEM=0 and PACK=4; bench/NOTES.md r21) keeps the
// persistent blocks but lands the next row in ONE shared buffer while this row is computed from
// registers: the row's `let` reads its elements out of the buffer, then the next row's copy is
// issued into it (two rows a multiprocessor, one in the register file, one in shared memory).
// BLOCK=51200 (4-byte T only) holds a row of up to 51200 in 50 registers a thread at 1024 threads,
// where 57344 takes 56 (and spills).
// ROW_SPLIT (a knob, with the row in registers at PACK=4; bench/NOTES.md r22): each row on a
// cluster of ROW_SPLIT blocks, each holding BLOCK / ROW_SPLIT of its columns, the max and the sum
// combined across the cluster: a multiprocessor holds parts of two rows where it held one.
@autotune(BLOCK in {8192, 16384, 32768, 51200, 57344, 65536}, THREADS in [256, 1024], PACK in {0, 1, 2, 3, 4}, ROW_SMEM in {0, 1, 2}, ROWS_AHEAD in {0, 1, 2}, ROW_SPLIT in {1, 2, 4})
// ONE_PASS (a knob, bench/NOTES.md r30): at a staged row (ROW_SMEM), 1 takes the row's max and its
// sum of exponentials in one pass, each thread's running (max, sum) as the row lands; 0 in two.
@autotune(ONE_PASS in {1, 0})
@where(ONE_PASS == 1 || ROW_SMEM >= 1)
@where(N <= BLOCK)
@where(BLOCK <= 64 * THREADS * (1 + min(ROW_SMEM, 1)) * ROW_SPLIT && BLOCK >= 8 * THREADS * ROW_SPLIT)
@where(ROW_SPLIT == 1 || PACK == 4 && ROW_SMEM == 0 && ROWS_AHEAD == 0 && BLOCK >= 16384)
@where(ROW_SMEM == 0 || PACK == 4 && sizeof(T) == 2)
@where(ROWS_AHEAD != 1 || ROW_SMEM >= 1)
@where(ROWS_AHEAD != 2 || ROW_SMEM == 0 && PACK == 4)
@where(BLOCK != 51200 || sizeof(T) == 4)
@launch(THREADS)
@bytes(2 * sizeof(T) * M * N)
kernel softmax_row<T = f32>(X: tensor<T>[M, N], Y: tensor<T>[M, N]) {
  let r = ctx.block.x
  if PACK != 4 {
    let x = X[r, 0 :+ BLOCK]
    // exp(x - max) as exp2(x * log2(e) - max * log2(e)): one FFMA and one MUFU an element.
    let m = max(where(arange(BLOCK) < N, f32(x), -inf)) * 1.4426950408889634
    let l = sum(exp2(where(arange(BLOCK) < N, f32(x), -inf) * 1.4426950408889634 - m))
    Y[r, 0 :+ BLOCK] = T(exp2(f32(x) * 1.4426950408889634 - m) * (1.0 / l))
  } else {
    let x = where(arange(BLOCK) < N, X[r, 0 :+ BLOCK], -inf)
    let m = max(f32(x)) * 1.4426950408889634
    let l = sum(exp2(f32(x) * 1.4426950408889634 - m))
    Y[r, 0 :+ BLOCK] = T(exp2(f32(x) * 1.4426950408889634 - m) * (1.0 / l))
  }
}
