// A GEMM whose WRONG=2 point doubles its result: --check must fail it against the reference.
@autotune(TILE in [32], WRONG in [1, 2])
@launch(256)
@flops(2 * M * N * K)
kernel gemm_wrong(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[TILE, TILE] = 0.0
  for kt in range(0, K, TILE) {
    acc += dot(A[pm * TILE :+ TILE, kt :+ TILE], B[kt :+ TILE, pn * TILE :+ TILE])
  }
  C[pm * TILE :+ TILE, pn * TILE :+ TILE] = acc * f32(WRONG)
}
