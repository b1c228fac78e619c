@autotune(BLOCK in [64, 128.0])
kernel k(X: tensor<f32>[N]) {
  X[0 :+ 64] = 0.0
}
