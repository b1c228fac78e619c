kernel k(X: tensor<f32>[256]) {
  var t: tile<f32>[256] = X[ctx.thread]
  X[0 :+ 256] = t
}
