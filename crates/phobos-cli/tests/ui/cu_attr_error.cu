// A Phobos error inside an attribute comment is reported in the .cu file.
// @autotune(BLOCK in [256, 64])
// @launch(BLOCK)
// @params(X: tensor<f32>[N])
extern "C" __global__ void scale(float* x, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
