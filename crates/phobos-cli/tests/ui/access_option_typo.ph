// An option name with a typo.
@launch(128)
@grid(cdiv(N, 128))
kernel copy(X: tensor<f32>[N], Y: tensor<f32>[N]) {
  let i = ctx.block.x * 128 + ctx.thread
  Y[i, cahce = evict_first] = X[i]
}
