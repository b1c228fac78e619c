kernel k(X: tensor<f32>[N]) {
  let i = ctx.thread
  if 0 <= i < N {
    X[i] = 0.0
  }
}
