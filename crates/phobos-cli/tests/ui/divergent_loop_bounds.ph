kernel k(X: tensor<f32>[1, N], Y: tensor<f32>[1, 64]) {
  var acc: tile<f32>[1, 64] = 0.0
  for i in range(ctx.thread, N, 256) {
    acc += X[0 :+ 1, 0 :+ 64]
  }
  Y[0 :+ 1, 0 :+ 64] = acc
}
