// A misspelled eviction hint.
@launch(128)
@grid(cdiv(N, 128))
kernel copy(X: tensor<f32>[N], Y: tensor<f32>[N]) {
  let i = ctx.block.x * 128 + ctx.thread
  Y[i] = X[i, cache = evict_lst]
}
