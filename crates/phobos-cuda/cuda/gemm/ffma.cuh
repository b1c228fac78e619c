// Exact-fp32 GEMM main loop on FFMA: block tile BM x BN x BK, warp tile WM x WN, thread tile
// TM x TN, A staged transposed ([BK][BM]) and B as [BK][BN] in a STAGES-deep ring of shared
// memory filled by cp.async (no registers hold a tile in flight): 16-byte copies along an
// operand's rows, 4-byte copies for a K-major operand, which is transposed on the way. Ragged
// M/N/K edges are zero-filled by the copies themselves.
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

/// cp.async copies of one operand's tile, ROWS (M or N) x BK elements, into one stage of shared
/// memory laid out as BK lines of ROWS + PAD floats: the k-major image the compute loop reads 128
/// bits at a time. Elements outside the operand are zero-filled by the copies themselves, so
/// ragged tiles take the same instructions as whole ones.
///
/// `CopyRows`: an operand contiguous along its rows (A column-major, B row-major), copied straight,
/// V elements (V * 4 bytes) a copy; a warp's copies cover 32 * V consecutive elements of a k line.
template <int ROWS, int BK, int THREADS, int V>
struct CopyRows {
  static constexpr int PAD = 4;
  static constexpr int LINE = ROWS + PAD;  // floats per smem line (one k)
  static constexpr int FLOATS = BK * LINE;
  static constexpr int BYTES = FLOATS * 4;
  static constexpr int PPL = ROWS / V;  // pieces per k line
  static constexpr int PIECES = BK * PPL;
  static constexpr int PER_THREAD = (PIECES + THREADS - 1) / THREADS;
  static_assert(ROWS % V == 0, "vector width divides the tile");

  // Per-piece state, fixed for the k loop: the global address of the piece in the next tile
  // (advanced by `step` per tile), its byte offset inside a stage, its k line, and how many of
  // its elements lie inside the row extent. `base`: a mapped address that zero-filling copies
  // name instead of the piece's.
  const float* ptr[PER_THREAD];
  u32 sofs[PER_THREAD];
  int kofs[PER_THREAD];
  int rlim[PER_THREAD];
  const float* base;
  long long step;

  PH_GEMM_DEV void init(const float* X, long long ld, int r0, int r_ext, int k) {
    const int tid = threadIdx.x;
    base = X;
    step = (long long)BK * ld;
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      const int q = tid + j * THREADS;
      const int line = q / PPL, e = (q % PPL) * V;
      const int r = r0 + e;
      kofs[j] = line;
      sofs[j] = 4u * (line * LINE + e);
      int lim = r_ext - r;
      lim = lim < 0 ? 0 : (lim > V ? V : lim);
      rlim[j] = (PIECES % THREADS != 0 && q >= PIECES) ? 0 : lim;
      ptr[j] = lim > 0 ? X + (long long)(k + line) * ld + r : X;
    }
  }

  /// Issues the copies of the tile at k (the one after the previous call's) into the stage at
  /// shared address `s`; elements at k_ext or beyond, or past the row extent, read as zero.
  PH_GEMM_DEV void copy(u32 s, int k, int k_ext) {
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      if (PIECES % THREADS != 0 && (int)(threadIdx.x + j * THREADS) >= PIECES) continue;
      const int bytes = k + kofs[j] < k_ext ? 4 * rlim[j] : 0;
      cp_async<4 * V>(s + sofs[j], bytes > 0 ? ptr[j] : base, bytes);
      ptr[j] += step;
    }
  }
};

/// `CopyK`: a K-major operand (A row-major, B column-major or [N, K]), transposed on the way by
/// one 4-byte copy per element. Consecutive threads take consecutive k of one row, so a warp's
/// copy reads 32 / BK rows of BK contiguous elements (few sectors) and writes them down
/// 32 / BK columns of the k-major image; a thread's copies are RSTEP rows apart at one k.
template <int ROWS, int BK, int THREADS>
struct CopyK {
  static constexpr int PAD = 4;
  static constexpr int LINE = ROWS + PAD;
  static constexpr int FLOATS = BK * LINE;
  static constexpr int BYTES = FLOATS * 4;
  static constexpr int ELEMS = ROWS * BK;
  static constexpr int PER_THREAD = (ELEMS + THREADS - 1) / THREADS;
  static constexpr int RSTEP = THREADS / BK;  // rows between a thread's copies
  static_assert(THREADS % BK == 0, "the tile's k extent divides the block");

  const float* ptr;  // this thread's element in its first row, next tile
  const float* base;
  long long rstride;  // RSTEP rows of the operand
  u32 sofs;           // byte offset of the first element inside a stage
  int kofs;           // k offset inside the tile
  int rrem;           // rows inside the extent from this thread's first row on

  PH_GEMM_DEV void init(const float* X, long long ld, int r0, int r_ext, int k) {
    const int tid = threadIdx.x;
    const int row = tid / BK;
    base = X;
    kofs = tid % BK;
    rstride = (long long)RSTEP * ld;
    sofs = 4u * (kofs * LINE + row);
    rrem = r_ext - (r0 + row);
    ptr = rrem > 0 ? X + (long long)(r0 + row) * ld + k + kofs : X;
  }

  /// As CopyRows::copy.
  PH_GEMM_DEV void copy(u32 s, int k, int k_ext) {
    const bool kin = k + kofs < k_ext;
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      if (ELEMS % THREADS != 0 && (int)(threadIdx.x + j * THREADS) >= ELEMS) continue;
      const bool ok = kin && j * RSTEP < rrem;
      cp_async4(s + sofs + 4u * (j * RSTEP), ok ? ptr + j * rstride : base, ok ? 4 : 0);
    }
    ptr += BK;
  }
};

template <bool KMAJOR, int ROWS, int BK, int THREADS, int V>
struct CopyOf {
  using type = CopyRows<ROWS, BK, THREADS, V>;
};
template <int ROWS, int BK, int THREADS, int V>
struct CopyOf<true, ROWS, BK, THREADS, V> {
  using type = CopyK<ROWS, BK, THREADS>;
};

/// The main loop. Template arguments:
///   BM, BN, BK    block tile; WARPS_M x WARPS_N warps (threads = 32 * WARPS_M * WARPS_N)
///   TM, TN        thread tile (multiples of 4; (BM/WARPS_M)/TM * (BN/WARPS_N)/TN == 32)
///   A_KMAJOR      A row-major ([M, K]); else column-major; B_KMAJOR: B is [N, K] (dot_t) or
///                 [K, N] column-major; else [K, N] row-major
///   VA, VB        copy width in floats (4, 2 or 1) of an operand contiguous along its rows:
///                 leading dims and base pointers must be multiples of it (a K-major operand is
///                 copied one element at a time, whatever its width)
///   STAGES        shared-memory pipeline depth (2..4): tiles in flight while one is computed
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int TM, int TN, bool A_KMAJOR,
          bool B_KMAJOR, int VA = 4, int VB = 4, int STAGES = 2>
struct MainLoop {
  static constexpr int TILE_M = BM, TILE_N = BN, TILE_K = BK;
  using Layout = AccLayout<BM, BN, WARPS_M, WARPS_N, TM, TN>;
  static constexpr int THREADS = Layout::THREADS;
  using SA = typename CopyOf<A_KMAJOR, BM, BK, THREADS, VA>::type;
  using SB = typename CopyOf<B_KMAJOR, BN, BK, THREADS, VB>::type;
  static_assert(STAGES >= 2 && STAGES <= 4, "2 to 4 stages");
  /// Dynamic shared memory (16-byte aligned base): STAGES buffers of each operand.
  static constexpr int SMEM_BYTES = STAGES * (SA::BYTES + SB::BYTES);

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
    const float* sA = static_cast<const float*>(smem);
    const float* sB = sA + STAGES * SA::FLOATS;
    const u32 sA_u = smem_u32(sA), sB_u = smem_u32(sB);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp % WARPS_M, wn = warp / WARPS_M;
    const int lm = lane / Layout::LN, ln = lane % Layout::LN;
    const int a_off = wm * Layout::WM + lm * 4;  // + g * (WM / GM)
    const int b_off = wn * Layout::WN + ln * 4;  // + h * (WN / GN)

    SA ca;
    SB cb;
    ca.init(A, lda, m0, M, k_begin);
    cb.init(B, ldb, n0, N, k_begin);
    // Prologue: tiles 0 .. STAGES - 2 in flight, one commit group each (empty past the end, so
    // that the wait below always counts STAGES - 2 younger groups).
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < KT) {
        ca.copy(sA_u + s * SA::BYTES, k_begin + s * BK, Ka);
        cb.copy(sB_u + s * SB::BYTES, k_begin + s * BK, Kb);
      }
      cp_async_commit();
    }

    int rs = 0, ws = STAGES - 1;  // the stage read now, the stage written next
#pragma unroll 1
    for (int t = 0; t < KT; ++t) {
      // This thread's copies of tile t have landed; the barrier makes everyone's visible and
      // orders everyone's reads of the previous tile's stage (== ws) before the copies below.
      cp_async_wait<STAGES - 2>();
      __syncthreads();
      if (t + STAGES - 1 < KT) {
        const int k = k_begin + (t + STAGES - 1) * BK;
        ca.copy(sA_u + ws * SA::BYTES, k, Ka);
        cb.copy(sB_u + ws * SB::BYTES, k, Kb);
      }
      cp_async_commit();
      ws = ws + 1 == STAGES ? 0 : ws + 1;
      const float* a_s = sA + rs * SA::FLOATS;
      const float* b_s = sB + rs * SB::FLOATS;
      rs = rs + 1 == STAGES ? 0 : rs + 1;
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
    }
    // Every copy still in flight is an empty group; the barrier orders the last tile's reads
    // before the epilogue's use of shared memory.
    __syncthreads();
  }
};

#endif  // CUDA

}  // namespace ffma
}  // namespace gemm
}  // namespace ph
