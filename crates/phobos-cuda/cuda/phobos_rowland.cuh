// A row landed a row ahead (the knob ROWS_AHEAD=2; bench/NOTES.md r21). A persistent block's
// masked row load `where(arange(n) < e, X[r, c :+ n], fill)` arrives in ONE shared-memory buffer
// by bulk copies while the block computes the row before it from registers. At the row's `let`
// each thread reads its own elements out of the buffer into registers (a Tile, or the packed row
// of PACK=4), the block passes a barrier, and warp 0 issues the next logical block's row into
// the same buffer: the next row's bytes are in flight during the whole of this row's arithmetic
// and stores, with one row in the register file and one in shared memory (where ROWS_AHEAD=1
// computes out of shared memory, and WHOLE=1 alone has one row a multiprocessor in flight).
//
// The buffer: the mbarrier (16 bytes), then the row's bytes from the 16-byte boundary at or
// before its start (sh elements before it), so that element c of the row is element sh + c of
// the buffer. Its 16-byte-aligned interior arrives by the bulk copies; the head and the tail
// outside it are read from global memory by the threads whose groups hold them. The n-th fill
// of the buffer (n = 0 before the loop) completes the barrier's phase n, waited on parity n & 1.
#pragma once

#include "phobos_rowsmem.cuh"

namespace ph {

// Bytes of the buffer of a row tile of S in layout L: the mbarrier, the tile's columns, and the
// 16 bytes a shifted row reaches past them.
template <class L, class S> __host__ __device__ constexpr int row_land_bytes() {
  return 16 + (L::C * (int)sizeof(S) + 15) / 16 * 16 + 16;
}

// A contiguous row's copy: row0 the 16-byte boundary sh elements before its start, lim its
// elements in the tile, [a0, a1) its aligned interior counted from row0 (elements), `bytes` the
// interior's.
template <class S> struct RowLand {
  const S* row0;
  int sh, n, lim, a0, a1, bytes;
};
template <class L, class S> __device__ __forceinline__ RowLand<S> row_land(const Region<S>& g) {
  constexpr int E = (int)sizeof(S), P = 16 / E;
  RowLand<S> c;
  const S* start = elem_ptr(g, 0, 0);
  c.sh = (int)(((unsigned long long)start & 15) / E);
  c.row0 = start - c.sh;
  c.n = g.cn - g.c0;
  c.lim = c.n < L::C ? c.n : L::C;
  c.a0 = (c.sh + P - 1) & ~(P - 1);
  c.a1 = (c.sh + c.lim) & ~(P - 1);
  c.bytes = c.a1 > c.a0 ? (c.a1 - c.a0) * E : 0;
  return c;
}

// Before the loop over the logical blocks: the buffer's barrier initialized.
__device__ __forceinline__ void row_land_init(unsigned char* buf) {
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(gemm::smem_u32(buf)) : "memory");
    // The initialized barrier visible to the copies (the async proxy).
    gemm::fence_proxy_async();
  }
}

// The next row (region g, when `has`) issued into the buffer, after a block barrier (every
// thread done reading the buffer, and the initialized barrier visible to warp 0) and a proxy
// fence (those generic reads ordered before the copies' async writes). Warp 0 issues the
// interior's bulk copies, 16 KB each; a region that is not one contiguous row arrives with no
// bytes, so every fill completes a phase.
template <class L, class S> __device__ __forceinline__ void row_land_issue(const Region<S>& g, bool has, unsigned char* buf) {
  __syncthreads();
  if (!has) return;
  const int tid = threadIdx.x;
  if (tid >= 32) return;
  gemm::fence_proxy_async();
  const gemm::u32 bar = gemm::smem_u32(buf);
  if (!smem_row_contiguous(g)) {
    if (tid == 0) gemm::mbar_arrive_expect_tx(bar, 0u);
    return;
  }
  const RowLand<S> c = row_land<L>(g);
  static_assert(row_land_bytes<L, S>() <= 32 * SMEM_ROW_COPY, "landed rows: too many copies");
  if (tid == 0) gemm::mbar_arrive_expect_tx(bar, (gemm::u32)c.bytes);
  __syncwarp();
  const int at = tid * SMEM_ROW_COPY;
  if (at < c.bytes) {
    const int size = c.bytes - at < SMEM_ROW_COPY ? c.bytes - at : SMEM_ROW_COPY;
    const unsigned char* src = reinterpret_cast<const unsigned char*>(c.row0 + c.a0) + at;
    gemm::bulk_copy_g2s(gemm::smem_u32(buf + 16 + c.a0 * (int)sizeof(S) + at), src, (gemm::u32)size, bar);
  }
}

// The 16 bytes at byte offset b (0..15) of the 32 bytes lo:hi: two selects a word pick the
// words, a funnel shift a word the bytes (no indexing by a run-time value, so no local memory).
__device__ __forceinline__ uint4 shift_bytes(const uint4& lo, const uint4& hi, int b) {
  const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  unsigned a[7], d[5];
#pragma unroll
  for (int i = 0; i < 7; ++i) a[i] = (b & 4) ? w[i + 1] : w[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) d[i] = (b & 8) ? a[i + 2] : a[i];
  const unsigned bits = (unsigned)(b & 3) * 8u;
  return make_uint4(__funnelshift_r(d[0], d[1], bits), __funnelshift_r(d[1], d[2], bits),
                    __funnelshift_r(d[2], d[3], bits), __funnelshift_r(d[3], d[4], bits));
}

// Element i of the result from raw bits of U (`land_raw`), from `fill` (a value of U held in
// f32), or 0: a Tile holds the element's register value, a packed row (PACK=4) its bits.
template <class T, class L, class U> __device__ __forceinline__ void land_raw(Tile<T, L>& t, int i, U x) {
  t.v[i] = Reg<U>::load(x);
}
template <class U, class L> __device__ __forceinline__ void land_raw(Packed<U, L>& p, int i, U x) {
  const unsigned bits = (unsigned)x.bits;
  unsigned& w = p.v.w[i >> 1];
  w = (i & 1) ? ((w & 0xffffu) | (bits << 16)) : ((w & 0xffff0000u) | bits);
}
template <class T, class L, class U> __device__ __forceinline__ void land_fill(Tile<T, L>& t, int i, float fill, U) {
  t.v[i] = (T)fill;
}
template <class U, class L> __device__ __forceinline__ void land_fill(Packed<U, L>& p, int i, float fill, U) {
  U x;
  x.bits = (decltype(x.bits))pack_bits<U>(fill);
  land_raw(p, i, x);
}
template <class T, class L, class U> __device__ __forceinline__ void land_zero(Tile<T, L>& t, int i, U) { t.v[i] = T(0); }
template <class U, class L> __device__ __forceinline__ void land_zero(Packed<U, L>& p, int i, U) {
  U x;
  x.bits = 0;
  land_raw(p, i, x);
}
template <class T, class L> __device__ __forceinline__ void land_clear(Tile<T, L>&) {}
template <class U, class L> __device__ __forceinline__ void land_clear(Packed<U, L>& p) {
#pragma unroll
  for (int i = 0; i < (L::N + 1) / 2; ++i) p.v.w[i] = 0;
}

// An element of the row outside the groups read whole: out of the buffer when the copy brought
// it, else from global memory (the row's head and tail).
template <int EV, class S>
__device__ __forceinline__ typename Bare<S>::T land_edge(const S* row0, int kk, int a0, int a1, const unsigned char* data) {
  if (kk >= a0 && kk < a1) return reinterpret_cast<const typename Bare<S>::T*>(data)[kk];
  return ldh<EV>(row0 + kk);
}

// ROWS_AHEAD=2: `where(arange(C) < e, g, fill)` as R (Tile<Reg<S>::T, L>, or Packed<S, L> for a
// packed 2-byte row) out of the buffer at `buf` (row_land_bytes<L, S>() bytes, 16-byte aligned)
// that the n-th logical block's copy fills; then, after every thread has read it, the next
// logical block's row (`next()`, when `has`: a callable, so no register holds the region across
// the reads) issued into it. A region that is not one contiguous row (its fill completed with no
// bytes) is read from global memory as load_tile reads it.
template <class R, class L, int EV = EVICT_NORMAL, class S, class F>
__device__ R load_row_landed(const Region<S>& g, int e, float fill, unsigned char* buf, int n, const F& next, bool has) {
  typedef typename Bare<S>::T U;
  constexpr int E = (int)sizeof(U), P = 16 / E, G = L::N / L::VEC;
  static_assert(IsBlocked<L>::value && L::R == 1 && L::THREADS % 32 == 0, "landed rows: a blocked row tile over whole warps");
  static_assert(E == 2 || E == 4, "landed rows: a 2- or 4-byte element type");
  static_assert(L::VEC * E == 16 || L::VEC * E <= 4, "landed rows: 16-byte groups, or one 2- or 4-byte word a group");
  R out;
  land_clear(out);
  const U zero{};
  const int tid = threadIdx.x;
  gemm::mbar_wait(gemm::smem_u32(buf), (gemm::u32)(n & 1));
  if (smem_row_contiguous(g)) {
    const RowLand<S> c = row_land<L>(g);
    const unsigned char* data = buf + 16;
    // The columns [lo, hi) whose groups are read whole out of the buffer: inside its copied
    // interior, before e and the row's end (two values live across the reads, not the copy's).
    const int lo = c.a0 - c.sh;
    int hi = c.a1 - c.sh;
    hi = hi < e ? hi : e;
    hi = hi < c.n ? hi : c.n;
#pragma unroll
    for (int j = 0; j < G; ++j) {
      const int i = j * L::VEC;
      int r, col;
      L::coord(tid, i, r, col);
      const int k0 = c.sh + col;  // the group's first element in the buffer
      const bool fast = in_tile<L>(r, col) && col >= lo && col + L::VEC <= hi;
      if (fast) {
        if constexpr (L::VEC * E == 16) {
          // Its two aligned chunks (one when the row is aligned), shifted by the row's sh.
          const uint4* ch = reinterpret_cast<const uint4*>(data) + k0 / P;
          const uint4 lo = lds128(ch);
          const uint4 hi = c.sh != 0 ? lds128(ch + 1) : lo;
          const uint4 v = shift_bytes(lo, hi, c.sh * E);
          U s[L::VEC];
          memcpy(s, &v, 16);
#pragma unroll
          for (int k = 0; k < L::VEC; ++k) land_raw(out, i + k, s[k]);
        } else {
          // Narrow groups: consecutive lanes read consecutive elements (no bank conflict).
#pragma unroll
          for (int k = 0; k < L::VEC; ++k) land_raw(out, i + k, reinterpret_cast<const U*>(data)[k0 + k]);
        }
      } else if constexpr (L::VEC * E <= 4) {
        // Narrow groups past the interior: selects, no branch but the head's and tail's loads
        // (a branch an element held every row's registers across it: spills at 64 a thread).
#pragma unroll
        for (int k = 0; k < L::VEC; ++k) {
          const int cc = col + k, kk = k0 + k;
          const bool copied = kk >= c.a0 && kk < c.a1;
          const int kc = copied ? kk : c.a0;
          U x = reinterpret_cast<const U*>(data)[kc];
          if (!copied && in_tile<L>(r, cc) && cc < e && cc < c.n) x = ldh<EV>(c.row0 + kk);
          if (!in_tile<L>(r, cc) || cc >= e) {
            land_fill(out, i + k, fill, zero);
          } else if (cc >= c.n) {
            land_zero(out, i + k, zero);
          } else {
            land_raw(out, i + k, x);
          }
        }
      } else {
#pragma unroll
        for (int k = 0; k < L::VEC; ++k) {
          const int cc = col + k, kk = k0 + k;
          if (!in_tile<L>(r, cc) || cc >= e) {
            land_fill(out, i + k, fill, zero);
          } else if (cc >= c.n) {
            land_zero(out, i + k, zero);
          } else {
            land_raw(out, i + k, land_edge<EV>(c.row0, kk, c.a0, c.a1, data));
          }
        }
      }
    }
  } else {
    const Tile<typename Reg<S>::T, L> t = load_tile<L, EV>(g);
#pragma unroll
    for (int i = 0; i < L::N; ++i) {
      if (col_of<L>(i) >= e) {
        land_fill(out, i, fill, zero);
      } else {
        land_raw(out, i, Reg<S>::store(t.v[i]));
      }
    }
  }
  if (has) {
    row_land_issue<L>(next(), true, buf);
  } else {
    __syncthreads();
  }
  return out;
}

}  // namespace ph
