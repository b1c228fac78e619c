kernel k(X: tensor<i64>[N]) {
  X[0] = 99999999999999999999
}
