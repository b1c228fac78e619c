kernel k(X: tile<f32>[16, 16], Y: tensor<f32>[N]) {
  Y[0] = 0.0
}
