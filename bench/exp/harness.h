// Host helpers of the bench/exp harnesses (lse.cu, srow.cu, tr.cu): CUDA error checks, bf16
// conversions, and the timer: CUDA events around each launch, the median of 20 after 3 warm-up
// launches, with L2 optionally flushed before each (bench/NOTES.md r34: a buffer of twice L2's size
// zeroed outside the events, as the tuner and do_bench flush it; L2 then holds that buffer's
// written lines when the launch starts).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                             \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

static unsigned short to_bf16(float f) {
  unsigned u;
  memcpy(&u, &f, 4);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
static float from_bf16(unsigned short h) {
  unsigned u = (unsigned)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// The L2 flush before each timed launch: none until `flush_l2()` allocates its buffer.
static void* flush_buf = nullptr;
static size_t flush_bytes = 0;
static void flush_l2() {
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  flush_bytes = 2 * (size_t)l2;
  CK(cudaMalloc(&flush_buf, flush_bytes));
}
// FLUSH=1 in the environment: flush L2 before each timed launch.
static void flush_l2_if_asked() {
  if (getenv("FLUSH") && atoi(getenv("FLUSH")) == 1) flush_l2();
}

template <class F> static float median_ms(F f) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> ts;
  for (int i = 0; i < 23; ++i) {
    if (flush_buf) CK(cudaMemsetAsync(flush_buf, 0, flush_bytes));
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (i >= 3) ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
