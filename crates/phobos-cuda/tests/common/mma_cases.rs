//! Dots outside a GEMM loop on tensor cores (`phobos_mma.cuh`): attention at points that take
//! each path (causal and not, K and V streamed one iteration ahead, P·V from registers, 4 or 8
//! warps, ragged N), a bf16 kernel whose dots take the staged path, the cross-warp row
//! reduction, replicated row stores and, for a shape no warp grid fits, FFMA beside mma.sync,
//! and a bf16 kernel with 64-element rows whose dots take wgmma on sm_90a. On sm_90a the
//! attention loops at 16 rows a warp overlap their dots (plan/overlap.rs): causal and not, head
//! dimension 64 and 128, f16 and bf16, ragged N.

use super::cases::{build, Case};
use phobos_syntax::SourceFile;

fn cases_of(
    src: &SourceFile,
    points: &[(&str, &[(&str, i64)])],
    seed: u64,
) -> Vec<Result<Case, String>> {
    typed_cases_of(src, None, points, seed)
}

pub fn typed_cases_of(
    src: &SourceFile,
    types: Option<&str>,
    points: &[(&str, &[(&str, i64)])],
    seed: u64,
) -> Vec<Result<Case, String>> {
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let mut cases = Vec::new();
    for (pins, dims) in points {
        let label = format!("{} {pins} {types:?} at {dims:?}", src.name);
        let variant = match info.variant(Some(pins), types, None) {
            Ok(v) => v,
            Err(e) => {
                cases.push(Err(format!("{label}: {e}")));
                continue;
            }
        };
        let mut k =
            phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"));
        let dims: Vec<(String, i64)> = dims.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        phobos_cuda::specialize_alignment(&mut k, &dims);
        cases.push(build(label, k, src.clone(), &dims, seed, false));
    }
    cases
}

pub fn mma_cases() -> Vec<Result<Case, String>> {
    let mut cases = cases_of(
        &super::source("examples/flash_attention.ph"),
        &[
            ("BR=64 BC=32 THREADS=256 CAUSAL=1", &[("BH", 3), ("N", 200)]),
            ("BR=128 BC=64 THREADS=256", &[("BH", 2), ("N", 300)]),
            ("BR=32 BC=32 THREADS=128 CAUSAL=1", &[("BH", 2), ("N", 77)]),
            ("BR=64 BC=128 THREADS=128", &[("BH", 1), ("N", 130)]),
            // Overlapped: two warpgroups, 128-column score tiles, causal.
            (
                "BR=128 BC=128 THREADS=256 CAUSAL=1",
                &[("BH", 2), ("N", 300)],
            ),
            ("BR=64 BC=64 THREADS=128 CAUSAL=1", &[("BH", 2), ("N", 130)]),
        ],
        7,
    );
    cases.extend(cases_of(
        &super::source("examples/attention_lse.ph"),
        &[("BR=64 BC=128 CAUSAL=1", &[("BH", 2), ("N", 300)])],
        10,
    ));
    // Head dimension 128, overlapped, f16 and bf16.
    let d128 = super::source("examples/flash_attention_d128.ph");
    cases.extend(typed_cases_of(
        &d128,
        Some("T=f16"),
        &[
            ("BR=128 BC=64 THREADS=256", &[("BH", 2), ("N", 300)]),
            (
                "BR=64 BC=128 THREADS=128 CAUSAL=1",
                &[("BH", 1), ("N", 130)],
            ),
        ],
        11,
    ));
    cases.extend(typed_cases_of(
        &d128,
        Some("T=bf16"),
        &[
            (
                "BR=128 BC=64 THREADS=256 CAUSAL=1",
                &[("BH", 2), ("N", 300)],
            ),
            ("BR=64 BC=64 THREADS=128", &[("BH", 2), ("N", 130)]),
            ("BR=128 BC=128 THREADS=256", &[("BH", 1), ("N", 200)]),
        ],
        12,
    ));
    let text = "\
@autotune(R in {32, 64}, C in {64}, THREADS in {128, 256})
@launch(THREADS)
kernel two_dots(
  Q: tensor<bf16>[M, 32], K: tensor<bf16>[C, 32], V: tensor<bf16>[C, 48],
  O: tensor<f32>[M, 48], S: tensor<f32>[M, 1]
) {
  let r = ctx.block.x * R
  let s = dot_t(Q[r :+ R, :], K[0 :+ C, :])
  let p = exp(s - rowmax(s))
  S[r :+ R, :] = rowsum(p)
  O[r :+ R, :] = dot(bf16(p), V[0 :+ C, :]) / rowsum(p)
}
";
    cases.extend(cases_of(
        &SourceFile::new("two_dots.ph", text),
        &[
            ("R=32 C=64 THREADS=256", &[("M", 77)]),
            ("R=64 C=64 THREADS=128", &[("M", 130)]),
            ("R=32 C=64 THREADS=128", &[("M", 50)]),
        ],
        8,
    ));
    // 64-element rows: every staged operand takes the swizzled form, so on sm_90a both dots
    // run as wgmma at 16 rows a warp (a register tile staged for P·V, V's two 64-column slabs
    // read N-major) and as mma.sync over the same form at 32.
    let text = "\
@autotune(R in {64, 128}, THREADS in {128, 256})
@launch(THREADS)
kernel wide_dots(
  Q: tensor<bf16>[M, 64], K: tensor<bf16>[64, 64], V: tensor<bf16>[64, 128], O: tensor<f32>[M, 128]
) {
  let r = ctx.block.x * R
  let s = dot_t(Q[r :+ R, :], K[0 :+ 64, :]) * 0.125
  let p = exp(s - rowmax(s))
  O[r :+ R, :] = dot(bf16(p), V[0 :+ 64, :]) / rowsum(p)
}
";
    cases.extend(cases_of(
        &SourceFile::new("wide_dots.ph", text),
        &[
            ("R=64 THREADS=128", &[("M", 77)]),
            ("R=128 THREADS=256", &[("M", 300)]),
            ("R=128 THREADS=128", &[("M", 130)]),
        ],
        9,
    ));
    cases
}
