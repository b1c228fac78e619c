@autotune(B in [16, 128])
@launch(64)
kernel scale(X: tensor<f32>[N], O: tensor<f32>[N]) {
  let b = ctx.block.x
  O[b * B :+ B] = X[b * B :+ B] * 3.0
}
