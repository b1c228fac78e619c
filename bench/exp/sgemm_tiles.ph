// Experiment (bench/NOTES.md v9): the FFMA loop's 128x128 block tile (8x8 per thread, two blocks
// per multiprocessor) beside 128x256 (8x16 per thread, one block), with TILE_K and the cp.async
// ring's depth. Measured with the first cp.async copy of A (pieces of 4 k per thread): 128x256x16
// won by 9-10 % over 128x256x8 and 128x128x16; STAGES=3 matched 2 or lost (up to 5 %). Tune it like the
// example:
//   SGEMM_KERNEL=bench/exp/sgemm_tiles.ph ONLY=fp32 bash scripts/device-run.sh gemm
@autotune(TILE_M in [128], TILE_N in [128, 256], TILE_K in [8, 16, 32])
@autotune(GROUP_M in [1, 4, 8], MIN_BLOCKS in [1, 2], STAGES in [2, 3])
@where(TILE_N == 128 || (MIN_BLOCKS == 1 && TILE_K != 32))
@launch(256, MIN_BLOCKS)
@flops(2 * M * N * K)
kernel sgemm_tiles(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[TILE_M, TILE_N] = 0.0
  for kt in range(0, K, TILE_K) {
    let a = A[pm * TILE_M :+ TILE_M, kt :+ TILE_K]
    let b = B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]
    acc += dot(a, b)
  }
  C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = acc
}
