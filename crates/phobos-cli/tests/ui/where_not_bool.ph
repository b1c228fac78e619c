@autotune(TILE in [16, 64])
@where(N % TILE)
kernel k(X: tensor<f32>[N]) {
  X[0 :+ TILE] = 0.0
}
