kernel k(X: tensor<i32>[N], Y: tensor<f32>[N]) {
  let t = X[ctx.block.x * 64 :+ 64]
  Y[ctx.block.x * 64 :+ 64] = f32(rsqrt(t)) + f32(tanh(t))
}
