@autotune(TILE_K in [8, 16, 8, 32])
kernel k(X: tensor<f32>[N]) {
  X[0 :+ TILE_K] = 0.0
}
