// The reference of wrong_at_some_points.cu: the same parameters in the same order, run by the
// interpreter.
@launch(256)
@grid(cdiv(N, 256))
kernel saxpy(X: tensor<f32>[N], Y: tensor<f32>[N], a: f32) {
  let i = ctx.block.x * 256 + ctx.thread
  if i < N {
    Y[i] = a * X[i] + Y[i]
  }
}
