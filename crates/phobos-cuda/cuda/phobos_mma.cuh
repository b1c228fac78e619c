// phobos_mma.cuh: `dot` outside a recognized GEMM loop on tensor cores. mma.sync m16n8k16 with
// f16 or bf16 operands and f32 accumulators, for any dot whose shapes fit (attention's Q Kᵀ and
// P V, dots after other statements, several dots a kernel). Included when a kernel has one.
//
// The accumulator is the mma.sync main loop's layout, ph::gemm::sm80::AccLayout<BM, BN, WARPS_M,
// WARPS_N>; it follows the layout contract, so elementwise code, casts, `where`, stores and
// conversions take it as they take any layout. Two things make attention-like code stay in
// registers:
//   - MmaRows<BM, WARPS_M, WARPS_N>: a [BM, 1] tile laid out as the rows of such accumulators.
//     A row reduction of an accumulator lands in it (two quad shuffles, shared memory only
//     across warp columns), and a broadcast of it to an accumulator of the same rows reads a
//     register (mma_row_reg).
//   - mma_dot_ra: when the A operand is itself an accumulator whose warps hold whole rows
//     (WARPS_N == 1), its registers are the A fragments of the next mma (FlashAttention-2's
//     P·V): only B goes through shared memory.
#pragma once
#include "phobos_prelude.cuh"
#include "phobos_reduce.cuh"
#include "gemm/sm80.cuh"
#include "gemm/sm90.cuh"

namespace ph {

// [BM, 1] rows of the accumulators AccLayout<BM, *, WARPS_M, WARPS_N>. Thread t holds the 2 * MI
// rows its accumulator registers lie in: register j = 2 * mi + h is row wm * WM + 16 * mi +
// lane / 4 + 8 * h (warp w at (w % WARPS_M, w / WARPS_M), as in AccLayout). Every row is held by
// the 4 lanes of a quad in each of the WARPS_N warps of its warp row: REPLICATED, and the copy in
// lane % 4 == 0 of warp column 0 is the one stores and reductions count (owns).
template <int BM, int WARPS_M, int WARPS_N> struct MmaRows {
  static constexpr int R = BM, C = 1, THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WM = BM / WARPS_M, MI = WM / 16, N = 2 * MI, VEC = 1;
  static constexpr bool REPLICATED = true;
  static_assert(WM % 16 == 0, "rows of a warp come in m16 fragments");
  __device__ static void coord(int tid, int j, int& r, int& c) {
    const int warp = tid / 32, lane = tid % 32;
    r = (warp % WARPS_M) * WM + (j / 2) * 16 + lane / 4 + 8 * (j % 2);
    c = 0;
  }
  __device__ static bool owns(int tid, int) { return tid % 4 == 0 && (tid / 32) / WARPS_M == 0; }
};

// The MmaRows register holding the row of accumulator register i (a constant when i is).
template <class Acc> __host__ __device__ constexpr int mma_row_reg(int i) {
  return (i / 4 / Acc::NI) * 2 + (i % 4) / 2;
}

// Row reductions of an accumulator into its rows: per-thread partials over each row's registers,
// then a butterfly over the quad (lanes sharing lane / 4). Across warp columns (WARPS_N > 1) the
// quad totals meet in shared memory: WARPS_N * BM partials.
template <class T, int BM, int WARPS_N> __host__ __device__ constexpr int mma_rows_bytes() {
  return WARPS_N > 1 ? (WARPS_N * BM * (int)sizeof(T) + 15) / 16 * 16 : 0;
}

template <class Op, class Lout, class T, int BM, int BN, int WARPS_M, int WARPS_N>
__device__ __forceinline__ Tile<T, Lout> mma_rows_partial(const Tile<T, gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N>>& x) {
  typedef gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N> L;
  static_assert(Lout::R == BM && Lout::N == 2 * L::MI && Lout::THREADS == L::THREADS, "rows of another accumulator");
  Tile<T, Lout> out;
#pragma unroll
  for (int j = 0; j < Lout::N; ++j) out.v[j] = Op::template id<T>();
#pragma unroll
  for (int i = 0; i < L::N; ++i) out.v[mma_row_reg<L>(i)] = Op::op(out.v[mma_row_reg<L>(i)], x.v[i]);
#pragma unroll
  for (int j = 0; j < Lout::N; ++j) {
    out.v[j] = Op::op(out.v[j], shfl_xor(out.v[j], 1));
    out.v[j] = Op::op(out.v[j], shfl_xor(out.v[j], 2));
  }
  return out;
}

// WARPS_N == 1: every row lies in one warp, nothing goes through shared memory.
template <class Op, class Lout, class T, int BM, int BN, int WARPS_M>
__device__ __forceinline__ Tile<T, Lout> mma_reduce_rows(const Tile<T, gemm::sm80::AccLayout<BM, BN, WARPS_M, 1>>& x) {
  return mma_rows_partial<Op, Lout>(x);
}

template <class Op, class Lout, class T, int BM, int BN, int WARPS_M, int WARPS_N, int BYTES>
__device__ Tile<T, Lout> mma_reduce_rows(const Tile<T, gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N>>& x, Scratch<BYTES> s) {
  static_assert(mma_rows_bytes<T, BM, WARPS_N>() <= BYTES, "scratch too small for the row partials");
  Tile<T, Lout> out = mma_rows_partial<Op, Lout>(x);
  T* part = reinterpret_cast<T*>(s.p);
  const int tid = threadIdx.x, wn = (tid / 32) / WARPS_M;
  if (tid % 4 == 0) {
#pragma unroll
    for (int j = 0; j < Lout::N; ++j) {
      int r, c;
      Lout::coord(tid, j, r, c);
      part[wn * BM + r] = out.v[j];
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < Lout::N; ++j) {
    int r, c;
    Lout::coord(tid, j, r, c);
    T acc = Op::template id<T>();
#pragma unroll
    for (int w = 0; w < WARPS_N; ++w) acc = Op::op(acc, part[w * BM + r]);
    out.v[j] = acc;
  }
  return out;
}

// ---- dots ---------------------------------------------------------------------------------------

// Float register (already rounded to its 16-bit type) to the type's bits.
template <int DT> __device__ __forceinline__ unsigned short mma_bits(float x);
template <> __device__ __forceinline__ unsigned short mma_bits<gemm::F16>(float x) { return f32_to_f16(x); }
template <> __device__ __forceinline__ unsigned short mma_bits<gemm::BF16>(float x) { return f32_to_bf16(x); }
template <int DT> __device__ __forceinline__ unsigned mma_pack(float lo, float hi) {
  return (unsigned)mma_bits<DT>(lo) | ((unsigned)mma_bits<DT>(hi) << 16);
}

// The staged form of a 16-bit [R, C] operand in shared memory (every staged buffer starts on a
// 1024-byte boundary and takes a multiple of 1024 bytes: mma_staged_bytes):
//   - C a multiple of 64 and R of 8 (swizzled): C / 64 slabs of R lines of 128 bytes (64
//     elements); the 16-byte chunk q of line r lies at chunk q ^ (r % 8) of its line. This is
//     the 128-byte swizzle wgmma reads through its descriptors, and ldmatrix reads it without
//     bank conflicts (its 8 rows of a chunk column fall in 8 different chunks).
//   - otherwise (padded): row-major with row stride C + 8 elements, the 8 bytes of padding
//     putting the 8 rows an ldmatrix reads in 8 different 16-byte bank groups.
template <int R, int C> __host__ __device__ constexpr bool mma_swizzled() { return C % 64 == 0 && R % 8 == 0; }
template <int R, int C> __host__ __device__ constexpr int mma_staged_bytes() {
  return ((mma_swizzled<R, C>() ? R * C * 2 : R * (C + 8) * 2) + 1023) / 1024 * 1024;
}
// Byte offset of element (r, c) in the staged form; for c % 8 == 0, the start of 8 contiguous
// elements (one 16-byte chunk).
template <int R, int C> __device__ __forceinline__ int mma_off(int r, int c) {
  if (mma_swizzled<R, C>()) return (c / 64) * (R * 128) + r * 128 + ((((c % 64) / 8) ^ (r % 8)) * 16) + (c % 8) * 2;
  return 2 * (r * (C + 8) + c);
}
// Copies of staged operands made by this thread (cp.async or stores) become visible to the
// tensor cores' own reads (wgmma, the async proxy) once the block's next barrier is passed: the
// proxy fence goes before that barrier. Nothing on sm_80.
__device__ __forceinline__ void mma_publish() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  gemm::fence_proxy_async();
#endif
}

// An operand read straight from global memory into shared memory (a dot of a tile load): the
// [R, C] tile of region g, zeros outside it.
template <int R_, int C_, class S> struct GTile {
  static constexpr int R = R_, C = C_;
  Region<const S> g;
};
template <int R, int C, class S> __device__ __forceinline__ GTile<R, C, S> gtile(const Region<const S>& g) {
  return GTile<R, C, S>{g};
}
// An operand already in shared memory in the staged form (mma_off): a tile a loop prefetched
// (mma_prefetch) while the previous iteration computed, or a resident one.
template <int R_, int C_> struct STile {
  static constexpr int R = R_, C = C_;
  unsigned short* p;
};
template <int R, int C> __device__ __forceinline__ STile<R, C> stile(unsigned char* p) {
  return STile<R, C>{reinterpret_cast<unsigned short*>(p)};
}
template <class X> struct IsStaged { static constexpr bool value = false; };
template <int R, int C> struct IsStaged<STile<R, C>> { static constexpr bool value = true; };

// Extents of an operand: a register tile, a GTile or an STile.
template <class X> struct Ext;
template <class T, class L> struct Ext<Tile<T, L>> { static constexpr int R = L::R, C = L::C; };
template <int R_, int C_, class S> struct Ext<GTile<R_, C_, S>> { static constexpr int R = R_, C = C_; };
template <int R_, int C_> struct Ext<STile<R_, C_>> { static constexpr int R = R_, C = C_; };

// Writes tile t (any layout, f16/bf16 values in float registers) into dst in the staged form,
// a layout's VEC group of consecutive columns as one store of up to 16 bytes.
template <int DT, int THREADS, class L> __device__ __forceinline__ void mma_stage(const Tile<float, L>& t, unsigned short* dst) {
  constexpr int V = L::VEC >= 8 ? 8 : (L::VEC >= 4 ? 4 : (L::VEC >= 2 ? 2 : 1));
  static_assert(L::VEC % V == 0, "vector groups");
  typedef typename VecT<2 * V>::T W;
  const int tid = threadIdx.x;
#pragma unroll
  for (int i = 0; i < L::N; i += V) {
    int r, c;
    L::coord(tid, i, r, c);
    if (in_tile<L>(r, c)) {
      unsigned short h[V];
#pragma unroll
      for (int v = 0; v < V; ++v) h[v] = mma_bits<DT>(t.v[i + v]);
      W w;
      memcpy(&w, h, sizeof(W));
      *reinterpret_cast<W*>(reinterpret_cast<unsigned char*>(dst) + mma_off<L::R, L::C>(r, c)) = w;
    }
  }
}

// Copies the [R, C] tile of global region g (16-bit elements) into dst in the staged form, by
// the block's THREADS threads: 16 bytes a copy where the rows are contiguous and 16-byte aligned
// (whole groups inside the tensor), element by element at ragged edges; zeros outside.
template <int DT, int THREADS, int R, int C, class S> __device__ __forceinline__ void mma_stage(const GTile<R, C, S>& t, unsigned short* dst) {
  static_assert(sizeof(S) == 2, "16-bit operands");
  const Region<const S>& g = t.g;
  const int tid = threadIdx.x;
  const bool vec = C % 8 == 0 && g.cs == 1 && g.rs % 8 == 0 && g.c0 % 8 == 0 &&
                   (reinterpret_cast<unsigned long long>(g.p) & 15) == 0;
  if (vec) {
    constexpr int G = R * C / 8, PER = (G + THREADS - 1) / THREADS;
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const int q = tid + j * THREADS;
      if (G % THREADS != 0 && q >= G) break;
      const int r = q / (C / 8), c = q % (C / 8) * 8;
      uint4 x = make_uint4(0, 0, 0, 0);
      if (in_bounds(g, r, c) && in_bounds(g, r, c + 7)) {
        x = *reinterpret_cast<const uint4*>(elem_ptr(g, r, c));
      } else {
        unsigned short h[8];
#pragma unroll
        for (int v = 0; v < 8; ++v) h[v] = in_bounds(g, r, c + v) ? elem_ptr(g, r, c + v)->bits : (unsigned short)0;
        memcpy(&x, h, 16);
      }
      *reinterpret_cast<uint4*>(reinterpret_cast<unsigned char*>(dst) + mma_off<R, C>(r, c)) = x;
    }
  } else {
    for (int q = tid; q < R * C; q += THREADS) {
      const int r = q / C, c = q % C;
      *reinterpret_cast<unsigned short*>(reinterpret_cast<unsigned char*>(dst) + mma_off<R, C>(r, c)) =
          in_bounds(g, r, c) ? elem_ptr(g, r, c)->bits : (unsigned short)0;
    }
  }
}

// Issues cp.async copies of the [R, C] tile of global region g into dst in the staged form,
// zero-filled outside the tensor: 16 bytes a copy where rows are contiguous and 16-byte aligned,
// else plain element stores. The caller commits, waits, publishes (mma_publish) and
// synchronizes.
template <int R, int C, int THREADS, class S> __device__ __forceinline__ void mma_prefetch(const Region<const S>& g, unsigned char* dst) {
  static_assert(sizeof(S) == 2, "16-bit operands");
  const int tid = threadIdx.x;
  const bool vec = C % 8 == 0 && g.cs == 1 && g.rs % 8 == 0 && g.c0 % 8 == 0 &&
                   (reinterpret_cast<unsigned long long>(g.p) & 15) == 0;
  // Block-uniform: the whole tile inside the tensor (every tile of a loop over it but a ragged
  // last one). Then each thread's copies are its own offsets from the tile's first element,
  // which do not change from one tile to the next: no per-copy test or byte count.
  // The offsets are 32-bit byte counts (rows up to 2^31 / (2 R) elements apart).
  const bool full = g.ok && g.r0 >= 0 && g.c0 >= 0 && (long long)g.r0 + R <= g.rn &&
                    (long long)g.c0 + C <= g.cn && g.rs <= 0x3fffffffLL / R;
  if (vec && full) {
    constexpr int G = R * C / 8, PER = (G + THREADS - 1) / THREADS;
    const unsigned base = gemm::smem_u32(dst);
    const unsigned char* first = reinterpret_cast<const unsigned char*>(elem_ptr(g, 0, 0));
    const unsigned rs = (unsigned)g.rs * 2u;
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const int q = tid + j * THREADS;
      if (G % THREADS != 0 && q >= G) break;
      const int r = q / (C / 8), c = q % (C / 8) * 8;
      gemm::cp_async16(base + mma_off<R, C>(r, c), first + ((unsigned)r * rs + (unsigned)c * 2u), 16);
    }
  } else if (vec) {
    constexpr int G = R * C / 8, PER = (G + THREADS - 1) / THREADS;
    const unsigned base = gemm::smem_u32(dst);
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const int q = tid + j * THREADS;
      if (G % THREADS != 0 && q >= G) break;
      const int r = q / (C / 8), c = q % (C / 8) * 8;
      int bytes = 0;
      if (in_bounds(g, r, c)) {
        const int left = (g.cn - (g.c0 + c)) * 2;
        bytes = left < 16 ? left : 16;
      }
      // A zero-byte copy still needs a mapped address: the region's base is one.
      gemm::cp_async16(base + mma_off<R, C>(r, c), bytes > 0 ? (const void*)elem_ptr(g, r, c) : (const void*)g.p, bytes);
    }
  } else {
    for (int q = tid; q < R * C; q += THREADS) {
      const int r = q / C, c = q % C;
      *reinterpret_cast<unsigned short*>(dst + mma_off<R, C>(r, c)) = in_bounds(g, r, c) ? elem_ptr(g, r, c)->bits : (unsigned short)0;
    }
  }
}

// Zeroes BYTES bytes (a multiple of 16) at dst, 16 bytes a store, by the block's THREADS
// threads. The caller publishes (mma_publish) and synchronizes before the tensor cores read them.
template <int THREADS> __device__ __forceinline__ void mma_zero(unsigned char* dst, int bytes) {
  for (int q = threadIdx.x; q < bytes / 16; q += THREADS) reinterpret_cast<uint4*>(dst)[q] = make_uint4(0, 0, 0, 0);
}

// A tile read back from its staged form into registers of layout L (a shared-memory resident
// operand used where no dot reads it in place).
template <class L, int DT, int R, int C> __device__ Tile<float, L> mma_unstage(const STile<R, C>& t) {
  static_assert(L::R == R && L::C == C, "unstage: shape");
  Tile<float, L> out;
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(threadIdx.x, i, r, c);
    const unsigned short b = in_tile<L>(r, c) ? *reinterpret_cast<const unsigned short*>(reinterpret_cast<const unsigned char*>(t.p) + mma_off<R, C>(r, c)) : (unsigned short)0;
    out.v[i] = DT == gemm::BF16 ? bf16_to_f32(b) : f16_to_f32(b);
  }
  return out;
}

// Where an operand lies staged: a prefetched STile where it is, anything else staged into dst.
template <int DT, int THREADS, class X> __device__ __forceinline__ unsigned short* mma_place(const X& x, unsigned short* dst) {
  mma_stage<DT, THREADS>(x, dst);
  return dst;
}
template <int DT, int THREADS, int R, int C> __device__ __forceinline__ unsigned short* mma_place(const STile<R, C>& x, unsigned short*) {
  return x.p;
}
// Scratch bytes an operand takes: none when it is already staged.
template <class X> __host__ __device__ constexpr int mma_scratch_bytes() {
  return IsStaged<X>::value ? 0 : mma_staged_bytes<Ext<X>::R, Ext<X>::C>();
}

// The mma.sync of operand type DT (gemm::Mma, and u8 operands, which the GEMM headers' types
// lack): m16n8k16 for f16 / bf16, m16n8k8 for tf32, m16n8k32 for 8-bit types; float
// accumulators, int for the integer types.
constexpr int MMA_U8 = 7;
template <int DT> struct MmaOp : gemm::Mma<DT> {};
template <> struct MmaOp<MMA_U8> {
  static constexpr int K = 32;
  __device__ __forceinline__ static void run(int* d, const unsigned* a, const unsigned* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

// One k step of 16 for a warp: the B fragments of its NI n8 blocks from column n0 on (B staged
// at shared address sb as an [RB, CB] tile: [N, K] when B_NK, else [K, N] read with
// ldmatrix.trans), then the MI x NI mma.sync with the A fragments af into acc (the
// accumulator's registers, fragment (mi, ni) at 4 * (mi * NI + ni)).
// K-major operands of any type read the same way: k steps of 32 bytes, K in 16-bit units.
template <int DT, bool B_NK, int RB, int CB, int MI, int NI, class T>
__device__ __forceinline__ void mma_k_step(T* acc, const unsigned (&af)[MI][4], unsigned sb, int kk, int n0) {
  const int lane = threadIdx.x % 32;
  const int l8 = lane & 7, lb3 = (lane >> 3) & 1, lb4 = lane >> 4;
  unsigned bf[NI][2];
#pragma unroll
  for (int nj = 0; nj < NI / 2; ++nj) {
    const int ncol = n0 + nj * 16;
    if (B_NK) {
      const int row = ncol + l8 + 8 * lb4;
      gemm::ldsm_x4(sb + mma_off<RB, CB>(row, kk * 16 + 8 * lb3), bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0], bf[2 * nj + 1][1]);
    } else {
      const int kline = kk * 16 + l8 + 8 * lb3;
      gemm::ldsm_x4_t(sb + mma_off<RB, CB>(kline, ncol + 8 * lb4), bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0], bf[2 * nj + 1][1]);
    }
  }
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) MmaOp<DT>::run(acc + (mi * NI + ni) * 4, af[mi], bf[ni]);
}

// acc += A · B over K for A staged [BM, K] at shared address sa and B staged at sb as an
// [RB, CB] tile ([N, K] when B_NK: dot_t's operand; else [K, N], read with ldmatrix.trans).
// Each warp computes its accumulator tile; fragments come by ldmatrix as in the mma.sync main
// loop.
template <int DT, bool B_NK, int K, int RB, int CB, class T, int BM, int BN, int WARPS_M, int WARPS_N>
__device__ __forceinline__ void mma_smem(Tile<T, gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N>>& acc, unsigned sa, unsigned sb) {
  typedef gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N> L;
  static_assert(K % 16 == 0, "dot on tensor cores: K is a multiple of 16");
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm = warp % WARPS_M, wn = warp / WARPS_M;
  const int l8 = lane & 7, lb3 = (lane >> 3) & 1, lb4 = lane >> 4;
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    unsigned af[L::MI][4];
#pragma unroll
    for (int mi = 0; mi < L::MI; ++mi) {
      const int row = wm * L::WM + mi * 16 + l8 + 8 * lb3;
      gemm::ldsm_x4(sa + mma_off<BM, K>(row, kk * 16 + 8 * lb4), af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
    }
    mma_k_step<DT, B_NK, RB, CB, L::MI, L::NI>(acc.v, af, sb, kk, wn * L::WN);
  }
}

// ---- wgmma (sm_90a) ---------------------------------------------------------------------------
// The plan takes wgmma for a dot (template argument WG of mma_dot / mma_dot_ra) when its
// accumulator gives each warp 16 whole rows (WARPS_N == 1, BM == 16 * WARPS_M): then warp w's
// registers are exactly those of warp w % 4 of warpgroup w / 4 running wgmma m64nBNk16 on rows
// 64 * (w / 4) on (register i: n8 block i / 4, row + 8 * ((i / 2) % 2), column + i % 2), and
// every staged operand is in the swizzled form. A warpgroup multiplies its 64 rows with both
// operands read from shared memory through descriptors, or with A from registers (the P·V of
// attention). The dot waits for its wgmma before returning, unless ASYNC: then it only issues
// the wgmma (not even committed: the caller commits, so that a skipped issue still commits an
// empty group and the group counts stay uniform), and the caller waits for it with wg_wait
// before reading the accumulator (the plan's overlapped loops, plan/overlap.rs).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Descriptors are block-uniform arithmetic (wgmma reads them from uniform registers): the
// 14-bit start field of a staged tile's base, (addr & 0x3FFFF) >> 4, is computed once a dot
// (wg_lo), and each k step's descriptor adds a compile-time offset (16-byte units) to it and
// ORs the compile-time leading / stride byte offsets and the 128-byte swizzle mode (wg_desc).
// Shared addresses stay below 2^18, so the offset never carries out of the field; no thread
// index enters (the warpgroup's first row is wg_row0), and ptxas keeps the whole chain in
// uniform registers.
// The start field is its own type, so that a shared address cannot be passed where a descriptor
// helper expects the field (both are 32-bit integers).
struct WgStart {
  unsigned field;
};
__device__ __forceinline__ WgStart wg_lo(unsigned addr) { return WgStart{(addr & 0x3FFFF) >> 4}; }
template <unsigned LBO, unsigned SBO> __device__ __forceinline__ unsigned long long wg_desc(WgStart lo, unsigned off) {
  // lo < 2^14 and the leading byte offset's field starts at bit 16: adding it is ORing it, and
  // the compile-time parts fold into one constant, one add a k step.
  constexpr unsigned LO_CONST = ((LBO & 0x3FFFF) >> 4) << 16;
  constexpr unsigned long long HI = ((unsigned long long)((SBO & 0x3FFFF) >> 4) << 32) | (1ull << 62);
  return (unsigned long long)(lo.field + ((off >> 4) + LO_CONST)) | HI;
}
// The first of the 64 rows of the calling thread's warpgroup in a BM-row accumulator: a
// constant with one warpgroup, else the warpgroup index taken from lane 0 (__shfl_sync makes it
// provably warp-uniform, so descriptors built on it stay in uniform registers).
template <int BM> __device__ __forceinline__ int wg_row0() {
  if constexpr (BM == 64) {
    return 0;
  } else {
    return __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0) * 64;
  }
}
// Byte offset, from a K-major staged [R, KD] tile's base, of the 64-row (A) or whole (B) slab
// from row row0 at k step kk: kk * 32 bytes into the 128-byte lines of slab kk / 4.
template <int R, int KD> __host__ __device__ constexpr unsigned wg_off_kmajor(int row0, int kk) {
  return (unsigned)((kk * 32 / 128) * (R * 128) + row0 * 128 + (kk * 32 % 128));
}
// Descriptor of a K-major staged [R, KD] tile (lo: wg_lo of its base) from row row0 at step kk.
template <int R, int KD> __device__ __forceinline__ unsigned long long wg_desc_kmajor(WgStart lo, int row0, int kk) {
  static_assert(mma_swizzled<R, KD>(), "wgmma reads the swizzled form");
  return wg_desc<16, 1024>(lo, wg_off_kmajor<R, KD>(row0, kk));
}
// Descriptor of the N-major staged [KD, N] tile (dot's [K, N] operand) at k step kk: 16 lines
// of the slabs, slab to slab KD * 128 bytes apart.
template <int KD, int N> __device__ __forceinline__ unsigned long long wg_desc_nmajor(WgStart lo, int kk) {
  static_assert(mma_swizzled<KD, N>(), "wgmma reads the swizzled form");
  return wg_desc<KD * 128, 1024>(lo, (unsigned)(kk * 16 * 128));
}
// The B descriptor at k step kk: dot_t's [N, K] operand (K-major) or dot's [K, N] (N-major).
template <bool B_NK, int K, int N> __device__ __forceinline__ unsigned long long wg_desc_b(WgStart lo, int kk) {
  if constexpr (B_NK) {
    return wg_desc_kmajor<N, K>(lo, 0, kk);
  } else {
    return wg_desc_nmajor<K, N>(lo, kk);
  }
}
// The accumulator's registers pinned: no read or write of them moves across this point.
template <class L> __device__ __forceinline__ void wg_fence_tile(Tile<float, L>& t) {
#pragma unroll
  for (int i = 0; i < L::N; ++i) gemm::reg_fence(t.v[i]);
}
template <int DT, bool B_NK, int K, bool ASYNC = false, int BM, int BN, int WARPS_M>
__device__ __forceinline__ void wg_smem(Tile<float, gemm::sm80::AccLayout<BM, BN, WARPS_M, 1>>& acc, unsigned sa, unsigned sb) {
  static_assert(BM == 16 * WARPS_M && BM % 64 == 0, "wgmma: 16 rows a warp, whole warpgroups");
  const int row0 = wg_row0<BM>();
  const WgStart la = wg_lo(sa), lb = wg_lo(sb);
  wg_fence_tile(acc);
  gemm::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    gemm::sm90::Wgmma<DT, BN, 0, B_NK ? 0 : 1>::run(acc.v, wg_desc_kmajor<BM, K>(la, row0, kk), wg_desc_b<B_NK, K, BN>(lb, kk));
  }
  if constexpr (!ASYNC) {
    gemm::wgmma_commit();
    gemm::wgmma_wait<0>();
  }
  wg_fence_tile(acc);
}
#endif

// Waits until at most N of this warpgroup's committed wgmma groups are pending (the groups
// complete in order), then pins acc's registers so that no read of them moves above the wait.
template <int N, class L> __device__ __forceinline__ void wg_wait(Tile<float, L>& acc) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  gemm::wgmma_wait<N>();
  wg_fence_tile(acc);
#endif
}
// A CTA memory fence (MEMBAR.ALL.CTA) that ptxas does not move a wgmma.wait_group above: put
// before an overlapped loop's wait for its deferred product (OVERLAP=2), it keeps the work in
// between (the softmax) overlapped with that product, where ptxas would otherwise hoist the
// wait to the first instruction it can. Orders this thread's memory accesses, nothing else.
__device__ __forceinline__ void wg_wait_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("fence.acq_rel.cta;" ::: "memory");
#endif
}
// Commits the wgmma issued since the last commit as one group (an empty group when none).
__device__ __forceinline__ void wg_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  gemm::wgmma_commit();
#endif
}

// FA3's ping-pong of two warpgroups (PINGPONG=1) on named barriers B (warpgroup 0's) and B + 1
// (warpgroup 1's), 256 threads each: a warpgroup waits on its own barrier before issuing its
// products (pp_turn) and arrives on the other's after issuing them (pp_pass), so the warpgroups
// issue in turn. pp_begin (before the loop) lets warpgroup 0 go first; pp_end (after it) takes
// warpgroup 1's last arrival, so that each barrier completes as often as it is reached. The
// warpgroup index is lane 0's, uniform in the warp as bar.sync needs.
__device__ __forceinline__ int pp_warpgroup() {
  return __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);
}
template <int B>
__device__ __forceinline__ void pp_begin() {
  if (pp_warpgroup() == 1) asm volatile("bar.arrive %0, 256;" ::"n"(B) : "memory");
}
template <int B>
__device__ __forceinline__ void pp_turn() {
  asm volatile("bar.sync %0, 256;" ::"r"(B + pp_warpgroup()) : "memory");
}
template <int B>
__device__ __forceinline__ void pp_pass() {
  asm volatile("bar.arrive %0, 256;" ::"r"(B + 1 - pp_warpgroup()) : "memory");
}
template <int B>
__device__ __forceinline__ void pp_end() {
  if (pp_warpgroup() == 0) asm volatile("bar.sync %0, 256;" ::"n"(B) : "memory");
}

// The mbarrier ring of an overlapped loop's streamed buffers (RING=1): bars[s] is buffer s's
// "full" barrier, bars[S + s] its "empty" one, each completed by the arrivals of all THREADS
// threads. ring_init (thread 0; the caller synchronizes the block before any arrival) sets them
// up; ring_copied arrives on a full barrier for the calling thread's copies: cp.async.mbarrier.
// arrive (a pending arrival, made when the thread's earlier cp.async have landed) and an
// ordinary arrive (release: the plain stores of mma_prefetch's unaligned path), THREADS in all;
// ring_wait waits for the phase of the given parity; ring_release arrives on an empty barrier.
template <int S, int THREADS>
__device__ __forceinline__ void ring_init(unsigned long long* bars) {
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < 2 * S; ++s) gemm::mbar_init(gemm::smem_u32(bars + s), THREADS);
  }
}
__device__ __forceinline__ void ring_copied(unsigned long long* bar) {
  const unsigned b = gemm::smem_u32(bar);
  asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];\n" ::"r"(b) : "memory");
  gemm::mbar_arrive(b);
}
__device__ __forceinline__ void ring_wait(unsigned long long* bar, int parity) {
  gemm::mbar_wait(gemm::smem_u32(bar), (unsigned)parity);
}
__device__ __forceinline__ void ring_release(unsigned long long* bar) {
  gemm::mbar_arrive(gemm::smem_u32(bar));
}

// The ring filled by a producer warp (PRODUCER=1): the launch has CONSUMERS threads in whole
// warpgroups, then the producer warp. ring_init_tma (thread 0; the caller synchronizes the whole
// block before the producer branches off) gives the full barriers one arrival (the producer's
// expect_tx, the bytes completing them) and the empty ones the consumers' CONSUMERS arrivals;
// ring_expect arrives on a full barrier expecting a stage's bytes; ring_tma_3d copies one box of a
// rank-3 map (coordinates innermost first) into shared memory, completing bytes on the barrier.
// consumer_sync is the consumers' block barrier (named barrier 1: the producer warp has left);
// producer_regs / consumer_regs move registers between them (setmaxnreg; sm_90a).
template <int S, int CONSUMERS>
__device__ __forceinline__ void ring_init_tma(unsigned long long* bars) {
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) gemm::mbar_init(gemm::smem_u32(bars + s), 1);
#pragma unroll
    for (int s = 0; s < S; ++s) gemm::mbar_init(gemm::smem_u32(bars + S + s), CONSUMERS);
    gemm::fence_mbar_init();
  }
}
// ring_init_tma_q: the same, and after the ring's 2 * S barriers a q-full one (one arrival and
// the bytes) and a q-empty one (the consumers' arrivals), for a resident tile the producer loads
// at each logical block of a persistent block (PERSIST=2).
template <int S, int CONSUMERS>
__device__ __forceinline__ void ring_init_tma_q(unsigned long long* bars) {
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) gemm::mbar_init(gemm::smem_u32(bars + s), 1);
#pragma unroll
    for (int s = 0; s < S; ++s) gemm::mbar_init(gemm::smem_u32(bars + S + s), CONSUMERS);
    gemm::mbar_init(gemm::smem_u32(bars + 2 * S), 1);
    gemm::mbar_init(gemm::smem_u32(bars + 2 * S + 1), CONSUMERS);
    gemm::fence_mbar_init();
  }
}
__device__ __forceinline__ void ring_expect(unsigned long long* bar, unsigned bytes) {
  gemm::mbar_arrive_expect_tx(gemm::smem_u32(bar), bytes);
}
__device__ __forceinline__ void ring_tma_3d(unsigned char* dst, const void* map, int c0, int c1, int c2,
                                            unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(gemm::smem_u32(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(gemm::smem_u32(bar))
      : "memory");
}
template <int CONSUMERS>
__device__ __forceinline__ void consumer_sync() {
  asm volatile("bar.sync 1, %0;" ::"n"(CONSUMERS) : "memory");
}
template <int N>
__device__ __forceinline__ void producer_regs() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N>
__device__ __forceinline__ void consumer_regs() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

template <int DT, bool B_NK, bool WG, int K, int RB, int CB, bool ASYNC = false, int BM, int BN, int WARPS_M, int WARPS_N>
__device__ __forceinline__ void mma_smem_any(Tile<float, gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N>>& acc, unsigned sa, unsigned sb) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (WG) {
    wg_smem<DT, B_NK, K, ASYNC>(acc, sa, sb);
    return;
  }
#endif
  mma_smem<DT, B_NK, K, RB, CB>(acc, sa, sb);
}

// acc += a @ b (TRANS_B: a @ bᵀ) with a [M, K] and b [K, N] (or [N, K]) of type DT, each a
// register tile in any layout, a GTile or an STile: what is not staged yet is staged in the
// scratch area, then multiplied on tensor cores (WG: by wgmma; ASYNC: issued, not waited for).
template <bool TRANS_B, int DT, bool WG = false, bool ASYNC = false, class Acc, class A, class B, int BYTES>
__device__ void mma_dot(Tile<float, Acc>& acc, const A& a, const B& b, Scratch<BYTES> s) {
  constexpr int M = Ext<A>::R, K = Ext<A>::C, N = TRANS_B ? Ext<B>::R : Ext<B>::C;
  static_assert((TRANS_B ? Ext<B>::C : Ext<B>::R) == K, "dot: inner extents differ");
  static_assert(Acc::R == M && Acc::C == N, "dot: accumulator shape");
  constexpr int A_BYTES = mma_scratch_bytes<A>();
  static_assert(A_BYTES + mma_scratch_bytes<B>() <= BYTES, "scratch too small for dot");
  unsigned short* As = mma_place<DT, Acc::THREADS>(a, reinterpret_cast<unsigned short*>(s.p));
  unsigned short* Bs = mma_place<DT, Acc::THREADS>(b, reinterpret_cast<unsigned short*>(s.p + A_BYTES));
  if (!(IsStaged<A>::value && IsStaged<B>::value)) {
    mma_publish();
    __syncthreads();
  }
  static_assert(!ASYNC || WG, "only wgmma runs asynchronously");
  mma_smem_any<DT, TRANS_B, WG, K, Ext<B>::R, Ext<B>::C, ASYNC>(acc, gemm::smem_u32(As), gemm::smem_u32(Bs));
}

// The A operand of a deferred wgmma dot kept packed to DT between iterations (plan KeptA::Packed):
// the fragments mma_dot_ra would pack from an f32 accumulator-layout tile LA (16 rows a warp, one
// warp column), 4 registers a k step, half the f32 tile's. Value-initialized it is all zeros.
template <int DT, class LA>
struct PackedA {
  static_assert(LA::MI == 1 && LA::WN == LA::C, "16 whole rows a warp");
  unsigned v[LA::C / 16][4];
};

// Packs a into k (the fragments of mma_dot_ra's wgmma path, rounded to DT as it rounds them).
template <int DT, class LA>
__device__ __forceinline__ void pack_a(PackedA<DT, LA>& k, const Tile<float, LA>& a) {
#pragma unroll
  for (int kk = 0; kk < LA::C / 16; ++kk) {
    const float* c0 = a.v + (2 * kk) * 4;
    const float* c1 = c0 + 4;
    k.v[kk][0] = mma_pack<DT>(c0[0], c0[1]);
    k.v[kk][1] = mma_pack<DT>(c0[2], c0[3]);
    k.v[kk][2] = mma_pack<DT>(c1[0], c1[1]);
    k.v[kk][3] = mma_pack<DT>(c1[2], c1[3]);
  }
}

// acc += a @ b on wgmma with a already packed (PackedA): mma_dot_ra's wgmma path without the pack
// (sm_90a only: the plan keeps a packed only beside a producer warpgroup).
template <bool TRANS_B, int DT, bool WG, bool ASYNC, int BM, int BN, int WARPS_M, int WARPS_N, class LA, class B, int BYTES>
__device__ void mma_dot_ra(Tile<float, gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N>>& acc,
                           const PackedA<DT, LA>& a, const B& b, Scratch<BYTES>) {
  constexpr int K = LA::C, N = TRANS_B ? Ext<B>::R : Ext<B>::C;
  static_assert(WG && WARPS_N == 1 && LA::R == BM && BM == 16 * WARPS_M && BM % 64 == 0,
                "a packed A operand: wgmma, 16 rows a warp, whole warpgroups");
  static_assert(IsStaged<B>::value, "a packed A operand: b staged");
  static_assert((TRANS_B ? Ext<B>::C : Ext<B>::R) == K && BN == N, "dot: extents");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  const WgStart lb = wg_lo(gemm::smem_u32(b.p));
  wg_fence_tile(acc);
  gemm::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    gemm::sm90::WgmmaRs<DT, N, TRANS_B ? 0 : 1>::run(acc.v, a.v[kk], wg_desc_b<TRANS_B, K, N>(lb, kk));
  }
  if constexpr (!ASYNC) {
    gemm::wgmma_commit();
    gemm::wgmma_wait<0>();
  }
  wg_fence_tile(acc);
#endif
}

// acc += a @ b where a is an accumulator-layout tile [M, K] whose warps hold whole rows
// (WARPS_N == 1) and the same rows as acc: the C fragments of a's n8 blocks 2kk and 2kk + 1 are
// the A fragment of k step kk (a0 a1: rows g and g + 8 of block 2kk, a2 a3: of block 2kk + 1),
// so a never leaves registers (for wgmma too: a warp's A fragment of m64nNk16 is that of
// mma.sync m16n8k16 for its 16 rows). Only b is staged (a register tile, a GTile or an STile).
template <bool TRANS_B, int DT, bool WG = false, bool ASYNC = false, int BM, int BN, int WARPS_M, int WARPS_N, int KA, class B, int BYTES>
__device__ void mma_dot_ra(Tile<float, gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N>>& acc,
                           const Tile<float, gemm::sm80::AccLayout<BM, KA, WARPS_M, 1>>& a,
                           const B& b, Scratch<BYTES> s) {
  typedef gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N> L;
  typedef gemm::sm80::AccLayout<BM, KA, WARPS_M, 1> LA;
  constexpr int K = KA, N = TRANS_B ? Ext<B>::R : Ext<B>::C;
  static_assert(WARPS_N == 1, "the A operand's rows are the accumulator's");
  static_assert((TRANS_B ? Ext<B>::C : Ext<B>::R) == K && BN == N, "dot: extents");
  static_assert(mma_scratch_bytes<B>() <= BYTES, "scratch too small for dot");
  constexpr int RB = Ext<B>::R, CB = Ext<B>::C;
  unsigned short* Bs = mma_place<DT, L::THREADS>(b, reinterpret_cast<unsigned short*>(s.p));
  if (!IsStaged<B>::value) {
    mma_publish();
    __syncthreads();
  }
  const unsigned sb = gemm::smem_u32(Bs);
  static_assert(!ASYNC || WG, "only wgmma runs asynchronously");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (WG) {
    static_assert(BM == 16 * WARPS_M && BM % 64 == 0, "wgmma: 16 rows a warp, whole warpgroups");
    // Every A fragment packed before the fence: registers a wgmma reads may not be written
    // between the fence and the wgmma (ptxas would insert its own fence and serialize).
    unsigned af[K / 16][4];
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
      const float* c0 = a.v + (2 * kk) * 4;
      const float* c1 = c0 + 4;
      af[kk][0] = mma_pack<DT>(c0[0], c0[1]);
      af[kk][1] = mma_pack<DT>(c0[2], c0[3]);
      af[kk][2] = mma_pack<DT>(c1[0], c1[1]);
      af[kk][3] = mma_pack<DT>(c1[2], c1[3]);
    }
    const WgStart lb = wg_lo(sb);
    wg_fence_tile(acc);
    gemm::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
      gemm::sm90::WgmmaRs<DT, N, TRANS_B ? 0 : 1>::run(acc.v, af[kk], wg_desc_b<TRANS_B, K, N>(lb, kk));
    }
    if constexpr (!ASYNC) {
      gemm::wgmma_commit();
      gemm::wgmma_wait<0>();
    }
    wg_fence_tile(acc);
    return;
  }
#endif
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    unsigned af[L::MI][4];
#pragma unroll
    for (int mi = 0; mi < L::MI; ++mi) {
      const float* c0 = a.v + (mi * LA::NI + 2 * kk) * 4;
      const float* c1 = c0 + 4;
      af[mi][0] = mma_pack<DT>(c0[0], c0[1]);
      af[mi][1] = mma_pack<DT>(c0[2], c0[3]);
      af[mi][2] = mma_pack<DT>(c1[0], c1[1]);
      af[mi][3] = mma_pack<DT>(c1[2], c1[3]);
    }
    mma_k_step<DT, TRANS_B, RB, CB, L::MI, L::NI>(acc.v, af, sb, kk, 0);
  }
}

}  // namespace ph
