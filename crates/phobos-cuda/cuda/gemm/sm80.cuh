// Tensor-core GEMM main loop in the sm_80 style: mma.sync (m16n8k16 for f16/bf16, m16n8k8 for
// tf32, m16n8k32 for 8-bit types), fragments through ldmatrix (.trans for M/N-major 16-bit
// operands), a STAGES-deep cp.async pipeline into XOR-swizzled shared memory with zero-fill at
// ragged M/N/K edges. Runs on sm_80 and later, sm_90 included.
#pragma once
#include "gemm/ptx.cuh"

namespace ph {
namespace gemm {
namespace sm80 {

/// Accumulator layout: the block tile BM x BN is split into WARPS_M x WARPS_N warp tiles (warp w
/// at (w % WARPS_M, w / WARPS_M)); each warp tile is (WM/16) x (WN/8) m16n8 C fragments, register
/// i = (mi * NI + ni) * 4 + e holding row g + 8*(e/2), column 2*t + (e%2) of fragment (mi, ni),
/// where g = lane / 4 and t = lane % 4. Pairs (e, e+1) are adjacent columns of one row: VEC = 2.
template <int BM, int BN, int WARPS_M, int WARPS_N>
struct AccLayout {
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int WM = BM / WARPS_M;
  static constexpr int WN = BN / WARPS_N;
  static constexpr int MI = WM / 16;
  static constexpr int NI = WN / 8;
  static constexpr int R = BM;
  static constexpr int C = BN;
  static constexpr int N = MI * NI * 4;
  static constexpr int VEC = 2;
  static constexpr bool SEPARABLE = true;  // see ph::Separable
  static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16 x 16");
  // Branch-free so that, with i a compile-time constant in an unrolled loop, the tid-dependent
  // part is computed once and each register costs one add per coordinate.
  PH_GEMM_HD static void coord(int tid, int i, int& r, int& c) {
    const bool ok = tid >= 0 && tid < THREADS && i >= 0 && i < N;
    const int warp = tid / 32, lane = tid % 32;
    const int wm = warp % WARPS_M, wn = warp / WARPS_M;
    const int e = i % 4, f = i / 4;
    const int ni = f % NI, mi = f / NI;
    const int rr = wm * WM + mi * 16 + lane / 4 + 8 * (e / 2);
    const int cc = wn * WN + ni * 8 + (lane % 4) * 2 + (e % 2);
    r = ok ? rr : OOB;
    c = ok ? cc : OOB;
  }
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

/// One operand's staged tile: ROWS (M or N) x BK elements. K-major operands (A row-major,
/// B as [N, K]) are stored as ROWS lines of BK elements, M/N-major ones as BK lines of ROWS
/// elements, exactly as they lie in global memory, so every copy is a straight cp.async of VB
/// bytes. 16-byte chunks are XOR-swizzled by line so that the 8 line addresses of every ldmatrix
/// 8x8 matrix fall in 8 different 16-byte bank groups.
///
/// VB of 1 or 2 (an operand whose leading dimension or base is aligned to under 4 bytes: an odd
/// K or N of a 16-bit type) has no cp.async: such an operand is register-staged (NARROW). Each
/// piece is 4 bytes of the staged line, read element by element with masked loads (`fetch`,
/// zero outside the operand) into one register and stored to shared memory later (`put`), so
/// the loads of tile t + STAGES - 1 are in flight while tile t's MMAs run.
///
/// SHIFT (a 16-bit type aligned to 2 bytes, VB == 2): pieces of 16 bytes (8 elements), each
/// read as the two aligned 16-byte vectors that cover it (`fetch_shifted`: the second only when
/// the piece is not itself aligned, each only when it holds an element inside the operand, so
/// no vector reads past the operand's memory) and shifted into place when stored (`put_shifted`,
/// `shift8`): 2 vector loads a piece instead of 8 element loads.
template <int DT, bool KMAJOR, int ROWS, int BK, int THREADS, int VB, bool SHIFT = false>
struct Staged {
  static constexpr int ES = dt_bytes(DT);
  static constexpr bool NARROW = VB < 4;
  static constexpr bool SHIFTED = SHIFT && VB == 2 && ES == 2;
  static constexpr int PB = SHIFTED ? 16 : NARROW ? 4 : VB;  // bytes of one piece in shared memory
  static constexpr int HELD = SHIFTED ? 8 : 1;  // registers a piece holds between fetch and put
  static constexpr int LINES = KMAJOR ? ROWS : BK;
  static constexpr int LINE_BYTES = (KMAJOR ? BK : ROWS) * ES;
  static constexpr int CPL = LINE_BYTES / 16;  // 16-byte chunks per line
  static constexpr int BYTES = LINES * LINE_BYTES;
  static constexpr int PPL = LINE_BYTES / PB;  // copy pieces per line
  static constexpr int PIECES = LINES * PPL;
  static constexpr int PER_THREAD = (PIECES + THREADS - 1) / THREADS;
  static constexpr int EPP = PB / ES;  // elements per piece
  static_assert(LINE_BYTES % 32 == 0, "a staged line must hold at least two 16-byte chunks");
  static_assert(VB == 1 || VB == 2 || VB == 4 || VB == 8 || VB == 16, "copy width");
  static_assert(VB >= ES, "copy width below one element");
  // A piece's shift (its first element's place in its 16-byte vector) is the same at every k
  // tile: a tile advances by a multiple of 16 bytes.
  static_assert(!SHIFTED || BK % 8 == 0, "shifted copies step k by whole 16-byte vectors");

  /// Swizzle of line `l`: XORed into the chunk index. With 128-byte or longer lines the low
  /// three chunk bits take l % 8; shorter lines share a 128-byte bank row with their neighbours,
  /// so the pattern advances once per bank row.
  PH_GEMM_DEV static int sw(int l) {
    if (CPL >= 8) return l & 7;
    if (CPL == 4) return (l >> 1) & 3;
    return (l >> 2) & 1;  // CPL == 2
  }
  /// Byte offset of (line, chunk) inside the stage's tile.
  PH_GEMM_DEV static u32 off(int line, int chunk) {
    return (u32)(line * LINE_BYTES + ((chunk ^ sw(line)) << 4));
  }

  // Per-thread copy state, fixed for the whole k loop.
  u32 soff[PER_THREAD];       // smem byte offset of each piece in a stage
  const char* gp[PER_THREAD];  // global address of each piece at k = k_begin
  int fixed_bytes[PER_THREAD];  // bytes valid along the non-k dimension (0 or VB.. / clamp)
  int kofs[PER_THREAD];        // k offset of the piece inside the tile
  long long kstep;             // bytes to advance per k tile
  int k_ext;                   // K extent (elements)
  // NARROW: nothing per piece is kept (it would cost registers); pieces are addressed from the
  // tile's corner at k_begin, `nld` elements between lines, `nrows` rows inside M or N.
  const char* nbase;
  long long nld;
  int nrows;

  /// Shared-memory byte offset of piece q (0 .. PIECES-1) inside a stage.
  PH_GEMM_DEV static u32 piece_off(int q) {
    const int line = q / PPL;
    const int byte = (q % PPL) * PB;
    return (u32)(line * LINE_BYTES) + ((((byte >> 4) ^ sw(line)) << 4) | (byte & 15));
  }

  /// ld: elements between consecutive lines in global memory; r0: first row (m0 or n0);
  /// r_ext: M or N; X: operand base.
  PH_GEMM_DEV void init(const void* X, long long ld, int r0, int r_ext, int k_ext_, int k_begin,
                        int tid) {
    k_ext = k_ext_;
    kstep = KMAJOR ? (long long)BK * ES : (long long)BK * ld * ES;
    if constexpr (NARROW) {
      nld = ld;
      nrows = r_ext - r0;
      const long long corner = KMAJOR ? (long long)r0 * ld + k_begin : (long long)k_begin * ld + r0;
      nbase = static_cast<const char*>(X) + corner * ES;
    } else {
      init_pieces(X, ld, r0, r_ext, k_begin, tid);
    }
  }

  /// cp.async operands: each piece's address, smem offset and fixed mask, kept for the loop.
  PH_GEMM_DEV void init_pieces(const void* X, long long ld, int r0, int r_ext, int k_begin,
                               int tid) {
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      const int q = tid + j * THREADS;
      const int line = q / PPL;
      const int byte = (q % PPL) * PB;
      soff[j] = piece_off(q);
      const int e = byte / ES;  // element offset inside the line
      long long elem;
      if (KMAJOR) {
        // line = row r0 + line, elements along k
        const int r = r0 + line;
        fixed_bytes[j] = (q < PIECES && r < r_ext) ? PB : 0;
        kofs[j] = e;
        elem = (long long)r * ld + (long long)k_begin + e;
      } else {
        // line = k row, elements along rows
        const int r = r0 + e;
        int b = (r_ext - r) * ES;
        b = b < 0 ? 0 : (b > PB ? PB : b);
        fixed_bytes[j] = q < PIECES ? b : 0;
        kofs[j] = line;
        elem = (long long)(k_begin + line) * ld + r;
      }
      gp[j] = static_cast<const char*>(X) + elem * ES;
    }
  }

  /// Bytes of piece j of the tile at k that lie inside the operand (0..PB).
  PH_GEMM_DEV int valid_bytes(int j, int k, bool full) const {
    if (full) return PB;
    if (KMAJOR) {
      int b = (k_ext - (k + kofs[j])) * ES;
      b = b < 0 ? 0 : (b > PB ? PB : b);
      return fixed_bytes[j] < b ? fixed_bytes[j] : b;
    }
    return (k + kofs[j] < k_ext) ? fixed_bytes[j] : 0;
  }

  /// Issues the copies of the tile at k (its index relative to k_begin is `t`) into `stage`.
  /// `full` says the whole tile is inside M/N/K: then every piece copies VB bytes, unchecked.
  /// NARROW operands do nothing here (`fetch` and `put` copy them).
  PH_GEMM_DEV void load(u32 stage, const void* X, int t, int k, bool full) const {
    if constexpr (!NARROW) {
#pragma unroll
      for (int j = 0; j < PER_THREAD; ++j) {
        if (PIECES % THREADS != 0 && (int)(threadIdx.x + j * THREADS) >= PIECES) continue;
        const char* src = gp[j] + (long long)t * kstep;
        const int bytes = valid_bytes(j, k, full);
        // A zero-byte copy still needs a mapped address: the operand base is one.
        cp_async<VB>(stage + soff[j], bytes > 0 ? (const void*)src : X, bytes);
      }
    }
  }

  /// NARROW: reads this thread's pieces of the tile at k (index `t`) into `regs`, element by
  /// element, zero outside the operand.
  PH_GEMM_DEV void fetch(u32 (&regs)[PER_THREAD], int t, int k, bool full) const {
    const char* tile = nbase + (long long)t * kstep;
    // The thread index read opaquely, so that the compiler recomputes each piece's address
    // here (a few integer ops) instead of hoisting PER_THREAD 64-bit addresses out of the k
    // loop, where they would stay live across the MMAs.
    int tid;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      regs[j] = 0;
      const int q = tid + j * THREADS;
      if (PIECES % THREADS != 0 && q >= PIECES) continue;
      // Piece q: line q / PPL, its first element e0 along the line. K-major lines are rows
      // (elements along k), M/N-major ones are k (elements along rows); in both the piece
      // starts `line * ld + e0` elements from the tile's corner and runs contiguously.
      const int line = q / PPL, e0 = (q % PPL) * EPP;
      const char* src = tile + ((long long)line * nld + e0) * ES;
      int n = EPP;  // elements inside the operand
      if (!full) {
        int along = KMAJOR ? k_ext - (k + e0) : nrows - e0;
        along = along < 0 ? 0 : (along > EPP ? EPP : along);
        const bool across = KMAJOR ? line < nrows : k + line < k_ext;
        n = across ? along : 0;
      }
#pragma unroll
      for (int e = 0; e < EPP; ++e) {
        if (e < n) regs[j] |= ldg_narrow<ES>(src + e * ES) << (8 * ES * e);
      }
    }
  }

  /// Elements of piece (line, e0) of the tile at k inside the operand (0..EPP).
  PH_GEMM_DEV int piece_inside(int line, int e0, int k, bool full) const {
    if (full) return EPP;
    int along = KMAJOR ? k_ext - (k + e0) : nrows - e0;
    along = along < 0 ? 0 : (along > EPP ? EPP : along);
    const bool across = KMAJOR ? line < nrows : k + line < k_ext;
    return across ? along : 0;
  }

  /// SHIFTED: reads the two aligned 16-byte vectors covering each of this thread's pieces of
  /// the tile at k (index `t`) into `regs` (8 words a piece, zero where not read). Only vectors
  /// holding an element inside the operand are read: the first holds the piece's first element;
  /// the second holds elements 8 - sh .. 7 (sh: the piece's shift, 1..7).
  PH_GEMM_DEV void fetch_shifted(u32 (&regs)[PER_THREAD * HELD], int t, int k, bool full) const {
    const char* tile = nbase + (long long)t * kstep;
    int tid;  // read opaquely, as in `fetch`
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
#pragma unroll
      for (int w = 0; w < 8; ++w) regs[j * 8 + w] = 0;
      const int q = tid + j * THREADS;
      if (PIECES % THREADS != 0 && q >= PIECES) continue;
      const int line = q / PPL, e0 = (q % PPL) * EPP;
      const char* src = tile + ((long long)line * nld + e0) * ES;
      const int sh = (int)(((unsigned long long)src >> 1) & 7);
      const int n = piece_inside(line, e0, k, full);
      // From src itself, so the compiler keeps it a global address.
      const uint4* v = reinterpret_cast<const uint4*>(src - 2 * sh);
      uint4 lo = make_uint4(0, 0, 0, 0), hi = make_uint4(0, 0, 0, 0);
      if (n > 0) lo = v[0];
      if (n > 8 - sh) hi = v[1];
      regs[j * 8 + 0] = lo.x, regs[j * 8 + 1] = lo.y, regs[j * 8 + 2] = lo.z, regs[j * 8 + 3] = lo.w;
      regs[j * 8 + 4] = hi.x, regs[j * 8 + 5] = hi.y, regs[j * 8 + 6] = hi.z, regs[j * 8 + 7] = hi.w;
    }
  }

  /// SHIFTED: shifts what `fetch_shifted` read for the tile at k (index `t`) into place, zeroes
  /// the elements outside the operand, and stores each piece into `stage` (one 16-byte store).
  PH_GEMM_DEV void put_shifted(u32 stage, const u32 (&regs)[PER_THREAD * HELD], int t, int k,
                               bool full) const {
    (void)t;
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      const int q = (int)threadIdx.x + j * THREADS;
      if (PIECES % THREADS != 0 && q >= PIECES) continue;
      const int line = q / PPL, e0 = (q % PPL) * EPP;
      // The piece's shift in elements, from the low address bits (the same at every tile).
      const int sh = (int)(((u32)(unsigned long long)nbase >> 1) + (u32)line * (u32)nld + (u32)e0) & 7;
      const uint4 lo = make_uint4(regs[j * 8 + 0], regs[j * 8 + 1], regs[j * 8 + 2], regs[j * 8 + 3]);
      const uint4 hi = make_uint4(regs[j * 8 + 4], regs[j * 8 + 5], regs[j * 8 + 6], regs[j * 8 + 7]);
      uint4 x = shift8(lo, hi, sh);
      if (!full) {
        // Element e of the piece is kept when e < n: word i holds elements 2i and 2i + 1.
        const int n = piece_inside(line, e0, k, false);
        auto keep = [n](int i) -> u32 { return n >= 2 * i + 2 ? 0xffffffffu : (n == 2 * i + 1 ? 0xffffu : 0u); };
        x.x &= keep(0), x.y &= keep(1), x.z &= keep(2), x.w &= keep(3);
      }
      sts128(stage + piece_off(q), x.x, x.y, x.z, x.w);
    }
  }

  /// NARROW: stores what `fetch` read into `stage`.
  PH_GEMM_DEV void put(u32 stage, const u32 (&regs)[PER_THREAD]) const {
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      const int q = (int)threadIdx.x + j * THREADS;
      if (PIECES % THREADS != 0 && q >= PIECES) continue;
      sts32(stage + piece_off(q), regs[j]);
    }
  }
};

/// The main loop. Template arguments:
///   DT            operand element type (both operands): F16, BF16, TF32, F8E4M3, F8E5M2, I8
///   BM, BN, BK    block tile
///   WARPS_M/N     warp grid (threads = 32 * WARPS_M * WARPS_N, the whole block)
///   STAGES        cp.async pipeline depth, 2..8
///   A_KMAJOR      A[m, k] at A[m * lda + k] (row-major A); else at A[k * lda + m]
///   B_KMAJOR      B[k, n] at B[n * ldb + k] ([N, K] row-major, dot_t); else at B[k * ldb + n]
///   VA, VB        bytes per cp.async for A and B (16, 8 or 4): the host guarantees base pointers
///                 and leading dimensions aligned to that many bytes; 2 or 1 (an operand aligned
///                 to under 4 bytes) register-stages that operand with element loads instead
///   SHIFT         1: a 16-bit operand aligned to 2 bytes is register-staged by shifted 16-byte
///                 vector loads (Staged::fetch_shifted) instead of element loads
template <int DT, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, bool A_KMAJOR,
          bool B_KMAJOR, int VA = 16, int VB = 16, int SHIFT = 0>
struct MainLoop {
  static constexpr int TILE_M = BM, TILE_N = BN, TILE_K = BK;
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int ES = dt_bytes(DT);
  static constexpr int KS = Mma<DT>::K;
  using Layout = AccLayout<BM, BN, WARPS_M, WARPS_N>;
  using OpA = Staged<DT, A_KMAJOR, BM, BK, THREADS, VA, SHIFT != 0>;
  using OpB = Staged<DT, B_KMAJOR, BN, BK, THREADS, VB, SHIFT != 0>;
  static constexpr int STAGE_BYTES = OpA::BYTES + OpB::BYTES;
  /// Dynamic shared memory the loop needs (base aligned to 128 bytes).
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;
  static constexpr int MI = Layout::MI, NI = Layout::NI;

  static_assert(STAGES >= 2 && STAGES <= 8, "STAGES in 2..8");
  static_assert(BK % KS == 0, "BK must be a multiple of the MMA k");
  static_assert(KS * ES == 32, "one MMA k step is two 16-byte chunks");
  static_assert(ES == 2 || (A_KMAJOR && B_KMAJOR),
                "tf32 and 8-bit operands must both be K-major (ldmatrix.trans moves 16-bit data)");
  static_assert(NI % 2 == 0, "warp tile N must be a multiple of 16");
  static_assert(OpA::BYTES % 128 == 0 && OpB::BYTES % 128 == 0, "stage alignment");

  /// acc += A[m0 :+ BM, k :+ BK] . B[k :+ BK, n0 :+ BN] for k = k0, k0 + BK, .. < k1, every
  /// slice masked by its operand's extents (out-of-range elements read as zero).
  /// acc: the accumulator tile (`v[Layout::N]`: float, or int for I8), updated in place.
  /// A, B: operand views with the fields of ph::Operand (phobos_dot.cuh): `p` (element
  /// pointer), `ld` (elements between consecutive m/n lines if K-major, k lines otherwise),
  /// `mn0` (m0 or n0), `mn_dim` (M or N), `k_dim` (K of that operand), `ok` (false: the
  /// operand reads as all zeros, so nothing is added).
  /// smem: at least SMEM_BYTES of dynamic shared memory, 128-byte aligned.
  /// Called by all THREADS threads; ends with every copy complete and a block barrier, so the
  /// shared memory is free for the epilogue.
  template <class Acc, class OA, class OB>
  PH_GEMM_DEV static void run(Acc& acc, const OA& A, const OB& B, int k0, int k1,
                              unsigned char* smem) {
    if (!A.ok || !B.ok) return;  // uniform
    run_raw(acc, smem, A.p, A.ld, A.mn0, A.mn_dim, A.k_dim, B.p, B.ld, B.mn0, B.mn_dim, B.k_dim,
            k0, k1);
  }

  template <class Acc>
  PH_GEMM_DEV static void run_raw(Acc& acc, void* smem, const void* A, long long lda, int m0,
                                  int M, int Ka, const void* B, long long ldb, int n0, int N,
                                  int Kb, int k_begin, int k_end) {
    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int wm = warp % WARPS_M, wn = warp / WARPS_M;
    const int KT = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
    if (KT == 0) return;  // uniform: nothing to add
    const u32 sbase = smem_u32(smem);
    const bool full_mn = (m0 + BM <= M) && (n0 + BN <= N);
    const int K = Ka < Kb ? Ka : Kb;  // whole-tile test only; each operand masks by its own

    OpA opa;
    OpB opb;
    opa.init(A, lda, m0, M, Ka, k_begin, tid);
    opb.init(B, ldb, n0, N, Kb, k_begin, tid);

    auto stage_of = [&](int t) { return sbase + (u32)((t % STAGES) * STAGE_BYTES); };
    auto is_full = [&](int t) { return full_mn && (k_begin + t * BK + BK <= K); };
    auto issue = [&](int t) {
      if (t < KT) {
        const int k = k_begin + t * BK;
        const bool full = is_full(t);
        const u32 st = stage_of(t);
        opa.load(st, A, t, k, full);
        opb.load(st + OpA::BYTES, B, t, k, full);
      }
      // Always commit, even an empty group, so that "wait until at most STAGES-2 groups are
      // pending" below always means "tile t is in".
      cp_async_commit();
    };
    // Register-staged (NARROW) operands: tile t's loads into registers, then its stores.
    u32 ra[OpA::PER_THREAD * OpA::HELD];  // unused (and optimized away) for a cp.async operand
    u32 rb[OpB::PER_THREAD * OpB::HELD];
    auto fetch = [&](int t) {
      if (t >= KT) return;
      const int k = k_begin + t * BK;
      if constexpr (OpA::SHIFTED) opa.fetch_shifted(ra, t, k, is_full(t));
      else if constexpr (OpA::NARROW) opa.fetch(ra, t, k, is_full(t));
      if constexpr (OpB::SHIFTED) opb.fetch_shifted(rb, t, k, is_full(t));
      else if constexpr (OpB::NARROW) opb.fetch(rb, t, k, is_full(t));
    };
    auto put = [&](int t) {
      if (t >= KT) return;
      if constexpr (OpA::SHIFTED) opa.put_shifted(stage_of(t), ra, t, k_begin + t * BK, is_full(t));
      else if constexpr (OpA::NARROW) opa.put(stage_of(t), ra);
      if constexpr (OpB::SHIFTED)
        opb.put_shifted(stage_of(t) + OpA::BYTES, rb, t, k_begin + t * BK, is_full(t));
      else if constexpr (OpB::NARROW) opb.put(stage_of(t) + OpA::BYTES, rb);
    };
    constexpr bool NARROW = OpA::NARROW || OpB::NARROW;

#pragma unroll 1
    for (int s = 0; s < STAGES - 1; ++s) {
      issue(s);
      if (NARROW) {
        fetch(s);
        put(s);
      }
    }

    // ldmatrix lane roles (see the header comment of each branch below).
    const int l8 = lane & 7, lb3 = (lane >> 3) & 1, lb4 = lane >> 4;

#pragma unroll 1
    for (int t = 0; t < KT; ++t) {
      // Tile t has landed for this thread; the barrier makes it visible to all, and also
      // certifies that every warp finished computing on tile t-1, whose stage the next issue
      // overwrites.
      cp_async_wait<STAGES - 2>();
      __syncthreads();
      issue(t + STAGES - 1);
      // The register-staged part of the same tile: loads now, stores after this tile's MMAs
      // (its slot, tile t-1's, is free: every warp passed the barrier above; the barrier of
      // iteration t+1 or later publishes the stores before anyone reads them).
      if (NARROW) fetch(t + STAGES - 1);

      const u32 sa = sbase + (u32)((t % STAGES) * STAGE_BYTES);
      const u32 sb = sa + OpA::BYTES;
#pragma unroll
      for (int kk = 0; kk < BK / KS; ++kk) {
        u32 af[MI][4];
        u32 bf[NI][2];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          const int mrow = wm * Layout::WM + mi * 16;
          if (A_KMAJOR) {
            // matrices (rows 0-7 | 8-15) x (k chunk 0 | 1) -> a0, a1, a2, a3
            const int row = mrow + l8 + 8 * lb3;
            const int chunk = kk * 2 + lb4;
            ldsm_x4(sa + OpA::off(row, chunk), af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
          } else {
            // lines are k: matrices (k 0-7 | 8-15) x (m 0-7 | 8-15), transposed on load
            const int kline = kk * 16 + l8 + 8 * lb4;
            const int chunk = (mrow + 8 * lb3) / 8;
            ldsm_x4_t(sa + OpA::off(kline, chunk), af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
          }
        }
#pragma unroll
        for (int nj = 0; nj < NI / 2; ++nj) {
          const int ncol = wn * Layout::WN + nj * 16;
          if (B_KMAJOR) {
            // matrices (n 0-7, k c0), (n 0-7, k c1), (n 8-15, k c0), (n 8-15, k c1)
            const int row = ncol + l8 + 8 * lb4;
            const int chunk = kk * 2 + lb3;
            ldsm_x4(sb + OpB::off(row, chunk), bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0],
                    bf[2 * nj + 1][1]);
          } else {
            // lines are k: matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15)
            const int kline = kk * 16 + l8 + 8 * lb3;
            const int chunk = (ncol + 8 * lb4) / 8;
            ldsm_x4_t(sb + OpB::off(kline, chunk), bf[2 * nj][0], bf[2 * nj][1],
                      bf[2 * nj + 1][0], bf[2 * nj + 1][1]);
          }
        }
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
          for (int ni = 0; ni < NI; ++ni) Mma<DT>::run(acc.v + (mi * NI + ni) * 4, af[mi], bf[ni]);
      }
      if (NARROW) put(t + STAGES - 1);
    }
    cp_async_wait<0>();
    __syncthreads();
  }
};

#endif  // CUDA

}  // namespace sm80
}  // namespace gemm
}  // namespace ph
