//! Attention's loop forms at the points the tuner picks: the P·V dot reads the f32 `p` of
//! `T(p)` straight from its registers in both the overlapped (OVERLAP=1) and the serial
//! (OVERLAP=0) loop (the A fragments' pack rounds it to `T` as the cast would), the wgmma
//! descriptors are built without the thread index (cuda/phobos_mma.cuh), and, on a GPU, every
//! form against the interpreter at ragged N, causal and not, f16 and bf16, head dimension 64 and
//! 128.

mod common;

use common::gpu_run::run_on_gpu;
use common::mma_cases::typed_cases_of;
use phobos_cuda::{emit_for_arch, EmitOptions, Emitted};

fn emitted(path: &str, pins: &str, types: &str) -> Emitted {
    let k = &common::kernels_at(path, pins, Some(types))[0];
    emit_for_arch(k, &EmitOptions::default(), 90).unwrap_or_else(|e| panic!("{pins}: {e}"))
}

const FA: &str = "examples/flash_attention.ph";
const D128: &str = "examples/flash_attention_d128.ph";

/// The source line of the P·V dot (the one `mma_dot_ra` of the loop body).
fn pv_dot(src: &str) -> &str {
    let at = src.find("ph::mma_dot_ra<").expect("a dot from registers");
    let end = at + src[at..].find('\n').unwrap();
    &src[at..end]
}

#[test]
fn the_serial_loop_packs_p_without_the_casts_round_trip() {
    for (path, pins, types, round) in [
        (
            FA,
            "BR=64 BC=128 THREADS=128 MIN_BLOCKS=3 OVERLAP=0",
            "T=f16",
            "ph::rn_f16(p.v",
        ),
        (
            FA,
            "BR=64 BC=128 THREADS=128 MIN_BLOCKS=1 OVERLAP=0 CAUSAL=1",
            "T=bf16",
            "ph::rn_bf16(p.v",
        ),
        (
            D128,
            "BR=64 BC=64 THREADS=128 OVERLAP=0",
            "T=bf16",
            "ph::rn_bf16(p.v",
        ),
    ] {
        let e = emitted(path, pins, types);
        let src = &e.source;
        assert!(!src.contains("wg_wait"), "{pins}: serial loop\n{src}");
        let dot = pv_dot(src);
        assert!(dot.contains("(acc, p, ph::stile<"), "{pins}: {dot}");
        assert!(!src.contains(round), "{pins}: a round trip of p\n{src}");
    }
}

#[test]
fn the_overlapped_loop_keeps_p_itself() {
    for (path, pins, types) in [
        (
            FA,
            "BR=64 BC=128 THREADS=128 MIN_BLOCKS=1 OVERLAP=1",
            "T=bf16",
        ),
        (D128, "BR=64 BC=64 THREADS=128 OVERLAP=1", "T=f16"),
    ] {
        let e = emitted(path, pins, types);
        let src = &e.source;
        assert!(src.contains("ph::wg_wait<1>(s)"), "{pins}\n{src}");
        let kept = src.find("ph_kept1 = p;").expect("the kept operand is p");
        assert!(pv_dot(src).contains("ph_kept1"), "{pins}");
        assert!(kept > src.find("ph::wg_wait<0>(acc)").unwrap(), "{pins}");
    }
}

#[test]
fn wgmma_descriptors_take_no_thread_index() {
    // The header's descriptor builders: a compile-time offset added to one start field a dot,
    // the warpgroup's first row a constant (one warpgroup) or lane 0's (__shfl_sync).
    let h = phobos_cuda::header_text(phobos_cuda::MMA_HEADER).expect("the mma header");
    let start = h
        .find("__device__ __forceinline__ unsigned wg_lo(")
        .unwrap();
    let end = h.find("// The accumulator's registers pinned").unwrap();
    let builders = &h[start..end];
    assert_eq!(builders.matches("threadIdx").count(), 1, "{builders}");
    assert!(builders.contains("__shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0)"));
    assert!(
        !h.contains("desc_sw128(base"),
        "per-step descriptors rebuilt from addresses"
    );
}

/// The forms at the tuner's winners and their neighbours: serial and overlapped loops, one or
/// two warpgroups, f16 and bf16, D=64 and 128, causal and not, N leaving a ragged last tile.
fn form_cases() -> Vec<common::cases::Case> {
    let fa = common::source(FA);
    let d128 = common::source(D128);
    let mut out = Vec::new();
    for (types, seed) in [("T=f16", 41), ("T=bf16", 42)] {
        out.extend(typed_cases_of(
            &fa,
            Some(types),
            &[
                (
                    "BR=64 BC=128 THREADS=128 MIN_BLOCKS=3 OVERLAP=0",
                    &[("BH", 2), ("N", 300)],
                ),
                (
                    "BR=64 BC=128 THREADS=128 MIN_BLOCKS=1 OVERLAP=1 CAUSAL=1",
                    &[("BH", 2), ("N", 300)],
                ),
                (
                    "BR=128 BC=128 THREADS=256 OVERLAP=0 CAUSAL=1",
                    &[("BH", 1), ("N", 257)],
                ),
            ],
            seed,
        ));
        out.extend(typed_cases_of(
            &d128,
            Some(types),
            &[
                (
                    "BR=64 BC=64 THREADS=128 OVERLAP=1",
                    &[("BH", 2), ("N", 200)],
                ),
                (
                    "BR=64 BC=64 THREADS=128 OVERLAP=0 CAUSAL=1",
                    &[("BH", 2), ("N", 200)],
                ),
                (
                    "BR=128 BC=64 THREADS=256 OVERLAP=1 CAUSAL=1",
                    &[("BH", 1), ("N", 193)],
                ),
            ],
            seed + 10,
        ));
    }
    out.into_iter()
        .map(|c| c.unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

#[test]
fn form_cases_build_offline() {
    let cases = form_cases();
    assert_eq!(cases.len(), 12);
    for c in &cases {
        assert!(
            c.emitted.source.contains("ph::mma_dot_ra<"),
            "{}: P·V from registers",
            c.label
        );
    }
    // Each compiles (NVRTC, as the GPU would get it), when NVRTC is here.
    let jobs: Vec<_> = (cases.iter())
        .map(|c| {
            (
                c.emitted.source.clone(),
                common::compile_options(&c.emitted),
            )
        })
        .collect();
    let results = phobos_gpu::compile_many(&jobs, 2);
    if let Some(Err(e)) = results.first() {
        if let phobos_gpu::CompileErrorKind::NvrtcNotFound(why) = &e.kind {
            assert!(
                std::env::var("CI").is_err(),
                "NVRTC is needed under CI: {why}"
            );
            return;
        }
    }
    for (c, r) in cases.iter().zip(&results) {
        if let Err(e) = r {
            panic!("{}: {}\n{}", c.label, e.summary(), e.log);
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_attention_forms_match_interpreter() {
    let gpu = phobos_gpu::Gpu::new(0).expect("a CUDA device");
    let mut errors = Vec::new();
    for c in &form_cases() {
        if let Err(e) = run_on_gpu(&gpu, c) {
            errors.push(format!("{}: {e}", c.label));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
