// y = a * x + y over a vector of runtime length N, one BLOCK-long span per block.
@autotune(BLOCK in [256, 4096])
@launch(256)
@flops(2 * N)
@bytes(12 * N)
kernel saxpy(a: f32, X: tensor<f32>[N], Y: tensor<f32>[N]) {
  let i = ctx.block.x * BLOCK
  Y[i :+ BLOCK] = a * X[i :+ BLOCK] + Y[i :+ BLOCK]
}
