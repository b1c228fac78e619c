@grid(cdiv(N, 256))
kernel k(C: tensor<i8>[16], X: tensor<i32>[N]) {
  let i = ctx.block.x * 256 + ctx.thread
  atomic_add(C[X[i] % 16], 1)
}
