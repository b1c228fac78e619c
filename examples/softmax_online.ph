// Row softmax of rows of any width: one row a block, in BLOCK-wide chunks. The first pass keeps
// the running maximum m and the running sum l of exp(x - m) (each new chunk rescales l by
// exp(m_old - m_new)), loading the next chunk before reducing the current one so that the load
// is in flight during the reductions; the second reads the row again and writes exp(x - m) / l.
// The row statistics are block-wide reductions to uniform scalars, so nothing is broadcast
// through shared memory. X is read twice: @bytes counts those bytes.
@autotune(BLOCK in [1024, 8192], THREADS in [128, 512])
@where(BLOCK <= 32 * THREADS && BLOCK >= 4 * THREADS)
@launch(THREADS)
@bytes(12 * M * N)
kernel softmax_online<T = f32>(X: tensor<T>[M, N], Y: tensor<T>[M, N]) {
  let r = ctx.block.x
  var m: f32 = -inf
  var l: f32 = 0.0
  var next = X[r, 0 :+ BLOCK]
  for c in range(0, N, BLOCK) {
    let x = where(c + arange(BLOCK) < N, f32(next), -inf)
    next = X[r, c + BLOCK :+ BLOCK]
    let m_new = max(m, max(x))
    l = l * exp(m - m_new) + sum(exp(x - m_new))
    m = m_new
  }
  let inv = 1.0 / l
  for c in range(0, N, BLOCK) {
    Y[r, c :+ BLOCK] = T(exp(f32(X[r, c :+ BLOCK]) - m) * inv)
  }
}
