// C = A B for problems that 128x256 tiles do not fill or that are not aligned: few output tiles
// (512x512x4096), awkward tile counts (3000x2000x1000: 192 tiles of 128x256 on 132
// multiprocessors), odd leading dimensions (1000x777x333). The space reaches them four ways:
//
// - THREADS = 288: the wgmma + TMA main loop with a producer warp, 128-row tiles 128, 192 or
//   256 wide, one block per tile or persistent (SCHEDULE = 2, or 3: each stage's slot back to the producer as soon as its own MMAs complete; in clusters of two sharing B with
//   CLUSTER = 2, or 3: rank 0 copying all of B; 4: two N tiles of one M tile sharing A, NOTES v19). 128x192 makes 264 tiles of 3000x2000: exactly two per multiprocessor. One block per tile may split K (512x512x4096:
//   16 tiles of 128x128 in 8 parts read A and B half as often as 64x64 tiles do).
// - THREADS = 416: the same loop with three consumer warpgroups on 192-row tiles 128 or 192
//   wide (3000x2000x1000: 256 tiles of 192x128, in clusters of two sharing A's boxes).
// - THREADS = 160: one warpgroup of wgmma on a 64-row tile and a producer warp streaming A and
//   B by TMA into a deep ring (6 to 12 stages of k 64), split like the below, alone or in
//   clusters of two blocks sharing B (CLUSTER = 2): the shape cuBLAS runs 512x512x4096 with
//   (64x64 tiles, 13 stages, clusters of 2, split K).
// - THREADS = 128: one warpgroup on a 64-row tile (wgmma when the operands are 16-byte
//   aligned, thread 0 issuing the copies; else mma.sync), up to 8 parts of K (SPLIT_K) when the
//   tiles alone leave most of the GPU idle: 512x512 makes 64 tiles of 64x64, 128 or 256 blocks
//   split.
// - THREADS = 256: the mma.sync main loop on 64x64 and 128x128 tiles (two warpgroups of wgmma
//   on 128x128 when aligned), split like the above.
//
// Unaligned operands (an odd K or N of a 16-bit type) keep tensor cores: the mma.sync loop
// copies them with narrower cp.async or register-staged element loads (`phobos emit` says
// which, per operand); VEC_COPY=1 reads a 16-bit operand aligned to 2 bytes by the two aligned
// 16-byte vectors covering each 8-element piece, shifted into place (1000x777x333: 4 vector
// loads a thread a k step at 64x64 on 256 threads, for 16 element loads). It is declared fixed
// at 1: at the same tile it ran 1.105x cuBLAS where the element loads ran 0.885x (bench/NOTES.md
// v16), and a second value would double the points a tuning run compiles for no winner. It
// changes only operands that take the register-staged copy.
//
// SPLIT_K adds f32 partial tiles into an f32 C with atomics; into an f16
// or bf16 C, the parts store f32 partial tiles into a workspace and the last part of each tile
// sums them and stores C (`phobos emit` says which); SPLIT_REDUCE=2 takes the workspace for an
// f32 C too (no zeroing of C in the launch); 3 as 2, the workspace's stores and sums in 8-byte
// pairs of columns (the last part's own slice from its registers); 4 makes the parts of a tile a
// thread block cluster that reduces through distributed shared memory, each part storing
// 1/SPLIT_K of the tile's columns (no workspace). Element types are bound per problem
// (`phobos-kbench gemm_small.ph --dtype-a fp16 --dtype-b fp16 --dtype-c fp32`).
@autotune(TILE_M in {64, 128, 192}, TILE_N in [64, 128, 192, 256], TILE_K in [32, 64])
@autotune(THREADS in {128, 160, 256, 288, 416}, STAGES in [3, 4, 6, 8, 12], SPLIT_K in [1, 2, 4, 8])
@autotune(SCHEDULE in [1, 2, 3], GROUP_M in {1, 8}, SPLIT_REDUCE in [1, 2, 3, 4], CLUSTER in [1, 2, 3, 4])
@autotune(VEC_COPY in {1})
// The wgmma loop with a producer warp: 128-row tiles, operands whose rows are 16-byte aligned
// (TMA); 288 threads have no mma.sync warp grid. Persistent blocks do not split K, nor 128x256
// tiles (128 accumulators a thread and the split's sum spill at 168 registers); split, they
// take the paired workspace (SPLIT_REDUCE=3: the element-wise sum of 8 parts spills).
@where(THREADS != 288 || (TILE_M == 128 && TILE_N >= 128 && (SPLIT_K == 1 || (SCHEDULE == 1 && TILE_N <= 192 && SPLIT_REDUCE == 3))))
// 416 threads: three consumer warpgroups of 64 rows and the producer warp, 192-row tiles 128 or
// 192 wide (192x256 needs 128 accumulators a thread, over the 168 registers the block leaves),
// unsplit. 192x128 in clusters of two N tiles sharing A (CLUSTER = 4) reads A's 192-row boxes
// once a pair: 3000x2000x1000 at 0.89x cuBLAS where 128x192 reached 0.84x (bench/NOTES.md v20).
// Four N tiles sharing A (CLUSTER = 5, which the code generator takes) ran 27 % slower than the
// pairs there (v21), so it is not declared.
@where(THREADS != 416 || (TILE_M == 192 && TILE_N >= 128 && TILE_N <= 192 && SPLIT_K == 1))
@where(TILE_M != 192 || THREADS == 416)
@where((THREADS != 160 && THREADS < 288) || (K % 8 == 0 && N % 8 == 0))
// The producer warp's ring is deep: 6, 8 or 12 stages of 64x64 (16 KiB each; two blocks a
// multiprocessor at 6), 6 or 8 of 64x128 (24 KiB); the other loops keep 3 or 4. (Five stages
// of unsplit 128x192 tiles, the C store staged a third at a time beside them, lost 4-5 % to
// four at 3000x2000x1000, bench/NOTES.md v15; 5 left the list for SCHEDULE = 3, v17.)
@where(THREADS != 160 || (TILE_M == 64 && TILE_N <= 128 && STAGES >= 6))
@where(THREADS != 160 || TILE_N == 64 || STAGES <= 8)
@where(THREADS == 160 || STAGES <= 4)
// Clusters of two blocks on neighbouring M tiles share each B stage (each copies half, multicast
// into both): the deep ring's points, split or not, split 128-row tiles (512x512x4096: 128x128
// in clusters read B twice instead of four times), and persistent 128-row tiles, the cluster
// walking the tiles in pairs (3000x2000x1000: 18 % fewer bytes through L2).
@where(CLUSTER == 1 || THREADS == 160 || (THREADS >= 288 && (SPLIT_K > 1 || SCHEDULE >= 2)))
// CLUSTER = 3: the same clusters, rank 0 copying each stage's whole B box into both blocks and
// rank 1 none of it (whether a multicast box is read from L2 once whatever its size;
// bench/NOTES.md v18), and CLUSTER = 4 (two N tiles sharing A, v19), on the persistent points
// only. The declared product exceeds 65536; the points inside the @where do
// not.
@where(CLUSTER <= 2 || (THREADS >= 288 && SPLIT_K == 1 && SCHEDULE >= 2))
// One warpgroup takes 64 rows; 256 threads take the square tiles.
@where(THREADS != 128 || (TILE_M == 64 && TILE_N <= 128))
@where(THREADS != 256 || TILE_M == TILE_N)
// Persistent blocks loop over the tiles: the producer warp's schedule, GROUP_M-swizzled.
@where(SCHEDULE == 1 || (THREADS >= 288 && GROUP_M == 8))
// GROUP_M (1, 2, 4 or 8 declared: two values are bounds) is 1, or 8 where there are rows of
// tiles to group.
@where(GROUP_M == 1 || (GROUP_M == 8 && THREADS >= 288))
@where(GROUP_M == 1 || 8 * TILE_M <= M)
// k step 64 (one 128-byte line) with the producer warp (160, 288 or 416 threads); 32 otherwise:
// the mma.sync loop's 64-byte lines, which the wgmma loop widens to 64 over the whole K (the
// same sums).
@where(((THREADS == 160 || THREADS >= 288) && TILE_K == 64) || (THREADS != 160 && THREADS < 288 && TILE_K == 32))
// How split parts combine matters only when K is split.
@where(SPLIT_REDUCE == 1 || SPLIT_K > 1)
// Parts reduced in a cluster through distributed shared memory (SPLIT_REDUCE=4): the deep
// ring's points, in 2 or 4 parts, without CLUSTER's sharing of B.
@where(SPLIT_REDUCE != 4 || (THREADS == 160 && CLUSTER == 1 && SPLIT_K <= 4))
// Split K only when the tiles alone fill under half the GPU, into at most two blocks per
// multiprocessor, and with at least four k steps per part.
@where(SPLIT_K == 1 || (cdiv(M, TILE_M) * cdiv(N, TILE_N) < 66 && cdiv(M, TILE_M) * cdiv(N, TILE_N) * SPLIT_K <= 264 && K >= 4 * SPLIT_K * TILE_K))
// No tile more than twice the problem.
@where(TILE_M <= 2 * M && TILE_N <= 2 * N)
@launch(THREADS)
@flops(2 * M * N * K)
kernel gemm_small<TA = f16, TB = f16, TC = f32>(
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
