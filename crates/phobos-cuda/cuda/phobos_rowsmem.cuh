// A row tile staged in shared memory (the knob ROW_SMEM=1, with PACK=4; bench/NOTES.md r15): the
// `let` of a masked row load `where(arange(n) < e, X[r, c :+ n], fill)` of a 2-byte float type
// lives in shared memory as raw elements, not in registers. Its 16-byte-aligned interior arrives
// by bulk copies (`cp.async.bulk`, sm_90) that one warp issues at once, completing on an
// mbarrier: the whole row's bytes in flight with no register holding them, and the registers the
// packed row took (28 a thread for a bf16 row of 50257 at 1024 threads) free for a second block
// a multiprocessor, whose arithmetic and stores overlap this block's load. The row's unaligned
// head and tail (fewer than 8 elements each) are ordinary loads into the same buffer.
//
// The buffer is indexed from the 16-byte boundary at or before the row's start (SH elements
// before it), so that its 16-byte chunks line up with the row's; once the copies land, a pass
// moves it SH elements down (column c at element c: each thread's groups are whole 16-byte
// chunks, read by one `LDS.128` a group) and writes `fill` past e. A store of a value computed
// element by element from the row (the last use of the row) writes the value into the same
// chunks, then every thread stores 16-byte vectors aligned in the destination's row, each built
// from two neighbouring chunks (the destination's own shift), never the whole row in registers.
#pragma once

#include "phobos_rowpack.cuh"
#include "gemm/ptx.cuh"

namespace ph {

// Chunks (16 bytes) of the staged row: one a group of every thread, and one past them for the
// SH elements a shifted row reaches beyond the tile.
template <class L> __host__ __device__ constexpr int smem_row_chunks() { return L::N / L::VEC * L::THREADS + 1; }
// The buffer's head: the mbarrier of a row that lands whole (16 bytes); with SLABS (below), one
// 8-byte mbarrier a group of every thread (a slab: chunks jT .. jT + T - 1), in whole 16-byte
// units.
template <class L, bool SLABS = false> __host__ __device__ constexpr int smem_row_head() {
  return SLABS ? (L::N / L::VEC + 1) / 2 * 16 : 16;
}
// Bytes of the buffer: the head and the chunks.
template <class L, bool SLABS = false> __host__ __device__ constexpr int smem_row_bytes() {
  return smem_row_head<L, SLABS>() + smem_row_chunks<L>() * 16;
}
// The bulk copies: at most this many bytes each, one a lane of warp 0.
constexpr int SMEM_ROW_COPY = 16384;

// A 16-byte shared-memory read that stays where the program has it (volatile): the compiler
// neither clusters a pass's reads ahead of their uses (their registers live together: spills at
// 32 registers a thread) nor merges them across passes.
__device__ __forceinline__ uint4 lds128(const void* p) {
  uint4 v;
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
  return v;
}

// The staged row of a 2-byte float type S in layout L: `v[i]` reads the thread's element i (the
// register index of a Tile<float, L>) as f32 from shared memory, as Packed<S, L>'s `v[i]` does
// from registers. Column c of the tile is element c of `w` (after the load's realignment).
// How a staged row's groups become readable. A row that landed whole (and was masked or realigned
// before the load returned): nothing to do.
template <class L, bool SLABS> struct SmemRowLanding {
  __device__ __forceinline__ void ready(const unsigned*, int) const {}
};
// SLABS (ROW_SMEM=2 masked in place, bench/NOTES.md r26): group j of every thread (its slab)
// lands on the mbarrier at bar + 8j, and every read of the thread's group j waits on it, so a
// row's first pass runs while its later slabs are still in flight. The chunks no copy writes (the
// row's ends, the columns past it) were written, masked, by their own threads before the load
// returned. The wait is straight-line code to the compiler (gemm::mbar_wait_inline), so the
// pass's arithmetic still interleaves across groups.
template <class L> struct SmemRowLanding<L, true> {
  gemm::u32 bar;
  __device__ __forceinline__ void ready(const unsigned*, int j) const { gemm::mbar_wait_inline(bar + 8 * j, 0); }
};

// Partial staging (ST < G, with SLABS; bench/NOTES.md r38): only groups 0 .. ST - 1 of every
// thread are staged, so the buffer is ST / G of the row's and more blocks share a
// multiprocessor; groups ST .. G - 1 (the row's last chunks) are read from global memory. Chunk k
// (the staged row's numbering: elements 8k .. 8k + 7 from row0, columns 8k - sh on; columns 8k
// on where the row was not left in place, sh = -1) by one 16-byte load where it lies wholly in
// the copied interior [a0, a1), else element by element with the staged row's mask. HOLD: the
// streamed groups are loaded once, as the row's copies are issued, and held in registers (4 a
// group) for every pass; otherwise each pass reads them (the later ones from L2).
template <class S, class L, int ST, bool HOLD, bool PART = (ST < L::N / L::VEC)> struct SmemRowStream {
  __device__ __forceinline__ uint4 streamed(int) const { return make_uint4(0, 0, 0, 0); }
};
template <class S, class L, int ST, bool HOLD> struct SmemRowStream<S, L, ST, HOLD, true> {
  static constexpr int NS = L::N / L::VEC - ST;
  // Element 8k + i of the thread's chunk k is column 8k + i - sh, at c0p + col * cs when col lies
  // in [lo, n) (0 otherwise, the fill from e on). Left in place: the chunk's 16 bytes at
  // c0p - sh + 8k, one load where [8k, 8k + 8) lies in the copied interior [a0, a1). Realigned
  // (a row that reaches the tile's last columns), strided, starting before the tensor's column
  // 0, or out of bounds (lo = n = 0): sh 0, no interior, element loads.
  const unsigned short* c0p;
  long long cs;
  int a0, a1, sh, lo, n, e;
  unsigned bits;  // the fill's bits
  uint4 held[HOLD ? NS : 1];
  // The thread's group j (its chunk k) read from global memory, masked as the staged chunks are.
  __device__ __forceinline__ uint4 fetch(int j) const {
    int r, c;
    L::coord((int)threadIdx.x, j * L::VEC, r, c);
    const int k = c >> 3;
    const bool tile = in_tile<L>(r, c);
    if (tile && 8 * k >= a0 && 8 * k + 8 <= a1) return __ldg(reinterpret_cast<const uint4*>(c0p - sh + 8 * k));
    unsigned h[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int col = 8 * k + i - sh;
      h[i] = (!tile || col < 0 || col >= e) ? bits
             : (col < lo || col >= n) ? 0u
                                      : (unsigned)ldh<EVICT_NORMAL>(c0p + (long long)col * cs);
    }
    return make_uint4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
  }
  // Streamed group j (>= ST): from the registers (HOLD; j a constant of an unrolled loop) or read.
  __device__ __forceinline__ uint4 streamed(int j) const {
    if constexpr (HOLD) return held[j - ST];
    return fetch(j);
  }
};

template <class S, class L, bool SLABS = false, int ST = L::N / L::VEC, bool HOLD = false> struct SmemRow {
  static constexpr int G = L::N / L::VEC;
  static constexpr bool PART = ST < G;
  // The group a pass reads first (for_each_owned_chunk): the staged group 0, the streamed
  // groups' loads issued before its wait.
  static constexpr int FIRST = 0;
  struct Words : SmemRowLanding<L, SLABS>, SmemRowStream<S, L, ST, HOLD> {
    unsigned* w;  // the row's first word (two elements)
    // The group last read (its index, -1 for none) and its chunk: each group's chunk is read
    // once a pass, one LDS.128, where the element loops read it element by element (i is a
    // constant of the unrolled loops, so this bookkeeping folds away). The chunk does not
    // change between passes (only the store through the buffer writes it, after the last read).
    mutable uint4 q;
    mutable int qj;
    // Staged group j's chunk, once its slab landed.
    __device__ __forceinline__ uint4 staged(int j) const {
      this->ready(w, j);
      int r, c;
      L::coord((int)threadIdx.x, j * L::VEC, r, c);
      return lds128(w + (c >> 1));
    }
    // Group j's chunk: staged, or streamed (j a constant of an unrolled loop).
    __device__ __forceinline__ uint4 group(int j) const {
      if (PART && j >= ST) return this->streamed(j);
      return staged(j);
    }
    __device__ __forceinline__ unsigned word(int i) const {
      const int j = i / L::VEC;
      if (j != qj) {
        q = group(j);
        qj = j;
      }
      switch ((i % L::VEC) >> 1) {
        case 0: return q.x;
        case 1: return q.y;
        case 2: return q.z;
        default: return q.w;
      }
    }
    __device__ __forceinline__ float operator[](int i) const { return packed_half<S>(word(i), i & 1); }
  } v;
  // Where column c lies: -1, at element c (realigned); 0 to 7, at element c + sh, where the copy
  // put it (ROW_SMEM=2, masked in place).
  int sh;
  // The 16-byte chunk of the thread's group j (a staged one).
  __device__ __forceinline__ uint4* chunk(int j) const {
    int r, c;
    L::coord((int)threadIdx.x, j * L::VEC, r, c);
    return reinterpret_cast<uint4*>(v.w) + (c >> 3);
  }
};

template <class S, class L, bool SL, int ST, bool H> __device__ __forceinline__ Tile<float, L> unpack(const SmemRow<S, L, SL, ST, H>& p) {
  Tile<float, L> t;
#pragma unroll
  for (int i = 0; i < L::N; ++i) t.v[i] = p.v[i];
  return t;
}

// Group word i (elements 2i, 2i + 1 at columns c + 2i, c + 2i + 1) of `x` after the mask: `fill`
// at columns >= e and outside the tile, 0 past the tensor's n (before e), as the masked load and
// the `where` give them.
template <class L> __device__ __forceinline__ unsigned smem_row_masked(unsigned x, bool tile, int c, int n, int e, unsigned fill) {
  unsigned lo = x & 0xffffu, hi = x >> 16;
  lo = (!tile || c >= e) ? fill : (c >= n ? 0u : lo);
  hi = (!tile || c + 1 >= e) ? fill : (c + 1 >= n ? 0u : hi);
  return lo | (hi << 16);
}

// Column c at element c: each group's chunk from chunks k and k + 1 of the copied row (which
// starts SH elements into chunk 0), the mask applied to groups not wholly in the row. In place,
// one group of every thread a step: a step reads chunks jT .. jT + T and writes jT .. jT + T - 1
// after a barrier, and later steps read only chunks past those.
template <class L, int SH> __device__ __forceinline__ void smem_row_align(uint4* ch, int n, int e, unsigned fill) {
  constexpr int G = L::N / L::VEC;
  const int tid = threadIdx.x;
#pragma unroll
  for (int j = 0; j < G; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    const int k = c >> 3;
    uint4 out = ch[k];
    if constexpr (SH != 0) {
      const uint4 lo = out, hi = ch[k + 1];
      out = make_uint4(packed_word<SH>(lo, hi, 0), packed_word<SH>(lo, hi, 1), packed_word<SH>(lo, hi, 2),
                       packed_word<SH>(lo, hi, 3));
      __syncthreads();
    }
    const bool tile = in_tile<L>(r, c);
    if (!(tile && c + L::VEC <= n && c + L::VEC <= e)) {
      out.x = smem_row_masked<L>(out.x, tile, c, n, e, fill);
      out.y = smem_row_masked<L>(out.y, tile, c + 2, n, e, fill);
      out.z = smem_row_masked<L>(out.z, tile, c + 4, n, e, fill);
      out.w = smem_row_masked<L>(out.w, tile, c + 6, n, e, fill);
    }
    ch[k] = out;
  }
}

// One half at column c (negative before the row: the SH elements ahead of it) after the mask.
__device__ __forceinline__ unsigned smem_row_half(unsigned x, bool tile, int c, int n, int e, unsigned fill) {
  return (!tile || c < 0 || c >= e) ? fill : (c >= n ? 0u : x);
}

// ROW_SMEM=2 (bench/NOTES.md r16), for a row whose uses ignore where an element lies (whole-row
// max, min or sum of element-wise values): the row stays where its copy put it, SH elements into
// chunk 0, and each thread masks its own chunks in place (element i of chunk k is column
// 8k + i - SH): no moves, no barrier. The layout's groups then cover columns -SH .. C - SH - 1:
// the SH before the row hold `fill` in place of columns C - SH .. C - 1, the same values when
// those lie past both the row and e; a row that reaches them is realigned instead.

// Group j of the thread masked in place (ROW_SMEM=2); untouched when all 8 of its columns lie in
// [0, min(n, e)).
template <class L> __device__ __forceinline__ void smem_row_mask_group(uint4* ch, int j, int sh, int n, int e, unsigned fill) {
  const int hi = n < e ? n : e;
  int r, c;
  L::coord((int)threadIdx.x, j * L::VEC, r, c);
  // The chunk's first element's column.
  const int c0 = c - sh;
  const bool tile = in_tile<L>(r, c);
  if (tile && c0 >= 0 && c0 + L::VEC <= hi) return;
  uint4 q = ch[c >> 3];
  unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int cc = c0 + 2 * i;
    w[i] = smem_row_half(w[i] & 0xffffu, tile, cc, n, e, fill) | (smem_row_half(w[i] >> 16, tile, cc + 1, n, e, fill) << 16);
  }
  ch[c >> 3] = make_uint4(w[0], w[1], w[2], w[3]);
}

template <class L> __device__ __forceinline__ void smem_row_mask_in_place(uint4* ch, int sh, int n, int e, unsigned fill) {
#pragma unroll
  for (int j = 0; j < L::N / L::VEC; ++j) smem_row_mask_group<L>(ch, j, sh, n, e, fill);
}

// Whether the staged load of region g is one row of contiguous elements (the bulk-copy path).
template <class S> __device__ __forceinline__ bool smem_row_contiguous(const Region<S>& g) {
  return g.cs == 1 && g.c0 >= 0 && g.ok && (unsigned)g.r0 < (unsigned)g.rn;
}

// The element path: each thread writes its own groups (column c at element c) from ordinary loads.
// NG: the thread's first NG groups (the staged ones of a partly staged row).
template <class L, class S, int NG = L::N / L::VEC>
__device__ __forceinline__ void smem_row_elements(const Region<S>& g, int e, unsigned bits, uint4* ch) {
  constexpr int G = NG;
  const int tid = threadIdx.x;
#pragma unroll
  for (int j = 0; j < G; ++j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      unsigned h[2];
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const int cc = c + 2 * i + b;
        const bool tile = in_tile<L>(r, cc);
        h[b] = (!tile || cc >= e) ? bits
               : in_bounds(g, r, cc) ? (unsigned)(*elem_ptr(g, r, cc)).bits
                                     : 0u;
      }
      w[i] = h[0] | (h[1] << 16);
    }
    ch[c >> 3] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// A contiguous row's copy: row0 the 16-byte boundary SH elements before its start, lim its
// elements in the tile, [a0, a1) its aligned interior counted from row0, `bytes` the interior's.
template <class S> struct SmemRowCopy {
  const S* row0;
  int sh, n, lim, a0, a1, bytes;
};
template <class L, class S> __device__ __forceinline__ SmemRowCopy<S> smem_row_copy(const Region<S>& g) {
  SmemRowCopy<S> c;
  const S* start = elem_ptr(g, 0, 0);
  c.sh = (int)(((unsigned long long)start >> 1) & 7);
  c.row0 = start - c.sh;
  c.n = g.cn - g.c0;
  c.lim = c.n < L::C ? c.n : L::C;
  c.a0 = (c.sh + 7) & ~7;
  c.a1 = (c.sh + c.lim) & ~7;
  c.bytes = c.a1 > c.a0 ? (c.a1 - c.a0) * 2 : 0;
  return c;
}

// Warp 0 issues the interior's bulk copies into the chunks `ch`, completing on mbarrier `bar`
// (thread 0 sets its expected bytes first).
template <class S> __device__ __forceinline__ void smem_row_issue(const SmemRowCopy<S>& c, uint4* ch, gemm::u32 bar) {
  const int tid = threadIdx.x;
  if (tid < 32) {
    if (tid == 0) gemm::mbar_arrive_expect_tx(bar, (gemm::u32)c.bytes);
    __syncwarp();
    const int at = tid * SMEM_ROW_COPY;
    if (at < c.bytes) {
      const int size = c.bytes - at < SMEM_ROW_COPY ? c.bytes - at : SMEM_ROW_COPY;
      const unsigned char* src = reinterpret_cast<const unsigned char*>(c.row0 + c.a0) + at;
      gemm::bulk_copy_g2s(gemm::smem_u32(reinterpret_cast<unsigned char*>(ch) + c.a0 * 2 + at), src, (gemm::u32)size, bar);
    }
  }
}

// The head (elements sh .. a0 - 1) and the tail (a1 .. sh + lim - 1) by ordinary loads, one a
// thread of the first 16.
template <int EV, class S> __device__ __forceinline__ void smem_row_ends(const SmemRowCopy<S>& c, uint4* ch) {
  const int tid = threadIdx.x;
  if (tid < 16) {
    const int x = tid < 8 ? c.sh + tid : (c.a1 > c.a0 ? c.a1 : c.a0) + (tid - 8);
    const bool in = tid < 8 ? (x < c.a0 && x < c.sh + c.lim) : x < c.sh + c.lim;
    if (in) reinterpret_cast<unsigned short*>(ch)[x] = ldh<EV>(reinterpret_cast<const unsigned short*>(c.row0 + x));
  }
}

// SLABS: slab j's part of the interior (chunks jT .. jT + T - 1 of the buffer) by one bulk copy
// on its own mbarrier at bar + 8j (lane j % 32 of warp 0 sets the barrier's bytes, then issues
// it); a slab the interior misses completes with no bytes.
// NG: slabs 0 .. NG - 1 only (a partly staged row's).
template <class L, class S, int NG = L::N / L::VEC>
__device__ __forceinline__ void smem_row_issue_slabs(const SmemRowCopy<S>& c, uint4* ch, gemm::u32 bar) {
  constexpr int G = NG, SLAB = L::THREADS * 16;
  static_assert(SLAB <= SMEM_ROW_COPY, "staged rows: a slab in one copy");
  const int tid = threadIdx.x;
  if (tid >= 32) return;
  for (int j = tid; j < G; j += 32) {
    const int lo = c.a0 * 2 > j * SLAB ? c.a0 * 2 : j * SLAB;
    const int hi = c.a1 * 2 < (j + 1) * SLAB ? c.a1 * 2 : (j + 1) * SLAB;
    const int bytes = hi > lo ? hi - lo : 0;
    gemm::mbar_arrive_expect_tx(bar + 8 * j, (gemm::u32)bytes);
    if (bytes > 0) {
      const unsigned char* src = reinterpret_cast<const unsigned char*>(c.row0) + lo;
      gemm::bulk_copy_g2s(gemm::smem_u32(reinterpret_cast<unsigned char*>(ch) + lo), src, (gemm::u32)bytes, bar + 8 * j);
    }
  }
}

// The row moved SH elements down in its buffer, one group of every thread a step
// (smem_row_align's steps and barriers), with no mask: a value written in place (column c at
// element c + SH) realigned before a store that needs column c at element c.
template <class L> __device__ __forceinline__ void smem_row_move(uint4* ch, int sh) {
  constexpr int ALL = 0x7fffffff;
  switch (sh) {
    case 0: break;
    case 1: smem_row_align<L, 1>(ch, ALL, ALL, 0u); break;
    case 2: smem_row_align<L, 2>(ch, ALL, ALL, 0u); break;
    case 3: smem_row_align<L, 3>(ch, ALL, ALL, 0u); break;
    case 4: smem_row_align<L, 4>(ch, ALL, ALL, 0u); break;
    case 5: smem_row_align<L, 5>(ch, ALL, ALL, 0u); break;
    case 6: smem_row_align<L, 6>(ch, ALL, ALL, 0u); break;
    default: smem_row_align<L, 7>(ch, ALL, ALL, 0u); break;
  }
}

// Whether the row may stay where its copy put it: only when the columns the chunk past the
// layout's last would hold (C - SH .. C - 1) are past both the row and e; then the SH elements
// before the row, which take their place, hold the same values (fill).
template <class L, class S> __device__ __forceinline__ bool smem_row_fits_in_place(const SmemRowCopy<S>& c, int e) {
  const int top = c.lim > (e < L::C ? e : L::C) ? c.lim : (e < L::C ? e : L::C);
  return c.sh + top <= L::C;
}

// Once the copy has landed (and a block barrier): the row masked in place where allowed (its
// shift returned), else realigned (-1).
template <class L, bool IN_PLACE, class S> __device__ __forceinline__ int smem_row_settle(const SmemRowCopy<S>& c, uint4* ch, int e, unsigned bits) {
  if (IN_PLACE && smem_row_fits_in_place<L>(c, e)) {
    smem_row_mask_in_place<L>(ch, c.sh, c.n, e, bits);
    return c.sh;
  }
  switch (c.sh) {
    case 0: smem_row_align<L, 0>(ch, c.n, e, bits); break;
    case 1: smem_row_align<L, 1>(ch, c.n, e, bits); break;
    case 2: smem_row_align<L, 2>(ch, c.n, e, bits); break;
    case 3: smem_row_align<L, 3>(ch, c.n, e, bits); break;
    case 4: smem_row_align<L, 4>(ch, c.n, e, bits); break;
    case 5: smem_row_align<L, 5>(ch, c.n, e, bits); break;
    case 6: smem_row_align<L, 6>(ch, c.n, e, bits); break;
    default: smem_row_align<L, 7>(ch, c.n, e, bits); break;
  }
  return -1;
}

template <class L> __device__ __forceinline__ void smem_row_static_checks() {
  static_assert(L::VEC == 8 && L::R == 1 && IsBlocked<L>::value && L::THREADS % 32 == 0,
                "staged rows: a blocked row tile of a 2-byte type, 8-element groups, whole warps");
  // 32 copies of SMEM_ROW_COPY bytes (512 KB) cover any buffer a block can hold.
  static_assert(smem_row_bytes<L>() <= 32 * SMEM_ROW_COPY, "staged rows: too many copies");
}

// SLABS (ROW_SMEM=2 in place, a row loaded once a block, so its barriers are initialized once and
// never reused; bench/NOTES.md r26): where the row may stay in place, each slab's part of the
// interior lands on its own mbarrier, and the load returns without waiting, each group read
// after its slab's wait (SmemRowLanding<L, true>). The copies stop at column min(n, e): every
// chunk they leave (the head's, the tail's, those past the row) is written whole by its own
// thread, its elements loaded or masked as smem_row_mask_group would leave them. Otherwise the
// row settles whole as without SLABS (realigned, or by elements) and every slab's barrier
// completes with no bytes.
// HOLD: a partly staged row's streamed groups loaded into its registers, with the copies in flight.
template <class S, class L, bool SL, int ST, bool H> __device__ __forceinline__ void smem_row_hold(SmemRow<S, L, SL, ST, H>& p) {
  if constexpr (SmemRow<S, L, SL, ST, H>::PART && H) {
#pragma unroll
    for (int j = ST; j < SmemRow<S, L, SL, ST, H>::G; ++j) p.v.held[j - ST] = p.v.fetch(j);
  }
}

template <class L, int EV, int ST, bool HOLD, class S, class U>
__device__ __forceinline__ SmemRow<U, L, true, ST, HOLD> load_row_smem_slabs(const Region<S>& g, int e, unsigned bits, unsigned char* buf) {
  typedef SmemRow<U, L, true, ST, HOLD> Row;
  Row p;
  uint4* ch = reinterpret_cast<uint4*>(buf + smem_row_head<L, true>());
  p.v.w = reinterpret_cast<unsigned*>(ch);
  p.v.qj = -1;
  const int tid = threadIdx.x;
  const gemm::u32 bar = gemm::smem_u32(buf);
  p.v.bar = bar;
  if (tid == 0) {
    for (int j = 0; j < ST; ++j) gemm::mbar_init(bar + 8 * j, 1);
    // The initialized barriers visible to the copies (the async proxy).
    gemm::fence_proxy_async();
  }
  const bool contiguous = smem_row_contiguous(g);
  SmemRowCopy<S> c = smem_row_copy<L>(g);
  if constexpr (Row::PART) {
    p.v.e = e;
    p.v.bits = bits;
  }
  __syncthreads();
  if (contiguous && smem_row_fits_in_place<L>(c, e)) {
    // Columns from min(n, e) on are masked, not copied.
    const int lim = c.lim < e ? c.lim : (e > 0 ? e : 0);
    c.a1 = (c.sh + lim) & ~7;
    c.bytes = c.a1 > c.a0 ? (c.a1 - c.a0) * 2 : 0;
    smem_row_issue_slabs<L, S, ST>(c, ch, bar);
    const unsigned short* src = reinterpret_cast<const unsigned short*>(c.row0);
    if constexpr (Row::PART) {
      p.v.c0p = src + c.sh;
      p.v.cs = 1;
      p.v.a0 = c.a0;
      p.v.a1 = c.a1;
      p.v.sh = c.sh;
      p.v.lo = 0;
      p.v.n = c.n;
    }
#pragma unroll
    for (int j = 0; j < ST; ++j) {
      // The thread's chunk k holds elements 8k .. 8k + 7 from row0: columns 8k - sh on.
      const int k = j * L::THREADS + tid;
      if (8 * k >= c.a0 && 8 * k + 8 <= c.a1) continue;
      unsigned h[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int col = 8 * k + i - c.sh;
        h[i] = (col < 0 || col >= e) ? bits : col >= c.n ? 0u : (unsigned)ldh<EV>(src + 8 * k + i);
      }
      ch[k] = make_uint4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
    }
    p.sh = c.sh;
    smem_row_hold(p);
    return p;
  }
  if constexpr (Row::PART) {
    // Not in place: the staged groups by elements (column c at element c), the streamed ones
    // element by element as they are read; no copy, so every slab's barrier completes empty.
    smem_row_elements<L, S, ST>(g, e, bits, ch);
    // Column col of the region at g.p + (g.r0 rs) + (g.c0 + col) cs, in bounds for col in
    // [-g.c0, g.cn - g.c0) of a row in bounds (in_bounds).
    const bool row_in = g.ok && (unsigned)g.r0 < (unsigned)g.rn;
    p.v.c0p = reinterpret_cast<const unsigned short*>(g.p) + (long long)g.r0 * g.rs + (long long)g.c0 * g.cs;
    p.v.cs = g.cs;
    p.v.a0 = p.v.a1 = 0;
    p.v.sh = 0;
    p.v.lo = row_in ? (g.c0 < 0 ? -g.c0 : 0) : 0;
    p.v.n = row_in ? g.cn - g.c0 : 0;
    p.sh = -1;
    if (tid == 0)
      for (int j = 0; j < ST; ++j) gemm::mbar_arrive(bar + 8 * j);
    smem_row_hold(p);
    return p;
  }
  if (contiguous) {
    smem_row_issue(c, ch, bar);
    smem_row_ends<EV>(c, ch);
    gemm::mbar_wait(bar, 0);
    __syncthreads();
    p.sh = smem_row_settle<L, false>(c, ch, e, bits);
  } else {
    smem_row_elements<L>(g, e, bits, ch);
    p.sh = -1;
  }
  if (tid == 0)
    for (int j = contiguous ? 1 : 0; j < ST; ++j) gemm::mbar_arrive(bar + 8 * j);
  return p;
}

// SLABS: after the row's first use, the row landed (every slab waited on: at once where that use
// read every group), as a row with no waits for the later uses.
// A partly staged row's view holds its streamed groups (HOLD), read here if they were not held
// already: the later passes' loads issued together, not one a group between their stores.
template <class S, class L, int ST, bool H>
__device__ __forceinline__ SmemRow<S, L, false, ST, H || (ST < L::N / L::VEC)> smem_row_landed(const SmemRow<S, L, true, ST, H>& x) {
#pragma unroll
  for (int j = 0; j < ST; ++j) x.v.ready(x.v.w, j);
  constexpr bool PART = ST < L::N / L::VEC;
  SmemRow<S, L, false, ST, H || PART> y;
  if constexpr (PART) {
    const SmemRowStream<S, L, ST, H>& a = x.v;
    SmemRowStream<S, L, ST, true>& b = y.v;
    b.c0p = a.c0p;
    b.cs = a.cs;
    b.a0 = a.a0;
    b.a1 = a.a1;
    b.sh = a.sh;
    b.lo = a.lo;
    b.n = a.n;
    b.e = a.e;
    b.bits = a.bits;
#pragma unroll
    for (int j = ST; j < L::N / L::VEC; ++j) {
      if constexpr (H) {
        b.held[j - ST] = a.held[j - ST];
      } else {
        b.held[j - ST] = a.fetch(j);
      }
    }
  }
  y.v.w = x.v.w;
  y.v.qj = -1;
  y.sh = x.sh;
  return y;
}

// ROW_SMEM=1: `where(arange(C) < e, g, fill)` (g a row tile of S, fill a value of S held in f32)
// staged at `buf` (smem_row_bytes<L>() bytes, 16-byte aligned). Every thread returns with its own
// groups in place (it reads only those; the block's later reductions order the rest). Regions
// that are not one row of contiguous elements take the element path (each thread writes its
// groups from ordinary loads).
//
// SLABS (with IN_PLACE, for a row loaded once a block): load_row_smem_slabs.
//
// ST < L::N / L::VEC (with SLABS): only the thread's first ST groups are staged, the rest read
// from global memory (SmemRowStream; HOLD: once, into registers).
template <class L, int EV = EVICT_NORMAL, bool IN_PLACE = false, bool SLABS = false, int ST = L::N / L::VEC,
          bool HOLD = false, class S>
__device__ __forceinline__ SmemRow<typename Bare<S>::T, L, SLABS, ST, HOLD> load_row_smem_fill(const Region<S>& g, int e, float fill,
                                                                                        unsigned char* buf) {
  typedef typename Bare<S>::T U;
  static_assert(sizeof(U) == 2, "load_row_smem_fill: a 2-byte type");
  static_assert(!SLABS || IN_PLACE, "load_row_smem_fill: slabs land in place");
  static_assert(SLABS || ST == L::N / L::VEC, "load_row_smem_fill: a partly staged row lands in slabs");
  static_assert(ST >= 1 && ST <= L::N / L::VEC, "load_row_smem_fill: 1 .. G staged groups");
  smem_row_static_checks<L>();
  const unsigned bits = pack_bits<U>(fill);
  if constexpr (SLABS) {
    return load_row_smem_slabs<L, EV, ST, HOLD, S, U>(g, e, bits, buf);
  } else {
  SmemRow<U, L> p;
  uint4* ch = reinterpret_cast<uint4*>(buf + 16);
  p.v.w = reinterpret_cast<unsigned*>(ch);
  p.v.qj = -1;
  p.sh = -1;
  const int tid = threadIdx.x;
  // The buffer may still be read by an earlier use (a loop's previous row).
  __syncthreads();
  if (!smem_row_contiguous(g)) {
    smem_row_elements<L>(g, e, bits, ch);
    return p;
  }
  const SmemRowCopy<S> c = smem_row_copy<L>(g);
  const gemm::u32 bar = gemm::smem_u32(buf);
  if (tid == 0) {
    gemm::mbar_init(bar, 1);
    // The initialized barrier visible to the copies (the async proxy).
    gemm::fence_proxy_async();
  }
  __syncthreads();
  smem_row_issue(c, ch, bar);
  smem_row_ends<EV>(c, ch);
  gemm::mbar_wait(bar, 0);
  __syncthreads();
  if (tid == 0) gemm::mbar_inval(bar);
  p.sh = smem_row_settle<L, IN_PLACE>(c, ch, e, bits);
  return p;
  }
}

// ROWS_AHEAD=1 (bench/NOTES.md r18): a persistent block's staged row in two buffers at `base`
// (each smem_row_bytes<L>(): its mbarrier, then its chunks), the n-th logical block's row in
// buffer n & 1, the k-th fill of a buffer completing its barrier's phase k (parity k & 1).
// Before the loop over the logical blocks: both barriers initialized.
template <class L> __device__ void smem_row_ahead_init(unsigned char* base) {
  smem_row_static_checks<L>();
  if (threadIdx.x == 0) {
    gemm::mbar_init(gemm::smem_u32(base), 1);
    gemm::mbar_init(gemm::smem_u32(base + smem_row_bytes<L>()), 1);
    // The initialized barriers visible to the copies (the async proxy).
    gemm::fence_proxy_async();
  }
}

// The (n + 1)-th logical block's row (region g, when `has`) issued into buffer (n + 1) & 1: at
// the top of the n-th logical block (n = -1: before the loop, the first one's), after a block
// barrier (every thread done with that buffer, last read by the (n - 1)-th: its passes and its
// store from the buffer, which reads it into registers; no bulk store reads it) and a proxy
// fence (those generic reads and writes ordered before the copies' async writes). A region
// that is not one contiguous row arrives on the barrier with no bytes, so every fill completes
// a phase.
template <class L, class S> __device__ __forceinline__ void smem_row_ahead_issue(const Region<S>& g, bool has, unsigned char* base, int n) {
  unsigned char* buf = base + ((n + 1) & 1) * smem_row_bytes<L>();
  __syncthreads();
  if (!has) return;
  const int tid = threadIdx.x;
  if (tid < 32) gemm::fence_proxy_async();
  if (smem_row_contiguous(g)) {
    smem_row_issue(smem_row_copy<L>(g), reinterpret_cast<uint4*>(buf + 16), gemm::smem_u32(buf));
  } else if (tid == 0) {
    gemm::mbar_arrive_expect_tx(gemm::smem_u32(buf), 0u);
  }
}

// The n-th logical block's staged row (as load_row_smem_fill; its copy issued by
// smem_row_ahead_issue at the (n - 1)-th): its head and tail loaded, its barrier's phase waited
// on, then realigned or masked in place.
template <class L, int EV = EVICT_NORMAL, bool IN_PLACE = false, class S>
__device__ SmemRow<typename Bare<S>::T, L> load_row_smem_ahead(const Region<S>& g, int e, float fill, unsigned char* base, int n) {
  typedef typename Bare<S>::T U;
  static_assert(sizeof(U) == 2, "load_row_smem_ahead: a 2-byte type");
  smem_row_static_checks<L>();
  unsigned char* buf = base + (n & 1) * smem_row_bytes<L>();
  SmemRow<U, L> p;
  uint4* ch = reinterpret_cast<uint4*>(buf + 16);
  p.v.w = reinterpret_cast<unsigned*>(ch);
  p.v.qj = -1;
  p.sh = -1;
  const unsigned bits = pack_bits<U>(fill);
  if (!smem_row_contiguous(g)) {
    // Its phase completed with no bytes; the element path fills the buffer.
    smem_row_elements<L>(g, e, bits, ch);
    return p;
  }
  const SmemRowCopy<S> c = smem_row_copy<L>(g);
  smem_row_ends<EV>(c, ch);
  gemm::mbar_wait(gemm::smem_u32(buf), (gemm::u32)((n >> 1) & 1));
  __syncthreads();
  p.sh = smem_row_settle<L, IN_PLACE>(c, ch, e, bits);
  return p;
}

// Each of the thread's groups of the staged row p that the whole-row reductions count (inside
// the tile, the thread its owner), as it lands: `f` takes the group's chunk, its four words of two
// elements each, and the group's index j (a constant once unrolled), in group order.
// ROLLED: a loop the compiler keeps rolled (a rare path, so that it holds no registers of its own
// across the unrolled one).
template <bool ROLLED = false, class L, class S, bool SL, int ST, bool H, class F>
__device__ __forceinline__ void for_each_owned_chunk(const SmemRow<S, L, SL, ST, H>& p, F&& f) {
  typedef SmemRow<S, L, SL, ST, H> Row;
  const int tid = threadIdx.x;
  if constexpr (!Row::PART) {
#pragma unroll(ROLLED ? 1 : L::N / L::VEC)
    for (int j = 0; j < L::N / L::VEC; ++j) {
      int r, c;
      L::coord(tid, j * L::VEC, r, c);
      p.v.ready(p.v.w, j);
      if (!(in_tile<L>(r, c) && Owner<L>::at(tid, j * L::VEC))) continue;
      f(lds128(p.chunk(j)), j);
    }
    return;
  }
  const auto owned = [&](int j) {
    int r, c;
    L::coord(tid, j * L::VEC, r, c);
    return in_tile<L>(r, c) && Owner<L>::at(tid, j * L::VEC);
  };
  // A staged group as its slab lands (waited on whether or not the thread owns it).
  const auto staged = [&](int j) {
    if (owned(j))
      f(p.v.staged(j), j);
    else
      p.v.ready(p.v.w, j);
  };
  constexpr int NS = Row::G - ST;
  if constexpr (ROLLED) {
#pragma unroll 1
    for (int j = 0; j < ST; ++j) staged(j);
    // The streamed groups unrolled: held ones sit in registers by index.
#pragma unroll
    for (int j = ST; j < Row::G; ++j)
      if (owned(j)) f(p.v.streamed(j), j);
  } else {
    // The streamed groups' loads issued first, then group 0 (Row::FIRST) as its slab lands,
    // then the streamed groups' uses, then the other staged groups.
    uint4 sq[NS > 0 ? NS : 1];
#pragma unroll
    for (int j = ST; j < Row::G; ++j) sq[j - ST] = p.v.streamed(j);
    staged(0);
#pragma unroll
    for (int j = ST; j < Row::G; ++j)
      if (owned(j)) f(sq[j - ST], j);
#pragma unroll
    for (int j = 1; j < ST; ++j) staged(j);
  }
}

// The whole-row max or min of f32(p), p a staged bf16 row: reduce_all_packed's combine, the
// thread's words read a chunk at a time.
template <class Op, class L, int BYTES, bool SL, int ST, bool H>
__device__ __forceinline__ float reduce_all_packed(const SmemRow<bf16, L, SL, ST, H>& p, Scratch<BYTES> s) {
  constexpr int WARPS = (L::THREADS + 31) / 32;
  static_assert(L::THREADS % 32 == 0 && L::VEC == 8, "reduce_all_packed: whole warps, 8-element groups");
  static_assert(reduce_all_bytes<float>(L::THREADS) <= BYTES, "scratch too small for reduce_all_packed");
  float* part = reinterpret_cast<float*>(s.p);
  using P = Packed2<Op, bf16>;
  unsigned w = P::ID;
  for_each_owned_chunk(p, [&](const uint4 q, int) { w = P::op(w, P::op(P::op(q.x, q.y), P::op(q.z, q.w))); });
  const float acc = Op::op(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
  return combine_lanes<Op, float, WARPS>(acc, part);
}

// The whole-row max of f32(p), p a staged bf16 row, and `sum` = the sum of exp2(f32(p) a - max a),
// in one pass (bench/NOTES.md r30): each thread keeps a running max over its groups as they land
// and its sum of exp2(x a - o) at an offset o of its own, then the block combines the pairs: the
// max of the maxima, then each sum rescaled to it (sum_t exp2(o_t - max a) s_t is the row's sum
// for any o_t). The exponentials run under the row's landing instead of after it. Masked columns
// hold -inf: they raise no max and add exp2(-inf) = 0 (a thread whose groups are all masked keeps
// (-inf, 0) and adds nothing).
//
// For a > 0 (a constant where the emitter calls it, so the test folds; bench/NOTES.md r35) the
// offset is fixed at the thread's first group: its max times a (-FLT_MAX where that group is
// wholly masked or not the thread's, which keeps exp2(-inf a - o) = 0). The running max stays
// packed (two bf16x2 max instructions a group) and no group rescales. If the thread's max ends
// more than SUMEXP_SPAN above the offset (a term may then have overflowed: a finite element after
// a masked first group, or a row whose values climb by that much), the thread sums its groups
// again at an offset of its max; a sum of terms of at most 2^SUMEXP_SPAN each cannot overflow
// (FLT_MAX is about 2^128). Otherwise (a <= 0) the offset follows the running max, the sum
// rescaled whenever the max grows.
constexpr float SUMEXP_SPAN = 96.0f;
template <class L, int BYTES, bool SL, int ST, bool H>
__device__ __forceinline__ float row_max_sumexp2(const SmemRow<bf16, L, SL, ST, H>& p, float a, Scratch<BYTES> s, float& sum) {
  constexpr int WARPS = L::THREADS / 32;
  static_assert(L::THREADS % 32 == 0 && L::VEC == 8, "row_max_sumexp2: whole warps, 8-element groups");
  static_assert(reduce_all_bytes<float>(L::THREADS) <= BYTES, "scratch too small for row_max_sumexp2");
  float* part = reinterpret_cast<float*>(s.p);
  using P = Packed2<Max, bf16>;
  const auto max_of = [](unsigned w) { return fmaxf(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u)); };
  // The group's eight terms exp2(x a - o), added to st.
  const auto terms = [&](const uint4 q, float o, float& st) {
    const unsigned ws[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int k = 0; k < 4; ++k)
      st += exp2_approx(__uint_as_float(ws[k] << 16) * a - o) + exp2_approx(__uint_as_float(ws[k] & 0xffff0000u) * a - o);
  };
  float mt, st = 0.0f, o;
  if (a > 0.0f) {
    constexpr float LOWEST = -3.40282347e38f;  // -FLT_MAX
    unsigned w = P::ID;
    o = LOWEST;
    for_each_owned_chunk(p, [&](const uint4 q, int j) {
      w = P::op(w, P::op(P::op(q.x, q.y), P::op(q.z, q.w)));
      if (j == SmemRow<bf16, L, SL, ST, H>::FIRST) {
        const float g = max_of(w);
        o = g == -inf_f32() ? LOWEST : g * a;
      }
      terms(q, o, st);
    });
    mt = max_of(w);
    if (mt != -inf_f32() && mt * a > o + SUMEXP_SPAN) {
      o = mt * a;
      st = 0.0f;
      for_each_owned_chunk<true>(p, [&](const uint4 q, int) { terms(q, o, st); });
    }
  } else {
    mt = -inf_f32();
    for_each_owned_chunk(p, [&](const uint4 q, int) {
      const float g = fmaxf(mt, max_of(P::op(P::op(q.x, q.y), P::op(q.z, q.w))));
      st *= g == mt ? 1.0f : exp2_approx((mt - g) * a);
      mt = g;
      // While every element so far is -inf, so is mt: the offset 0 keeps exp2(-inf) = 0 where
      // -inf - -inf would give NaN.
      terms(q, mt == -inf_f32() ? 0.0f : mt * a, st);
    });
    o = mt * a;
  }
  const float m = combine_lanes<Max, float, WARPS>(mt, part);
  __syncthreads();  // every warp read the maxima before the sums take their slots
  sum = combine_lanes<Sum, float, WARPS>(mt == -inf_f32() ? 0.0f : st * exp2_approx(o - m * a), part);
  return m;
}

// Y's row stored from the staged buffer of `x` (row0: the 16-byte boundary SH elements before
// the row's start): the destination's 16-byte vector at row0 + 8k, column 8k - SH, holds the
// last SH elements of chunk k - 1 and the first 8 - SH of chunk k; the vectors at the row's ends
// element by element.
template <int EV, int SH, class L, class S>
__device__ __forceinline__ void store_row_smem_sh(S* row0, int lim, const uint4* ch) {
  constexpr int G = L::N / L::VEC;
  const unsigned long long pol = l2_policy<EV>();
  const int tid = threadIdx.x;
  const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int j = 0; j <= G; ++j) {
    int k;
    if (j < G) {
      int r, c;
      L::coord(tid, j * L::VEC, r, c);
      k = c >> 3;
    } else {
      // The chunk past the layout's last: only its first SH elements are in the tile.
      if (SH == 0 || tid != 0) break;
      k = G * L::THREADS;
    }
    const int col = 8 * k - SH;
    if (col >= lim) continue;
    const uint4 own = ch[k];
    const uint4 prev = (SH != 0 && k > 0) ? ch[k - 1] : zero;
    const uint4 v = make_uint4(packed_word<8 - SH>(prev, own, 0), packed_word<8 - SH>(prev, own, 1),
                               packed_word<8 - SH>(prev, own, 2), packed_word<8 - SH>(prev, own, 3));
    store_row_vec<EV>(row0 + 8 * k, col, lim, v, pol);
  }
}

// ROW_SMEM=1, the store that is the staged row x's last use, a group at a time: group j of the
// value (v, VEC elements of the thread's group j, computed from x's own elements) written over
// x's chunk as elements of V.
template <class V, class S, class L, bool SL, int ST, bool H, class T>
__device__ __forceinline__ void smem_row_put(const SmemRow<S, L, SL, ST, H>& x, int j, const T (&v)[L::VEC]) {
  static_assert(L::VEC == 8, "smem_row_put: 8-element groups");
  static_assert(!SmemRow<S, L, SL, ST, H>::PART, "smem_row_put: a partly staged row stores through its RowOut");
  unsigned w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = (unsigned)Reg<V>::store(v[2 * i]).bits | ((unsigned)Reg<V>::store(v[2 * i + 1]).bits << 16);
  *x.chunk(j) = make_uint4(w[0], w[1], w[2], w[3]);
}

// ROW_SMEM=2, a store through a row left in place: where the destination's row starts at the
// row's own shift (same width, both bases 16-byte aligned: the usual case), each thread's chunk k
// is the destination's aligned 16-byte vector k, so every group is stored from the registers it
// was computed in (`direct`), with no barrier and no trip through the buffer. Otherwise the
// groups go through the buffer and store_row_smem, which realigns it first.
template <class S> struct RowOut {
  S* row0;  // the destination's 16-byte boundary at or before its row's start
  int lim;  // the destination's columns in the tile
  bool direct;
  Region<S> g;  // the destination (a partly staged row's element stores)
};
template <class S, class U, class L, bool SL, int ST, bool H>
__device__ __forceinline__ RowOut<S> row_out(const Region<S>& g, const SmemRow<U, L, SL, ST, H>& x) {
  // row0 from the tensor's pointer on every path, so the compiler keeps it a global address.
  S* start = elem_ptr(g, 0, 0);
  const int n = g.cn - g.c0;
  RowOut<S> o;
  o.row0 = start - x.sh;
  o.lim = n < L::C ? n : L::C;
  o.g = g;
  o.direct = x.sh >= 0 && g.cs == 1 && g.c0 >= 0 && g.ok && (unsigned)g.r0 < (unsigned)g.rn &&
             (int)(((unsigned long long)start >> 1) & 7) == x.sh;
  return o;
}

// The direct store of group j (o.direct): the thread's chunk k holds columns 8k - sh .. 8k - sh
// + 7, the destination's vector at row0 + 8k; vectors partly outside [0, lim) element by element.
template <class V, int EV = EVICT_NORMAL, class S, class U, class L, bool SL, int ST, bool H, class T>
__device__ __forceinline__ void smem_row_store_direct(const SmemRow<U, L, SL, ST, H>& x, int j, const T (&v)[L::VEC], const RowOut<S>& o) {
  static_assert(L::VEC == 8, "smem_row_store_direct: 8-element groups");
  int r, c;
  L::coord((int)threadIdx.x, j * L::VEC, r, c);
  const int col = c - x.sh;
  if (!in_tile<L>(r, c) || col >= o.lim) return;
  unsigned w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = cvt_pair<V>(v[2 * i], v[2 * i + 1]);
  if ((EV & HINT_MASK) == EVICT_NORMAL && col >= 0 && col + 8 <= o.lim) {
    // A global store said so: the pointer's origin (a RowOut) leaves the compiler a generic one.
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(o.row0 + c), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
                 : "memory");
    return;
  }
  store_row_vec<EV>(o.row0 + c, col, o.lim, make_uint4(w[0], w[1], w[2], w[3]), l2_policy<EV>());
}

// The same for a row that may be partly staged: such a row has no whole buffer to store from, so
// each group's elements go straight to the destination (the store when Y's row does not start at
// X's shift, a rare path); a wholly staged row's through its buffer as above.
template <class V, int EV = EVICT_NORMAL, class S, class U, class L, bool SL, int ST, bool H, class T>
__device__ __forceinline__ void smem_row_put(const SmemRow<U, L, SL, ST, H>& x, int j, const T (&v)[L::VEC], const RowOut<S>& o) {
  if constexpr (!SmemRow<U, L, SL, ST, H>::PART) {
    smem_row_put<V>(x, j, v);
  } else {
    int r, c;
    L::coord((int)threadIdx.x, j * L::VEC, r, c);
    const int col0 = c - (x.sh > 0 ? x.sh : 0);
#pragma unroll
    for (int e = 0; e < L::VEC; ++e) {
      const int col = col0 + e;
      if (in_tile<L>(r, c + e) && col >= 0 && in_bounds(o.g, 0, col))
        sth<EV>(reinterpret_cast<unsigned short*>(elem_ptr(o.g, 0, col)), (unsigned short)Reg<V>::store(v[e]).bits);
    }
  }
}

// Then the row stored into g from x's buffer (a barrier first: the vectors take neighbouring
// threads' chunks). Regions that are not one row of contiguous elements: each thread stores its
// own groups' elements.
template <int EV = EVICT_NORMAL, class S, class U, class L, bool SL, int ST, bool H>
__device__ __forceinline__ void store_row_smem(const Region<S>& g, const SmemRow<U, L, SL, ST, H>& x) {
  static_assert(sizeof(S) == 2 && L::VEC == 8 && L::R == 1 && IsBlocked<L>::value && L::THREADS % 32 == 0,
                "store_row_smem: a blocked row tile of a 2-byte type, 8-element groups, whole warps");
  constexpr int G = L::N / L::VEC;
  const uint4* ch = reinterpret_cast<const uint4*>(x.v.w);
  // SLABS: every group landed (its value's passes have waited for each already).
#pragma unroll
  for (int j = 0; j < ST; ++j) x.v.ready(x.v.w, j);
  // A partly staged row's groups were stored by its puts.
  if constexpr (SmemRow<U, L, SL, ST, H>::PART) return;
  if (x.sh > 0) {
    // Left in place (ROW_SMEM=2) for a destination at another shift: realigned first.
    __syncthreads();
    smem_row_move<L>(reinterpret_cast<uint4*>(x.v.w), x.sh);
  }
  if (!(g.cs == 1 && g.c0 >= 0 && g.ok && (unsigned)g.r0 < (unsigned)g.rn)) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int j = 0; j < G; ++j) {
      int r, c;
      L::coord(tid, j * L::VEC, r, c);
      const uint4 q = ch[c >> 3];
      const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int e = 0; e < L::VEC; ++e)
        if (in_tile<L>(r, c + e) && in_bounds(g, r, c + e))
          sth<EV>(reinterpret_cast<unsigned short*>(elem_ptr(g, r, c + e)),
                  (unsigned short)((e & 1) ? (w[e >> 1] >> 16) : (w[e >> 1] & 0xffffu)));
    }
    return;
  }
  __syncthreads();
  S* start = elem_ptr(g, 0, 0);
  const int sh = (int)(((unsigned long long)start >> 1) & 7);
  S* row0 = start - sh;
  const int n = g.cn - g.c0;
  const int lim = n < L::C ? n : L::C;
  switch (sh) {
    case 0: store_row_smem_sh<EV, 0, L>(row0, lim, ch); break;
    case 1: store_row_smem_sh<EV, 1, L>(row0, lim, ch); break;
    case 2: store_row_smem_sh<EV, 2, L>(row0, lim, ch); break;
    case 3: store_row_smem_sh<EV, 3, L>(row0, lim, ch); break;
    case 4: store_row_smem_sh<EV, 4, L>(row0, lim, ch); break;
    case 5: store_row_smem_sh<EV, 5, L>(row0, lim, ch); break;
    case 6: store_row_smem_sh<EV, 6, L>(row0, lim, ch); break;
    default: store_row_smem_sh<EV, 7, L>(row0, lim, ch); break;
  }
}

}  // namespace ph
