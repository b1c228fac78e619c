// A small GEMM space the interpreter searches in a minute (the dataset CI replays,
// bench/spaces/interp_gemm.jsonl): 4 x 4 x 3 tiles and 3 block sizes, 144 points.
@autotune(TILE_M in [4, 8, 16, 32], TILE_N in [4, 8, 16, 32], TILE_K in [4, 8, 16])
@autotune(THREADS in [32, 64, 128])
@launch(THREADS)
@flops(2 * M * N * K)
kernel interp_gemm(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[TILE_M, TILE_N] = 0.0
  for kt in range(0, K, TILE_K) {
    acc += dot(A[pm * TILE_M :+ TILE_M, kt :+ TILE_K], B[kt :+ TILE_K, pn * TILE_N :+ TILE_N])
  }
  C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = acc
}
