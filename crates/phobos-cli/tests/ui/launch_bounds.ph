@autotune(REGS in [8, 32])
@launch(256, 0, REGS)
kernel k(X: tensor<f32>[N]) {
  X[ctx.thread] = 0.0
}
