kernel k(X: tensor<f32>[64, N], Y: tensor<f32>[64, 64]) {
  var acc: tile<f32>[64, 64] = 0.0
  for j in range(0, N, 64) {
    acc += X[0 :+ 64, j :+ 64]
    if X[ctx.thread, j] < 0.0 {
      break
    }
  }
  Y[0 :+ 64, 0 :+ 64] = acc
}
