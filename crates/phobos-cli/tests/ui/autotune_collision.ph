@autotune(N in [64, 256])
kernel k(X: tensor<f32>[M], N: i32) {
  X[0 :+ 64] = 0.0
}
