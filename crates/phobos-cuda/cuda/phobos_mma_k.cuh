// phobos_mma_k.cuh: dots outside a recognized GEMM loop on tensor cores through K-major staging,
// for every operand type mma.sync takes and any K: tf32 (m16n8k8), f8e4m3 / f8e5m2 (m16n8k32,
// sm_89 and later), i8 / u8 (m16n8k32, i32 accumulators), and f16 / bf16 when K is not a multiple
// of 16 (phobos_mma.cuh's mma_dot takes the others).
//
// One mma k step is 32 bytes of K for every type (16 x 2, 8 x 4, 32 x 1), and with both operands
// K-major the fragments of every type are those ldmatrix gives for 16-bit data (the GEMM main
// loop's rule, gemm/sm80.cuh): so both operands are staged K-major — A as [M, KP], B as [N, KP]
// (dot's [K, N] operand transposed while it is staged) — in the 16-bit staged form of
// phobos_mma.cuh over their bytes ([R, KP * ES / 2] 16-bit units), with KP the K rounded up to the
// instruction's k and zeros in the columns past K. Then mma_smem runs as for 16-bit operands.
#pragma once
#include "phobos_mma.cuh"

namespace ph {

// Bytes of one staged element of operand type DT.
template <int DT> __host__ __device__ constexpr int mma_es() {
  return (DT == gemm::F16 || DT == gemm::BF16) ? 2 : DT == gemm::TF32 ? 4 : 1;
}
// K rounded up to the instruction's k (32 bytes of K).
template <int DT, int K> __host__ __device__ constexpr int mma_kp() {
  return (K * mma_es<DT>() + 31) / 32 * 32 / mma_es<DT>();
}

// A register value (or a loaded element's register value) as the bits the instruction reads:
// f16 / bf16 / fp8 rounded to nearest (values already of the type are kept), f32 to TF32 to
// nearest with ties away from zero (cvt.rna, as the interpreter rounds), integers as bytes.
template <int DT> __device__ __forceinline__ unsigned mma_elem_bits(float x) {
  if constexpr (DT == gemm::F16) return f32_to_f16(x);
  if constexpr (DT == gemm::BF16) return f32_to_bf16(x);
  if constexpr (DT == gemm::F8E4M3) return f32_to_e4m3(x);
  if constexpr (DT == gemm::F8E5M2) return f32_to_e5m2(x);
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
template <int DT> __device__ __forceinline__ unsigned mma_elem_bits(signed char x) { return (unsigned char)x; }
template <int DT> __device__ __forceinline__ unsigned mma_elem_bits(unsigned char x) { return x; }

// Writes element (r, k) of a K-major [R, KP] tile staged at dst.
template <int DT, int R, int KP> __device__ __forceinline__ void mma_put(unsigned char* dst, int r, int k, unsigned bits) {
  constexpr int ES = mma_es<DT>();
  const int byte = k * ES;
  unsigned char* p = dst + mma_off<R, KP * ES / 2>(r, byte / 2) + byte % 2;
  if constexpr (ES == 4) *reinterpret_cast<unsigned*>(p) = bits;
  else if constexpr (ES == 2) *reinterpret_cast<unsigned short*>(p) = (unsigned short)bits;
  else *p = (unsigned char)bits;
}

// Stages operand x ([R, C], or its transpose when TRANS) into dst as the K-major [RS, KP] tile
// (RS, K: the staged rows and inner extent), zeros in columns K..KP, by the block's THREADS.
template <int DT, bool TRANS, int KP, int THREADS, class T, class L>
__device__ __forceinline__ void mma_stage_k(const Tile<T, L>& t, unsigned char* dst) {
  constexpr int RS = TRANS ? L::C : L::R, K = TRANS ? L::R : L::C;
  const int tid = threadIdx.x;
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(tid, i, r, c);
    if (in_tile<L>(r, c)) mma_put<DT, RS, KP>(dst, TRANS ? c : r, TRANS ? r : c, mma_elem_bits<DT>(t.v[i]));
  }
  if constexpr (KP != K) {
    for (int q = tid; q < RS * (KP - K); q += THREADS) mma_put<DT, RS, KP>(dst, q / (KP - K), K + q % (KP - K), 0u);
  }
}
template <int DT, bool TRANS, int KP, int THREADS, int R, int C, class S>
__device__ __forceinline__ void mma_stage_k(const GTile<R, C, S>& t, unsigned char* dst) {
  constexpr int RS = TRANS ? C : R, K = TRANS ? R : C;
  const Region<const S>& g = t.g;
  // Consecutive threads take consecutive elements of the operand's rows (its own layout), so
  // that the global reads of a warp fall on consecutive addresses.
  for (int q = threadIdx.x; q < R * C; q += THREADS) {
    const int r = q / C, c = q % C;
    const unsigned bits = in_bounds(g, r, c) ? mma_elem_bits<DT>(Reg<S>::load(*elem_ptr(g, r, c))) : 0u;
    mma_put<DT, RS, KP>(dst, TRANS ? c : r, TRANS ? r : c, bits);
  }
  if constexpr (KP != K) {
    for (int q = threadIdx.x; q < RS * (KP - K); q += THREADS) mma_put<DT, RS, KP>(dst, q / (KP - K), K + q % (KP - K), 0u);
  }
}

// Scratch bytes of a K-major staged [R, KP] operand of type DT.
template <int DT, int R, int KP> __host__ __device__ constexpr int mma_k_bytes() {
  return mma_staged_bytes<R, KP * mma_es<DT>() / 2>();
}

// acc += a @ b (TRANS_B: a @ bᵀ) on mma.sync over operands staged K-major in the scratch area:
// a [M, K], b [K, N] (or [N, K]), each a register tile in any layout or a GTile; acc's elements
// are float, or int for I8 / MMA_U8.
template <bool TRANS_B, int DT, class T, class Acc, class A, class B, int BYTES>
__device__ void mma_dot_k(Tile<T, Acc>& acc, const A& a, const B& b, Scratch<BYTES> s) {
  constexpr int M = Ext<A>::R, K = Ext<A>::C, N = TRANS_B ? Ext<B>::R : Ext<B>::C;
  static_assert((TRANS_B ? Ext<B>::C : Ext<B>::R) == K, "dot: inner extents differ");
  static_assert(Acc::R == M && Acc::C == N, "dot: accumulator shape");
  constexpr int KP = mma_kp<DT, K>(), K16 = KP * mma_es<DT>() / 2;
  constexpr int A_BYTES = mma_k_bytes<DT, M, KP>();
  static_assert(A_BYTES + mma_k_bytes<DT, N, KP>() <= BYTES, "scratch too small for dot");
  mma_stage_k<DT, false, KP, Acc::THREADS>(a, s.p);
  mma_stage_k<DT, !TRANS_B, KP, Acc::THREADS>(b, s.p + A_BYTES);
  __syncthreads();
  mma_smem<DT, true, K16, N, K16>(acc, gemm::smem_u32(s.p), gemm::smem_u32(s.p + A_BYTES));
}

}  // namespace ph
