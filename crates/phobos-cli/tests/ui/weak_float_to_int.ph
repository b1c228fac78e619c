kernel k(X: tensor<i32>[N]) {
  X[0] = X[1] * 1.5
}
