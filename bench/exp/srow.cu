// bench/NOTES.md r36: an emitted bf16 softmax_row kernel (KERNEL_FILE, compiled with
// -Dsoftmax_row=kern -DTHREADS_N -DSMEM_N from its `// launch:` line) checked against a
// double-precision reference on 16 rows and timed (CUDA events, the median of 20 launches) against
// a device-to-device copy of the same bytes (X's bytes read, as many written); FLUSH=1 zeroes a
// buffer twice L2's size before each timed launch, as the tuner and do_bench do.
//   nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Icrates/phobos-cuda/cuda -Ibench/exp \
//     -DKERNEL_FILE='"x.cu"' -Dsoftmax_row=kern -DTHREADS_N=1024 -DSMEM_N=114896 bench/exp/srow.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness.h"
#include KERNEL_FILE


int main(int argc, char** argv) {
  const int M = argc > 1 ? atoi(argv[1]) : 2048;
  const int N = argc > 2 ? atoi(argv[2]) : 50257;
  std::vector<unsigned short> hx((size_t)M * N);
  unsigned long long seed = 12345;
  auto rnd = [&]() {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((seed >> 33) & 0xffffff) / 16777216.0f;
  };
  for (auto& v : hx) v = to_bf16(8.0f * rnd() - 4.0f);
  const size_t bytes = hx.size() * 2;
  ph::bf16 *dx, *dy;
  CK(cudaMalloc(&dx, bytes));
  CK(cudaMalloc(&dy, bytes));
  CK(cudaMemcpy(dx, hx.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_N));
#ifndef CLUSTER_X
#define CLUSTER_X 1  // ROW_SPLIT's blocks an instance (the kernel's __cluster_dims__)
#endif
  auto run = [&]() { kern<<<M * CLUSTER_X, THREADS_N, SMEM_N>>>(dx, dy, M, N); };
  CK(cudaMemset(dy, 0xff, bytes));  // NaN: a row the kernel skips fails the check
  run();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<unsigned short> hy(hx.size());
  CK(cudaMemcpy(hy.data(), dy, bytes, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int k = 0; k < 16; ++k) {
    const int r = (int)((long long)k * (M - 1) / 15);
    const unsigned short* x = &hx[(size_t)r * N];
    double mx = -1e300, s = 0;
    for (int c = 0; c < N; ++c) mx = std::max(mx, (double)from_bf16(x[c]));
    for (int c = 0; c < N; ++c) s += exp((double)from_bf16(x[c]) - mx);
    for (int c = 0; c < N; ++c) {
      const double ref = exp((double)from_bf16(x[c]) - mx) / s;
      const double err = fabs(from_bf16(hy[(size_t)r * N + c]) - ref) / ref;
      worst = std::isnan(err) ? INFINITY : std::max(worst, err);
    }
  }
  // Every row: finite, and its values sum to 1 (to bf16's rounding).
  int bad_rows = 0;
  for (int r = 0; r < M; ++r) {
    double s = 0;
    for (int c = 0; c < N; ++c) s += from_bf16(hy[(size_t)r * N + c]);
    if (!(fabs(s - 1.0) < 1e-2)) ++bad_rows;
  }
  if (bad_rows > 0) worst = INFINITY;
  flush_l2_if_asked();
  unsigned char *src, *dst;
  CK(cudaMalloc(&src, bytes));
  CK(cudaMalloc(&dst, bytes));
  float tc = 0, tk = 0;
  for (int round = 0; round < 2; ++round) {
    tc = median_ms([&]() { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); });
    tk = median_ms(run);
    printf("%s PF_D=%d%s M=%d N=%d: worst relative error %.2e (16 rows), %d rows not summing to 1 | copy %.1f us | kernel %.1f us, %.3fx copy\n",
           KERNEL_FILE, PF_D, flush_buf ? " (L2 flushed)" : "", M, N, worst, bad_rows, tc * 1e3, tk * 1e3, tc / tk);
  }
  return worst < 1e-2 ? 0 : 1;
}
