kernel k(X: tensor<f32>[256], Y: tensor<f32>[256]) {
  let x = X[ctx.thread]
  let t = X[0 :+ 256]
  Y[0 :+ 256] = t * x
}
