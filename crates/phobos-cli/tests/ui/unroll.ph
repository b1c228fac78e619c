@autotune(U in [0, 1, 2])
kernel k(X: tensor<f32>[N]) {
  for<unroll U> i in range(ctx.thread, N, 256) {
    X[i] = 0.0
  }
}
