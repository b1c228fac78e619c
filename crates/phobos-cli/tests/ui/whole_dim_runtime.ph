kernel k(X: tensor<f32>[M, N]) {
  let row = X[ctx.block.x, :]
  X[ctx.block.x, 0] = sum(row)
}
