// A declared name used as a tensor dim obeys the same bound at every point.
@autotune(D in [64, 128, 4294967296])
kernel f(X: tensor<f32>[D]) {
  X[0] = 1.0
}
