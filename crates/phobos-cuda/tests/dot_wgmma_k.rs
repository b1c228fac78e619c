//! K-major staged dots outside a GEMM loop on wgmma (sm_90a, `phobos_wgmma_k.cuh`): tf32
//! (m64nNk8), e4m3 / e5m2 (m64nNk32, f32 accumulators), s8 / u8 (m64nNk32, s32 accumulators) and
//! f16 / bf16 with a K of no whole k steps, both operands staged K-major with K padded to whole
//! 128-byte lines, at shapes whose warps hold 16 whole rows (one and two warpgroups). The plan's
//! records, a snapshot of the emitted dots, NVRTC compiles whose PTX has the wgmma of each type
//! and no mma.sync, and the GPU run against the interpreter at ragged shapes (`#[ignore]`d):
//!
//! ```text
//! cargo test -p phobos-cuda --release --test dot_wgmma_k -- --ignored --nocapture
//! ```

mod common;

use common::cases::{build, Case};
use common::dot_kernels::{chained, kernel, typed, FLOAT_DOTS, INT_DOTS};
use common::gpu_run::run_all;
use phobos_cuda::{EmitOptions, MmaInstr, MmaType, NoWgmma, WgOperand, WgmmaForm};
use phobos_gpu::Gpu;
use phobos_syntax::SourceFile;

/// The points every case runs at: one warpgroup (64 rows over 4 warps) with K 44, two (128
/// rows over 8 warps) with K 200: K padded to one, two or several 128-byte lines; the knob
/// WGMMA_K pinned to 1 (the default, 0, keeps mma.sync).
const POINTS: [(&str, i64); 2] = [
    ("R=64 KD=44 THREADS=128 WGMMA_K=1", 44),
    ("R=128 KD=200 THREADS=256 WGMMA_K=1", 200),
];

/// (text, types, the operand type) of every case: the typed kernels and the chained dots.
fn all_cases() -> Vec<(String, &'static str, MmaType)> {
    let chain = chained()
        .into_iter()
        .map(|(t, ty, m)| (t.to_string(), ty, m));
    typed().into_iter().chain(chain).collect()
}

/// The PTX type suffix of each operand type's wgmma.
fn wgmma_ptx(ty: MmaType) -> String {
    let d = match ty {
        MmaType::S8 | MmaType::U8 => "s32",
        _ => "f32",
    };
    format!("k{}.{d}.{ty}.{ty}", ty.k())
}

/// On sm_90a every dot of every type takes wgmma with both operands K-major and K padded to
/// whole 128-byte lines; the note says so. On sm_80 / sm_89 the same dots stay on mma.sync.
#[test]
fn records_take_wgmma_for_every_type() {
    for (text, types, ty) in typed() {
        for (pins, kd) in POINTS {
            let k = kernel(&text, types, pins);
            let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), 90).unwrap();
            assert!(!e.dots.is_empty());
            for d in &e.dots {
                assert_eq!(d.instr, Some(MmaInstr::Wgmma), "{types} {pins}: {d}");
                let form = WgmmaForm {
                    ty,
                    a: WgOperand::KMajor,
                    b: WgOperand::KMajor,
                    k: ty.wgmma_padded_k(kd),
                };
                assert_eq!(d.wgmma, Some(form), "{types} {pins}");
                assert_eq!(form.k * ty.bytes() % 128, 0);
                assert!(form.k >= kd && form.k - kd < 128 / ty.bytes());
                let note = d.to_string();
                assert!(e.notes.contains(&note));
                assert!(
                    note.contains(&format!("wgmma m64n{}k{} {ty}", d.n, ty.k())),
                    "{note}"
                );
                assert!(note.contains("A and B K-major"), "{note}");
            }
            assert!(e.source.contains("ph::wg_dot_k<"), "{types} {pins}");
            assert!(!e.source.contains("ph::mma_dot_k<"), "{types} {pins}");
            for arch in [80, 89] {
                if arch < ty.min_cc() {
                    continue;
                }
                let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), arch).unwrap();
                for d in &e.dots {
                    assert_eq!(d.instr, Some(MmaInstr::MmaSync(NoWgmma::Arch(arch))));
                    assert_eq!(d.wgmma, None);
                }
                assert!(!e.source.contains("ph::wg_dot_k<"), "{types} sm_{arch}");
            }
        }
    }
}

/// The chained dots on sm_90a: the first (N = 48) on mma.sync, the second on wgmma with A from
/// the first's registers and only B staged (its rows in the k steps' order); on sm_89 both on
/// mma.sync with A staged.
#[test]
fn chained_dots_read_a_from_registers() {
    for (text, types, ty) in chained() {
        for (pins, _) in POINTS {
            let k = kernel(text, types, pins);
            let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), 90).unwrap();
            let [first, second] = &e.dots[..] else {
                panic!("{types}: {:?}", e.dots)
            };
            assert_eq!(
                first.instr,
                Some(MmaInstr::MmaSync(NoWgmma::Columns(48))),
                "{types} {pins}"
            );
            let form = WgmmaForm {
                ty,
                a: WgOperand::Registers,
                b: WgOperand::KMajor,
                k: ty.wgmma_padded_k(48),
            };
            assert_eq!(second.instr, Some(MmaInstr::Wgmma), "{types} {pins}");
            assert_eq!(second.wgmma, Some(form), "{types} {pins}");
            assert!(second.to_string().contains("A from registers"), "{second}");
            assert!(e.source.contains("ph::wg_dot_k_ra<false"), "{types} {pins}");
            let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), 89).unwrap();
            assert!(!e.source.contains("ph::wg_dot_k"), "{types} {pins}");
        }
    }
}

/// Without WGMMA_K=1 the same dots stay on mma.sync (the default), and the record says why.
#[test]
fn the_default_keeps_mma_sync() {
    for (text, types, _) in all_cases() {
        let k = kernel(&text, types, "R=64 KD=44 THREADS=128 WGMMA_K=0");
        let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), 90).unwrap();
        let last = e.dots.last().unwrap();
        assert_eq!(
            last.instr,
            Some(MmaInstr::MmaSync(NoWgmma::Knob)),
            "{types}"
        );
        assert!(last.to_string().contains("WGMMA_K is not 1"), "{last}");
        assert!(!e.source.contains("ph::wg_dot_k"), "{types}");
        let unpinned = kernel(&text, types, "R=64 KD=44 THREADS=128");
        let d = phobos_cuda::emit_for_arch(&unpinned, &EmitOptions::default(), 90).unwrap();
        assert_eq!(d.source, e.source, "{types}: the unpinned knob is 0");
    }
}

/// A block of 64 rows over 8 warps gives each warp a column half: mma.sync, and the record says
/// why.
#[test]
fn warp_columns_keep_mma_sync() {
    let k = kernel(INT_DOTS, "T=i8", "R=64 KD=44 THREADS=256 WGMMA_K=1");
    let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), 90).unwrap();
    let rows = NoWgmma::WarpRows {
        rows: 16,
        warps_n: 2,
    };
    assert!(e
        .dots
        .iter()
        .all(|d| d.instr == Some(MmaInstr::MmaSync(rows)) && d.wgmma.is_none()));
    assert!(e.source.contains("ph::mma_dot_k<") && !e.source.contains("ph::wg_dot_k<"));
}

/// The emitted dots of a tf32 kernel with a padded K: both operands staged K-major (B of `dot`
/// transposed), m64nNk8 on one warpgroup.
#[test]
fn tf32_dots_emit_wgmma_staging() {
    let k = kernel(FLOAT_DOTS, "T=tf32", POINTS[0].0);
    let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), 90).unwrap();
    let dots: Vec<&str> = e
        .source
        .lines()
        .filter(|l| l.contains("ph::wg_dot") || l.contains("using "))
        .map(str::trim)
        .collect();
    insta::assert_snapshot!(dots.join("\n"));
    assert_eq!(
        e.dots[0].to_string(),
        "dot [64, 64]: tensor cores (wgmma m64n64k8 tf32, A and B K-major in shared memory, 1 warpgroups, K 44 padded to 64)"
    );
    for h in [phobos_cuda::WGMMA_K_HEADER, phobos_cuda::WGMMA_INT_HEADER] {
        assert!(e.headers.iter().any(|(n, _)| n == h), "{h}");
    }
}

/// Each case compiles for sm_90a (NVRTC and ptxas), and its PTX has the wgmma of its type and no
/// mma.sync. Needs NVRTC (`eval "$(scripts/cuda-tools.sh)"`); without it the test says so and
/// passes, except under CI=true where it fails.
#[test]
fn every_type_compiles_to_wgmma() {
    let mut jobs = Vec::new();
    let mut labels = Vec::new();
    for (text, types, ty) in all_cases() {
        for (pins, _) in POINTS {
            let k = kernel(&text, types, pins);
            let e = phobos_cuda::emit_for_arch(&k, &EmitOptions::default(), 90).unwrap();
            let mut o = common::compile_options(&e);
            o.arch = phobos_gpu::Arch::SM_90A;
            labels.push((format!("{types} {pins}"), ty));
            jobs.push((e.source, o));
        }
    }
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    assert_eq!(results.len(), 2 * all_cases().len());
    let mut errors = Vec::new();
    for (((label, ty), r), (src, _)) in labels.iter().zip(&results).zip(&jobs) {
        match r {
            Err(e) => errors.push(format!("{label}\n{}\n{src}", e.log)),
            Ok(c) => {
                let want = wgmma_ptx(*ty);
                let wgmma = c
                    .ptx
                    .lines()
                    .filter(|l| l.contains("wgmma.mma_async") && l.contains(&want))
                    .count();
                // The chained kernels' first dot (N = 48) stays on mma.sync.
                let chained = src.contains("ph::wg_dot_k_ra<");
                if wgmma == 0 || (c.ptx.contains("mma.sync") && !chained) {
                    errors.push(format!(
                        "{label}: {wgmma} wgmma {want}, mma.sync in the PTX"
                    ));
                }
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}

/// Every case, built for the GPU: checked, run on the interpreter at a ragged M (and L), emitted
/// for sm_90a.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (text, types, _) in all_cases() {
        for (i, (pins, _)) in POINTS.iter().enumerate() {
            let k = kernel(&text, types, pins);
            let label = format!("{} {types} {pins}", k.name);
            let dims: Vec<(String, i64)> = [("M", 77 + 128 * i as i64), ("L", 70 + 30 * i as i64)]
                .into_iter()
                .filter(|(n, _)| k.dims.iter().any(|d| d.name == *n))
                .map(|(n, v)| (n.to_string(), v))
                .collect();
            let src = SourceFile::new("dots.ph", text.as_str());
            out.push(
                build(label, k, src, &dims, 40 + i as u64, false).unwrap_or_else(|e| panic!("{e}")),
            );
        }
    }
    out
}

/// Every case binds, runs on the interpreter to outputs that are not vacuous, and its dots take
/// wgmma (the chained kernels' second; the GPU test below compares them).
#[test]
fn cases_build_offline() {
    let cases = cases();
    assert_eq!(cases.len(), 2 * all_cases().len());
    for c in &cases {
        assert!(c.emitted.source.contains("ph::wg_dot_k"), "{}", c.label);
        let wgmma = c
            .emitted
            .dots
            .iter()
            .filter(|d| d.instr == Some(MmaInstr::Wgmma));
        assert!(wgmma.count() >= 1, "{}", c.label);
        common::gpu_run::assert_not_vacuous(c);
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_wgmma_k_dots_match_interpreter() {
    let gpu = Gpu::new(0).expect("a CUDA device");
    // The kernel's tolerance: TF32's for TF32 and fp8 dots, exact for the integer ones.
    let errors = run_all(&gpu, &cases(), &phobos_ir::walk::output_tolerance);
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}
