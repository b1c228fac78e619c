//! gemm_typed at chosen points and problems, as the hosts compile it: instantiated with bound
//! element types and specialized on the problem's alignment; and the emitted code and notes the
//! fast-GEMM emit tests read.

use phobos_cuda::{emit, EmitOptions, Emitted};
use phobos_ir::Kernel;
use phobos_syntax::SourceFile;

/// `examples/gemm_typed.ph` with its `@autotune` lines replaced by `autotune`, its `@launch`
/// by `launch`, and no `@where` (alignment comes from the problem only).
pub fn gemm_text(autotune: &str, launch: &str) -> String {
    let text = std::fs::read_to_string(super::root().join("examples/gemm_typed.ph"))
        .expect("gemm_typed.ph");
    let mut out = Vec::new();
    let mut replaced = false;
    for line in text.lines() {
        if line.starts_with("@autotune(") {
            if !replaced {
                out.push(autotune.to_string());
                replaced = true;
            }
        } else if line.starts_with("@where(") {
            continue;
        } else if line.starts_with("@launch(") {
            out.push(launch.to_string());
        } else {
            out.push(line.to_string());
        }
    }
    assert!(replaced, "gemm_typed.ph has @autotune lines");
    out.join("\n") + "\n"
}

/// gemm_typed with B given as `[N, K]` and read through `dot_t` (both operands K-major, as
/// TF32 and fp8 wgmma need).
pub fn gemm_t_text(autotune: &str) -> String {
    gemm_text(autotune, "@launch(256)")
        .replace("B: tensor<TB>[K, N]", "B: tensor<TB>[N, K]")
        .replace(
            "let b = B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]",
            "let b = B[pn * TILE_N :+ TILE_N, kt :+ TILE_K]",
        )
        .replace("acc += dot(a, b)", "acc += dot_t(a, b)")
}

/// A problem whose dims are all multiples of 16 (M = 1024, N = 512, K = 256).
pub fn aligned_dims() -> Vec<(&'static str, i64)> {
    vec![("M", 1024), ("N", 512), ("K", 256)]
}

/// The kernel of `text` at its default point with `types`, specialized on `dims`.
pub fn kernel_of(text: &str, types: &str, dims: &[(&str, i64)]) -> (Kernel, SourceFile) {
    let src = SourceFile::new("examples/gemm_typed.ph", text);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(None, Some(types), None)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let mut k = phobos_check::instantiate(&module, info, &variant)
        .unwrap_or_else(|d| panic!("{d:?}\n{text}"));
    let dims: Vec<(String, i64)> = dims.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    phobos_cuda::specialize_alignment(&mut k, &dims);
    (k, src)
}

/// The emitted text with its launch facts on top.
pub fn render(e: &Emitted) -> String {
    let mut out = format!(
        "// entry {}, {} threads, {} bytes of dynamic shared memory, grid z {}, zero {:?}\n",
        e.entry, e.threads, e.dynamic_smem_bytes, e.grid_z, e.zero_before_launch
    );
    for t in &e.tma {
        out.push_str(&format!(
            "// tensor map {}: tensor #{} {}, globalDim {:?}, line stride {:?}, {}\n",
            t.name, t.tensor, t.dtype, t.global_dim, t.line_stride, t.spec
        ));
    }
    out.push_str(&e.source);
    out
}

pub fn emitted(autotune: &str, types: &str, dims: &[(&str, i64)]) -> Emitted {
    let (k, src) = kernel_of(&gemm_text(autotune, "@launch(256)"), types, dims);
    emit(&k, &EmitOptions { source: Some(src) }).unwrap()
}

/// A kernel text emitted for the aligned problem.
pub fn emit_text(text: &str, types: &str) -> Emitted {
    let (k, src) = kernel_of(text, types, &aligned_dims());
    emit(&k, &EmitOptions { source: Some(src) }).unwrap()
}
