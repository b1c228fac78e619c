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

/// The first kernel of source `text` (named `name`) at its default point, and the source.
fn kernel_of(name: &str, text: &str) -> (phobos_ir::Kernel, phobos_syntax::SourceFile) {
    let src = phobos_syntax::SourceFile::new(name, text);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let k = phobos_check::instantiate(&module, info, &info.default_variant().unwrap())
        .unwrap_or_else(|d| panic!("{d:?}"));
    (k, src)
}

/// Element access to tensors of rank above 3 goes through `ph::Idx`; it must compile.
#[test]
fn rank4_element_access_compiles() {
    let text = "@launch(64)\n@grid(1)\nkernel r4(X: tensor<f32>[A, B, C, D], Y: tensor<f32>[A, B, C, D]) {\n  \
                let t = ctx.thread\n  Y[t % A, 1, 0, t] = X[t % A, 1, 0, t] * 2.0\n}\n";
    let (k, src) = kernel_of("r4.ph", text);
    let e = emit(&k, &EmitOptions { source: Some(src) }).unwrap();
    assert!(e.source.contains("ph::load_n<true, 4>"), "{}", e.source);
    let jobs = [(e.source.clone(), common::compile_options(&e))];
    if let Some([Err(err)]) = common::compile_or_skip(&jobs, 1).as_deref() {
        panic!("{}\n{}", err.log, e.source);
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

#[test]
fn histogram_element_atomics() {
    insta::assert_snapshot!(prelude_free(&check_emit(
        "examples/histogram.ph",
        "BLOCK=256"
    )));
}

#[test]
fn layer_norm_backward_tile_atomics() {
    insta::assert_snapshot!(prelude_free(&check_emit(
        "examples/layer_norm_backward.ph",
        "ROWS=1 BLOCK=256"
    )));
}

/// Every atomic of every supported type, element (old value bound, rank 1 to 4) and tile form.
const ATOMICS_ALL_TYPES: &str = "@launch(128)
@grid(4)
kernel atomics(
  I: tensor<i32>[N], U: tensor<u32>[N], F: tensor<f32>[N], D: tensor<f64>[N],
  H: tensor<f16>[N], B: tensor<bf16>[N], F4: tensor<f32>[2, 3, 4, N], Old: tensor<f32>[N]
) {
  let t = ctx.thread
  let oi = atomic_add(I[t], t)
  atomic_max(I[t + 1], oi)
  atomic_min(I[t + 2], -t)
  atomic_add(U[t], u32(t))
  atomic_max(U[t], 7)
  let ou = atomic_min(U[t + 1], 3)
  let of = atomic_add(F[t], 0.5)
  atomic_max(F[t], f32(t) * 0.25)
  atomic_min(F[t + 1], -1.5)
  atomic_add(D[t], 0.25)
  var oh = atomic_add(H[t], f16(1.5))
  atomic_add(B[t], bf16(2.5))
  atomic_add(F4[1, 2, 3, t], of)
  Old[t] = of + f32(oh) + f32(ou)
  let r = ctx.block.x * 64
  atomic_add(F[r :+ 64], Old[r :+ 64])
  atomic_max(I[r :+ 64], 3)
  atomic_min(U[r :+ 64], u32(ctx.block.x))
  atomic_add(H[r :+ 64], f16(Old[r :+ 64]))
  atomic_add(B[r :+ 64], bf16(0.5))
  atomic_add(D[r :+ 64], 1.0)
}
";

fn atomics_kernel() -> (phobos_ir::Kernel, phobos_syntax::SourceFile) {
    kernel_of("atomics.ph", ATOMICS_ALL_TYPES)
}

#[test]
fn atomics_of_every_type() {
    let (k, src) = atomics_kernel();
    let e = emit(&k, &EmitOptions { source: Some(src) }).unwrap();
    insta::assert_snapshot!(prelude_free(&e.source));
}

/// The atomics header compiles for sm_90a (bf16 `atom.add`) and sm_80 (the bf16 CAS loop).
#[test]
fn atomics_of_every_type_compile() {
    let (k, src) = atomics_kernel();
    for (arch, target) in [
        (90, phobos_gpu::Arch::SM_90A),
        (80, phobos_gpu::Arch::SM_80),
    ] {
        let e = phobos_cuda::emit_for_arch(
            &k,
            &EmitOptions {
                source: Some(src.clone()),
            },
            arch,
        )
        .unwrap();
        let mut opts = common::compile_options(&e);
        opts.arch = target;
        let jobs = [(e.source.clone(), opts)];
        if let Some([Err(err)]) = common::compile_or_skip(&jobs, 1).as_deref() {
            panic!("sm_{arch}: {}\n{}", err.log, e.source);
        }
    }
}

/// The plan's typed record of each dot outside a GEMM loop: tensor cores where the operands,
/// the target and the shapes allow, and the reason where they do not.
#[test]
fn dots_say_how_they_lower() {
    use phobos_cuda::layout::MmaAcc;
    use phobos_cuda::NoMma;
    let k = &common::kernels_at(
        "examples/flash_attention.ph",
        "BR=128 BC=64 THREADS=256",
        None,
    )[0];
    let e = emit(k, &EmitOptions::default()).unwrap();
    let acc = |bn| {
        Ok(MmaAcc {
            bm: 128,
            bn,
            warps_m: 8,
            warps_n: 1,
        })
    };
    let got: Vec<_> = e.dots.iter().map(|d| (d.m, d.n, d.k, d.lowering)).collect();
    assert_eq!(got, [(128, 64, 64, acc(64)), (128, 64, 64, acc(64))]);
    // On sm_75 neither dot has mma.sync.
    let e = phobos_cuda::emit_for_arch(k, &EmitOptions::default(), 75).unwrap();
    assert!(e.dots.iter().all(|d| d.lowering == Err(NoMma::Arch(75))));
    // Exact f32 operands, an inner extent that is not a multiple of 16 (its last k step
    // padded), a shape no warp grid tiles.
    let text = "\
@launch(128)
kernel dots(A: tensor<f32>[64, 32], H: tensor<f16>[64, 24], G: tensor<f16>[16, 32], C: tensor<f32>[64, 64], D: tensor<f32>[64, 64], E: tensor<f32>[16, 16]) {
  C[0 :+ 64, 0 :+ 64] = dot_t(A[0 :+ 64, :], A[0 :+ 64, :])
  D[0 :+ 64, 0 :+ 64] = dot_t(H[0 :+ 64, :], H[0 :+ 64, :])
  E[0 :+ 16, 0 :+ 16] = dot_t(G[0 :+ 16, :], G[0 :+ 16, :])
}
";
    let src = phobos_syntax::SourceFile::new("dots.ph", text);
    let module = phobos_check::load(src).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let variant = info.variant(None, None, None).unwrap();
    let k = phobos_check::instantiate(&module, info, &variant).unwrap_or_else(|d| panic!("{d:?}"));
    let e = emit(&k, &EmitOptions::default()).unwrap();
    let why: Vec<_> = e.dots.iter().map(|d| d.lowering.map(|_| ())).collect();
    assert_eq!(
        why,
        [
            Err(NoMma::OperandType(phobos_ir::DType::F32)),
            Ok(()),
            Err(NoMma::Shape(16, 16)),
        ]
    );
    // The padded dot runs on mma.sync, K padded to whole k steps (wgmma only under the knob
    // WGMMA_K=1, tests/dot_wgmma_k.rs).
    assert!(
        e.dots[1].to_string().contains("K 24 padded to 32")
            && e.dots[1].to_string().contains("WGMMA_K is not 1"),
        "{}",
        e.dots[1]
    );
    // The notes render the records.
    assert!(e.dots.iter().all(|d| e.notes.contains(&d.to_string())));
}

/// wgmma where each warp holds 16 whole rows (threads = 2 x rows) on sm_90a, with both operands
/// of Q Kᵀ in shared memory and P from registers for P V; mma.sync, with the reason, elsewhere.
#[test]
fn dots_take_wgmma_where_each_warp_holds_16_rows() {
    use phobos_cuda::{MmaInstr, NoWgmma};
    let instrs = |pins: &str, arch: u32| {
        let k = &common::kernels_at("examples/flash_attention.ph", pins, None)[0];
        let e = phobos_cuda::emit_for_arch(k, &EmitOptions::default(), arch).unwrap();
        assert!(e.dots.iter().all(|d| e.notes.contains(&d.to_string())));
        (e.dots.iter().map(|d| d.instr).collect::<Vec<_>>(), e.source)
    };
    for pins in ["BR=128 BC=64 THREADS=256", "BR=64 BC=128 THREADS=128"] {
        let (got, src) = instrs(pins, 90);
        assert_eq!(got, [Some(MmaInstr::Wgmma); 2], "{pins}");
        // The loop overlaps its dots (tests/overlap.rs): both are issued without waiting.
        assert!(
            src.contains("ph::mma_dot<true, ph::gemm::F16, true, true>"),
            "{src}"
        );
        assert!(
            src.contains("ph::mma_dot_ra<false, ph::gemm::F16, true, true>"),
            "{src}"
        );
        assert!(src.contains("__align__(1024)"), "{src}");
    }
    let (got, _) = instrs("BR=128 BC=64 THREADS=128", 90);
    let rows = MmaInstr::MmaSync(NoWgmma::WarpRows {
        rows: 32,
        warps_n: 1,
    });
    assert_eq!(got, [Some(rows); 2]);
    let (got, src) = instrs("BR=128 BC=64 THREADS=256", 80);
    assert_eq!(got, [Some(MmaInstr::MmaSync(NoWgmma::Arch(80))); 2]);
    assert!(
        src.contains("ph::mma_dot<true, ph::gemm::F16, false>"),
        "{src}"
    );
}

/// The Blocked vector group follows what the host knows of the rows' alignment: element
/// groups (coalesced lanes) for rows known to be unaligned, the widest group where the rows
/// are aligned or nothing is known (accesses then check alignment at run time).
#[test]
fn vector_groups_follow_the_rows_alignment() {
    use phobos_cuda::layout::kernel_vec_cap;
    let typed_cap = |path: &str, types: Option<&str>, dims: &[(&str, i64)]| {
        let mut k = common::kernels_at(path, "", types).remove(0);
        if !dims.is_empty() {
            let dims: Vec<_> = dims.iter().map(|(n, v)| (n.to_string(), *v)).collect();
            phobos_cuda::specialize_alignment(&mut k, &dims);
        }
        kernel_vec_cap(&k)
    };
    let cap = |path: &str, dims: &[(&str, i64)]| typed_cap(path, None, dims);
    let t = "examples/transpose.ph";
    assert_eq!(cap(t, &[]), 4, "unknown: the widest group");
    assert_eq!(cap(t, &[("M", 8192), ("N", 8192)]), 4);
    assert_eq!(
        cap(t, &[("M", 8192), ("N", 8194)]),
        2,
        "rows of X 2-aligned"
    );
    assert_eq!(cap(t, &[("M", 8191), ("N", 8192)]), 1, "rows of Y odd");
    assert_eq!(cap(t, &[("M", 8191), ("N", 8193)]), 1);
    let ce = "examples/cross_entropy.ph";
    assert_eq!(cap(ce, &[("M", 4096), ("V", 50256)]), 4);
    assert_eq!(cap(ce, &[("M", 4096), ("V", 50257)]), 1);
    // M is the extent of the one-axis tensors only: an odd M leaves X's rows aligned.
    assert_eq!(cap(ce, &[("M", 4095), ("V", 50256)]), 4);
    // 2-byte elements keep 16-byte groups (one element a lane would move half a line).
    let bf16 = Some("T=bf16");
    assert_eq!(typed_cap(ce, bf16, &[("M", 4096), ("V", 50257)]), 8);
    assert_eq!(typed_cap(ce, bf16, &[("M", 4096), ("V", 50256)]), 8);
}

/// `[R, 1]` expressions of row totals broadcast over the columns, as a softmax writes them
/// (`exp2(x * c - rowmax(x) * c)`, `e * (1.0 / rowsum(e))`): computed in the wide tile's layout
/// on `ph::reduce_rows_bcast`'s registers, no `[R, 1]` tile and no `ph::broadcast` through
/// shared memory. A row total bound to a local and a column total keep their own tiles and the
/// broadcast. The whole body is blessed; it compiles (offline NVRTC where present).
#[test]
fn row_total_expressions_stay_in_the_wide_layout() {
    let text = "@launch(128)
kernel totals(X: tensor<f32>[M, 256], Y: tensor<f32>[M, 256], Z: tensor<f32>[M, 256]) {
  let r = ctx.block.x * 4
  let x = X[r :+ 4, 0 :+ 256]
  let e = exp2(x * 1.5 - rowmax(x) * 1.5)
  Y[r :+ 4, 0 :+ 256] = e * (1.0 / rowsum(e)) + (rowmax(x) - rowmin(x)) * 0.25
  let m = rowmax(x) * 2.0
  Z[r :+ 4, 0 :+ 256] = x - m + sum(x, axis=0)
}
";
    let (k, src) = kernel_of("totals.ph", text);
    let e = emit(&k, &EmitOptions { source: Some(src) }).unwrap();
    let body = prelude_free(&e.source);
    // Lines 5 and 6 (e and Y): four row totals in the wide layout; lines 7 and 8 (m and Z):
    // m's [4, 1] tile and the column total, each broadcast.
    let (y_part, z_part) = body.split_at(body.find("#line 7 ").expect("line 7"));
    assert_eq!(
        y_part.matches("ph::reduce_rows_bcast<").count(),
        4,
        "{body}"
    );
    assert!(!y_part.contains("ph::broadcast<"), "{body}");
    assert_eq!(z_part.matches("ph::broadcast<").count(), 2, "{body}");
    insta::assert_snapshot!(body);
    let jobs = [(e.source.clone(), common::compile_options(&e))];
    if let Some([Err(err)]) = common::compile_or_skip(&jobs, 1).as_deref() {
        panic!("{}\n{}", err.log, e.source);
    }
}
