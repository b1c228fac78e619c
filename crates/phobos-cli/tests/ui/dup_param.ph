kernel k(X: tensor<f32>[N], X: tensor<f16>[N]) {
  X[0] = 0.0
}
