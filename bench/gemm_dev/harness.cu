// GEMM development harness: instantiates the main loops of crates/phobos-cuda/cuda/gemm in
// kernels shaped like the generated ones (block swizzle, split-K range, zeroed accumulator,
// main loop, masked epilogue), checks each configuration against cuBLAS on ragged and square
// shapes with a NaN-poisoned C, then times it next to cuBLAS at 4096^3 and 8192^3.
//
// Built and run by run.sh (nvcc, sm_90a). Compiled in parts (-DPART=n registers one share of the
// configurations, -DPART=-1 is main) so that the parts compile in parallel.
#include "harness_util.h"

#include "gemm/epilogue.cuh"
#include "gemm/ffma.cuh"
#include "gemm/sched.cuh"
#include "gemm/sm80.cuh"
#include "gemm/sm90.cuh"

#include <functional>
#include <memory>

namespace ph {
// The prelude's tile type (phobos_prelude.cuh), repeated so the harness needs no prelude.
template <class T, class L>
struct Tile {
  T v[L::N];
};
}  // namespace ph

// The fields of ph::Operand that the main loops read.
struct Op {
  const void* p;
  int mn0, mn_dim, k_dim;
  long long ld;
  bool ok;
};

struct Problem {
  int dt;
  bool a_k, b_k;
  int M, N, K;
  const void *A, *B;
  long long lda, ldb;
  float* C;
  int split, group_m;
};

// One configuration: how to launch it on a problem, and what it is.
struct Cfg {
  std::string name;
  std::string strat;  // sm90 / sm80 / ffma
  int dt;
  bool a_k, b_k;
  int split;
  int threads, smem;
  int align;  // elements the operands' leading dims must be multiples of
  std::string symbol;  // mangled kernel name (joins the SASS mix)
  std::string setup_error;  // a failed attribute call at registration: reported, not run
  int regs = 0, local_bytes = 0;
  std::function<void(const Problem&)> launch;
  std::function<bool()> layout_ok;  // host check of the accumulator layout
};

inline std::vector<Cfg>& registry() {
  static std::vector<Cfg> r;
  return r;
}

// Every in-tile element held by exactly one (thread, register); nothing else in the tile.
template <class L>
bool check_layout() {
  std::vector<int> seen((size_t)L::R * L::C, 0);
  for (int t = 0; t < L::THREADS; ++t)
    for (int i = 0; i < L::N; ++i) {
      int r, c;
      L::coord(t, i, r, c);
      if (r >= L::R) continue;
      if (r < 0 || c < 0 || c >= L::C) return false;
      seen[(size_t)r * L::C + c]++;
      if (i % L::VEC != 0) {  // VEC: runs of consecutive columns of one row
        int r0, c0;
        L::coord(t, i - i % L::VEC, r0, c0);
        if (r0 != r || c0 + i % L::VEC != c || c0 % L::VEC != 0) return false;
      }
    }
  for (int v : seen)
    if (v != 1) return false;
  return true;
}

// ---- kernels shaped like generated code -----------------------------------------------------------

template <class ML>
__device__ __forceinline__ void block_origin(int K, int& m0, int& n0, int& kb, int& ke, int group_m) {
  int pm, pn;
  ph::gemm::swizzle_block(blockIdx.x, blockIdx.y, gridDim.x, gridDim.y, group_m, &pm, &pn);
  m0 = pm * ML::TILE_M;
  n0 = pn * ML::TILE_N;
  ph::gemm::split_k_range(0, K, ML::TILE_K, gridDim.z, blockIdx.z, &kb, &ke);
}

template <class ML, class L, class T>
__device__ __forceinline__ void epilogue(float* C, int M, int N, int m0, int n0, const T* v) {
  if (gridDim.z > 1) ph::gemm::atomic_add_tile<L>(C, N, M, N, m0, n0, v);
  else ph::gemm::store_tile<L>(C, N, M, N, m0, n0, v);
}

template <class ML, int MINB>
__global__ void __launch_bounds__(ML::THREADS, MINB) k_regs(Op A, Op B, float* C, int M, int N, int K, int group_m) {
  extern __shared__ __align__(1024) unsigned char smem[];
  using L = typename ML::Layout;
  int m0, n0, kb, ke;
  block_origin<ML>(K, m0, n0, kb, ke, group_m);
  A.mn0 = m0;
  B.mn0 = n0;
  ph::Tile<float, L> acc;
#pragma unroll
  for (int i = 0; i < L::N; ++i) acc.v[i] = 0.f;
  ML::run(acc, A, B, kb, ke, smem);
  epilogue<ML, L>(C, M, N, m0, n0, acc.v);
}

template <class ML>
__global__ void __launch_bounds__(ML::THREADS, 1)
    k_sm90(const __grid_constant__ ph::gemm::sm90::TmaDesc tA, const __grid_constant__ ph::gemm::sm90::TmaDesc tB,
           Op A, Op B, float* C, int M, int N, int K, int group_m) {
  extern __shared__ __align__(1024) unsigned char smem[];
  using L = typename ML::Layout;
  int m0, n0, kb, ke;
  block_origin<ML>(K, m0, n0, kb, ke, group_m);
  A.mn0 = m0;
  B.mn0 = n0;
  ph::Tile<float, L> acc;
#pragma unroll
  for (int i = 0; i < L::N; ++i) acc.v[i] = 0.f;
  ML::run(acc, A, B, &tA, &tB, kb, ke, smem);
  epilogue<ML, L>(C, M, N, m0, n0, acc.v);
}

// Registers, local memory and mangled name of a kernel, as the loaded module reports them.
// Registration never exits: a configuration whose setup fails is reported as failed when run.
inline void soft(Cfg& c, cudaError_t e, const char* what) {
  if (e != cudaSuccess && c.setup_error.empty()) c.setup_error = std::string(what) + ": " + cudaGetErrorString(e);
}

template <class K>
void describe(Cfg& c, K kern) {
  cudaFuncAttributes a{};
  soft(c, cudaFuncGetAttributes(&a, (const void*)kern), "cudaFuncGetAttributes");
  c.regs = a.numRegs;
  c.local_bytes = (int)a.localSizeBytes;
  cudaFunction_t f;
  const char* nm = nullptr;
  if (cudaGetFuncBySymbol(&f, (const void*)kern) == cudaSuccess && cuFuncGetName(&nm, (CUfunction)f) == CUDA_SUCCESS && nm)
    c.symbol = nm;
  else
    c.symbol = "?";
}

inline dim3 grid_of(const Problem& p, int bm, int bn) {
  return dim3((p.M + bm - 1) / bm, (p.N + bn - 1) / bn, p.split);
}
inline Op op_a(const Problem& p) { return Op{p.A, 0, p.M, p.K, p.lda, true}; }
inline Op op_b(const Problem& p) { return Op{p.B, 0, p.N, p.K, p.ldb, true}; }

template <class ML, int MINB>
void add_regs(const char* strat, int dt, bool a_k, bool b_k, int split, int align, const std::string& name) {
  auto kern = k_regs<ML, MINB>;
  Cfg c;
  soft(c, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, ML::SMEM_BYTES), "smem attribute");
  c.name = name;
  c.strat = strat;
  c.dt = dt;
  c.a_k = a_k;
  c.b_k = b_k;
  c.split = split;
  c.threads = ML::THREADS;
  c.smem = ML::SMEM_BYTES;
  c.align = align;
  c.launch = [kern](const Problem& p) {
    kern<<<grid_of(p, ML::TILE_M, ML::TILE_N), ML::THREADS, ML::SMEM_BYTES>>>(op_a(p), op_b(p), p.C, p.M, p.N, p.K,
                                                                           p.group_m);
  };
  c.layout_ok = [] { return check_layout<typename ML::Layout>(); };
  describe(c, kern);
  registry().push_back(c);
}

template <class ML>
void add_sm90(int dt, bool a_k, bool b_k, int split, const std::string& name) {
  auto kern = k_sm90<ML>;
  Cfg c;
  soft(c, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, ML::SMEM_BYTES), "smem attribute");
  c.name = name;
  c.strat = "sm90";
  c.dt = dt;
  c.a_k = a_k;
  c.b_k = b_k;
  c.split = split;
  c.threads = ML::THREADS;
  c.smem = ML::SMEM_BYTES;
  c.align = 16 / dt_size(dt);
  c.launch = [kern, dt, a_k, b_k](const Problem& p) {
    static_assert(sizeof(CUtensorMap) == sizeof(ph::gemm::sm90::TmaDesc), "TmaDesc mirrors CUtensorMap");
    CUtensorMap ma = encode_tma(p.A, dt, a_k, p.M, p.K, p.lda, ML::A_BOX1);
    CUtensorMap mb = encode_tma(p.B, dt, b_k, p.N, p.K, p.ldb, ML::B_BOX1);
    ph::gemm::sm90::TmaDesc ta, tb;
    memcpy(&ta, &ma, sizeof(ta));
    memcpy(&tb, &mb, sizeof(tb));
    kern<<<grid_of(p, ML::TILE_M, ML::TILE_N), ML::THREADS, ML::SMEM_BYTES>>>(ta, tb, op_a(p), op_b(p), p.C, p.M,
                                                                           p.N, p.K, p.group_m);
  };
  c.layout_ok = [] { return check_layout<typename ML::Layout>(); };
  describe(c, kern);
  registry().push_back(c);
}

using namespace ph::gemm;

// Shorthands: A K-major (row-major), B N-major ([K, N] row-major) is dot(a, b) on row-major
// tensors; B K-major is dot_t (or a column-major B).
#define S90(DT, BM, BN, BK, WGM, WGN, ST, AK, BKM, PW, SPLIT)                                              \
  add_sm90<sm90::MainLoop<DT, BM, BN, BK, WGM, WGN, ST, AK, BKM, PW>>(                                      \
      DT, AK, BKM, SPLIT,                                                                                   \
      std::string("sm90 ") + dt_name(DT) + (AK ? " A:k" : " A:m") + (BKM ? " B:k " : " B:n ") + #BM "x" #BN \
          "x" #BK " wg" #WGM "x" #WGN " s" #ST + (PW ? " pw" : "") + (SPLIT > 1 ? " sk" #SPLIT : ""))
#define S80(DT, BM, BN, BK, WM, WN, ST, AK, BKM, V, SPLIT)                                                 \
  add_regs<sm80::MainLoop<DT, BM, BN, BK, WM, WN, ST, AK, BKM, V, V>, 1>(                                   \
      "sm80", DT, AK, BKM, SPLIT, V / dt_size(DT),                                                           \
      std::string("sm80 ") + dt_name(DT) + (AK ? " A:k" : " A:m") + (BKM ? " B:k " : " B:n ") + #BM "x" #BN \
          "x" #BK " w" #WM "x" #WN " s" #ST " v" #V + (SPLIT > 1 ? " sk" #SPLIT : ""))
#define SFF(BM, BN, BK, WM, WN, TM, TN, AK, BKM, V, MINB, SPLIT)                                            \
  add_regs<ffma::MainLoop<BM, BN, BK, WM, WN, TM, TN, AK, BKM, V, V>, MINB>(                                \
      "ffma", F32, AK, BKM, SPLIT, V,                                                                       \
      std::string("ffma f32") + (AK ? " A:k" : " A:m") + (BKM ? " B:k " : " B:n ") + #BM "x" #BN "x" #BK   \
          " w" #WM "x" #WN " t" #TM "x" #TN " v" #V " b" #MINB + (SPLIT > 1 ? " sk" #SPLIT : ""))

#if PART == 0
void register_part0() {
  S90(F16, 128, 256, 64, 2, 1, 4, true, false, true, 1);
  S90(F16, 128, 256, 64, 2, 1, 4, true, false, false, 1);
  S90(F16, 128, 256, 64, 2, 1, 3, true, false, true, 1);
  S90(F16, 128, 256, 64, 2, 1, 4, true, false, true, 3);
}
#elif PART == 1
void register_part1() {
  S90(F16, 128, 256, 64, 2, 1, 4, true, true, true, 1);
  S90(F16, 128, 256, 64, 2, 1, 4, false, false, true, 1);
  S90(F16, 256, 128, 64, 2, 1, 4, true, false, false, 1);
}
#elif PART == 2
void register_part2() {
  S90(F16, 128, 128, 64, 2, 1, 3, true, false, false, 1);
  S90(F16, 128, 128, 64, 2, 1, 3, true, false, true, 1);
  S90(F16, 128, 128, 64, 2, 1, 6, true, false, false, 1);
  S90(F16, 128, 128, 64, 1, 1, 6, true, false, false, 1);
}
#elif PART == 3
void register_part3() {
  S90(BF16, 128, 256, 64, 2, 1, 4, true, false, true, 1);
  S90(BF16, 128, 256, 64, 2, 1, 4, true, false, false, 1);
  S90(BF16, 128, 128, 64, 2, 1, 3, true, false, false, 1);
}
#elif PART == 4
void register_part4() {
  S90(TF32, 128, 256, 32, 2, 1, 4, true, true, true, 1);
  S90(TF32, 128, 128, 32, 2, 1, 6, true, true, false, 1);
  S90(F8E4M3, 128, 256, 128, 2, 1, 4, true, true, true, 1);
  S90(F8E4M3, 128, 256, 128, 2, 1, 4, true, true, false, 1);
  S90(F8E5M2, 128, 128, 128, 2, 1, 6, true, true, false, 1);
}
#elif PART == 5
void register_part5() {
  S80(F16, 128, 256, 32, 2, 4, 3, true, false, 16, 1);
  S80(F16, 128, 128, 32, 2, 2, 4, true, false, 16, 1);
  S80(F16, 128, 128, 32, 2, 4, 4, true, true, 16, 1);
  S80(F16, 128, 128, 32, 2, 4, 4, false, false, 16, 1);
  S80(F16, 128, 128, 32, 2, 4, 3, true, false, 4, 1);
}
#elif PART == 7
void register_part7() {
  S80(BF16, 128, 128, 64, 2, 4, 3, true, false, 16, 1);
  S80(TF32, 128, 128, 32, 2, 4, 3, true, true, 16, 1);
  S80(F8E4M3, 128, 128, 64, 2, 4, 4, true, true, 16, 1);
  S80(F16, 128, 128, 32, 2, 4, 4, true, false, 16, 4);
}
#elif PART == 6
void register_part6() {
  SFF(128, 128, 8, 2, 4, 8, 8, true, false, 4, 2, 1);
  SFF(128, 128, 8, 2, 4, 8, 8, true, false, 4, 1, 1);
  SFF(128, 128, 16, 2, 4, 8, 8, true, false, 4, 1, 1);
  SFF(128, 128, 8, 4, 2, 8, 8, true, false, 4, 2, 1);
  SFF(128, 64, 8, 2, 2, 8, 8, true, false, 4, 3, 1);
  SFF(128, 128, 8, 2, 4, 8, 8, true, true, 4, 2, 1);
  SFF(128, 128, 8, 2, 4, 8, 8, false, false, 4, 2, 1);
  SFF(128, 128, 8, 2, 4, 8, 8, true, false, 1, 1, 1);
  SFF(64, 64, 16, 2, 2, 4, 8, true, false, 4, 4, 1);
  SFF(128, 128, 8, 2, 4, 8, 8, true, false, 4, 2, 4);
}
#else
#include "harness_main.h"
#endif
