// Cross-entropy loss of each row of logits X (M rows over a vocabulary of V) against its target
// class: Loss[r] = logsumexp(X[r, :]) - X[r, Target[r]]. One row a block, in BLOCK-wide chunks
// with the online (max, sum) update, so the logits are read once at any vocabulary size. The
// next chunk's load is issued before the current chunk's reductions, so it is in flight while
// they run.
// SHIFT (a knob, bench/NOTES.md r10): how the shifted loads of unaligned 2-byte rows (V = 50257
// in bf16) find each group's elements: 0, every group computes its shift and shifts at run
// time; 1, the row's shift is computed once and the conversion branches on it. Other rows and
// types ignore it.
@autotune(BLOCK in [2048, 8192], THREADS in [256, 512], SHIFT in {0, 1})
@where(BLOCK <= 32 * THREADS && BLOCK >= 4 * THREADS)
@launch(THREADS)
@bytes(sizeof(T) * M * V + 8 * M)
kernel cross_entropy<T = f32>(X: tensor<T>[M, V], Target: tensor<i32>[M], Loss: tensor<f32>[M]) {
  let r = ctx.block.x
  var m: f32 = -inf
  var s: f32 = 0.0
  var next = X[r, 0 :+ BLOCK]
  for c in range(0, V, BLOCK) {
    let x = where(c + arange(BLOCK) < V, f32(next), -inf)
    next = X[r, c + BLOCK :+ BLOCK]
    let m_new = max(m, max(x))
    // exp(x - m_new) as exp2(x * log2(e) - m_new * log2(e)): one FFMA and one MUFU an element.
    s = s * exp(m - m_new) + sum(exp2(x * 1.4426950408889634 - m_new * 1.4426950408889634))
    m = m_new
  }
  if ctx.thread == 0 {
    Loss[r] = log(s) + m - f32(X[r, Target[r]])
  }
}
