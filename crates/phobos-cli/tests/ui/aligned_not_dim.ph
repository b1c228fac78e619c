@autotune(TILE in [16, 64])
@aligned(K = 8, TILE = 16)
kernel k(X: tensor<f32>[M, N]) {
  X[0, 0] = 0.0
}
