//! The hand-written CUDA kernels of the GPU tests, shared with the offline test that checks
//! they compile (so a GPU run never fails on a typo).

/// `y = a * x + y` over `N` elements, one thread each.
pub const SAXPY: &str = r#"
extern "C" __global__ void saxpy(float* y, const float* x, float a, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) y[i] = a * x[i] + y[i];
}
"#;

/// `out[M, N]` (row-major) = `inp[M, N]` (column-major) * `scale` (an f16 scalar passed as its
/// bits); 32 x 8 threads per block, masked at the ragged edges.
pub const COPY2D: &str = r#"
__device__ float h2f(unsigned short h) {
    float f;
    asm("{ cvt.f32.f16 %0, %1; }" : "=f"(f) : "h"(h));
    return f;
}
extern "C" __global__ void copy2d(float* out, const float* inp, unsigned short scale, int M, int N) {
    int j = blockIdx.x * 32 + threadIdx.x % 32;
    int i = blockIdx.y * 8 + threadIdx.x / 32;
    if (i < M && j < N) out[i * N + j] = inp[i + j * M] * h2f(scale);
}
"#;

/// Scalars of several C types after a pointer: `__half`, `__nv_bfloat16`, `signed char`,
/// `double`, `int` (needs the toolkit headers).
pub const HALF_SCALAR: &str = r#"
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void scale(float* y, __half h, __nv_bfloat16 b, signed char c, double d, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) y[i] = __half2float(h) * y[i] + __bfloat162float(b) + (float)c + (float)d;
}
"#;

/// A kernel with a chosen static shared memory and register appetite, for occupancy checks.
pub fn occupancy_kernel(smem_floats: usize) -> String {
    format!(
        r#"
extern "C" __global__ void occ(float* y, const float* x, int n) {{
    __shared__ float s[{smem_floats}];
    extern __shared__ float d[];
    float acc[24];
    #pragma unroll
    for (int j = 0; j < 24; j++) acc[j] = x[threadIdx.x + j * n];
    s[threadIdx.x % {smem_floats}] = acc[0];
    d[threadIdx.x] = acc[1];
    __syncthreads();
    float t = s[(threadIdx.x + 1) % {smem_floats}] + d[0];
    #pragma unroll
    for (int j = 0; j < 24; j++) t = t * acc[j] + acc[(j + 5) % 24];
    y[threadIdx.x] = t;
}}
"#
    )
}

/// Writes to an address nothing maps: a fault.
pub const WILD: &str = r#"
extern "C" __global__ void wild(float* p) {
    float* q = (float*)(0x10ull + threadIdx.x * 4);
    *q = p[0];
}
"#;
