// RMSNorm over the rows of an M x N matrix (N <= BLOCK): Y = X * rsqrt(mean(X²) + eps) * W.
// A row is kept in registers between the reduction and the scaling, so X is read once. Each
// block takes RPB consecutive rows and loads the next row before reducing the current one, so
// a row's load is in flight during the previous row's reduction and store. W is read inside the
// store, which the code generator emits a vector group at a time (W's group loaded, scaled,
// stored), so W is never whole in registers beside the row (bench/NOTES.md r7). MIN_BLOCKS=4
// asks for four 256-thread blocks a multiprocessor (64 registers) or four of 512 (32), and
// MIN_BLOCKS=2 two of 1024 (the bf16 and f32 winners at 8192 wide; NOTES r27): at most a
// multiprocessor's 2048 threads. THREADS=32 makes a block one warp, which reduces by shuffles
// alone (short rows; bench/NOTES.md n1).
@autotune(BLOCK in [512, 8192], THREADS in {128, 256, 512, 1024, 32, 64}, MIN_BLOCKS in [1, 4], RPB in [1, 4])
@where(N <= BLOCK)
@where(BLOCK <= 32 * THREADS && BLOCK >= 4 * THREADS)
@where(THREADS * MIN_BLOCKS <= 2048)
@launch(THREADS, MIN_BLOCKS)
@grid(cdiv(M, RPB))
@bytes(8 * M * N + 4 * N)
kernel rms_norm<T = f32>(X: tensor<T>[M, N], W: tensor<T>[N], Y: tensor<T>[M, N], eps: f32) {
  let r0 = ctx.block.x * RPB
  var next = X[r0, 0 :+ BLOCK]
  for i in range(0, RPB) {
    let x = f32(next)
    if i + 1 < RPB {
      next = X[r0 + i + 1, 0 :+ BLOCK]
    }
    let rstd = rsqrt(sum(x * x) / f32(N) + eps)
    Y[r0 + i, 0 :+ BLOCK] = T(x * rstd * f32(W[0 :+ BLOCK]))
  }
}
