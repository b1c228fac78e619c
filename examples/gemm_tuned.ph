// C = A B the way production GEMMs are tuned (the seed's tune_gemm.py space): block tiles,
// pipeline depth, the GROUP_M block swizzle and SPLIT_K, with element types bound per problem
// (`phobos-kbench gemm_tuned.ph --dtype-a bf16 --dtype-b bf16 --col-b ...`) and f32
// accumulation converted once at the store.
//
// GROUP_M and SPLIT_K are read by the code generator's GEMM recognition from the point (the
// same names `gemm_fast::Knobs` reads; see crates/phobos-cuda/cuda/gemm/README.md):
// - GROUP_M remaps which block computes which C tile (a bijection of the grid, for L2 reuse).
//   Blocks never communicate, so every block order computes the same C: the body below, which
//   the interpreter runs, is the GROUP_M = 1 order, and means the same at every GROUP_M.
// - SPLIT_K splits the k loop over blockIdx.z and adds the parts into C with atomics. The
//   language has no atomics, so the body keeps the unsplit loop: the interpreter computes the
//   unsplit product, which is the same function (the same sum of the same products over k,
//   grouped in SPLIT_K parts; only the f32 rounding order differs, within the tolerance).
//
// The @where constraints are the seed's pruning rules, checked per problem before compiling.
// The ranges are those plausible on an H100/H200 (96 points before the @where rules); small
// problems pin smaller tiles (`--autotune "TILE_M=32 TILE_N=32"`).
@autotune(TILE_M in [64, 128], TILE_N in [128, 256], TILE_K in [32, 64])
@autotune(STAGES in [3, 4], GROUP_M in [1, 4, 8], SPLIT_K in [1, 2])
// SPLIT_K * TILE_K divides K: no partial k tile, in any part.
@where(K % (SPLIT_K * TILE_K) == 0)
// A group of GROUP_M block rows must fit in M, else no swizzle.
@where(GROUP_M == 1 || GROUP_M * TILE_M <= M)
// No tile more than twice the problem.
@where(TILE_M <= 2 * M && TILE_N <= 2 * N)
// Split K only when C has too few tiles to fill a large GPU (both M and N small).
@where(SPLIT_K == 1 || cdiv(M, TILE_M) * cdiv(N, TILE_N) < 128)
@launch(256)
@flops(2 * M * N * K)
kernel gemm_tuned<TA = f16, TB = f16, TC = f32>(
  A: tensor<TA>[M, K], B: tensor<TB>[K, N], C: tensor<TC>[M, N]
) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[TILE_M, TILE_N] = 0.0
  for kt in range(0, K, TILE_K) {
    let a = A[pm * TILE_M :+ TILE_M, kt :+ TILE_K]
    let b = B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]
    // f32 accumulation for every input type: the identity for float dots (the cast
    // disappears), exact for int8 while the sums stay below 2^24.
    acc += f32(dot(a, b))
  }
  C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = TC(acc)
}
