// bench/NOTES.md r36: an L2 prefetch of row r + PF_D of a row-major tensor [M, N], inserted by
// hand into an emitted kernel (`pf_row(X, r, N, M);`): the row's 16-byte interior by bulk
// prefetches (`cp.async.bulk.prefetch.L2`) of up to 16 KB, one a lane of warp 0. PF_D = 0: none.
#pragma once
#ifndef PF_D
#define PF_D 0
#endif
template <class T> __device__ __forceinline__ void pf_row(const T* X, int r, int N, int M) {
  if (PF_D == 0) return;
  const int rr = r + PF_D;
  if (rr >= M || threadIdx.x >= 32) return;
  const unsigned long long b = (unsigned long long)(X + (long long)rr * N);
  const unsigned long long e = b + (unsigned long long)N * sizeof(T);
  const unsigned long long a0 = (b + 15) & ~15ull, a1 = e & ~15ull;
  const unsigned long long p = a0 + (unsigned long long)threadIdx.x * 16384;
  if (p >= a1) return;
  const unsigned n = (unsigned)(a1 - p < 16384ull ? a1 - p : 16384ull);
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(n) : "memory");
}

// bench/NOTES.md r36b: the one pass replaced by waits alone (every slab of the staged row landed,
// then a barrier), its max 0 and its sum 1: the kernel's row without its arithmetic.
template <class S, class L, bool SL, int BYTES>
__device__ __forceinline__ float pf_wait_all(const ph::SmemRow<S, L, SL>& x, float, ph::Scratch<BYTES>, float& sum) {
#pragma unroll
  for (int j = 0; j < L::N / L::VEC; ++j) x.v.ready(x.v.w, j);
  __syncthreads();
  sum = 1.0f;
  return 0.0f;
}

// bench/NOTES.md r36c: the direct store (ROW_SMEM=2, the destination at the row's own shift)
// through the staged buffer and bulk stores. Each group's values go into the group's own chunk
// (the destination's aligned 16-byte vector k is chunk k), the chunks partly outside the row by
// ordinary stores from the registers; then the interior leaves by `cp.async.bulk` stores of up to
// 16 KB, one a lane of warp 0, which waits until they have read the buffer.
template <class V, class S, class U, class L, bool SL, class T>
__device__ __forceinline__ void pf_put_direct(const ph::SmemRow<U, L, SL>& x, int j, const T (&v)[L::VEC], const ph::RowOut<S>& o) {
  int r, c;
  L::coord((int)threadIdx.x, j * L::VEC, r, c);
  const int col = c - x.sh;
  if (!ph::in_tile<L>(r, c) || col >= o.lim) return;
  unsigned w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) w[i] = ph::cvt_pair<V>(v[2 * i], v[2 * i + 1]);
  if (col >= 0 && col + 8 <= o.lim) {
    *x.chunk(j) = make_uint4(w[0], w[1], w[2], w[3]);
    return;
  }
  ph::store_row_vec<ph::EVICT_NORMAL>(o.row0 + c, col, o.lim, make_uint4(w[0], w[1], w[2], w[3]), ph::l2_policy<ph::EVICT_NORMAL>());
}
template <class S, class U, class L, bool SL>
__device__ __forceinline__ void pf_bulk_store(const ph::SmemRow<U, L, SL>& x, const ph::RowOut<S>& o) {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x >= 32) return;
  const int k0 = x.sh > 0 ? 1 : 0;
  const int k1 = (o.lim + x.sh) / 8;
  const long long off = (long long)threadIdx.x * 16384;
  const long long total = 16ll * (k1 - k0);
  if (off < total) {
    const unsigned n = (unsigned)(total - off < 16384 ? total - off : 16384);
    const unsigned long long g = (unsigned long long)(o.row0 + 8 * k0) + off;
    const unsigned s = (unsigned)__cvta_generic_to_shared(x.v.w) + 16u * k0 + (unsigned)off;
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(g), "r"(s), "r"(n) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}

// bench/NOTES.md r44: after pf_put_direct (every whole chunk of the value written over the staged
// row's buffer, in place), the whole chunks stored from the buffer by warps on 128-byte lines:
// with q the row's first aligned vector's index in its line, thread t stores chunks
// t - q + THREADS * i, so that a warp's 32 `STG.E.128` cover four whole lines (the direct store's
// warps start q vectors into a line: five lines, two partly). The row's two partial chunks were
// stored by pf_put_direct.
template <class S, class U, class L, bool SL>
__device__ __forceinline__ void pf_line_store(const ph::SmemRow<U, L, SL>& x, const ph::RowOut<S>& o) {
  __syncthreads();
  const int k0 = x.sh > 0 ? 1 : 0;
  const int k1 = (o.lim + x.sh) / 8;
  const int q = (int)(((unsigned long long)o.row0 >> 4) & 7);
  const uint4* ch = reinterpret_cast<const uint4*>(x.v.w);
  for (int k = (int)threadIdx.x - q; k < k1; k += L::THREADS) {
    if (k < k0) continue;
    const uint4 v = ch[k];
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(o.row0 + 8 * k), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  }
}
