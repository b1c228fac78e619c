// Y = Xᵀ, one TILE_R x TILE_C tile per block.
@autotune(TILE_R in [16, 64], TILE_C in [16, 64])
@launch(256)
@bytes(8 * M * N)
kernel transpose(X: tensor<f32>[M, N], Y: tensor<f32>[N, M]) {
  let r = ctx.block.x * TILE_R
  let c = ctx.block.y * TILE_C
  let t = X[r :+ TILE_R, c :+ TILE_C]
  Y[c :+ TILE_C, r :+ TILE_R] = transpose(t)
}
