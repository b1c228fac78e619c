// Packed row loads (the knob PACK=1): a row tile of a 2-byte float type loaded straight into
// `Packed` registers, two elements a 32-bit register, for a `let` that holds a whole row between
// its reductions and its store (examples/softmax_row.ph). A row whose start is not on 16 bytes
// (bf16 rows of 50257) is read as the aligned 16-byte vectors that cover it, one a group: a
// group's elements are the last 8 - SH halves of its own vector and the first SH of the next
// group's vector, which lane + 1 holds (a warp shuffle), or for lane 31 lane 0 of the next warp
// (shared memory), or for the tile's last group a load of its own. Each thread keeps only its
// own vectors in flight, so the row's registers are never twice its packed size (the shifted
// loads of phobos_shifted.cuh read two vectors a group and convert every element to f32).
#pragma once

namespace ph {

// Scratch bytes of load_row_packed: one 16-byte vector a group of each warp's lane 0.
template <class L> __host__ __device__ constexpr int packed_row_scratch() { return L::N / L::VEC * (L::THREADS / 32) * 16; }

// Word i of a group: elements 2i and 2i + 1, halves SH + 2i and SH + 2i + 1 of lo:hi.
template <int SH> __device__ __forceinline__ unsigned packed_word(const uint4& lo, const uint4& hi, int i) {
  const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  constexpr int q = SH >> 1;
  if constexpr (SH % 2 == 0) return w[q + i];
  else return __funnelshift_r(w[q + i], w[q + i + 1], 16);
}

// The row's start is SH elements past a 16-byte boundary (0 to 7, block-uniform). row0: that
// boundary (the row's start minus SH elements); n: the row's elements from the tile's column 0.
template <class L, int EV, int SH, class S, int B>
__device__ __forceinline__ void load_row_packed_sh(const S* row0, int n, Packed<S, L>& p, const Scratch<B>& sc) {
  constexpr int G = L::N / L::VEC, W = L::THREADS / 32;
  const unsigned long long pol = l2_policy<EV>();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  int r0, c0;
  L::coord(tid, 0, r0, c0);
  // From the tensor's pointer, so the compiler keeps it a global address.
  const S* base = row0 + c0;
  uint4 lo[G];
  // Every group's vector first (its loads in flight together), the words afterwards.
#pragma unroll
  for (int j = 0; j < G; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    lo[j] = make_uint4(0, 0, 0, 0);
    // The vector holds the row's elements x - SH .. x - SH + 7 (x: the group's column counted
    // along the row, past the tile for a group beyond it): read when one is in the row and the
    // tile, also for the group just past the tile, whose vector ends the tile's last group.
    const int x = r * L::C + c;
    if (x - SH < L::C && x - SH < n) lo[j] = ldh<EV>(reinterpret_cast<const uint4*>(base + (x - c0)), pol);
  }
  uint4* xs = reinterpret_cast<uint4*>(sc.p);
  if constexpr (SH != 0) {
    if (lane == 0) {
#pragma unroll
      for (int j = 0; j < G; ++j) xs[j * W + warp] = lo[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int j = 0; j < G; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    uint4 hi = make_uint4(0, 0, 0, 0);
    if constexpr (SH != 0) {
      // The next group's vector (columns c + 8 ..): lane + 1's, the next warp's lane 0's, or,
      // after the tile's last group, read here.
      hi.x = __shfl_down_sync(0xffffffffu, lo[j].x, 1);
      hi.y = __shfl_down_sync(0xffffffffu, lo[j].y, 1);
      hi.z = __shfl_down_sync(0xffffffffu, lo[j].z, 1);
      hi.w = __shfl_down_sync(0xffffffffu, lo[j].w, 1);
      if (lane == 31) {
        if (warp + 1 < W) hi = xs[j * W + warp + 1];
        else if (j + 1 < G) hi = xs[(j + 1) * W];
        else if (in_tile<L>(r, c) && c + L::VEC - SH < n)
          hi = ldh<EV>(reinterpret_cast<const uint4*>(base + (c - c0) + L::VEC), pol);
        else hi = make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int i = 0; i < L::VEC / 2; ++i) p.v.w[j * (L::VEC / 2) + i] = packed_word<SH>(lo[j], hi, i);
  }
}

// Elements past the row's end (or the tile's) read zero: the groups that are not whole.
template <class L, class S> __device__ __forceinline__ void packed_row_mask(int n, Packed<S, L>& p) {
  const int tid = threadIdx.x;
#pragma unroll
  for (int j = 0; j < L::N / L::VEC; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    if (in_tile<L>(r, c) && c + L::VEC <= n) continue;
#pragma unroll
    for (int i = 0; i < L::VEC / 2; ++i) {
      unsigned& w = p.v.w[j * (L::VEC / 2) + i];
      if (!in_tile<L>(r, c) || c + 2 * i >= n) w = 0;
      else if (c + 2 * i + 1 >= n) w &= 0xffffu;
    }
  }
}

// A row tile of a 2-byte float type, packed (PACK=1); other tiles: load_tile, then packed.
template <class L, int EV = EVICT_NORMAL, class S, int B>
__device__ Packed<typename Bare<S>::T, L> load_row_packed(const Region<S>& g, const Scratch<B>& sc) {
  typedef typename Bare<S>::T U;
  if constexpr (sizeof(S) != 2 || L::VEC != 8 || L::R != 1 || !IsBlocked<L>::value || L::THREADS % 32 != 0 ||
                packed_row_scratch<L>() > B) {
    return pack<U>(load_tile<L, EV>(g));
  } else {
    if (!(g.cs == 1 && g.c0 >= 0)) return pack<U>(load_tile<L, EV>(g));
    Packed<U, L> p;
    if (!(g.ok && (unsigned)g.r0 < (unsigned)g.rn)) {
#pragma unroll
      for (int i = 0; i < (L::N + 1) / 2; ++i) p.v.w[i] = 0;
      return p;
    }
    const S* row = elem_ptr(g, 0, 0);
    const int sh = (int)(((unsigned long long)row >> 1) & 7);
    const S* row0 = row - sh;
    const int n = g.cn - g.c0;
    switch (sh) {
      case 0: load_row_packed_sh<L, EV, 0>(row0, n, p, sc); break;
      case 1: load_row_packed_sh<L, EV, 1>(row0, n, p, sc); break;
      case 2: load_row_packed_sh<L, EV, 2>(row0, n, p, sc); break;
      case 3: load_row_packed_sh<L, EV, 3>(row0, n, p, sc); break;
      case 4: load_row_packed_sh<L, EV, 4>(row0, n, p, sc); break;
      case 5: load_row_packed_sh<L, EV, 5>(row0, n, p, sc); break;
      case 6: load_row_packed_sh<L, EV, 6>(row0, n, p, sc); break;
      default: load_row_packed_sh<L, EV, 7>(row0, n, p, sc); break;
    }
    packed_row_mask<L>(n, p);
    return p;
  }
}

// PACK=4: a row loaded into `let x = where(arange(n) < e, X[r, c :+ n], fill)`. The halves at
// tile columns >= e hold `fill` (bits of S), those past the tensor but before e read 0, as the
// masked load and the `where` give them; only groups not wholly before both limits are touched.
template <class L, class S> __device__ __forceinline__ void packed_row_fill(int n, int e, unsigned fill, Packed<S, L>& p) {
  // Zero past the tensor, then the fill past e: each a branch a group and a select a word (a
  // single pass choosing among the three per half spilled 16 bytes at the 50257 point).
  packed_row_mask<L>(n, p);
  const int tid = threadIdx.x;
#pragma unroll
  for (int j = 0; j < L::N / L::VEC; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    if (in_tile<L>(r, c) && c + L::VEC <= e) continue;
#pragma unroll
    for (int i = 0; i < L::VEC / 2; ++i) {
      unsigned& w = p.v.w[j * (L::VEC / 2) + i];
      if (!in_tile<L>(r, c) || c + 2 * i >= e) w = fill | (fill << 16);
      else if (c + 2 * i + 1 >= e) w = (w & 0xffffu) | (fill << 16);
    }
  }
}

// load_row_packed with the columns >= e filled (PACK=4, packed_row_fill); `fill` is a value of
// S held in f32. Other tiles: load_tile, filled, then packed.
template <class L, int EV = EVICT_NORMAL, class S, int B>
__device__ Packed<typename Bare<S>::T, L> load_row_packed_fill(const Region<S>& g, int e, float fill, const Scratch<B>& sc) {
  typedef typename Bare<S>::T U;
  if constexpr (sizeof(S) != 2 || L::VEC != 8 || L::R != 1 || !IsBlocked<L>::value || L::THREADS % 32 != 0 ||
                packed_row_scratch<L>() > B) {
    Tile<float, L> t = load_tile<L, EV>(g);
#pragma unroll
    for (int i = 0; i < L::N; ++i)
      if (col_of<L>(i) >= e) t.v[i] = fill;
    return pack<U>(t);
  } else {
    const unsigned bits = pack_bits<U>(fill);
    if (!(g.cs == 1 && g.c0 >= 0)) {
      Tile<float, L> t = load_tile<L, EV>(g);
#pragma unroll
      for (int i = 0; i < L::N; ++i)
        if (col_of<L>(i) >= e) t.v[i] = fill;
      return pack<U>(t);
    }
    Packed<U, L> p;
    if (!(g.ok && (unsigned)g.r0 < (unsigned)g.rn)) {
#pragma unroll
      for (int i = 0; i < (L::N + 1) / 2; ++i) p.v.w[i] = 0;
      packed_row_fill<L>(0, e, bits, p);
      return p;
    }
    const S* row = elem_ptr(g, 0, 0);
    const int sh = (int)(((unsigned long long)row >> 1) & 7);
    const S* row0 = row - sh;
    const int n = g.cn - g.c0;
    switch (sh) {
      case 0: load_row_packed_sh<L, EV, 0>(row0, n, p, sc); break;
      case 1: load_row_packed_sh<L, EV, 1>(row0, n, p, sc); break;
      case 2: load_row_packed_sh<L, EV, 2>(row0, n, p, sc); break;
      case 3: load_row_packed_sh<L, EV, 3>(row0, n, p, sc); break;
      case 4: load_row_packed_sh<L, EV, 4>(row0, n, p, sc); break;
      case 5: load_row_packed_sh<L, EV, 5>(row0, n, p, sc); break;
      case 6: load_row_packed_sh<L, EV, 6>(row0, n, p, sc); break;
      default: load_row_packed_sh<L, EV, 7>(row0, n, p, sc); break;
    }
    packed_row_fill<L>(n, e, bits, p);
    return p;
  }
}

// Max or min of two packed pairs, half by half (PACK=4: the max pass on the packed row, one
// instruction for two elements; NaN gives the other operand, as Max and Min do).
template <class Op, class S> struct Packed2;
template <> struct Packed2<Max, bf16> {
  static constexpr unsigned ID = 0xff80ff80u;  // -inf, -inf
  __device__ static unsigned op(unsigned a, unsigned b) { unsigned d; asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); return d; }
};
template <> struct Packed2<Min, bf16> {
  static constexpr unsigned ID = 0x7f807f80u;  // inf, inf
  __device__ static unsigned op(unsigned a, unsigned b) { unsigned d; asm("min.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); return d; }
};

// The block's combine of its per-thread partials (PACK=4): a butterfly in each warp, one partial a
// warp through the scratch, then a butterfly over those in every warp (lane w reads warp w's).
// Every thread gets the same bits (each butterfly step adds the same two values in both lanes).
// reduce_all reads all the warps' partials in each thread instead: 32 loads and combines a
// thread at 1024 threads, and their registers, where the packed row leaves few.
template <class Op, class T, int WARPS> __device__ __forceinline__ T combine_lanes(T acc, T* part) {
  static_assert(WARPS <= 32, "combine_lanes: at most 32 warps");
  const int tid = threadIdx.x;
#pragma unroll
  for (int m = 16; m > 0; m /= 2) acc = Op::op(acc, shfl_xor(acc, m));
  if (tid % 32 == 0) part[tid / 32] = acc;
  __syncthreads();
  acc = (tid % 32) < WARPS ? part[tid % 32] : Op::template id<T>();
#pragma unroll
  for (int m = 16; m > 0; m /= 2) acc = Op::op(acc, shfl_xor(acc, m));
  return acc;
}

// reduce_all with combine_lanes (PACK=4): the same value for max and min, a sum in another order.
template <class Op, class T, class L, int BYTES> __device__ T reduce_all_lanes(const Tile<T, L>& x, Scratch<BYTES> s) {
  static_assert(L::THREADS % 32 == 0, "reduce_all_lanes: whole warps");
  static_assert(reduce_all_bytes<T>(L::THREADS) <= BYTES, "scratch too small for reduce_all_lanes");
  return combine_lanes<Op, T, L::THREADS / 32>(reduce_own<Op>(x, (int)threadIdx.x), reinterpret_cast<T*>(s.p));
}

// The whole-tile max or min of f32(p) (p packed bf16, PACK=4): each thread's words by
// Packed2 (sm_80 and newer; before that, element by element), its two halves, then
// combine_lanes. The same value as reduce_all over the f32 tile (max and min do not depend on
// the order).
template <class Op, class L, int BYTES> __device__ float reduce_all_packed(const Packed<bf16, L>& p, Scratch<BYTES> s) {
  constexpr int WARPS = (L::THREADS + 31) / 32;
  static_assert(L::THREADS % 32 == 0 && L::VEC % 2 == 0, "reduce_all_packed: whole warps, pairs");
  static_assert(reduce_all_bytes<float>(L::THREADS) <= BYTES, "scratch too small for reduce_all_packed");
  float* part = reinterpret_cast<float*>(s.p);
  const int tid = threadIdx.x;
  float acc = Op::template id<float>();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned w = Packed2<Op, bf16>::ID;
#pragma unroll
  for (int j = 0; j < L::N / L::VEC; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    if (!(in_tile<L>(r, c) && Owner<L>::at(tid, j * L::VEC))) continue;
#pragma unroll
    for (int i = 0; i < L::VEC / 2; ++i) w = Packed2<Op, bf16>::op(w, p.v.w[j * (L::VEC / 2) + i]);
  }
  acc = Op::op(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
#else
  acc = reduce_own<Op>(unpack(p), tid);
#endif
  return combine_lanes<Op, float, WARPS>(acc, part);
}

// Shifted row stores (PACK=2 and 3): the stores of a row tile of a 2-byte type whose row start is SH
// elements past a 16-byte boundary. Without them each group is 8 two-byte stores, a warp's
// lanes 16 bytes apart (8 times the L2 write requests of the row). Here each thread writes the
// aligned 16-byte vector at its group's column: the last SH elements of the previous group
// (lane - 1's by a warp shuffle, lane 0's from lane 31 of the previous warp through shared
// memory) and the first 8 - SH of its own; the tile's last group also writes the vector after
// it. Elements outside the row (before its start, past N or the tile) are written one by one.
template <int EV, class S> __device__ __forceinline__ void store_row_vec(S* dst, int col, int lim, uint4 v, unsigned long long pol) {
  if (col >= 0 && col + 8 <= lim) {
    sth<EV>(reinterpret_cast<uint4*>(dst), v, pol);
    return;
  }
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
  unsigned short* h = reinterpret_cast<unsigned short*>(dst);
#pragma unroll
  for (int e = 0; e < 8; ++e)
    if (col + e >= 0 && col + e < lim) sth<EV>(h + e, (unsigned short)((e & 1) ? (w[e >> 1] >> 16) : (w[e >> 1] & 0xffffu)), pol);
}

// The tile's groups as 16-byte vectors of S, converted once before the store's switch on the
// shift (so the f32 tile is not live across it: half its registers).
template <class S, class T, class L> __device__ __forceinline__ void pack_row_groups(const Tile<T, L>& t, uint4 (&own)[L::N / L::VEC]) {
#pragma unroll
  for (int j = 0; j < L::N / L::VEC; ++j) {
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      w[i] = (unsigned)Reg<S>::store(t.v[j * 8 + 2 * i]).bits | ((unsigned)Reg<S>::store(t.v[j * 8 + 2 * i + 1]).bits << 16);
    own[j] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

template <int EV, int SH, class L, class S, int B>
__device__ __forceinline__ void store_row_shifted_sh(S* row0, int n, const uint4 (&own)[L::N / L::VEC], const Scratch<B>& sc) {
  constexpr int G = L::N / L::VEC, W = L::THREADS / 32;
  const unsigned long long pol = l2_policy<EV>();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int lim = n < L::C ? n : L::C;
  int r0, c0;
  L::coord(tid, 0, r0, c0);
  S* base = row0 + c0;
  uint4* xs = reinterpret_cast<uint4*>(sc.p);
  if constexpr (SH != 0) {
    if (lane == 31) {
#pragma unroll
      for (int j = 0; j < G; ++j) xs[j * W + warp] = own[j];
    }
    __syncthreads();
  }
  const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int j = 0; j < G; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    uint4 prev = zero;
    if constexpr (SH != 0) {
      prev.x = __shfl_up_sync(0xffffffffu, own[j].x, 1);
      prev.y = __shfl_up_sync(0xffffffffu, own[j].y, 1);
      prev.z = __shfl_up_sync(0xffffffffu, own[j].z, 1);
      prev.w = __shfl_up_sync(0xffffffffu, own[j].w, 1);
      if (lane == 0) prev = warp > 0 ? xs[j * W + warp - 1] : (j > 0 ? xs[(j - 1) * W + W - 1] : zero);
    }
    if (!in_tile<L>(r, c)) continue;
    // The vector at column c holds the row's elements c - SH .. c - SH + 7.
    const uint4 v = make_uint4(packed_word<8 - SH>(prev, own[j], 0), packed_word<8 - SH>(prev, own[j], 1),
                               packed_word<8 - SH>(prev, own[j], 2), packed_word<8 - SH>(prev, own[j], 3));
    store_row_vec<EV>(base + (c - c0), c - SH, lim, v, pol);
    if (SH != 0 && c + L::VEC == L::C) {
      const uint4 tail = make_uint4(packed_word<8 - SH>(own[j], zero, 0), packed_word<8 - SH>(own[j], zero, 1),
                                    packed_word<8 - SH>(own[j], zero, 2), packed_word<8 - SH>(own[j], zero, 3));
      store_row_vec<EV>(base + (c - c0) + L::VEC, c + L::VEC - SH, lim, tail, pol);
    }
  }
}

// A row tile of a 2-byte type: shifted vector stores when its row is not on 16 bytes (decided
// at run time, block-uniform), store_tile otherwise and for every other tile.
template <int EV = EVICT_NORMAL, class L, class S, class T, int B>
__device__ void store_row_shifted(const Region<S>& g, const Tile<T, L>& t, const Scratch<B>& sc) {
  if constexpr (sizeof(S) != 2 || L::VEC != 8 || L::R != 1 || !IsBlocked<L>::value || L::THREADS % 32 != 0 ||
                packed_row_scratch<L>() > B) {
    store_tile<EV>(g, t);
  } else {
    if (!(g.cs == 1 && g.c0 >= 0 && g.ok && (unsigned)g.r0 < (unsigned)g.rn)) {
      store_tile<EV>(g, t);
      return;
    }
    S* row = elem_ptr(g, 0, 0);
    const int sh = (int)(((unsigned long long)row >> 1) & 7);
    S* row0 = row - sh;
    const int n = g.cn - g.c0;
    uint4 own[L::N / L::VEC];
    pack_row_groups<S>(t, own);
    switch (sh) {
      case 0: store_row_shifted_sh<EV, 0, L>(row0, n, own, sc); break;
      case 1: store_row_shifted_sh<EV, 1, L>(row0, n, own, sc); break;
      case 2: store_row_shifted_sh<EV, 2, L>(row0, n, own, sc); break;
      case 3: store_row_shifted_sh<EV, 3, L>(row0, n, own, sc); break;
      case 4: store_row_shifted_sh<EV, 4, L>(row0, n, own, sc); break;
      case 5: store_row_shifted_sh<EV, 5, L>(row0, n, own, sc); break;
      case 6: store_row_shifted_sh<EV, 6, L>(row0, n, own, sc); break;
      default: store_row_shifted_sh<EV, 7, L>(row0, n, own, sc); break;
    }
  }
}

}  // namespace ph
