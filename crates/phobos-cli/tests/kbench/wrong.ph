@autotune(U in [1, 8])
@launch(128)
@grid(cdiv(N, 128))
@bytes(8 * N)
kernel twice(X: tensor<f32>[N], O: tensor<f32>[N]) {
  let i = ctx.block.x * 128 + ctx.thread
  // U = 4 adds one: a point that computes something else, which the tuner must reject.
  O[i] = X[i] * 2.0 + f32(U / 4 % 2)
}
