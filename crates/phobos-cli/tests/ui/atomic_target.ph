kernel k(X: tensor<f32>[N], S: tensor<f32>[1]) {
  var total: f32 = 0.0
  atomic_add(total, X[ctx.thread])
  let t = X[0 :+ 256]
  atomic_add(t[0], 1.0)
  atomic_add(S[0], X[ctx.thread])
}
