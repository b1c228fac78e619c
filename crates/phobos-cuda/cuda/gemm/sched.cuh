// Grid-level GEMM knobs that live outside the main loop: the GROUP_M block swizzle, the SPLIT_K
// partition of the k range, and the atomic epilogue that reduces split-K partial tiles.
#pragma once
#include "gemm/ptx.cuh"

namespace ph {
namespace gemm {

/// Remaps a block index so that `group_m` consecutive M-tiles are swept together down each
/// N-tile column: neighbouring blocks in launch order then share A rows and B columns in L2.
/// `bx`/`by` are the block's M-tile and N-tile indices as launched (x varies fastest),
/// `grid_m`/`grid_n` the tile counts; `group_m <= 1` is the identity. A bijection on the grid.
PH_GEMM_HD inline void swizzle_block(int bx, int by, int grid_m, int grid_n, int group_m, int* pm,
                                     int* pn) {
  if (group_m <= 1 || grid_m <= 0 || grid_n <= 0) {
    *pm = bx;
    *pn = by;
    return;
  }
  const long long pid = (long long)by * grid_m + bx;  // launch order
  const long long per_group = (long long)group_m * grid_n;
  const int group = (int)(pid / per_group);
  const int first_m = group * group_m;
  const int rows = (grid_m - first_m) < group_m ? (grid_m - first_m) : group_m;
  const int in_group = (int)(pid % per_group);
  *pm = first_m + in_group % rows;
  *pn = in_group / rows;
}

/// `swizzle_block` for a grid of thread block clusters of `cluster` blocks along x: the
/// clusters are swizzled as whole units (`grid_x / cluster` of them along M, GROUP_M counted in
/// M tiles), and the blocks of a cluster take consecutive M tiles of the same N tile, so they
/// share their B tile. `grid_x` is a multiple of `cluster`; a bijection on the grid.
PH_GEMM_HD inline void cluster_swizzle_block(int bx, int by, int grid_x, int grid_n, int group_m,
                                             int cluster, int* pm, int* pn) {
  int cm, cn;
  const int g = group_m / cluster > 1 ? group_m / cluster : 1;
  swizzle_block(bx / cluster, by, grid_x / cluster, grid_n, g, &cm, &cn);
  *pm = cm * cluster + bx % cluster;
  *pn = cn;
}

/// `swizzle_block` for clusters of `cluster` blocks along N (SHARE_A): `by` counts blocks
/// along y in whole clusters (`grid_y` a multiple of `cluster`); the clusters are swizzled as
/// units (`grid_y / cluster` of them along N, GROUP_M counted in M tiles), and the blocks of a
/// cluster take consecutive N tiles of the same M tile, so they share their A tile. A
/// bijection on the grid.
PH_GEMM_HD inline void cluster_n_swizzle_block(int bx, int by, int grid_m, int grid_y,
                                               int group_m, int cluster, int* pm, int* pn) {
  int cn;
  swizzle_block(bx, by / cluster, grid_m, grid_y / cluster, group_m, pm, &cn);
  *pn = cn * cluster + by % cluster;
}

/// The k range block `z` of `split_k` covers when [k_lo, k_hi) is split into whole `tile_k`
/// steps as evenly as possible: every part starts on a tile boundary of the unsplit loop, so the
/// parts' iterations together are exactly the unsplit loop's. An empty part has kb == ke.
PH_GEMM_HD inline void split_k_range(int k_lo, int k_hi, int tile_k, int split_k, int z, int* kb,
                                     int* ke) {
  if (split_k <= 1) {
    *kb = k_lo;
    *ke = k_hi;
    return;
  }
  const int span = k_hi > k_lo ? k_hi - k_lo : 0;
  const int tiles = (span + tile_k - 1) / tile_k;
  const int per = (tiles + split_k - 1) / split_k;
  const long long b = (long long)k_lo + (long long)z * per * tile_k;
  const long long e = b + (long long)per * tile_k;
  *kb = (int)(b < k_hi ? b : k_hi);
  *ke = (int)(e < k_hi ? e : k_hi);
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
/// Split-K epilogue: adds this block's partial tile into row-major f32 C with atomics. C must be
/// zeroed (or hold the value to accumulate onto) before the launch, and whatever follows the dot
/// must be linear in it (a plain store, or a scale by a uniform scalar applied per part): a bias,
/// an activation or a narrowing cast cannot be split this way.
template <class L, class T>
PH_GEMM_DEV void atomic_add_tile(float* C, long long ldc, int M, int N, int m0, int n0,
                                 const T* v) {
  const int tid = threadIdx.x;
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(tid, i, r, c);
    if (r < L::R && c < L::C && m0 + r < M && n0 + c < N)
      atomicAdd(C + (long long)(m0 + r) * ldc + (n0 + c), (float)v[i]);
  }
}
#endif

}  // namespace gemm
}  // namespace ph
