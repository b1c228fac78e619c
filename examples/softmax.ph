// Row softmax of an M x N matrix of T (f32, bf16, f16): each row one BLOCK-wide f32 tile (N <=
// BLOCK) in registers from its load to its store, so X is read once; ROWS rows a block; the tile
// masked past the runtime column count N (-inf before the max, 0 before the sum); Y rounded to
// T once. At most 128 bytes of X a thread: 32 elements of f32, 64 of a 2-byte T (32 at 512
// threads: 64 spill there). Wider rows: softmax_row.ph (read once) or softmax_online.ph (chunks).
@autotune(ROWS in [1, 8], BLOCK in [256, 8192], THREADS in [128, 512], MIN_BLOCKS in [1, 2])
@where(N <= BLOCK)
@where(ROWS * BLOCK <= 32 * THREADS * (4 / sizeof(T)) && (THREADS < 512 || ROWS * BLOCK <= 32 * THREADS))
@launch(THREADS, MIN_BLOCKS)
@bytes(2 * sizeof(T) * M * N)
kernel softmax<T = f32>(X: tensor<T>[M, N], Y: tensor<T>[M, N]) {
  let r = ctx.block.x * ROWS
  let valid = arange(BLOCK) < N
  let x = where(valid, f32(X[r :+ ROWS, 0 :+ BLOCK]), -inf)
  // exp(x - max) as exp2(x * log2(e) - max * log2(e)): one FFMA and one MUFU an element; the
  // masked -inf give 0. One division a row: the reciprocal of the sum, a multiply an element.
  let e = exp2(x * 1.4426950408889634 - rowmax(x) * 1.4426950408889634)
  Y[r :+ ROWS, 0 :+ BLOCK] = T(e * (1.0 / rowsum(e)))
}
