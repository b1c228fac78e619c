kernel k(X: tensor<f32>[64, 64]) {
  let t = X[0 :+ 64, 0 :+ 64]
  X[0 :+ 64, 0 :+ 1] = sum(t, axis=2)
}
