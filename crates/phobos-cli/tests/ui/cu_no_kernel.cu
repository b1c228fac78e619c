extern "C" __global__ void scale(float* x, int n) {
  if (threadIdx.x < n) x[threadIdx.x] *= 2.0f;
}
// @launch(128)
// @params(X: tensor<f32>[N])
