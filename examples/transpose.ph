// Y = Xᵀ, TILES tiles of TILE_R x TILE_C a block, consecutive along X's rows (so a block writes
// TILES * TILE_R consecutive elements of each row of Y it touches). Each tile goes through the
// shared-memory scratch of `transpose`; the next tile's load is issued before the current tile's
// store, so a block keeps a load in flight while it stores (AHEAD=2: two loads, the next two
// tiles, for twice the bytes in flight a block). THREADS is searched with the tiles:
// at odd sizes, where no access is vectorized, what counts is the bytes in flight a
// multiprocessor and how many blocks it turns over.
@autotune(TILE_R in [16, 64], TILE_C in [16, 64], TILES in [1, 4], THREADS in [128, 512], AHEAD in {1, 2})
@where(TILE_R * TILE_C >= 2 * THREADS)
@where(AHEAD == 1 || TILES >= 2)
@launch(THREADS)
@grid(cdiv(M, TILE_R * TILES), cdiv(N, TILE_C))
@bytes(8 * M * N)
kernel transpose(X: tensor<f32>[M, N], Y: tensor<f32>[N, M]) {
  let r0 = ctx.block.x * (TILE_R * TILES)
  let c = ctx.block.y * TILE_C
  var next = X[r0 :+ TILE_R, c :+ TILE_C]
  // AHEAD=2: the tile after `next` in flight too (loads past M are masked).
  var after: tile<f32>[TILE_R, TILE_C] = 0.0
  if AHEAD == 2 {
    after = X[r0 + TILE_R :+ TILE_R, c :+ TILE_C]
  }
  for<unroll TILES> k in range(0, TILES) {
    let r = r0 + k * TILE_R
    let t = next
    if AHEAD == 1 {
      if k + 1 < TILES {
        next = X[r + TILE_R :+ TILE_R, c :+ TILE_C]
      }
    } else {
      next = after
      if k + 2 < TILES {
        after = X[r + 2 * TILE_R :+ TILE_R, c :+ TILE_C]
      }
    }
    Y[c :+ TILE_C, r :+ TILE_R] = transpose(t)
  }
}
