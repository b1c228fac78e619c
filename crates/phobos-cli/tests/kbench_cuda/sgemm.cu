// A naive f32 GEMM in CUDA C++, C = A @ B: one thread per element of C, TILE x TILE threads a
// block. The GEMM flags (-m/-n/-k, --dtype-*) and -o apply to it as to a Phobos GEMM.
// @autotune(TILE in [8, 32])
// @launch(TILE * TILE)
// @grid(cdiv(N, TILE), cdiv(M, TILE))
// @flops(2 * M * N * K)
// @params(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N])
extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm(const float* a, const float* b, float* c, int m, int k, int n) {
  const int col = blockIdx.x * TILE + threadIdx.x % TILE;
  const int row = blockIdx.y * TILE + threadIdx.x / TILE;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += a[(size_t)row * k + i] * b[(size_t)i * n + col];
  c[(size_t)row * n + col] = acc;
}
