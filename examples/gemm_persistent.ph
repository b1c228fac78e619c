// C = A B on the wgmma main loop with a producer warp, in three schedules: SCHEDULE=1 runs one
// block per C tile; SCHEDULE=2 launches as many blocks as the GPU holds at once and each loops
// over tiles, its producer warp loading the next tile's stages while the consumer warpgroups
// store the last one (crates/phobos-cuda/cuda/gemm/README.md, "persistent schedule"); CLUSTER=2
// runs pairs of blocks on neighbouring M tiles as a thread block cluster that shares each B
// stage through multicast copies ("clusters"), under the persistent schedule walking the tiles
// in pairs. All compute the same C: the body is the per-tile program either way, and the
// interpreter runs it once per tile.
// Every point stores C through shared memory and TMA (the whole tile beside 3 stages, half of it
// at a time beside 4: crates/phobos-cuda/cuda/gemm/README.md, "The C store through shared memory
// and TMA"); on an H200 the 4-stage persistent point runs at 0.97-1.00 of cuBLAS in f16 and bf16
// (bench/NOTES.md v8).
//
// Element types are chosen by the host (`--types "TA=bf16,TB=bf16,TC=bf16"`); the persistent
// schedule needs the wgmma path (sm_90a, 16-byte aligned leading dims; `phobos emit --dims`
// shows the choice and, when it does not apply, why).
@autotune(TILE_M in [128], TILE_N in [256], TILE_K in [64], STAGES in [3, 4])
@autotune(GROUP_M in [8], SCHEDULE in [1, 2], CLUSTER in [1, 2])
@launch(288)
@flops(2 * M * N * K)
kernel gemm_persistent<TA = f16, TB = f16, TC = f32>(
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
