// Layer norm forward (Triton tutorial 05) written over tiles of ROWS rows: each row of X
// (N <= BLOCK) to zero mean and unit variance, scaled by W and shifted by B; each row's mean and
// 1/std are kept for the backward (`reshape` drops the kept axis of the row statistics).
// layer_norm.ph is the same function written for speed (one row at a time, statistics as
// uniform scalars, the next row's load in flight during the current row's reductions).
@autotune(ROWS in [1, 4], BLOCK in [256, 1024])
@where(N <= BLOCK)
@launch(256)
kernel layer_norm(
  X: tensor<f32>[M, N], W: tensor<f32>[N], B: tensor<f32>[N], Y: tensor<f32>[M, N],
  Mean: tensor<f32>[M], Rstd: tensor<f32>[M], eps: f32
) {
  let r = ctx.block.x * ROWS
  let valid = arange(BLOCK)[None, :] < N
  let x = where(valid, X[r :+ ROWS, 0 :+ BLOCK], 0.0)
  let mean = rowsum(x) / f32(N)
  let xc = where(valid, x - mean, 0.0)
  let rstd = rsqrt(rowsum(xc * xc) / f32(N) + eps)
  Y[r :+ ROWS, 0 :+ BLOCK] = xc * rstd * W[0 :+ BLOCK][None, :] + B[0 :+ BLOCK][None, :]
  Mean[r :+ ROWS] = reshape(mean, [ROWS])
  Rstd[r :+ ROWS] = reshape(rstd, [ROWS])
}
