// A 5-point heat stencil, Y = c0 * X + c1 * (sum of the 4 neighbours), zero outside the
// grid. A block covers TILE_X columns and TILE_Y * ROWS rows: its threads (TILE_X * TILE_Y of
// them, as @launch and __launch_bounds__ say) stage their tile with a one-element halo in
// shared memory, ROWS times. Tuned with
//
//   phobos-kbench examples/cuda/stencil.cu --dims H=4096,W=4096 --arg c0=0.5 --arg c1=0.125 --report

// @autotune(TILE_X in [32, 128], TILE_Y in [1, 8], ROWS in {1, 2, 4})
// @launch(TILE_X * TILE_Y)
// @grid(cdiv(W, TILE_X), cdiv(H, TILE_Y * ROWS))
// @flops(6 * H * W)
// @bytes(8 * H * W)
// @params(X: tensor<f32>[H, W], Y: tensor<f32>[H, W], c0: f32, c1: f32)
extern "C" __global__ void __launch_bounds__(TILE_X * TILE_Y)
heat(const float* __restrict__ x, float* __restrict__ y, float c0, float c1, int h, int w) {
  __shared__ float tile[TILE_Y + 2][TILE_X + 2];
  const int tx = threadIdx.x % TILE_X, ty = threadIdx.x / TILE_X;
  const int col = blockIdx.x * TILE_X + tx;
  auto at = [&](int i, int j) {
    return (i >= 0 && i < h && j >= 0 && j < w) ? x[(size_t)i * w + j] : 0.0f;
  };
  for (int r = 0; r < ROWS; ++r) {
    const int row0 = (blockIdx.y * ROWS + r) * TILE_Y;
    const int row = row0 + ty;
    tile[ty + 1][tx + 1] = at(row, col);
    if (ty == 0) tile[0][tx + 1] = at(row0 - 1, col);
    if (ty == TILE_Y - 1) tile[TILE_Y + 1][tx + 1] = at(row0 + TILE_Y, col);
    if (tx == 0) tile[ty + 1][0] = at(row, col - 1);
    if (tx == TILE_X - 1) tile[ty + 1][TILE_X + 1] = at(row, col + 1);
    __syncthreads();
    if (row < h && col < w) {
      const float n = tile[ty][tx + 1] + tile[ty + 2][tx + 1] + tile[ty + 1][tx] +
                      tile[ty + 1][tx + 2];
      y[(size_t)row * w + col] = c0 * tile[ty + 1][tx + 1] + c1 * n;
    }
    __syncthreads();
  }
}
