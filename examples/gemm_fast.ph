// C = A B on the fast main loops: the block tiles, pipeline depths and GROUP_M swizzles that
// ran fastest on an H200 (f16/bf16 128x256x64 with 4 stages; tf32 128x256x32 with 4 stages:
// 0.94-0.98 of cuBLAS, bench/NOTES.md v8; 128x128x64 with 3 stages, the default, for small
// problems), 256 threads (two consumer warpgroups of the wgmma main loop; @launch(288) adds a
// producer warp, which examples/gemm_persistent.ph uses for its persistent schedule and
// clusters).
//
// Element types are chosen by the host (`--types "TA=bf16,TB=bf16,TC=f32"`); the dot
// accumulates in f32 and C takes one conversion at the store. The code generator recognizes
// the loop as a GEMM and picks its main loop: wgmma + TMA on sm_90a when the operands' leading
// dims are 16-byte aligned (the host specializes each variant on the problem's divisibility,
// so nothing is declared here), else mma.sync, else FFMA. `phobos emit --dims M=..,N=..,K=..`
// shows the choice for a problem.
@autotune(TILE_M in [128], TILE_N in [128, 256], TILE_K in [64], STAGES in [3, 4])
@autotune(GROUP_M in [8, 4, 1])
@launch(256)
@flops(2 * M * N * K)
kernel gemm_fast<TA = f16, TB = f16, TC = f32>(
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
