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

/// One TMA copy of a rank-3 box (`cp.async.bulk.tensor.3d`, one mbarrier with `expect_tx`) into
/// 1024-byte aligned shared memory, whose bytes are then written out as they lie (swizzle
/// included). `bytes`: the box's size (at most 16 KiB). sm_90 and later.
pub const TMA_BOX3: &str = r#"
struct __align__(64) TmaDesc { unsigned long long v[16]; };
extern "C" __global__ void tma_box3(unsigned short* out, const __grid_constant__ TmaDesc map,
                                    int c0, int c1, int c2, int bytes) {
    __shared__ __align__(1024) unsigned short buf[8192];
    __shared__ __align__(8) unsigned long long bar;
    unsigned sb = (unsigned)__cvta_generic_to_shared(buf);
    unsigned mb = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(mb) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(mb), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3, %4}], [%5];"
                     :: "r"(sb), "l"((unsigned long long)&map), "r"(c0), "r"(c1), "r"(c2), "r"(mb)
                     : "memory");
    }
    asm volatile("{\n .reg .pred p;\n WAIT_%=:\n"
                 " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n"
                 " @!p bra WAIT_%=;\n}" :: "r"(mb) : "memory");
    for (int i = threadIdx.x; i < bytes / 2; i += blockDim.x) out[i] = buf[i];
}
"#;
