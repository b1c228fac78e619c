// Matmul with a fused leaky-ReLU epilogue (Triton tutorial 03): C = leaky_relu(A B) in f16,
// accumulated in f32; the activation runs on the accumulator, before the one rounding to f16.
@autotune(TILE_M in [64], TILE_N in [64], TILE_K in [16, 32])
@launch(128)
@flops(2 * M * N * K)
kernel matmul_leaky_relu(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f16>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[TILE_M, TILE_N] = 0.0
  for kt in range(0, K, TILE_K) {
    acc += dot(A[pm * TILE_M :+ TILE_M, kt :+ TILE_K], B[kt :+ TILE_K, pn * TILE_N :+ TILE_N])
  }
  C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = f16(where(acc >= 0.0, acc, 0.01 * acc))
}
