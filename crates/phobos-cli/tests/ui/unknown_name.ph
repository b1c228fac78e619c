kernel k(X: tensor<f32>[N]) {
  var total: f32 = 0.0
  for i in range(0, N) {
    totl += X[i]
  }
  X[0] = total
}
