// Whole-tile reductions of an instance split over the blocks of a cluster (the knob ROW_SPLIT;
// bench/NOTES.md r22). Each block of the cluster holds one part of every row tile; a whole-tile
// reduction reduces its part in the block (phobos_reduce.cuh), then every block sends its
// partial into the slots of every block of the cluster (st.async at mapa addresses, completing
// on the receiver's mbarrier), and each block combines the K partials in rank order once they
// have landed, so that every block holds the same bits (bench/NOTES.md r22c).
#pragma once

#include "phobos_reduce.cuh"
#include "gemm/ptx.cuh"

namespace ph {

// The cluster's barrier, in halves: the kernel's start arrives (the cluster's first phase), not
// waiting; the first cluster step waits for it (every block started) before sending into another
// block's slots, so the wait overlaps whatever comes before that step (the row's load).
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }

// The slots of a cluster of K blocks: two mbarriers (one a set), then two sets of K 8-byte
// partials. Consecutive steps alternate sets; set i's barrier completes its k-th phase at step
// 2k + i, when the K partials of that step have landed in this block's set.
template <int K> __host__ __device__ constexpr int cluster_slot_bytes() { return 16 + 2 * K * 8; }

// The kernel's start: thread 0 initializes the two barriers, then every thread arrives on the
// cluster's barrier, not waiting (the first step waits for that phase: every block started and
// its barriers initialized before any block sends into it).
template <int K> __device__ __forceinline__ void cluster_start(unsigned char* slots) {
  if (threadIdx.x == 0) {
    gemm::mbar_init(gemm::smem_u32(slots), 1);
    gemm::mbar_init(gemm::smem_u32(slots + 8), 1);
    gemm::fence_mbar_init();
  }
  cluster_arrive_relaxed();
}

// The cluster's reduction of each block's partial v (the same in every thread of the block); n
// counts the steps so far (the same in every block). Thread j < K sends this block's partial into
// block j's slot of this block's rank by st.async, completing on block j's barrier of the set;
// thread 0 expects the K partials on this block's; every thread waits for them and combines them
// in rank order. No cluster barrier a step: a block sends step n + 2's partial into a set only
// after step n + 1 completed, which needed every block's step n + 1 partial, sent after that
// block read step n's set (its threads' reads ordered before the sends by the block reduction's
// barrier, and warp 0's by the __syncwarp below).
template <class Op, int K, class T> __device__ __forceinline__ T cluster_all(T v, unsigned char* slots, unsigned& n) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cluster_all: 4- or 8-byte partials");
  const unsigned i = n & 1u, parity = (n >> 1) & 1u;
  if (n == 0) cluster_wait();  // the start's phase: every block started, its barriers ready
  ++n;
  const unsigned bar = gemm::smem_u32(slots + i * 8);
  unsigned char* set = slots + 16 + i * (K * 8);
  if (threadIdx.x == 0) gemm::mbar_arrive_expect_tx(bar, (unsigned)(K * sizeof(T)));
  __syncwarp();
  if (threadIdx.x < (unsigned)K) {
    const unsigned j = threadIdx.x;
    unsigned dst, rbar;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(dst) : "r"(gemm::smem_u32(set + gemm::cluster_rank() * 8)), "r"(j));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(rbar) : "r"(bar), "r"(j));
    if constexpr (sizeof(T) == 4) {
      const unsigned bits = *reinterpret_cast<const unsigned*>(&v);
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(dst), "r"(bits), "r"(rbar) : "memory");
    } else {
      const unsigned long long bits = *reinterpret_cast<const unsigned long long*>(&v);
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];\n" ::"r"(dst), "l"(bits), "r"(rbar) : "memory");
    }
  }
  gemm::mbar_wait(bar, parity);
  T acc = *reinterpret_cast<const volatile T*>(set);
#pragma unroll
  for (int r = 1; r < K; ++r) acc = Op::op(acc, (T)*reinterpret_cast<const volatile T*>(set + r * 8));
  return acc;
}

}  // namespace ph
