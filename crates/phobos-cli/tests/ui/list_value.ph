@launch(128)
kernel k(X: tensor<f32>[64]) {
  let shape = [8, 8]
  X[:] = 0.0
}
