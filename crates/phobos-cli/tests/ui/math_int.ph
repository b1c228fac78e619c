@grid(cdiv(N, 256))
kernel k(X: tensor<i32>[N], Y: tensor<f32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  Y[i] = exp(X[i]) + exp2(X[i]) + log(X[i])
}
