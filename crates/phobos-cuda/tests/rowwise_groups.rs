//! Grouped stores (`emit/group.rs`, `cuda/phobos_group.cuh`): a store whose value reads a
//! register tile and tile loads of its layout is emitted a vector group at a time, so the
//! loaded tiles are never whole in registers. Which stores take the form (emitted text), and
//! what it buys the bf16 norms at 8192 columns (offline NVRTC + ptxas: four 256-thread blocks a
//! multiprocessor without spills). The GPU check of the same kernels against the interpreter
//! is gpu_diff's row-wise bf16 cases (ragged widths: masked groups and the element path).

mod common;

use phobos_cuda::{emit, EmitOptions, Emitted};
use phobos_syntax::SourceFile;

/// The emitted kernel of `path` at `pins` with `types`, specialized on `dims`.
fn emitted(path: &str, src: SourceFile, pins: &str, types: &str, dims: &[(&str, i64)]) -> Emitted {
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{path}: {d:?}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(Some(pins), Some(types), None)
        .unwrap_or_else(|e| panic!("{path} {pins}: {e:?}"));
    let mut k = phobos_check::instantiate(&module, info, &variant)
        .unwrap_or_else(|d| panic!("{path} {pins}: {d:?}"));
    let dims: Vec<(String, i64)> = dims.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    phobos_cuda::specialize_alignment(&mut k, &dims);
    let opts = EmitOptions { source: Some(src) };
    emit(&k, &opts).unwrap_or_else(|e| panic!("{path} {pins}: {e}"))
}

fn example(file: &str, pins: &str, dims: &[(&str, i64)]) -> Emitted {
    let path = format!("examples/{file}");
    emitted(&path, common::source(&path), pins, "T=bf16", dims)
}

fn inline(text: &str) -> String {
    let src = SourceFile::new("inline.ph", text);
    emitted(
        "inline.ph",
        src,
        "THREADS=128",
        "T=bf16",
        &[("M", 64), ("N", 1024)],
    )
    .source
}

#[test]
fn the_norms_read_w_and_b_a_group_at_a_time() {
    let dims = [("M", 16384), ("N", 8192)];
    let rms = example(
        "rms_norm.ph",
        "BLOCK=8192 THREADS=256 MIN_BLOCKS=4 RPB=1",
        &dims,
    )
    .source;
    // Two forms: every region's whole tile inside its tensor (W's groups loaded packed, all
    // before the first store), and each group on its own path.
    assert!(
        rms.contains("if (ph::vector_ok<Blk1x8192>(ph_out) && ph::vector_ok<Blk1x8192>(ph_in0))"),
        "{rms}"
    );
    assert_eq!(rms.matches("ph::load_group_raw<").count(), 1, "{rms}");
    assert_eq!(rms.matches("ph::load_group<").count(), 1, "{rms}");
    assert_eq!(rms.matches("ph::store_group<").count(), 2, "{rms}");
    // X is still loaded whole (the row the reductions need); W is not, and Y is not stored whole.
    assert!(
        !rms.contains("ph::load_tile<Blk1x8192>(ph::Region<const ph::bf16>{W"),
        "{rms}"
    );
    assert!(!rms.contains("ph::store_tile("), "{rms}");
    assert!(rms.contains("#include \"phobos_group.cuh\""), "{rms}");
    let ln = example(
        "layer_norm.ph",
        "BLOCK=8192 THREADS=256 MIN_BLOCKS=4 RPB=1",
        &dims,
    )
    .source;
    assert_eq!(ln.matches("ph::load_group_raw<").count(), 2, "{ln}");
    assert_eq!(ln.matches("ph::load_group<").count(), 2, "{ln}");
    assert!(
        ln.contains("2 tile load(s) read a vector group at a time"),
        "{ln}"
    );
}

#[test]
fn only_stores_beside_a_register_tile_are_grouped() {
    let head = "@autotune(THREADS in [128])\n@launch(THREADS)\n@grid(M)\n";
    // Loads alone: the whole-tile load and store, as before.
    let plain = inline(&format!(
        "{head}kernel k<T = f32>(X: tensor<T>[M, N], W: tensor<T>[N], Y: tensor<T>[M, N]) {{\n\
           let r = ctx.block.x\n\
           Y[r, 0 :+ 1024] = T(f32(X[r, 0 :+ 1024]) * f32(W[0 :+ 1024]))\n}}\n"
    ));
    assert!(!plain.contains("ph::load_group<"), "{plain}");
    assert!(plain.contains("ph::store_tile("), "{plain}");
    // A register tile beside a load: grouped.
    let grouped = inline(&format!(
        "{head}kernel k<T = f32>(X: tensor<T>[M, N], W: tensor<T>[N], Y: tensor<T>[M, N]) {{\n\
           let r = ctx.block.x\n\
           let x = f32(X[r, 0 :+ 1024])\n\
           let s = sum(x)\n\
           Y[r, 0 :+ 1024] = T(x * s * f32(W[0 :+ 1024]))\n}}\n"
    ));
    assert!(grouped.contains("ph::load_group<"), "{grouped}");
    assert!(!grouped.contains("ph::store_tile("), "{grouped}");
    // The stored tensor read in the value: a group stored could be another group's input, so
    // the whole tile is read first.
    let in_place = inline(&format!(
        "{head}kernel k<T = f32>(X: tensor<T>[M, N], Y: tensor<T>[M, N]) {{\n\
           let r = ctx.block.x\n\
           let x = f32(X[r, 0 :+ 1024])\n\
           Y[r, 0 :+ 1024] = T(x * f32(Y[r, 0 :+ 1024]))\n}}\n"
    ));
    assert!(!in_place.contains("ph::load_group<"), "{in_place}");
    assert!(in_place.contains("ph::store_tile("), "{in_place}");
}

/// r5's target: 256 threads × 32 bf16 values (8192 columns) in 64 registers, no spills, so four
/// blocks a multiprocessor (before: 104–120 bytes of spills for RMSNorm, 60 for layer norm).
#[test]
fn bf16_norms_at_8192_fit_four_256_thread_blocks_without_spills() {
    let dims = [("M", 16384), ("N", 8192)];
    let points = [
        ("rms_norm.ph", "BLOCK=8192 THREADS=256 MIN_BLOCKS=4 RPB=1"),
        ("layer_norm.ph", "BLOCK=8192 THREADS=256 MIN_BLOCKS=4 RPB=1"),
    ];
    let emitted: Vec<Emitted> = points.iter().map(|(f, p)| example(f, p, &dims)).collect();
    let labels: Vec<String> = (points.iter()).map(|(f, p)| format!("{f} {p}")).collect();
    let Some(compiled) = common::assert_no_spills(&emitted, &labels) else {
        return;
    };
    for (label, (_, res)) in labels.iter().zip(&compiled) {
        assert!(res.registers <= 64, "{label}: {} registers", res.registers);
    }
}

/// A block of one warp takes its row statistics by shuffles alone (`ph::reduce_warp`): no
/// scratch, so no barrier in the row loop, and the kernel asks for no shared memory.
#[test]
fn one_warp_norms_reduce_without_shared_memory() {
    let dims = [("M", 65536), ("N", 1024)];
    for (file, reductions) in [("layer_norm.ph", 2), ("rms_norm.ph", 1)] {
        let pins = "BLOCK=1024 THREADS=32 MIN_BLOCKS=4 RPB=2";
        let e = example(file, pins, &dims);
        let src = &e.source;
        assert_eq!(
            src.matches("ph::reduce_warp<ph::Sum>(").count(),
            reductions,
            "{file}: {src}"
        );
        assert!(!src.contains("reduce_all"), "{file}: {src}");
        assert!(!src.contains("__syncthreads()"), "{file}: {src}");
        assert_eq!(e.dynamic_smem_bytes, 0, "{file}: {src}");
        // The same kernel at 128 threads still combines its four warps through shared memory.
        let wide = example(file, "BLOCK=1024 THREADS=128 RPB=2", &dims).source;
        assert_eq!(wide.matches("ph::reduce_all<ph::Sum>(").count(), reductions);
    }
}
