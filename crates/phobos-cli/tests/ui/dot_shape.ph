@autotune(TILE_M in [32], TILE_N in [32], TILE_K in [16])
kernel k(A: tensor<f16>[M, K], B: tensor<f16>[N, K], C: tensor<f32>[M, N]) {
  let a = A[0 :+ TILE_M, 0 :+ TILE_K]
  let b = B[0 :+ TILE_N, 0 :+ TILE_K]
  C[0 :+ TILE_M, 0 :+ TILE_N] = dot(a, b)
}
