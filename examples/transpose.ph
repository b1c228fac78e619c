// Y = Xᵀ of T (f32, bf16, f16), TILES tiles of TILE_R x TILE_C a block, consecutive along X's
// rows (a block writes TILES * TILE_R consecutive elements of each Y row it touches), each through
// the scratch of `transpose`; the next tile's load is issued before the current tile's store
// (AHEAD=2: the next two). THREADS is searched with the tiles. Rows known unaligned (odd M or N):
// VEC_COPY=0, element accesses; 1 (f32), 16-byte groups: X read by aligned 16-byte loads, each
// group's words selected at its row's shift, Y written by aligned 16-byte stores, the shared tile
// read at each output row's shift (bench/NOTES.md r19). At aligned sizes VEC_COPY=1 is VEC_COPY=0.
// At odd sizes every Y row segment a tile writes shares its end sectors with its neighbours', so
// longer segments cost less a byte: 128-row tiles (up to 1024 threads) won 8191x8193 (r25).
// STORE_LINES=1 (with VEC_COPY=0) stores such segments a warp a row, by windows on 128-byte
// lines, so that only a segment's two end sectors are partial (r37c, r40; 2-byte T a pair a lane,
// r43); at aligned sizes both knobs, and for 2-byte T VEC_COPY=1, emit VEC_COPY=0's code.
// 256-row tiles only with STORE_LINES=1, at most two tiles a block and 64 elements a thread: their
// Y row segments are 512 bytes in bf16, as f32's 128-row ones (r48).
@autotune(TILE_R in [16, 256], TILE_C in [16, 64], TILES in [1, 4], THREADS in [128, 1024], AHEAD in {1, 2}, VEC_COPY in {0, 1}, STORE_LINES in {0, 1})
@where(TILE_R * TILE_C >= 2 * THREADS)
@where(AHEAD == 1 || TILES >= 2)
@where(STORE_LINES == 0 || VEC_COPY == 0)
@where(TILE_R <= 128 || (STORE_LINES == 1 && TILES <= 2 && TILE_R * TILE_C <= 64 * THREADS))
@launch(THREADS)
@grid(cdiv(M, TILE_R * TILES), cdiv(N, TILE_C))
@bytes(2 * sizeof(T) * M * N)
kernel transpose<T = f32>(X: tensor<T>[M, N], Y: tensor<T>[N, M]) {
  let r0 = ctx.block.x * (TILE_R * TILES)
  let c = ctx.block.y * TILE_C
  var next = X[r0 :+ TILE_R, c :+ TILE_C]
  // AHEAD=2: the tile after `next` in flight too (loads past M are masked).
  var after: tile<T>[TILE_R, TILE_C] = T(0.0)
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
