kernel k(X: tensor<f32>[n], n: i32) {
  X[0] = 0.0
}
