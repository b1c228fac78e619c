@autotune(TILE_M in [32, 128], TILE_N in [32, 128])
@launch(256)
kernel k(A: tensor<f32>[M, N]) {
  var acc: tile<f32>[TILE_M, TILE_N] = 0.0
  let big: tile<f32>[TILE_M * TILE_N, 128] = 1.0
  A[0 :+ TILE_M, 0 :+ TILE_N] = acc
}
