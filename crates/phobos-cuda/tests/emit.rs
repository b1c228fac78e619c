//! Snapshots of the generated CUDA: a kernel file plus the points to emit, the expected text
//! kept beside it (`cargo insta review` to bless).

mod common;

use phobos_cuda::{emit, EmitOptions};

/// The CUDA of every kernel of `path` at `pins`, with the notes and launch facts on top.
fn check_emit(path: &str, pins: &str) -> String {
    let opts = EmitOptions {
        source: Some(common::source(path)),
    };
    let mut out = String::new();
    for k in common::kernels_at(path, pins, None) {
        let e = emit(&k, &opts).unwrap_or_else(|err| panic!("{path} {pins}: {err}"));
        out.push_str(&format!(
            "// entry {}, {} threads, {} bytes of dynamic shared memory\n",
            e.entry, e.threads, e.dynamic_smem_bytes
        ));
        out.push_str(&e.source);
    }
    out
}

#[test]
fn gemm_default_point() {
    insta::assert_snapshot!(check_emit("examples/gemm.ph", ""));
}

#[test]
fn gemm_large_tiles() {
    insta::assert_snapshot!(check_emit(
        "examples/gemm.ph",
        "TILE_M=128 TILE_N=128 TILE_K=32"
    ));
}

#[test]
fn partial_sums_plain() {
    insta::assert_snapshot!(check_emit("examples/partial_sums.ph", "U=1"));
}

#[test]
fn partial_sums_unrolled() {
    insta::assert_snapshot!(check_emit("examples/partial_sums.ph", "U=4"));
}

#[test]
fn softmax_body() {
    insta::assert_snapshot!(prelude_free(&check_emit(
        "examples/softmax.ph",
        "ROWS=2 BLOCK=256"
    )));
}

#[test]
fn flash_attention_default_point() {
    insta::assert_snapshot!(check_emit("examples/flash_attention.ph", ""));
}

/// Whole rows per warp: the score tile feeds P·V from registers, q is loaded once in the A
/// fragment layout, and K and V stream through two shared-memory buffers one iteration ahead.
#[test]
fn flash_attention_streams_k_and_v() {
    insta::assert_snapshot!(check_emit(
        "examples/flash_attention.ph",
        "BR=128 BC=64 THREADS=256"
    ));
}

/// The generated text without the include lines (the prelude is a separate file).
fn prelude_free(s: &str) -> String {
    s.lines()
        .filter(|l| !l.starts_with("#include"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Element access to tensors of rank above 3 goes through `ph::Idx`; it must compile.
#[test]
fn rank4_element_access_compiles() {
    let text = "@launch(64)\n@grid(1)\nkernel r4(X: tensor<f32>[A, B, C, D], Y: tensor<f32>[A, B, C, D]) {\n  \
                let t = ctx.thread\n  Y[t % A, 1, 0, t] = X[t % A, 1, 0, t] * 2.0\n}\n";
    let src = phobos_syntax::SourceFile::new("r4.ph", text);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let k = phobos_check::instantiate(&module, info, &info.default_variant().unwrap())
        .unwrap_or_else(|d| panic!("{d:?}"));
    let e = emit(&k, &EmitOptions { source: Some(src) }).unwrap();
    assert!(e.source.contains("ph::load_n<true, 4>"), "{}", e.source);
    match phobos_gpu::compile(&e.source, &common::compile_options(&e)) {
        Ok(_) => {}
        Err(err) if matches!(err.kind, phobos_gpu::CompileErrorKind::NvrtcNotFound(_)) => {
            assert!(std::env::var("CI").is_err(), "NVRTC is needed under CI");
        }
        Err(err) => panic!("{}\n{}", err.log, e.source),
    }
}

#[test]
fn activations_math_library() {
    insta::assert_snapshot!(prelude_free(&check_emit(
        "examples/activations.ph",
        "BLOCK=256"
    )));
}

#[test]
fn row_stats_reshape_and_new_axes() {
    insta::assert_snapshot!(prelude_free(&check_emit(
        "examples/row_stats.ph",
        "ROWS=8 BLOCK=64"
    )));
}

#[test]
fn dropout_philox() {
    insta::assert_snapshot!(prelude_free(&check_emit(
        "examples/dropout.ph",
        "BLOCK=256"
    )));
}

#[test]
fn matmul_leaky_relu_epilogue() {
    insta::assert_snapshot!(prelude_free(&check_emit(
        "examples/matmul_leaky_relu.ph",
        "TILE_K=16"
    )));
}
