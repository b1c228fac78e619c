kernel k(X: tensor<i8>[N]) {
  let big: i8 = 300
  X[0] = big
}
