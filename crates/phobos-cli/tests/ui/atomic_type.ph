@grid(cdiv(N, 256))
kernel k(M: tensor<f64>[N], B: tensor<i32>[16], X: tensor<f32>[N]) {
  let i = ctx.block.x * 256 + ctx.thread
  atomic_max(M[i], 1.0)
  atomic_add(B[i % 16], X[i])
}
