// Thin wrappers over the PTX instructions the GEMM main loops use: cp.async, ldmatrix, mma.sync,
// mbarrier, the bulk tensor copy (TMA) and the wgmma fences. Each wrapper is one instruction; the
// main loops own every ordering decision (which barrier, which wait) and say why where they use it.
// Compiles under NVRTC (no CUDA headers): only built-in types.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define PH_GEMM_HD __host__ __device__
#define PH_GEMM_DEV __device__ __forceinline__
#else
#define PH_GEMM_HD
#define PH_GEMM_DEV inline
#endif

namespace ph {
namespace gemm {

typedef unsigned int u32;
typedef unsigned long long u64;

/// Element types of GEMM operands, as template arguments.
enum Dt : int { F16 = 0, BF16 = 1, TF32 = 2, F8E4M3 = 3, F8E5M2 = 4, I8 = 5, F32 = 6 };

/// Bytes of one element of an operand type.
PH_GEMM_HD constexpr int dt_bytes(int dt) {
  return (dt == F16 || dt == BF16) ? 2 : (dt == TF32 || dt == F32) ? 4 : 1;
}

/// Out-of-tile coordinate a layout reports for a register that holds no element. Large enough
/// that `m0 + OOB >= M` for any real extent, so even a store that only checks the global bounds
/// drops it; the epilogue should still check `r < L::R && c < L::C`.
constexpr int OOB = 1 << 30;

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

PH_GEMM_DEV u32 smem_u32(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// ---- cp.async (sm_80+) -------------------------------------------------------------------------

/// 16-byte global->shared copy that reads `src_bytes` (0..16) and zero-fills the rest; .cg skips
/// L1, which is what streaming tiles want. `src` must be a valid address even when src_bytes is 0.
PH_GEMM_DEV void cp_async16(u32 dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
/// 8-byte variant (.ca: .cg only exists for 16 bytes).
PH_GEMM_DEV void cp_async8(u32 dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
/// 4-byte variant.
PH_GEMM_DEV void cp_async4(u32 dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
template <int BYTES>
PH_GEMM_DEV void cp_async(u32 dst, const void* src, int src_bytes) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async moves 4, 8 or 16 bytes");
  if (BYTES == 16) cp_async16(dst, src, src_bytes);
  else if (BYTES == 8) cp_async8(dst, src, src_bytes);
  else cp_async4(dst, src, src_bytes);
}
/// A 1- or 2-byte global load, zero-extended into 32 bits: the register-staged copies of
/// operands aligned to under 4 bytes (no cp.async moves them). A plain load, not the read-only
/// path: nothing promises that the kernel never writes the operand, and the compiler keeps an
/// ordinary load on the right side of the block barriers.
template <int BYTES>
PH_GEMM_DEV u32 ldg_narrow(const void* src) {
  static_assert(BYTES == 1 || BYTES == 2, "narrow loads move 1 or 2 bytes");
  if (BYTES == 2) return *static_cast<const unsigned short*>(src);
  return *static_cast<const unsigned char*>(src);
}
PH_GEMM_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
PH_GEMM_DEV void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// ---- ldmatrix / mma.sync ----------------------------------------------------------------------

PH_GEMM_DEV void ldsm_x4(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
PH_GEMM_DEV void ldsm_x4_t(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
PH_GEMM_DEV u32 lds32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

/// One warp-level MMA D += A*B with f32 (or s32) accumulators, m16n8kK, A row / B col fragments.
/// The instruction shape follows the element type: k16 for f16/bf16, k8 for tf32, k32 for 8-bit.
template <int DT>
struct Mma;

template <>
struct Mma<F16> {
  static constexpr int K = 16;
  PH_GEMM_DEV static void run(float* d, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Mma<BF16> {
  static constexpr int K = 16;
  PH_GEMM_DEV static void run(float* d, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Mma<TF32> {
  static constexpr int K = 8;
  PH_GEMM_DEV static void run(float* d, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Mma<F8E4M3> {
  static constexpr int K = 32;
  PH_GEMM_DEV static void run(float* d, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Mma<F8E5M2> {
  static constexpr int K = 32;
  PH_GEMM_DEV static void run(float* d, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct Mma<I8> {
  static constexpr int K = 32;
  // s32 accumulators travel in the same registers as floats: the layout is the same, and the
  // epilogue reads them through the acc tile's element type (int).
  PH_GEMM_DEV static void run(int* d, const u32* a, const u32* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

// ---- mbarrier (sm_90) -------------------------------------------------------------------------

PH_GEMM_DEV void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
PH_GEMM_DEV void mbar_inval(u32 bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
/// Makes initialized barriers visible to the async proxy (the copy engine) and other threads;
/// a __syncthreads must follow before anyone uses them.
PH_GEMM_DEV void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
PH_GEMM_DEV void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
/// Arrives once and raises the phase's expected transaction count by `bytes`.
PH_GEMM_DEV void mbar_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
/// Blocks until the phase with parity `parity` has completed (returns at once for the phase
/// before the current one, which is how a producer skips its first wait on an empty slot).
/// Defining PH_GEMM_WAIT_LIMIT (a count of tries, each a bounded hardware wait) turns a wait
/// that never completes, a pipeline bug, into a trap instead of a hang (development builds).
PH_GEMM_DEV void mbar_wait(u32 bar, u32 parity) {
  u32 done;
#ifdef PH_GEMM_WAIT_LIMIT
  u32 tries = 0;
#endif
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
#ifdef PH_GEMM_WAIT_LIMIT
    if (!done && ++tries > (u32)(PH_GEMM_WAIT_LIMIT)) __trap();
#endif
  } while (!done);
}

/// mbar_wait as one asm statement, its retry loop inside (PTX labels are local to the braces):
/// straight-line code to the compiler, which keeps scheduling the arithmetic around it across
/// several waits; on a completed phase it is one try.
PH_GEMM_DEV void mbar_wait_inline(u32 bar, u32 parity) {
  asm volatile(
      "{\n .reg .pred p;\n WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT;\n}\n" ::"r"(
          bar),
      "r"(parity)
      : "memory");
}

// ---- bulk copy of contiguous bytes (sm_90) ----------------------------------------------------

/// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global `src` to shared `dst`,
/// completing on mbarrier `bar` as transaction bytes.
PH_GEMM_DEV void bulk_copy_g2s(u32 dst, const void* src, u32 bytes, u32 bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// ---- bulk tensor copy (TMA, sm_90) ------------------------------------------------------------

/// 2-D tiled TMA load of one box at element coordinates (c0 innermost, c1) into shared memory,
/// completing `bytes` of transactions on `bar`. Out-of-bounds elements arrive as zeros when the
/// map was encoded with CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE.
PH_GEMM_DEV void tma_load_2d(u32 dst, const void* tmap, int c0, int c1, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
/// The multicast form (a thread block cluster): the box lands at the same shared-memory offset
/// `dst` in every block of the cluster named in `mask` (bit r: the block of rank r), and its
/// bytes complete on the barrier at offset `bar` of each of them.
PH_GEMM_DEV void tma_load_2d_multicast(u32 dst, const void* tmap, int c0, int c1, u32 bar,
                                       unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory");
}

// ---- thread block clusters (sm_90) ------------------------------------------------------------

/// This block's rank in its cluster.
PH_GEMM_DEV u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
/// Every thread of every block of the cluster arrives, then waits for all the others: the
/// cluster-wide __syncthreads (release/acquire: shared-memory writes and barrier arrives before
/// it are visible to every block of the cluster after it).
PH_GEMM_DEV void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
/// `cluster_sync` without the release: orders execution only (no MEMBAR.ALL.GPU before the
/// arrive), for a barrier that publishes no memory writes, e.g. "every block is done with its
/// shared memory".
PH_GEMM_DEV void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}
/// Arrives on the barrier at shared-memory offset `bar` of the cluster's block of rank `rank`
/// (this block's own included). The default semantics (release at CTA scope), as for a local
/// arrive: what the arrive publishes is that this warp's MMAs are done reading a slot, which
/// `wgmma_wait` already established. `.release.cluster` would put a GPU-wide memory barrier
/// (MEMBAR.ALL.GPU) before every arrive, which halved the speed of the clustered main loop.
PH_GEMM_DEV void mbar_arrive_cluster(u32 bar, u32 rank) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
/// Stores four floats at shared-memory offset `addr` of the cluster's block of rank `rank`
/// (distributed shared memory; visible to that block after the next `cluster_sync`).
PH_GEMM_DEV void st_cluster_v4(u32 addr, u32 rank, float a, float b, float c, float d) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(remote), "f"(a), "f"(b),
               "f"(c), "f"(d)
               : "memory");
}
/// Loads four floats from this block's shared memory at offset `addr`.
PH_GEMM_DEV void ld_shared_v4(u32 addr, float& a, float& b, float& c, float& d) {
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(a), "=f"(b), "=f"(c), "=f"(d)
               : "r"(addr)
               : "memory");
}
/// Orders this thread's earlier generic-proxy accesses of shared memory before later
/// async-proxy ones (the copy engine's writes, wgmma's reads) once a barrier has joined them.
PH_GEMM_DEV void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
PH_GEMM_DEV void tma_prefetch_desc(const void* tmap) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tmap) : "memory");
}
/// A 2-D TMA store of one box from shared memory (`src`) to the tensor at element coordinates
/// (c0 innermost, c1), in the issuing thread's current bulk async-group; the parts of the box
/// outside the tensor are not written.
PH_GEMM_DEV void tma_store_2d(const void* tmap, u32 src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(tmap),
               "r"(src), "r"(c0), "r"(c1)
               : "memory");
}
PH_GEMM_DEV void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/// Waits until at most N of this thread's bulk async-groups still read their shared memory.
template <int N>
PH_GEMM_DEV void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
/// Waits until at most N of this thread's bulk async-groups are incomplete (their writes to
/// global memory done and visible).
template <int N>
PH_GEMM_DEV void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
/// Named barrier `id` (1..15; 0 is __syncthreads) over `count` threads (a multiple of 32).
PH_GEMM_DEV void named_bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
PH_GEMM_DEV void sts32(u32 addr, u32 v) { asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory"); }
PH_GEMM_DEV void sts64(u32 addr, u32 a, u32 b) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(addr), "r"(a), "r"(b) : "memory");
}
PH_GEMM_DEV void sts16(u32 addr, unsigned short v) {
  asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(addr), "h"(v) : "memory");
}
PH_GEMM_DEV void sts128(u32 addr, u32 a, u32 b, u32 c, u32 d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
/// Shifted loads of 2-byte data: the 8 elements at element offset sh (0..7) of the 16 elements
/// of lo:hi, two aligned 16-byte vectors (word i of the result: elements sh + 2i, sh + 2i + 1).
/// Two selects a word pick the words, a funnel shift a word the halves. Used by the mma.sync
/// loop's shifted operand copies (sm80.cuh) and the shifted row loads (phobos_shifted.cuh).
PH_GEMM_DEV uint4 shift8(const uint4& lo, const uint4& hi, int sh) {
  const u32 w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const int q = sh >> 1;
  u32 a[6], b[5];
#pragma unroll
  for (int i = 0; i < 6; ++i) a[i] = (q & 2) ? w[i + 2] : w[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) b[i] = (q & 1) ? a[i + 1] : a[i];
  const u32 bits = (u32)(sh & 1) * 16u;
  return make_uint4(__funnelshift_r(b[0], b[1], bits), __funnelshift_r(b[1], b[2], bits),
                    __funnelshift_r(b[2], b[3], bits), __funnelshift_r(b[3], b[4], bits));
}
#endif

// ---- wgmma fences (sm_90a) --------------------------------------------------------------------

PH_GEMM_DEV void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
PH_GEMM_DEV void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
PH_GEMM_DEV void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/// Pins accumulator registers across wgmma issue/wait: the compiler may not move reads or writes
/// of `r` across this point, so no instruction touches an accumulator while a wgmma owns it.
PH_GEMM_DEV void reg_fence(float& r) { asm volatile("" : "+f"(r)::"memory"); }
PH_GEMM_DEV void reg_fence(int& r) { asm volatile("" : "+r"(r)::"memory"); }

#endif  // CUDA

}  // namespace gemm
}  // namespace ph
