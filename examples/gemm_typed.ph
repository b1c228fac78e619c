// C = A B with element types chosen by the host (`--types "TA=bf16,TB=bf16,TC=f32"`),
// accumulating in f32 and converting once at the store. The warp and thread tile names are
// read by the GEMM lowering; declaring them puts them in the search.
@autotune(TILE_M in [64, 128], TILE_N in [64, 128], TILE_K in [32, 64])
@autotune(WARP_M in [32, 64], WARP_N in [32], TILE_TM in [4], TILE_TN in [4])
@where(K % 8 == 0)
@launch(256)
@flops(2 * M * N * K)
kernel gemm_typed<TA = f16, TB = f16, TC = f32>(
  A: tensor<TA>[M, K], B: tensor<TB>[K, N], C: tensor<TC>[M, N]
) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[TILE_M, TILE_N] = 0.0
  for kt in range(0, K, TILE_K) {
    let a = A[pm * TILE_M :+ TILE_M, kt :+ TILE_K]
    let b = B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]
    acc += dot(a, b)
  }
  C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = TC(acc)
}
