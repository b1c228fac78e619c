@grid(N > 64)
kernel k(X: tensor<f32>[N]) {
  X[ctx.block.x * 64 :+ 64] = 0.0
}
