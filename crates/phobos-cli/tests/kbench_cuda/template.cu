// A C++ template kernel: the point's BLOCK instantiates it (explicitly, below), and the tuner
// finds its mangled entry in the compiled code.
// @autotune(BLOCK in [64, 256])
// @launch(BLOCK)
// @grid(cdiv(N, BLOCK))
// @params(X: tensor<f32>[N])
template <int B>
__global__ void __launch_bounds__(B) scale(float* x, int n) {
  int i = blockIdx.x * B + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
template __global__ void scale<BLOCK>(float*, int);
