//! Masks skipped on the tiles that need none (plan/masks.rs): which `where` statements the plan
//! puts under a block-uniform test (typed records, rendered among the notes), the code each form
//! emits, and, on a GPU, attention at ragged N and causal (both paths of each test taken)
//! against the interpreter.

mod common;

use common::gpu_run::run_on_gpu;
use common::mma_cases::typed_cases_of;
use phobos_cuda::{emit_for_arch, EmitOptions, Emitted, MaskRecord};
use phobos_ir::{BinOp, ExprKind, Kernel};
use phobos_syntax::SourceFile;

fn kernel_at(path: &str, pins: &str) -> Kernel {
    common::kernels_at(path, pins, None).remove(0)
}

fn load(text: &str) -> Kernel {
    let module = phobos_check::load(SourceFile::new("t.ph", text))
        .unwrap_or_else(|d| panic!("{text}: {d:?}"));
    let info = &module.kernels[0];
    let variant = info.variant(None, None, None).unwrap();
    phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"))
}

/// A kernel whose loop over the 128-element tiles of a row runs `body` (which defines `y`).
fn kernel_text(body: &str) -> Kernel {
    let text = format!(
        "@launch(128)\nkernel masked(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {{\n  let row = ctx.block.x\n  for c in range(0, N, 128) {{\n    let cols = c + arange(128)\n    let x = X[row, c :+ 128]\n{body}\n    Y[row, c :+ 128] = y\n  }}\n}}\n"
    );
    load(&text)
}

fn emit(k: &Kernel) -> Emitted {
    emit_for_arch(k, &EmitOptions::default(), 90).unwrap_or_else(|e| panic!("{e}"))
}

/// The name of a bound side's base (a local, dim or parameter), or "" for none.
fn base_name(k: &Kernel, x: &phobos_cuda::Extent) -> String {
    match x.base.as_ref().map(|e| &e.kind) {
        Some(ExprKind::Local(l)) => k.locals[*l].name.clone(),
        Some(ExprKind::Dim(d)) => k.dims[*d].name.clone(),
        Some(ExprKind::Param(p)) => k.params[*p].name.clone(),
        Some(_) => "expr".into(),
        None => String::new(),
    }
}

/// Each record's bounds as (left base, left span, operator, right base, right span).
fn bounds(k: &Kernel, r: &MaskRecord) -> Vec<(String, i64, BinOp, String, i64)> {
    (r.bounds.iter())
        .map(|b| {
            let (l, rr) = (base_name(k, &b.lhs), base_name(k, &b.rhs));
            (l, b.lhs.span, b.op, rr, b.rhs.span)
        })
        .collect()
}

#[test]
fn attention_masks_are_skipped_on_interior_and_below_diagonal_tiles() {
    let k = kernel_at(
        "examples/flash_attention.ph",
        "BR=64 BC=64 THREADS=128 MIN_BLOCKS=3",
    );
    let e = emit(&k);
    // The causal mask's statement is there (under `if (false)`) at CAUSAL=0 too.
    assert_eq!(e.masks.len(), 2, "{:?}", e.masks);
    let r = &e.masks[0];
    assert!(r.keeps_local);
    assert_eq!(k.locals[r.local].name, "s");
    assert_eq!(
        bounds(&k, r),
        vec![("c".into(), 63, BinOp::Lt, "N".into(), 0)]
    );
    assert!(e.notes.contains(&r.to_string()), "{:?}", e.notes);
    assert!(r.to_string().contains("c + 63 < N"), "{r}");
    // The select runs only when the test fails.
    assert!(
        e.source
            .contains("if (!(((long long)(c) + 63LL) < (long long)(N)"),
        "{}",
        e.source
    );

    let k = kernel_at(
        "examples/flash_attention.ph",
        "BR=128 BC=64 THREADS=256 CAUSAL=1",
    );
    let e = emit(&k);
    assert_eq!(e.masks.len(), 2, "{:?}", e.masks);
    assert_eq!(
        bounds(&k, &e.masks[1]),
        vec![("c".into(), 63, BinOp::Le, "r".into(), 127)]
    );
    assert!(
        e.masks[1].to_string().contains("c + 63 <= r"),
        "{}",
        e.masks[1]
    );
    // The rows' largest index must fit an i32 as well.
    assert!(e
        .source
        .contains("((long long)(r) + 127LL) <= 2147483647LL"));
}

#[test]
fn a_where_into_another_local_takes_its_unmasked_value_on_full_tiles() {
    let k = kernel_text("    let y = where(cols < N && cols >= 1, x, 0.0)");
    let e = emit(&k);
    assert_eq!(e.masks.len(), 1, "{:?}", e.masks);
    let r = &e.masks[0];
    assert!(!r.keeps_local);
    assert_eq!(
        bounds(&k, r),
        vec![
            ("c".into(), 127, BinOp::Lt, "N".into(), 0),
            ("c".into(), 127, BinOp::Ge, "expr".into(), 0),
        ]
    );
    assert!(
        r.to_string().contains("replaced by its unmasked value"),
        "{r}"
    );
    assert!(r.to_string().contains("c + 127 < N && c >= 1"), "{r}");
    assert!(e.source.contains("} else {"), "{}", e.source);
}

#[test]
fn masks_that_are_not_index_comparisons_stay_per_element() {
    for body in [
        // A data-dependent condition.
        "    let y = where(x > 0.0, x, 0.0)",
        // Not an index plus a scalar.
        "    let y = where(cols * 2 < N, x, 0.0)",
        // A mutable scalar could change between its definition and the mask.
        "    var n = N\n    n = n - 1\n    let y = where(cols < n, x, 0.0)",
        // Equality is not a bound.
        "    let y = where(cols != N, x, 0.0)",
    ] {
        let e = emit(&kernel_text(body));
        assert!(e.masks.is_empty(), "{body}: {:?}", e.masks);
    }
    // Outside a loop a mask runs once: left as it is.
    let e = emit(&load(
        "@launch(128)\n@grid(cdiv(N, 128))\nkernel once(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  let c = ctx.block.x * 128\n  let cols = c + arange(128)\n  Y[c :+ 128] = where(cols < N, X[c :+ 128], 0.0)\n  let y = where(cols < N, X[c :+ 128], 1.0)\n  Y[c :+ 128] = y\n}\n",
    ));
    assert!(e.masks.is_empty(), "{:?}", e.masks);
}

/// Attention at the points the tuner picks, at N that leaves a ragged last tile (and one that
/// does not), causal and not, so that each block-uniform test takes both of its paths.
fn masked_attention_cases() -> Vec<common::cases::Case> {
    let fa = common::source("examples/flash_attention.ph");
    let d128 = common::source("examples/flash_attention_d128.ph");
    let mut out = Vec::new();
    out.extend(typed_cases_of(
        &fa,
        Some("T=f16"),
        &[
            (
                "BR=64 BC=64 THREADS=128 MIN_BLOCKS=3",
                &[("BH", 2), ("N", 300)],
            ),
            (
                "BR=64 BC=64 THREADS=128 MIN_BLOCKS=3 CAUSAL=1",
                &[("BH", 2), ("N", 300)],
            ),
            ("BR=128 BC=128 THREADS=256", &[("BH", 1), ("N", 256)]),
        ],
        31,
    ));
    out.extend(typed_cases_of(
        &fa,
        Some("T=bf16"),
        &[(
            "BR=64 BC=64 THREADS=128 MIN_BLOCKS=3 CAUSAL=1",
            &[("BH", 1), ("N", 193)],
        )],
        32,
    ));
    out.extend(typed_cases_of(
        &d128,
        Some("T=bf16"),
        &[
            ("BR=128 BC=64 THREADS=256", &[("BH", 2), ("N", 300)]),
            (
                "BR=128 BC=64 THREADS=256 CAUSAL=1",
                &[("BH", 2), ("N", 300)],
            ),
        ],
        33,
    ));
    out.into_iter()
        .map(|c| c.unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

#[test]
fn masked_attention_cases_build_offline() {
    let cases = masked_attention_cases();
    assert_eq!(cases.len(), 6);
    for c in &cases {
        // Both masks (`cols < N`, and the causal one, emitted at CAUSAL=0 under `if (false)`),
        // each under its test.
        assert_eq!(
            c.emitted.masks.len(),
            2,
            "{}: {:?}",
            c.label,
            c.emitted.masks
        );
        assert_eq!(
            c.emitted.source.matches("if (!(").count(),
            2,
            "{}",
            c.emitted.source
        );
    }
    // Each compiles (NVRTC, as the GPU would get it), when NVRTC is here.
    let jobs: Vec<_> = (cases.iter())
        .map(|c| {
            let opts = common::compile_options(&c.emitted);
            (c.emitted.source.clone(), opts)
        })
        .collect();
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    for (c, r) in cases.iter().zip(&results) {
        if let Err(e) = r {
            panic!("{}: {}\n{}", c.label, e.summary(), e.log);
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_masked_attention_matches_interpreter() {
    let gpu = phobos_gpu::Gpu::new(0).expect("a CUDA device");
    let mut errors = Vec::new();
    for c in &masked_attention_cases() {
        if let Err(e) = run_on_gpu(&gpu, c) {
            errors.push(format!("{}: {e}", c.label));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
