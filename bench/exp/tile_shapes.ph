// Experiment (bench/NOTES.md v8): the 128x256 and 256x128 block tiles of the wgmma loop side by
// side, thread 0 issuing the copies. Tune it like the examples:
//   FAST_KERNEL=bench/exp/tile_shapes.ph ONLY="fp16 bf16" bash scripts/device-run.sh gemm
@autotune(TILE_M in [128, 256], TILE_N in [128, 256], TILE_K in [64], STAGES in [3, 4])
@autotune(GROUP_M in [8])
@where(TILE_M * TILE_N == 32768)
@launch(256)
@flops(2 * M * N * K)
kernel gemm_shapes<TA = f16, TB = f16, TC = f32>(
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
