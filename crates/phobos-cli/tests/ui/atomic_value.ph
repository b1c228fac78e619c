@grid(cdiv(N, 256))
kernel k(X: tensor<f32>[N], H: tensor<i32>[16], S: tensor<f32>[64]) {
  let i = ctx.block.x * 256 + ctx.thread
  let slot = atomic_add(H[0], 1) + 1
  let old = atomic_add(S[0 :+ 64], X[0 :+ 64])
  let prev = atomic_add(H[1], 1)
  X[i] = f32(prev + slot)
}
