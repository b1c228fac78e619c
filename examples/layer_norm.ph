// Layer norm forward over the rows of an M x N matrix (N <= BLOCK): Y = (X - mean) * rstd * W
// + B, and the row statistics Mean and Rstd (what a backward pass reads). A row is held in
// registers between its statistics and its normalization, so X is read once; the statistics
// are block-wide sums, uniform scalars every thread holds. The variance is the mean of squared
// deviations (two reductions, no cancellation). Each block takes RPB consecutive rows and loads
// the next row before reducing the current one. W and B are read after each row's statistics
// (from L2), inside the store, which the code generator emits a vector group at a time (a group
// of W and of B loaded, the group computed and stored), so only the row is held in registers
// across its reductions and after them (bench/NOTES.md r5, r7); MIN_BLOCKS=4 asks for four
// 256-thread blocks a multiprocessor (64 registers), MIN_BLOCKS=8 for eight 128-thread ones
// (64 registers: eight rows in flight where four were; NOTES r27); the blocks a multiprocessor
// asks for hold at most its 2048 threads. THREADS=32 makes a block one warp, whose statistics
// take shuffles alone: no shared memory, no barrier (short rows; NOTES n1).
@autotune(BLOCK in [512, 8192], THREADS in {128, 256, 512, 1024, 32, 64}, MIN_BLOCKS in [1, 8], RPB in [1, 4])
@where(N <= BLOCK)
@where(BLOCK <= 32 * THREADS && BLOCK >= 4 * THREADS)
@where(THREADS * MIN_BLOCKS <= 2048)
@launch(THREADS, MIN_BLOCKS)
@grid(cdiv(M, RPB))
@bytes(8 * M * N + 8 * N + 8 * M)
kernel layer_norm<T = f32>(
  X: tensor<T>[M, N], W: tensor<T>[N], B: tensor<T>[N], Y: tensor<T>[M, N],
  Mean: tensor<f32>[M], Rstd: tensor<f32>[M], eps: f32
) {
  let r0 = ctx.block.x * RPB
  var next = X[r0, 0 :+ BLOCK]
  for i in range(0, RPB) {
    let x = f32(next)
    if i + 1 < RPB {
      next = X[r0 + i + 1, 0 :+ BLOCK]
    }
    let mean = sum(x) / f32(N)
    let d = where(arange(BLOCK) < N, x - mean, 0.0)
    let rstd = rsqrt(sum(d * d) / f32(N) + eps)
    Y[r0 + i, 0 :+ BLOCK] = T(d * rstd * f32(W[0 :+ BLOCK]) + f32(B[0 :+ BLOCK]))
    if ctx.thread == 0 {
      Mean[r0 + i] = mean
      Rstd[r0 + i] = rstd
    }
  }
}
