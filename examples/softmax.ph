// Row softmax of an M x N matrix, each row one BLOCK-wide tile (N <= BLOCK) held in registers
// between its reductions and its store, so X is read once. Each block takes ROWS rows; the tile
// is masked past the runtime column count N (out-of-bounds loads read 0, so the mask sets them
// to -inf before the max and to 0 before the sum). Rows wider than 8192: softmax_online.ph.
@autotune(ROWS in [1, 8], BLOCK in [256, 8192], THREADS in [128, 512], MIN_BLOCKS in [1, 2])
@where(N <= BLOCK)
@where(ROWS * BLOCK <= 32 * THREADS)
@launch(THREADS, MIN_BLOCKS)
@bytes(8 * M * N)
kernel softmax(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let r = ctx.block.x * ROWS
  let valid = arange(BLOCK) < N
  let x = where(valid, X[r :+ ROWS, 0 :+ BLOCK], -inf)
  let e = where(valid, exp(x - rowmax(x)), 0.0)
  Y[r :+ ROWS, 0 :+ BLOCK] = e / rowsum(e)
}
