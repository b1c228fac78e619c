kernel k(X: tensor<f32>[0, N]) {
  X[0, 0] = 0.0
}
