// bench/NOTES.md r37c: a transposed tile's rows stored (and, in tr_lines_kern, loaded) by warp
// windows that start on 128-byte lines: window w of a row whose first element sits sh words into
// its line covers the row's elements 32w - sh .. 32w - sh + 31, so each window is one line, its
// sectors whole but at the row segment's two ends. A row of C elements takes C / 32 + 1 windows.
#pragma once

// Y's tile [R, C] = transpose of x ([C, R], the emitted kernel's register tile), through the
// scratch at the odd stride R + 1 as `ph::transpose` does.
template <int R, int C, class Lin, int BYTES>
__device__ void tr_store_lines(const ph::Region<float>& g, const ph::Tile<float, Lin>& x, ph::Scratch<BYTES> s) {
  constexpr int LD = Lin::C + 1;
  float* buf = reinterpret_cast<float*>(s.p);
  ph::write_tile(x, buf, LD);
  __syncthreads();
  constexpr int WIN = C / 32 + 1, WARPS = Lin::THREADS / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int p = warp; p < R * WIN; p += WARPS) {
    const int r = p / WIN, w = p % WIN;
    const int sh = (int)(((unsigned long long)ph::elem_ptr(g, r, 0) >> 2) & 31);
    const int c = 32 * w - sh + lane;
    if (c >= 0 && c < C && ph::in_bounds(g, r, c)) *ph::elem_ptr(g, r, c) = buf[c * LD + r];
  }
}

// The whole transpose of TILE_R x TILE_C tiles of X ([M, N]) into Y ([N, M]), one tile a block
// (grid (cdiv(M, TILE_R), cdiv(N, TILE_C))), both sides by line windows, through shared memory
// at the stride TILE_C + 1: every window's loads issued before any is written to shared memory.
template <int TR, int TC, int THREADS>
__device__ void tr_lines(const float* __restrict__ X, float* __restrict__ Y, int M, int N, float* buf) {
  constexpr int LD = TC + 1, WARPS = THREADS / 32;
  const int r0 = blockIdx.x * TR, c0 = blockIdx.y * TC;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  constexpr int WIN_IN = TC / 32 + 1, NIN = (TR * WIN_IN + WARPS - 1) / WARPS;
  float v[NIN];
  int at[NIN];
#pragma unroll
  for (int i = 0; i < NIN; ++i) {
    const int p = warp + WARPS * i;
    const int xr = p / WIN_IN, w = p % WIN_IN, row = r0 + xr;
    const float* rowp = X + (long long)row * N + c0;
    const int sh = (int)(((unsigned long long)rowp >> 2) & 31);
    const int c = 32 * w - sh + lane;
    const bool ok = p < TR * WIN_IN && row < M && c >= 0 && c < TC && c0 + c < N;
    v[i] = ok ? rowp[c] : 0.0f;
    at[i] = ok ? xr * LD + c : -1;
  }
#pragma unroll
  for (int i = 0; i < NIN; ++i)
    if (at[i] >= 0) buf[at[i]] = v[i];
  __syncthreads();
  constexpr int WIN_OUT = TR / 32 + 1;
#pragma unroll 4
  for (int p = warp; p < TC * WIN_OUT; p += WARPS) {
    const int yr = p / WIN_OUT, w = p % WIN_OUT, row = c0 + yr;
    float* rowp = Y + (long long)row * M + r0;
    const int sh = (int)(((unsigned long long)rowp >> 2) & 31);
    const int c = 32 * w - sh + lane;
    if (row < N && c >= 0 && c < TR && r0 + c < M) rowp[c] = buf[c * LD + yr];
  }
}

// r37c, second form: a warp takes whole rows (each row's windows unrolled, its shift computed
// once), so a window costs its compare, its shared read and its store.
template <int R, int C, class Lin, int BYTES>
__device__ void tr_store_lines2(const ph::Region<float>& g, const ph::Tile<float, Lin>& x, ph::Scratch<BYTES> s) {
  constexpr int LD = Lin::C + 1, WARPS = Lin::THREADS / 32, WIN = C / 32 + 1;
  static_assert(R % WARPS == 0, "whole rows a warp");
  float* buf = reinterpret_cast<float*>(s.p);
  ph::write_tile(x, buf, LD);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int lim = g.cn - g.c0 < C ? g.cn - g.c0 : C;
#pragma unroll
  for (int i = 0; i < R / WARPS; ++i) {
    const int r = warp + WARPS * i;
    float* rowp = ph::elem_ptr(g, r, 0);
    const int sh = (int)(((unsigned long long)rowp >> 2) & 31);
    const bool ok = g.ok && g.r0 + r < g.rn;
#pragma unroll
    for (int w = 0; w < WIN; ++w) {
      const int c = lane - sh + 32 * w;
      if (ok && c >= 0 && c < lim) rowp[c] = buf[c * LD + r];
    }
  }
}

template <int TR, int TC, int THREADS>
__device__ void tr_lines2(const float* __restrict__ X, float* __restrict__ Y, int M, int N, float* buf) {
  constexpr int LD = TC + 1, WARPS = THREADS / 32, WIN_IN = TC / 32 + 1, RPW = TR / WARPS;
  constexpr int WIN_OUT = TR / 32 + 1, YPW = TC / WARPS;
  static_assert(TR % WARPS == 0 && TC % WARPS == 0, "whole rows a warp");
  const int r0 = blockIdx.x * TR, c0 = blockIdx.y * TC;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int lim_in = N - c0 < TC ? N - c0 : TC, lim_out = M - r0 < TR ? M - r0 : TR;
  float v[RPW][WIN_IN];
  int shs[RPW];
#pragma unroll
  for (int i = 0; i < RPW; ++i) {
    const int xr = warp + WARPS * i, row = r0 + xr;
    const float* rowp = X + (long long)row * N + c0;
    const int sh = (int)(((unsigned long long)rowp >> 2) & 31);
    shs[i] = row < M ? sh : 32 * WIN_IN + 32;  // past every window: no column of the row in range
#pragma unroll
    for (int w = 0; w < WIN_IN; ++w) {
      const int c = lane - shs[i] + 32 * w;
      v[i][w] = (c >= 0 && c < lim_in) ? rowp[c] : 0.0f;
    }
  }
#pragma unroll
  for (int i = 0; i < RPW; ++i) {
    const int xr = warp + WARPS * i;
#pragma unroll
    for (int w = 0; w < WIN_IN; ++w) {
      const int c = lane - shs[i] + 32 * w;
      if (c >= 0 && c < lim_in) buf[xr * LD + c] = v[i][w];
    }
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < YPW; ++i) {
    const int yr = warp + WARPS * i, row = c0 + yr;
    float* rowp = Y + (long long)row * M + r0;
    const int sh = (int)(((unsigned long long)rowp >> 2) & 31);
    const bool ok = row < N;
#pragma unroll
    for (int w = 0; w < WIN_OUT; ++w) {
      const int c = lane - sh + 32 * w;
      if (ok && c >= 0 && c < lim_out) rowp[c] = buf[c * LD + yr];
    }
  }
}
