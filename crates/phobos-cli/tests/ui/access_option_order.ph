// Options come after the indices.
@launch(128)
kernel copy(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let i = ctx.block.x * 128 + ctx.thread
  Y[0, i] = X[cache = evict_last, 0, i]
}
