kernel k(X: tensor<f32>[B, M, N]) {
  let t = X[0 :+ 2, 0 :+ 16, 0 :+ 16]
  X[0, 0, 0] = sum(t)
}
