kernel k(X: tensor<f32>[N]) {
  if X[0] > 0.0 {
    break
  }
}
