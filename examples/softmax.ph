// Row softmax of an M x N matrix. Each block takes ROWS rows; a row is one BLOCK-wide tile,
// masked past the runtime column count N (out-of-bounds loads read 0, so the mask sets them
// to -inf before the max and to 0 before the sum).
@autotune(ROWS in [1, 8], BLOCK in [256, 4096])
@where(N <= BLOCK)
@launch(256)
@bytes(8 * M * N)
kernel softmax(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let r = ctx.block.x * ROWS
  let valid = arange(BLOCK) < N
  let x = where(valid, X[r :+ ROWS, 0 :+ BLOCK], -inf)
  let e = where(valid, exp(x - rowmax(x)), 0.0)
  Y[r :+ ROWS, 0 :+ BLOCK] = e / rowsum(e)
}
