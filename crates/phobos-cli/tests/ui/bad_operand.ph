kernel k(X: tensor<f32>[N]) {
  let x = X[ctx.thread]
  X[ctx.thread] = x % 2.0
}
