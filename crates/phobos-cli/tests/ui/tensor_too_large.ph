// Every dim is in range, but the tensor's bytes overflow i64.
kernel f(X: tensor<f32>[2147483647, 2147483647, 4]) {
  X[0, 0, 0] = 1.0
}
