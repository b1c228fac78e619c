// phobos_atomic.cuh: atomic_add, atomic_max and atomic_min on tensor elements (included after
// phobos_prelude.cuh when a kernel uses them).
//
// One element per thread (`atomic<Op>(ptr, v)`, returning the element's old value), or a tile
// per block over the layout contract (`atomic_tile<Op>(region, tile)`: every in-tile element is
// held by exactly one (thread, register) pair, so each element is updated once per block,
// masked like store_tile).
//
// How each type is updated:
//   i32, u32        atomicAdd / atomicMax / atomicMin
//   f32, f64 add    atomicAdd
//   f16 add         atom.global.add.noftz.f16 (sm_70+)
//   bf16 add        atom.global.add.noftz.bf16 on sm_90+, a 16-bit compare-and-swap loop below
//   f32 max, min    a compare-and-swap loop over fmaxf / fminf(old, v): the IR's Max and Min
//                   (a NaN operand gives the other one), which the integer-ordering trick
//                   (signed max for non-negative floats, unsigned min for negative) does not
//                   reproduce for NaN
// Each addition rounds to the element type, as the interpreter's do; only their order differs.
#pragma once

namespace ph {

struct AtomAdd {};
struct AtomMax {};
struct AtomMin {};

__device__ __forceinline__ int atom(AtomAdd, int* p, int v) { return atomicAdd(p, v); }
__device__ __forceinline__ int atom(AtomMax, int* p, int v) { return atomicMax(p, v); }
__device__ __forceinline__ int atom(AtomMin, int* p, int v) { return atomicMin(p, v); }
__device__ __forceinline__ unsigned atom(AtomAdd, unsigned* p, unsigned v) { return atomicAdd(p, v); }
__device__ __forceinline__ unsigned atom(AtomMax, unsigned* p, unsigned v) { return atomicMax(p, v); }
__device__ __forceinline__ unsigned atom(AtomMin, unsigned* p, unsigned v) { return atomicMin(p, v); }
__device__ __forceinline__ float atom(AtomAdd, float* p, float v) { return atomicAdd(p, v); }
__device__ __forceinline__ double atom(AtomAdd, double* p, double v) { return atomicAdd(p, v); }

// f32 max/min: retry until no other thread changed the element between the read and the swap;
// an update that would not change the bits is not written.
template <bool MAX> __device__ __forceinline__ float atom_cas_minmax(float* p, float v) {
  unsigned* q = reinterpret_cast<unsigned*>(p);
  unsigned old = *reinterpret_cast<volatile unsigned*>(q);
  while (true) {
    const float cur = __uint_as_float(old);
    const unsigned want = __float_as_uint(MAX ? fmaxf(cur, v) : fminf(cur, v));
    if (want == old) break;
    const unsigned seen = atomicCAS(q, old, want);
    if (seen == old) break;
    old = seen;
  }
  return __uint_as_float(old);
}
__device__ __forceinline__ float atom(AtomMax, float* p, float v) { return atom_cas_minmax<true>(p, v); }
__device__ __forceinline__ float atom(AtomMin, float* p, float v) { return atom_cas_minmax<false>(p, v); }

// f16 and bf16 values live in float registers (already rounded to their type).
__device__ __forceinline__ float atom(AtomAdd, f16* p, float v) {
  unsigned short old;
  asm volatile("atom.global.add.noftz.f16 %0, [%1], %2;" : "=h"(old) : "l"(p), "h"(f32_to_f16(v)) : "memory");
  return f16_to_f32(old);
}
__device__ __forceinline__ float atom(AtomAdd, bf16* p, float v) {
  unsigned short old;
#if __CUDA_ARCH__ >= 900
  asm volatile("atom.global.add.noftz.bf16 %0, [%1], %2;" : "=h"(old) : "l"(p), "h"(f32_to_bf16(v)) : "memory");
#else
  old = *reinterpret_cast<volatile unsigned short*>(p);
  while (true) {
    const unsigned short want = f32_to_bf16(bf16_to_f32(old) + v);
    unsigned short seen;
    asm volatile("atom.global.cas.b16 %0, [%1], %2, %3;" : "=h"(seen) : "l"(p), "h"(old), "h"(want) : "memory");
    if (seen == old) break;
    old = seen;
  }
#endif
  return bf16_to_f32(old);
}

// One element per thread: p is null outside the tensor (nothing is updated, the old value
// reads as 0, as a load there would).
template <class Op, class S>
__device__ __forceinline__ typename Reg<S>::T atomic(S* p, typename Reg<S>::T v) {
  typedef typename Reg<S>::T T;
  return p ? atom(Op(), p, v) : T(0);
}

// The address of an element by logical index, or null outside the tensor (see load1..load_n).
template <bool ROW, class S> __device__ __forceinline__ S* ptr1(S* p, int i0, int d0) {
  return (unsigned)i0 < (unsigned)d0 ? p + i0 : nullptr;
}
template <bool ROW, class S> __device__ __forceinline__ S* ptr2(S* p, int i0, int i1, int d0, int d1) {
  const long long o = ROW ? (long long)i0 * d1 + i1 : (long long)i1 * d0 + i0;
  return (unsigned)i0 < (unsigned)d0 && (unsigned)i1 < (unsigned)d1 ? p + o : nullptr;
}
template <bool ROW, class S>
__device__ __forceinline__ S* ptr3(S* p, int i0, int i1, int i2, int d0, int d1, int d2) {
  const long long o = ROW ? ((long long)i0 * d1 + i1) * d2 + i2 : ((long long)i2 * d1 + i1) * d0 + i0;
  const bool ok = (unsigned)i0 < (unsigned)d0 && (unsigned)i1 < (unsigned)d1 && (unsigned)i2 < (unsigned)d2;
  return ok ? p + o : nullptr;
}
template <bool ROW, int R, class S> __device__ __forceinline__ S* ptr_n(S* p, const Idx<R>& i, const Idx<R>& d) {
  long long o;
  return offset_n<ROW, R>(i, d, o) ? p + o : nullptr;
}

// A tile per block: each in-tile, in-bounds element updated once, by the thread holding it (the
// owning copy in a replicated layout, ph::Owner).
template <class Op, class L, class S, class T> __device__ void atomic_tile(const Region<S>& g, const Tile<T, L>& t) {
  const int tid = opaque_tid();  // as store_tile: addresses are not kept live across loops
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(tid, i, r, c);
    if (in_tile<L>(r, c) && Owner<L>::at(tid, i) && in_bounds(g, r, c)) atom(Op(), elem_ptr(g, r, c), t.v[i]);
  }
}

}  // namespace ph
