// Y = Xᵀ, TILES tiles of TILE_R x TILE_C a block, consecutive along X's rows (so a block writes
// TILES * TILE_R consecutive elements of each row of Y it touches). Each tile goes through the
// shared-memory scratch of `transpose`; the next tile's load is issued before the current tile's
// store, so a block keeps a load in flight while it stores. THREADS is searched with the tiles:
// at odd sizes, where no access is vectorized, what counts is the bytes in flight a
// multiprocessor and how many blocks it turns over.
@autotune(TILE_R in [16, 64], TILE_C in [16, 64], TILES in [1, 4], THREADS in [128, 512])
@where(TILE_R * TILE_C >= 2 * THREADS)
@launch(THREADS)
@grid(cdiv(M, TILE_R * TILES), cdiv(N, TILE_C))
@bytes(8 * M * N)
kernel transpose(X: tensor<f32>[M, N], Y: tensor<f32>[N, M]) {
  let r0 = ctx.block.x * (TILE_R * TILES)
  let c = ctx.block.y * TILE_C
  var next = X[r0 :+ TILE_R, c :+ TILE_C]
  for<unroll TILES> k in range(0, TILES) {
    let r = r0 + k * TILE_R
    let t = next
    if k + 1 < TILES {
      next = X[r + TILE_R :+ TILE_R, c :+ TILE_C]
    }
    Y[c :+ TILE_C, r :+ TILE_R] = transpose(t)
  }
}
