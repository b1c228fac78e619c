kernel k(X: tensor<f32>[64, 64], S: tensor<f32>[64]) {
  let x = X[0 :+ 64, 0 :+ 64]
  atomic_add(S[0 :+ 64], rowsum(x))
}
