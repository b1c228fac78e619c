kernel k(X: tensor<f32>[M, N]) {
  X[ctx.thread] = 0.0
}
