// The command-line fuzzer's kernel: two N x N tensors, so a dim near i32::MAX needs far more
// memory than any host has and must be refused, never allocated.
@autotune(B in [16, 32])
@where(N % B == 0)
@launch(64)
kernel square(X: tensor<f32>[N, N], O: tensor<f32>[N, N]) {
  let r = ctx.block.x
  let c = ctx.block.y
  O[r, c * B :+ B] = X[r, c * B :+ B] * 2.0
}
