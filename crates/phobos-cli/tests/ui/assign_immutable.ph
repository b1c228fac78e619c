kernel k(X: tensor<f32>[N]) {
  let acc = X[0]
  acc += X[1]
  X[0] = acc
}
