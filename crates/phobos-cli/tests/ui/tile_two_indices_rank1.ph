@launch(128)
kernel k(Y: tensor<i32>[16, 1]) {
  Y[:, :] = arange(16)[:, 0]
}
