@autotune(TILE in [0, 16, 32])
kernel k(X: tensor<f32>[N]) {
  X[0 :+ 64 / TILE] = 0.0
}
