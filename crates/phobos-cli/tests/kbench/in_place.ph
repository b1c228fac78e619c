@launch(32)
@grid(cdiv(N, 96))
@where(N % 1024 == 0)
kernel scale_in_place(X: tensor<f32>[N]) {
  let i = ctx.block.x * 96
  // Reads what it writes: its blocks could depend on each other, so it is never sampled.
  X[i :+ 96] = X[i :+ 96] * 2.0
}
