kernel k(X: tensor<f32>[64, 64], Y: tensor<f32>[64, 64]) {
  let t = X[0 :+ 64, 0 :+ 32]
  Y[0 :+ 32, 0 :+ 64] = t
}
