@autotune(BLOCK in [0, 256])
kernel k(X: tensor<f32>[N]) {
  X[0 :+ 16] = 0.0
}
