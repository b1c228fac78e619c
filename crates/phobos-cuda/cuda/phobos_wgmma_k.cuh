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
//
// A from registers (wg_dot_k_ra): an A operand that is itself an accumulator whose warps hold the
// same whole rows (attention's P) never leaves registers. A warp's A fragment of m64nNk8 tf32 /
// m64nNk32 8-bit is that of mma.sync m16n8k8 / m16n8k32 for its 16 rows, which holds other
// columns than the accumulator's registers do; since a dot sums over k, each k step takes the
// accumulator's registers as they lie and B's rows are staged in the same order (wg_ra_pos).
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
// multiplies rows 64 g on, k step kk (32 bytes) at kk * 32 bytes into the swizzled lines. Only
// the first STEPS k steps hold columns of K: the others multiply zeros and are skipped.
template <int DT, int K16, int STEPS, class T, int BM, int BN, int WARPS_M>
__device__ __forceinline__ void wg_smem_k(Tile<T, gemm::sm80::AccLayout<BM, BN, WARPS_M, 1>>& acc, unsigned sa, unsigned sb) {
  static_assert(BM == 16 * WARPS_M && BM % 64 == 0, "wgmma: 16 rows a warp, whole warpgroups");
  static_assert(K16 % 64 == 0 && STEPS <= K16 / 16, "wgmma reads whole 128-byte lines");
  // Descriptors from the start fields of the two bases (phobos_mma.cuh: wg_lo, wg_row0).
  const int row0 = wg_row0<BM>();
  const WgStart la = wg_lo(sa), lb = wg_lo(sb);
  wg_fence_k(acc);
  gemm::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < STEPS; ++kk) {
    WgOpK<DT, BN>::run(acc.v, wg_desc_kmajor<BM, K16>(la, row0, kk), wg_desc_kmajor<BN, K16>(lb, 0, kk));
  }
  gemm::wgmma_commit();
  gemm::wgmma_wait<0>();
  wg_fence_k(acc);
}
#endif

// The k position, in the instruction's order, of A's column c when A comes from accumulator
// registers: thread t (lane % 4) holds columns 2t, 2t + 1 of each n8 block of its rows.
//   tf32 (k8, registers a0..a3 = (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)): column 2t + b
//   is position t + 4b.
//   8-bit (k32, a0 = row g, positions 4t..4t + 3; a1 row g + 8; a2, a3 the same 16 on): column
//   16h + 8a + 2t + b is position 16h + 4t + 2a + b.
// 16-bit fragments are the accumulator's order already.
template <int DT> __host__ __device__ constexpr int wg_ra_pos(int c) {
  if (mma_es<DT>() == 4) return (c & ~7) | ((c & 7) >> 1) | ((c & 1) << 2);
  if (mma_es<DT>() == 1) return (c & ~15) | (((c & 7) >> 1) << 2) | (((c >> 3) & 1) << 1) | (c & 1);
  return c;
}

// Stages B ([K, N], or [N, K] when TRANS_B) K-major as the [N, KP] tile wg_dot_k_ra reads: column
// k of K at position wg_ra_pos(k), zeros at positions K..KP (the permutation stays within each
// 32-byte k step and K is whole 16-column n8 pairs, so those are the padding's own positions).
template <int DT, bool TRANS, int KP, int THREADS, class T, class L>
__device__ __forceinline__ void wg_stage_b_ra(const Tile<T, L>& t, unsigned char* dst) {
  constexpr int RS = TRANS ? L::C : L::R, K = TRANS ? L::R : L::C;
  const int tid = threadIdx.x;
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(tid, i, r, c);
    if (in_tile<L>(r, c)) mma_put<DT, RS, KP>(dst, TRANS ? c : r, wg_ra_pos<DT>(TRANS ? r : c), mma_elem_bits<DT>(t.v[i]));
  }
  if constexpr (KP != K) {
    for (int q = tid; q < RS * (KP - K); q += THREADS) mma_put<DT, RS, KP>(dst, q / (KP - K), K + q % (KP - K), 0u);
  }
}
template <int DT, bool TRANS, int KP, int THREADS, int R, int C, class S>
__device__ __forceinline__ void wg_stage_b_ra(const GTile<R, C, S>& t, unsigned char* dst) {
  constexpr int RS = TRANS ? C : R, K = TRANS ? R : C;
  const Region<const S>& g = t.g;
  for (int q = threadIdx.x; q < R * C; q += THREADS) {
    const int r = q / C, c = q % C;
    const unsigned bits = in_bounds(g, r, c) ? mma_elem_bits<DT>(Reg<S>::load(*elem_ptr(g, r, c))) : 0u;
    mma_put<DT, RS, KP>(dst, TRANS ? c : r, wg_ra_pos<DT>(TRANS ? r : c), bits);
  }
  if constexpr (KP != K) {
    for (int q = threadIdx.x; q < RS * (KP - K); q += THREADS) mma_put<DT, RS, KP>(dst, q / (KP - K), K + q % (KP - K), 0u);
  }
}

// Bits of register i of an accumulator-layout A tile as the instruction reads them (zero past
// the tile's registers: the last 8-bit k step of a K that is 16 more than a multiple of 32).
template <int DT, int N, class T> __device__ __forceinline__ unsigned wg_a_bits(const T* v, int i) {
  return i < N ? mma_elem_bits<DT>(v[i]) : 0u;
}

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
  wg_smem_k<DT, K16, (K * mma_es<DT>() + 31) / 32>(acc, gemm::smem_u32(s.p), gemm::smem_u32(s.p + A_BYTES));
#else
  mma_smem<DT, true, K16, N, K16>(acc, gemm::smem_u32(s.p), gemm::smem_u32(s.p + A_BYTES));
#endif
}

// acc += a @ b (TRANS_B: a @ bᵀ) on wgmma with A from registers: a is an accumulator-layout tile
// [M, K] whose warps hold whole rows (WARPS_N == 1) and the same rows as acc; b ([K, N], or [N, K])
// is staged K-major in k-step order (wg_stage_b_ra). sm_90a only (the plan takes it there).
template <bool TRANS_B, int DT, class T, int BM, int BN, int WARPS_M, class TA, int KA, class B, int BYTES>
__device__ void wg_dot_k_ra(Tile<T, gemm::sm80::AccLayout<BM, BN, WARPS_M, 1>>& acc,
                            const Tile<TA, gemm::sm80::AccLayout<BM, KA, WARPS_M, 1>>& a, const B& b,
                            Scratch<BYTES> s) {
  typedef gemm::sm80::AccLayout<BM, KA, WARPS_M, 1> LA;
  constexpr int K = KA, N = TRANS_B ? Ext<B>::R : Ext<B>::C;
  static_assert((TRANS_B ? Ext<B>::C : Ext<B>::R) == K && BN == N, "dot: extents");
  static_assert(K % 16 == 0, "an accumulator's columns come in n8 pairs");
  constexpr int KP = wg_kp<DT, K>(), K16 = KP * mma_es<DT>() / 2;
  static_assert(mma_k_bytes<DT, N, KP>() <= BYTES, "scratch too small for dot");
  wg_stage_b_ra<DT, !TRANS_B, KP, LA::THREADS>(b, s.p);
  mma_publish();
  __syncthreads();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(BM == 16 * WARPS_M && BM % 64 == 0, "wgmma: 16 rows a warp, whole warpgroups");
  // k steps of 32 bytes that hold columns of A (the padding's steps multiply zeros).
  constexpr int STEPS = (K * mma_es<DT>() + 31) / 32;
  // Every A fragment packed before the fence: registers a wgmma reads may not be written
  // between the fence and the wgmma.
  unsigned af[STEPS][4];
#pragma unroll
  for (int kk = 0; kk < STEPS; ++kk) {
    if constexpr (mma_es<DT>() == 4) {
      // One n8 block a step: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1).
      af[kk][0] = wg_a_bits<DT, LA::N>(a.v, 4 * kk + 0);
      af[kk][1] = wg_a_bits<DT, LA::N>(a.v, 4 * kk + 2);
      af[kk][2] = wg_a_bits<DT, LA::N>(a.v, 4 * kk + 1);
      af[kk][3] = wg_a_bits<DT, LA::N>(a.v, 4 * kk + 3);
    } else {
      // Four n8 blocks a step; register j of a fragment packs blocks 4kk + 2(j / 2) + {0, 1},
      // row g (j even) or g + 8 (j odd), columns 2t, 2t + 1 of each.
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        unsigned w = 0;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int blk = 4 * kk + 2 * (j / 2) + q / 2;
          w |= (wg_a_bits<DT, LA::N>(a.v, 4 * blk + 2 * (j % 2) + q % 2) & 0xffu) << (8 * q);
        }
        af[kk][j] = w;
      }
    }
  }
  const WgStart lb = wg_lo(gemm::smem_u32(s.p));
  wg_fence_k(acc);
  gemm::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < STEPS; ++kk) WgmmaRsK<DT, BN>::run(acc.v, af[kk], wg_desc_kmajor<BN, K16>(lb, 0, kk));
  gemm::wgmma_commit();
  gemm::wgmma_wait<0>();
  wg_fence_k(acc);
#endif
}

}  // namespace ph
