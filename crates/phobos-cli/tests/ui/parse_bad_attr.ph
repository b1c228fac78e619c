@grid(1, 2, 3, 4)
kernel k(X: tensor<f32>[N]) {
  X[0] = 0.0
}
