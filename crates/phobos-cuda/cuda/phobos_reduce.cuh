// phobos_reduce.cuh: reductions, transpose and element reads of tiles (included when used).
// Written over the layout contract of phobos_prelude.cuh; every function stages the tile in the
// scratch area, so the generated code puts a barrier before the next scratch user.
#pragma once
#include "phobos_prelude.cuh"

namespace ph {

// Reduction operators over register values. Sums of signed integers wrap (unsigned arithmetic);
// float max/min ignore NaN like fmaxf/fminf.
struct Sum {
  template <class T> __device__ static T id() { return T(0); }
  __device__ static float op(float a, float b) { return a + b; }
  __device__ static double op(double a, double b) { return a + b; }
  __device__ static int op(int a, int b) { return add(a, b); }
  __device__ static long long op(long long a, long long b) { return add(a, b); }
  __device__ static unsigned op(unsigned a, unsigned b) { return a + b; }
  __device__ static signed char op(signed char a, signed char b) { return (signed char)(a + b); }
  __device__ static unsigned char op(unsigned char a, unsigned char b) { return (unsigned char)(a + b); }
};
template <class T> struct Limits;
template <> struct Limits<float> { __device__ static float lo() { return -inf_f32(); } __device__ static float hi() { return inf_f32(); } };
template <> struct Limits<double> { __device__ static double lo() { return -inf_f64(); } __device__ static double hi() { return inf_f64(); } };
template <> struct Limits<int> { __device__ static int lo() { return (-2147483647 - 1); } __device__ static int hi() { return 2147483647; } };
template <> struct Limits<unsigned> { __device__ static unsigned lo() { return 0u; } __device__ static unsigned hi() { return 0xffffffffu; } };
template <> struct Limits<long long> { __device__ static long long lo() { return (-9223372036854775807ll - 1); } __device__ static long long hi() { return 9223372036854775807ll; } };
template <> struct Limits<signed char> { __device__ static signed char lo() { return -128; } __device__ static signed char hi() { return 127; } };
template <> struct Limits<unsigned char> { __device__ static unsigned char lo() { return 0; } __device__ static unsigned char hi() { return 255; } };
struct Max {
  template <class T> __device__ static T id() { return Limits<T>::lo(); }
  template <class T> __device__ static T op(T a, T b) { return max(a, b); }
};
struct Min {
  template <class T> __device__ static T id() { return Limits<T>::hi(); }
  template <class T> __device__ static T op(T a, T b) { return min(a, b); }
};

template <class T> __device__ __forceinline__ T shfl_xor(T x, int m) { return __shfl_xor_sync(0xffffffffu, x, m); }
__device__ __forceinline__ signed char shfl_xor(signed char x, int m) { return (signed char)__shfl_xor_sync(0xffffffffu, (int)x, m); }
__device__ __forceinline__ unsigned char shfl_xor(unsigned char x, int m) { return (unsigned char)__shfl_xor_sync(0xffffffffu, (int)x, m); }

__host__ __device__ constexpr int pow2_floor(int x) { return x >= 2 ? 2 * pow2_floor(x / 2) : 1; }

// Scratch bytes of reduce<..>(x): the staged tile plus one partial per output element.
template <class L, class T, int AXIS> __host__ __device__ constexpr int reduce_bytes() {
  return smem_tile_bytes<L, T>() + ((AXIS == 1 ? L::R : L::C) * (int)sizeof(T) + 15) / 16 * 16;
}

// ---- row reductions in registers (Blocked layouts) -------------------------------------------
//
// In Blocked<R, C, THREADS, VEC> register group k of thread t (registers k*VEC .. k*VEC+VEC-1)
// is group g = k * THREADS + t of the row-major tile, and row g / G with G = C / VEC groups a
// row. When G is a power of two and either divides 32 or is a multiple of 32 (so THREADS, a
// multiple of 32, keeps the rows of a warp aligned), the lanes sharing a row are LANES =
// min(G, 32) consecutive lanes of one warp: a row reduces as register partials, a butterfly of
// shuffles over LANES lanes, and G / LANES partials per row through a small shared buffer. The
// tile itself never goes through shared memory.
template <class L> struct RowsInRegisters {
  static constexpr int G = L::C / L::VEC;
  static constexpr bool POW2 = G > 0 && (G & (G - 1)) == 0;
  static constexpr bool value =
      L::BLOCKED && L::THREADS % 32 == 0 && POW2 && (32 % G == 0 || G % 32 == 0);
  static constexpr int LANES = G < 32 ? G : 32;
  // Consecutive register groups of a thread that lie in one row (every thread alike): a row
  // of G groups spans G / THREADS groups of each thread when THREADS divides G; they are
  // combined in the thread first.
  static constexpr int RUN = G % L::THREADS == 0 ? G / L::THREADS : 1;
  // Partials a row leaves in the shared buffer (one per warp-part of the row), and the
  // buffer's elements.
  static constexpr int SLOTS_PER_ROW = G / LANES / RUN;
  static constexpr int SLOTS = L::R * SLOTS_PER_ROW;
};
template <class L, class = void> struct IsBlocked { static constexpr bool value = false; };
template <class L> struct IsBlocked<L, typename VoidOf<decltype(L::BLOCKED)>::type> {
  static constexpr bool value = L::BLOCKED;
};
template <class L, bool = IsBlocked<L>::value> struct RowFast { static constexpr bool value = false; };
template <class L> struct RowFast<L, true> { static constexpr bool value = RowsInRegisters<L>::value; };

template <class A, class B> struct SameLayout { static constexpr bool value = false; };
template <class A> struct SameLayout<A, A> { static constexpr bool value = true; };

template <class L, class T> __host__ __device__ constexpr int row_slots_bytes() {
  return (RowsInRegisters<L>::SLOTS * (int)sizeof(T) + 15) / 16 * 16;
}

// Leaves row r's SLOTS_PER_ROW partials at part[r * SLOTS_PER_ROW ..]; the caller syncs.
template <class Op, class T, class L> __device__ __forceinline__ void row_partials(const Tile<T, L>& x, T* part) {
  typedef RowsInRegisters<L> RI;
  constexpr int KS = L::N / L::VEC;  // register groups per thread
  const int tid = threadIdx.x;
#pragma unroll
  for (int k0 = 0; k0 < KS; k0 += RI::RUN) {
    T acc = Op::template id<T>();
#pragma unroll
    for (int k = k0; k < k0 + RI::RUN && k < KS; ++k) {
#pragma unroll
      for (int v = 0; v < L::VEC; ++v) {
        int r, c;
        L::coord(tid, k * L::VEC + v, r, c);
        if (in_tile<L>(r, c)) acc = Op::op(acc, x.v[k * L::VEC + v]);
      }
    }
    // Every lane of the warp takes part: padding groups (past the last row) hold the identity.
#pragma unroll
    for (int m = RI::LANES / 2; m > 0; m /= 2) acc = Op::op(acc, shfl_xor(acc, m));
    const int g = k0 * L::THREADS + tid;
    if (g % RI::LANES == 0 && g / RI::G < L::R)
      part[g / RI::G * RI::SLOTS_PER_ROW + g % RI::G / RI::LANES] = acc;
  }
}

template <class Op, class T> __device__ __forceinline__ T row_total(const T* part, int slots, int r) {
  T acc = Op::template id<T>();
  for (int j = 0; j < slots; ++j) acc = Op::op(acc, part[r * slots + j]);
  return acc;
}

// The row reduction of x broadcast back over x's own shape in layout Lout ([R, C]): each
// register reads its row's partials, no [R, 1] tile in between.
template <class Op, class Lout, class T, class Lin, int BYTES>
__device__ Tile<T, Lout> reduce_rows_bcast(const Tile<T, Lin>& x, Scratch<BYTES> s) {
  static_assert(RowFast<Lin>::value, "reduce_rows_bcast needs a Blocked layout with rows in registers");
  static_assert(row_slots_bytes<Lin, T>() <= BYTES, "scratch too small for reduce_rows_bcast");
  static_assert(Lout::R == Lin::R, "reduce_rows_bcast keeps the rows");
  constexpr int SPR = RowsInRegisters<Lin>::SLOTS_PER_ROW;
  T* part = reinterpret_cast<T*>(s.p);
  row_partials<Op>(x, part);
  __syncthreads();
  Tile<T, Lout> y;
  // One total per run of register groups in one row: a VEC-group always lies in one row, and
  // in x's own layout RUN consecutive groups do too.
  constexpr int RUN = SameLayout<Lout, Lin>::value ? RowsInRegisters<Lin>::RUN : 1;
  constexpr int STEP = Lout::VEC * RUN;
#pragma unroll
  for (int i0 = 0; i0 < Lout::N; i0 += STEP) {
    int r, c;
    Lout::coord(threadIdx.x, i0, r, c);
    const T t = in_tile<Lout>(r, c) ? row_total<Op>(part, SPR, r) : T(0);
#pragma unroll
    for (int i = i0; i < i0 + STEP && i < Lout::N; ++i) y.v[i] = t;
  }
  return y;
}

template <class Op, int AXIS, class Lout, class T, class Lin, int BYTES>
__device__ Tile<T, Lout> reduce_staged(const Tile<T, Lin>& x, Scratch<BYTES> s);

// Reduces along AXIS (1: each row to [R, 1]; 0: each column to [1, C]) into layout Lout.
// Rows of a Blocked layout that keeps them in registers reduce there (RowsInRegisters); other
// cases stage the tile in shared memory, and a group of G lanes (a power of two, at most 32)
// reduces each output element: strided partial sums, then a butterfly of shuffles.
template <class Op, int AXIS, class Lout, class T, class Lin, int BYTES>
__device__ Tile<T, Lout> reduce(const Tile<T, Lin>& x, Scratch<BYTES> s) {
  static_assert(AXIS == 1 ? (Lout::R == Lin::R && Lout::C == 1) : (Lout::R == 1 && Lout::C == Lin::C), "reduce shape");
  if constexpr (AXIS == 1 && RowFast<Lin>::value) {
    return reduce_rows_bcast<Op, Lout>(x, s);
  } else {
    return reduce_staged<Op, AXIS, Lout>(x, s);
  }
}

// The staged reduction of reduce<..> (the whole tile through shared memory).
template <class Op, int AXIS, class Lout, class T, class Lin, int BYTES>
__device__ Tile<T, Lout> reduce_staged(const Tile<T, Lin>& x, Scratch<BYTES> s) {
  static_assert(reduce_bytes<Lin, T, AXIS>() <= BYTES, "scratch too small for reduce");
  constexpr int LD = smem_ld(Lin::C);
  constexpr int NO = AXIS == 1 ? Lin::R : Lin::C;  // outputs
  constexpr int NI = AXIS == 1 ? Lin::C : Lin::R;  // inputs per output
  constexpr int THREADS = Lin::THREADS;
  constexpr int G0 = pow2_floor(THREADS / NO > 0 ? THREADS / NO : 1);
  constexpr int G = (THREADS % 32 != 0) ? 1 : (G0 > 32 ? 32 : G0);
  T* buf = reinterpret_cast<T*>(s.p);
  T* part = reinterpret_cast<T*>(s.p + smem_tile_bytes<Lin, T>());
  write_tile(x, buf, LD);
  __syncthreads();
  const int tid = threadIdx.x;
  for (int base = 0; base < NO * G; base += THREADS) {  // uniform trip count: shuffles stay converged
    const int t = base + tid, o = t / G, j = t % G;
    T acc = Op::template id<T>();
    if (o < NO) {
      for (int k = j; k < NI; k += G) acc = Op::op(acc, AXIS == 1 ? buf[o * LD + k] : buf[k * LD + o]);
    }
#pragma unroll
    for (int m = G / 2; m > 0; m /= 2) acc = Op::op(acc, shfl_xor(acc, m));
    if (o < NO && j == 0) part[o] = acc;
  }
  __syncthreads();
  Tile<T, Lout> y;
#pragma unroll
  for (int i = 0; i < Lout::N; ++i) {
    int r, c;
    Lout::coord(tid, i, r, c);
    y.v[i] = in_tile<Lout>(r, c) ? part[AXIS == 1 ? r : c] : T(0);
  }
  return y;
}

// One partial per warp (per thread when the block is not whole warps).
template <class T> __host__ __device__ constexpr int reduce_all_bytes(int threads) {
  return ((threads % 32 == 0 ? threads / 32 : threads) * (int)sizeof(T) + 15) / 16 * 16;
}

// One thread's partial of a whole-tile reduction: its own elements combined.
template <class Op, class T, class L> __device__ T reduce_own(const Tile<T, L>& x, int tid) {
  T acc = Op::template id<T>();
#pragma unroll
  for (int i = 0; i < L::N; ++i) {
    int r, c;
    L::coord(tid, i, r, c);
    if (in_tile<L>(r, c) && Owner<L>::at(tid, i)) acc = Op::op(acc, x.v[i]);
  }
  return acc;
}

// Reduces the whole tile of a one-warp block to one value, the same in every lane: the
// partials combined by shuffles alone, with no shared memory and no barrier. The lanes combine
// in the same butterfly order as reduce_all's first step, so both give the same value.
template <class Op, class T, class L> __device__ T reduce_warp(const Tile<T, L>& x) {
  static_assert(L::THREADS == 32, "reduce_warp: the block is one warp");
  T acc = reduce_own<Op>(x, (int)threadIdx.x);
#pragma unroll
  for (int m = 16; m > 0; m /= 2) acc = Op::op(acc, shfl_xor(acc, m));
  return acc;
}

// Reduces the whole tile to one value, the same in every thread (every thread combines the
// per-warp partials in the same order).
template <class Op, class T, class L, int BYTES> __device__ T reduce_all(const Tile<T, L>& x, Scratch<BYTES> s) {
  constexpr int WARPS = (L::THREADS + 31) / 32;
  static_assert(reduce_all_bytes<T>(L::THREADS) <= BYTES, "scratch too small for reduce_all");
  T* part = reinterpret_cast<T*>(s.p);
  const int tid = threadIdx.x;
  T acc = reduce_own<Op>(x, tid);
  if (L::THREADS % 32 == 0) {
#pragma unroll
    for (int m = 16; m > 0; m /= 2) acc = Op::op(acc, shfl_xor(acc, m));
    if (tid % 32 == 0) part[tid / 32] = acc;
    __syncthreads();
    acc = Op::template id<T>();
    for (int w = 0; w < WARPS; ++w) acc = Op::op(acc, part[w]);
    return acc;
  } else {
    // Block sizes that are not whole warps: combine per-thread partials through the scratch.
    part[tid] = acc;
    __syncthreads();
    acc = Op::template id<T>();
    for (int w = 0; w < L::THREADS; ++w) acc = Op::op(acc, part[w]);
    return acc;
  }
}

template <class L, class T> __host__ __device__ constexpr int transpose_bytes() {
  return (L::R * (L::C + 1) * (int)sizeof(T) + 15) / 16 * 16;
}

// Transpose of an [R, C] tile into layout Lout of shape [C, R].
template <class Lout, class T, class Lin, int BYTES> __device__ Tile<T, Lout> transpose(const Tile<T, Lin>& x, Scratch<BYTES> s) {
  static_assert(Lout::R == Lin::C && Lout::C == Lin::R, "transpose shape");
  static_assert(transpose_bytes<Lin, T>() <= BYTES, "scratch too small for transpose");
  constexpr int LD = Lin::C + 1;  // odd stride: the column reads hit distinct banks
  T* buf = reinterpret_cast<T*>(s.p);
  write_tile(x, buf, LD);
  __syncthreads();
  return transposed_from<Lout>(buf, LD);
}

// One element x[r, c] (per thread: the indices may differ between threads); out of range reads 0.
template <class T, class L, int BYTES> __device__ T get(const Tile<T, L>& x, int r, int c, Scratch<BYTES> s) {
  static_assert(smem_tile_bytes<L, T>() <= BYTES, "scratch too small for get");
  constexpr int LD = smem_ld(L::C);
  T* buf = reinterpret_cast<T*>(s.p);
  write_tile(x, buf, LD);
  __syncthreads();
  return ((unsigned)r < (unsigned)L::R && (unsigned)c < (unsigned)L::C) ? buf[r * LD + c] : T(0);
}

}  // namespace ph
