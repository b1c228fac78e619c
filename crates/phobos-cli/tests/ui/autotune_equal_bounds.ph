@autotune(D in [64, 64])
kernel k(X: tensor<f32>[N, D]) {
  X[0, :] = 0.0
}
