// launch: 1024 threads, 0 bytes of dynamic shared memory (bench/NOTES.md r51: written by hand)
// A 2-byte transpose Y = X^T that never widens its elements: 256 x 64 tiles, 1024 threads, a
// 16-bit shared tile at the odd row stride LD = 257, so that the pair (i, i + 1) of its row j is
// one aligned word exactly when i = j (mod 2), the pairing both sides need at odd M and N:
// - loads: warp w reads rows 8w .. 8w + 7 of the tile, lane l the column pair (2l, 2l + 1), one
//   aligned word a row (two and a byte permute where the row starts on an odd element);
// - four 2x2 register transposes (PRMT) give column 2l's row pairs (0,1) .. (6,7) and column
//   2l + 1's (1,2), (3,4), (5,6) as words; rows 0 and 7 of column 2l + 1 go as halves: 9 shared
//   stores a thread for 16 elements, conflict-free (a lane's words are 257 words apart);
// - stores: warp w writes Y rows w and w + 32 by windows on 128-byte lines (as STORE_LINES=1),
//   one shared word load and one 4-byte global store a lane a window, 2-byte stores at the
//   segment's two ends.
// The last column tile goes element by element. An even M is not handled (the store side's words
// would not be the shared tile's): the experiment runs at odd M.
#include "phobos_prelude.cuh"

namespace tr16 {
constexpr int TR = 256, TC = 64, WARPS = 32, RPW = TR / WARPS, LD = TR + 1;

__device__ __forceinline__ unsigned prmt(unsigned a, unsigned b, unsigned s) {
  unsigned d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(s));
  return d;
}

// Row k of the warp's eight starts on an odd element exactly when k * N is odd (the tile's first
// row and column are even): with N odd (NODD), rows 1, 3, 5 and 7, each then read as the aligned
// words before and after its pair, two immediates off one address. Rows k < `rows` only (FULL: all).
template <bool NODD, bool FULL>
__device__ __forceinline__ void load_rows(const unsigned short* p, int N, int rows, unsigned (&w)[RPW]) {
  unsigned a[RPW], b[RPW];
#pragma unroll
  for (int k = 0; k < RPW; ++k) {
    const unsigned short* q = p + (long long)k * N;
    a[k] = b[k] = 0u;
    if (FULL || k < rows) {
      if (NODD && (k & 1)) {
        a[k] = __ldg(reinterpret_cast<const unsigned*>(q - 1));
        b[k] = __ldg(reinterpret_cast<const unsigned*>(q + 1));
      } else {
        a[k] = __ldg(reinterpret_cast<const unsigned*>(q));
      }
    }
  }
#pragma unroll
  for (int k = 0; k < RPW; ++k) w[k] = NODD && (k & 1) ? prmt(a[k], b[k], 0x5432) : a[k];
}

// A tile whose TC columns lie in X, with the word after them: its n = min(TR, M - r0) rows.
template <bool NODD, bool FULL>
__device__ __forceinline__ void tile(const unsigned short* X, unsigned short* Y, int M, int N, int r0, int c0, int n,
                                     unsigned short* S) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned w[RPW];
  load_rows<NODD, FULL>(X + (long long)(r0 + RPW * warp) * N + c0 + 2 * lane, N, n - RPW * warp, w);
  unsigned* SW = reinterpret_cast<unsigned*>(S);
  const int i0 = RPW * warp;
  const int je = 2 * lane, jo = 2 * lane + 1;
#pragma unroll
  for (int k = 0; k < RPW; k += 2) SW[(je * LD + i0 + k) / 2] = prmt(w[k], w[k + 1], 0x5410);
#pragma unroll
  for (int k = 1; k + 1 < RPW; k += 2) SW[(jo * LD + i0 + k) / 2] = prmt(w[k], w[k + 1], 0x7632);
  S[jo * LD + i0] = (unsigned short)(w[0] >> 16);
  S[jo * LD + i0 + RPW - 1] = (unsigned short)(w[RPW - 1] >> 16);
  __syncthreads();
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int j = warp + 32 * h;
    unsigned short* seg = Y + (long long)(c0 + j) * M + r0;
    // Window t covers the line's bytes [L, L + 128); lane l the word at L + 4l, the segment's
    // elements e, e + 1 with e = (L + 4l - seg) / 2. Window 0's e lies in [-63, 62], so at FULL
    // windows 1 to 3 lie inside the segment and only windows 0 and 4 test.
    const int off = (int)(((unsigned long long)seg & ~127ull) - (unsigned long long)seg);  // in (-128, 0]
    const int e0 = off / 2 + 2 * lane;
    unsigned* wp = reinterpret_cast<unsigned*>(reinterpret_cast<char*>(seg) + off) + lane;
    const unsigned short* sr = S + j * LD + e0;
#pragma unroll
    for (int t = 0; t < 5; ++t) {
      const int e = e0 + 64 * t;
      if (FULL && t >= 1 && t <= 3) {
        wp[32 * t] = *reinterpret_cast<const unsigned*>(sr + 64 * t);
      } else if (e >= 0 && e + 1 < n) {
        wp[32 * t] = *reinterpret_cast<const unsigned*>(sr + 64 * t);
      } else if (e == -1) {
        seg[0] = sr[64 * t + 1];
      } else if (e == n - 1) {
        seg[n - 1] = sr[64 * t];
      }
    }
  }
}
}  // namespace tr16

extern "C" __global__ void __launch_bounds__(1024) transpose(const ph::bf16* __restrict__ Xp, ph::bf16* __restrict__ Yp, int M, int N) {
  using namespace tr16;
  __shared__ __align__(16) unsigned short S[TC * LD + 1];
  const unsigned short* X = reinterpret_cast<const unsigned short*>(Xp);
  unsigned short* Y = reinterpret_cast<unsigned short*>(Yp);
  const int r0 = blockIdx.x * TR, c0 = blockIdx.y * TC;
  const int n = M - r0 < TR ? M - r0 : TR;
  if (c0 + TC < N) {
    if (N & 1) {
      if (n == TR) tile<true, true>(X, Y, M, N, r0, c0, n, S);
      else tile<true, false>(X, Y, M, N, r0, c0, n, S);
    } else {
      if (n == TR) tile<false, true>(X, Y, M, N, r0, c0, n, S);
      else tile<false, false>(X, Y, M, N, r0, c0, n, S);
    }
  } else {
    // The last column tile: element by element.
    for (int idx = threadIdx.x; idx < TR * TC; idx += 1024) {
      const int i = idx / TC, j = idx % TC;
      if (i < n && c0 + j < N) S[j * LD + i] = X[(long long)(r0 + i) * N + c0 + j];
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < TR * TC; idx += 1024) {
      const int j = idx / TR, i = idx % TR;
      if (i < n && c0 + j < N) Y[(long long)(c0 + j) * M + r0 + i] = S[j * LD + i];
    }
  }
}
