kernel k(X: tensor<f32>[N]) {
  var acc: f32 = 0.0
  for i in range(0, N) {
    acc = i
  }
  X[0] = acc
}
