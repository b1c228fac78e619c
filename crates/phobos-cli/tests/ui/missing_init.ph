kernel k(X: tensor<f32>[N]) {
  var acc: f32
  X[0] = acc
}
