@autotune(B in [16, 64])
@where(N % B == 0)
@launch(64)
@bytes(8 * N)
kernel scale(X: tensor<f32>[N], O: tensor<f32>[N]) {
  let b = ctx.block.x
  O[b * B :+ B] = X[b * B :+ B] * 3.0
}
