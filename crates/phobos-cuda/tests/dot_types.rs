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

use common::cases::{build, Case, Value};
use phobos::backend::cuda::launch_facts;
use phobos_cuda::{EmitOptions, MmaInstr, MmaType, NoMma, NoWgmma};
use phobos_gpu::{bind_args, Arg, DeviceTensor, Gpu};
use phobos_ir::{relative_error, Kernel, ParamKind};
use phobos_syntax::SourceFile;

/// A dot of global tiles after an elementwise statement (B read as [K, N], staged transposed),
/// then a `dot_t` of a register tile: float operand types, f32 results.
const FLOAT_DOTS: &str = "\
@autotune(R in {32, 64}, KD in {44, 64}, THREADS in {128, 256})
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
const INT_DOTS: &str = "\
@autotune(R in {32, 64}, KD in {44, 64}, THREADS in {128, 256})
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
const LOOP_DOTS: &str = "\
@autotune(R in {32, 64}, KD in {44, 64}, THREADS in {128, 256})
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
fn allow_tf32_text() -> String {
    FLOAT_DOTS
        .replace(
            "kernel dot_after<T = f16>",
            "@allow_tf32\nkernel dot_after<T = f32>",
        )
        .replace("dot_after", "dot_after_allow_tf32")
}

fn kernel(text: &str, types: &str, pins: &str) -> Kernel {
    let module =
        phobos_check::load(SourceFile::new("dots.ph", text)).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(Some(pins), Some(types), None)
        .unwrap_or_else(|e| panic!("{types} {pins}: {e:?}"));
    phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"))
}

/// (text, types, the operand type) of every case.
fn typed() -> Vec<(String, &'static str, MmaType)> {
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
                    if arch != 90 {
                        assert_eq!(why, NoWgmma::Arch(arch));
                    } else if !matches!(ty, MmaType::F16 | MmaType::BF16) {
                        assert_eq!(why, NoWgmma::Operands(ty));
                    } else if padded {
                        assert_eq!(why, NoWgmma::InnerExtent(kd));
                    }
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
    let results = phobos_gpu::compile_many(&jobs, 2);
    if let Some(Err(e)) = results.first() {
        if let phobos_gpu::CompileErrorKind::NvrtcNotFound(why) = &e.kind {
            assert!(
                std::env::var("CI").is_err(),
                "NVRTC is needed under CI: {why}"
            );
            eprintln!("compile step skipped: NVRTC not found ({why})");
            return;
        }
    }
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
        for (id, t) in &c.expected {
            assert!(
                t.data.iter().any(|x| *x != 0.0 && !x.is_nan()),
                "{}: output {} is vacuous",
                c.label,
                c.kernel.params[*id].name
            );
        }
    }
}

/// Runs one case and compares every output with the interpreter's at the kernel's tolerance
/// (TF32's for TF32 and fp8 dots, exact for the integer ones).
fn run_on_gpu(gpu: &Gpu, c: &Case) -> Result<(), String> {
    let e = &c.emitted;
    let compiled = phobos_gpu::compile(&e.source, &common::compile_options(e))
        .map_err(|err| format!("compile: {}\n{}", err.summary(), err.log))?;
    let module = gpu
        .load_compiled(&compiled)
        .map_err(|err| format!("load: {err}"))?;
    let func = module
        .function(&e.entry)
        .map_err(|err| format!("function: {err}"))?;
    let mut tensors: Vec<Option<DeviceTensor>> = Vec::new();
    for (p, v) in c.kernel.params.iter().zip(&c.args) {
        tensors.push(match (&p.kind, v) {
            (ParamKind::Tensor { order, .. }, Value::Tensor(t)) => {
                Some(DeviceTensor::upload(gpu, t, *order).map_err(|err| format!("upload: {err}"))?)
            }
            _ => None,
        });
    }
    let args: Vec<Arg<'_>> = tensors
        .iter()
        .zip(&c.args)
        .map(|(t, v)| match (t, v) {
            (Some(t), _) => t.arg(),
            (None, Value::Scalar(x)) => Arg::Scalar(*x),
            (None, Value::Tensor(_)) => Arg::Scalar(0.0),
        })
        .collect();
    let bound = bind_args(&c.kernel, &args).map_err(|err| format!("bind: {err}"))?;
    let prepared = gpu
        .prepare_launch(&c.kernel, bound, &args, &launch_facts(e))
        .map_err(|err| format!("prepare: {err}"))?;
    gpu.launch_prepared(&func, &prepared, e.dynamic_smem_bytes)
        .map_err(|err| format!("launch: {err}"))?;
    gpu.synchronize().map_err(|err| format!("run: {err}"))?;
    for (id, want) in &c.expected {
        let t = tensors[*id]
            .as_ref()
            .ok_or("an output that is not a tensor")?;
        let got = t.download().map_err(|err| format!("download: {err}"))?;
        let err = relative_error(&got.data, &want.data);
        let tol = phobos_ir::walk::output_tolerance(&c.kernel, t.dtype);
        if err > tol {
            let first = got
                .data
                .iter()
                .zip(&want.data)
                .position(|(g, w)| {
                    (g - w).abs() > tol * w.abs().max(1.0) || g.is_nan() != w.is_nan()
                })
                .unwrap_or(0);
            return Err(format!(
                "{}: relative error {err:.3e} > {tol:.1e}; first difference at flat index {first}: gpu {} vs reference {}",
                c.kernel.params[*id].name, got.data[first], want.data[first]
            ));
        }
    }
    Ok(())
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_dot_types_match_interpreter() {
    let gpu = Gpu::new(0).expect("a CUDA device");
    let mut errors = Vec::new();
    for c in &cases() {
        match run_on_gpu(&gpu, c) {
            Ok(()) => eprintln!("ok   {}", c.label),
            Err(e) => {
                eprintln!("FAIL {}: {e}", c.label);
                errors.push(format!(
                    "{}\n{e}\n--- generated CUDA ---\n{}",
                    c.label, c.emitted.source
                ));
                if gpu.is_poisoned() {
                    errors.push("the context faulted: later cases were not run".into());
                    break;
                }
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}
