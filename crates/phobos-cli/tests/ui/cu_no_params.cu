// @autotune(BLOCK in [64, 256])
// @launch(BLOCK)
extern "C" __global__ void scale(float* x, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
