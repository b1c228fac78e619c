// The epilogue of the wgmma main loop through shared memory and TMA stores: each consumer
// warpgroup writes its part of the accumulator tile, converted to C's type, into shared memory
// in the 128-byte-swizzled layout of a TMA box (conflict-free for the accumulator layout), and
// one of its threads hands the boxes to the copy engine. The warpgroup goes on (to its next
// tile's MMAs in the persistent schedule) while the copies run; out-of-bounds parts of the
// boxes are not written, so ragged tiles take the same path.
#pragma once
#include "phobos_prelude.cuh"
#include "gemm/sm90.cuh"

namespace ph {
namespace gemm {
namespace sm90 {

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

/// The staging of a tile of layout L (an AccLayout) stored as S: boxes of 64 rows (one m64
/// wgmma tile) by one 128-byte swizzle line, BOXES per consumer warpgroup, staged in ROUNDS
/// rounds of BOXES / ROUNDS boxes each (fewer rounds, more shared memory: BYTES, which includes
/// 1024 of slack for aligning the base to the swizzle atom).
template <class L, class S, int ROUNDS>
struct StoreTma {
  static constexpr int ES = (int)sizeof(S);
  static constexpr int BOX_C = 128 / ES;
  static constexpr int BOX_R = 64;
  static constexpr int BOX_BYTES = BOX_R * 128;
  static constexpr int BOXES_C = L::WGN / BOX_C;
  static constexpr int BOXES = (L::WGM / BOX_R) * BOXES_C;
  static constexpr int PER_ROUND = BOXES / ROUNDS;
  static constexpr int WG_BYTES = PER_ROUND * BOX_BYTES;
  static constexpr int BYTES = (L::CONSUMERS / 128) * WG_BYTES + 1024;
  static_assert(L::WGN % BOX_C == 0, "a warpgroup's columns are whole 128-byte box lines");
  static_assert(L::WGM % BOX_R == 0, "a warpgroup's rows are whole 64-row boxes");
  static_assert(ROUNDS >= 1 && BOXES % ROUNDS == 0, "whole boxes per round");
  static_assert(L::VEC == 2, "the wgmma accumulator holds pairs of columns");
};

/// Two register values as C's elements, packed (lower address first).
__device__ __forceinline__ u32 pack2(f16*, float a, float b) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ u32 pack2(bf16*, float a, float b) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(a), "f"(b));
  return r;
}
/// Any other 1- or 2-byte type, through the prelude's conversion (sts_pair keeps 4-byte
/// types out).
template <class S, class T>
__device__ __forceinline__ u32 pack2(S*, T a, T b) {
  const S x = Reg<S>::store(a), y = Reg<S>::store(b);
  u32 u = 0, v = 0;
  memcpy(&u, &x, sizeof(S));
  memcpy(&v, &y, sizeof(S));
  return u | (v << (8 * sizeof(S)));
}

/// Stores two register values at `at` as C's elements.
template <class S, class T>
__device__ __forceinline__ void sts_pair(u32 at, S* tag, T a, T b) {
  static_assert(sizeof(S) <= 2, "1- and 2-byte elements here; f32 has its own overload");
  if (sizeof(S) == 2)
    sts32(at, pack2(tag, a, b));
  else
    sts16(at, (unsigned short)pack2(tag, a, b));
}
__device__ __forceinline__ void sts_pair(u32 at, float*, float a, float b) {
  sts64(at, __float_as_uint(a), __float_as_uint(b));
}

/// Stores tile `t` (layout L: an AccLayout) at `g`'s origin in C through the tensor map `tmC`
/// (boxes of StoreTma::BOX_C x 64, 128-byte swizzle, C's element type) and StoreTma::BYTES of
/// shared memory at `smem`, which nothing else uses. Called by every thread of the block
/// (threads past the consumers return at once). Each consumer warpgroup stages its sub-tile in
/// ROUNDS rounds; before each, its issuing thread waits until the copies of the last round (or
/// of the last call) have read the buffer. DRAIN: the issuing threads wait until the copies are
/// complete before returning (the block may exit after this); without it
/// MainLoop::persistent_end does.
///
/// Addresses: in the AccLayout, register i of thread t is at row rt + ri, column ct + ci of
/// the warpgroup's sub-tile, with the thread's part rt = 16 w + l / 4 < 56, ct = 2 (l % 4) < 8
/// and the register's part ri = 64 mi + 8 ((j / 2) % 2), ci = 8 (j / 4) + j % 2. So the box
/// (ri / 64, ci / BOX_C), the row's swizzle phase (rt % 8) and the 16-byte chunk of a 16-bit
/// element are compile-time per register or per thread; the stores of a warp land in 8
/// different chunk columns of 8 rows: no bank conflicts.
template <bool DRAIN, int ROUNDS, class L, class S, class T>
__device__ __forceinline__ void store_tile_tma(const Region<S>& g, const Tile<T, L>& t,
                                               const TmaDesc* tmC, unsigned char* smem) {
  using ST = StoreTma<L, S, ROUNDS>;
  const int tid = opaque_tid();
  if (tid >= L::CONSUMERS) return;
  const int wg = tid / 128;
  const bool leader = tid % 128 == 0;
  const int wm = wg % L::WARPGROUPS_M, wn = wg / L::WARPGROUPS_M;
  const u32 mine = ((smem_u32(smem) + 1023u) & ~1023u) + (u32)(wg * ST::WG_BYTES);
  int rt, ct;
  L::coord(tid, 0, rt, ct);
  rt -= wm * L::WGM;  // the thread's part (see above)
  ct -= wn * L::WGN;
  const u32 row_at = mine + (u32)(rt * 128);
  const int phase = rt % 8;
#pragma unroll
  for (int round = 0; round < ROUNDS; ++round) {
    // The buffer is free once the copies that read it last are past reading it.
    if (leader) bulk_wait_read<0>();
    named_bar_sync(1 + wg, 128);
#pragma unroll
    for (int i = 0; i < L::N; i += 2) {
      int ri, ci;
      L::coord(0, i, ri, ci);  // constants: i is unrolled
      const int box = (ri / ST::BOX_R) * ST::BOXES_C + ci / ST::BOX_C;
      if (box / ST::PER_ROUND != round) continue;
      const int byte = (ci % ST::BOX_C + ct) * ST::ES;
      const u32 at = row_at + (u32)((box % ST::PER_ROUND) * ST::BOX_BYTES + (ri % 64) * 128 +
                                    (((byte / 16) ^ phase) * 16) + byte % 16);
      sts_pair(at, (S*)nullptr, t.v[i], t.v[i + 1]);
    }
    // Generic-proxy writes, then the copy engine reads them.
    fence_proxy_async();
    named_bar_sync(1 + wg, 128);
    if (leader) {
      if (g.ok) {
#pragma unroll
        for (int b = round * ST::PER_ROUND; b < (round + 1) * ST::PER_ROUND; ++b)
          tma_store_2d(tmC, mine + (u32)((b % ST::PER_ROUND) * ST::BOX_BYTES),
                       g.c0 + wn * L::WGN + (b % ST::BOXES_C) * ST::BOX_C,
                       g.r0 + wm * L::WGM + (b / ST::BOXES_C) * ST::BOX_R);
      }
      bulk_commit();
    }
  }
  if (DRAIN && leader) bulk_wait<0>();
}

#endif  // CUDA

}  // namespace sm90
}  // namespace gemm
}  // namespace ph
