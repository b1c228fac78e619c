// y = a * x + y with VEC-wide loads. Vec<VEC> exists for 1, 2 and 4 floats only, so the
// points with VEC = 8 do not compile: the tuner reports them (NVRTC's first error line,
// `--report` the whole log) and tunes the others.
//
//   phobos-kbench examples/cuda/compile_error.cu --dims N=16777216 --arg a=2 --report

template <int V> struct Vec;
template <> struct Vec<1> { using T = float; };
template <> struct Vec<2> { using T = float2; };
template <> struct Vec<4> { using T = float4; };

// @autotune(BLOCK in [128, 512], VEC in {1, 2, 4, 8})
// @launch(BLOCK)
// @grid(cdiv(N, BLOCK * VEC))
// @where(N % VEC == 0)
// @flops(2 * N)
// @bytes(12 * N)
// @params(X: tensor<f32>[N], Y: tensor<f32>[N], a: f32)
extern "C" __global__ void __launch_bounds__(BLOCK)
saxpy(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
  using T = typename Vec<VEC>::T;
  const int i = (blockIdx.x * BLOCK + threadIdx.x) * VEC;
  if (i + VEC <= n) {
    T xv = *reinterpret_cast<const T*>(x + i);
    T yv = *reinterpret_cast<T*>(y + i);
    const float* xs = reinterpret_cast<const float*>(&xv);
    float* ys = reinterpret_cast<float*>(&yv);
#pragma unroll
    for (int j = 0; j < VEC; ++j) ys[j] = a * xs[j] + ys[j];
    *reinterpret_cast<T*>(y + i) = yv;
  }
}
