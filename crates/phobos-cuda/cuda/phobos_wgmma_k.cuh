// phobos_wgmma_k.cuh: K-major staged dots (phobos_mma_k.cuh's types: tf32, e4m3 / e5m2, s8 / u8,
// and f16 / bf16 with a K of no whole k steps) on wgmma (sm_90a).
//
// wgmma reads tf32 and 8-bit operands only K-major (the transposed forms are for 16-bit types),
// so both operands are staged K-major as for mma_dot_k — A as [M, KP], B as [N, KP], dot's [K, N]
// operand transposed while it is staged — but with K padded with zeros to whole 128-byte lines
// (wg_kp), so that each staged tile is in the 128-byte swizzled form the descriptors address
// (phobos_mma.cuh's mma_off over its bytes). One wgmma k step is 32 bytes of K for every type:
// m64nNk8 tf32, m64nNk16 f16 / bf16, m64nNk32 e4m3 / e5m2 with f32 accumulators, m64nNk32 s8 / u8
// with s32 accumulators (phobos_wgmma_int.cuh). The plan takes this path when the accumulator
// gives each warp 16 whole rows (WARPS_N == 1, BM == 16 * WARPS_M, whole warpgroups) and N is a
// multiple of 32 up to 256: warp w's registers are then those of warp w % 4 of warpgroup w / 4.
#pragma once
#include "phobos_mma_k.cuh"
#include "phobos_wgmma_int.cuh"

namespace ph {

// K rounded up to whole 128-byte lines of operand type DT.
template <int DT, int K> __host__ __device__ constexpr int wg_kp() {
  return (K * mma_es<DT>() + 127) / 128 * 128 / mma_es<DT>();
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The wgmma of operand type DT with both operands K-major: the float types' wrappers of
// gemm/wgmma_ops.cuh (TA = TB = 0), the integer ones of phobos_wgmma_int.cuh.
template <int DT, int N> struct WgOpK {
  __device__ __forceinline__ static void run(float* d, unsigned long long da, unsigned long long db) {
    gemm::sm90::Wgmma<DT, N, 0, 0>::run(d, da, db);
  }
};
template <int N> struct WgOpK<gemm::I8, N> {
  __device__ __forceinline__ static void run(int* d, unsigned long long da, unsigned long long db) {
    WgmmaInt<false, N>::run(d, da, db);
  }
};
template <int N> struct WgOpK<MMA_U8, N> {
  __device__ __forceinline__ static void run(int* d, unsigned long long da, unsigned long long db) {
    WgmmaInt<true, N>::run(d, da, db);
  }
};

// The accumulator's registers (float or int) pinned: no read or write moves across this point.
template <class T, class L> __device__ __forceinline__ void wg_fence_k(Tile<T, L>& t) {
#pragma unroll
  for (int i = 0; i < L::N; ++i) gemm::reg_fence(t.v[i]);
}

// acc += A · Bᵀ for A staged K-major [BM, K16] at shared address sa and B staged K-major
// [BN, K16] at sb (K16: the padded K in 16-bit units, a multiple of 64), by wgmma: warpgroup g
// multiplies rows 64 g on, k step kk (32 bytes) at kk * 32 bytes into the swizzled lines.
template <int DT, int K16, class T, int BM, int BN, int WARPS_M>
__device__ __forceinline__ void wg_smem_k(Tile<T, gemm::sm80::AccLayout<BM, BN, WARPS_M, 1>>& acc, unsigned sa, unsigned sb) {
  static_assert(BM == 16 * WARPS_M && BM % 64 == 0, "wgmma: 16 rows a warp, whole warpgroups");
  static_assert(K16 % 64 == 0, "wgmma reads whole 128-byte lines");
  // Descriptors from the start fields of the two bases (phobos_mma.cuh: wg_lo, wg_row0).
  const int row0 = wg_row0<BM>();
  const unsigned la = wg_lo(sa), lb = wg_lo(sb);
  wg_fence_k(acc);
  gemm::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K16 / 16; ++kk) {
    WgOpK<DT, BN>::run(acc.v, wg_desc_kmajor<BM, K16>(la, row0, kk), wg_desc_kmajor<BN, K16>(lb, 0, kk));
  }
  gemm::wgmma_commit();
  gemm::wgmma_wait<0>();
  wg_fence_k(acc);
}
#endif

// Scratch bytes of wg_dot_k's two operands.
template <int DT, int M, int N, int K> __host__ __device__ constexpr int wg_k_bytes() {
  return mma_k_bytes<DT, M, wg_kp<DT, K>()>() + mma_k_bytes<DT, N, wg_kp<DT, K>()>();
}

// acc += a @ b (TRANS_B: a @ bᵀ) on wgmma over operands staged K-major in the scratch area: a
// [M, K], b [K, N] (or [N, K]), each a register tile in any layout or a GTile; acc's elements are
// float, or int for I8 / MMA_U8. Off sm_90a the same staging feeds mma.sync.
template <bool TRANS_B, int DT, class T, class Acc, class A, class B, int BYTES>
__device__ void wg_dot_k(Tile<T, Acc>& acc, const A& a, const B& b, Scratch<BYTES> s) {
  constexpr int M = Ext<A>::R, K = Ext<A>::C, N = TRANS_B ? Ext<B>::R : Ext<B>::C;
  static_assert((TRANS_B ? Ext<B>::C : Ext<B>::R) == K, "dot: inner extents differ");
  static_assert(Acc::R == M && Acc::C == N, "dot: accumulator shape");
  constexpr int KP = wg_kp<DT, K>(), K16 = KP * mma_es<DT>() / 2;
  constexpr int A_BYTES = mma_k_bytes<DT, M, KP>();
  static_assert(wg_k_bytes<DT, M, N, K>() <= BYTES, "scratch too small for dot");
  mma_stage_k<DT, false, KP, Acc::THREADS>(a, s.p);
  mma_stage_k<DT, !TRANS_B, KP, Acc::THREADS>(b, s.p + A_BYTES);
  mma_publish();
  __syncthreads();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  wg_smem_k<DT, K16>(acc, gemm::smem_u32(s.p), gemm::smem_u32(s.p + A_BYTES));
#else
  mma_smem<DT, true, K16, N, K16>(acc, gemm::smem_u32(s.p), gemm::smem_u32(s.p + A_BYTES));
#endif
}

}  // namespace ph
