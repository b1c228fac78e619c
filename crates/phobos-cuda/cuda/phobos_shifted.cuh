// Shifted loads: tiles of 2-byte elements whose rows are known not to start on 16 bytes (a row
// length such as 50257); and (VEC_COPY=1) 4-byte ones, loaded and transposed-stored (r19, at
// the end of the file). An 8-element group of such a row is not one aligned 16-byte access;
// element by element it was 8 two-byte loads a group, a warp's lanes 16 bytes apart
// (bench/NOTES.md r6, r8). Here each group reads the two aligned 16-byte vectors that cover it
// (the second only when the group is not itself aligned) and shifts its 8 elements out of them
// with funnel shifts: two coalesced 128-bit loads a group, the second mostly an L1 hit of the
// neighbouring lane's line. The tile's layout and values are those of `load_tile`: register i
// holds the element of column coord(i).c (the shift is inside the group, not in the layout).
#pragma once
#include "gemm/ptx.cuh"

namespace ph {

// The 8 elements at element offset sh (0..7) of the 16 elements of lo:hi (gemm/ptx.cuh's, shared
// with the mma.sync loop's shifted operand copies).
__device__ __forceinline__ uint4 shift_group(const uint4& lo, const uint4& hi, int sh) { return gemm::shift8(lo, hi, sh); }

// The registers of group j at the compile-time shift SH: element e is half (SH + e) & 1 of word
// (SH + e) / 2 of lo:hi, converted straight from that half (one instruction an element for
// bf16, where a run-time shift took two selects and a funnel shift a word first).
template <class L, int SH, class S>
__device__ __forceinline__ void unpack_shifted(const uint4& lo, const uint4& hi, typename Reg<S>::T* out) {
  const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
  for (int e = 0; e < L::VEC; ++e) {
    const int k = SH + e;
    if constexpr (IsBf16<typename Bare<S>::T>::value) {
      // The half in place: masked (high) or shifted up (low), one instruction (load_elems).
      out[e] = __uint_as_float((k & 1) ? (w[k >> 1] & 0xffff0000u) : (w[k >> 1] << 16));
    } else {
      const unsigned short bits = (unsigned short)((k & 1) ? (w[k >> 1] >> 16) : (w[k >> 1] & 0xffffu));
      typename Bare<S>::T x;
      memcpy(&x, &bits, 2);
      out[e] = Reg<S>::load(x);
    }
  }
}

template <class L, int SH, class S>
__device__ __forceinline__ void unpack_shifted_tile(const uint4 (&lo)[L::N / L::VEC], const uint4 (&hi)[L::N / L::VEC],
                                                    const bool (&whole)[L::N / L::VEC], Tile<typename Reg<S>::T, L>& t) {
#pragma unroll
  for (int j = 0; j < L::N / L::VEC; ++j)
    if (whole[j]) unpack_shifted<L, SH, S>(lo[j], hi[j], &t.v[j * L::VEC]);
}

// A row tile (R = 1): every group of the row has the same shift, the row start's offset in its
// 16-byte vector, so it is computed once (block-uniform) and the unpacking branches on it (8
// versions, no divergence). Each group's vectors are one per-thread base plus immediates.
// INSIDE (SHIFT=2): a tile wholly inside the row takes a path of its own (below).
template <class L, int EV, bool INSIDE, class S> __device__ Tile<typename Reg<S>::T, L> load_row_shifted(const Region<S>& g) {
  typedef typename Reg<S>::T T;
  const unsigned long long pol = l2_policy<EV>();
  Tile<T, L> t;
  const int tid = threadIdx.x;
  constexpr int G = L::N / L::VEC;
  const S* row = elem_ptr(g, 0, 0);
  const int sh = (int)(((unsigned long long)row >> 1) & 7);
  int r0, c0;
  L::coord(tid, 0, r0, c0);
  // From the tensor's pointer, so the compiler keeps it a global address.
  const S* base = row - sh + c0;
  uint4 lo[G], hi[G];
  bool whole[G];
  // A tile wholly inside the row (a chunk loop's every chunk but the last): one block-uniform
  // test instead of a guard a group, and no ragged path, whose predicated loads and merges
  // cost ~3 instructions an element in a loop that streams whole chunks (bench/NOTES.md r13).
  // (Groups never straddle the tile's end when VEC divides its width; otherwise no such path.)
  if (INSIDE && L::C % L::VEC == 0 && g.ok && (unsigned)g.r0 < (unsigned)g.rn && g.c0 >= 0 && g.c0 + L::C <= g.cn) {
#pragma unroll
    for (int j = 0; j < G; ++j) {
      int r, c;
      L::coord(tid, j * L::VEC, r, c);
      whole[j] = in_tile<L>(r, c);
      const uint4* v = reinterpret_cast<const uint4*>(base + (c - c0));
      uint4 x = make_uint4(0, 0, 0, 0), y = make_uint4(0, 0, 0, 0);
      if (whole[j]) x = ldh<EV>(v, pol);
      if (whole[j] && sh != 0) y = ldh<EV>(v + 1, pol);
      lo[j] = x;
      hi[j] = y;
    }
    switch (sh) {
      case 0: unpack_shifted_tile<L, 0, S>(lo, hi, whole, t); break;
      case 1: unpack_shifted_tile<L, 1, S>(lo, hi, whole, t); break;
      case 2: unpack_shifted_tile<L, 2, S>(lo, hi, whole, t); break;
      case 3: unpack_shifted_tile<L, 3, S>(lo, hi, whole, t); break;
      case 4: unpack_shifted_tile<L, 4, S>(lo, hi, whole, t); break;
      case 5: unpack_shifted_tile<L, 5, S>(lo, hi, whole, t); break;
      case 6: unpack_shifted_tile<L, 6, S>(lo, hi, whole, t); break;
      default: unpack_shifted_tile<L, 7, S>(lo, hi, whole, t); break;
    }
#pragma unroll
    for (int j = 0; j < G; ++j)
      if (!whole[j]) {
#pragma unroll
        for (int e = 0; e < L::VEC; ++e) t.v[j * L::VEC + e] = T(0);
      }
    return t;
  }
  // Every group's loads first, then the conversions (as load_tile_narrow, r4).
#pragma unroll
  for (int j = 0; j < G; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    whole[j] = in_tile<L>(r, c) && group_inside<L>(g, r, c);
    const uint4* v = reinterpret_cast<const uint4*>(base + (c - c0));
    uint4 x = make_uint4(0, 0, 0, 0), y = make_uint4(0, 0, 0, 0);
    if (whole[j]) x = ldh<EV>(v, pol);
    // Only when the group crosses into the next vector: that vector then holds one of its
    // elements, so it lies in the tensor's memory.
    if (whole[j] && sh != 0) y = ldh<EV>(v + 1, pol);
    lo[j] = x;
    hi[j] = y;
  }
  switch (sh) {
    case 0: unpack_shifted_tile<L, 0, S>(lo, hi, whole, t); break;
    case 1: unpack_shifted_tile<L, 1, S>(lo, hi, whole, t); break;
    case 2: unpack_shifted_tile<L, 2, S>(lo, hi, whole, t); break;
    case 3: unpack_shifted_tile<L, 3, S>(lo, hi, whole, t); break;
    case 4: unpack_shifted_tile<L, 4, S>(lo, hi, whole, t); break;
    case 5: unpack_shifted_tile<L, 5, S>(lo, hi, whole, t); break;
    case 6: unpack_shifted_tile<L, 6, S>(lo, hi, whole, t); break;
    default: unpack_shifted_tile<L, 7, S>(lo, hi, whole, t); break;
  }

  // The groups at the row's ragged end (or past it), element by element.
#pragma unroll
  for (int j = 0; j < G; ++j) {
    if (whole[j]) continue;
    const int i = j * L::VEC;
    int r, c;
    L::coord(tid, i, r, c);
#pragma unroll
    for (int e = 0; e < L::VEC; ++e)
      t.v[i + e] = (in_tile<L>(r, c + e) && in_bounds(g, r, c + e)) ? Reg<S>::load(ldh<EV>(elem_ptr(g, r, c + e), pol)) : T(0);
  }
  return t;
}

// 4-byte elements in 4-element groups (VEC_COPY=1, bench/NOTES.md r19): rows known not to start on
// 16 bytes (an odd row length of f32). Each group reads the aligned 16-byte vector holding its
// first element and, when its shift (0..3 words, one a row) is not 0, the next vector (the
// neighbouring lane's first: an L1 hit), and selects its 4 words out of the 8 with two selects a
// word. The layout is load_tile's: register i holds column coord(i).c. Groups at the ragged end
// take element loads.
template <class L, int EV, class S> __device__ Tile<typename Reg<S>::T, L> load_tile_shifted4(const Region<S>& g) {
  typedef typename Reg<S>::T T;
  if (!(g.ok && g.cs == 1)) return load_tile<L, EV>(g);
  const unsigned long long pol = l2_policy<EV>();
  Tile<T, L> t;
  const int tid = threadIdx.x;
  const HintBase<L, EV, S> hb(g, tid);
  constexpr int G = L::N / L::VEC;
  uint4 lo[G], hi[G];
  int sh[G];
  bool whole[G];
#pragma unroll
  for (int j = 0; j < G; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    whole[j] = in_tile<L>(r, c) && group_inside<L>(g, r, c);
    const S* p = hb.at(g, r, c);
    sh[j] = (int)(((unsigned long long)p >> 2) & 3);
    // From p itself (not from the integer), so the compiler keeps it a global address.
    const uint4* base = reinterpret_cast<const uint4*>(p - sh[j]);
    uint4 x = make_uint4(0, 0, 0, 0), y = make_uint4(0, 0, 0, 0);
    if (whole[j]) x = ldh<EV>(base, pol);
    // Only when the group crosses into the next vector, which then holds one of its elements.
    if (whole[j] && sh[j] != 0) y = ldh<EV>(base + 1, pol);
    lo[j] = x;
    hi[j] = y;
  }
#pragma unroll
  for (int j = 0; j < G; ++j) {
    const int i = j * L::VEC;
    if (whole[j]) {
      const unsigned w[8] = {lo[j].x, lo[j].y, lo[j].z, lo[j].w, hi[j].x, hi[j].y, hi[j].z, hi[j].w};
      unsigned a[6];
#pragma unroll
      for (int k = 0; k < 6; ++k) a[k] = (sh[j] & 1) ? w[k + 1] : w[k];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const unsigned bits = (sh[j] & 2) ? a[e + 2] : a[e];
        typename Bare<S>::T x;
        memcpy(&x, &bits, 4);
        t.v[i + e] = Reg<S>::load(x);
      }
    } else {
      int r, c;
      L::coord(tid, i, r, c);
#pragma unroll
      for (int e = 0; e < L::VEC; ++e)
        t.v[i + e] = (in_tile<L>(r, c + e) && in_bounds(g, r, c + e)) ? Reg<S>::load(ldh<EV>(hb.at(g, r, c + e), pol)) : T(0);
    }
  }
  return t;
}

// g[..] = transpose(x) for 4-byte rows known not to start on 16 bytes (VEC_COPY=1, bench/NOTES.md
// r19). x goes to the scratch at the odd stride R + 1 as in `transpose`; the store side then reads
// the scratch at each output row's shift sh (the row segment's first element's word in its
// aligned vector), so the shared tile absorbs the shift and no registers are shuffled. The group
// at column c (Lout's 4-element groups) writes the aligned chunk of tile columns [c - sh, c - sh
// + 4) as one 16-byte store; the segment's two partial chunks, shared with the neighbouring tiles,
// are never written whole: the row's first group writes the head [0, 4 - sh) and its last group
// the tail [C - sh, C) element by element. Chunks at the tensor's edge take element stores.
template <class Lout, class S, class T, class Lin, int BYTES>
__device__ void transpose_store_shifted(const Region<S>& g, const Tile<T, Lin>& x, Scratch<BYTES> s) {
  static_assert(Lout::R == Lin::C && Lout::C == Lin::R, "transpose shape");
  static_assert(Lout::VEC == 4 && sizeof(S) == 4, "shifted transposed stores: 4-byte elements in 4-element groups");
  constexpr int LD = Lin::C + 1;  // odd stride: the column reads hit distinct banks
  static_assert((Lin::R * LD * (int)sizeof(T) + 15) / 16 * 16 <= BYTES, "scratch too small for transpose");
  T* buf = reinterpret_cast<T*>(s.p);
  write_tile(x, buf, LD);
  __syncthreads();
  const int tid = threadIdx.x;
  const unsigned long long pol = l2_policy<EVICT_NORMAL>();
  if (!(g.ok && g.cs == 1)) {
    store_tile(g, transposed_from<Lout>(buf, LD));
    return;
  }
#pragma unroll
  for (int j = 0; j < Lout::N / 4; ++j) {
    int r, c;
    Lout::coord(tid, j * 4, r, c);
    if (!in_tile<Lout>(r, c)) continue;
    const int sh = (int)(((unsigned long long)elem_ptr(g, r, 0) >> 2) & 3);
    if (sh != 0 && c == 0) {
#pragma unroll
      for (int e = 0; e < 3; ++e)
        if (e < 4 - sh && in_bounds(g, r, e)) sth<EVICT_NORMAL>(elem_ptr(g, r, e), Reg<S>::store(buf[e * LD + r]), pol);
    } else {
      const int c0 = c - sh;
      typename Bare<S>::T v[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = Reg<S>::store(buf[(c0 + e) * LD + r]);
      if (in_bounds(g, r, c0) && in_bounds(g, r, c0 + 3)) {
        uint4 q;
        memcpy(&q, v, 16);
        sth<EVICT_NORMAL>(reinterpret_cast<uint4*>(elem_ptr(g, r, c0)), q, pol);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (in_bounds(g, r, c0 + e)) sth<EVICT_NORMAL>(elem_ptr(g, r, c0 + e), v[e], pol);
      }
    }
    if (sh != 0 && c == Lout::C - 4) {
#pragma unroll
      for (int e = 1; e < 4; ++e)
        if (e <= sh && in_bounds(g, r, Lout::C - e)) sth<EVICT_NORMAL>(elem_ptr(g, r, Lout::C - e), Reg<S>::store(buf[(Lout::C - e) * LD + r]), pol);
    }
  }
}

// One window of `transpose_store_lines`: the lane's elements c (4-byte S) or c and c + 1 (2-byte
// S, one 4-byte store when both are stored), element c at p and read from q (the next element at
// p + 1 and q + LD), those in [lo, hi) only. TEST_LO / TEST_HI false: the window is known to lie on
// that side of the bound, and no test is made (the arguments are constants after unrolling).
template <class S, class T, int LD>
__device__ __forceinline__ void line_window(S* p, const T* q, int c, int lo, int hi, bool test_lo, bool test_hi,
                                            unsigned long long pol) {
  if constexpr (sizeof(S) == 4) {
    if ((!test_lo || c >= lo) && (!test_hi || c < hi)) sth<EVICT_NORMAL>(p, Reg<S>::store(q[0]), pol);
  } else {
    const bool a = (!test_lo || c >= lo) && (!test_hi || c < hi);
    const bool b = (!test_lo || c + 1 >= lo) && (!test_hi || c + 1 < hi);
    if (a && b) {
      const typename Bare<S>::T v[2] = {Reg<S>::store(q[0]), Reg<S>::store(q[LD])};
      unsigned w;
      memcpy(&w, v, 4);
      sth<EVICT_NORMAL>(reinterpret_cast<unsigned*>(p), w, pol);
    } else if (a) {
      sth<EVICT_NORMAL>(p, Reg<S>::store(q[0]), pol);
    } else if (b) {
      sth<EVICT_NORMAL>(p + 1, Reg<S>::store(q[LD]), pol);
    }
  }
}

// The rows of `transpose_store_lines` warp `warp` stores. INSIDE: the tile's columns all lie in
// the tensor (lo = 0, hi = C, block-uniform). Window j then covers PER * j - sh .. PER * j - sh +
// PER - 1 with 0 <= sh < PER: past column 0 when j >= 1, before column C when PER * (j + 1) <= C,
// so the windows between store with no test, each a fixed offset from the row's first
// (bench/NOTES.md r47).
template <bool INSIDE, class Lout, class S, class T, int LD>
__device__ __forceinline__ void line_rows(const Region<S>& g, const T* buf, int warp, int lane, int lo, int hi) {
  constexpr int R = Lout::R, C = Lout::C, WARPS = Lout::THREADS / 32;
  constexpr int PER = 128 / (int)sizeof(S), EPL = 4 / (int)sizeof(S);
  constexpr int WIN = (C + 2 * PER - 2) / PER, ROWS = (R + WARPS - 1) / WARPS;
  const unsigned long long pol = l2_policy<EVICT_NORMAL>();
#pragma unroll
  for (int i = 0; i < ROWS; ++i) {
    const int r = warp + WARPS * i;
    if ((R % WARPS != 0 && r >= R) || (unsigned)(g.r0 + r) >= (unsigned)g.rn) continue;
    S* row = elem_ptr(g, r, 0);
    const int sh = (int)(((unsigned long long)row / sizeof(S)) & (PER - 1));
    // Window 0's element of the lane; window j's is PER * j further, in the row and in the
    // scratch (immediate offsets from these).
    const int c0 = EPL * lane - sh;
    S* p = row + c0;
    const T* q = buf + c0 * LD + r;
#pragma unroll
    for (int j = 0; j < WIN; ++j) {
      const int c = c0 + PER * j;
      if (INSIDE)
        line_window<S, T, LD>(p + PER * j, q + PER * j * LD, c, 0, C, j == 0, PER * (j + 1) > C, pol);
      else
        line_window<S, T, LD>(p + PER * j, q + PER * j * LD, c, lo, hi, true, true, pol);
    }
  }
}

// g[..] = transpose(x) for rows known not to start on 16 bytes, by warp windows on 128-byte lines
// (STORE_LINES=1, bench/NOTES.md r37c, r40, r43, r47). x goes to the scratch at the odd stride R +
// 1 as in `transpose`. Warp w stores the tile's rows w, w + WARPS, ...: with PER = 128 / sizeof(S)
// elements a line and sh the row segment's first element's index in its 128-byte line (computed
// once a row), window j covers the segment's elements PER*j - sh .. PER*j - sh + PER - 1, one whole
// line, so the only partial sectors are the segment's two ends, where the layout's own stores
// touch two lines a warp. 4-byte elements: a lane an element. 2-byte elements: a lane a pair, one
// 4-byte store where both lie in the segment and the tensor (the pair's address is the line's
// plus 4 * lane), a 2-byte store where one does. A segment of C elements takes at most
// (C + 2 * PER - 2) / PER windows; the lanes outside the segment or the tensor store nothing, and
// a tile inside the tensor's columns tests only its first and last windows (`line_rows`).
// Lout's layout is not used beyond its shape and thread count: no registers are shuffled, the
// shared tile absorbs the shift.
template <class Lout, class S, class T, class Lin, int BYTES>
__device__ void transpose_store_lines(const Region<S>& g, const Tile<T, Lin>& x, Scratch<BYTES> s) {
  static_assert(Lout::R == Lin::C && Lout::C == Lin::R, "transpose shape");
  static_assert(sizeof(S) == 4 || sizeof(S) == 2, "stores by line windows: 4- or 2-byte elements");
  static_assert(Lout::THREADS % 32 == 0, "stores by line windows: whole warps");
  constexpr int LD = Lin::C + 1;  // odd stride: a window's column reads hit distinct banks
  static_assert((Lin::R * LD * (int)sizeof(T) + 15) / 16 * 16 <= BYTES, "scratch too small for transpose");
  constexpr int C = Lout::C;
  T* buf = reinterpret_cast<T*>(s.p);
  write_tile(x, buf, LD);
  __syncthreads();
  const int tid = threadIdx.x;
  if (!(g.ok && g.cs == 1)) {
    store_tile(g, transposed_from<Lout>(buf, LD));
    return;
  }
  const int warp = tid / 32, lane = tid % 32;
  // The tile's columns inside the tensor: [lo, hi).
  const int lo = g.c0 < 0 ? -g.c0 : 0;
  const int hi = g.cn - g.c0 < C ? g.cn - g.c0 : C;
  if (lo == 0 && hi == C)
    line_rows<true, Lout, S, T, LD>(g, buf, warp, lane, lo, hi);
  else
    line_rows<false, Lout, S, T, LD>(g, buf, warp, lane, lo, hi);
}

// SHIFT (the knob): 0, each group computes its own shift and shifts at run time (r8); 1, a row
// tile's shift is computed once and the conversion branches on it (load_row_shifted); 2, as 1,
// and a tile wholly inside the row skips the per-group guards and the ragged-end path (r13).
template <class L, int EV = EVICT_NORMAL, int SHIFT = 0, class S>
__device__ Tile<typename Reg<S>::T, L> load_tile_shifted(const Region<S>& g) {
  if constexpr (sizeof(S) == 4 && L::VEC == 4) {
    return load_tile_shifted4<L, EV>(g);
  } else if constexpr (sizeof(S) != 2 || L::VEC != 8) {
    return load_tile<L, EV>(g);
  } else if constexpr (L::R == 1 && (SHIFT == 1 || SHIFT == 2)) {
    if (!(g.ok && g.cs == 1)) return load_tile<L, EV>(g);
    return load_row_shifted<L, EV, SHIFT == 2>(g);
  } else {
    typedef typename Reg<S>::T T;
    if (!(g.ok && g.cs == 1)) return load_tile<L, EV>(g);
    const unsigned long long pol = l2_policy<EV>();
    Tile<T, L> t;
    const int tid = threadIdx.x;
    const HintBase<L, EV, S> hb(g, tid);
    constexpr int G = L::N / L::VEC;
    uint4 lo[G], hi[G];
    int sh[G];
    bool whole[G];
    // Every group's loads first, then the shifts and conversions (as load_tile_narrow, r4).
#pragma unroll
    for (int j = 0; j < G; ++j) {
      int r, c;
      L::coord(tid, j * L::VEC, r, c);
      whole[j] = in_tile<L>(r, c) && group_inside<L>(g, r, c);
      const S* p = hb.at(g, r, c);
      sh[j] = (int)(((unsigned long long)p >> 1) & 7);
      // From p itself (not from the integer), so the compiler keeps it a global address.
      const uint4* base = reinterpret_cast<const uint4*>(p - sh[j]);
      uint4 x = make_uint4(0, 0, 0, 0), y = make_uint4(0, 0, 0, 0);
      if (whole[j]) x = ldh<EV>(base, pol);
      // Only when the group crosses into the next vector: that vector then holds one of its
      // elements, so it lies in the tensor's memory.
      if (whole[j] && sh[j] != 0) y = ldh<EV>(base + 1, pol);
      lo[j] = x;
      hi[j] = y;
    }
#pragma unroll
    for (int j = 0; j < G; ++j) {
      const int i = j * L::VEC;
      if (whole[j]) {
        const uint4 v = shift_group(lo[j], hi[j], sh[j]);
        T e8[L::VEC];
        load_elems<S, L::VEC>(&v, e8);
#pragma unroll
        for (int e = 0; e < L::VEC; ++e) t.v[i + e] = e8[e];
      } else {
        int r, c;
        L::coord(tid, i, r, c);
#pragma unroll
        for (int e = 0; e < L::VEC; ++e)
          t.v[i + e] = (in_tile<L>(r, c + e) && in_bounds(g, r, c + e)) ? Reg<S>::load(ldh<EV>(hb.at(g, r, c + e), pol)) : T(0);
      }
    }
    return t;
  }
}

}  // namespace ph
