// phobos_dot.cuh: dot products on CUDA cores (FFMA): the FfmaAcc accumulator layout, dot of
// register tiles, and the double-buffered FFMA GEMM main loop. Included when a kernel has a dot.
#pragma once
#include "phobos_prelude.cuh"

namespace ph {

// acc + a * b in the accumulator type: fused for floats, wrapping for integers.
__device__ __forceinline__ float mac(float c, float a, float b) { return fmaf(a, b, c); }
__device__ __forceinline__ double mac(double c, double a, double b) { return fma(a, b, c); }
__device__ __forceinline__ int mac(int c, int a, int b) { return add(c, mul(a, b)); }

__host__ __device__ constexpr int vec_of(int t) { return t % 4 == 0 ? 4 : (t % 2 == 0 ? 2 : 1); }

// FfmaAcc<BM, BN, THREADS, TM, TN, WM, WN>: the FFMA accumulator layout of a [BM, BN] tile.
// Warps tile the block tile in a (BM / WM) x (BN / WN) grid (row-major warp order); the 32
// lanes of a warp tile its [WM, WN] warp tile in a (WM / TM) x (WN / TN) grid; each thread
// holds TM x TN elements, register i = ti * TN + tj. Rows of a thread come in runs of VM
// consecutive rows spaced LANES_M * VM apart (columns likewise, runs of VN): the runs of the
// lanes of a warp are adjacent, so fragment reads from shared memory are wide and conflict-free.
template <int BM, int BN, int THREADS_, int TM, int TN, int WM, int WN> struct FfmaAcc {
  static constexpr int R = BM, C = BN, THREADS = THREADS_, N = TM * TN;
  static constexpr int VM = vec_of(TM), VN = vec_of(TN), VEC = VN;
  static constexpr int LANES_M = WM / TM, LANES_N = WN / TN, WARPS_N = BN / WN;
  static_assert(LANES_M * LANES_N == 32, "a warp tile is 32 thread tiles");
  static_assert(WM % TM == 0 && WN % TN == 0 && BM % WM == 0 && BN % WN == 0, "tiles nest");
  static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "one warp tile per warp");
  __device__ static int row0(int tid) { return (tid / 32) / WARPS_N * WM + (tid % 32) / LANES_N * VM; }
  __device__ static int col0(int tid) { return (tid / 32) % WARPS_N * WN + (tid % 32) % LANES_N * VN; }
  __device__ static int row_off(int ti) { return ti / VM * (LANES_M * VM) + ti % VM; }
  __device__ static int col_off(int tj) { return tj / VN * (LANES_N * VN) + tj % VN; }
  __device__ static void coord(int tid, int i, int& r, int& c) {
    r = row0(tid) + row_off(i / TN);
    c = col0(tid) + col_off(i % TN);
  }
  static constexpr int TM_ = TM, TN_ = TN;
};

// Reads V consecutive values of shared memory (16-byte aligned runs for floats).
template <int V, class T> __device__ __forceinline__ void load_run(T* dst, const T* src) {
#pragma unroll
  for (int v = 0; v < V; ++v) dst[v] = src[v];
}
template <> __device__ __forceinline__ void load_run<4, float>(float* dst, const float* src) {
  const float4 x = *reinterpret_cast<const float4*>(src);
  dst[0] = x.x, dst[1] = x.y, dst[2] = x.z, dst[3] = x.w;
}
template <> __device__ __forceinline__ void load_run<2, float>(float* dst, const float* src) {
  const float2 x = *reinterpret_cast<const float2*>(src);
  dst[0] = x.x, dst[1] = x.y;
}

// acc += As^T Bs over K, with As[k * LDA + m] and Bs[k * LDB + n] in shared memory. Generic
// over the layout contract: each register accumulates its own (r, c).
template <class L> struct MmaSmem {
  template <int K, int LDA, int LDB, class T> __device__ static void run(Tile<T, L>& acc, const T* As, const T* Bs) {
    const int tid = threadIdx.x;
#pragma unroll 4
    for (int k = 0; k < K; ++k) {
#pragma unroll
      for (int i = 0; i < L::N; ++i) {
        int r, c;
        L::coord(tid, i, r, c);
        if (in_tile<L>(r, c)) acc.v[i] = mac(acc.v[i], As[k * LDA + r], Bs[k * LDB + c]);
      }
    }
  }
};

// The register-tiled product of FfmaAcc: per k, TM + TN fragment reads and TM * TN FMAs.
template <int BM, int BN, int TH, int TM, int TN, int WM, int WN> struct MmaSmem<FfmaAcc<BM, BN, TH, TM, TN, WM, WN>> {
  typedef FfmaAcc<BM, BN, TH, TM, TN, WM, WN> L;
  template <int K, int LDA, int LDB, class T> __device__ static void run(Tile<T, L>& acc, const T* As, const T* Bs) {
    const int tid = threadIdx.x;
    const T* a0 = As + L::row0(tid);
    const T* b0 = Bs + L::col0(tid);
    // Unrolled by 8 rather than fully: enough to hide shared-memory latency without letting the
    // scheduler hoist every fragment read of the k loop (which costs registers).
#pragma unroll 8
    for (int k = 0; k < K; ++k) {
      T a[TM], b[TN];
#pragma unroll
      for (int ti = 0; ti < TM; ti += L::VM) load_run<L::VM>(a + ti, a0 + k * LDA + L::row_off(ti));
#pragma unroll
      for (int tj = 0; tj < TN; tj += L::VN) load_run<L::VN>(b + tj, b0 + k * LDB + L::col_off(tj));
#pragma unroll
      for (int ti = 0; ti < TM; ++ti) {
#pragma unroll
        for (int tj = 0; tj < TN; ++tj) acc.v[ti * TN + tj] = mac(acc.v[ti * TN + tj], a[ti], b[tj]);
      }
    }
  }
};

// Row stride of an operand staged k-major in shared memory: 16-byte runs stay aligned, and the
// extra 4 elements shift consecutive k rows across banks.
__host__ __device__ constexpr int dot_ld(int mn) { return (mn + 3) / 4 * 4 + 4; }
template <int M, int N, int K, class TA> __host__ __device__ constexpr int dot_bytes() {
  return ((K * dot_ld(M) + K * dot_ld(N)) * (int)sizeof(TA) + 15) / 16 * 16;
}

// acc += a @ b (TRANS_B: a @ b^T) for register tiles in any layouts: both operands are staged
// k-major in the scratch area (converted to the accumulator type), then multiplied.
template <bool TRANS_B, class TA, class LAcc, class T, class LA, class LB, int BYTES>
__device__ void dot_acc(Tile<TA, LAcc>& acc, const Tile<T, LA>& a, const Tile<T, LB>& b, Scratch<BYTES> s) {
  constexpr int M = LA::R, K = LA::C, N = TRANS_B ? LB::R : LB::C;
  static_assert((TRANS_B ? LB::C : LB::R) == K, "dot: inner extents differ");
  static_assert(LAcc::R == M && LAcc::C == N, "dot: accumulator shape");
  static_assert(dot_bytes<M, N, K, TA>() <= BYTES, "scratch too small for dot");
  constexpr int LDA = dot_ld(M), LDB = dot_ld(N);
  TA* As = reinterpret_cast<TA*>(s.p);
  TA* Bs = As + K * LDA;
  const int tid = threadIdx.x;
#pragma unroll
  for (int i = 0; i < LA::N; ++i) {
    int r, c;
    LA::coord(tid, i, r, c);
    if (in_tile<LA>(r, c)) As[c * LDA + r] = TA(a.v[i]);
  }
#pragma unroll
  for (int i = 0; i < LB::N; ++i) {
    int r, c;
    LB::coord(tid, i, r, c);
    if (in_tile<LB>(r, c)) {
      if (TRANS_B) Bs[c * LDB + r] = TA(b.v[i]);
      else Bs[r * LDB + c] = TA(b.v[i]);
    }
  }
  __syncthreads();
  MmaSmem<LAcc>::template run<K, LDA, LDB>(acc, As, Bs);
}

__host__ __device__ constexpr int stage_vec(int rows, int cols, int threads) {
  return (cols % 4 == 0 && rows * cols >= 4 * threads) ? 4 : ((cols % 2 == 0 && rows * cols >= 2 * threads) ? 2 : 1);
}

// The FFMA GEMM main loop: acc += A[m0 :+ BM, k :+ TK] @ B[k :+ TK, n0 :+ BN] for k = k0,
// k0 + TK, .. < k1. Operand tiles go global -> registers -> shared memory (k-major, two buffers):
// the loads of step s + 1 are in flight while step s multiplies, and one barrier per step
// separates the buffers' writers from their readers. Edges are masked (zeros); the loads are
// 128-bit where the tile is in bounds and aligned. The accumulator stays in its layout.
template <class TA, class Acc, int TK, bool A_KIN, bool B_KIN> struct FfmaGemm {
  static constexpr int BM = Acc::R, BN = Acc::C, THREADS = Acc::THREADS;
  static constexpr int LDA = dot_ld(BM), LDB = dot_ld(BN);
  static constexpr int STAGE = TK * LDA + TK * LDB;
  static constexpr int SMEM_BYTES = 2 * STAGE * (int)sizeof(TA);
  typedef Blocked<A_KIN ? BM : TK, A_KIN ? TK : BM, THREADS, stage_vec(A_KIN ? BM : TK, A_KIN ? TK : BM, THREADS)> LA;
  typedef Blocked<B_KIN ? BN : TK, B_KIN ? TK : BN, THREADS, stage_vec(B_KIN ? BN : TK, B_KIN ? TK : BN, THREADS)> LB;

  template <bool KIN, class S> __device__ static Region<const S> region(const Operand<S>& o, int k) {
    return KIN ? Region<const S>{o.p, o.mn0, k, o.mn_dim, o.k_dim, o.ld, 1, o.ok}
               : Region<const S>{o.p, k, o.mn0, o.k_dim, o.mn_dim, o.ld, 1, o.ok};
  }
  template <bool KIN, int LD, class T, class L> __device__ static void stage(const Tile<T, L>& t, TA* dst) {
#pragma unroll
    for (int i = 0; i < L::N; ++i) {
      int r, c;
      L::coord(threadIdx.x, i, r, c);
      if (in_tile<L>(r, c)) dst[KIN ? c * LD + r : r * LD + c] = TA(t.v[i]);
    }
  }
  template <class SA, class SB>
  __device__ static void run(Tile<TA, Acc>& acc, const Operand<SA>& A, const Operand<SB>& B, int k0, int k1, unsigned char* smem) {
    if (k0 >= k1) return;
    TA* buf = reinterpret_cast<TA*>(smem);
    const long long steps = ((long long)k1 - k0 + TK - 1) / TK;
    auto ra = load_tile<LA>(region<A_KIN>(A, k0));
    auto rb = load_tile<LB>(region<B_KIN>(B, k0));
    stage<A_KIN, LDA>(ra, buf);
    stage<B_KIN, LDB>(rb, buf + TK * LDA);
    __syncthreads();
    for (long long s = 0; s < steps; ++s) {
      TA* cur = buf + (s & 1) * STAGE;
      TA* nxt = buf + ((s + 1) & 1) * STAGE;
      const bool more = s + 1 < steps;
      if (more) {
        const int kn = (int)(k0 + (s + 1) * TK);
        ra = load_tile<LA>(region<A_KIN>(A, kn));
        rb = load_tile<LB>(region<B_KIN>(B, kn));
      }
      MmaSmem<Acc>::template run<TK, LDA, LDB>(acc, cur, cur + TK * LDA);
      if (more) {
        stage<A_KIN, LDA>(ra, nxt);
        stage<B_KIN, LDB>(rb, nxt + TK * LDA);
      }
      __syncthreads();
    }
  }
};

}  // namespace ph
