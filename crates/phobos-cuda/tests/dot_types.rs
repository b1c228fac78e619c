//! Dots outside a GEMM loop of every tensor-core operand type (`phobos_mma_k.cuh`): tf32 (a
//! `tf32` operand or `@allow_tf32`), f8e4m3, f8e5m2, i8 and u8, and f16 with a K of no whole k
//! steps, in a kernel where they follow other statements, at ragged shapes. The plan's records
//! (which instruction, why not the others), a snapshot of the emitted dots, NVRTC compiles for
//! sm_80, sm_89 and sm_90a, and the GPU run against the interpreter (`#[ignore]`d):
//!
//! ```text
//! cargo test -p phobos-cuda --release --test dot_types -- --ignored --nocapture
//! ```

mod common;

use common::cases::{build, Case};
use common::dot_kernels::{kernel, typed, FLOAT_DOTS};
use common::gpu_run::run_all;
use phobos_cuda::{EmitOptions, MmaInstr, NoMma, NoWgmma};
use phobos_gpu::Gpu;
use phobos_syntax::SourceFile;

/// Every operand type runs on mma.sync with its own instruction on sm_80+ (fp8 on sm_89+), a K
/// of no whole k steps padded; the records say why not wgmma, and why FFMA where it is.
#[test]
fn records_name_the_instruction_of_each_type() {
    for (text, types, ty) in typed() {
        for kd in [44, 64] {
            let k = kernel(&text, types, &format!("R=32 KD={kd} THREADS=128"));
            for arch in [75, 80, 89, 90] {
                let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), arch).unwrap();
                assert!(!e.dots.is_empty(), "{types}");
                assert!(e.dots.iter().all(|d| e.notes.contains(&d.to_string())));
                for d in &e.dots {
                    assert_eq!(d.k, kd);
                    if arch < 80 {
                        assert_eq!(d.lowering, Err(NoMma::Arch(arch)), "{types}");
                        continue;
                    }
                    if arch < ty.min_cc() {
                        assert_eq!(d.lowering, Err(NoMma::Fp8Arch(arch)), "{types}");
                        assert!(d.to_string().contains("no fp8 mma.sync"), "{d}");
                        continue;
                    }
                    assert!(d.lowering.is_ok(), "{types} KD={kd} sm_{arch}: {d}");
                    assert_eq!(d.operands, Some(ty), "{types}");
                    let note = d.to_string();
                    assert!(
                        note.contains(&format!("mma.sync m16n8k{}", ty.k())),
                        "{note}"
                    );
                    let padded = ty.padded_k(kd) != kd;
                    assert_eq!(note.contains("padded to"), padded, "{note}");
                    let why = match d.instr {
                        Some(MmaInstr::MmaSync(why)) => why,
                        other => panic!("{types} KD={kd} sm_{arch}: {other:?}"),
                    };
                    // 32 rows over 4 warps: 2 x 2 warps, no whole warpgroup of 16-row warps
                    // (tests/dot_wgmma_k.rs has the shapes that take wgmma).
                    if arch != 90 {
                        assert_eq!(why, NoWgmma::Arch(arch));
                    } else {
                        let rows = NoWgmma::WarpRows {
                            rows: 16,
                            warps_n: 2,
                        };
                        assert_eq!(why, rows, "{types} KD={kd}");
                    }
                    assert_eq!(d.wgmma, None);
                }
                let staged = e.source.contains("ph::mma_dot_k<");
                assert_eq!(
                    staged,
                    arch >= ty.min_cc() && !ty.direct(kd),
                    "{types} KD={kd} sm_{arch}"
                );
            }
        }
    }
    // Exact f32 stays on FFMA.
    let k = kernel(FLOAT_DOTS, "T=f32", "R=32 KD=44 THREADS=128");
    let e = phobos_cuda::emit(&k, &EmitOptions::default()).unwrap();
    assert!(e
        .dots
        .iter()
        .all(|d| d.lowering == Err(NoMma::OperandType(phobos_ir::DType::F32))));
    assert!(!e.source.contains("mma_dot"));
}

/// The emitted dots of an fp8 kernel with a padded K: both operands staged K-major (B of `dot`
/// transposed), m16n8k32 with f32 accumulators.
#[test]
fn fp8_dots_emit_k_major_staging() {
    let k = kernel(FLOAT_DOTS, "T=f8e4m3", "R=32 KD=44 THREADS=128");
    let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), 89).unwrap();
    let dots: Vec<&str> = e
        .source
        .lines()
        .filter(|l| l.contains("ph::mma_dot") || l.contains("using "))
        .map(str::trim)
        .collect();
    insta::assert_snapshot!(dots.join("\n"));
    // The note docs/language.md quotes.
    assert_eq!(
        e.dots[0].to_string(),
        "dot [32, 64]: tensor cores (mma.sync m16n8k32 e4m3, 2 x 2 warps, K 44 padded to 64); not wgmma: sm_89 has no wgmma (sm_90a)"
    );
    assert!(e
        .headers
        .iter()
        .any(|(n, _)| n == phobos_cuda::MMA_K_HEADER));
}

/// The points every case runs at: a padded K at 4 warps, whole k steps at 8 (a 64-row block).
const POINTS: [&str; 2] = ["R=32 KD=44 THREADS=128", "R=64 KD=64 THREADS=256"];

/// Every case, built for the GPU: checked, run on the interpreter at a ragged M, emitted for
/// sm_90a.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (text, types, _) in typed() {
        for (i, pins) in POINTS.iter().enumerate() {
            let k = kernel(&text, types, pins);
            let label = format!("{} {types} {pins}", k.name);
            let dims: Vec<(String, i64)> = [("M", 77 + 64 * i as i64), ("L", 70 + 30 * i as i64)]
                .into_iter()
                .filter(|(n, _)| k.dims.iter().any(|d| d.name == *n))
                .map(|(n, v)| (n.to_string(), v))
                .collect();
            let src = SourceFile::new("dots.ph", text.as_str());
            out.push(
                build(label, k, src, &dims, 20 + i as u64, false).unwrap_or_else(|e| panic!("{e}")),
            );
        }
    }
    out
}

/// Each instruction compiles (NVRTC and ptxas): tf32, i8 and u8 for sm_80, fp8 for sm_89,
/// every type for sm_90a. Needs NVRTC (`eval "$(scripts/cuda-tools.sh)"`); without it the test
/// says so and passes, except under CI=true where it fails.
#[test]
fn every_type_compiles_for_its_targets() {
    let mut jobs = Vec::new();
    let mut labels = Vec::new();
    for (text, types, ty) in typed() {
        for pins in POINTS {
            let k = kernel(&text, types, pins);
            for (cc, arch) in [
                (80, phobos_gpu::Arch::SM_80),
                (89, phobos_gpu::Arch::new(8, 9, false)),
                (90, phobos_gpu::Arch::SM_90A),
            ] {
                if cc < ty.min_cc() {
                    continue;
                }
                let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), cc).unwrap();
                assert!(
                    e.dots.iter().all(|d| d.operands == Some(ty)),
                    "{types} {pins} sm_{cc}"
                );
                let mut o = common::compile_options(&e);
                o.arch = arch;
                labels.push(format!("{types} {pins} sm_{cc}"));
                jobs.push((e.source, o));
            }
        }
    }
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    let errors: Vec<String> = labels
        .iter()
        .zip(&results)
        .zip(&jobs)
        .filter_map(|((l, r), (src, _))| r.as_ref().err().map(|e| format!("{l}\n{}\n{src}", e.log)))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
    assert_eq!(results.len(), 2 * (11 * 3 - 3));
}

/// Every case binds, runs on the interpreter to outputs that are not vacuous, and its dots run
/// on tensor cores (the GPU test below compares them).
#[test]
fn cases_build_offline() {
    let cases = cases();
    assert_eq!(cases.len(), 22);
    for c in &cases {
        assert!(c.emitted.source.contains("ph::mma_dot"), "{}", c.label);
        common::gpu_run::assert_not_vacuous(c);
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_dot_types_match_interpreter() {
    let gpu = Gpu::new(0).expect("a CUDA device");
    // The kernel's tolerance: TF32's for TF32 and fp8 dots, exact for the integer ones.
    let errors = run_all(&gpu, &cases(), &phobos_ir::walk::output_tolerance);
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}
