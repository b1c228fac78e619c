@autotune(B in [16, 32, 64])
@where(B != 32)
@launch(64)
@bytes(8 * N)
kernel scale(X: tensor<f32>[N], O: tensor<f32>[N]) {
  let b = ctx.block.x
  O[b * B :+ B] = X[b * B :+ B] * 3.0
}
