//! Masks skipped on the tiles that need none (plan/masks.rs): which `where` statements the plan
//! puts under a block-uniform test in loops and a per-thread test outside them (typed records,
//! rendered among the notes), the code each form emits, and, on a GPU, attention at ragged N and
//! causal (both paths of each test taken) against the interpreter.

mod common;

use common::gpu_run::run_all;
use common::mma_cases::typed_cases_of;
use phobos_cuda::{emit_for_arch, Axis, EmitOptions, Emitted, MaskRecord, MaskScope};
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
    // A store's `where` is no assignment: no record.
    let e = emit(&load(
        "@launch(128)\n@grid(cdiv(N, 128))\nkernel once(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  let c = ctx.block.x * 128\n  let cols = c + arange(128)\n  Y[c :+ 128] = where(cols < N, X[c :+ 128], 0.0)\n}\n",
    ));
    assert!(e.masks.is_empty(), "{:?}", e.masks);
}

/// A kernel outside any loop: `let y = <value>` over a `[R, C]` tile at `threads` threads.
fn once(threads: u32, r: i64, c: i64, value: &str) -> Kernel {
    load(&format!(
        "@launch({threads})\n@grid(cdiv(N, {c}))\nkernel once(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {{\n  let c = ctx.block.x * {c}\n  let cols = c + arange({c})\n  let rows = arange({r})[:, None]\n  let x = X[0 :+ {r}, c :+ {c}]\n  let y = {value}\n  Y[0 :+ {r}, c :+ {c}] = y\n}}\n"
    ))
}

/// Outside loops a mask runs once over a tile that may reach past the tensor: each thread
/// tests the extremes of the elements it holds (`ph::ThreadSpan`), takes the unmasked value,
/// and only the threads holding an element the test cannot vouch for run the select, in place.
#[test]
fn outside_loops_each_thread_tests_its_own_elements() {
    let k = once(128, 4, 128, "where(cols < N && rows < M, x, 1.0)");
    let e = emit(&k);
    assert_eq!(e.masks.len(), 1, "{:?}", e.masks);
    let r = &e.masks[0];
    assert_eq!(r.scope, MaskScope::Thread);
    assert!(!r.keeps_local);
    assert_eq!(k.locals[r.local].name, "y");
    assert_eq!(
        bounds(&k, r),
        vec![
            ("c".into(), 127, BinOp::Lt, "N".into(), 0),
            ("".into(), 3, BinOp::Lt, "M".into(), 0),
        ]
    );
    let axes: Vec<_> = r.bounds.iter().map(|b| b.lhs.axis).collect();
    assert_eq!(axes, vec![Some(Axis::Cols), Some(Axis::Rows)]);
    assert!(e.notes.contains(&r.to_string()), "{:?}", e.notes);
    assert!(
        r.to_string()
            .ends_with("in the threads whose every element has c + col < N && row < M"),
        "{r}"
    );
    let alias = e
        .source
        .lines()
        .find_map(|l| {
            l.strip_prefix("using ")?
                .split_once(" = ph::Blocked<4, 128,")
        })
        .map(|(a, _)| a.to_string())
        .unwrap_or_else(|| panic!("{}", e.source));
    // The unmasked value first, then the test and the select in place.
    let test = format!(
        "if (!(((long long)(c) + (long long)ph::ThreadSpan<{alias}>::col_hi()) < (long long)(N) && ((long long)(c) + 127LL) <= 2147483647LL && (long long)ph::ThreadSpan<{alias}>::row_hi() < (long long)(M))) {{"
    );
    let at = e
        .source
        .find(&test)
        .unwrap_or_else(|| panic!("{test}\n{}", e.source));
    let before = &e.source[..at];
    assert!(before.trim_end().ends_with("y = x;"), "{}", e.source);
    let after = &e.source[at..];
    assert!(after.contains(") y.v[ph_i] = 1.0f;\n  }"), "{}", e.source);

    // `y = where(cond, y, ..)` (the local kept) runs only the guarded select.
    let k = load(
        "@launch(128)\n@grid(cdiv(N, 128))\nkernel keep(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  let c = ctx.block.x * 128\n  var y = X[c :+ 128]\n  y = where(c + arange(128) < N, y, 0.0)\n  Y[c :+ 128] = y\n}\n",
    );
    let e = emit(&k);
    assert_eq!(e.masks.len(), 1, "{:?}", e.masks);
    assert!(e.masks[0].keeps_local);
    assert_eq!(e.masks[0].scope, MaskScope::Thread);
}

/// No per-thread record where the thread extremes are not constants of the layout, where the
/// index tile's axis is lost, or where the select in place would read the local it writes.
#[test]
fn per_thread_masks_need_constant_offsets_and_an_unread_local() {
    // A 40-column tile at 128 threads: the register step neither divides a row nor a row it.
    let e = emit(&once(128, 4, 40, "where(cols < N, x, 1.0)"));
    assert!(e.masks.is_empty(), "{:?}", e.masks);
    // The masked value reads the local.
    let k = load(
        "@launch(128)\n@grid(cdiv(N, 128))\nkernel self_read(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  let c = ctx.block.x * 128\n  var y = X[c :+ 128]\n  y = where(c + arange(128) < N, y + 1.0, y)\n  Y[c :+ 128] = y\n}\n",
    );
    let e = emit(&k);
    assert!(e.masks.is_empty(), "{:?}", e.masks);
    // An arange reshaped to a tile of another shape: its elements' places are not an axis.
    let e = emit(&once(
        128,
        4,
        32,
        "where(reshape(arange(128), [4, 32]) < N, x, 1.0)",
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
    compiles(&cases);
}

/// Compiles every case's kernel with NVRTC (a compile error panics with its label), when NVRTC
/// is here.
fn compiles(cases: &[common::cases::Case]) {
    let emitted: Vec<_> = cases.iter().map(|c| c.emitted.clone()).collect();
    let labels: Vec<_> = cases.iter().map(|c| c.label.clone()).collect();
    common::compiled(&emitted, &labels);
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_masked_attention_matches_interpreter() {
    let gpu = phobos_gpu::Gpu::new(0).expect("a CUDA device");
    let errors = run_all(
        &gpu,
        &masked_attention_cases(),
        &phobos_ir::walk::output_tolerance,
    );
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The per-thread masks at ragged shapes, so that in each launch some threads pass their test
/// and some run the select: a `[4, 128]` tile masked by columns and rows (3 rows: a warp of
/// each block holds only the padding row; 300 columns: the last block's threads straddle N),
/// the local kept (`y = where(.., y, ..)`), and a 2-row tile of 256 columns in bf16 (the
/// masked value -inf, as softmax.ph's).
fn thread_mask_cases() -> Vec<common::cases::Case> {
    let texts = [
        (
            "thread masks: cols and rows",
            "@launch(128)\n@grid(cdiv(N, 128))\nkernel once(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {\n  let c = ctx.block.x * 128\n  let cols = c + arange(128)\n  let rows = arange(4)[:, None]\n  let x = X[0 :+ 4, c :+ 128]\n  let y = where(cols < N && rows < M, x, 1.0)\n  Y[0 :+ 4, c :+ 128] = y + 1.0\n}\n",
            vec![("M", 3), ("N", 300)],
        ),
        (
            "thread masks: the local kept",
            "@launch(128)\n@grid(cdiv(N, 512))\nkernel keep(X: tensor<f32>[N], Y: tensor<f32>[N]) {\n  let c = ctx.block.x * 512\n  var y = X[c :+ 512] * 2.0\n  y = where(c + arange(512) < N - 3, y, 5.0)\n  Y[c :+ 512] = y\n}\n",
            vec![("N", 1301)],
        ),
        (
            "thread masks: bf16 rows",
            "@launch(64)\n@grid(cdiv(M, 2))\nkernel rows(X: tensor<bf16>[M, N], Y: tensor<f32>[M, N]) {\n  let r = ctx.block.x * 2\n  let x = where(arange(256) < N, f32(X[r :+ 2, 0 :+ 256]), -inf)\n  Y[r :+ 2, 0 :+ 256] = exp2(x - rowmax(x))\n}\n",
            vec![("M", 5), ("N", 201)],
        ),
    ];
    texts
        .into_iter()
        .enumerate()
        .map(|(i, (label, text, dims))| {
            let k = load(text);
            assert_eq!(
                emit(&k)
                    .masks
                    .iter()
                    .filter(|m| m.scope == MaskScope::Thread)
                    .count(),
                1,
                "{label}"
            );
            let dims: Vec<(String, i64)> = dims.iter().map(|(d, v)| (d.to_string(), *v)).collect();
            common::cases::build(
                label.to_string(),
                k,
                SourceFile::new("t.ph", text),
                &dims,
                41 + i as u64,
                false,
            )
            .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

#[test]
fn thread_mask_cases_build_offline() {
    let cases = thread_mask_cases();
    assert_eq!(cases.len(), 3);
    compiles(&cases);
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_thread_masks_match_interpreter() {
    let gpu = phobos_gpu::Gpu::new(0).expect("a CUDA device");
    let errors = run_all(
        &gpu,
        &thread_mask_cases(),
        &phobos_ir::walk::output_tolerance,
    );
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
