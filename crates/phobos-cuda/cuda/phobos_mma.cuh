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

// Row stride (elements) of an operand staged row-major in shared memory: 8 elements (16 bytes)
// of padding put the 8 rows of every ldmatrix 8x8 matrix in 8 different 16-byte bank groups.
__host__ __device__ constexpr int mma_ld(int c) { return c + 8; }

// An operand read straight from global memory into shared memory (a dot of a tile load): the
// [R, C] tile of region g, zeros outside it.
template <int R_, int C_, class S> struct GTile {
  static constexpr int R = R_, C = C_;
  Region<const S> g;
};
template <int R, int C, class S> __device__ __forceinline__ GTile<R, C, S> gtile(const Region<const S>& g) {
  return GTile<R, C, S>{g};
}
// An operand already in shared memory in the staged form (row stride mma_ld(C)): a tile a loop
// prefetched (mma_prefetch) while the previous iteration computed.
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

// Writes tile t (any layout, f16/bf16 values in float registers) row-major into dst with row
// stride LD, a layout's VEC group of consecutive columns as one store of up to 16 bytes.
template <int DT, int LD, int THREADS, class L> __device__ __forceinline__ void mma_stage(const Tile<float, L>& t, unsigned short* dst) {
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
      *reinterpret_cast<W*>(dst + r * LD + c) = w;
    }
  }
}

// Copies the [R, C] tile of global region g (16-bit elements) into dst, row stride LD, by the
// block's THREADS threads: 16 bytes a copy where the rows are contiguous and 16-byte aligned
// (whole groups inside the tensor), element by element at ragged edges; zeros outside.
template <int DT, int LD, int THREADS, int R, int C, class S> __device__ __forceinline__ void mma_stage(const GTile<R, C, S>& t, unsigned short* dst) {
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
      *reinterpret_cast<uint4*>(dst + r * LD + c) = x;
    }
  } else {
    for (int q = tid; q < R * C; q += THREADS) {
      const int r = q / C, c = q % C;
      dst[r * LD + c] = in_bounds(g, r, c) ? elem_ptr(g, r, c)->bits : (unsigned short)0;
    }
  }
}

// Issues cp.async copies of the [R, C] tile of global region g into dst in the staged form (row
// stride mma_ld(C)), zero-filled outside the tensor: 16 bytes a copy where rows are contiguous
// and 16-byte aligned, else plain element stores. The caller commits, waits and synchronizes.
template <int R, int C, int THREADS, class S> __device__ __forceinline__ void mma_prefetch(const Region<const S>& g, unsigned char* dst) {
  static_assert(sizeof(S) == 2, "16-bit operands");
  constexpr int LD = mma_ld(C);
  unsigned short* d = reinterpret_cast<unsigned short*>(dst);
  const int tid = threadIdx.x;
  const bool vec = C % 8 == 0 && g.cs == 1 && g.rs % 8 == 0 && g.c0 % 8 == 0 &&
                   (reinterpret_cast<unsigned long long>(g.p) & 15) == 0;
  if (vec) {
    constexpr int G = R * C / 8, PER = (G + THREADS - 1) / THREADS;
    const unsigned base = gemm::smem_u32(d);
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
      gemm::cp_async16(base + 2 * (r * LD + c), bytes > 0 ? (const void*)elem_ptr(g, r, c) : (const void*)g.p, bytes);
    }
  } else {
    for (int q = tid; q < R * C; q += THREADS) {
      const int r = q / C, c = q % C;
      d[r * LD + c] = in_bounds(g, r, c) ? elem_ptr(g, r, c)->bits : (unsigned short)0;
    }
  }
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
    const unsigned short b = in_tile<L>(r, c) ? t.p[r * mma_ld(C) + c] : (unsigned short)0;
    out.v[i] = DT == gemm::BF16 ? bf16_to_f32(b) : f16_to_f32(b);
  }
  return out;
}

// Where an operand lies staged: a prefetched STile where it is, anything else staged into dst.
template <int DT, int LD, int THREADS, class X> __device__ __forceinline__ unsigned short* mma_place(const X& x, unsigned short* dst) {
  mma_stage<DT, LD, THREADS>(x, dst);
  return dst;
}
template <int DT, int LD, int THREADS, int R, int C> __device__ __forceinline__ unsigned short* mma_place(const STile<R, C>& x, unsigned short*) {
  return x.p;
}
// Scratch bytes an operand takes: none when it is already staged.
template <class X> __host__ __device__ constexpr int mma_scratch_bytes() {
  return IsStaged<X>::value ? 0 : Ext<X>::R * mma_ld(Ext<X>::C) * 2;
}

// One k step of 16 for a warp: the B fragments of its NI n8 blocks from column n0 on (B staged
// at shared address sb, row stride LDB: [N][LDB] when B_NK, else [K][LDB] read with
// ldmatrix.trans), then the MI x NI mma.sync with the A fragments af into acc (the
// accumulator's registers, fragment (mi, ni) at 4 * (mi * NI + ni)).
template <int DT, bool B_NK, int LDB, int MI, int NI>
__device__ __forceinline__ void mma_k_step(float* acc, const unsigned (&af)[MI][4], unsigned sb, int kk, int n0) {
  const int lane = threadIdx.x % 32;
  const int l8 = lane & 7, lb3 = (lane >> 3) & 1, lb4 = lane >> 4;
  unsigned bf[NI][2];
#pragma unroll
  for (int nj = 0; nj < NI / 2; ++nj) {
    const int ncol = n0 + nj * 16;
    if (B_NK) {
      const int row = ncol + l8 + 8 * lb4;
      gemm::ldsm_x4(sb + 2 * (row * LDB + kk * 16 + 8 * lb3), bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0], bf[2 * nj + 1][1]);
    } else {
      const int kline = kk * 16 + l8 + 8 * lb3;
      gemm::ldsm_x4_t(sb + 2 * (kline * LDB + ncol + 8 * lb4), bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0], bf[2 * nj + 1][1]);
    }
  }
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) gemm::Mma<DT>::run(acc + (mi * NI + ni) * 4, af[mi], bf[ni]);
}

// acc += A · B over K for A staged [M][LDA] at shared address sa and B staged at sb: [N][LDB]
// (B_NK: dot_t's [N, K] operand) or [K][LDB] (dot's [K, N], read with ldmatrix.trans). Each warp
// computes its accumulator tile; fragments come by ldmatrix as in the mma.sync main loop.
template <int DT, bool B_NK, int K, int LDA, int LDB, int BM, int BN, int WARPS_M, int WARPS_N>
__device__ __forceinline__ void mma_smem(Tile<float, gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N>>& acc, unsigned sa, unsigned sb) {
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
      gemm::ldsm_x4(sa + 2 * (row * LDA + kk * 16 + 8 * lb4), af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
    }
    mma_k_step<DT, B_NK, LDB, L::MI, L::NI>(acc.v, af, sb, kk, wn * L::WN);
  }
}

// acc += a @ b (TRANS_B: a @ bᵀ) with a [M, K] and b [K, N] (or [N, K]) of type DT, each a
// register tile in any layout or a GTile: both are staged in the scratch area, then multiplied
// on tensor cores.
template <bool TRANS_B, int DT, class Acc, class A, class B, int BYTES>
__device__ void mma_dot(Tile<float, Acc>& acc, const A& a, const B& b, Scratch<BYTES> s) {
  constexpr int M = Ext<A>::R, K = Ext<A>::C, N = TRANS_B ? Ext<B>::R : Ext<B>::C;
  static_assert((TRANS_B ? Ext<B>::C : Ext<B>::R) == K, "dot: inner extents differ");
  static_assert(Acc::R == M && Acc::C == N, "dot: accumulator shape");
  constexpr int A_BYTES = mma_scratch_bytes<A>();
  static_assert(A_BYTES + mma_scratch_bytes<B>() <= BYTES, "scratch too small for dot");
  constexpr int LDA = mma_ld(K), LDB = mma_ld(TRANS_B ? K : N);
  unsigned short* As = mma_place<DT, LDA, Acc::THREADS>(a, reinterpret_cast<unsigned short*>(s.p));
  unsigned short* Bs = mma_place<DT, LDB, Acc::THREADS>(b, reinterpret_cast<unsigned short*>(s.p + A_BYTES));
  if (!(IsStaged<A>::value && IsStaged<B>::value)) __syncthreads();
  mma_smem<DT, TRANS_B, K, LDA, LDB>(acc, gemm::smem_u32(As), gemm::smem_u32(Bs));
}

// acc += a @ b where a is an accumulator-layout tile [M, K] whose warps hold whole rows
// (WARPS_N == 1) and the same rows as acc: the C fragments of a's n8 blocks 2kk and 2kk + 1 are
// the A fragment of k step kk (a0 a1: rows g and g + 8 of block 2kk, a2 a3: of block 2kk + 1),
// so a never leaves registers. Only b is staged (a register tile or a GTile).
template <bool TRANS_B, int DT, int BM, int BN, int WARPS_M, int WARPS_N, int KA, class B, int BYTES>
__device__ void mma_dot_ra(Tile<float, gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N>>& acc,
                           const Tile<float, gemm::sm80::AccLayout<BM, KA, WARPS_M, 1>>& a,
                           const B& b, Scratch<BYTES> s) {
  typedef gemm::sm80::AccLayout<BM, BN, WARPS_M, WARPS_N> L;
  typedef gemm::sm80::AccLayout<BM, KA, WARPS_M, 1> LA;
  constexpr int K = KA, N = TRANS_B ? Ext<B>::R : Ext<B>::C;
  static_assert(WARPS_N == 1, "the A operand's rows are the accumulator's");
  static_assert((TRANS_B ? Ext<B>::C : Ext<B>::R) == K && BN == N, "dot: extents");
  static_assert(mma_scratch_bytes<B>() <= BYTES, "scratch too small for dot");
  constexpr int LDB = mma_ld(TRANS_B ? K : N);
  unsigned short* Bs = mma_place<DT, LDB, L::THREADS>(b, reinterpret_cast<unsigned short*>(s.p));
  if (!IsStaged<B>::value) __syncthreads();
  const unsigned sb = gemm::smem_u32(Bs);
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
    mma_k_step<DT, TRANS_B, LDB, L::MI, L::NI>(acc.v, af, sb, kk, 0);
  }
}

}  // namespace ph
