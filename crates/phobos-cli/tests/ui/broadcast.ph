kernel k(X: tensor<f32>[64, 64]) {
  let a = X[0 :+ 32, 0 :+ 64]
  let b = X[0 :+ 32, 0 :+ 32]
  X[0 :+ 32, 0 :+ 64] = a + b
}
