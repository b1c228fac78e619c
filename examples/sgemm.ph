// C = A B in exact fp32 (no TF32 rounding): the code generator recognizes the loop as a GEMM and
// runs it on its register-tiled FFMA main loop: 256 threads, each holding an 8x16, 8x8 or 8x4
// thread tile of C; tiles copied by cp.async into double-buffered shared memory (16 bytes a copy
// along B's rows, one element at a time for A, which is stored transposed). GROUP_M swizzles
// the block order for L2 reuse. MIN_BLOCKS=2 caps registers so that two blocks share a
// multiprocessor (16 warps instead of 8 to hide shared-memory latency); a 128x256 tile's 128
// accumulators a thread need one block per multiprocessor, hence the `@where`. On an H200 the
// 128x256x16 tile wins (bench/NOTES.md v9).
@autotune(TILE_M in [64, 128], TILE_N in [128, 256], TILE_K in [8, 16])
@autotune(GROUP_M in [8, 4, 1], MIN_BLOCKS in [1, 2])
@where(TILE_M * TILE_N < 32768 || MIN_BLOCKS == 1)
@launch(256, MIN_BLOCKS)
@flops(2 * M * N * K)
kernel sgemm(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
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
