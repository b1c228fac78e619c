//! Differential cases of the fast GEMM main loops: gemm_typed at wgmma, mma.sync and FFMA
//! points in f16, bf16, tf32 and fp8, with GROUP_M and SPLIT_K, on ragged problems (M, N, K
//! not multiples of the tiles), each specialized on its problem's alignment as the hosts do.
//! Big problems are judged against a float64 host matmul of the same inputs (rounded once to
//! C's type); a few smaller ones against the interpreter, which computes the unsplit product.

use super::cases::{build, Case, Value};
use super::fast::{gemm_t_text, gemm_text};
use phobos_cuda::{emit, EmitOptions};
use phobos_interp::host::{random_tensor, shapes_for, tensor_seed};
use phobos_interp::{Args, Launch};
use phobos_ir::{HostTensor, Kernel, ParamKind};
use phobos_syntax::SourceFile;

/// One case: label, kernel text, types, dims, the strategy text its code must contain, and
/// whether the interpreter is the reference.
struct Spec {
    label: &'static str,
    text: String,
    types: &'static str,
    dims: [i64; 3],
    expect: &'static str,
    interp: bool,
}

fn at(m: u32, n: u32, k: u32, s: u32, extra: &str) -> String {
    format!("@autotune(TILE_M in [{m}], TILE_N in [{n}], TILE_K in [{k}], STAGES in [{s}]{extra})")
}

const RAGGED: [i64; 3] = [520, 392, 336];

fn specs() -> Vec<Spec> {
    let l256 = "@launch(256)";
    let scaled = |t: String| t.replace("= TC(acc)", "= TC(acc * 0.5)");
    vec![
        Spec { label: "sm90 f16 128x256x64 s4 -> f32", text: gemm_text(&at(128, 256, 64, 4, ""), l256), types: "TA=f16,TB=f16,TC=f32", dims: RAGGED, expect: "sm90::MainLoop<ph::gemm::F16, 128, 256, 64, 2, 1, 4", interp: false },
        Spec { label: "sm90 bf16 128x256x64 s4 -> bf16", text: gemm_text(&at(128, 256, 64, 4, ""), l256), types: "TA=bf16,TB=bf16,TC=bf16", dims: RAGGED, expect: "sm90::MainLoop<ph::gemm::BF16, 128, 256, 64", interp: false },
        Spec { label: "sm90 f16 128x256x64 s4 producer warp -> f16", text: gemm_text(&at(128, 256, 64, 4, ""), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: RAGGED, expect: ", true, false, true>", interp: false },
        Spec { label: "sm90 f16 128x128x64 s4 one warpgroup", text: gemm_text(&at(128, 128, 64, 4, ""), "@launch(128)"), types: "TA=f16,TB=f16,TC=f32", dims: RAGGED, expect: "sm90::MainLoop<ph::gemm::F16, 128, 128, 64, 1, 1, 4", interp: false },
        Spec { label: "sm90 f16 128x128x64 s3 GROUP_M=8", text: gemm_text(&at(128, 128, 64, 3, ", GROUP_M in [8]"), l256), types: "TA=f16,TB=f16,TC=f32", dims: [1032, 392, 336], expect: "swizzle_block(", interp: false },
        Spec { label: "sm90 bf16 128x128x64 s3 SPLIT_K=3", text: gemm_text(&at(128, 128, 64, 3, ", SPLIT_K in [3]"), l256), types: "TA=bf16,TB=bf16,TC=f32", dims: RAGGED, expect: "ph::atomic_add_tile(", interp: false },
        Spec { label: "sm90 f16 128x128x64 s3 SPLIT_K=4 scaled", text: scaled(gemm_text(&at(128, 128, 64, 3, ", SPLIT_K in [4]"), l256)), types: "TA=f16,TB=f16,TC=f32", dims: [200, 136, 1000], expect: "ph::atomic_add_tile(", interp: false },
        Spec { label: "sm90 tf32 128x128x32 s3 dot_t", text: gemm_t_text(&at(128, 128, 32, 3, "")), types: "TA=tf32,TB=tf32,TC=f32", dims: RAGGED, expect: "sm90::MainLoop<ph::gemm::TF32", interp: false },
        Spec { label: "sm90 e4m3 128x256x128 s4 dot_t", text: gemm_t_text(&at(128, 256, 128, 4, "")), types: "TA=f8e4m3,TB=f8e4m3,TC=f32", dims: RAGGED, expect: "sm90::MainLoop<ph::gemm::F8E4M3", interp: false },
        Spec { label: "sm90 e5m2 128x128x128 s3 dot_t -> f16", text: gemm_t_text(&at(128, 128, 128, 3, "")), types: "TA=f8e5m2,TB=f8e5m2,TC=f16", dims: RAGGED, expect: "sm90::MainLoop<ph::gemm::F8E5M2", interp: false },
        Spec { label: "sm80 f16 128x128x32 s4 (K = 340: 8-byte rows)", text: gemm_text(&at(128, 128, 32, 4, ""), l256), types: "TA=f16,TB=f16,TC=f32", dims: [520, 392, 340], expect: "sm80::MainLoop<ph::gemm::F16, 128, 128, 32, 2, 4, 4, true, false, 8, 16>", interp: false },
        Spec { label: "sm80 bf16 64x128x32 s3 (K = 340)", text: gemm_text(&at(64, 128, 32, 3, ""), "@launch(128)"), types: "TA=bf16,TB=bf16,TC=f32", dims: [520, 392, 340], expect: "sm80::MainLoop<ph::gemm::BF16, 64, 128, 32", interp: false },
        Spec { label: "ffma f32 128x128x8", text: gemm_text("@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [8])", l256), types: "TA=f32,TB=f32,TC=f32", dims: RAGGED, expect: "ffma::MainLoop<128, 128, 8, 2, 4, 8, 8, true, false, 4, 4, 2>", interp: false },
        Spec { label: "ffma f32 128x128x8 (K = 333: scalar loads of A)", text: gemm_text("@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [8])", l256), types: "TA=f32,TB=f32,TC=f32", dims: [520, 392, 333], expect: "ffma::MainLoop<128, 128, 8, 2, 4, 8, 8, true, false, 1, 4, 2>", interp: false },
        Spec { label: "ffma f32 128x256x16 (8x16 thread tile)", text: gemm_text("@autotune(TILE_M in [128], TILE_N in [256], TILE_K in [16])", l256), types: "TA=f32,TB=f32,TC=f32", dims: RAGGED, expect: "ffma::MainLoop<128, 256, 16, 2, 4, 8, 16, true, false, 4, 4, 2>", interp: false },
        Spec { label: "ffma f32 128x128x8 s3 (K = 333: scalar copies of A)", text: gemm_text(&at(128, 128, 8, 3, ""), l256), types: "TA=f32,TB=f32,TC=f32", dims: [520, 392, 333], expect: "ffma::MainLoop<128, 128, 8, 2, 4, 8, 8, true, false, 1, 4, 3>", interp: false },
        Spec { label: "ffma f32 128x64x16 s4 dot_t (interpreter)", text: gemm_t_text(&at(128, 64, 16, 4, "")), types: "TA=f32,TB=f32,TC=f32", dims: [264, 136, 212], expect: ", true, true, 4, 4, 4>", interp: true },
        Spec { label: "ffma f32 128x128x16 SPLIT_K=2 GROUP_M=4", text: gemm_text("@autotune(TILE_M in [128], TILE_N in [128], TILE_K in [16], GROUP_M in [4], SPLIT_K in [2])", l256), types: "TA=f32,TB=f32,TC=f32", dims: [1032, 392, 336], expect: "ph::atomic_add_tile(", interp: false },
        // Against the interpreter: the unsplit product equals the split one up to the order.
        Spec { label: "sm90 f16 128x128x64 s3 GROUP_M=8 SPLIT_K=2 (interpreter)", text: gemm_text(&at(128, 128, 64, 3, ", GROUP_M in [8], SPLIT_K in [2]"), l256), types: "TA=f16,TB=f16,TC=f32", dims: [264, 136, 208], expect: "ph::gemm::split_k_range(", interp: true },
        Spec { label: "sm90 bf16 128x256x64 s4 -> bf16 (interpreter)", text: gemm_text(&at(128, 256, 64, 4, ""), l256), types: "TA=bf16,TB=bf16,TC=bf16", dims: [136, 264, 80], expect: "sm90::MainLoop<ph::gemm::BF16", interp: true },
        // The persistent schedule (SCHEDULE=2, a producer warp): 32 x 9 = 288 tiles, more than
        // an H200 holds blocks of it at once, so blocks loop over tiles; then a small one
        // against the interpreter.
        Spec { label: "sm90 f16 128x256x64 s4 persistent -> f16", text: gemm_text(&at(128, 256, 64, 4, ", GROUP_M in [8], SCHEDULE in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [4000, 2056, 136], expect: "::run_persistent(", interp: false },
        Spec { label: "sm90 bf16 128x256x64 s4 persistent -> f32 (interpreter)", text: gemm_text(&at(128, 256, 64, 4, ", SCHEDULE in [2]"), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=f32", dims: [264, 520, 80], expect: "::run_persistent(", interp: true },
        // 128x192 tiles (three 64-column slabs of an N-major B; wgmma n192): 264 tiles of
        // 3000x2000, two per multiprocessor. Ragged here, and a small one against the
        // interpreter.
        Spec { label: "sm90 f16 128x192x64 s4 persistent -> f16", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [1000, 776, 200], expect: "sm90::MainLoop<ph::gemm::F16, 128, 192, 64, 2, 1, 4", interp: false },
        Spec { label: "sm90 bf16 128x192x64 s3 -> f32 (interpreter)", text: gemm_text(&at(128, 192, 64, 3, ""), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=f32", dims: [136, 200, 80], expect: "sm90::MainLoop<ph::gemm::BF16, 128, 192, 64", interp: true },
        // Five stages of 128x192 (the C store staged a third at a time), and clusters of two
        // under the persistent schedule: 23 M tiles (odd: the last pair's second block has no
        // tile) x 11 N tiles, 132 pairs, so clusters loop over pairs of tiles.
        Spec { label: "sm90 f16 128x192x64 s5 persistent -> f16", text: gemm_text(&at(128, 192, 64, 5, ", GROUP_M in [8], SCHEDULE in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [3000, 2000, 200], expect: "store_tile_tma<false, 3>(", interp: false },
        Spec { label: "sm90 f16 128x192x64 s4 persistent CLUSTER=2 GROUP_M=8 -> f16", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [2900, 2000, 200], expect: ", 4, true, false, true, 2>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 128x192x64 s5 persistent CLUSTER=2 -> f32", text: gemm_text(&at(128, 192, 64, 5, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f32", dims: [1000, 520, 256], expect: ", 5, true, false, true, 2>::run_persistent(", interp: false },
        Spec { label: "sm90 bf16 128x192x64 s5 persistent CLUSTER=2 -> bf16 (interpreter)", text: gemm_text(&at(128, 192, 64, 5, ", SCHEDULE in [2], CLUSTER in [2]"), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [264, 520, 80], expect: ", 5, true, false, true, 2>::run_persistent(", interp: true },
        // SCHEDULE=3: each stage's slot handed back when its own MMAs complete (RELEASE_OWN), at
        // both cluster sizes: 3000x2000 (24 x 11 tiles, ragged M and N), 23 M tiles (the last
        // pair's second tile past M), into f32, and odd M tiles against the interpreter.
        Spec { label: "sm90 f16 128x192x64 s4 persistent SCHEDULE=3 -> f16", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [3000, 2000, 200], expect: ", 4, true, false, true, 1, true>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 128x192x64 s4 persistent SCHEDULE=3 CLUSTER=2 GROUP_M=8 -> f16", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [2900, 2000, 200], expect: ", 4, true, false, true, 2, true>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 128x192x64 s4 persistent SCHEDULE=3 CLUSTER=2 -> f32", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f32", dims: [1000, 520, 256], expect: ", 4, true, false, true, 2, true>::run_persistent(", interp: false },
        Spec { label: "sm90 bf16 128x192x64 s3 persistent SCHEDULE=3 CLUSTER=2 -> bf16 (interpreter)", text: gemm_text(&at(128, 192, 64, 3, ", SCHEDULE in [3], CLUSTER in [2]"), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [264, 520, 80], expect: ", 3, true, false, true, 2, true>::run_persistent(", interp: true },
        // CLUSTER=3: clusters of two as CLUSTER=2, rank 0 copying each stage's whole B box
        // multicast to both (B_ONE_ISSUER): 3000x2000 (ragged M and N), 23 M tiles (the last
        // pair's second tile past M), into f32, under SCHEDULE=3 against the interpreter, and a
        // K-major B one block per tile pair.
        Spec { label: "sm90 f16 128x192x64 s4 persistent CLUSTER=3 GROUP_M=8 -> f16", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [3]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [3000, 2000, 200], expect: ", 4, true, false, true, 2, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 128x192x64 s4 persistent CLUSTER=3 GROUP_M=8 (23 M tiles) -> f16", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [3]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [2900, 2000, 200], expect: ", 4, true, false, true, 2, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 128x192x64 s4 persistent CLUSTER=3 -> f32", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [3]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f32", dims: [1000, 520, 256], expect: ", 4, true, false, true, 2, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 bf16 128x192x64 s3 persistent SCHEDULE=3 CLUSTER=3 -> bf16 (interpreter)", text: gemm_text(&at(128, 192, 64, 3, ", SCHEDULE in [3], CLUSTER in [3]"), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [264, 520, 80], expect: ", 3, true, false, true, 2, true, true>::run_persistent(", interp: true },
        Spec { label: "sm90 e4m3 128x256x128 s4 dot_t CLUSTER=3", text: gemm_t_text(&at(128, 256, 128, 4, ", CLUSTER in [3]")).replace("@launch(256)", "@launch(288)"), types: "TA=f8e4m3,TB=f8e4m3,TC=f32", dims: RAGGED, expect: ", true, true, true, 2, false, true>::run(", interp: false },
        // CLUSTER=4: clusters of two neighbouring N tiles of one M tile sharing A (SHARE_A),
        // persistent only: 3000x2000 (11 N tiles: the sixth pair's second tile past N copies no
        // B and stores nothing), 2900x2000 (23 M tiles), into f32 (3 N tiles), 4 N tiles (even:
        // no tile past N) under SCHEDULE=2, and odd N tiles against the interpreter.
        Spec { label: "sm90 f16 128x192x64 s4 persistent SCHEDULE=3 CLUSTER=4 GROUP_M=8 -> f16", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [4]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [3000, 2000, 200], expect: ", 4, true, false, true, 2, true, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 128x192x64 s4 persistent SCHEDULE=3 CLUSTER=4 GROUP_M=8 (23 M tiles) -> f16", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [4]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [2900, 2000, 200], expect: ", 4, true, false, true, 2, true, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 128x192x64 s4 persistent SCHEDULE=3 CLUSTER=4 -> f32", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [4]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f32", dims: [1000, 520, 256], expect: ", 4, true, false, true, 2, true, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 128x192x64 s4 persistent SCHEDULE=2 CLUSTER=4 (4 N tiles) -> f16", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [4]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [1000, 720, 256], expect: ", 4, true, false, true, 2, false, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 bf16 128x192x64 s3 persistent SCHEDULE=3 CLUSTER=4 -> bf16 (interpreter)", text: gemm_text(&at(128, 192, 64, 3, ", SCHEDULE in [3], CLUSTER in [4]"), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [264, 520, 80], expect: ", 3, true, false, true, 2, true, false, true>::run_persistent(", interp: true },
        // 192-row tiles, three consumer warpgroups beside the producer warp (416 threads): 3000x2000
        // in 16 x 16 tiles of 192x128 under SCHEDULE=3 in clusters of two N tiles sharing A
        // (ragged M and N; 16 N tiles, so no tile past N), 2900x2000 (the last M tile 20 rows
        // deep), 192x192 in clusters sharing B (11 N tiles), one block per tile into f32, and
        // against the interpreter.
        Spec { label: "sm90 f16 192x128x64 s4 persistent SCHEDULE=3 CLUSTER=4 GROUP_M=8 -> f16", text: gemm_text(&at(192, 128, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [4]"), "@launch(416)"), types: "TA=f16,TB=f16,TC=f16", dims: [3000, 2000, 200], expect: "sm90::MainLoop<ph::gemm::F16, 192, 128, 64, 3, 1, 4, true, false, true, 2, true, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 192x128x64 s4 persistent SCHEDULE=2 CLUSTER=4 GROUP_M=8 (2900 rows) -> f16", text: gemm_text(&at(192, 128, 64, 4, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [4]"), "@launch(416)"), types: "TA=f16,TB=f16,TC=f16", dims: [2900, 2000, 200], expect: "sm90::MainLoop<ph::gemm::F16, 192, 128, 64, 3, 1, 4, true, false, true, 2, false, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 bf16 192x192x64 s4 persistent CLUSTER=2 GROUP_M=8 -> bf16", text: gemm_text(&at(192, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [2]"), "@launch(416)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [3000, 2000, 200], expect: "sm90::MainLoop<ph::gemm::BF16, 192, 192, 64, 3, 1, 4, true, false, true, 2>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 192x128x64 s4 one block a tile -> f32", text: gemm_text(&at(192, 128, 64, 4, ""), "@launch(416)"), types: "TA=f16,TB=f16,TC=f32", dims: [1000, 520, 256], expect: "sm90::MainLoop<ph::gemm::F16, 192, 128, 64, 3, 1, 4, true, false, true>::run(", interp: false },
        Spec { label: "sm90 bf16 192x128x64 s3 persistent SCHEDULE=3 CLUSTER=4 -> bf16 (interpreter)", text: gemm_text(&at(192, 128, 64, 3, ", SCHEDULE in [3], CLUSTER in [4]"), "@launch(416)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [264, 520, 80], expect: "sm90::MainLoop<ph::gemm::BF16, 192, 128, 64, 3, 1, 3", interp: true },
        // CLUSTER=5: clusters of four N tiles of one M tile sharing A (each block copies 48 of
        // 192 rows of every A stage): 3000x2000 (16 N tiles, four clusters a row of M tiles),
        // 2900x1904 (15 N tiles: the last cluster's fourth block past N, its B not copied, its
        // C store masked), 128x192 tiles (11 N tiles) into f32, and against the interpreter.
        Spec { label: "sm90 f16 192x128x64 s4 persistent SCHEDULE=3 CLUSTER=5 GROUP_M=8 -> f16", text: gemm_text(&at(192, 128, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [5]"), "@launch(416)"), types: "TA=f16,TB=f16,TC=f16", dims: [3000, 2000, 200], expect: "sm90::MainLoop<ph::gemm::F16, 192, 128, 64, 3, 1, 4, true, false, true, 4, true, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 192x128x64 s4 persistent SCHEDULE=2 CLUSTER=5 GROUP_M=8 (15 N tiles) -> f16", text: gemm_text(&at(192, 128, 64, 4, ", GROUP_M in [8], SCHEDULE in [2], CLUSTER in [5]"), "@launch(416)"), types: "TA=f16,TB=f16,TC=f16", dims: [2900, 1904, 200], expect: "sm90::MainLoop<ph::gemm::F16, 192, 128, 64, 3, 1, 4, true, false, true, 4, false, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 f16 128x192x64 s4 persistent SCHEDULE=3 CLUSTER=5 -> f32", text: gemm_text(&at(128, 192, 64, 4, ", GROUP_M in [8], SCHEDULE in [3], CLUSTER in [5]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f32", dims: [1000, 2000, 256], expect: ", 4, true, false, true, 4, true, false, true>::run_persistent(", interp: false },
        Spec { label: "sm90 bf16 192x128x64 s3 persistent SCHEDULE=3 CLUSTER=5 -> bf16 (interpreter)", text: gemm_text(&at(192, 128, 64, 3, ", SCHEDULE in [3], CLUSTER in [5]"), "@launch(416)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [264, 520, 80], expect: "sm90::MainLoop<ph::gemm::BF16, 192, 128, 64, 3, 1, 3, true, false, true, 4, true, false, true>::run_persistent(", interp: true },
        // Clusters of two blocks sharing B (CLUSTER=2): odd M tile counts (9, 3, 5), so the
        // grid's x is rounded up and the last cluster's second block has no tile; N-major B
        // (slabs split between the blocks) and K-major B (rows split); a producer warp issuing
        // (clusters need it).
        Spec { label: "sm90 f16 128x256x64 s4 CLUSTER=2 GROUP_M=8 -> f16", text: gemm_text(&at(128, 256, 64, 4, ", GROUP_M in [8], CLUSTER in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [1100, 520, 336], expect: "__cluster_dims__(2, 1, 1)", interp: false },
        Spec { label: "sm90 bf16 128x256x64 s4 producer warp CLUSTER=2 -> f32 (interpreter)", text: gemm_text(&at(128, 256, 64, 4, ", CLUSTER in [2]"), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=f32", dims: [264, 520, 80], expect: ", true, false, true, 2>::run(", interp: true },
        Spec { label: "sm90 e4m3 128x256x128 s4 dot_t CLUSTER=2", text: gemm_t_text(&at(128, 256, 128, 4, ", CLUSTER in [2]")).replace("@launch(256)", "@launch(288)"), types: "TA=f8e4m3,TB=f8e4m3,TC=f32", dims: RAGGED, expect: ", true, true, true, 2>::run(", interp: false },
        Spec { label: "sm90 tf32 128x128x32 s3 dot_t CLUSTER=2 GROUP_M=4", text: gemm_t_text(&at(128, 128, 32, 3, ", GROUP_M in [4], CLUSTER in [2]")).replace("@launch(256)", "@launch(288)"), types: "TA=tf32,TB=tf32,TC=f32", dims: RAGGED, expect: "cluster_swizzle_block(", interp: false },
        // The C store through shared memory and TMA (at 128x256, 3 stages leave room for the
        // staged tile; at 128x128, 4 stages hold one block per multiprocessor either way):
        // ragged tiles (the copy engine clips the boxes), each C type, both schedules, clusters
        // (a padding block's boxes lie wholly outside C) and an elementwise epilogue.
        Spec { label: "sm90 f16 128x256x64 s3 persistent TMA store -> f16", text: gemm_text(&at(128, 256, 64, 3, ", GROUP_M in [8], SCHEDULE in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [4000, 2056, 136], expect: "store_tile_tma<false, 1>(", interp: false },
        Spec { label: "sm90 bf16 128x256x64 s3 persistent TMA store -> bf16 (interpreter)", text: gemm_text(&at(128, 256, 64, 3, ", SCHEDULE in [2]"), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [264, 520, 80], expect: "store_tile_tma<false, 1>(", interp: true },
        // Four stages: half the tile's boxes per round; an f32 C: a quarter.
        Spec { label: "sm90 f16 128x256x64 s4 persistent TMA store in 2 rounds -> f16", text: gemm_text(&at(128, 256, 64, 4, ", GROUP_M in [8], SCHEDULE in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [4000, 2056, 136], expect: "store_tile_tma<false, 2>(", interp: false },
        Spec { label: "sm90 bf16 128x256x64 s4 TMA store in 4 rounds -> f32 (interpreter)", text: gemm_text(&at(128, 256, 64, 4, ""), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=f32", dims: [264, 520, 80], expect: "store_tile_tma<true, 4>(", interp: true },
        Spec { label: "sm90 f16 128x256x64 s3 TMA store CLUSTER=2 -> f16", text: gemm_text(&at(128, 256, 64, 3, ", GROUP_M in [8], CLUSTER in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [1100, 520, 336], expect: "store_tile_tma<true, 1>(", interp: false },
        Spec { label: "sm90 e4m3 128x256x128 s3 dot_t persistent TMA store -> bf16", text: gemm_t_text(&at(128, 256, 128, 3, ", SCHEDULE in [2]")).replace("@launch(256)", "@launch(288)"), types: "TA=f8e4m3,TB=f8e4m3,TC=bf16", dims: RAGGED, expect: "store_tile_tma<false, 1>(", interp: false },
        Spec { label: "sm90 e4m3 128x256x128 s3 dot_t TMA store -> e4m3 (1-byte C)", text: gemm_t_text(&at(128, 256, 128, 3, "")), types: "TA=f8e4m3,TB=f8e4m3,TC=f8e4m3", dims: [520, 400, 336], expect: "store_tile_tma<true, 1>(", interp: false },
        Spec { label: "sm90 f16 128x128x64 s4 TMA store scaled -> f16", text: scaled(gemm_text(&at(128, 128, 64, 4, ""), l256)), types: "TA=f16,TB=f16,TC=f16", dims: RAGGED, expect: "store_tile_tma<true, 1>(", interp: false },
        Spec { label: "sm90 f16 128x128x64 s4 TMA store -> f32 (interpreter)", text: gemm_text(&at(128, 128, 64, 4, ""), l256), types: "TA=f16,TB=f16,TC=f32", dims: [136, 264, 80], expect: "store_tile_tma<true, 1>(", interp: true },
        // Unaligned problems keep mma.sync: narrower cp.async (K = 334, N = 390: 4-byte lines),
        // or register-staged element loads where a leading dimension is odd (K = 333 for A,
        // N = 777 or 45 for B), every element outside the operand zero.
        Spec { label: "sm80 f16 128x256x64 N = 45: B register-staged (interpreter)", text: gemm_text(&at(128, 256, 64, 4, ""), l256), types: "TA=f16,TB=f16,TC=f32", dims: [77, 45, 72], expect: "sm80::MainLoop<ph::gemm::F16, 128, 256, 64, 2, 4, 4, true, false, 16, 2>", interp: true },
        Spec { label: "sm80 f16 128x128x32 s3 K = 334, N = 390: 4-byte cp.async", text: gemm_text(&at(128, 128, 32, 3, ""), l256), types: "TA=f16,TB=f16,TC=f32", dims: [520, 390, 334], expect: "sm80::MainLoop<ph::gemm::F16, 128, 128, 32, 2, 4, 3, true, false, 4, 4>", interp: false },
        Spec { label: "sm80 f16 128x128x32 s4 1000x777x333: both register-staged -> f16", text: gemm_text(&at(128, 128, 32, 4, ""), l256), types: "TA=f16,TB=f16,TC=f16", dims: [1000, 777, 333], expect: "sm80::MainLoop<ph::gemm::F16, 128, 128, 32, 2, 4, 4, true, false, 2, 2>", interp: false },
        Spec { label: "sm80 bf16 64x64x32 s3 odd K and N (interpreter)", text: gemm_text(&at(64, 64, 32, 3, ""), "@launch(128)"), types: "TA=bf16,TB=bf16,TC=f32", dims: [77, 45, 67], expect: "sm80::MainLoop<ph::gemm::BF16, 64, 64, 32, 2, 2, 3, true, false, 2, 2>", interp: true },
        Spec { label: "sm80 f16 64x128x32 s2 dot_t odd K: both K-major register-staged (interpreter)", text: gemm_t_text(&at(64, 128, 32, 2, "")).replace("@launch(256)", "@launch(128)"), types: "TA=f16,TB=f16,TC=f32", dims: [136, 200, 75], expect: ", true, true, 2, 2>", interp: true },
        Spec { label: "sm80 f16 64x64x32 s3 SPLIT_K=4 512x777x1001: register-staged, split", text: gemm_text(&at(64, 64, 32, 3, ", SPLIT_K in [4]"), "@launch(128)"), types: "TA=f16,TB=f16,TC=f32", dims: [512, 777, 1001], expect: "ph::atomic_add_tile(", interp: false },
        // VEC_COPY=1: operands aligned to 2 bytes by shifted 16-byte vectors (every shift 0..7
        // among A's rows at odd K and B's k rows at odd N; ragged M, N and K tiles; A aligned
        // and B shifted; both K-major; split K).
        Spec { label: "sm80 f16 64x64x32 s4 VEC_COPY=1 1000x777x333: both shifted -> f16", text: gemm_text(&at(64, 64, 32, 4, ", VEC_COPY in [1]"), l256), types: "TA=f16,TB=f16,TC=f16", dims: [1000, 777, 333], expect: ", true, false, 2, 2, 1>", interp: false },
        Spec { label: "sm80 f16 64x64x32 s4 VEC_COPY=1 1000x777x333: both shifted -> f32", text: gemm_text(&at(64, 64, 32, 4, ", VEC_COPY in [1]"), l256), types: "TA=f16,TB=f16,TC=f32", dims: [1000, 777, 333], expect: ", true, false, 2, 2, 1>", interp: false },
        Spec { label: "sm80 bf16 128x128x32 s4 VEC_COPY=1 1000x777x333: both shifted -> bf16", text: gemm_text(&at(128, 128, 32, 4, ", VEC_COPY in [1]"), l256), types: "TA=bf16,TB=bf16,TC=bf16", dims: [1000, 777, 333], expect: "sm80::MainLoop<ph::gemm::BF16, 128, 128, 32, 2, 4, 4, true, false, 2, 2, 1>", interp: false },
        Spec { label: "sm80 f16 64x64x32 s3 VEC_COPY=1 37x45x333: both shifted (interpreter)", text: gemm_text(&at(64, 64, 32, 3, ", VEC_COPY in [1]"), "@launch(128)"), types: "TA=f16,TB=f16,TC=f32", dims: [37, 45, 333], expect: ", true, false, 2, 2, 1>", interp: true },
        Spec { label: "sm80 bf16 64x64x32 s3 VEC_COPY=1 129x131x67: both shifted (interpreter)", text: gemm_text(&at(64, 64, 32, 3, ", VEC_COPY in [1]"), l256), types: "TA=bf16,TB=bf16,TC=f32", dims: [129, 131, 67], expect: ", true, false, 2, 2, 1>", interp: true },
        Spec { label: "sm80 f16 64x128x32 s3 VEC_COPY=1 130x45x72: A cp.async, B shifted -> f16 (interpreter)", text: gemm_text(&at(64, 128, 32, 3, ", VEC_COPY in [1]"), "@launch(128)"), types: "TA=f16,TB=f16,TC=f16", dims: [130, 45, 72], expect: ", true, false, 16, 2, 1>", interp: true },
        Spec { label: "sm80 f16 64x128x32 s2 dot_t VEC_COPY=1 odd K: both K-major shifted (interpreter)", text: gemm_t_text(&at(64, 128, 32, 2, ", VEC_COPY in [1]")).replace("@launch(256)", "@launch(128)"), types: "TA=f16,TB=f16,TC=f32", dims: [136, 200, 75], expect: ", true, true, 2, 2, 1>", interp: true },
        Spec { label: "sm80 f16 64x64x32 s3 SPLIT_K=4 VEC_COPY=1 512x777x1001: shifted, split", text: gemm_text(&at(64, 64, 32, 3, ", SPLIT_K in [4], VEC_COPY in [1]"), "@launch(128)"), types: "TA=f16,TB=f16,TC=f32", dims: [512, 777, 1001], expect: ", true, false, 2, 2, 1>", interp: false },
        // SPLIT_K into a 16-bit C: partial tiles through the f32 workspace, the last part of
        // each tile sums them and stores C once (ragged tiles, an uneven last part, GROUP_M).
        Spec { label: "sm90 f16 128x128x64 s3 SPLIT_K=3 -> f16: workspace", text: gemm_text(&at(128, 128, 64, 3, ", SPLIT_K in [3]"), l256), types: "TA=f16,TB=f16,TC=f16", dims: RAGGED, expect: "ph::split_arrive(", interp: false },
        Spec { label: "sm90 bf16 64x128x64 s4 SPLIT_K=4 GROUP_M=8 scaled -> bf16: workspace", text: scaled(gemm_text(&at(64, 128, 64, 4, ", GROUP_M in [8], SPLIT_K in [4]"), "@launch(128)")), types: "TA=bf16,TB=bf16,TC=bf16", dims: [520, 392, 4000], expect: "ph::split_arrive(", interp: false },
        Spec { label: "sm80 f16 64x64x32 s3 SPLIT_K=4 512x777x1001 -> f16: register-staged, workspace", text: gemm_text(&at(64, 64, 32, 3, ", SPLIT_K in [4]"), "@launch(128)"), types: "TA=f16,TB=f16,TC=f16", dims: [512, 777, 1001], expect: "ph::split_arrive(", interp: false },
        Spec { label: "sm80 f16 64x64x32 s2 SPLIT_K=2 odd K -> f16: workspace (interpreter)", text: gemm_text(&at(64, 64, 32, 2, ", SPLIT_K in [2]"), "@launch(128)"), types: "TA=f16,TB=f16,TC=f16", dims: [77, 45, 267], expect: "ph::split_arrive(", interp: true },
        // One consumer warpgroup and a producer warp (@launch(160)) on a deep ring: 12 stages
        // (more than the k tiles of a part at K = 80), SPLIT_K through the workspace with an
        // uneven last part, atomics into an f32 C, and against the interpreter.
        Spec { label: "sm90 f16 64x64x64 s12 producer warp, one warpgroup -> f32", text: gemm_text(&at(64, 64, 64, 12, ""), "@launch(160)"), types: "TA=f16,TB=f16,TC=f32", dims: RAGGED, expect: "sm90::MainLoop<ph::gemm::F16, 64, 64, 64, 1, 1, 12, true, false, true>", interp: false },
        Spec { label: "sm90 f16 64x64x64 s12 SPLIT_K=4 producer warp -> f16: workspace", text: gemm_text(&at(64, 64, 64, 12, ", SPLIT_K in [4]"), "@launch(160)"), types: "TA=f16,TB=f16,TC=f16", dims: [520, 392, 4000], expect: "ph::split_arrive(", interp: false },
        Spec { label: "sm90 bf16 64x128x64 s8 SPLIT_K=2 producer warp -> f32: atomics", text: gemm_text(&at(64, 128, 64, 8, ", SPLIT_K in [2]"), "@launch(160)"), types: "TA=bf16,TB=bf16,TC=f32", dims: [200, 136, 1000], expect: "ph::atomic_add_tile(", interp: false },
        Spec { label: "sm90 f16 64x64x64 s12 producer warp, K = 80 (interpreter)", text: gemm_text(&at(64, 64, 64, 12, ""), "@launch(160)"), types: "TA=f16,TB=f16,TC=f16", dims: [136, 200, 80], expect: ", 1, 1, 12, true, false, true>", interp: true },
        Spec { label: "sm90 bf16 64x64x64 s6 SPLIT_K=3 producer warp -> bf16: workspace (interpreter)", text: gemm_text(&at(64, 64, 64, 6, ", SPLIT_K in [3]"), "@launch(160)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [136, 136, 456], expect: "ph::split_arrive(", interp: true },
        // Clusters of two sharing B with SPLIT_K: 64-wide N-major B split by k rows, an odd
        // number of M tiles (the grid's x rounded up: a padding block with no partial tile),
        // through the workspace and with atomics; and against the interpreter.
        Spec { label: "sm90 f16 64x64x64 s12 CLUSTER=2 SPLIT_K=4 -> f16: workspace", text: gemm_text(&at(64, 64, 64, 12, ", SPLIT_K in [4], CLUSTER in [2]"), "@launch(160)"), types: "TA=f16,TB=f16,TC=f16", dims: [520, 392, 4000], expect: ", 1, 1, 12, true, false, true, 2>::run(", interp: false },
        Spec { label: "sm90 bf16 64x128x64 s8 CLUSTER=2 SPLIT_K=2 -> f32: atomics", text: gemm_text(&at(64, 128, 64, 8, ", SPLIT_K in [2], CLUSTER in [2]"), "@launch(160)"), types: "TA=bf16,TB=bf16,TC=f32", dims: [200, 392, 1000], expect: ", 1, 1, 8, true, false, true, 2>::run(", interp: false },
        Spec { label: "sm90 f16 64x64x64 s8 CLUSTER=2 SPLIT_K=2 -> f16 (interpreter)", text: gemm_text(&at(64, 64, 64, 8, ", SPLIT_K in [2], CLUSTER in [2]"), "@launch(160)"), types: "TA=f16,TB=f16,TC=f16", dims: [136, 136, 328], expect: ", 1, 1, 8, true, false, true, 2>::run(", interp: true },
        // Two consumer warpgroups and a producer warp (@launch(288)) split through the
        // workspace: 128-row tiles at 512x512x4096's shape (8 parts), the partial tiles and
        // the last part's sum in 8-byte pairs of columns (SPLIT_REDUCE=3); a 128x192 tile
        // overhanging N; clusters of two with the default element-wise workspace.
        Spec { label: "sm90 f16 128x128x64 s4 producer warp SPLIT_K=8 -> f16: workspace", text: gemm_text(&at(128, 128, 64, 4, ", SPLIT_K in [8], SPLIT_REDUCE in [3]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [520, 392, 4000], expect: "ph::split_arrive(", interp: false },
        Spec { label: "sm90 bf16 128x192x64 s3 producer warp SPLIT_K=3 -> bf16: workspace (interpreter)", text: gemm_text(&at(128, 192, 64, 3, ", SPLIT_K in [3], SPLIT_REDUCE in [3]"), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [136, 200, 456], expect: "ph::split_arrive(", interp: true },
        Spec { label: "sm90 f16 128x128x64 s4 producer warp CLUSTER=2 SPLIT_K=4 -> f16: workspace", text: gemm_text(&at(128, 128, 64, 4, ", SPLIT_K in [4], CLUSTER in [2]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [520, 392, 4000], expect: ", 2, 1, 4, true, false, true, 2>::run(", interp: false },
        // SPLIT_REDUCE=4: the parts of a tile in a cluster along z, reduced through
        // distributed shared memory, each storing TILE_N / SPLIT_K columns: 512x512x4096's
        // shape, ragged tiles whose last slices lie past N, parts with no k tile (K = 80).
        Spec { label: "sm90 f16 64x64x64 s8 SPLIT_K=2 -> f16: cluster reduce", text: gemm_text(&at(64, 64, 64, 8, ", SPLIT_K in [2], SPLIT_REDUCE in [4]"), "@launch(160)"), types: "TA=f16,TB=f16,TC=f16", dims: [512, 512, 4096], expect: "::reduce_split_dsmem<2>(", interp: false },
        Spec { label: "sm90 bf16 64x128x64 s6 SPLIT_K=4 -> bf16: cluster reduce", text: gemm_text(&at(64, 128, 64, 6, ", SPLIT_K in [4], SPLIT_REDUCE in [4]"), "@launch(160)"), types: "TA=bf16,TB=bf16,TC=bf16", dims: [130, 200, 1000], expect: "::reduce_split_dsmem<4>(", interp: false },
        Spec { label: "sm90 f16 64x128x64 s8 SPLIT_K=2 -> f16: cluster reduce", text: gemm_text(&at(64, 128, 64, 8, ", SPLIT_K in [2], SPLIT_REDUCE in [4]"), "@launch(160)"), types: "TA=f16,TB=f16,TC=f16", dims: [130, 200, 1000], expect: "::reduce_split_dsmem<2>(", interp: false },
        Spec { label: "sm90 bf16 64x64x64 s6 SPLIT_K=4 K = 80 -> f32: cluster reduce (interpreter)", text: gemm_text(&at(64, 64, 64, 6, ", SPLIT_K in [4], SPLIT_REDUCE in [4]"), "@launch(160)"), types: "TA=bf16,TB=bf16,TC=f32", dims: [130, 200, 80], expect: "::reduce_split_dsmem<4>(", interp: true },
        // The same reduction on two consumer warpgroups along M (@launch(288)): 128-row tiles
        // in 8 parts (512x512x4096's winner candidate) with N's last tile ragged, and a 128x192
        // tile whose parts store 48 columns each, into f32.
        Spec { label: "sm90 f16 128x128x64 s4 producer warp SPLIT_K=8 -> f16: cluster reduce", text: gemm_text(&at(128, 128, 64, 4, ", SPLIT_K in [8], SPLIT_REDUCE in [4]"), "@launch(288)"), types: "TA=f16,TB=f16,TC=f16", dims: [520, 392, 4000], expect: "::reduce_split_dsmem<8>(", interp: false },
        Spec { label: "sm90 bf16 128x192x64 s3 producer warp SPLIT_K=4 -> f32: cluster reduce (interpreter)", text: gemm_text(&at(128, 192, 64, 3, ", SPLIT_K in [4], SPLIT_REDUCE in [4]"), "@launch(288)"), types: "TA=bf16,TB=bf16,TC=f32", dims: [136, 200, 456], expect: "::reduce_split_dsmem<4>(", interp: true },
        Spec { label: "sm80 e4m3 128x128x64 s3 dot_t odd K: 1-byte loads", text: gemm_t_text(&at(128, 128, 64, 3, "")), types: "TA=f8e4m3,TB=f8e4m3,TC=f32", dims: [520, 392, 333], expect: "sm80::MainLoop<ph::gemm::F8E4M3, 128, 128, 64, 2, 4, 3, true, true, 1, 1>", interp: false },
    ]
}

/// `C = scale * A @ B` (`B` as `[N, K]` when `trans_b`) in float64, rounded to C's type.
fn matmul(a: &HostTensor, b: &HostTensor, trans_b: bool, scale: f64, c: &HostTensor) -> HostTensor {
    let (m, k) = (a.shape[0], a.shape[1]);
    let n = c.shape[1];
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for kk in 0..k {
                let bv = if trans_b {
                    b.data[j * k + kk]
                } else {
                    b.data[kk * n + j]
                };
                s += a.data[i * k + kk] * bv;
            }
            out[i * n + j] = scale * s;
        }
    }
    HostTensor::from_f64(c.dtype, &c.shape, &out)
}

fn case(s: &Spec) -> Result<Case, String> {
    let dims: Vec<(String, i64)> = ["M", "N", "K"]
        .iter()
        .zip(s.dims)
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    let label = format!("fast: {} {:?}", s.label, s.dims);
    let src = SourceFile::new("examples/gemm_typed.ph", s.text.clone());
    let module = phobos_check::load(src.clone()).map_err(|d| format!("{label}: {d:?}"))?;
    let info = &module.kernels[0];
    let variant = info
        .variant(None, Some(s.types), None)
        .map_err(|e| format!("{label}: {e}"))?;
    let mut k: Kernel = phobos_check::instantiate(&module, info, &variant)
        .map_err(|d| format!("{label}: {d:?}"))?;
    phobos_cuda::specialize_alignment(&mut k, &dims);
    let c = if s.interp {
        build(label.clone(), k, src, &dims, 11, false)?
    } else {
        host_case(
            label.clone(),
            k,
            src,
            &dims,
            s.text.contains("dot_t"),
            s.text.contains("acc * 0.5"),
        )?
    };
    if !c.emitted.source.contains(s.expect) {
        return Err(format!(
            "{label}: expected `{}` in the code\n{}",
            s.expect,
            c.emitted.notes.join("\n")
        ));
    }
    Ok(c)
}

/// A case whose reference is the float64 matmul.
fn host_case(
    label: String,
    kernel: Kernel,
    source: SourceFile,
    dims: &[(String, i64)],
    trans_b: bool,
    scaled: bool,
) -> Result<Case, String> {
    let shapes = shapes_for(&kernel, dims).map_err(|e| format!("{label}: {e}"))?;
    let mut tensors = Vec::new();
    let mut iargs = Args::new();
    for ((name, shape), p) in shapes.iter().zip(&kernel.params) {
        let ParamKind::Tensor { dtype, .. } = p.kind else {
            return Err(format!("{label}: gemm_typed takes tensors only"));
        };
        let mut t = random_tensor(dtype, shape, tensor_seed(5, name));
        if name == "C" {
            t.data.iter_mut().for_each(|x| *x = f64::NAN);
        }
        iargs = iargs.push(t.clone());
        tensors.push(t);
    }
    let launch = Launch::new(&kernel, iargs).map_err(|e| format!("{label}: {e}"))?;
    let (dims, grid) = (
        launch.dims().iter().map(|(_, v)| *v).collect(),
        launch.grid(),
    );
    let expected = if super::cases::selected(&label, super::cases::diff_only()) {
        vec![(
            2,
            matmul(
                &tensors[0],
                &tensors[1],
                trans_b,
                if scaled { 0.5 } else { 1.0 },
                &tensors[2],
            ),
        )]
    } else {
        Vec::new()
    };
    let emitted = emit(
        &kernel,
        &EmitOptions {
            source: Some(source),
        },
    )
    .map_err(|e| format!("{label}: {e}"))?;
    Ok(Case {
        label,
        kernel,
        emitted,
        args: tensors.into_iter().map(Value::Tensor).collect(),
        dims,
        grid,
        expected,
    })
}

/// Every fast case (errors are the cases that could not be built).
pub fn fast_cases() -> Vec<Result<Case, String>> {
    specs().iter().map(case).collect()
}

/// The float64 reference agrees with the interpreter on small problems (plain, `dot_t`, a
/// scaled epilogue, a narrow output), so the big cases are judged by the semantics.
pub fn reference_matches_interpreter() -> Result<(), String> {
    let at = at(128, 128, 64, 3, "");
    let texts = [
        (gemm_text(&at, "@launch(256)"), "TA=f16,TB=f16,TC=f32"),
        (gemm_t_text(&at), "TA=bf16,TB=bf16,TC=bf16"),
        (
            gemm_text(&at, "@launch(256)").replace("= TC(acc)", "= TC(acc * 0.5)"),
            "TA=f32,TB=f32,TC=f32",
        ),
    ];
    for (text, types) in texts {
        let dims: Vec<(String, i64)> = vec![("M".into(), 40), ("N".into(), 24), ("K".into(), 48)];
        let src = SourceFile::new("t.ph", text.clone());
        let module = phobos_check::load(src.clone()).map_err(|d| format!("{d:?}"))?;
        let info = &module.kernels[0];
        let variant = info
            .variant(None, Some(types), None)
            .map_err(|e| e.to_string())?;
        let k = phobos_check::instantiate(&module, info, &variant).map_err(|d| format!("{d:?}"))?;
        let interp = build("interp".into(), k.clone(), src.clone(), &dims, 5, false)?;
        let host = host_case(
            "host".into(),
            k,
            src,
            &dims,
            text.contains("dot_t"),
            text.contains("acc * 0.5"),
        )?;
        let (want, got) = (&interp.expected[0].1, &host.expected[0].1);
        let err = phobos_ir::relative_error(&got.data, &want.data);
        if err > want.dtype.tolerance() {
            return Err(format!("{types}: host reference off by {err:.3e}\n{text}"));
        }
    }
    Ok(())
}
