@autotune(U in [1, 8])
@launch(32)
@grid(cdiv(N, 96))
// No smaller problem satisfies this (they are capped at 512): the check samples blocks.
@where(N % 1024 == 0)
@bytes(8 * N)
kernel twice_tiles(X: tensor<f32>[N], O: tensor<f32>[N]) {
  let i = ctx.block.x * 96
  O[i :+ 96] = X[i :+ 96] * 2.0
  // U = 4 is wrong in the last block only, a ragged one: a sampled check must still see it.
  if U == 4 && ctx.block.x == ctx.grid.x - 1 {
    O[i :+ 96] = X[i :+ 96] * 2.0 + 1.0
  }
}
