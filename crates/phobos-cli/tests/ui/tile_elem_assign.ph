kernel k(X: tensor<f32>[64]) {
  var t = X[0 :+ 64]
  t[3] = 0.0
  X[0 :+ 64] = t
}
