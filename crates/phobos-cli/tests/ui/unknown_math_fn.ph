@launch(128)
kernel k(X: tensor<f32>[128]) {
  X[:] = sigmod(X[:]) + erff(X[:])
}
