kernel k(X: tensor<f32>[N]) {
  if true {
    X[0] = 1.0
}
