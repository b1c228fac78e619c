kernel k(X: tensor<f32>[N]) {
  X[0] = 0.0
  else {
    X[1] = 0.0
  }
}
