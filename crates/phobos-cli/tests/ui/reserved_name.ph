kernel k(X: tensor<f32>[N]) {
  let f32 = 1.0
  X[0] = f32
}
