// An atomic takes no eviction hint.
@launch(128)
@grid(cdiv(N, 128))
kernel count(X: tensor<f32>[N], S: tensor<f32>[1]) {
  let i = ctx.block.x * 128 + ctx.thread
  atomic_add(S[0, cache = evict_last], X[i])
}
