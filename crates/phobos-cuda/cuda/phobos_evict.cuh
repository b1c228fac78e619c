// phobos_evict.cuh: eviction hints on global loads and stores (`X[.., cache = evict_last]`).
//
// Part of the prelude: phobos_prelude.cuh includes it after the element storage types (Bare) and
// the vector types (VecT) it builds on, and before the tile loads and stores that take a hint.
// Generated code includes only the prelude; phobos-cuda registers this header beside it.
#pragma once

namespace ph {
// Eviction hints (`X[.., cache = evict_last]`, ir::Eviction): the PTX cache-eviction priority
// of a global access. EVICT_LAST / EVICT_FIRST give L1 the priority and L2 a `createpolicy`
// cache policy of the same priority (`.L2::cache_hint`); NO_ALLOCATE skips L1. EVICT_NORMAL
// is the plain access the compiler emits (the same code as without a hint). Hints never
// change a value.
// READ_ONLY is added to the hint of a load of a tensor the kernel never writes (its pointer
// is `const __restrict__`): the load then takes the non-coherent path (`ld.global.nc`), as the
// compiler's own loads of such tensors do.
enum : int { EVICT_NORMAL = 0, EVICT_LAST = 1, EVICT_FIRST = 2, NO_ALLOCATE = 3, HINT_MASK = 7, READ_ONLY = 8 };

// The L2 cache policy of a hint (a uniform 64-bit value; not volatile, so the compiler
// computes it once).
template <int EV> __device__ __forceinline__ unsigned long long l2_policy() {
  unsigned long long p = 0;
  if constexpr ((EV & HINT_MASK) == EVICT_LAST) {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  } else if constexpr ((EV & HINT_MASK) == EVICT_FIRST) {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  }
  return p;
}

// The PTX of one hinted access of each width. The policy is always the last operand (%2, %3
// or %5 by width); NO_ALLOCATE does not read it. NC: a tensor the kernel never writes (its
// pointer is `const __restrict__`), read through the non-coherent path as the compiler reads
// it without a hint (`ld.global.nc`).
#define PH_HINT_ACCESS(EV, NC, LDQ, STQ, P1, P2, P4)                                              \
  template <> struct HintAccess<EV, NC> {                                                         \
    static __device__ __forceinline__ unsigned ld1(const void* a, unsigned long long pol) {       \
      unsigned x;                                                                                 \
      asm volatile(LDQ ".u8 %0, [%1]" P1 ";" : "=r"(x) : "l"(a), "l"(pol));                      \
      return x;                                                                                   \
    }                                                                                             \
    static __device__ __forceinline__ unsigned short ld2(const void* a, unsigned long long pol) { \
      unsigned short x;                                                                           \
      asm volatile(LDQ ".b16 %0, [%1]" P1 ";" : "=h"(x) : "l"(a), "l"(pol));                     \
      return x;                                                                                   \
    }                                                                                             \
    static __device__ __forceinline__ unsigned ld4(const void* a, unsigned long long pol) {       \
      unsigned x;                                                                                 \
      asm volatile(LDQ ".b32 %0, [%1]" P1 ";" : "=r"(x) : "l"(a), "l"(pol));                     \
      return x;                                                                                   \
    }                                                                                             \
    static __device__ __forceinline__ uint2 ld8(const void* a, unsigned long long pol) {          \
      uint2 x;                                                                                    \
      asm volatile(LDQ ".v2.b32 {%0, %1}, [%2]" P2 ";" : "=r"(x.x), "=r"(x.y) : "l"(a), "l"(pol)); \
      return x;                                                                                   \
    }                                                                                             \
    static __device__ __forceinline__ uint4 ld16(const void* a, unsigned long long pol) {         \
      uint4 x;                                                                                    \
      asm volatile(LDQ ".v4.b32 {%0, %1, %2, %3}, [%4]" P4 ";"                                    \
                   : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w)                                   \
                   : "l"(a), "l"(pol));                                                           \
      return x;                                                                                   \
    }                                                                                             \
    static __device__ __forceinline__ void st1(void* a, unsigned x, unsigned long long pol) {     \
      asm volatile(STQ ".u8 [%0], %1" P1 ";" : : "l"(a), "r"(x), "l"(pol) : "memory");           \
    }                                                                                             \
    static __device__ __forceinline__ void st2(void* a, unsigned short x, unsigned long long pol) { \
      asm volatile(STQ ".b16 [%0], %1" P1 ";" : : "l"(a), "h"(x), "l"(pol) : "memory");          \
    }                                                                                             \
    static __device__ __forceinline__ void st4(void* a, unsigned x, unsigned long long pol) {     \
      asm volatile(STQ ".b32 [%0], %1" P1 ";" : : "l"(a), "r"(x), "l"(pol) : "memory");          \
    }                                                                                             \
    static __device__ __forceinline__ void st8(void* a, uint2 x, unsigned long long pol) {        \
      asm volatile(STQ ".v2.b32 [%0], {%1, %2}" P2 ";" : : "l"(a), "r"(x.x), "r"(x.y), "l"(pol)   \
                   : "memory");                                                                   \
    }                                                                                             \
    static __device__ __forceinline__ void st16(void* a, uint4 x, unsigned long long pol) {       \
      asm volatile(STQ ".v4.b32 [%0], {%1, %2, %3, %4}" P4 ";"                                    \
                   :                                                                              \
                   : "l"(a), "r"(x.x), "r"(x.y), "r"(x.z), "r"(x.w), "l"(pol)                     \
                   : "memory");                                                                   \
    }                                                                                             \
  };
template <int EV, bool NC> struct HintAccess;
PH_HINT_ACCESS(EVICT_LAST, false, "ld.global.L1::evict_last.L2::cache_hint",
               "st.global.L1::evict_last.L2::cache_hint", ", %2", ", %3", ", %5")
PH_HINT_ACCESS(EVICT_FIRST, false, "ld.global.L1::evict_first.L2::cache_hint",
               "st.global.L1::evict_first.L2::cache_hint", ", %2", ", %3", ", %5")
PH_HINT_ACCESS(NO_ALLOCATE, false, "ld.global.L1::no_allocate", "st.global.L1::no_allocate", "", "", "")
PH_HINT_ACCESS(EVICT_LAST, true, "ld.global.nc.L1::evict_last.L2::cache_hint",
               "st.global.L1::evict_last.L2::cache_hint", ", %2", ", %3", ", %5")
PH_HINT_ACCESS(EVICT_FIRST, true, "ld.global.nc.L1::evict_first.L2::cache_hint",
               "st.global.L1::evict_first.L2::cache_hint", ", %2", ", %3", ", %5")
PH_HINT_ACCESS(NO_ALLOCATE, true, "ld.global.nc.L1::no_allocate", "st.global.L1::no_allocate", "", "", "")
#undef PH_HINT_ACCESS

// *p, with the hint EV and its policy `pol` (l2_policy<EV>(), made once by the caller: each
// createpolicy is several uniform instructions where ptxas does not reuse one).
template <int EV, class V> __device__ __forceinline__ typename Bare<V>::T ldh(V* p, unsigned long long pol) {
  typedef typename Bare<V>::T U;
  if constexpr ((EV & HINT_MASK) == EVICT_NORMAL) {
    return *p;
  } else {
    static_assert(sizeof(U) == 1 || sizeof(U) == 2 || sizeof(U) == 4 || sizeof(U) == 8 || sizeof(U) == 16,
                  "a hinted access of 1, 2, 4, 8 or 16 bytes");
    U out;
    if constexpr (sizeof(U) == 1) {
      const unsigned char x = (unsigned char)HintAccess<EV & HINT_MASK, (EV & READ_ONLY) != 0>::ld1(p, pol);
      memcpy(&out, &x, 1);
    } else if constexpr (sizeof(U) == 2) {
      const unsigned short x = HintAccess<EV & HINT_MASK, (EV & READ_ONLY) != 0>::ld2(p, pol);
      memcpy(&out, &x, 2);
    } else if constexpr (sizeof(U) == 4) {
      const unsigned x = HintAccess<EV & HINT_MASK, (EV & READ_ONLY) != 0>::ld4(p, pol);
      memcpy(&out, &x, 4);
    } else if constexpr (sizeof(U) == 8) {
      const uint2 x = HintAccess<EV & HINT_MASK, (EV & READ_ONLY) != 0>::ld8(p, pol);
      memcpy(&out, &x, 8);
    } else {
      const uint4 x = HintAccess<EV & HINT_MASK, (EV & READ_ONLY) != 0>::ld16(p, pol);
      memcpy(&out, &x, 16);
    }
    return out;
  }
}

// *p = x, with the hint EV and its policy.
template <int EV, class V> __device__ __forceinline__ void sth(V* p, const typename Bare<V>::T& x, unsigned long long pol) {
  if constexpr ((EV & HINT_MASK) == EVICT_NORMAL) {
    *p = x;
  } else {
    if constexpr (sizeof(V) == 1) {
      unsigned char y;
      memcpy(&y, &x, 1);
      HintAccess<EV & HINT_MASK, false>::st1(p, y, pol);
    } else if constexpr (sizeof(V) == 2) {
      unsigned short y;
      memcpy(&y, &x, 2);
      HintAccess<EV & HINT_MASK, false>::st2(p, y, pol);
    } else if constexpr (sizeof(V) == 4) {
      unsigned y;
      memcpy(&y, &x, 4);
      HintAccess<EV & HINT_MASK, false>::st4(p, y, pol);
    } else if constexpr (sizeof(V) == 8) {
      uint2 y;
      memcpy(&y, &x, 8);
      HintAccess<EV & HINT_MASK, false>::st8(p, y, pol);
    } else {
      uint4 y;
      memcpy(&y, &x, 16);
      HintAccess<EV & HINT_MASK, false>::st16(p, y, pol);
    }
  }
}

// The same with the policy made here (one access: element loads and stores).
template <int EV, class V> __device__ __forceinline__ typename Bare<V>::T ldh(V* p) {
  return ldh<EV>(p, l2_policy<EV>());
}
template <int EV, class V> __device__ __forceinline__ void sth(V* p, const typename Bare<V>::T& x) {
  sth<EV>(p, x, l2_policy<EV>());
}

}  // namespace ph
