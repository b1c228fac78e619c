// Exact-fp32 GEMM main loop on FFMA: block tile BM x BN x BK, warp tile WM x WN, thread tile
// TM x TN, A staged transposed ([BK][BM]) and B as [BK][BN] in double-buffered shared memory,
// global loads V elements wide (128-bit for V = 4) held in registers across the compute of the
// previous tile. Ragged M/N/K edges load zeros; whole tiles take the unchecked path.
#pragma once
#include "gemm/ptx.cuh"

namespace ph {
namespace gemm {
namespace ffma {

/// Accumulator layout: warp w at (w % WARPS_M, w / WARPS_M) owns a WM x WN warp tile; lane l at
/// (l / LN, l % LN) with LN = WN / TN owns TM x TN elements in 4 x 4 blocks spread across the warp
/// tile: rows g*(WM/(TM/4)) + 4*lm + {0..3}, columns h*(WN/(TN/4)) + 4*ln + {0..3}. Register
/// i = ri * TN + ci; groups of 4 consecutive registers are 4 adjacent columns: VEC = 4.
template <int BM, int BN, int WARPS_M, int WARPS_N, int TM, int TN>
struct AccLayout {
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WM = BM / WARPS_M;
  static constexpr int WN = BN / WARPS_N;
  static constexpr int LM = WM / TM;
  static constexpr int LN = WN / TN;
  static constexpr int GM = TM / 4;
  static constexpr int GN = TN / 4;
  static constexpr int R = BM;
  static constexpr int C = BN;
  static constexpr int N = TM * TN;
  static constexpr int VEC = 4;
  // Not SEPARABLE (ph::Separable): with that store ptxas held sgemm's 64x128x16 point at 128
  // registers and spilled 12 bytes, and the FFMA loop's store is a small part of its time (its
  // fp32 figures did not move, bench/NOTES.md v7).
  static_assert(TM % 4 == 0 && TN % 4 == 0, "thread tile in 4 x 4 blocks");
  static_assert(LM * TM == WM && LN * TN == WN && LM * LN == 32, "a warp tile is 32 thread tiles");
  // Branch-free: see sm80::AccLayout::coord.
  PH_GEMM_HD static void coord(int tid, int i, int& r, int& c) {
    const bool ok = tid >= 0 && tid < THREADS && i >= 0 && i < N;
    const int warp = tid / 32, lane = tid % 32;
    const int wm = warp % WARPS_M, wn = warp / WARPS_M;
    const int lm = lane / LN, ln = lane % LN;
    const int ri = i / TN, ci = i % TN;
    const int rr = wm * WM + (ri / 4) * (WM / GM) + lm * 4 + ri % 4;
    const int cc = wn * WN + (ci / 4) * (WN / GN) + ln * 4 + ci % 4;
    r = ok ? rr : OOB;
    c = ok ? cc : OOB;
  }
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

template <int V>
struct Vec;
template <>
struct Vec<1> {
  PH_GEMM_DEV static void load(float* d, const float* p) { d[0] = __ldg(p); }
};
template <>
struct Vec<2> {
  PH_GEMM_DEV static void load(float* d, const float* p) {
    const float2 v = __ldg(reinterpret_cast<const float2*>(p));
    d[0] = v.x;
    d[1] = v.y;
  }
};
template <>
struct Vec<4> {
  PH_GEMM_DEV static void load(float* d, const float* p) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
    d[0] = v.x;
    d[1] = v.y;
    d[2] = v.z;
    d[3] = v.w;
  }
};

/// Global-to-register-to-shared staging of one operand: ROWS (M or N) x BK elements, stored in
/// shared memory as BK lines of ROWS + PAD floats (the k-major image the compute loop reads 128
/// bits at a time). KMAJOR operands are transposed on the way; the others are copied straight.
template <bool KMAJOR, int ROWS, int BK, int THREADS, int V>
struct Stage {
  static constexpr int PAD = 4;
  static constexpr int LINE = ROWS + PAD;  // floats per smem line (one k)
  static constexpr int FLOATS = BK * LINE;
  // Pieces of V elements: along k for K-major operands, along rows otherwise.
  static constexpr int PPL = KMAJOR ? BK / V : ROWS / V;  // pieces per global line
  static constexpr int PIECES = KMAJOR ? ROWS * PPL : BK * PPL;
  static constexpr int PER_THREAD = (PIECES + THREADS - 1) / THREADS;
  static_assert((KMAJOR ? BK : ROWS) % V == 0, "vector width divides the tile");

  float reg[PER_THREAD][V];
  // Per-piece copy state, fixed for the k loop: the global address of the piece in the current
  // tile (advanced by `step` per tile), its k offset inside the tile, and how many elements of
  // it lie inside the non-k extent (V for whole pieces, 0 for pieces past the edge).
  const float* ptr[PER_THREAD];
  int kofs[PER_THREAD];
  int rlim[PER_THREAD];
  long long step;

  PH_GEMM_DEV void init(const float* X, long long ld, int r0, int r_ext, int k) {
    const int tid = threadIdx.x;
    step = KMAJOR ? (long long)BK : (long long)BK * ld;
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      const int q = tid + j * THREADS;
      const int line = q / PPL, e = (q % PPL) * V;
      const int r = KMAJOR ? r0 + line : r0 + e;
      kofs[j] = KMAJOR ? e : line;
      // K-major pieces run along k inside one row: all or nothing. Others run along rows.
      int lim = KMAJOR ? (r < r_ext ? V : 0) : r_ext - r;
      lim = lim < 0 ? 0 : (lim > V ? V : lim);
      rlim[j] = (PIECES % THREADS != 0 && q >= PIECES) ? 0 : lim;
      // A piece wholly outside keeps the (mapped) base address: it is never dereferenced.
      ptr[j] = lim > 0 ? (KMAJOR ? X + (long long)r * ld + k + e : X + (long long)(k + line) * ld + r) : X;
    }
  }

  /// Loads the tile at k (the next one after the previous call) into registers, zeros outside
  /// [.., k_ext) and the non-k extent; `full`: the whole tile is inside, no checks.
  PH_GEMM_DEV void load(int k, int k_ext, bool full) {
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      if (PIECES % THREADS != 0 && (int)(threadIdx.x + j * THREADS) >= PIECES) continue;
      if (full) {
        Vec<V>::load(reg[j], ptr[j]);
      } else {
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const bool ok = KMAJOR ? (v < rlim[j] && k + kofs[j] + v < k_ext)
                                 : (v < rlim[j] && k + kofs[j] < k_ext);
          reg[j][v] = ok ? __ldg(ptr[j] + v) : 0.f;
        }
      }
      if (rlim[j] > 0) ptr[j] += step;
    }
  }
  /// Writes the registers into the shared buffer `s` (FLOATS floats).
  PH_GEMM_DEV void store(float* s) const {
    const int tid = threadIdx.x;
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      const int q = tid + j * THREADS;
      if (PIECES % THREADS != 0 && q >= PIECES) continue;
      const int line = q / PPL, e = (q % PPL) * V;
      if (KMAJOR) {
#pragma unroll
        for (int v = 0; v < V; ++v) s[(e + v) * LINE + line] = reg[j][v];
      } else {
#pragma unroll
        for (int v = 0; v < V; ++v) s[line * LINE + e + v] = reg[j][v];
      }
    }
  }
};

/// The main loop. Template arguments:
///   BM, BN, BK    block tile; WARPS_M x WARPS_N warps (threads = 32 * WARPS_M * WARPS_N)
///   TM, TN        thread tile (multiples of 4; (BM/WARPS_M)/TM * (BN/WARPS_N)/TN == 32)
///   A_KMAJOR      A row-major ([M, K]); else column-major; B_KMAJOR: B is [N, K] (dot_t) or
///                 [K, N] column-major; else [K, N] row-major
///   VA, VB        global load width in floats (4, 2 or 1): leading dims and base pointers must
///                 be multiples of it
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int TM, int TN, bool A_KMAJOR,
          bool B_KMAJOR, int VA = 4, int VB = 4>
struct MainLoop {
  static constexpr int TILE_M = BM, TILE_N = BN, TILE_K = BK;
  using Layout = AccLayout<BM, BN, WARPS_M, WARPS_N, TM, TN>;
  static constexpr int THREADS = Layout::THREADS;
  using SA = Stage<A_KMAJOR, BM, BK, THREADS, VA>;
  using SB = Stage<B_KMAJOR, BN, BK, THREADS, VB>;
  /// Dynamic shared memory (16-byte aligned base): two buffers of each operand.
  static constexpr int SMEM_BYTES = 2 * (SA::FLOATS + SB::FLOATS) * 4;

  /// acc += A[m0 :+ BM, k :+ BK] . B[k :+ BK, n0 :+ BN] for k = k0, k0 + BK, .. < k1, every
  /// slice masked by its operand's extents; fp32 FFMA, each thread's products in k order.
  /// A, B: operand views with the fields of ph::Operand (see sm80::MainLoop::run), `p` a
  /// float pointer. smem: SMEM_BYTES, 16-byte aligned. Called by all THREADS threads; ends with
  /// a block barrier (shared memory free for the epilogue).
  template <class Acc, class OA, class OB>
  PH_GEMM_DEV static void run(Acc& acc, const OA& A, const OB& B, int k0, int k1,
                              unsigned char* smem) {
    if (!A.ok || !B.ok) return;  // uniform
    run_raw(acc, smem, (const float*)A.p, A.ld, A.mn0, A.mn_dim, A.k_dim, (const float*)B.p,
            B.ld, B.mn0, B.mn_dim, B.k_dim, k0, k1);
  }

  template <class Acc>
  PH_GEMM_DEV static void run_raw(Acc& acc, void* smem, const float* A, long long lda, int m0,
                                  int M, int Ka, const float* B, long long ldb, int n0, int N,
                                  int Kb, int k_begin, int k_end) {
    const int KT = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
    if (KT == 0) return;
    float* sA = static_cast<float*>(smem);
    float* sB = sA + 2 * SA::FLOATS;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp % WARPS_M, wn = warp / WARPS_M;
    const int lm = lane / Layout::LN, ln = lane % Layout::LN;
    const int a_off = wm * Layout::WM + lm * 4;  // + g * (WM / GM)
    const int b_off = wn * Layout::WN + ln * 4;  // + h * (WN / GN)
    const bool full_mn = (m0 + BM <= M) && (n0 + BN <= N);
    const int K = Ka < Kb ? Ka : Kb;  // whole-tile test only; each operand masks by its own

    SA la;
    SB lb;
    la.init(A, lda, m0, M, k_begin);
    lb.init(B, ldb, n0, N, k_begin);
    {
      const bool full = full_mn && k_begin + BK <= K;
      la.load(k_begin, Ka, full);
      lb.load(k_begin, Kb, full);
      la.store(sA);
      lb.store(sB);
    }
    __syncthreads();

#pragma unroll 1
    for (int t = 0; t < KT; ++t) {
      const int cur = t & 1;
      const bool more = t + 1 < KT;
      if (more) {
        const int k = k_begin + (t + 1) * BK;
        const bool full = full_mn && k + BK <= K;
        la.load(k, Ka, full);
        lb.load(k, Kb, full);
      }
      const float* a_s = sA + cur * SA::FLOATS;
      const float* b_s = sB + cur * SB::FLOATS;
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        float a[TM], b[TN];
#pragma unroll
        for (int g = 0; g < Layout::GM; ++g) {
          const float4 v =
              *reinterpret_cast<const float4*>(a_s + kk * SA::LINE + a_off + g * (Layout::WM / Layout::GM));
          a[4 * g] = v.x;
          a[4 * g + 1] = v.y;
          a[4 * g + 2] = v.z;
          a[4 * g + 3] = v.w;
        }
#pragma unroll
        for (int h = 0; h < Layout::GN; ++h) {
          const float4 v =
              *reinterpret_cast<const float4*>(b_s + kk * SB::LINE + b_off + h * (Layout::WN / Layout::GN));
          b[4 * h] = v.x;
          b[4 * h + 1] = v.y;
          b[4 * h + 2] = v.z;
          b[4 * h + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc.v[i * TN + j] = fmaf(a[i], b[j], acc.v[i * TN + j]);
      }
      if (more) {
        la.store(sA + (cur ^ 1) * SA::FLOATS);
        lb.store(sB + (cur ^ 1) * SB::FLOATS);
      }
      // One barrier per tile: it orders this tile's reads of `cur` before the next tile's
      // stores into it, and this tile's stores into `cur ^ 1` before the next tile's reads.
      __syncthreads();
    }
  }
};

#endif  // CUDA

}  // namespace ffma
}  // namespace gemm
}  // namespace ph
