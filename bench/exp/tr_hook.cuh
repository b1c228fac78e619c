// bench/NOTES.md r37b: an L2 prefetch of a transpose tile's rows of X as whole 128-byte lines
// (`cp.async.bulk.prefetch.L2`, one a row, thread t < TILE_R the tile's row t), inserted by hand
// into an emitted transpose: the tile of the block TR_D after this one in launch order (x fastest),
// TR_D = 0 this block's own. TILE_R and TILE_C: the kernel's tile (the harness's macros).
#pragma once
#ifndef TR_D
#define TR_D 0
#endif
__device__ __forceinline__ void tr_pf(const float* X, int M, int N) {
  const long long gx = gridDim.x;
  const long long bid = blockIdx.x + gx * blockIdx.y + TR_D;
  const int bx = (int)(bid % gx), by = (int)(bid / gx);
  const int t = threadIdx.x;
  if (by >= (int)gridDim.y || t >= TILE_R) return;
  const int r = bx * TILE_R + t;
  if (r >= M) return;
  const int c0 = by * TILE_C;
  const int c1 = c0 + TILE_C < N ? c0 + TILE_C : N;
  const unsigned long long base = (unsigned long long)X, end = (unsigned long long)(X + (long long)M * N) & ~15ull;
  unsigned long long s = (unsigned long long)(X + (long long)r * N + c0) & ~127ull;
  unsigned long long e = ((unsigned long long)(X + (long long)r * N + c1) + 127) & ~127ull;
  if (s < base) s = base;
  if (e > end) e = end;
  if (e <= s) return;
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(s), "r"((unsigned)(e - s)) : "memory");
}
