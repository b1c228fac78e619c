// @autotune(BLOCK in [64, 256])
// @launch(BLOCK)
// @grid(cdiv(N, BLOCK))
// @params(X: tensor<f16>[N], Y: tensor<f32>[N], a: f32)
extern "C" __global__ void saxpy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
