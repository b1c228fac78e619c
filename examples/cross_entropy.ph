// Cross-entropy loss of each row of logits X (M rows over a vocabulary of V) against its target
// class: Loss[r] = logsumexp(X[r, :]) - X[r, Target[r]]. One row a block, in BLOCK-wide chunks
// with the online (max, sum) update, so the logits are read once at any vocabulary size.
// SHIFT (a knob, bench/NOTES.md r10, r13): how the shifted loads of unaligned 2-byte rows (V =
// 50257 in bf16) find each group's elements: 0, every group computes its shift and shifts at run
// time; 1, the row's shift is computed once and the conversion branches on it; 2, as 1, and a
// chunk wholly inside the row skips the per-group bounds checks. Other rows and types ignore it.
// PARTIALS (this kernel's own name, bench/NOTES.md r13): 0, the block's (max, sum) is updated
// each chunk, by two block reductions, the next chunk's load issued before them; 2 or 4, each
// element position of a chunk keeps its own running max and sum (`mv`, `sv`: BLOCK / THREADS a
// thread), updated elementwise over steps of PARTIALS chunks with one rescale a step, and the
// block combines the (max, sum) pairs once a row: no block reduction in the loop. The partials
// start at -1e30, not -inf, so a position that sees only masked elements rescales by 1, not NaN
// (logits below -1e30 are outside what this kernel is for).
// WHOLE (this kernel's own name, bench/NOTES.md r16): 1 reads the row as one masked tile of
// BLOCK >= V, `where(arange(BLOCK) < V, X[r, 0 :+ BLOCK], -inf)`, and takes its max and sum-exp
// whole: at PACK=4 (a knob) the tile is held packed with -inf past the row and its max taken on
// packed pairs (softmax_row.ph); at ROW_SMEM=1 (a knob) it is staged in shared memory, its
// 16-byte interior by bulk copies on an mbarrier, the whole row's bytes in flight at once, and
// two blocks share a multiprocessor (a bf16 row of 57344 takes 112 KB), one's copy under the
// other's arithmetic; at ROW_SMEM=2 the row is not realigned in shared memory (a max and a sum
// do not care where an element lies): each thread masks its own chunks in place. The target's
// logit is loaded after the row's max. ROW_SMEM for 2-byte T only (an f32 row of 50257 is
// 201 KB; f32's whole row stays in registers, which hold one of 32000 at 1024 threads); the
// chunked points (WHOLE=0) keep PACK=0 and ROW_SMEM=0. At ROWS_AHEAD=1 (a knob, with ROW_SMEM,
// bench/NOTES.md r18) the blocks are persistent, each looping over the rows `ctx.block.x`,
// `+ gridDim.x`, .., the row in two buffers: the next row's copy is in flight while this one is
// computed (one block a multiprocessor at BLOCK=57344).
// ROWS_AHEAD=2 (a knob, with the row in registers: ROW_SMEM=0; bench/NOTES.md r21) keeps the
// persistent blocks but lands the next row in ONE shared buffer while this row is computed from
// registers: the row's `let` reads its elements out of the buffer, then the next row's copy is
// issued into it (two rows a multiprocessor, one in the register file, one in shared memory).
// ROW_SPLIT (a knob, with WHOLE=1 and the row in registers; bench/NOTES.md r22): each row on a
// cluster of ROW_SPLIT blocks, each holding BLOCK / ROW_SPLIT of its columns, the reductions
// combined across the cluster: a multiprocessor holds parts of two rows where it held one.
@autotune(BLOCK in {2048, 4096, 8192, 16384, 32768, 57344}, THREADS in {256, 512, 1024}, SHIFT in {0, 1, 2}, PARTIALS in {0, 2, 4}, WHOLE in {0, 1}, PACK in {0, 4}, ROW_SMEM in {0, 1, 2}, ROWS_AHEAD in {0, 1, 2}, ROW_SPLIT in {1, 2, 4})
// ONE_PASS (a knob, bench/NOTES.md r30): at a staged row (ROW_SMEM), 1 takes the row's max and its
// sum of exponentials in one pass, each thread's running (max, sum) as the row lands; 0 in two.
@autotune(ONE_PASS in {1, 0})
@where(ONE_PASS == 1 || ROW_SMEM >= 1)
@where(WHOLE == 1 || BLOCK <= 8192 && THREADS <= 512 && PACK == 0 && ROW_SMEM == 0)
@where(WHOLE == 1 || BLOCK <= 32 * THREADS && BLOCK >= 4 * THREADS)
@where(PARTIALS == 0 || BLOCK <= 8 * THREADS)
@where(WHOLE == 0 || SHIFT == 0 && PARTIALS == 0 && PACK == 4 && (ROW_SMEM == 0 || sizeof(T) == 2))
@where(WHOLE == 0 || BLOCK >= 8 * THREADS * ROW_SPLIT && BLOCK <= 64 * THREADS * (1 + min(ROW_SMEM, 1)) * ROW_SPLIT)
@where(ROW_SPLIT == 1 || WHOLE == 1 && ROW_SMEM == 0 && ROWS_AHEAD == 0 && BLOCK >= 16384)
@where(WHOLE == 0 || V <= BLOCK)
@where(ROWS_AHEAD != 1 || WHOLE == 1 && ROW_SMEM >= 1)
@where(ROWS_AHEAD != 2 || WHOLE == 1 && ROW_SMEM == 0)
@launch(THREADS)
@bytes(sizeof(T) * M * V + 8 * M)
kernel cross_entropy<T = f32>(X: tensor<T>[M, V], Target: tensor<i32>[M], Loss: tensor<f32>[M]) {
  let r = ctx.block.x
  var m: f32 = -inf
  var s: f32 = 0.0
  if WHOLE == 1 {
    // The row's copy first, then the target's index, in flight under the row's max; then the
    // target's logit (whose address is that index, by now loaded), in flight under the sum
    // (bench/NOTES.md r27, r28).
    let x = where(arange(BLOCK) < V, X[r, 0 :+ BLOCK], -inf)
    let target = Target[r]
    m = max(f32(x))
    let t = f32(X[r, target])
    s = sum(exp2(f32(x) * 1.4426950408889634 - m * 1.4426950408889634))
    if ctx.thread == 0 {
      Loss[r] = log(s) + m - t
    }
  } else {
    if PARTIALS == 0 {
      var next = X[r, 0 :+ BLOCK]
      for c in range(0, V, BLOCK) {
        let x = where(c + arange(BLOCK) < V, f32(next), -inf)
        next = X[r, c + BLOCK :+ BLOCK]
        let m_new = max(m, max(x))
        // exp(x - m_new) as exp2(x * log2(e) - m_new * log2(e)): one FFMA and one MUFU an element.
        s = s * exp(m - m_new) + sum(exp2(x * 1.4426950408889634 - m_new * 1.4426950408889634))
        m = m_new
      }
    } else {
      var mv: tile<f32>[BLOCK] = -1.0e30
      var sv: tile<f32>[BLOCK] = 0.0
      // Whole steps of PARTIALS chunks, unmasked; then the rest a chunk at a time, masked. (The
      // max keeps the step nonzero where this branch is dead code, at PARTIALS=0.)
      let step = max(PARTIALS, 2) * BLOCK
      let full = V - V % step
      for c in range(0, full, step) {
        let x0 = f32(X[r, c :+ BLOCK])
        let x1 = f32(X[r, c + BLOCK :+ BLOCK])
        if PARTIALS == 2 {
          let m_new = max(mv, max(x0, x1))
          let ms = m_new * 1.4426950408889634
          sv = sv * exp2((mv - m_new) * 1.4426950408889634) + exp2(x0 * 1.4426950408889634 - ms) + exp2(x1 * 1.4426950408889634 - ms)
          mv = m_new
        } else {
          let x2 = f32(X[r, c + 2 * BLOCK :+ BLOCK])
          let x3 = f32(X[r, c + 3 * BLOCK :+ BLOCK])
          let m_new = max(max(mv, max(x0, x1)), max(x2, x3))
          let ms = m_new * 1.4426950408889634
          sv = sv * exp2((mv - m_new) * 1.4426950408889634) + exp2(x0 * 1.4426950408889634 - ms) + exp2(x1 * 1.4426950408889634 - ms) + exp2(x2 * 1.4426950408889634 - ms) + exp2(x3 * 1.4426950408889634 - ms)
          mv = m_new
        }
      }
      for c in range(full, V, BLOCK) {
        let x = where(c + arange(BLOCK) < V, f32(X[r, c :+ BLOCK]), -inf)
        let m_new = max(mv, x)
        let ms = m_new * 1.4426950408889634
        sv = sv * exp2((mv - m_new) * 1.4426950408889634) + exp2(x * 1.4426950408889634 - ms)
        mv = m_new
      }
      m = max(mv)
      s = sum(sv * exp2((mv - m) * 1.4426950408889634))
    }
    if ctx.thread == 0 {
      Loss[r] = log(s) + m - f32(X[r, Target[r]])
    }
  }
}
