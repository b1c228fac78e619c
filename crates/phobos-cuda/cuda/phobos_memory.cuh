// phobos_memory.cuh: tiles between registers and memory, the second half of the prelude
// (phobos_prelude.cuh includes it at its end, after the layouts, Region and the eviction hints
// it is written over; it is not included on its own): tile loads and stores of global memory,
// vectorized where the layout and the region allow, with their eviction hints; element loads
// and stores at computed indices; tiles through shared memory (conversions between layouts,
// reshapes).
#pragma once

namespace ph {

template <class S> __device__ __forceinline__ bool in_bounds(const Region<S>& g, int r, int c) {
  return g.ok && (unsigned)(g.r0 + r) < (unsigned)g.rn && (unsigned)(g.c0 + c) < (unsigned)g.cn;
}
template <class S> __device__ __forceinline__ S* elem_ptr(const Region<S>& g, int r, int c) {
  return g.p + (long long)(g.r0 + r) * g.rs + (long long)(g.c0 + c) * g.cs;
}

// Element addresses for hinted accesses: the address of the thread's first element plus an
// offset that is a constant of the unrolled register index. A hinted access is inline PTX,
// which takes its address in a register; written this way the compiler adds an immediate to
// one base instead of rebuilding each 64-bit address from the element's row and column.
// Unhinted accesses keep elem_ptr (the compiler folds their offsets into the loads).
template <class L, int EV, class S> struct HintBase {
  S* p;
  int r0, c0;
  __device__ __forceinline__ HintBase(const Region<S>& g, int tid) {
    if constexpr ((EV & HINT_MASK) != EVICT_NORMAL) {
      L::coord(tid, 0, r0, c0);
      p = elem_ptr(g, r0, c0);
      // Opaque to the compiler, so it keeps `p + offset` rather than re-deriving each address.
      asm("" : "+l"(p));
    }
  }
  __device__ __forceinline__ S* at(const Region<S>& g, int r, int c) const {
    if constexpr ((EV & HINT_MASK) == EVICT_NORMAL) {
      return elem_ptr(g, r, c);
    } else {
      return p + (long long)(r - r0) * g.rs + (long long)(c - c0) * g.cs;
    }
  }
};

// The vectorized path is taken when the whole tile is in bounds, columns are contiguous and
// every VEC-group is aligned to its vector width (a uniform test, once per access).
template <class L, class S> __device__ __forceinline__ bool vector_ok(const Region<S>& g) {
  constexpr int W = (L::VEC * (int)sizeof(S)) < 16 ? L::VEC * (int)sizeof(S) : 16;
  constexpr int WE = W / (int)sizeof(S) > 0 ? W / (int)sizeof(S) : 1;
  return L::VEC > 1 && g.ok && g.cs == 1 && g.r0 >= 0 && g.c0 >= 0 && g.r0 + L::R <= g.rn &&
         g.c0 + L::C <= g.cn && (L::R == 1 || g.rs % WE == 0) &&
         ((unsigned long long)(g.p + (long long)g.r0 * g.rs + g.c0) % W) == 0;
}

// The masked vector path: columns contiguous and every VEC-group aligned, but the tile may
// overhang the tensor (a row tile wider than the row, the last rows): each group is read or
// written whole when it lies inside, element by element at the edge.
template <class L, class S> __device__ __forceinline__ bool vector_rows_ok(const Region<S>& g) {
  constexpr int W = (L::VEC * (int)sizeof(S)) < 16 ? L::VEC * (int)sizeof(S) : 16;
  constexpr int WE = W / (int)sizeof(S) > 0 ? W / (int)sizeof(S) : 1;
  return L::VEC > 1 && g.ok && g.cs == 1 && (L::R == 1 || g.rs % WE == 0) && g.c0 % WE == 0 &&
         ((unsigned long long)g.p % W) == 0 && (g.rs * (long long)g.r0) % WE == 0;
}
template <class L, class S> __device__ __forceinline__ bool group_inside(const Region<S>& g, int r, int c) {
  return (unsigned)(g.r0 + r) < (unsigned)g.rn && g.c0 + c >= 0 && g.c0 + c + L::VEC <= g.cn;
}

// For 1- and 2-byte types the vector paths issue every group's load first and convert
// afterwards: a conversion inside the guarded block of its own load made the compiler branch
// around each load and reuse its registers, so each load waited for the one before (one 16-byte
// load in flight per thread; bf16 norms +10-15 %). 4-byte types load straight into their
// registers, where the one-phase form keeps fewer registers (bench/NOTES.md r4).
template <class L, int EV = EVICT_NORMAL, class S> __device__ Tile<typename Reg<S>::T, L> load_tile_wide(const Region<S>& g);
template <class L, int EV = EVICT_NORMAL, class S> __device__ Tile<typename Reg<S>::T, L> load_tile_narrow(const Region<S>& g);
template <class L, int EV = EVICT_NORMAL, class S> __device__ Tile<typename Reg<S>::T, L> load_tile(const Region<S>& g) {
  if constexpr (sizeof(S) >= 4) {
    return load_tile_wide<L, EV>(g);
  } else {
    return load_tile_narrow<L, EV>(g);
  }
}
template <class L, int EV, class S> __device__ Tile<typename Reg<S>::T, L> load_tile_narrow(const Region<S>& g) {
  typedef typename Reg<S>::T T;
  const unsigned long long pol = l2_policy<EV>();
  Tile<T, L> t;
  const int tid = threadIdx.x;
  const HintBase<L, EV, S> hb(g, tid);
  if (vector_ok<L>(g) || vector_rows_ok<L>(g)) {
    constexpr int BYTES = L::VEC * (int)sizeof(S);
    constexpr int W = BYTES < 16 ? BYTES : 16;
    constexpr int G = L::N / L::VEC;  // vector groups a thread
    typedef typename VecT<W>::T V;
    static_assert(L::N % L::VEC == 0, "whole vector groups");
    // Whole tile inside the tensor: every group in the tile is read whole; else (masked)
    // each group inside is, and the edge's groups element by element.
    const bool whole_tile = vector_ok<L>(g);
    V raw[G][BYTES / W];
    bool whole[G];
#pragma unroll
    for (int j = 0; j < G; ++j) {
      int r, c;
      L::coord(tid, j * L::VEC, r, c);
      whole[j] = in_tile<L>(r, c) && (whole_tile || group_inside<L>(g, r, c));
      const V* src = reinterpret_cast<const V*>(hb.at(g, r, c));
#pragma unroll
      for (int w = 0; w < BYTES / W; ++w) {
        V x{};
        if (whole[j]) x = ldh<EV>(src + w, pol);
        raw[j][w] = x;
      }
    }
#pragma unroll
    for (int j = 0; j < G; ++j) {
      const int i = j * L::VEC;
      if (whole[j] || whole_tile) {
        // Element by element (not `load_elems`'s words): the compiler can keep a group packed
        // until its use, which the norms' 64-register points need (bench/NOTES.md r49).
        typename Bare<S>::T s[L::VEC];
        memcpy(s, raw[j], BYTES);
#pragma unroll
        for (int v = 0; v < L::VEC; ++v) t.v[i + v] = Reg<S>::load(s[v]);
      } else {
        int r, c;
        L::coord(tid, i, r, c);
#pragma unroll
        for (int v = 0; v < L::VEC; ++v)
          t.v[i + v] = (in_tile<L>(r, c + v) && in_bounds(g, r, c + v)) ? Reg<S>::load(ldh<EV>(hb.at(g, r, c + v), pol)) : T(0);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < L::N; ++i) {
      int r, c;
      L::coord(tid, i, r, c);
      t.v[i] = (in_tile<L>(r, c) && in_bounds(g, r, c)) ? Reg<S>::load(ldh<EV>(hb.at(g, r, c), pol)) : T(0);
    }
  }
  return t;
}

// The one-phase load of 4-byte and wider types: each vector group loaded and stored into its
// registers in turn.
template <class L, int EV, class S> __device__ Tile<typename Reg<S>::T, L> load_tile_wide(const Region<S>& g) {
  typedef typename Reg<S>::T T;
  const unsigned long long pol = l2_policy<EV>();
  Tile<T, L> t;
  const int tid = threadIdx.x;
  const HintBase<L, EV, S> hb(g, tid);
  if (vector_ok<L>(g)) {
    constexpr int BYTES = L::VEC * (int)sizeof(S);
    constexpr int W = BYTES < 16 ? BYTES : 16;
    typedef typename VecT<W>::T V;
#pragma unroll
    for (int i = 0; i < L::N; i += L::VEC) {
      int r, c;
      L::coord(tid, i, r, c);
      typename Bare<S>::T s[L::VEC];
      if (in_tile<L>(r, c)) {
        const V* src = reinterpret_cast<const V*>(hb.at(g, r, c));
#pragma unroll
        for (int w = 0; w < BYTES / W; ++w) {
          V x = ldh<EV>(src + w, pol);
          memcpy(reinterpret_cast<unsigned char*>(s) + w * W, &x, W);
        }
#pragma unroll
        for (int v = 0; v < L::VEC; ++v) t.v[i + v] = Reg<S>::load(s[v]);
      } else {
#pragma unroll
        for (int v = 0; v < L::VEC; ++v) t.v[i + v] = T(0);
      }
    }
  } else if (vector_rows_ok<L>(g)) {
    constexpr int BYTES = L::VEC * (int)sizeof(S);
    constexpr int W = BYTES < 16 ? BYTES : 16;
    typedef typename VecT<W>::T V;
#pragma unroll
    for (int i = 0; i < L::N; i += L::VEC) {
      int r, c;
      L::coord(tid, i, r, c);
      if (in_tile<L>(r, c) && group_inside<L>(g, r, c)) {
        typename Bare<S>::T s[L::VEC];
        const V* src = reinterpret_cast<const V*>(hb.at(g, r, c));
#pragma unroll
        for (int w = 0; w < BYTES / W; ++w) {
          V x = ldh<EV>(src + w, pol);
          memcpy(reinterpret_cast<unsigned char*>(s) + w * W, &x, W);
        }
#pragma unroll
        for (int v = 0; v < L::VEC; ++v) t.v[i + v] = Reg<S>::load(s[v]);
      } else {
#pragma unroll
        for (int v = 0; v < L::VEC; ++v)
          t.v[i + v] = (in_tile<L>(r, c + v) && in_bounds(g, r, c + v)) ? Reg<S>::load(ldh<EV>(hb.at(g, r, c + v), pol)) : T(0);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < L::N; ++i) {
      int r, c;
      L::coord(tid, i, r, c);
      t.v[i] = (in_tile<L>(r, c) && in_bounds(g, r, c)) ? Reg<S>::load(ldh<EV>(hb.at(g, r, c), pol)) : T(0);
    }
  }
  return t;
}

// A region of shape [SR, SC] (each 1 or the tile's extent) read broadcast into layout L.
template <class L, int SR, int SC, class S>
__device__ Tile<typename Reg<S>::T, L> load_tile_bcast(const Region<S>& g) {
  typedef typename Reg<S>::T T;
  Tile<T, L> t;
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(threadIdx.x, i, r, c);
    const int rr = SR == 1 ? 0 : r, cc = SC == 1 ? 0 : c;
    t.v[i] = (in_tile<L>(r, c) && in_bounds(g, rr, cc)) ? Reg<S>::load(*elem_ptr(g, rr, cc)) : T(0);
  }
  return t;
}

// The thread index, read where it is used: the compiler may not precompute what depends on it
// ahead of a loop around the call. A persistent kernel (one block, many tiles) would otherwise
// keep every element address of the C tile live across its main loop, and spill them.
__device__ __forceinline__ int opaque_tid() {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  return t;
}

template <int EV = EVICT_NORMAL, class L, class S, class T> __device__ void store_tile(const Region<S>& g, const Tile<T, L>& t) {
  const int tid = opaque_tid();
  const unsigned long long pol = l2_policy<EV>();
  const HintBase<L, EV, S> hb(g, tid);
  if (vector_ok<L>(g)) {
    constexpr int BYTES = L::VEC * (int)sizeof(S);
    constexpr int W = BYTES < 16 ? BYTES : 16;
    typedef typename VecT<W>::T V;
    if (Separable<L>::value) {
      int rb, cb;
      L::coord(tid, 0, rb, cb);
      if (!in_tile<L>(rb, cb)) return;  // a thread without registers (a producer warp)
      S* base = elem_ptr(g, rb, cb);
#pragma unroll
      for (int i = 0; i < L::N; i += L::VEC) {
        int ro, co;
        L::coord(0, i, ro, co);  // constants: i is unrolled
        typename Bare<S>::T s[L::VEC];
#pragma unroll
        for (int v = 0; v < L::VEC; ++v) s[v] = Reg<S>::store(t.v[i + v]);
        V* dst = reinterpret_cast<V*>(base + ro * g.rs + co);
#pragma unroll
        for (int w = 0; w < BYTES / W; ++w) {
          V x;
          memcpy(&x, reinterpret_cast<const unsigned char*>(s) + w * W, W);
          sth<EV>(dst + w, x, pol);
        }
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < L::N; i += L::VEC) {
      int r, c;
      L::coord(tid, i, r, c);
      if (in_tile<L>(r, c) && Owner<L>::at(tid, i)) {
        typename Bare<S>::T s[L::VEC];
#pragma unroll
        for (int v = 0; v < L::VEC; ++v) s[v] = Reg<S>::store(t.v[i + v]);
        V* dst = reinterpret_cast<V*>(hb.at(g, r, c));
#pragma unroll
        for (int w = 0; w < BYTES / W; ++w) {
          V x;
          memcpy(&x, reinterpret_cast<const unsigned char*>(s) + w * W, W);
          sth<EV>(dst + w, x, pol);
        }
      }
    }
  } else if (vector_rows_ok<L>(g)) {
    constexpr int BYTES = L::VEC * (int)sizeof(S);
    constexpr int W = BYTES < 16 ? BYTES : 16;
    typedef typename VecT<W>::T V;
#pragma unroll
    for (int i = 0; i < L::N; i += L::VEC) {
      int r, c;
      L::coord(tid, i, r, c);
      if (!in_tile<L>(r, c) || !Owner<L>::at(tid, i)) continue;
      if (group_inside<L>(g, r, c)) {
        typename Bare<S>::T s[L::VEC];
#pragma unroll
        for (int v = 0; v < L::VEC; ++v) s[v] = Reg<S>::store(t.v[i + v]);
        V* dst = reinterpret_cast<V*>(hb.at(g, r, c));
#pragma unroll
        for (int w = 0; w < BYTES / W; ++w) {
          V x;
          memcpy(&x, reinterpret_cast<const unsigned char*>(s) + w * W, W);
          sth<EV>(dst + w, x, pol);
        }
      } else {
#pragma unroll
        for (int v = 0; v < L::VEC; ++v)
          if (in_bounds(g, r, c + v)) sth<EV>(hb.at(g, r, c + v), Reg<S>::store(t.v[i + v]), pol);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < L::N; ++i) {
      int r, c;
      L::coord(tid, i, r, c);
      if (in_tile<L>(r, c) && Owner<L>::at(tid, i) && in_bounds(g, r, c)) sth<EV>(hb.at(g, r, c), Reg<S>::store(t.v[i]), pol);
    }
  }
}

// SPLIT_K epilogue: adds a tile into f32 memory with atomics, masked like store_tile. The host
// zeroes the tensor before the launch; each of the grid's z parts adds its partial sum.
template <class L, class T> __device__ void atomic_add_tile(const Region<float>& g, const Tile<T, L>& t) {
  const int tid = threadIdx.x;
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(tid, i, r, c);
    if (in_tile<L>(r, c) && Owner<L>::at(tid, i) && in_bounds(g, r, c)) atomicAdd(elem_ptr(g, r, c), (float)t.v[i]);
  }
}

// SPLIT_K through an f32 workspace (a C that is not f32; phobos_cuda::SplitWorkspace): `ws`
// holds `parts` slices of C's `n` elements, each element at C's own offset, then one counter
// per block of the x-y grid (zero before the launch; left zero after it). Each part stores its
// partial tile into its slice and arrives at its tile's counter; the last to arrive sums the
// slices in slice order (the same sum whatever the arrival order) and stores C once.

__device__ __forceinline__ void split_st_cg(float* p, float v) {
  asm volatile("st.global.cg.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ float split_ld_cg(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));  // volatile: after the fence
  return v;
}
// The region of slice `z` that holds what `c` (a region of C, whose base is `base`) would.
template <class S> __device__ __forceinline__ Region<float> split_slice(const Region<S>& c, const S* base, float* ws, long long n, int z) {
  return Region<float>{ws + (long long)z * n + (c.p - base), c.r0, c.c0, c.rn, c.cn, c.rs, c.cs, c.ok};
}
__device__ __forceinline__ void split_st_cg2(float* p, float a, float b) {
  asm volatile("st.global.cg.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ void split_ld_cg2(const float* p, float& a, float& b) {
  asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "l"(p));
}
// Pairs of adjacent columns move as one 8-byte access when the layout's vector groups are
// pairs of columns (VEC even: the wgmma and mma.sync accumulators hold (c, c + 1)) and the
// slice's rows keep them 8-byte aligned (vector_rows_ok: N even): a warp's access then fills
// whole 32-byte sectors instead of every other 4 bytes of them, with half the instructions.
template <class L> __device__ __forceinline__ bool split_pairs_ok(const Region<float>& g) {
  return L::VEC % 2 == 0 && vector_rows_ok<L>(g);
}
// SPLIT_REDUCE=3: this part's partial tile into its slice in pairs (element-wise where the
// rows are not 8-byte aligned, and at the edge).
template <class L> __device__ void split_store_partial_pairs(const Region<float>& g, const Tile<float, L>& t) {
  const int tid = opaque_tid();  // as store_tile: addresses are not kept live across loops
  if constexpr (L::VEC % 2 == 0) {
    if (split_pairs_ok<L>(g)) {
#pragma unroll
      for (int i = 0; i < L::N; i += 2) {
        int r, c;
        L::coord(tid, i, r, c);
        if (!in_tile<L>(r, c) || !Owner<L>::at(tid, i)) continue;
        if (in_bounds(g, r, c) && in_bounds(g, r, c + 1)) {
          split_st_cg2(elem_ptr(g, r, c), t.v[i], t.v[i + 1]);
        } else if (in_bounds(g, r, c)) {
          split_st_cg(elem_ptr(g, r, c), t.v[i]);
        }
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(tid, i, r, c);
    if (in_tile<L>(r, c) && Owner<L>::at(tid, i) && in_bounds(g, r, c)) split_st_cg(elem_ptr(g, r, c), t.v[i]);
  }
}
// This part's partial tile into its slice, to L2 (only the last part reads it, from L2).
template <class L> __device__ void split_store_partial(const Region<float>& g, const Tile<float, L>& t) {
  const int tid = opaque_tid();  // as store_tile: addresses are not kept live across loops
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(tid, i, r, c);
    if (in_tile<L>(r, c) && Owner<L>::at(tid, i) && in_bounds(g, r, c)) split_st_cg(elem_ptr(g, r, c), t.v[i]);
  }
}
// After the partial stores: this part's ticket on its tile's counter. True, in every thread,
// for the part that arrives last (`parts` - 1 arrived before it), which then sees every part's
// stores and resets the counter for the next launch. A block barrier: every thread calls it.
__device__ __forceinline__ bool split_arrive(unsigned* counter, int parts) {
  __threadfence();  // this thread's partial stores, before the ticket
  __syncthreads();
  bool mine = false;
  if (threadIdx.x == 0) {
    mine = atomicAdd(counter, 1u) == (unsigned)(parts - 1);
    if (mine) *counter = 0u;  // every part has arrived: nothing else touches it this launch
  }
  // The barrier broadcasts thread 0's answer (no shared memory beside the kernel's own).
  const bool last = __syncthreads_or(mine) != 0;
  if (last) __threadfence();  // the other parts' stores, before the reads
  return last;
}
// The whole sum into `t`: slice 0 (the region `g`) + slice 1 + ... in order, read from L2.
template <class L> __device__ void split_sum(const Region<float>& g, long long n, int parts, Tile<float, L>& t) {
  const int tid = opaque_tid();
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(tid, i, r, c);
    if (in_tile<L>(r, c) && in_bounds(g, r, c)) {
      const float* p = elem_ptr(g, r, c);
      float s = split_ld_cg(p);
      for (int z = 1; z < parts; ++z) s += split_ld_cg(p + (long long)z * n);
      t.v[i] = s;
    }
  }
}

// SPLIT_REDUCE=3: the whole sum into `t`: slice 0 (the region `g`) + slice 1 + ... in order,
// read from L2 in pairs, except slice `self`, this part's own, which `t` still holds: the same sum, in the same order,
// whichever part arrives last, with one slice fewer to read.
template <class L> __device__ void split_sum_pairs(const Region<float>& g, long long n, int parts, int self, Tile<float, L>& t) {
  const int tid = opaque_tid();
  if constexpr (L::VEC % 2 == 0) {
    // Pairs as in split_store_partial; an even n keeps every slice's pairs aligned.
    if (n % 2 == 0 && split_pairs_ok<L>(g)) {
#pragma unroll
      for (int i = 0; i < L::N; i += 2) {
        int r, c;
        L::coord(tid, i, r, c);
        if (!in_tile<L>(r, c)) continue;
        const float* p = elem_ptr(g, r, c);
        if (in_bounds(g, r, c) && in_bounds(g, r, c + 1)) {
          float a = t.v[i], b = t.v[i + 1];
          if (self != 0) split_ld_cg2(p, a, b);
          for (int z = 1; z < parts; ++z) {
            float x = t.v[i], y = t.v[i + 1];
            if (z != self) split_ld_cg2(p + (long long)z * n, x, y);
            a += x;
            b += y;
          }
          t.v[i] = a;
          t.v[i + 1] = b;
        } else if (in_bounds(g, r, c)) {
          float s = self != 0 ? split_ld_cg(p) : t.v[i];
          for (int z = 1; z < parts; ++z) s += z != self ? split_ld_cg(p + (long long)z * n) : t.v[i];
          t.v[i] = s;
        }
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(tid, i, r, c);
    if (in_tile<L>(r, c) && in_bounds(g, r, c)) {
      const float* p = elem_ptr(g, r, c);
      float s = self != 0 ? split_ld_cg(p) : t.v[i];
      for (int z = 1; z < parts; ++z) s += z != self ? split_ld_cg(p + (long long)z * n) : t.v[i];
      t.v[i] = s;
    }
  }
}

// Element access of tensors by logical index; out of bounds reads 0 and stores nothing.
// ROW is true for row-major memory order, false for the reversed (column-major) order.
template <bool ROW, int EV = EVICT_NORMAL, class S> __device__ __forceinline__ typename Reg<S>::T load1(const S* p, int i0, int d0) {
  return (unsigned)i0 < (unsigned)d0 ? Reg<S>::load(ldh<EV>(p + i0)) : typename Reg<S>::T(0);
}
template <bool ROW, int EV = EVICT_NORMAL, class S>
__device__ __forceinline__ typename Reg<S>::T load2(const S* p, int i0, int i1, int d0, int d1) {
  const bool ok = (unsigned)i0 < (unsigned)d0 && (unsigned)i1 < (unsigned)d1;
  const long long o = ROW ? (long long)i0 * d1 + i1 : (long long)i1 * d0 + i0;
  return ok ? Reg<S>::load(ldh<EV>(p + o)) : typename Reg<S>::T(0);
}
template <bool ROW, int EV = EVICT_NORMAL, class S>
__device__ __forceinline__ typename Reg<S>::T load3(const S* p, int i0, int i1, int i2, int d0, int d1, int d2) {
  const bool ok = (unsigned)i0 < (unsigned)d0 && (unsigned)i1 < (unsigned)d1 && (unsigned)i2 < (unsigned)d2;
  const long long o = ROW ? ((long long)i0 * d1 + i1) * d2 + i2 : ((long long)i2 * d1 + i1) * d0 + i0;
  return ok ? Reg<S>::load(ldh<EV>(p + o)) : typename Reg<S>::T(0);
}
template <bool ROW, int EV = EVICT_NORMAL, class S, class T> __device__ __forceinline__ void store1(S* p, int i0, int d0, T v) {
  if ((unsigned)i0 < (unsigned)d0) sth<EV>(p + i0, Reg<S>::store(v));
}
template <bool ROW, int EV = EVICT_NORMAL, class S, class T>
__device__ __forceinline__ void store2(S* p, int i0, int i1, int d0, int d1, T v) {
  const long long o = ROW ? (long long)i0 * d1 + i1 : (long long)i1 * d0 + i0;
  if ((unsigned)i0 < (unsigned)d0 && (unsigned)i1 < (unsigned)d1) sth<EV>(p + o, Reg<S>::store(v));
}
template <bool ROW, int EV = EVICT_NORMAL, class S, class T>
__device__ __forceinline__ void store3(S* p, int i0, int i1, int i2, int d0, int d1, int d2, T v) {
  const long long o = ROW ? ((long long)i0 * d1 + i1) * d2 + i2 : ((long long)i2 * d1 + i1) * d0 + i0;
  if ((unsigned)i0 < (unsigned)d0 && (unsigned)i1 < (unsigned)d1 && (unsigned)i2 < (unsigned)d2) sth<EV>(p + o, Reg<S>::store(v));
}

// Any rank (the checker allows up to 8): indices and extents as small arrays.
template <int R> struct Idx { int v[R]; };
template <bool ROW, int R> __device__ __forceinline__ bool offset_n(const Idx<R>& i, const Idx<R>& d, long long& o) {
  bool ok = true;
  o = 0;
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const int a = ROW ? k : R - 1 - k;
    ok = ok && (unsigned)i.v[a] < (unsigned)d.v[a];
    o = o * d.v[a] + i.v[a];
  }
  return ok;
}
template <bool ROW, int R, int EV = EVICT_NORMAL, class S>
__device__ __forceinline__ typename Reg<S>::T load_n(const S* p, const Idx<R>& i, const Idx<R>& d) {
  long long o;
  return offset_n<ROW>(i, d, o) ? Reg<S>::load(ldh<EV>(p + o)) : typename Reg<S>::T(0);
}
template <bool ROW, int R, int EV = EVICT_NORMAL, class S, class T>
__device__ __forceinline__ void store_n(S* p, const Idx<R>& i, const Idx<R>& d, T v) {
  long long o;
  if (offset_n<ROW>(i, d, o)) sth<EV>(p + o, Reg<S>::store(v));
}

// ---- moving tiles through shared memory ------------------------------------------------------------

// Writes the in-tile registers of x to buf[r * ld + c].
template <class T, class L, class U> __device__ __forceinline__ void write_tile(const Tile<T, L>& x, U* buf, int ld) {
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(threadIdx.x, i, r, c);
    if (in_tile<L>(r, c)) buf[r * ld + c] = U(x.v[i]);
  }
}

// The tile in layout Lout whose element (r, c) is buf[r * RS + c * CS] (0 outside the tile).
template <class Lout, class T> __device__ __forceinline__ Tile<T, Lout> tile_from(const T* buf, int RS, int CS) {
  Tile<T, Lout> y;
#pragma unroll
  for (int i = 0; i < Lout::N; ++i) {
    int r, c;
    Lout::coord(threadIdx.x, i, r, c);
    y.v[i] = in_tile<Lout>(r, c) ? buf[r * RS + c * CS] : T(0);
  }
  return y;
}

// The [C, R] tile in layout Lout whose element (r, c) is buf[c * LD + r]: the read side of a
// transpose through shared memory (`transpose`, and the fused stores' strided-region path).
template <class Lout, class T> __device__ __forceinline__ Tile<T, Lout> transposed_from(const T* buf, int LD) {
  return tile_from<Lout>(buf, 1, LD);
}

// x in layout Lout; the caller's barrier discipline: scratch may be rewritten only after a
// __syncthreads() that follows these reads (the generated code inserts it).
template <class Lout, class T, class Lin, int BYTES> __device__ Tile<T, Lout> convert(const Tile<T, Lin>& x, Scratch<BYTES> s) {
  static_assert(Lin::R == Lout::R && Lin::C == Lout::C, "convert keeps the shape");
  static_assert(smem_tile_bytes<Lin, T>() <= BYTES, "scratch too small for convert");
  T* buf = reinterpret_cast<T*>(s.p);
  constexpr int LD = smem_ld(Lin::C);
  write_tile(x, buf, LD);
  __syncthreads();
  return tile_from<Lout>(buf, LD, 1);
}

// The elements of x in row-major order under Lout's shape (the same element count): staged densely,
// element (r, c) of x at r * Lin::C + c, read back at r * Lout::C + c.
template <class Lout, class T, class Lin, int BYTES> __device__ Tile<T, Lout> reshape(const Tile<T, Lin>& x, Scratch<BYTES> s) {
  static_assert(Lin::R * Lin::C == Lout::R * Lout::C, "reshape keeps the element count");
  static_assert((Lin::R * Lin::C * (int)sizeof(T) + 15) / 16 * 16 <= BYTES, "scratch too small for reshape");
  T* buf = reinterpret_cast<T*>(s.p);
  write_tile(x, buf, Lin::C);
  __syncthreads();
  Tile<T, Lout> y;
#pragma unroll
  for (int i = 0; i < Lout::N; ++i) {
    int r, c;
    Lout::coord(threadIdx.x, i, r, c);
    y.v[i] = in_tile<Lout>(r, c) ? buf[r * Lout::C + c] : T(0);
  }
  return y;
}

// Broadcast of an [R, 1], [1, C] or [1, 1] tile to Lout's shape (NumPy rules).
template <class Lout, class T, class Lin, int BYTES> __device__ Tile<T, Lout> broadcast(const Tile<T, Lin>& x, Scratch<BYTES> s) {
  static_assert(Lin::R == 1 || Lin::R == Lout::R, "broadcast rows");
  static_assert(Lin::C == 1 || Lin::C == Lout::C, "broadcast columns");
  static_assert(smem_tile_bytes<Lin, T>() <= BYTES, "scratch too small for broadcast");
  T* buf = reinterpret_cast<T*>(s.p);
  constexpr int LD = smem_ld(Lin::C);
  write_tile(x, buf, LD);
  __syncthreads();
  Tile<T, Lout> y;
#pragma unroll
  for (int i = 0; i < Lout::N; ++i) {
    int r, c;
    Lout::coord(threadIdx.x, i, r, c);
    y.v[i] = in_tile<Lout>(r, c) ? buf[(Lin::R == 1 ? 0 : r) * LD + (Lin::C == 1 ? 0 : c)] : T(0);
  }
  return y;
}

}  // namespace ph
