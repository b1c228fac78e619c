// Whole-tile reductions of an instance split over the blocks of a cluster (the knob ROW_SPLIT;
// bench/NOTES.md r22). Each block of the cluster holds one part of every row tile; a whole-tile
// reduction reduces its part in the block (phobos_reduce.cuh), then every block writes its
// partial into the slots of every block of the cluster (st.shared::cluster at mapa addresses),
// the cluster passes one barrier, and each block combines the K partials in rank order, so that
// every block holds the same bits. Two sets of slots alternate between consecutive steps: a
// block writes a set again only after the barrier of the step between, which every block
// reaches after reading that set.
#pragma once

#include "phobos_reduce.cuh"

namespace ph {

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// Every thread of every block of the cluster arrives, the writes before it visible after it (at
// the kernel's start: every block has started, so its shared memory may be written).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// The kernel's start: this block's threads arrive (the cluster's first phase), not waiting;
// the first cluster step waits for it (every block started) before writing into another
// block's slots, so the wait overlaps whatever comes before that step (the row's load).
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }

// Bytes of the slots of a cluster of K blocks: two sets of K 8-byte partials.
template <int K> __host__ __device__ constexpr int cluster_slot_bytes() { return 2 * K * 8; }

// The cluster's reduction of each block's partial v (the same in every thread of the block);
// n counts the steps so far (the same in every block), choosing the set of slots.
template <class Op, int K, class T> __device__ __forceinline__ T cluster_all(T v, unsigned char* slots, unsigned& n) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cluster_all: 4- or 8-byte partials");
  unsigned char* set = slots + (n & 1u) * (K * 8);
  if (n == 0) cluster_wait();  // the start's phase: every block of the cluster has started
  ++n;
  if (threadIdx.x < (unsigned)K) {
    // Thread j writes this block's partial into block j's slot of this block's rank.
    const unsigned local = (unsigned)__cvta_generic_to_shared(set + cluster_rank() * 8);
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"((unsigned)threadIdx.x));
    if constexpr (sizeof(T) == 4) {
      const unsigned bits = *reinterpret_cast<const unsigned*>(&v);
      asm volatile("st.shared::cluster.b32 [%0], %1;\n" ::"r"(remote), "r"(bits) : "memory");
    } else {
      const unsigned long long bits = *reinterpret_cast<const unsigned long long*>(&v);
      asm volatile("st.shared::cluster.b64 [%0], %1;\n" ::"r"(remote), "l"(bits) : "memory");
    }
  }
  cluster_sync();
  T acc = *reinterpret_cast<const T*>(set);
#pragma unroll
  for (int r = 1; r < K; ++r) acc = Op::op(acc, *reinterpret_cast<const T*>(set + r * 8));
  return acc;
}

}  // namespace ph
