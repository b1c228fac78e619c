@autotune(TILE_M in [32], TILE_N in [64])
kernel k(A: tensor<f32>[M, N], B: tensor<f32>[N, M]) {
  let pm = ctx.block.x
  let a = A[pm * TILE_M :+ TILE_M, 0 :+ 64]
  B[pm * TILE_N :+ TILE_N, 0 :+ 32] = transpose(a)
}
