// Does a staged row's sum of exponentials cost time after its max? (bench/NOTES.md r30)
//
// examples/cross_entropy.ph's bf16 winner at 4096x50257 (WHOLE=1 PACK=4 ROW_SMEM=2, 512 threads,
// two blocks a multiprocessor) stages each row in shared memory by bulk copies, takes the row's
// max while its slabs land, and only then the sum of exp2(x log2e - m log2e): one MUFU.EX2 an
// element, with no copy of its own in flight. The kernels, one a binary:
//   VARIANT=0  that kernel's WHOLE=1 branch as `phobos emit` wrote it before ONE_PASS;
//   VARIANT=1  the same staged load read once (`own_max_sumexp2`, this file's first form of
//              ph::row_max_sumexp2): each thread keeps a running (max, sum) over its 8-element
//              groups as they land (the sum rescaled when the max grows), and the block combines
//              the pairs: the max of the maxima, then each sum rescaled to it;
//   VARIANT=2  VARIANT=1's kernel calling ph::row_max_sumexp2 (cuda/phobos_rowsmem.cuh);
//   KERNEL_FILE a kernel file `phobos emit` wrote (-Dcross_entropy=kern, and -DTHREADS_N and
//              -DSMEM_N from its `// launch:` line).
// Each binary checks Loss against a double-precision reference on 64 rows and times the kernel
// (CUDA events, the median of 20 back-to-back launches) and a device-to-device copy of the same
// bytes (read X's bytes / 2, write as many, as bench/rowwise.py counts them); FLUSH=1 zeroes a
// buffer twice L2's size before each timed launch (as the tuner and do_bench do).
//
// On the GPU machine (no Rust needed):
//   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Icrates/phobos-cuda/cuda \
//     -DVARIANT=1 bench/exp/lse.cu -o lse1 && ./lse1 [M] [V]
//   phobos emit examples/cross_entropy.ph --types T=bf16 --dims M=4096,V=50257 --autotune \
//     "BLOCK=57344 THREADS=512 ... ONE_PASS=1" > x.cu   (on this machine), then on the GPU's:
//   nvcc ... -DKERNEL_FILE='"x.cu"' -Dcross_entropy=kern -DTHREADS_N=512 -DSMEM_N=114880 \
//     bench/exp/lse.cu -o lsex && ./lsex 4096 50257
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "harness.h"
#include "phobos_prelude.cuh"
#include "phobos_reduce.cuh"
#include "phobos_rowpack.cuh"
#include "phobos_rowsmem.cuh"
#include "phobos_shifted.cuh"
#include "gemm/ptx.cuh"

using Blk = ph::Blocked<1, 57344, 512, 8>;
#ifndef THREADS_N
#define THREADS_N 512
#define SMEM_N 114880  // the emitted kernel's dynamic shared memory
#endif
constexpr int THREADS = THREADS_N;
constexpr int SMEM = SMEM_N;
constexpr int SCRATCH = 114816;
constexpr float LOG2E = 1.442695f;

#ifndef VARIANT
#define VARIANT 0
#endif

#if defined(KERNEL_FILE)
// A kernel as `phobos emit` writes it (compiled with -Dcross_entropy=kern), launched as the
// others.
#include KERNEL_FILE
#elif VARIANT == 0
// The emitted kernel's WHOLE=1 branch, unchanged.
extern "C" __global__ void __launch_bounds__(512, 2) kern(const ph::bf16* __restrict__ X, const int* __restrict__ Target, float* __restrict__ Loss, int M, int V) {
  extern __shared__ __align__(128) unsigned char ph_smem[];
  unsigned char* ph_resident = ph_smem + 0;
  ph::Scratch<64> ph_scratch{ph_smem + SCRATCH};
  const int r = (int)blockIdx.x;
  float m = -ph::inf_f32();
  float s = 0.0f;
  ph::SmemRow<ph::bf16, Blk, true> x = ph::load_row_smem_fill<Blk, ph::EVICT_NORMAL, true, true>(ph::Region<const ph::bf16>{X + (long long)r * V, 0, 0, 1, V, 0, 1, (unsigned)r < (unsigned)M}, V, -ph::inf_f32(), ph_resident + 0);
  const int target = ph::load1<true>(Target, r, M);
  m = ph::reduce_all_packed<ph::Max>(x, ph_scratch);
  const auto x_landed = ph::smem_row_landed(x);
  const float t = ph::load2<true>(X, r, target, M, V);
  __syncthreads();
  ph::Tile<float, Blk> ph_t2;
#pragma unroll
  for (int ph_i = 0; ph_i < Blk::N; ++ph_i) ph_t2.v[ph_i] = ph::exp2_approx(x_landed.v[ph_i] * LOG2E - m * LOG2E);
  s = ph::reduce_all_lanes<ph::Sum>(ph_t2, ph_scratch);
  if ((int)threadIdx.x == 0) ph::store1<true>(Loss, r, M, logf(s) + m - t);
}
#else
// The row's max and sum of exp2((x - max) a) in one pass over the staged row: each thread's
// running (max, sum) over its groups as each lands, then the block's combine. Masked columns hold
// -inf: they raise no max and add exp2(-inf) = 0 (a thread whose groups are all masked keeps
// (-inf, 0) and adds nothing).
template <class L, int BYTES, bool SL>
__device__ __forceinline__ float own_max_sumexp2(const ph::SmemRow<ph::bf16, L, SL>& p, float a, ph::Scratch<BYTES> sc, float& sum) {
  constexpr int WARPS = L::THREADS / 32;
  float* part = reinterpret_cast<float*>(sc.p);
  const int tid = threadIdx.x;
  float mt = -ph::inf_f32(), st = 0.0f;
#pragma unroll
  for (int j = 0; j < L::N / L::VEC; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    p.v.ready(p.v.w, j);
    if (!(ph::in_tile<L>(r, c) && ph::Owner<L>::at(tid, j * L::VEC))) continue;
    const uint4 q = ph::lds128(p.chunk(j));
    using P = ph::Packed2<ph::Max, ph::bf16>;
    const unsigned w = P::op(P::op(q.x, q.y), P::op(q.z, q.w));
    const float g = fmaxf(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
    // Rescaled to the new max (a MUFU a group; none where it did not grow: 1).
    const float ng = fmaxf(mt, g);
    st *= ng == mt ? 1.0f : ph::exp2_approx((mt - ng) * a);
    mt = ng;
    // While every element so far is -inf, mt is too: the offset 0 keeps exp2(-inf) = 0 where
    // -inf - -inf would give NaN.
    const float ms = mt == -ph::inf_f32() ? 0.0f : mt * a;
    st += ph::exp2_approx(__uint_as_float(q.x << 16) * a - ms) + ph::exp2_approx(__uint_as_float(q.x & 0xffff0000u) * a - ms);
    st += ph::exp2_approx(__uint_as_float(q.y << 16) * a - ms) + ph::exp2_approx(__uint_as_float(q.y & 0xffff0000u) * a - ms);
    st += ph::exp2_approx(__uint_as_float(q.z << 16) * a - ms) + ph::exp2_approx(__uint_as_float(q.z & 0xffff0000u) * a - ms);
    st += ph::exp2_approx(__uint_as_float(q.w << 16) * a - ms) + ph::exp2_approx(__uint_as_float(q.w & 0xffff0000u) * a - ms);
  }
  const float m = ph::combine_lanes<ph::Max, float, WARPS>(mt, part);
  __syncthreads();  // every warp read the maxima before the sums overwrite them
  const float own = mt == -ph::inf_f32() ? 0.0f : st * ph::exp2_approx((mt - m) * a);
  sum = ph::combine_lanes<ph::Sum, float, WARPS>(own, part);
  return m;
}

extern "C" __global__ void __launch_bounds__(512, 2) kern(const ph::bf16* __restrict__ X, const int* __restrict__ Target, float* __restrict__ Loss, int M, int V) {
  extern __shared__ __align__(128) unsigned char ph_smem[];
  unsigned char* ph_resident = ph_smem + 0;
  ph::Scratch<64> ph_scratch{ph_smem + SCRATCH};
  const int r = (int)blockIdx.x;
  ph::SmemRow<ph::bf16, Blk, true> x = ph::load_row_smem_fill<Blk, ph::EVICT_NORMAL, true, true>(ph::Region<const ph::bf16>{X + (long long)r * V, 0, 0, 1, V, 0, 1, (unsigned)r < (unsigned)M}, V, -ph::inf_f32(), ph_resident + 0);
  const int target = ph::load1<true>(Target, r, M);
  float s;
#if VARIANT == 1
  const float m = own_max_sumexp2(x, LOG2E, ph_scratch, s);
#else
  const float m = ph::row_max_sumexp2(x, LOG2E, ph_scratch, s);
#endif
  const float t = ph::load2<true>(X, r, target, M, V);
  if ((int)threadIdx.x == 0) ph::store1<true>(Loss, r, M, logf(s) + m - t);
}
#endif


int main(int argc, char** argv) {
  const int M = argc > 1 ? atoi(argv[1]) : 4096;
  const int V = argc > 2 ? atoi(argv[2]) : 50257;
  if (V > 57344 - 8 || V < 8) {
    fprintf(stderr, "V in 8..57336 (the tile is 57344 wide)\n");
    return 2;
  }
  std::vector<unsigned short> hx((size_t)M * V);
  std::vector<int> ht(M);
  unsigned long long seed = 12345;
  auto rnd = [&]() {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((seed >> 33) & 0xffffff) / 16777216.0f;
  };
  for (auto& v : hx) v = to_bf16(8.0f * rnd() - 4.0f);
  for (auto& t : ht) t = (int)(rnd() * V) % V;
  ph::bf16* dx;
  int* dt;
  float* dl;
  const size_t xbytes = hx.size() * 2;
  CK(cudaMalloc(&dx, xbytes));
  CK(cudaMalloc(&dt, M * 4));
  CK(cudaMalloc(&dl, M * 4));
  CK(cudaMemcpy(dx, hx.data(), xbytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dt, ht.data(), M * 4, cudaMemcpyHostToDevice));
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
  auto run = [&]() { kern<<<M, THREADS, SMEM>>>(dx, dt, dl, M, V); };
  CK(cudaMemset(dl, 0xff, M * 4));  // NaN: a row the kernel skips fails the check
  run();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> l(M);
  CK(cudaMemcpy(l.data(), dl, M * 4, cudaMemcpyDeviceToHost));
  // 64 rows spread over the problem against a double-precision reference.
  double worst = 0;
  for (int k = 0; k < 64; ++k) {
    const int r = (int)((long long)k * (M - 1) / 63);
    double mx = -1e300, s = 0;
    for (int c = 0; c < V; ++c) mx = std::max(mx, (double)from_bf16(hx[(size_t)r * V + c]));
    for (int c = 0; c < V; ++c) s += exp((double)from_bf16(hx[(size_t)r * V + c]) - mx);
    const double ref = log(s) + mx - from_bf16(hx[(size_t)r * V + ht[r]]);
    const double err = fabs(l[r] - ref) / std::max(1.0, fabs(ref));
    worst = std::isnan(err) ? INFINITY : std::max(worst, err);
  }
  flush_l2_if_asked();
  unsigned char *src, *dst;
  CK(cudaMalloc(&src, xbytes / 2));
  CK(cudaMalloc(&dst, xbytes / 2));
  const float tc = median_ms([&]() { CK(cudaMemcpyAsync(dst, src, xbytes / 2, cudaMemcpyDeviceToDevice)); });
  const float tk = median_ms(run);
  const double bytes = (double)xbytes + 8.0 * M;
  printf("%s%s M=%d V=%d: worst relative error %.2e (64 rows) | copy %.1f us | kernel %.1f us, %.2f TB/s, %.3fx copy\n",
#ifdef KERNEL_FILE
         KERNEL_FILE,
#else
         VARIANT == 0 ? "base " : VARIANT == 1 ? "own  " : "ph:: ",
#endif
         flush_buf ? " (L2 flushed)" : "", M, V, worst, tc * 1e3, tk * 1e3, bytes / (tk * 1e-3) / 1e12, tc / tk);
  return worst < 1e-4 ? 0 : 1;
}
