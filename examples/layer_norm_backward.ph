// Layer norm backward (Triton tutorial 05), for the forward of layer_norm_tiles.ph: each block
// takes ROWS rows (N <= BLOCK) and computes their dX from X, dY, W and the forward's Mean and
// Rstd; dW = sum over rows of dY * x_hat and dB = sum over rows of dY are added across row
// blocks with tile atomics into DW and DB, which the host zeroes first (masked at N like a
// store; the sums are defined up to the order of the blocks' additions).
@autotune(ROWS in [1, 8], BLOCK in [256, 1024])
@where(N <= BLOCK)
@launch(256)
kernel layer_norm_backward(
  X: tensor<f32>[M, N], DY: tensor<f32>[M, N], W: tensor<f32>[N],
  Mean: tensor<f32>[M], Rstd: tensor<f32>[M],
  DX: tensor<f32>[M, N], DW: tensor<f32>[N], DB: tensor<f32>[N]
) {
  let r = ctx.block.x * ROWS
  let valid = arange(BLOCK)[None, :] < N
  let rstd = Rstd[r :+ ROWS][:, None]
  // Rows past M load as zero, so they add nothing to dW and dB.
  let xhat = where(valid, (X[r :+ ROWS, 0 :+ BLOCK] - Mean[r :+ ROWS][:, None]) * rstd, 0.0)
  let dy = DY[r :+ ROWS, 0 :+ BLOCK]
  let wdy = W[0 :+ BLOCK][None, :] * dy
  let c1 = rowsum(xhat * wdy) / f32(N)
  let c2 = rowsum(wdy) / f32(N)
  DX[r :+ ROWS, 0 :+ BLOCK] = (wdy - (xhat * c1 + c2)) * rstd
  atomic_add(DW[0 :+ BLOCK], reshape(sum(dy * xhat, axis=0), [BLOCK]))
  atomic_add(DB[0 :+ BLOCK], reshape(sum(dy, axis=0), [BLOCK]))
}
