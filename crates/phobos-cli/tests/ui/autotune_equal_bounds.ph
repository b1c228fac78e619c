@autotune(D in [64, 64], BLOCK in [128, 256])
@launch(128)
kernel k(X: tensor<f32>[N, D]) {
  X[ctx.block.x, 0 :+ D] = 0.0
}
