kernel k(X: tensor<f32>[N], Y: tensor<f32>[64]) {
  var scale: f32 = 1.0
  if X[ctx.thread] > 0.0 {
    scale = 2.0
  }
  Y[0 :+ 64] = X[0 :+ 64] * scale
}
