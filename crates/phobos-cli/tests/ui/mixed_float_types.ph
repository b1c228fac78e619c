kernel k(X: tensor<f16>[N], Y: tensor<bf16>[N]) {
  let x = X[0 :+ 64]
  let y = Y[0 :+ 64]
  X[0 :+ 64] = x * y
}
