//! Differential cases of stores whose destination differs in shape from the value's rows: a
//! staged row stored to a row at another shift (ROW_SMEM=2's realigning store), and a transpose
//! stored into a region whose column stride is not 1 (the fused transposed stores' strided path).

use super::cases::{build, Case};
use phobos_syntax::SourceFile;

/// A transpose stored into a 3-axis tensor at a fixed last index: the tile's columns step by K
/// (a region whose column stride is K, not 1) while Y's rows are known unaligned (its outer
/// strides M K and K have no factor 4 at odd M and K), so the fused transposed stores
/// (VEC_COPY=1's shifted one, STORE_LINES=1's by lines) take their strided-region path
/// (`ph::transposed_from`, then the layout's element stores).
pub const STRIDED_TRANSPOSE: &str = "\
@autotune(VEC_COPY in {0, 1}, STORE_LINES in {0, 1})
@where(STORE_LINES == 0 || VEC_COPY == 0)
@launch(256)
@grid(cdiv(M, 64), cdiv(N, 32))
kernel strided(X: tensor<f32>[M, N], Y: tensor<f32>[N, M, K]) {
  let r = ctx.block.x * 64
  let c = ctx.block.y * 32
  let t = X[r :+ 64, c :+ 32]
  Y[c :+ 32, r :+ 64, 1] = transpose(t)
}
";

/// [`STRIDED_TRANSPOSE`] at `pins`, specialized on `dims` (M, N, K) as the tuner compiles it.
pub fn strided_transpose_kernel(pins: &str, dims: &[(String, i64)]) -> phobos_ir::Kernel {
    let src = SourceFile::new("strided.ph", STRIDED_TRANSPOSE);
    let dims: Vec<(&str, i64)> = dims.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    super::specialized_kernel(src, pins, None, &dims)
}

/// [`STRIDED_TRANSPOSE`] at both fused stores and neither: ragged tiles, K of 3 and 5 (Y's
/// elements at the other last indices are never written and stay as poisoned).
pub fn strided_transpose_cases() -> Vec<Result<Case, String>> {
    let src = SourceFile::new("strided.ph", STRIDED_TRANSPOSE);
    let mut cases = Vec::new();
    for pins in [
        "VEC_COPY=0 STORE_LINES=0",
        "VEC_COPY=1 STORE_LINES=0",
        "VEC_COPY=0 STORE_LINES=1",
    ] {
        for (m, n, k) in [(99, 77, 3), (33, 5, 5)] {
            let dims = [
                ("M".to_string(), m),
                ("N".to_string(), n),
                ("K".to_string(), k),
            ];
            let label = format!("strided transposed store, {pins} M={m} N={n} K={k}");
            let kernel = strided_transpose_kernel(pins, &dims);
            cases.push(build(label, kernel, src.clone(), &dims, 13, false));
        }
    }
    cases
}

/// ROW_SMEM=2's store to a row at another shift than the staged row's (Y one column wider, the
/// store from its column 1: Y's row r starts r + 1 elements further along than X's, modulo 8),
/// so some rows take the direct store (r = 7) and the rest the realigning one; bf16 and f16, a
/// row of many groups a thread and one of a few.
pub fn shifted_store_cases() -> Vec<Result<Case, String>> {
    let text = "\
@autotune(BLOCK in {8192, 57344}, THREADS in {256, 1024}, PACK in {4}, ROW_SMEM in {2})
@launch(THREADS)
@grid(M)
kernel shifted<T = f32>(X: tensor<T>[M, N], Y: tensor<T>[M, P]) {
  let r = ctx.block.x
  let x = where(arange(BLOCK) < N, X[r, 0 :+ BLOCK], -inf)
  let m = max(f32(x))
  Y[r, 1 :+ BLOCK] = T(exp(f32(x) - m))
}
";
    let src = SourceFile::new("shifted.ph", text);
    let mut cases = Vec::new();
    for (pins, types, n) in [
        ("BLOCK=57344 THREADS=1024", "T=bf16", 50257),
        ("BLOCK=8192 THREADS=256", "T=bf16", 1001),
        ("BLOCK=8192 THREADS=256", "T=f16", 1001),
    ] {
        let label = format!("shifted store, ROW_SMEM=2, {pins} {types} N={n}");
        // Not specialized (no dims): the rows' alignment is found at run time.
        let k = super::specialized_kernel(src.clone(), pins, Some(types), &[]);
        let dims = [
            ("M".to_string(), 9),
            ("N".to_string(), n),
            ("P".to_string(), n + 1),
        ];
        cases.push(build(label, k, src.clone(), &dims, 11, false));
    }
    cases
}
