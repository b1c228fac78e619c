// examples/softmax.ph over a space wide enough to compare search strategies on
// (bench/record_spaces.sh; on the interpreter at M=16 N=1000, bench/spaces/interp_softmax.jsonl,
// the dataset CI replays): 5 row counts, 4 tile widths, 5 block sizes, 4 occupancy hints and
// 4 register caps, 1600 points before the @where rules.
@autotune(ROWS in [1, 2, 4, 8, 16], BLOCK in [1024, 2048, 4096, 8192])
@autotune(THREADS in [64, 128, 256, 512, 1024], MIN_BLOCKS in [1, 2, 3, 4], MAX_REGS in [32, 64, 128, 255])
@where(N <= BLOCK)
@where(ROWS * BLOCK <= 32 * THREADS)
@launch(THREADS, MIN_BLOCKS, MAX_REGS)
@bytes(8 * M * N)
kernel softmax_space(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {
  let r = ctx.block.x * ROWS
  let valid = arange(BLOCK) < N
  let x = where(valid, X[r :+ ROWS, 0 :+ BLOCK], -inf)
  let e = where(valid, exp(x - rowmax(x)), 0.0)
  Y[r :+ ROWS, 0 :+ BLOCK] = e / rowsum(e)
}
