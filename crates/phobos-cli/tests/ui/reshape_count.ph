@autotune(ROWS in [8])
@launch(128)
kernel k(X: tensor<f32>[M, 64], S: tensor<f32>[M]) {
  let r = ctx.block.x * ROWS
  S[r :+ ROWS] = reshape(X[r :+ ROWS, :], [ROWS])
}
