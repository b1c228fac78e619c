// Row sums, Y[r] = sum of X[r, :], one block per row: each thread adds ITEMS neighbours per
// step of BLOCK * ITEMS, then the block adds its threads' sums with warp shuffles and one
// round through shared memory. Tuned with
//
//   phobos-kbench examples/cuda/reduction.cu --dims M=4096,N=8192 --report
//
// BLOCK sets the threads per block (@launch) and the template argument of block_sum;
// MIN_BLOCKS the second argument of __launch_bounds__ (resident blocks per SM the compiler
// must allow, so fewer registers per thread).

template <int THREADS>
__device__ float block_sum(float v) {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");
  __shared__ float warp_sums[THREADS / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < THREADS / 32 ? warp_sums[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  }
  return v;
}

// @autotune(BLOCK in [64, 1024], MIN_BLOCKS in [1, 4], ITEMS in {1, 2, 4})
// @where(BLOCK * MIN_BLOCKS <= 2048)
// @launch(BLOCK)
// @grid(M)
// @flops(M * N)
// @bytes(4 * (M * N + M))
// @params(X: tensor<f32>[M, N], Y: tensor<f32>[M])
extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
row_sum(const float* __restrict__ x, float* __restrict__ y, int m, int n) {
  const float* row = x + (size_t)blockIdx.x * n;
  float acc = 0.0f;
  for (int i = threadIdx.x * ITEMS; i < n; i += BLOCK * ITEMS) {
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      if (i + j < n) acc += row[i + j];
    }
  }
  acc = block_sum<BLOCK>(acc);
  if (threadIdx.x == 0 && blockIdx.x < m) y[blockIdx.x] = acc;
}
