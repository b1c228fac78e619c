@autotune(T in [256, 2048])
@launch(T)
@grid(cdiv(N, T))
kernel add_one(X: tensor<f32>[N], O: tensor<f32>[N]) {
  let i = ctx.block.x * T + ctx.thread
  O[i] = X[i] + 1.0
}
