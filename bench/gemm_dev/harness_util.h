// Host-side helpers of the GEMM development harness: error checks, random fills, the norm-wise
// error against a reference, TMA descriptor encoding (the same contract as the Rust TmaSpec),
// and cuBLAS / cuBLASLt references. Included once, by harness.cu.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gemm/ptx.cuh"

#define CK(x)                                                                       \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, \
              __LINE__, #x);                                                        \
      exit(2);                                                                      \
    }                                                                               \
  } while (0)
#define CB(x)                                                                      \
  do {                                                                             \
    cublasStatus_t s_ = (x);                                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                             \
      fprintf(stderr, "cuBLAS error %d at %s:%d: %s\n", (int)s_, __FILE__, __LINE__, #x); \
      exit(2);                                                                     \
    }                                                                              \
  } while (0)

using ph::gemm::Dt;

static const char* dt_name(int dt) {
  switch (dt) {
    case ph::gemm::F16: return "f16";
    case ph::gemm::BF16: return "bf16";
    case ph::gemm::TF32: return "tf32";
    case ph::gemm::F8E4M3: return "e4m3";
    case ph::gemm::F8E5M2: return "e5m2";
    case ph::gemm::I8: return "i8";
    default: return "f32";
  }
}
// Storage bytes (TF32 is stored as f32).
static int dt_size(int dt) { return ph::gemm::dt_bytes(dt); }

// ---- device utilities ---------------------------------------------------------------------------

__device__ __forceinline__ float hash_uniform(unsigned long long i, unsigned long long seed) {
  unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 32;
  return (float)((x >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;  // [-1, 1)
}

static __global__ void fill_kernel(void* p, size_t n, int dt, unsigned long long seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float v = hash_uniform(i, seed);
    switch (dt) {
      case ph::gemm::F16: ((__half*)p)[i] = __float2half(v); break;
      case ph::gemm::BF16: ((__nv_bfloat16*)p)[i] = __float2bfloat16(v); break;
      case ph::gemm::F8E4M3: ((__nv_fp8_e4m3*)p)[i] = __nv_fp8_e4m3(v * 4.0f); break;
      case ph::gemm::F8E5M2: ((__nv_fp8_e5m2*)p)[i] = __nv_fp8_e5m2(v * 4.0f); break;
      default: ((float*)p)[i] = v; break;
    }
  }
}

// fp8 -> f16 is exact (every e4m3/e5m2 value is an f16 value): the f16 GEMM of the converted
// operands is the exact reference of the fp8 one (up to summation order).
static __global__ void fp8_to_f16_kernel(const void* src, __half* dst, size_t n, int dt) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float v = dt == ph::gemm::F8E4M3 ? (float)((const __nv_fp8_e4m3*)src)[i]
                                     : (float)((const __nv_fp8_e5m2*)src)[i];
    dst[i] = __float2half(v);
  }
}

static __global__ void err_kernel(const float* out, const float* ref, size_t n, double* acc) {
  double d2 = 0, r2 = 0, bad = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const double o = out[i], r = ref[i];
    if (!isfinite(o)) bad += 1;
    else d2 += (o - r) * (o - r);
    r2 += r * r;
  }
  atomicAdd(acc + 0, d2);
  atomicAdd(acc + 1, r2);
  atomicAdd(acc + 2, bad);
}

static void fill_random(void* p, size_t n, int dt, unsigned long long seed) {
  fill_kernel<<<1024, 256>>>(p, n, dt, seed);
  CK(cudaGetLastError());
}

struct ErrResult {
  double rel;
  long long nonfinite;
};
static ErrResult rel_error(const float* out, const float* ref, size_t n) {
  static double* acc = nullptr;
  if (!acc) CK(cudaMalloc(&acc, 3 * sizeof(double)));
  CK(cudaMemset(acc, 0, 3 * sizeof(double)));
  err_kernel<<<1024, 256>>>(out, ref, n, acc);
  CK(cudaGetLastError());
  double h[3];
  CK(cudaMemcpy(h, acc, sizeof(h), cudaMemcpyDeviceToHost));
  return {std::sqrt(h[0] / (h[1] > 0 ? h[1] : 1.0)), (long long)h[2]};
}

// ---- TMA descriptors: the host contract of ph::gemm::sm90 (mirrors gemm_fast_tma.rs) -----------

// One operand: rank 2, dims {inner, outer} = {k_dim, mn_dim} for K-major operands, {mn_dim,
// k_dim} otherwise; stride of the outer dim = ld * element bytes (a multiple of 16); box
// {128 / element bytes, box_outer}; element strides 1; no interleave; 128-byte swizzle; L2
// promotion 256 B; out-of-bounds fill NONE (zeros). TF32 data is encoded as FLOAT32 (the MMA
// reads the tf32 bits of each f32), fp8 as UINT8.
static CUtensorMap encode_tma(const void* p, int dt, bool kmajor, int mn_dim, int k_dim, long long ld,
                              int box_outer) {
  CUtensorMapDataType t;
  switch (dt) {
    case ph::gemm::F16: t = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case ph::gemm::BF16: t = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case ph::gemm::TF32: t = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    default: t = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
  }
  const int es = dt_size(dt);
  cuuint64_t dims[2] = {(cuuint64_t)(kmajor ? k_dim : mn_dim), (cuuint64_t)(kmajor ? mn_dim : k_dim)};
  cuuint64_t strides[1] = {(cuuint64_t)(ld * es)};
  cuuint32_t box[2] = {(cuuint32_t)(128 / es), (cuuint32_t)box_outer};
  cuuint32_t estr[2] = {1, 1};
  CUtensorMap m;
  CUresult r = cuTensorMapEncodeTiled(&m, t, 2, const_cast<void*>(p), dims, strides, box, estr,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "cuTensorMapEncodeTiled failed (%d): dims %llu x %llu stride %llu box %u x %u\n", (int)r,
            (unsigned long long)dims[0], (unsigned long long)dims[1], (unsigned long long)strides[0], box[0], box[1]);
    exit(2);
  }
  return m;
}

// ---- cuBLAS: row-major C[M, N] = A . B as the column-major C^T = B^T . A^T -------------------------

static cudaDataType cuda_type(int dt) {
  switch (dt) {
    case ph::gemm::F16: return CUDA_R_16F;
    case ph::gemm::BF16: return CUDA_R_16BF;
    case ph::gemm::F8E4M3: return CUDA_R_8F_E4M3;
    case ph::gemm::F8E5M2: return CUDA_R_8F_E5M2;
    default: return CUDA_R_32F;
  }
}

// A K-major: [M][K] (lda K); M-major: [K][M] (lda M). B K-major: [N][K] (ldb K); N-major: [K][N].
static void cublas_gemm(cublasHandle_t h, int dt, bool tf32, bool a_k, bool b_k, int M, int N, int K,
                        const void* A, long long lda, const void* B, long long ldb, float* C,
                        cudaDataType ctype = CUDA_R_32F) {
  const float one = 1.f, zero = 0.f;
  const cublasOperation_t opX = b_k ? CUBLAS_OP_T : CUBLAS_OP_N;  // X = B memory
  const cublasOperation_t opY = a_k ? CUBLAS_OP_N : CUBLAS_OP_T;  // Y = A memory
  const cudaDataType t = cuda_type(dt);
  const cublasComputeType_t ct =
      dt == ph::gemm::F32 || dt == ph::gemm::TF32 ? (tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_PEDANTIC)
                                                  : CUBLAS_COMPUTE_32F;
  CB(cublasGemmEx(h, opX, opY, N, M, K, &one, B, t, (int)ldb, A, t, (int)lda, &zero, C, ctype, N, ct,
                  CUBLAS_GEMM_DEFAULT));
}

// cuBLASLt fp8 (TN only: both operands K-major), f32 output. The plan (descriptors and the
// heuristic's algorithm) is made on the first call and reused, so timed calls only launch.
// Returns false when cuBLASLt has no algorithm for it.
struct LtFp8 {
  cublasLtHandle_t lt = nullptr;
  void* ws = nullptr;
  size_t ws_bytes = 64 << 20;
  bool planned = false, ok = false;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t lx, ly, lc;
  cublasLtMatmulHeuristicResult_t res;
  bool run(int dt, int M, int N, int K, const void* A, const void* B, float* C, cudaStream_t s) {
    if (!planned) {
      planned = true;
      if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return false;
      CK(cudaMalloc(&ws, ws_bytes));
      if (cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return false;
      cublasOperation_t tT = CUBLAS_OP_T, tN = CUBLAS_OP_N;
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tT, sizeof(tT));
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tN, sizeof(tN));
      const cudaDataType t = cuda_type(dt);
      cublasLtMatrixLayoutCreate(&lx, t, K, N, K);  // B memory: col-major K x N
      cublasLtMatrixLayoutCreate(&ly, t, K, M, K);  // A memory: col-major K x M
      cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, N, M, N);
      cublasLtMatmulPreference_t pref;
      cublasLtMatmulPreferenceCreate(&pref);
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                           sizeof(ws_bytes));
      int n = 0;
      ok = cublasLtMatmulAlgoGetHeuristic(lt, op, lx, ly, lc, lc, pref, 1, &res, &n) == CUBLAS_STATUS_SUCCESS && n > 0;
      cublasLtMatmulPreferenceDestroy(pref);
    }
    if (!ok) return false;
    const float one = 1.f, zero = 0.f;
    return cublasLtMatmul(lt, op, &one, B, lx, A, ly, &zero, C, lc, C, lc, &res.algo, ws, ws_bytes, s) ==
           CUBLAS_STATUS_SUCCESS;
  }
};

// ---- timing ---------------------------------------------------------------------------------------

// Median time (ms) of `fn` over `reps` runs after `warm` runs, with the L2 flushed before each.
template <class F>
static double time_median(F fn, int warm, int reps) {
  static void* flush = nullptr;
  const size_t flush_bytes = 256ull << 20;
  if (!flush) CK(cudaMalloc(&flush, flush_bytes));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < warm; ++i) fn();
  CK(cudaDeviceSynchronize());
  std::vector<double> ts;
  for (int i = 0; i < reps; ++i) {
    CK(cudaMemsetAsync(flush, i & 0xff, flush_bytes));
    CK(cudaEventRecord(a));
    fn();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    ts.push_back(ms);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
