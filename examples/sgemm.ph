// C = A B in exact fp32 (no TF32 rounding): the code generator recognizes the loop as a GEMM and
// runs it on its register-tiled FFMA main loop (block tile TILE_M x TILE_N x TILE_K, 256 threads,
// each holding an 8x8, 8x4 or 4x4 thread tile of C; 128-bit loads where the leading dims allow,
// double-buffered shared memory). GROUP_M swizzles the block order for L2 reuse. MIN_BLOCKS=2
// caps registers so that two blocks share a multiprocessor (16 warps to hide shared-memory
// latency instead of 8): the 128x128x8 winner at 128 registers, no spills, 4-5 % faster on an
// H200 (bench/NOTES.md v8).
@autotune(TILE_M in [64, 128], TILE_N in [64, 128], TILE_K in [8, 16])
@autotune(GROUP_M in [8, 4, 1], MIN_BLOCKS in [1, 2])
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
