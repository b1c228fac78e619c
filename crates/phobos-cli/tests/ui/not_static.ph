kernel k(X: tensor<f32>[N]) {
  let t = X[0 :+ N]
  X[0] = sum(t)
}
