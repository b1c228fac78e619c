// Does a cluster's TMA multicast lower what L2 serves? (bench/NOTES.md v26)
//
// Every block of the launch pulls a stream of 128-byte-swizzled f16 boxes (BOX_ROWS rows of 64)
// out of an L2-resident tensor into a ring of shared-memory stages, through the copy engine,
// and its consumer warp only waits for each stage and hands it back: nothing but the copies
// runs. Blocks are paired (block 2p and 2p + 1 read the same boxes, as two M tiles of one N
// tile read the same B), and the pair either copies each box twice or shares it:
//
//   separate      no cluster; each block copies the whole box
//   cluster-own   clusters of two, each block copies the whole box for itself (no multicast),
//                 the pair's stages handed back in lock step (both consumers release both)
//   halves        clusters of two, each block copies half the box multicast into both
//                 (Phobos's CLUSTER=2)
//   rank0         clusters of two, rank 0 copies the whole box multicast into both, rank 1
//                 none (CLUSTER=3)
//   far           no cluster, each block copies the whole box, the pair half the grid apart
//   private       no cluster, no pair: every block its own boxes
//
// It prints, per mode, the bytes landed in shared memory a second and the bytes the copies name
// a second (a multicast box once). Under `ncu --metrics lts__t_bytes.sum` the same modes say
// what L2 served: a multicast box is counted once, and so are the coinciding copies of a pair
// of neighbouring blocks (bench/NOTES.md v26).
//
// nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Icrates/phobos-cuda/cuda \
//   bench/exp/multicast.cu -lcuda -o mc
// ./mc [stages] [box_rows] [iters]
// ./mc gemm [M N K [stages [hold]]]  (the copies alone of a GEMM's tiles: `pull_gemm`; each
//                                     stage held `hold` cycles before it is handed back;
//                                     TILE=192x128 for tiles of 192 rows, PROMOTION=0..3)
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gemm/ptx.cuh"

// The GEMM main loop's own wrappers (crates/phobos-cuda/cuda/gemm/ptx.cuh), so this loop issues
// exactly its instructions: the copies, the barriers, the remote hand-back.
using ph::gemm::cluster_rank;
using ph::gemm::cluster_sync;
using ph::gemm::mbar_arrive;
using ph::gemm::mbar_arrive_cluster;
using ph::gemm::mbar_arrive_expect_tx;
using ph::gemm::mbar_init;
using ph::gemm::mbar_wait;
using ph::gemm::smem_u32;
using ph::gemm::tma_load_2d;
using ph::gemm::tma_load_2d_multicast;
using ph::gemm::u32;

constexpr int MAX_STAGES = 16;

/// The ring's barriers, initialized by thread 0 and published to the block (or the cluster):
/// each full barrier takes the producer's one arrival, each empty one the consumer of every
/// block whose copies land in this block (both of a cluster of two; `users` of them in general).
__device__ void init_ring(unsigned long long* full, unsigned long long* empty, int stages,
                          bool clustered, int users = 0) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(smem_u32(&full[s]), 1);
      mbar_init(smem_u32(&empty[s]), users > 0 ? users : clustered ? 2 : 1);
    }
    ph::gemm::fence_mbar_init();
  }
  if (clustered) {
    cluster_sync();
  } else {
    __syncthreads();
  }
}

/// The consumer hands slot `bar` back: to its own block, or to both blocks of its cluster.
__device__ void hand_back(u32 bar, bool clustered) {
  if (clustered) {
    mbar_arrive_cluster(bar, 0);
    mbar_arrive_cluster(bar, 1);
  } else {
    mbar_arrive(bar);
  }
}

/// The start of the ring in dynamic shared memory, aligned for the 128-byte swizzle.
__device__ unsigned char* ring_base(unsigned char* raw) {
  return reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) &
                                          ~uintptr_t(1023));
}

enum Mode { SEPARATE = 0, CLUSTER_OWN = 1, HALVES = 2, RANK0 = 3, FAR = 4, PRIVATE = 5 };

/// Pair p's blocks read box `(p * 131 + i * 7) % boxes` at step i.
__global__ void __launch_bounds__(64) pull(const __grid_constant__ CUtensorMap whole,
                                           const __grid_constant__ CUtensorMap half, int mode,
                                           int stages, int box_rows, int boxes, int iters,
                                           unsigned long long* sink) {
  extern __shared__ __align__(1024) unsigned char raw[];
  __shared__ __align__(8) unsigned long long full[MAX_STAGES], empty[MAX_STAGES];
  unsigned char* ring = ring_base(raw);
  const u32 box_bytes = box_rows * 128;
  const bool clustered = mode == CLUSTER_OWN || mode == HALVES || mode == RANK0;
  const u32 rank = clustered ? cluster_rank() : 0;
  // FAR: the partner is half the grid away; PRIVATE: no partner, every block its own boxes.
  const int pair = mode == FAR ? blockIdx.x % (gridDim.x / 2)
                   : mode == PRIVATE ? blockIdx.x
                                     : blockIdx.x / 2;
  init_ring(full, empty, stages, clustered);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 0 && lane == 0) {
    for (int i = 0; i < iters; ++i) {
      const int s = i % stages;
      if (i >= stages) mbar_wait(smem_u32(&empty[s]), ((i / stages) - 1) & 1);
      const u32 bar = smem_u32(&full[s]);
      const u32 dst = smem_u32(ring + s * box_bytes);
      const int row = ((pair * 131 + i * 7) % boxes) * box_rows;
      mbar_arrive_expect_tx(bar, box_bytes);
      if (mode != HALVES && mode != RANK0) {
        tma_load_2d(dst, &whole, 0, row, bar);
      } else if (mode == HALVES) {
        tma_load_2d_multicast(dst + rank * (box_bytes / 2), &half, 0,
                              row + rank * (box_rows / 2), bar, 0b11);
      } else if (rank == 0) {
        tma_load_2d_multicast(dst, &whole, 0, row, bar, 0b11);
      }
    }
  } else if (warp == 1 && lane == 0) {
    unsigned long long acc = 0;
    for (int i = 0; i < iters; ++i) {
      const int s = i % stages;
      mbar_wait(smem_u32(&full[s]), (i / stages) & 1);
      acc += ring[s * box_bytes + (i % box_bytes)];
      hand_back(smem_u32(&empty[s]), clustered);
    }
    sink[blockIdx.x] = acc;
  }
  // No block leaves while its partner may still write into it or arrive on its barriers.
  if (clustered) {
    cluster_sync();
  }
}

/// `gemm`: the copies alone of a persistent GEMM's tiles (A row-major [M, K], K-major boxes of
/// BM rows; B row-major [K, N], three 64-column slabs of 64 k rows; 64-deep k steps), in the
/// GROUP_M=8 order: block b's j-th tile is b + j * blocks, and tiles 2q and 2q + 1 are
/// neighbouring M tiles of one N tile (they read the same B). Modes: `own` (no cluster, each
/// block copies its own A and B, so neighbours' B copies may coincide), `cluster-own` (clusters
/// of two on tiles 2q and 2q + 1 in lock step, each copying its own), `halves` (the same
/// clusters, each block copying half of every B slab's k rows multicast to both: the GEMM's
/// CLUSTER=2), `scrambled` (no cluster, tile t read as (37 t) mod tiles: neighbours on
/// different N tiles). bench/NOTES.md v28: `a-halves` (clusters of two on neighbouring N tiles
/// of one M tile, each copying half of A's box rows multicast to both, B its own: the GEMM's
/// CLUSTER=4) and `quad` (clusters of four on a 2x2 block of tiles: each copies half of its A
/// box multicast to the block of the same M tile, and half of each B slab's k rows to the block
/// of the same N tile, so each operand's requests are halved), both walking 1x2 or 2x2 blocks of
/// tiles in a GROUP_M=8 order.
enum GemmMode { G_OWN = 0, G_CLUSTER_OWN = 1, G_HALVES = 2, G_SCRAMBLED = 3, G_A_HALVES = 4, G_QUAD = 5 };
constexpr int G_MODES = 6;

/// Blocks a cluster of `mode` has.
__host__ __device__ inline int cluster_size(int mode) {
  return mode == G_QUAD ? 4 : (mode == G_CLUSTER_OWN || mode == G_HALVES || mode == G_A_HALVES) ? 2 : 1;
}

__device__ inline void tile_of(int t, int tiles_m, int tiles_n, int group_m, int& pm, int& pn) {
  const int in_group = group_m * tiles_n;
  const int first = (t / in_group) * group_m;
  const int size = min(tiles_m - first, group_m);
  pm = first + (t % in_group) % size;
  pn = (t % in_group) / size;
}

/// The consumer's step i: waits for its stage to land, reads a byte of it, and holds it `hold`
/// cycles (standing in for the MMAs that read the stage) before the caller hands it back.
__device__ inline int take_stage(unsigned long long* full, const unsigned char* ring, u32 stage_bytes,
                                 int i, int stages, long long hold, unsigned long long& acc) {
  const int s = i % stages;
  mbar_wait(smem_u32(&full[s]), (i / stages) & 1);
  acc += ring[s * stage_bytes + (i % stage_bytes)];
  const long long t0 = clock64();
  while (clock64() - t0 < hold) {
  }
  return s;
}

/// v28's modes: the copies of block `rank` of a cluster walking 1x2 (`a-halves`) or 2x2 (`quad`)
/// blocks of tiles, and who its consumer hands each slot back to.
__device__ void pull_blocks(const CUtensorMap* ta_half, const CUtensorMap* tb,
                            const CUtensorMap* tb_half, int mode, int stages, int tiles_m,
                            int tiles_n, int ksteps, int bm, int bn, long long hold,
                            unsigned char* ring, unsigned long long* full,
                            unsigned long long* empty, unsigned long long* sink) {
  const u32 stage_bytes = (bm + bn) * 128;
  const int csize = cluster_size(mode);
  const u32 rank = cluster_rank();
  const bool quad = mode == G_QUAD;
  // The block's place in its block of tiles: quad ranks 0..3 are (dm, dn) = (r & 1, r >> 1).
  const int su_m = quad ? 2 : 1, su_n = 2;
  const int dm = quad ? (int)(rank & 1) : 0, dn = quad ? (int)(rank >> 1) : (int)rank;
  const int stm = (tiles_m + su_m - 1) / su_m, stn = (tiles_n + su_n - 1) / su_n;
  const int supers = stm * stn;
  const int cluster = blockIdx.x / csize, clusters = gridDim.x / csize;
  // The blocks of the same M tile share A (mask_a), those of the same N tile B (mask_b).
  const unsigned short mask_a = quad ? (unsigned short)((1u << dm) | (1u << (dm + 2))) : 0b11;
  const unsigned short mask_b = (unsigned short)(0b11u << (2 * dn));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 0 && lane == 0) {
    int i = 0;
    for (int u = cluster; u < supers; u += clusters) {
      int um, un;
      tile_of(u, stm, stn, 8 / su_m, um, un);
      const int pm = um * su_m + dm, pn = un * su_n + dn;
      for (int ks = 0; ks < ksteps; ++ks, ++i) {
        const int s = i % stages;
        if (i >= stages) mbar_wait(smem_u32(&empty[s]), ((i / stages) - 1) & 1);
        const u32 bar = smem_u32(&full[s]);
        const u32 dst = smem_u32(ring + s * stage_bytes);
        mbar_arrive_expect_tx(bar, stage_bytes);
        // Half dn of the A box (bm / 2 rows), to the blocks of this M tile.
        tma_load_2d_multicast(dst + dn * (bm / 2) * 128, ta_half, ks * 64, pm * bm + dn * (bm / 2),
                              bar, mask_a);
        const u32 sb = dst + bm * 128;
        for (int sl = 0; sl < bn / 64; ++sl) {
          if (quad) {
            tma_load_2d_multicast(sb + sl * (64 * 128) + dm * (32 * 128), tb_half, pn * bn + sl * 64,
                                  ks * 64 + dm * 32, bar, mask_b);
          } else {
            tma_load_2d(sb + sl * (64 * 128), tb, pn * bn + sl * 64, ks * 64, bar);
          }
        }
      }
    }
  } else if (warp == 1 && lane == 0) {
    unsigned long long acc = 0;
    int i = 0;
    for (int u = cluster; u < supers; u += clusters) {
      for (int ks = 0; ks < ksteps; ++ks, ++i) {
        const int s = take_stage(full, ring, stage_bytes, i, stages, hold, acc);
        // Every block whose copies land here: itself and its partners.
        const u32 bar = smem_u32(&empty[s]);
        if (quad) {
          mbar_arrive_cluster(bar, rank);
          mbar_arrive_cluster(bar, rank ^ 1);
          mbar_arrive_cluster(bar, rank ^ 2);
        } else {
          hand_back(bar, true);
        }
      }
    }
    sink[blockIdx.x] = acc;
  }
  cluster_sync();
}

__global__ void __launch_bounds__(64) pull_gemm(const __grid_constant__ CUtensorMap ta,
                                                const __grid_constant__ CUtensorMap ta_half,
                                                const __grid_constant__ CUtensorMap tb,
                                                const __grid_constant__ CUtensorMap tb_half,
                                                int mode, int stages, int m, int n, int k,
                                                int bm, int bn, long long hold,
                                                unsigned long long* sink) {
  extern __shared__ __align__(1024) unsigned char raw[];
  __shared__ __align__(8) unsigned long long full[MAX_STAGES], empty[MAX_STAGES];
  unsigned char* ring = ring_base(raw);
  const u32 stage_bytes = (bm + bn) * 128;
  const int tiles_m = (m + bm - 1) / bm, tiles_n = (n + bn - 1) / bn;
  const int tiles = tiles_m * tiles_n, ksteps = (k + 63) / 64;
  if (mode == G_A_HALVES || mode == G_QUAD) {
    init_ring(full, empty, stages, true, mode == G_QUAD ? 3 : 2);
    pull_blocks(&ta_half, &tb, &tb_half, mode, stages, tiles_m, tiles_n, ksteps, bm, bn, hold, ring,
                full, empty, sink);
    return;
  }
  const bool clustered = mode == G_CLUSTER_OWN || mode == G_HALVES;
  const u32 rank = clustered ? cluster_rank() : 0;
  init_ring(full, empty, stages, clustered);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Clustered: cluster c's j-th pair of tiles is 2 (c + j * clusters) + rank.
  const int first = clustered ? 2 * (blockIdx.x / 2) + (int)rank : blockIdx.x;
  const int step = gridDim.x;
  if (warp == 0 && lane == 0) {
    int i = 0;
    for (int t0 = first; t0 < tiles; t0 += step) {
      const int t = mode == G_SCRAMBLED ? (t0 * 37) % tiles : t0;
      int pm, pn;
      tile_of(t, tiles_m, tiles_n, 8, pm, pn);
      for (int ks = 0; ks < ksteps; ++ks, ++i) {
        const int s = i % stages;
        if (i >= stages) mbar_wait(smem_u32(&empty[s]), ((i / stages) - 1) & 1);
        const u32 bar = smem_u32(&full[s]);
        const u32 dst = smem_u32(ring + s * stage_bytes);
        mbar_arrive_expect_tx(bar, stage_bytes);
        tma_load_2d(dst, &ta, ks * 64, pm * bm, bar);
        const u32 sb = dst + bm * 128;
        for (int sl = 0; sl < bn / 64; ++sl) {
          if (mode == G_HALVES) {
            tma_load_2d_multicast(sb + sl * (64 * 128) + rank * (32 * 128), &tb_half,
                                  pn * bn + sl * 64, ks * 64 + (int)rank * 32, bar, 0b11);
          } else {
            tma_load_2d(sb + sl * (64 * 128), &tb, pn * bn + sl * 64, ks * 64, bar);
          }
        }
      }
    }
  } else if (warp == 1 && lane == 0) {
    unsigned long long acc = 0;
    int i = 0;
    for (int t0 = first; t0 < tiles; t0 += step) {
      for (int ks = 0; ks < ksteps; ++ks, ++i) {
        const int s = take_stage(full, ring, stage_bytes, i, stages, hold, acc);
        hand_back(smem_u32(&empty[s]), clustered);
      }
    }
    sink[blockIdx.x] = acc;
  }
  if (clustered) {
    cluster_sync();
  }
}

#define CU(x)                                                            \
  do {                                                                   \
    CUresult r_ = (x);                                                   \
    if (r_ != CUDA_SUCCESS) {                                            \
      const char* s_;                                                    \
      cuGetErrorString(r_, &s_);                                         \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);    \
      exit(1);                                                           \
    }                                                                    \
  } while (0)
#define CK(x)                                                            \
  do {                                                                   \
    cudaError_t e_ = (x);                                                \
    if (e_ != cudaSuccess) {                                             \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,         \
              cudaGetErrorString(e_));                                   \
      exit(1);                                                           \
    }                                                                    \
  } while (0)

/// L2 promotion of every tensor map (`PROMOTION` in the environment: 0 none, 1 64 B, 2 128 B,
/// 3 256 B, the default).
static CUtensorMapL2promotion promotion() {
  const char* p = getenv("PROMOTION");
  return (CUtensorMapL2promotion)(p ? atoi(p) : 3);
}

static CUtensorMap map_2d(void* base, cuuint64_t inner, cuuint64_t outer, cuuint32_t box_inner,
                          cuuint32_t box_outer) {
  CUtensorMap m;
  cuuint64_t dims[2] = {inner, outer};
  cuuint64_t strides[1] = {inner * 2};
  cuuint32_t box[2] = {box_inner, box_outer};
  cuuint32_t elem[2] = {1, 1};
  CU(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, base, dims, strides, box,
                            elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            promotion(), CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return m;
}

static CUtensorMap box_map(void* base, int rows, int box_rows) {
  return map_2d(base, 64, rows, 64, box_rows);
}

/// `./mc gemm M N K [stages [hold]]`: the copies alone of 128x192x64 tiles (module comment);
/// TILE=192x128 in the environment for 192x128 tiles.
static int gemm_main(int argc, char** argv) {
  const int m = argc > 2 ? atoi(argv[2]) : 3000, n = argc > 3 ? atoi(argv[3]) : 2000;
  const int k = argc > 4 ? atoi(argv[4]) : 1000, stages = argc > 5 ? atoi(argv[5]) : 4;
  const long long hold = argc > 6 ? atoll(argv[6]) : 0;
  const char* tile = getenv("TILE");
  const bool tall = tile != nullptr && std::string(tile) == "192x128";
  const int bm = tall ? 192 : 128, bn = tall ? 128 : 192;
  if (stages < 2 || stages > MAX_STAGES || m < 1 || n < 1 || k < 1 || (k * 2) % 16 != 0 ||
      (n * 2) % 16 != 0) {
    fprintf(stderr, "stages in 2..16; K and N multiples of 8\n");
    return 2;
  }
  CK(cudaFree(nullptr));
  void *a, *b;
  CK(cudaMalloc(&a, (size_t)m * k * 2));
  CK(cudaMalloc(&b, (size_t)k * n * 2));
  CK(cudaMemset(a, 1, (size_t)m * k * 2));
  CK(cudaMemset(b, 1, (size_t)k * n * 2));
  unsigned long long* sink;
  CK(cudaMalloc(&sink, 4096 * sizeof(unsigned long long)));
  const CUtensorMap ta = map_2d(a, k, m, 64, bm);
  const CUtensorMap tah = map_2d(a, k, m, 64, bm / 2);
  const CUtensorMap tb = map_2d(b, n, k, 64, 64);
  const CUtensorMap tbh = map_2d(b, n, k, 64, 32);
  const int smem = stages * (bm + bn) * 128 + 1024;
  CK(cudaFuncSetAttribute(pull_gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 2;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(64);
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cfg.gridDim = dim3(264);
  int clusters = 0, per_sm = 0, sms = 0;
  CK(cudaOccupancyMaxActiveClusters(&clusters, pull_gemm, &cfg));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pull_gemm, 64, smem));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int tiles = ((m + bm - 1) / bm) * ((n + bn - 1) / bn), ksteps = (k + 63) / 64;
  const double landed = (double)tiles * ksteps * (bm + bn) * 128;
  printf("gemm copies %dx%dx%d, tiles %dx%dx64, %d stages, each held %lld cycles, L2 promotion "
         "%d: %d tiles, %d blocks at once, %d clusters of 2\n", m, n, k, bm, bn, stages, hold,
         (int)promotion(), tiles, per_sm * sms, clusters);
  printf("%-12s %10s %14s\n", "mode", "us", "landed TB/s");
  const char* names[G_MODES] = {"own", "cluster-own", "halves", "scrambled", "a-halves", "quad"};
  for (int mode = 0; mode < G_MODES; ++mode) {
    const int csize = cluster_size(mode);
    const bool clustered = csize > 1;
    if ((mode == G_CLUSTER_OWN || mode == G_HALVES) && tiles % 2 != 0) continue;
    attr[0].val.clusterDim.x = csize;
    cfg.numAttrs = 1;
    cfg.gridDim = dim3(264);
    int fit = 0;
    if (clustered) CK(cudaOccupancyMaxActiveClusters(&fit, pull_gemm, &cfg));
    cfg.gridDim = dim3(clustered ? csize * fit : per_sm * sms);
    cfg.numAttrs = clustered ? 1 : 0;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> times;
    for (int rep = 0; rep <= 20; ++rep) {
      CK(cudaEventRecord(e0));
      CK(cudaLaunchKernelEx(&cfg, pull_gemm, ta, tah, tb, tbh, mode, stages, m, n, k, bm, bn, hold,
                            sink));
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float t;
      CK(cudaEventElapsedTime(&t, e0, e1));
      if (rep > 0) times.push_back(t);
    }
    std::sort(times.begin(), times.end());
    const float ms = times[times.size() / 2];
    printf("%-12s %10.2f %14.2f\n", names[mode], ms * 1e3, landed / (ms * 1e-3) / 1e12);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "gemm") return gemm_main(argc, argv);
  const int stages = argc > 1 ? atoi(argv[1]) : 4;
  const int box_rows = argc > 2 ? atoi(argv[2]) : 192;
  const int iters = argc > 3 ? atoi(argv[3]) : 4000;
  const int boxes = 512;  // 512 boxes of 192 rows: 12 MB, inside L2
  if (stages < 2 || stages > MAX_STAGES || box_rows % 16 != 0 || box_rows > 256) {
    fprintf(stderr, "stages in 2..16, box_rows a multiple of 16 up to 256\n");
    return 2;
  }
  CK(cudaFree(nullptr));
  const int rows = boxes * box_rows;
  void* data;
  CK(cudaMalloc(&data, (size_t)rows * 128));
  CK(cudaMemset(data, 1, (size_t)rows * 128));
  unsigned long long* sink;
  CK(cudaMalloc(&sink, 4096 * sizeof(unsigned long long)));
  const CUtensorMap whole = box_map(data, rows, box_rows);
  const CUtensorMap half = box_map(data, rows, box_rows / 2);
  const int smem = stages * box_rows * 128 + 1024;
  CK(cudaFuncSetAttribute(pull, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(pull, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));

  // As many pairs as fit at once as clusters of two, the same count of blocks in every mode.
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 2;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(64);
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cfg.gridDim = dim3(264);
  int clusters = 0;
  CK(cudaOccupancyMaxActiveClusters(&clusters, pull, &cfg));
  const int blocks = 2 * clusters;
  printf("stages %d, box %d rows (%d KB), %d steps a block, %d blocks (%d clusters of 2 at once)\n",
         stages, box_rows, box_rows * 128 / 1024, iters, blocks, clusters);
  const char* names[6] = {"separate", "cluster-own", "halves", "rank0", "far", "private"};
  printf("%-12s %10s %14s %14s\n", "mode", "us", "landed TB/s", "issued TB/s");
  for (int mode = 0; mode < 6; ++mode) {
    cfg.gridDim = dim3(blocks);
    cfg.numAttrs = mode == CLUSTER_OWN || mode == HALVES || mode == RANK0 ? 1 : 0;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> times;
    for (int rep = 0; rep < 6; ++rep) {
      CK(cudaEventRecord(a));
      CK(cudaLaunchKernelEx(&cfg, pull, whole, half, mode, stages, box_rows, boxes, iters, sink));
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float ms;
      CK(cudaEventElapsedTime(&ms, a, b));
      if (rep > 0) times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    const double s = times[times.size() / 2] * 1e-3;
    const double landed = (double)blocks * iters * box_rows * 128;
    // The bytes the copies name: the pair's box twice, or once when multicast.
    const double asked = mode == HALVES || mode == RANK0 ? landed / 2 : landed;
    printf("%-12s %10.1f %14.2f %14.2f\n", names[mode], s * 1e6, landed / s / 1e12,
           asked / s / 1e12);
  }
  return 0;
}
