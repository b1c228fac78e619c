kernel k(X: tensor<f32>[N], Y: tensor<f32>[N]) {
  let t = X
  Y[0] = 0.0
}
