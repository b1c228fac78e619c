// Row softmax of rows of any width: one row a block, in BLOCK-wide chunks. The first pass keeps
// the running maximum m and the running sum l of exp(x - m) (each new chunk rescales l by
// exp(m_old - m_new)), loading the next chunk before reducing the current one so that the load
// is in flight during the reductions; the second reads the row again and writes exp(x - m) / l.
// The row statistics are block-wide reductions to uniform scalars, so nothing is broadcast
// through shared memory. X is read twice: @bytes counts those bytes.
//
// The second pass walks the row backwards, last chunk first: the chunks the first pass read
// last are the likeliest to be still in L2, and each chunk's second read comes before the
// chunks read earlier are evicted. It loads the chunk before the current one before computing
// and storing it (at the row's start that is an access before column 0, which reads nothing).
// THREADS up to 1024 puts fewer rows in flight per multiprocessor, so that the rows between the
// two passes fit in L2.
//
// Eviction hints keep the row in L2 between the passes: the first pass reads it `evict_last`
// (kept over other lines), the second reads it `evict_first` (its last use) and stores Y
// `evict_first` (written once, never read here), so neither displaces rows still to be read
// again. Hints never change a value; the knob EVICT=0 drops them, so the tuner compares the
// code with and without. SHIFT is cross_entropy.ph's knob (the shifted loads of unaligned bf16
// rows; 2 is kept to the partials' loop).
//
// PARTIALS (as in cross_entropy.ph, bench/NOTES.md r13): 0, the first pass updates the block's
// (m, l) each chunk by two block reductions; 2 or 4, each element position keeps its own running
// max and sum over steps of PARTIALS chunks (one rescale a step, no block reduction in the loop),
// combined by the block once a row. The partials start at -1e30, so a position that sees only
// masked elements rescales by 1, not NaN. The second pass is the same for every PARTIALS.
//
// WHOLE (as in cross_entropy.ph, bench/NOTES.md r16): 1 reads the row once, as one masked tile
// of BLOCK >= N, softmax_row.ph's PACK=4 body: at PACK=4 (a knob) the tile is held packed with
// -inf past the row, its max taken on packed pairs; at ROW_SMEM=1 (a knob) it is staged in
// shared memory by bulk copies (the whole row's bytes in flight at once, two blocks a
// multiprocessor) and the store writes through the same buffer, for 2-byte T only (f32's
// whole row stays in registers); at ROW_SMEM=2 the row stays where its copy put it and each
// group is stored from its registers (bench/NOTES.md r24); the chunked points (WHOLE=0) keep
// PACK=0 and ROW_SMEM=0. At
// ROWS_AHEAD=1 (a knob, with ROW_SMEM, bench/NOTES.md r18) the blocks are persistent, each
// looping over the rows `ctx.block.x`, `+ gridDim.x`, .., the row in two buffers: the next row's
// copy is in flight while this one is computed and stored.
// ROWS_AHEAD=2 (a knob, with the row in registers: ROW_SMEM=0; bench/NOTES.md r21) keeps the
// persistent blocks but lands the next row in ONE shared buffer while this row is computed from
// registers: the row's `let` reads its elements out of the buffer, then the next row's copy is
// issued into it (two rows a multiprocessor, one in the register file, one in shared memory).
// BLOCK=51200 (4-byte T only) holds a row of up to 51200 in 50 registers a thread at 1024 threads,
// where 57344 takes 56 (and spills).
// ROW_SPLIT (a knob, with WHOLE=1 and the row in registers; bench/NOTES.md r22): each row on a
// cluster of ROW_SPLIT blocks, each holding BLOCK / ROW_SPLIT of its columns, the reductions
// combined across the cluster: a multiprocessor holds parts of two rows where it held one.
@autotune(BLOCK in {1024, 2048, 4096, 8192, 16384, 32768, 51200, 57344}, THREADS in {128, 256, 512, 1024}, SHIFT in {0, 1, 2}, EVICT in {0, 1}, PARTIALS in {0, 2, 4}, WHOLE in {0, 1}, PACK in {0, 4}, ROW_SMEM in {0, 1, 2}, ROWS_AHEAD in {0, 1, 2}, ROW_SPLIT in {1, 2, 4})
// ONE_PASS (a knob, bench/NOTES.md r30): at a staged row (ROW_SMEM), 1 takes the row's max and its
// sum of exponentials in one pass, each thread's running (max, sum) as the row lands; 0 in two.
@autotune(ONE_PASS in {1, 0})
@where(ONE_PASS == 1 || ROW_SMEM >= 1)
@where(WHOLE == 1 || BLOCK <= 16384 && PACK == 0 && ROW_SMEM == 0)
@where(WHOLE == 1 || BLOCK <= 32 * THREADS && BLOCK >= 4 * THREADS)
@where(WHOLE == 0 || SHIFT == 0 && EVICT == 0 && PARTIALS == 0 && PACK == 4 && (ROW_SMEM == 0 || sizeof(T) == 2))
@where(WHOLE == 0 || BLOCK >= 8 * THREADS * ROW_SPLIT && BLOCK <= 64 * THREADS * (1 + min(ROW_SMEM, 1)) * ROW_SPLIT)
@where(ROW_SPLIT == 1 || WHOLE == 1 && ROW_SMEM == 0 && ROWS_AHEAD == 0 && BLOCK >= 16384)
@where(WHOLE == 0 || N <= BLOCK)
@where(ROWS_AHEAD != 1 || WHOLE == 1 && ROW_SMEM >= 1)
@where(ROWS_AHEAD != 2 || WHOLE == 1 && ROW_SMEM == 0)
@where(BLOCK != 51200 || sizeof(T) == 4)
@where(PARTIALS == 0 || (BLOCK == 8 * THREADS && THREADS <= 512))
@where(SHIFT != 2 || PARTIALS != 0)
@launch(THREADS)
@bytes(3 * sizeof(T) * M * N)
kernel softmax_online<T = f32>(X: tensor<T>[M, N], Y: tensor<T>[M, N]) {
  let r = ctx.block.x
  var m: f32 = -inf
  var l: f32 = 0.0
  if WHOLE == 1 {
    let x = where(arange(BLOCK) < N, X[r, 0 :+ BLOCK], -inf)
    // exp(x - max) as exp2(x * log2(e) - max * log2(e)), the max kept scaled.
    let mw = max(f32(x)) * 1.4426950408889634
    let lw = sum(exp2(f32(x) * 1.4426950408889634 - mw))
    Y[r, 0 :+ BLOCK] = T(exp2(f32(x) * 1.4426950408889634 - mw) * (1.0 / lw))
  } else {
    if PARTIALS == 0 {
      var next = X[r, 0 :+ BLOCK, cache = evict_last]
      for c in range(0, N, BLOCK) {
        let x = where(c + arange(BLOCK) < N, f32(next), -inf)
        next = X[r, c + BLOCK :+ BLOCK, cache = evict_last]
        let m_new = max(m, max(x))
        l = l * exp(m - m_new) + sum(exp(x - m_new))
        m = m_new
      }
    } else {
      var mv: tile<f32>[BLOCK] = -1.0e30
      var lv: tile<f32>[BLOCK] = 0.0
      // Whole steps unmasked, then the rest a chunk at a time, masked (the max keeps the step
      // nonzero where this branch is dead code, at PARTIALS=0).
      let step = max(PARTIALS, 2) * BLOCK
      let full = N - N % step
      for c in range(0, full, step) {
        let x0 = f32(X[r, c :+ BLOCK, cache = evict_last])
        let x1 = f32(X[r, c + BLOCK :+ BLOCK, cache = evict_last])
        if PARTIALS == 2 {
          let m_new = max(mv, max(x0, x1))
          let ms = m_new * 1.4426950408889634
          lv = lv * exp2((mv - m_new) * 1.4426950408889634) + exp2(x0 * 1.4426950408889634 - ms) + exp2(x1 * 1.4426950408889634 - ms)
          mv = m_new
        } else {
          let x2 = f32(X[r, c + 2 * BLOCK :+ BLOCK, cache = evict_last])
          let x3 = f32(X[r, c + 3 * BLOCK :+ BLOCK, cache = evict_last])
          let m_new = max(max(mv, max(x0, x1)), max(x2, x3))
          let ms = m_new * 1.4426950408889634
          lv = lv * exp2((mv - m_new) * 1.4426950408889634) + exp2(x0 * 1.4426950408889634 - ms) + exp2(x1 * 1.4426950408889634 - ms) + exp2(x2 * 1.4426950408889634 - ms) + exp2(x3 * 1.4426950408889634 - ms)
          mv = m_new
        }
      }
      for c in range(full, N, BLOCK) {
        let x = where(c + arange(BLOCK) < N, f32(X[r, c :+ BLOCK, cache = evict_last]), -inf)
        let m_new = max(mv, x)
        let ms = m_new * 1.4426950408889634
        lv = lv * exp2((mv - m_new) * 1.4426950408889634) + exp2(x * 1.4426950408889634 - ms)
        mv = m_new
      }
      m = max(mv)
      l = sum(lv * exp2((mv - m) * 1.4426950408889634))
    }
    let inv = 1.0 / l
    let last = (N - 1) / BLOCK * BLOCK
    var prev = X[r, last :+ BLOCK, cache = evict_first]
    for i in range(0, last + 1, BLOCK) {
      let c = last - i
      let x = f32(prev)
      prev = X[r, c - BLOCK :+ BLOCK, cache = evict_first]
      Y[r, c :+ BLOCK, cache = evict_first] = T(exp(x - m) * inv)
    }
  }
}
