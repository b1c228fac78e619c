// Reference epilogue over the layout contract: stores an accumulator tile into a row-major C
// with masking, VEC columns at a time where the tile is whole and C is aligned. The code
// generator emits its own epilogue (fused elementwise ops, casts); this one is what the
// development harness uses and the shape the generated one should have: one branch on "whole
// tile", loops over registers fully unrolled (a runtime index would put the accumulators in
// local memory), coordinates from L::coord with i a compile-time constant.
#pragma once
#include "gemm/ptx.cuh"

namespace ph {
namespace gemm {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

template <int VEC, class OutT>
struct VecStore;
template <>
struct VecStore<1, float> {
  PH_GEMM_DEV static void run(float* p, const float* v) { p[0] = v[0]; }
};
template <>
struct VecStore<2, float> {
  PH_GEMM_DEV static void run(float* p, const float* v) {
    *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
  }
};
template <>
struct VecStore<4, float> {
  PH_GEMM_DEV static void run(float* p, const float* v) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  }
};

/// C[m0 + r, n0 + c] = v[i] for every register i of layout L that holds an element inside
/// M x N. ldc in elements.
template <class L, class T>
PH_GEMM_DEV void store_tile(float* C, long long ldc, int M, int N, int m0, int n0, const T* v) {
  const int tid = threadIdx.x;
  const bool whole = (m0 + L::R <= M) && (n0 + L::C <= N);
  const bool aligned = (ldc % L::VEC == 0) && ((reinterpret_cast<unsigned long long>(C) %
                                                (sizeof(float) * L::VEC)) == 0);
  if (whole && aligned) {
#pragma unroll
    for (int i = 0; i < L::N; i += L::VEC) {
      int r, c;
      L::coord(tid, i, r, c);
      if (r < L::R) {
        float f[L::VEC];
#pragma unroll
        for (int e = 0; e < L::VEC; ++e) f[e] = (float)v[i + e];
        VecStore<L::VEC, float>::run(C + (long long)(m0 + r) * ldc + (n0 + c), f);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < L::N; ++i) {
      int r, c;
      L::coord(tid, i, r, c);
      if (r < L::R && c < L::C && m0 + r < M && n0 + c < N)
        C[(long long)(m0 + r) * ldc + (n0 + c)] = (float)v[i];
    }
  }
}

#endif  // CUDA

}  // namespace gemm
}  // namespace ph
