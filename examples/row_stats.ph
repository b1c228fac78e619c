// Per-row results into rank-1 outputs and new axes: the row sums and maxima of X (rows of at
// most BLOCK elements) into S and MX, and each element minus its row's index into Z.
@autotune(ROWS in [1, 8], BLOCK in [64, 256])
@launch(128)
kernel row_stats(X: tensor<f32>[M, N], S: tensor<f32>[M], MX: tensor<f32>[M], Z: tensor<f32>[M, N]) {
  let r = ctx.block.x * ROWS
  let valid = arange(BLOCK)[None, :] < N
  let x = where(valid, X[r :+ ROWS, 0 :+ BLOCK], 0.0)
  S[r :+ ROWS] = reshape(rowsum(x), [ROWS])
  MX[r :+ ROWS] = reshape(rowmax(where(valid, x, -inf)), [ROWS])
  let rows = (r + arange(ROWS))[:, None]
  Z[r :+ ROWS, 0 :+ BLOCK] = x - f32(rows)
}
