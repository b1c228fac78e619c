//! Kernels with dots outside a GEMM loop of every tensor-core operand type (tests/dot_types.rs
//! on mma.sync, tests/dot_wgmma_k.rs on wgmma): the texts, and a kernel of one at a point.

use phobos_cuda::MmaType;
use phobos_ir::Kernel;
use phobos_syntax::SourceFile;

/// A dot of global tiles after an elementwise statement (B read as [K, N], staged transposed),
/// then a `dot_t` of a register tile: float operand types, f32 results.
pub const FLOAT_DOTS: &str = "\
@autotune(R in {32, 64, 128}, KD in {44, 64, 200}, THREADS in {128, 256}, WGMMA_K in {0, 1})
@launch(THREADS)
kernel dot_after<T = f16>(
  A: tensor<T>[M, KD], B: tensor<T>[KD, 64], W: tensor<T>[32, KD], X: tensor<f32>[M, 64],
  C: tensor<f32>[M, 64], D: tensor<f32>[M, 32]
) {
  let r = ctx.block.x * R
  let x = X[r :+ R, :] * 0.5
  C[r :+ R, :] = x + dot(A[r :+ R, :], B[0 :+ KD, :])
  let a = A[r :+ R, :]
  D[r :+ R, :] = dot_t(a, W[0 :+ 32, :]) - 1.0
}
";

/// The same for 8-bit integers: i32 results.
pub const INT_DOTS: &str = "\
@autotune(R in {32, 64, 128}, KD in {44, 64, 200}, THREADS in {128, 256}, WGMMA_K in {0, 1})
@launch(THREADS)
kernel idot_after<T = i8>(
  A: tensor<T>[M, KD], B: tensor<T>[KD, 64], W: tensor<T>[32, KD], X: tensor<i32>[M, 64],
  C: tensor<i32>[M, 64], D: tensor<i32>[M, 32]
) {
  let r = ctx.block.x * R
  let x = X[r :+ R, :] * 2
  C[r :+ R, :] = x + dot(A[r :+ R, :], B[0 :+ KD, :])
  let a = A[r :+ R, :]
  D[r :+ R, :] = dot_t(a, W[0 :+ 32, :]) - 1
}
";

/// A dot inside a loop (not a GEMM loop: the accumulator is scaled each iteration) over a tile
/// loaded once before it, B's rows past L read as zeros.
pub const LOOP_DOTS: &str = "\
@autotune(R in {32, 64, 128}, KD in {44, 64, 200}, THREADS in {128, 256}, WGMMA_K in {0, 1})
@launch(THREADS)
kernel loop_dots<T = f8e4m3>(A: tensor<T>[M, KD], B: tensor<T>[L, KD], C: tensor<f32>[M, 32]) {
  let r = ctx.block.x * R
  let a = A[r :+ R, :]
  var acc: tile<f32>[R, 32] = 0.0
  for c in range(0, L, 32) {
    acc = acc * 0.5 + dot_t(a, B[c :+ 32, :])
  }
  C[r :+ R, :] = acc
}
";

/// `@allow_tf32` over f32 operands.
pub fn allow_tf32_text() -> String {
    FLOAT_DOTS
        .replace(
            "kernel dot_after<T = f16>",
            "@allow_tf32\nkernel dot_after<T = f32>",
        )
        .replace("dot_after", "dot_after_allow_tf32")
}

/// The kernel of `text` at `types` and `pins`.
pub fn kernel(text: &str, types: &str, pins: &str) -> Kernel {
    let module =
        phobos_check::load(SourceFile::new("dots.ph", text)).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(Some(pins), Some(types), None)
        .unwrap_or_else(|e| panic!("{types} {pins}: {e:?}"));
    phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"))
}

/// (text, types, the operand type) of every case.
pub fn typed() -> Vec<(String, &'static str, MmaType)> {
    vec![
        (FLOAT_DOTS.to_string(), "T=f16", MmaType::F16),
        (FLOAT_DOTS.to_string(), "T=bf16", MmaType::BF16),
        (FLOAT_DOTS.to_string(), "T=tf32", MmaType::Tf32),
        (allow_tf32_text(), "T=f32", MmaType::Tf32),
        (FLOAT_DOTS.to_string(), "T=f8e4m3", MmaType::F8E4M3),
        (FLOAT_DOTS.to_string(), "T=f8e5m2", MmaType::F8E5M2),
        (INT_DOTS.to_string(), "T=i8", MmaType::S8),
        (INT_DOTS.to_string(), "T=u8", MmaType::U8),
        (LOOP_DOTS.to_string(), "T=f8e4m3", MmaType::F8E4M3),
        (LOOP_DOTS.to_string(), "T=tf32", MmaType::Tf32),
        (LOOP_DOTS.to_string(), "T=bf16", MmaType::BF16),
    ]
}

/// Two dots in a row: the first's result (48 columns: N no wgmma shape, mma.sync), scaled and
/// cast, is the A operand of the second, whose warps hold the same whole rows (wgmma with A from
/// registers on sm_90a; K = 48 is one and a half 8-bit k steps).
pub const CHAIN_DOTS: &str = "\
@autotune(R in {64, 128}, KD in {44, 200}, THREADS in {128, 256}, WGMMA_K in {0, 1})
@launch(THREADS)
kernel chain<T = tf32>(
  A: tensor<T>[M, KD], B: tensor<T>[48, KD], V: tensor<T>[48, 32], C: tensor<f32>[M, 32]
) {
  let r = ctx.block.x * R
  let s = dot_t(A[r :+ R, :], B[0 :+ 48, :])
  let p = T(s * 0.0625)
  C[r :+ R, :] = dot(p, V[0 :+ 48, :]) + 1.0
}
";

/// The same for 8-bit integers: i32 results, the first product wrapped into the operand type.
pub const INT_CHAIN_DOTS: &str = "\
@autotune(R in {64, 128}, KD in {44, 200}, THREADS in {128, 256}, WGMMA_K in {0, 1})
@launch(THREADS)
kernel ichain<T = i8>(
  A: tensor<T>[M, KD], B: tensor<T>[48, KD], V: tensor<T>[48, 32], C: tensor<i32>[M, 32]
) {
  let r = ctx.block.x * R
  let s = dot_t(A[r :+ R, :], B[0 :+ 48, :])
  let p = T(s % 100)
  C[r :+ R, :] = dot(p, V[0 :+ 48, :]) + 1
}
";

/// (text, types, the operand type) of every chained case.
pub fn chained() -> Vec<(&'static str, &'static str, MmaType)> {
    vec![
        (CHAIN_DOTS, "T=tf32", MmaType::Tf32),
        (CHAIN_DOTS, "T=f8e4m3", MmaType::F8E4M3),
        (CHAIN_DOTS, "T=f8e5m2", MmaType::F8E5M2),
        (INT_CHAIN_DOTS, "T=i8", MmaType::S8),
        (INT_CHAIN_DOTS, "T=u8", MmaType::U8),
    ]
}
