// examples/gemm_tuned.ph over a space wide enough to compare search strategies on
// (bench/record_spaces.sh): 4 x 4 x 2 block tiles, 3 pipeline depths, 2 block sizes (4 or 8
// warps), 2 GROUP_M and 3 SPLIT_K values, 1152 points before the @where rules. See gemm_tuned.ph for what
// GROUP_M and SPLIT_K mean to the code generator and the interpreter.
@autotune(TILE_M in [32, 64, 128, 256], TILE_N in [32, 64, 128, 256], TILE_K in [32, 64])
@autotune(STAGES in [2, 3, 4], THREADS in [128, 256], GROUP_M in {1, 8}, SPLIT_K in [1, 2, 4])
@where(K % (SPLIT_K * TILE_K) == 0)
@where(GROUP_M == 1 || GROUP_M * TILE_M <= M)
@where(TILE_M <= 2 * M && TILE_N <= 2 * N)
@launch(THREADS)
@flops(2 * M * N * K)
kernel gemm_space<TA = f16, TB = f16, TC = f32>(
  A: tensor<TA>[M, K], B: tensor<TB>[K, N], C: tensor<TC>[M, N]
) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[TILE_M, TILE_N] = 0.0
  for kt in range(0, K, TILE_K) {
    let a = A[pm * TILE_M :+ TILE_M, kt :+ TILE_K]
    let b = B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]
    acc += f32(dot(a, b))
  }
  C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = TC(acc)
}
