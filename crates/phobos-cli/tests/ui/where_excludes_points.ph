// 512 violates the `@where`: outside the space, not one of the points that do not check
// (2048 and 4096 threads, over the launch limit).
@autotune(THREADS in [256, 4096])
@where(THREADS != 512)
@launch(THREADS)
kernel k(X: tensor<f32>[N]) {
  X[ctx.thread] = 0.0
}
