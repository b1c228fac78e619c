@where(N > alpha)
kernel k(X: tensor<f32>[N], alpha: f32) {
  X[0] = alpha
}
