// bench/NOTES.md r37: an emitted f32 transpose kernel (KERNEL_FILE, compiled with
// -Dtranspose=kern -DTHREADS_N -DSMEM_N from its `// launch:` line, TILE_R and TILE_C its tile)
// run at any M x N (argv), checked element for element against X's transpose, and timed (CUDA
// events, the median of 20 launches, L2 flushed before each as the tuner does) against a
// device-to-device copy of the same bytes. ELEM: the element type in memory (float by default;
// `unsigned short` for 2-byte kernels, with KELEM the kernel's pointer type, ph::bf16, r51).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "harness.h"
#include KERNEL_FILE

#ifndef ELEM
#define ELEM float
#endif
#ifndef KELEM
#define KELEM ELEM
#endif

int main(int argc, char** argv) {
  const int M = atoi(argv[1]), N = atoi(argv[2]);
  std::vector<ELEM> hx((size_t)M * N);
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = (ELEM)(sizeof(ELEM) == 4 ? i % 1000003 : (i * 2654435761u) >> 7);
  const size_t bytes = hx.size() * sizeof(ELEM);
  ELEM *dx, *dy;
  CK(cudaMalloc(&dx, bytes));
  CK(cudaMalloc(&dy, bytes));
  CK(cudaMemcpy(dx, hx.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemset(dy, 0xff, bytes));
  if (SMEM_N > 0) CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_N));
  const dim3 grid((M + TILE_R - 1) / TILE_R, (N + TILE_C - 1) / TILE_C);
  auto run = [&]() { kern<<<grid, THREADS_N, SMEM_N>>>((const KELEM*)dx, (KELEM*)dy, M, N); };
  run();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<ELEM> hy(hx.size());
  CK(cudaMemcpy(hy.data(), dy, bytes, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) bad += hy[(size_t)c * M + r] != hx[(size_t)r * N + c];
  flush_l2();
  unsigned char *src, *dst;
  CK(cudaMalloc(&src, bytes));
  CK(cudaMalloc(&dst, bytes));
  for (int round = 0; round < 2; ++round) {
    const float tc = median_ms([&]() { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); });
    const float tk = median_ms(run);
    printf("%s %dx%d: %zu wrong | copy %.1f us | kernel %.1f us, %.2f TB/s, %.3fx copy\n", KERNEL_FILE, M, N, bad, tc * 1e3, tk * 1e3,
           2.0 * bytes / (tk * 1e-3) / 1e12, tc / tk);
  }
  return bad == 0 ? 0 : 1;
}
