// y = a * x + y, except at BUG = 1, where the last element of every block is left alone: the
// tuner must report those points as wrong and never pick them.
// @autotune(BLOCK in [64, 256], BUG in {0, 1})
// @launch(BLOCK)
// @grid(cdiv(N, BLOCK))
// @params(X: tensor<f32>[N], Y: tensor<f32>[N], a: f32)
extern "C" __global__ void __launch_bounds__(BLOCK)
saxpy(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (BUG && threadIdx.x == BLOCK - 1) return;
  if (i < n) y[i] = a * x[i] + y[i];
}
