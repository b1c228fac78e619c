kernel k(X: tensor<f32>[N], n: i32) {
  if n = 1 {
    X[0] = 1.0
  }
}
