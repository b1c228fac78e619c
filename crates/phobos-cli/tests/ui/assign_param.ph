kernel k(X: tensor<f32>[N], alpha: f32) {
  alpha = 2.0 * alpha
  X[0] = alpha
}
