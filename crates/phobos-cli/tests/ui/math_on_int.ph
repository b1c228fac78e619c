@launch(128)
kernel k(X: tensor<i32>[128], Y: tensor<f32>[128]) {
  Y[:] = f32(floor(X[:]))
}
