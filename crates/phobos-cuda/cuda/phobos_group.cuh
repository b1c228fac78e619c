// Grouped stores: a tile store whose value reads other tiles of the same layout, emitted one
// vector group at a time (bench/NOTES.md r7). For group j of a thread (registers j * VEC ..
// j * VEC + VEC - 1 of a Blocked layout) the loads read that group of each tile, the value is
// computed, and the group is stored, so a tile such as a norm's weight row is never whole in
// registers. Each access takes the path `load_tile` / `store_tile` would take for the whole
// tile (whole-tile vector test, masked vector group, or elements), per group. WHOLE = true is
// the caller's promise that `vector_ok` holds for the region (tested once for every region of
// the store): the group is then one vector access and no branch, so the compiler may issue the
// loads of later groups ahead of the stores of earlier ones (they would otherwise each wait in
// their own guarded block).
#pragma once

namespace ph {

// Group j's registers of tile region g in layout L (zero outside the tile and the tensor).
template <class L, bool WHOLE = false, class S>
__device__ __forceinline__ void load_group(const Region<S>& g, int tid, int j,
                                           typename Reg<S>::T (&out)[L::VEC]) {
  typedef typename Reg<S>::T T;
  int r, c;
  L::coord(tid, j * L::VEC, r, c);
  constexpr int BYTES = L::VEC * (int)sizeof(S);
  constexpr int W = BYTES < 16 ? BYTES : 16;
  typedef typename VecT<W>::T V;
  const bool whole_tile = WHOLE || vector_ok<L>(g);
  if constexpr (WHOLE) {
    static_assert(L::VEC > 1, "WHOLE needs vector groups");
    if (!in_tile<L>(r, c)) {
#pragma unroll
      for (int v = 0; v < L::VEC; ++v) out[v] = T(0);
      return;
    }
  }
  if (WHOLE || (L::VEC > 1 && (whole_tile || vector_rows_ok<L>(g)) && in_tile<L>(r, c) &&
                (whole_tile || group_inside<L>(g, r, c)))) {
    typename Bare<S>::T s[L::VEC];
    const V* src = reinterpret_cast<const V*>(elem_ptr(g, r, c));
#pragma unroll
    for (int w = 0; w < BYTES / W; ++w) {
      V x = src[w];
      memcpy(reinterpret_cast<unsigned char*>(s) + w * W, &x, W);
    }
    load_elems<S, L::VEC>(s, out);
  } else {
#pragma unroll
    for (int v = 0; v < L::VEC; ++v)
      out[v] = (in_tile<L>(r, c + v) && in_bounds(g, r, c + v)) ? Reg<S>::load(*elem_ptr(g, r, c + v)) : T(0);
  }
}

// Stores group j's registers into tile region g in layout L (elements outside the tile and
// the tensor are skipped; in a replicated layout only the owning copy stores).
template <class L, bool WHOLE = false, class S, class T>
__device__ __forceinline__ void store_group(const Region<S>& g, int tid, int j, const T (&in)[L::VEC]) {
  int r, c;
  L::coord(tid, j * L::VEC, r, c);
  if (!in_tile<L>(r, c) || !Owner<L>::at(tid, j * L::VEC)) return;
  constexpr int BYTES = L::VEC * (int)sizeof(S);
  constexpr int W = BYTES < 16 ? BYTES : 16;
  typedef typename VecT<W>::T V;
  if (WHOLE || (L::VEC > 1 && (vector_ok<L>(g) || (vector_rows_ok<L>(g) && group_inside<L>(g, r, c))))) {
    typename Bare<S>::T s[L::VEC];
#pragma unroll
    for (int v = 0; v < L::VEC; ++v) s[v] = Reg<S>::store(in[v]);
    V* dst = reinterpret_cast<V*>(elem_ptr(g, r, c));
#pragma unroll
    for (int w = 0; w < BYTES / W; ++w) {
      V x;
      memcpy(&x, reinterpret_cast<const unsigned char*>(s) + w * W, W);
      dst[w] = x;
    }
  } else {
#pragma unroll
    for (int v = 0; v < L::VEC; ++v)
      if (in_tile<L>(r, c + v) && in_bounds(g, r, c + v)) *elem_ptr(g, r, c + v) = Reg<S>::store(in[v]);
  }
}

// A group's bytes as loaded (packed: a bf16 group is 4 registers, its floats 8), so the loads
// of every group can be issued before the first store at half the registers of their values.
template <class L, class S> struct GroupRaw {
  static constexpr int BYTES = L::VEC * (int)sizeof(S);
  static constexpr int W = BYTES < 16 ? BYTES : 16;
  typename VecT<W>::T v[BYTES / W];
};

// Group j of region g, packed, where `vector_ok` holds for g (zero for padding groups).
template <class L, class S>
__device__ __forceinline__ GroupRaw<L, S> load_group_raw(const Region<S>& g, int tid, int j) {
  typedef GroupRaw<L, S> G;
  G x;
  int r, c;
  L::coord(tid, j * L::VEC, r, c);
  const typename VecT<G::W>::T* src = reinterpret_cast<const typename VecT<G::W>::T*>(elem_ptr(g, r, c));
#pragma unroll
  for (int w = 0; w < G::BYTES / G::W; ++w) {
    typename VecT<G::W>::T y{};
    if (in_tile<L>(r, c)) y = src[w];
    x.v[w] = y;
  }
  return x;
}

// The registers of a packed group.
template <class L, class S>
__device__ __forceinline__ void unpack_group(const GroupRaw<L, S>& x, typename Reg<S>::T (&out)[L::VEC]) {
  load_elems<S, L::VEC>(x.v, out);
}

}  // namespace ph
