// Hopper GEMM main loop: wgmma.mma_async (m64nNk16 f16/bf16, k8 tf32, k32 fp8) reading both
// operands from shared memory, fed by 2-D TMA bulk tensor copies with 128-byte swizzle that
// complete on mbarriers, STAGES deep. One to four consumer warpgroups; the copies are issued
// either by thread 0 between its own MMAs or by a dedicated producer warp (PRODUCER_WARP).
// With CLUSTER = 2, two blocks of a thread block cluster on neighbouring M tiles share their
// B tile: each copies half of it from global memory, multicast into both blocks (or, SHARE_A,
// on neighbouring N tiles of one M tile sharing A).
// Ragged M/N/K edges are the tensor maps' zero fill; the epilogue masks the store of C.
#pragma once
#include "gemm/ptx.cuh"
#include "gemm/wgmma_ops.cuh"

namespace ph {
namespace gemm {
namespace sm90 {

/// Same size and alignment as the driver's CUtensorMap (NVRTC has no cuda.h): kernels take
/// `const __grid_constant__ ph::gemm::sm90::TmaDesc` parameters that the host fills with
/// cuTensorMapEncodeTiled and passes by value.
struct alignas(64) TmaDesc {
  unsigned long long opaque[16];
};

/// Accumulator layout: WG_M x WG_N consumer warpgroups (warpgroup g = tid / 128 at
/// (g % WG_M, g / WG_M)), each owning a (BM / WG_M) x (BN / WG_N) sub-tile made of MI = (BM/WG_M)/64
/// wgmma m64 x WGN results. Register i = mi * (WGN/2) + j of thread t (warp w = (t%128)/32, lane
/// l) holds row mi*64 + 16*w + l/4 + 8*((j/2)%2), column 8*(j/4) + 2*(l%4) + j%2 of that sub-tile.
/// Threads past the consumers (a producer warp) hold nothing: their coordinates are OOB.
/// THREADS_ is the block size.
template <int BM, int BN, int WG_M, int WG_N, int THREADS_>
struct AccLayout {
  static constexpr int CONSUMERS = WG_M * WG_N * 128;
  static constexpr int WARPGROUPS_M = WG_M;  // warpgroup g is at (g % WG_M, g / WG_M)
  static constexpr int THREADS = THREADS_;  // the block: consumers, then any producer warp
  static_assert(THREADS >= CONSUMERS, "the consumer warpgroups are threads 0 .. CONSUMERS-1");
  static constexpr int WGM = BM / WG_M;
  static constexpr int WGN = BN / WG_N;
  static constexpr int MI = WGM / 64;
  static constexpr int R = BM;
  static constexpr int C = BN;
  static constexpr int N = MI * WGN / 2;
  static constexpr int VEC = 2;
  static constexpr bool SEPARABLE = true;  // see ph::Separable
  static_assert(WGM % 64 == 0, "a warpgroup's rows are whole m64 wgmma tiles");
  static_assert(WGN % 16 == 0 && WGN <= 256, "wgmma N");
  // Branch-free: see sm80::AccLayout::coord.
  PH_GEMM_HD static void coord(int tid, int i, int& r, int& c) {
    const bool ok = tid >= 0 && tid < CONSUMERS && i >= 0 && i < N;
    const int g = tid / 128, t = tid % 128;
    const int wm = g % WG_M, wn = g / WG_M;
    const int w = t / 32, l = t % 32;
    const int mi = i / (WGN / 2), j = i % (WGN / 2);
    const int rr = wm * WGM + mi * 64 + 16 * w + l / 4 + 8 * ((j / 2) % 2);
    const int cc = wn * WGN + 8 * (j / 4) + 2 * (l % 4) + (j % 2);
    r = ok ? rr : OOB;
    c = ok ? cc : OOB;
  }
};

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)

/// wgmma shared-memory descriptor, 128-byte swizzle: start address, leading and stride byte
/// offsets (all >> 4), swizzle mode 1 in bits 62-63. Base offset 0: every swizzle atom this
/// loop addresses starts on a 1024-byte boundary (the in-atom k advance is in the address).
PH_GEMM_DEV u64 desc_sw128(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)((lbo & 0x3FFFF) >> 4) << 16) |
         ((u64)((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

/// The main loop. Template arguments:
///   DT            F16, BF16, TF32 (f32 data read as tf32), F8E4M3, F8E5M2 (both operands)
///   BM, BN, BK    block tile; BM/WG_M a multiple of 64 (<= 128 per warpgroup), BN/WG_N a
///                 multiple of 32 (<= 256); BK a multiple of 128 bytes of elements
///   WG_M, WG_N    consumer warpgroups along M and N
///   STAGES        smem pipeline depth (2..16; shared memory bounds it first at large tiles)
///   A_KMAJOR      A is [M, K] row-major (else M-major: [K, M] in memory; 16-bit types only)
///   B_KMAJOR      B is [N, K] row-major (dot_t, or [K, N] column-major); else [K, N] row-major
///                 (N-major, 16-bit types only)
///   PRODUCER_WARP one extra warp (threads = 128 * WG_M * WG_N + 32) issues all copies; else
///                 thread 0 issues them between its MMAs (threads = 128 * WG_M * WG_N)
///   CLUSTER       1, or 2: the kernel is compiled with __cluster_dims__(2, 1, 1) and the two
///                 blocks of a cluster run the loop on the same B tile and k range (different
///                 M tiles). Each block copies half of every B stage with a multicast copy
///                 that lands in both; a stage's slot is free again once the consumers of both
///                 blocks released it. L2 traffic per block drops from (BM + BN) to
///                 (BM + BN / 2) rows a k step. The B box is BN / 2 rows when B is K-major;
///                 an N-major B copies every other 64-column slab, or, 64 wide, half of the
///                 slab's k rows (a box of BK / 2 rows).
///   RELEASE_OWN   the persistent schedule only (`run_persistent`): a consumer warpgroup waits
///                 for its own MMAs of each stage (wgmma.wait_group 0) and hands that stage's
///                 slot back at once, so a starving block has all STAGES slots in flight; else
///                 (the default) the slot of stage t - 1 goes back after stage t's MMAs are
///                 issued (wait_group 1), one slot held while the consumers wait on a late stage.
///   B_ONE_ISSUER  under CLUSTER: rank 0's producer copies the whole B box of every stage,
///                 multicast to all blocks, and the others copy none of B (each still copies
///                 its own A and expects the whole stage); the B box is CLUSTER=1's.
///   SHARE_A       under CLUSTER, the persistent schedule only: the blocks of a cluster run
///                 neighbouring N tiles of one M tile and share A instead of B: each copies
///                 1 / CLUSTER of every A stage multicast into all blocks (K-major A: BM /
///                 CLUSTER rows; M-major A: its 64-row slabs, or their k rows) and its own B.
///                 A block past the last N tile copies no B (its stage expects A's bytes alone).
template <int DT, int BM, int BN, int BK, int WG_M, int WG_N, int STAGES, bool A_KMAJOR,
          bool B_KMAJOR, bool PRODUCER_WARP, int CLUSTER = 1, bool RELEASE_OWN = false,
          bool B_ONE_ISSUER = false, bool SHARE_A = false>
struct MainLoop {
  static constexpr int TILE_M = BM, TILE_N = BN, TILE_K = BK;
  static constexpr int CONSUMERS = WG_M * WG_N * 128;
  static constexpr int THREADS = CONSUMERS + (PRODUCER_WARP ? 32 : 0);
  using Layout = AccLayout<BM, BN, WG_M, WG_N, THREADS>;
  static constexpr int CONSUMER_WARPS = CONSUMERS / 32;
  static constexpr int ES = dt_bytes(DT);
  static constexpr int KB = 128 / ES;  // elements per 128-byte swizzle line
  static constexpr int WGM = Layout::WGM, WGN = Layout::WGN, MI = Layout::MI;
  static constexpr int TA = A_KMAJOR ? 0 : 1, TB = B_KMAJOR ? 0 : 1;
  using Op = Wgmma<DT, WGN, TA, TB>;
  static constexpr int KS = Op::K;
  static constexpr int A_BYTES = BM * BK * ES;
  static constexpr int B_BYTES = BN * BK * ES;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  /// Dynamic shared memory: the stages, 2 mbarriers per stage, and 1024 bytes of slack so the
  /// loop can align its base to the 1024-byte swizzle atom whatever pointer it is given.
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + STAGES * 16 + 1024;
  /// Transaction bytes of one stage: TMA counts whole boxes, zero-filled parts included.
  static constexpr unsigned TX_BYTES = (unsigned)STAGE_BYTES;

  static_assert(DT == F16 || DT == BF16 || DT == TF32 || DT == F8E4M3 || DT == F8E5M2,
                "wgmma element type");
  static_assert(ES == 2 || (A_KMAJOR && B_KMAJOR), "tf32/fp8 wgmma needs K-major A and B");
  static_assert(MI == 1 || MI == 2, "64 or 128 rows per warpgroup");
  static_assert(BK % KB == 0, "BK must be whole 128-byte lines");
  static_assert(KS * ES == 32, "one wgmma k step is 32 bytes");
  static_assert(BM <= 256 && BN <= 256 && BK <= 256, "TMA boxes are at most 256 per dimension");
  static_assert(A_KMAJOR || BM % KB == 0, "M-major A is loaded in 64-row slabs");
  static_assert(B_KMAJOR || WGN % KB == 0, "N-major B is read in 64-column slabs per warpgroup");
  static_assert(STAGES >= 2 && STAGES <= 16, "STAGES in 2..16");
  static_assert(WG_M * WG_N >= 1 && WG_M * WG_N <= 4, "1..4 consumer warpgroups");
  static_assert(CLUSTER == 1 || CLUSTER == 2 || (CLUSTER == 4 && SHARE_A), "CLUSTER is 1 or 2, or 4 sharing A");
  // Thread 0 issuing between its MMAs would wait for the other block's consumers every k step,
  // holding back its own warpgroup's MMAs (0.64x the speed on an H200): clusters take the
  // producer warp.
  static_assert(CLUSTER == 1 || PRODUCER_WARP, "CLUSTER needs the producer warp");
  static_assert(!B_ONE_ISSUER || CLUSTER > 1, "B_ONE_ISSUER needs a cluster");
  static_assert(!SHARE_A || (CLUSTER > 1 && !B_ONE_ISSUER), "SHARE_A: a cluster that shares A");
  /// Blocks B is split among: 1 when one block issues it whole, or A is the shared operand.
  static constexpr int B_PARTS = B_ONE_ISSUER || SHARE_A ? 1 : CLUSTER;
  /// Blocks A is split among (SHARE_A), else 1.
  static constexpr int A_PARTS = SHARE_A ? CLUSTER : 1;
  static_assert(!A_KMAJOR || (BM / A_PARTS) % 8 == 0,
                "a K-major A box of BM / CLUSTER rows is whole 8-row swizzle atoms");
  /// An M-major A whose 64-row slabs do not split evenly among the cluster's blocks: each
  /// block copies BK / CLUSTER of every slab's k rows instead (as B_SPLIT_ROWS).
  static constexpr bool A_SPLIT_ROWS = A_PARTS > 1 && !A_KMAJOR && (BM / KB) % CLUSTER != 0;
  static_assert(!A_SPLIT_ROWS || (BK / CLUSTER) % 8 == 0,
                "the M-major A slabs split evenly among the cluster's blocks, or their k rows "
                "into whole 8-row swizzle atoms");
  static_assert(!B_KMAJOR || (BN / B_PARTS) % 8 == 0,
                "a K-major B box of BN / CLUSTER rows is whole 8-row swizzle atoms");
  /// An N-major B whose 64-column slabs do not split evenly among the cluster's blocks (a
  /// 64-wide tile): each block copies BK / CLUSTER of every slab's k rows instead.
  static constexpr bool B_SPLIT_ROWS = B_PARTS > 1 && !B_KMAJOR && (BN / KB) % CLUSTER != 0;
  static_assert(!B_SPLIT_ROWS || (BK / CLUSTER) % 8 == 0,
                "the N-major B slabs split evenly among the cluster's blocks, or their k rows "
                "into whole 8-row swizzle atoms");

  // Box shapes (elements, innermost first) the host must encode, per operand.
  static constexpr int A_BOX0 = KB;
  static constexpr int A_BOX1 = A_KMAJOR ? BM / A_PARTS : A_SPLIT_ROWS ? BK / CLUSTER : BK;
  static constexpr int B_BOX0 = KB;
  static constexpr int B_BOX1 = B_KMAJOR ? BN / B_PARTS : B_SPLIT_ROWS ? BK / CLUSTER : BK;

  PH_GEMM_DEV static void produce(u32 stage, u32 bar, const void* tmA, const void* tmB, int m0,
                                  int n0, int k, bool b_live = true) {
    if (SHARE_A) {
      produce_shared_a(stage, bar, tmA, tmB, m0, n0, k, b_live);
      return;
    }
    mbar_arrive_expect_tx(bar, TX_BYTES);
    if (A_KMAJOR) {
#pragma unroll
      for (int s = 0; s < BK / KB; ++s) tma_load_2d(stage + s * (BM * 128), tmA, k + s * KB, m0, bar);
    } else {
#pragma unroll
      for (int s = 0; s < BM / KB; ++s) tma_load_2d(stage + s * (BK * 128), tmA, m0 + s * KB, k, bar);
    }
    const u32 sb = stage + A_BYTES;
    if (CLUSTER > 1) {
      // This block's share of B, into the same offsets of every block of the cluster.
      const int rank = (int)cluster_rank();
      const unsigned short all = (unsigned short)((1u << CLUSTER) - 1);
      if (B_ONE_ISSUER) {
        if (rank == 0) {
          if (B_KMAJOR) {
#pragma unroll
            for (int s = 0; s < BK / KB; ++s)
              tma_load_2d_multicast(sb + s * (BN * 128), tmB, k + s * KB, n0, bar, all);
          } else {
#pragma unroll
            for (int s = 0; s < BN / KB; ++s)
              tma_load_2d_multicast(sb + s * (BK * 128), tmB, n0 + s * KB, k, bar, all);
          }
        }
      } else if (B_KMAJOR) {
        constexpr int ROWS = BN / CLUSTER;
#pragma unroll
        for (int s = 0; s < BK / KB; ++s)
          tma_load_2d_multicast(sb + s * (BN * 128) + rank * (ROWS * 128), tmB, k + s * KB,
                                n0 + rank * ROWS, bar, all);
      } else if (B_SPLIT_ROWS) {
        constexpr int ROWS = BK / CLUSTER;
#pragma unroll
        for (int s = 0; s < BN / KB; ++s)
          tma_load_2d_multicast(sb + s * (BK * 128) + rank * (ROWS * 128), tmB, n0 + s * KB,
                                k + rank * ROWS, bar, all);
      } else {
#pragma unroll
        for (int s = 0; s < BN / KB; ++s)
          if (s % CLUSTER == rank)
            tma_load_2d_multicast(sb + s * (BK * 128), tmB, n0 + s * KB, k, bar, all);
      }
    } else if (B_KMAJOR) {
#pragma unroll
      for (int s = 0; s < BK / KB; ++s) tma_load_2d(sb + s * (BN * 128), tmB, k + s * KB, n0, bar);
    } else {
#pragma unroll
      for (int s = 0; s < BN / KB; ++s) tma_load_2d(sb + s * (BK * 128), tmB, n0 + s * KB, k, bar);
    }
  }

  /// SHARE_A's copies of one stage: this block's share of A into every block of the cluster,
  /// its own B unless `b_live` is false (a tile past the last N tile: the stage then expects
  /// A's bytes alone, and the MMAs read a stale B whose results the masked C store drops).
  PH_GEMM_DEV static void produce_shared_a(u32 stage, u32 bar, const void* tmA, const void* tmB,
                                           int m0, int n0, int k, bool b_live) {
    mbar_arrive_expect_tx(bar, b_live ? TX_BYTES : (unsigned)A_BYTES);
    const int rank = (int)cluster_rank();
    const unsigned short all = (unsigned short)((1u << CLUSTER) - 1);
    if (A_KMAJOR) {
      constexpr int ROWS = BM / CLUSTER;
#pragma unroll
      for (int s = 0; s < BK / KB; ++s)
        tma_load_2d_multicast(stage + s * (BM * 128) + rank * (ROWS * 128), tmA, k + s * KB,
                              m0 + rank * ROWS, bar, all);
    } else if (A_SPLIT_ROWS) {
      constexpr int ROWS = BK / CLUSTER;
#pragma unroll
      for (int s = 0; s < BM / KB; ++s)
        tma_load_2d_multicast(stage + s * (BK * 128) + rank * (ROWS * 128), tmA, m0 + s * KB,
                              k + rank * ROWS, bar, all);
    } else {
#pragma unroll
      for (int s = 0; s < BM / KB; ++s)
        if (s % CLUSTER == rank)
          tma_load_2d_multicast(stage + s * (BK * 128), tmA, m0 + s * KB, k, bar, all);
    }
    if (!b_live) return;
    const u32 sb = stage + A_BYTES;
    if (B_KMAJOR) {
#pragma unroll
      for (int s = 0; s < BK / KB; ++s) tma_load_2d(sb + s * (BN * 128), tmB, k + s * KB, n0, bar);
    } else {
#pragma unroll
      for (int s = 0; s < BN / KB; ++s) tma_load_2d(sb + s * (BK * 128), tmB, n0 + s * KB, k, bar);
    }
  }

  /// A consumer warp's lane 0 hands a slot back: to its own block, or under CLUSTER to every
  /// block of the cluster (each block's copies write into all of them).
  PH_GEMM_DEV static void release(u32 empty) {
    if (CLUSTER == 1) {
      mbar_arrive(empty);
    } else {
#pragma unroll
      for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(empty, (u32)r);
    }
  }

  /// Descriptor of the A operand of wgmma (mi, kk) of warpgroup row wm in stage `st`.
  PH_GEMM_DEV static u64 desc_a(u32 st, int wm, int mi, int kk) {
    const int row = wm * WGM + mi * 64;
    if (A_KMAJOR) {
      const int kb = kk * 32;  // byte offset along k
      return desc_sw128(st + (kb / 128) * (BM * 128) + row * 128 + (kb % 128), 16, 1024);
    }
    return desc_sw128(st + (row / 64) * (BK * 128) + kk * KS * 128, BK * 128, 1024);
  }
  PH_GEMM_DEV static u64 desc_b(u32 st, int wn, int kk) {
    const u32 sb = st + A_BYTES;
    const int col = wn * WGN;
    if (B_KMAJOR) {
      const int kb = kk * 32;
      return desc_sw128(sb + (kb / 128) * (BN * 128) + col * 128 + (kb % 128), 16, 1024);
    }
    return desc_sw128(sb + (col / 64) * (BK * 128) + kk * KS * 128, BK * 128, 1024);
  }

  template <class Acc>
  PH_GEMM_DEV static void fence_acc(Acc& acc) {
#pragma unroll
    for (int i = 0; i < Layout::N; ++i) reg_fence(acc.v[i]);
  }

  /// A consumer warpgroup's MMAs on the stage at `st`, committed; returns with this stage's
  /// MMAs still in flight and the previous stage's complete (its slot can be handed back), or,
  /// PENDING = 0, with this stage's complete too.
  template <class Acc, int PENDING = 1>
  PH_GEMM_DEV static void mma_stage(Acc& acc, u32 st, int wm, int wn) {
    fence_acc(acc);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / KS; ++kk) {
      const u64 db = desc_b(st, wn, kk);
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) Op::run(acc.v + mi * (WGN / 2), desc_a(st, wm, mi, kk), db);
    }
    wgmma_commit();
    fence_acc(acc);
    wgmma_wait<PENDING>();
    fence_acc(acc);
  }

  /// acc += A[m0 :+ BM, k :+ BK] . B[k :+ BK, n0 :+ BN] for k = k0, k0 + BK, .. < k1; the
  /// tensor maps' bounds mask every slice (zero fill).
  /// A, B: operand views with the fields of ph::Operand; only `mn0` and `ok` are read (the
  /// pointer, leading dimension and extents are in the tensor maps).
  /// tmA, tmB: the kernel's `const __grid_constant__ TmaDesc` parameters, by address (see the
  /// TmaSpec the host encodes them from). smem: SMEM_BYTES of dynamic shared memory.
  /// Called by all THREADS threads of the block. Ends with all copies and MMAs complete, the
  /// barriers invalidated and a block barrier, so shared memory is free for the epilogue.
  template <class Acc, class OA, class OB>
  PH_GEMM_DEV static void run(Acc& acc, const OA& A, const OB& B, const TmaDesc* tmA,
                              const TmaDesc* tmB, int k0, int k1, unsigned char* smem) {
    static_assert(!SHARE_A, "SHARE_A's pairs walk the tiles of the persistent schedule");
    if (!A.ok || !B.ok) return;  // uniform (under CLUSTER: literal true, see the code generator)
    // A cluster's block past the last M tile (the grid is rounded up to whole clusters) still
    // shares the copies and barriers of B; it reads a real A tile and its C store is masked.
    const int m0 = CLUSTER > 1 && A.mn0 >= A.mn_dim ? 0 : A.mn0;
    run_raw(acc, smem, tmA, tmB, m0, B.mn0, k0, k1);
  }

  template <class Acc>
  PH_GEMM_DEV static void run_raw(Acc& acc, void* smem, const void* tmA, const void* tmB, int m0,
                                  int n0, int k_begin, int k_end) {
    const int tid = threadIdx.x;
    const int KT = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
    if (KT == 0) return;  // uniform
    const u32 base = (smem_u32(smem) + 1023u) & ~1023u;
    const u32 full0 = base + STAGES * STAGE_BYTES;
    const u32 empty0 = full0 + 8 * STAGES;
    // Whatever the kernel did with this shared memory before (generic stores) must be ordered
    // before the copy engine overwrites it: a proxy fence in every thread, then the barrier.
    fence_proxy_async();
    if (tid == 0) {
      tma_prefetch_desc(tmA);
      tma_prefetch_desc(tmB);
#pragma unroll
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(full0 + 8 * s, 1);  // the producer's arrive; bytes do the rest
        // One arrive per consumer warp of each block of the cluster.
        mbar_init(empty0 + 8 * s, CONSUMER_WARPS * CLUSTER);
      }
      fence_mbar_init();
    }
    // Under CLUSTER the other block's copies and arrives target these barriers: they must be
    // initialized cluster-wide before anyone copies.
    if (CLUSTER > 1)
      cluster_sync();
    else
      __syncthreads();

    if (PRODUCER_WARP && tid >= CONSUMERS) {
      if (tid == CONSUMERS) {
#pragma unroll 1
        for (int t = 0; t < KT; ++t) {
          const int s = t % STAGES;
          // Wait until the consumers released tile t - STAGES from this slot.
          if (t >= STAGES) mbar_wait(empty0 + 8 * s, ((t / STAGES) - 1) & 1);
          produce(base + s * STAGE_BYTES, full0 + 8 * s, tmA, tmB, m0, n0, k_begin + t * BK);
        }
      }
      __syncwarp();
    } else {
      if (!PRODUCER_WARP && tid == 0) {
        const int pre = KT < STAGES ? KT : STAGES;
#pragma unroll 1
        for (int t = 0; t < pre; ++t)
          produce(base + t * STAGE_BYTES, full0 + 8 * t, tmA, tmB, m0, n0, k_begin + t * BK);
      }
      __syncwarp();
      const int g = tid / 128;
      const int wm = g % WG_M, wn = g / WG_M;
      const int lane = tid & 31;
#pragma unroll 1
      for (int t = 0; t < KT; ++t) {
        const int s = t % STAGES;
        mbar_wait(full0 + 8 * s, (t / STAGES) & 1);
        // Keep this tile's MMAs in flight; the previous tile's are done after this, so its
        // slot can be handed back to the producer.
        mma_stage(acc, base + s * STAGE_BYTES, wm, wn);
        if (t > 0) {
          const int ps = (t - 1) % STAGES;
          if (lane == 0) release(empty0 + 8 * ps);
          if (!PRODUCER_WARP && tid == 0 && t - 1 + STAGES < KT) {
            mbar_wait(empty0 + 8 * ps, ((t - 1) / STAGES) & 1);
            produce(base + ps * STAGE_BYTES, full0 + 8 * ps, tmA, tmB, m0, n0,
                    k_begin + (t - 1 + STAGES) * BK);
          }
          __syncwarp();
        }
      }
      wgmma_wait<0>();
      fence_acc(acc);
    }
    // Every tile that was copied was also waited for, so no copy is in flight past this point;
    // under CLUSTER, neither is an arrive of the other block on these barriers after this.
    if (CLUSTER > 1)
      cluster_sync();
    else
      __syncthreads();
    if (tid == 0) {
#pragma unroll
      for (int s = 0; s < STAGES; ++s) {
        mbar_inval(full0 + 8 * s);
        mbar_inval(empty0 + 8 * s);
      }
    }
    __syncthreads();
  }

  // --- SPLIT_K reduced through distributed shared memory (SPLIT_REDUCE=4) ---------------------
  //
  // The PARTS blocks of a cluster (__cluster_dims__(1, 1, PARTS): rank z = blockIdx.z) ran `run`
  // over PARTS parts of k for one output tile. Block rank o owns the tile's columns
  // [o W, (o + 1) W), W = BN / PARTS: every other block stores its partials of them into o's
  // shared memory (st.shared::cluster at mapa addresses; the ring is free after `run`), and o
  // sums the PARTS partials in rank order (the workspace's slice order, whoever owns the
  // slice), its own from its registers. No global workspace, no counter.

  /// Shared memory the reduction uses: one f32 tile (PARTS slots of one slice per thread).
  static constexpr int SPLIT_DSMEM_BYTES = BM * BN * 4;

  /// Called by all threads of the block right after `run`. Returns with the sum of column
  /// o W + c (this block's slice) in the register of `acc` that holds column c (the first
  /// W / 2 registers of each m64 group's BN / 2): the epilogue stores that narrowed tile at
  /// column offset o W (`narrow_cols`); the other registers hold partials.
  template <int PARTS, class Acc>
  PH_GEMM_DEV static void reduce_split_dsmem(Acc& acc, unsigned char* smem) {
    constexpr int HALF = WGN / 2;       // registers of one m64 group
    constexpr int W2 = HALF / PARTS;    // of one slice in it: 4 a group of 8 columns
    constexpr int NS = MI * W2;         // of one slice, per thread
    static_assert(WG_N == 1, "one consumer warpgroup along N: every thread holds every slice");
    static_assert(PARTS >= 2 && PARTS <= 8, "a portable cluster: 2 to 8 parts");
    static_assert(HALF % PARTS == 0 && W2 % 4 == 0, "slices of whole 8-column groups");
    static_assert(SPLIT_DSMEM_BYTES <= SMEM_BYTES - 1024, "the partials fit in the ring");
    const int tid = threadIdx.x;
    const int rank = (int)cluster_rank();
    // float4 slots [PARTS][NS / 4][CONSUMERS]: a warp's 16-byte accesses are contiguous.
    const u32 buf = smem_u32(smem);
    // Every block of the cluster is past its main loop: its shared memory is free (the ring's
    // reads and copies completed before `run` returned; nothing to publish).
    cluster_sync_relaxed();
    if (tid < CONSUMERS) {
#pragma unroll
      for (int o = 0; o < PARTS; ++o) {
        if (o == rank) continue;
#pragma unroll
        for (int q = 0; q < NS / 4; ++q) {
          const int i = (4 * q / W2) * HALF + o * W2 + (4 * q) % W2;
          const u32 at = buf + (u32)(((rank * (NS / 4) + q) * CONSUMERS + tid) * 16);
          st_cluster_v4(at, (u32)o, acc.v[i], acc.v[i + 1], acc.v[i + 2], acc.v[i + 3]);
        }
      }
    }
    // The partials are in their owners' shared memory; none is read remotely after this.
    cluster_sync();
    if (tid < CONSUMERS) {
#pragma unroll
      for (int q = 0; q < NS / 4; ++q) {
        const int i0 = (4 * q / W2) * HALF + (4 * q) % W2;  // slice 0's register
        float own[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          own[e] = acc.v[i0 + e];
#pragma unroll
          for (int o = 1; o < PARTS; ++o) own[e] = o == rank ? acc.v[i0 + o * W2 + e] : own[e];
        }
        float s[4];
#pragma unroll
        for (int z = 0; z < PARTS; ++z) {
          float p[4];
          if (z == rank) {
#pragma unroll
            for (int e = 0; e < 4; ++e) p[e] = own[e];
          } else {
            ld_shared_v4(buf + (u32)(((z * (NS / 4) + q) * CONSUMERS + tid) * 16), p[0], p[1],
                         p[2], p[3]);
          }
#pragma unroll
          for (int e = 0; e < 4; ++e) s[e] = z == 0 ? p[e] : s[e] + p[e];
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) acc.v[i0 + e] = s[e];
      }
    }
  }

  // --- The persistent schedule (SCHEDULE=2): one block runs many tiles -----------------------
  //
  // The barriers are set up once per block (`persistent_begin`) and torn down once
  // (`persistent_end`); between them every tile's `run_persistent` continues the pipeline where
  // the last one stopped, counting k tiles in `pipe` (slot = n % STAGES, phase = n / STAGES),
  // with no block barrier. The producer warp therefore runs into the next tile as soon as the
  // consumers release slots, and its first STAGES copies overlap the consumers' epilogue of the
  // previous tile. Needs the producer warp, and code around the call without block barriers or
  // shared memory (the code generator checks both). Under CLUSTER the blocks of a cluster run
  // the same sequence of tiles in lock step (neighbouring M tiles of one N tile: the code
  // generator's tile loop walks the tiles in whole clusters), sharing each B stage as `run`
  // does, and `persistent_begin` / `persistent_end` synchronize the cluster.

  /// Called by all threads before the first tile.
  PH_GEMM_DEV static void persistent_begin(void* smem, const void* tmA, const void* tmB) {
    static_assert(PRODUCER_WARP, "the persistent schedule needs the producer warp");
    const u32 base = (smem_u32(smem) + 1023u) & ~1023u;
    const u32 full0 = base + STAGES * STAGE_BYTES;
    const u32 empty0 = full0 + 8 * STAGES;
    fence_proxy_async();
    if (threadIdx.x == 0) {
      tma_prefetch_desc(tmA);
      tma_prefetch_desc(tmB);
#pragma unroll
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(full0 + 8 * s, 1);
        // One arrive per consumer warp of each block of the cluster.
        mbar_init(empty0 + 8 * s, CONSUMER_WARPS * CLUSTER);
      }
      fence_mbar_init();
    }
    // Under CLUSTER the other block's copies and arrives target these barriers.
    if (CLUSTER > 1)
      cluster_sync();
    else
      __syncthreads();
  }

  /// Called by all threads after the last tile: every copy was consumed, every MMA waited for.
  PH_GEMM_DEV static void persistent_end(void* smem) {
    const u32 base = (smem_u32(smem) + 1023u) & ~1023u;
    const u32 full0 = base + STAGES * STAGE_BYTES;
    const u32 empty0 = full0 + 8 * STAGES;
    // A C store through TMA (store_tile_tma) may still be in flight: the thread that issued
    // it waits for it to complete (a no-op without one).
    if (threadIdx.x % 128 == 0) bulk_wait<0>();
    // Under CLUSTER: no copy or arrive of the other block targets these barriers past this.
    if (CLUSTER > 1)
      cluster_sync();
    else
      __syncthreads();
    if (threadIdx.x == 0) {
#pragma unroll
      for (int s = 0; s < STAGES; ++s) {
        mbar_inval(full0 + 8 * s);
        mbar_inval(empty0 + 8 * s);
      }
    }
    __syncthreads();
  }

  /// One tile of the persistent schedule: `run`'s contract without its block barriers. `pipe`
  /// (the same variable in every call of a block, starting at 0) counts the k tiles the
  /// pipeline has carried so far; every thread advances it by the same amount.
  template <class Acc, class OA, class OB>
  PH_GEMM_DEV static void run_persistent(Acc& acc, const OA& A, const OB& B, const TmaDesc* tmA,
                                         const TmaDesc* tmB, int k0, int k1, unsigned char* smem,
                                         unsigned& pipe) {
    if (!A.ok || !B.ok) return;  // uniform (under CLUSTER: literal true, as for `run`)
    const int KT = k1 > k0 ? (k1 - k0 + BK - 1) / BK : 0;
    if (KT == 0) return;  // uniform (under CLUSTER: the same k range in both blocks)
    // A cluster's block past the last M tile reads a real A tile; its C store is masked.
    const int m0 = CLUSTER > 1 && A.mn0 >= A.mn_dim ? 0 : A.mn0;
    // SHARE_A: a block past the last N tile copies no B (the C store is masked).
    const bool b_live = !SHARE_A || B.mn0 < B.mn_dim;
    const int tid = threadIdx.x;
    const u32 base = (smem_u32(smem) + 1023u) & ~1023u;
    const u32 full0 = base + STAGES * STAGE_BYTES;
    const u32 empty0 = full0 + 8 * STAGES;
    const unsigned n0 = pipe;
    pipe += (unsigned)KT;
    if (tid >= CONSUMERS) {
      if (tid == CONSUMERS) {
#pragma unroll 1
        for (int t = 0; t < KT; ++t) {
          const unsigned n = n0 + (unsigned)t;
          const int s = (int)(n % STAGES);
          // Wait until the consumers released use n - STAGES of this slot.
          if (n >= (unsigned)STAGES) mbar_wait(empty0 + 8 * s, ((n / STAGES) - 1) & 1);
          produce(base + s * STAGE_BYTES, full0 + 8 * s, tmA, tmB, m0, B.mn0, k0 + t * BK, b_live);
        }
      }
      __syncwarp();
      return;
    }
    const int g = tid / 128;
    const int wm = g % WG_M, wn = g / WG_M;
    const int lane = tid & 31;
#pragma unroll 1
    for (int t = 0; t < KT; ++t) {
      const unsigned n = n0 + (unsigned)t;
      const int s = (int)(n % STAGES);
      mbar_wait(full0 + 8 * s, (n / STAGES) & 1);
      if (RELEASE_OWN) {
        // This k tile's MMAs are done: hand its own slot back before waiting for the next.
        mma_stage<Acc, 0>(acc, base + s * STAGE_BYTES, wm, wn);
        if (lane == 0) release(empty0 + 8 * s);
      } else {
        mma_stage(acc, base + s * STAGE_BYTES, wm, wn);
        // The previous k tile's MMAs are done: hand its slot back.
        if (t > 0 && lane == 0) release(empty0 + 8 * (int)((n - 1) % STAGES));
      }
      __syncwarp();
    }
    if (!RELEASE_OWN) {
      wgmma_wait<0>();
      fence_acc(acc);
      // And the last one's, so that the producer can fill it for the next tile.
      if (lane == 0) release(empty0 + 8 * (int)((n0 + (unsigned)KT - 1) % STAGES));
      __syncwarp();
    }
  }
};

/// A store region narrowed to the columns [lo, lo + w) of its tile, shifted so that column
/// lo is the tile's column 0 (the slice `reduce_split_dsmem` leaves in the first registers).
template <class G>
PH_GEMM_DEV G narrow_cols(G g, int lo, int w) {
  const int end = g.c0 + lo + w;
  g.cn = g.cn < end ? g.cn : end;
  g.c0 += lo;
  return g;
}

#endif  // CUDA

}  // namespace sm90
}  // namespace gemm
}  // namespace ph
