@autotune(TILE in [32, 128], SPLIT in [3, 1, 2])
@where(TILE % SPLIT == 0)
kernel k(X: tensor<f32>[N]) {
  X[0 :+ TILE] = 0.0
}
