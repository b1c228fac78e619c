@grid(cdiv(N, 256))
kernel k(X: tensor<bool>[N], Y: tensor<f32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  Y[i] = sqrt(X[i])
}
