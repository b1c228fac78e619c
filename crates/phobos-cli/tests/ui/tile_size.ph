@autotune(TILE in [2048, 4096])
kernel k(X: tensor<f32>[M, N]) {
  var acc: tile<f32>[TILE, TILE] = 0.0
  X[0 :+ TILE, 0 :+ TILE] = acc
}
