//! The odd transpose's shifted 16-byte accesses (`VEC_COPY=1`, bench/NOTES.md r19): 4-byte
//! tensors whose rows are known not to start on 16 bytes keep 4-element groups; their tile loads
//! take `ph::load_tile_shifted` (each group's words selected at its row's shift) and a transposed
//! tile stored to them `ph::transpose_store_shifted` (the shared tile read at each output row's
//! shift, aligned 16-byte chunks). Which tensors take them (the layout functions the plan
//! records), the emitted code (a snapshot), that VEC_COPY=0 and aligned problems keep the code of
//! before, and that the kernels compile to 128-bit global accesses without spills (offline
//! NVRTC). On the GPU: gpu_diff's `transpose.ph ... VEC_COPY=1` cases at ragged shapes.

mod common;

use phobos_cuda::layout::{kernel_vec_cap, shifted_store_tensors, shifted_tensors};
use phobos_cuda::{emit, EmitOptions, Emitted};

const WINNER: &str = "TILE_R=64 TILE_C=32 TILES=2 THREADS=512 AHEAD=2";

/// examples/transpose.ph at `pins`, specialized on M and N when given.
fn kernel(pins: &str, dims: Option<(i64, i64)>) -> phobos_ir::Kernel {
    let src = common::source("examples/transpose.ph");
    let dims = dims.map(|(m, n)| [("M", m), ("N", n)]);
    common::specialized_kernel(src, pins, None, dims.as_ref().map_or(&[], |d| &d[..]))
}

fn emitted(pins: &str, dims: Option<(i64, i64)>) -> Emitted {
    let opts = EmitOptions {
        source: Some(common::source("examples/transpose.ph")),
    };
    emit(&kernel(pins, dims), &opts).unwrap_or_else(|e| panic!("{pins}: {e}"))
}

/// The decisions: (vec_cap, names of the shifted-load tensors, of the shifted-store tensors).
fn decisions(pins: &str, dims: Option<(i64, i64)>) -> (i64, Vec<String>, Vec<String>) {
    let k = kernel(pins, dims);
    let cap = kernel_vec_cap(&k);
    let names = |s: std::collections::BTreeSet<usize>| -> Vec<String> {
        s.into_iter().map(|t| k.params[t].name.clone()).collect()
    };
    (
        cap,
        names(shifted_tensors(&k, cap)),
        names(shifted_store_tensors(&k, cap)),
    )
}

#[test]
fn unaligned_f32_rows_keep_16_byte_groups_at_vec_copy_1() {
    let on = format!("{WINNER} VEC_COPY=1");
    let off = format!("{WINNER} VEC_COPY=0");
    let none: Vec<String> = Vec::new();
    let (x, y) = (vec!["X".to_string()], vec!["Y".to_string()]);
    // Odd M and N: X's rows (N) and Y's rows (M) both unaligned.
    assert_eq!(
        decisions(&on, Some((8191, 8193))),
        (4, x.clone(), y.clone())
    );
    // N ≡ 2 (mod 4), M ≡ 3: both rows unaligned (2-aligned rows take the shift too).
    assert_eq!(decisions(&on, Some((99, 94))), (4, x.clone(), y.clone()));
    // Only X's rows unaligned (M = 128): Y's stores keep `store_tile`'s vectors.
    assert_eq!(
        decisions(&on, Some((128, 77))),
        (4, x.clone(), none.clone())
    );
    // Only Y's rows unaligned.
    assert_eq!(
        decisions(&on, Some((77, 256))),
        (4, none.clone(), y.clone())
    );
    // Aligned, and not specialized: nothing shifted, the widest group.
    assert_eq!(
        decisions(&on, Some((8192, 8192))),
        (4, none.clone(), none.clone())
    );
    assert_eq!(decisions(&on, None), (4, none.clone(), none.clone()));
    // VEC_COPY=0: r6's element groups, nothing shifted.
    assert_eq!(
        decisions(&off, Some((8191, 8193))),
        (1, none.clone(), none.clone())
    );
    assert_eq!(
        decisions(WINNER, Some((8191, 8193))),
        (1, none.clone(), none)
    );
}

#[test]
fn vec_copy_0_and_aligned_problems_emit_the_code_of_before() {
    // The point's comment line names the knob; every other line is the same.
    let body = |e: Emitted| -> String {
        (e.source.lines())
            .filter(|l| !l.starts_with("// Phobos kernel `transpose` at"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for dims in [Some((8191, 8193)), Some((77, 45))] {
        let old = body(emitted(WINNER, dims));
        assert_eq!(body(emitted(&format!("{WINNER} VEC_COPY=0"), dims)), old);
        assert!(old.contains("ph::Blocked<64, 32, 512, 1>"), "{old}");
        assert!(!old.contains("shifted"), "{old}");
    }
    for dims in [Some((8192, 8192)), Some((4096, 16384)), None] {
        let pins = "TILE_R=64 TILE_C=64 TILES=1 THREADS=512";
        let old = body(emitted(pins, dims));
        assert_eq!(body(emitted(&format!("{pins} VEC_COPY=1"), dims)), old);
        assert!(!old.contains("shifted"), "{old}");
    }
}

#[test]
fn odd_transpose_snapshot() {
    let e = emitted(&format!("{WINNER} VEC_COPY=1"), Some((8191, 8193)));
    // Every load of X shifted (the first, the one ahead, and the loop's two forms), the store
    // fused with the transpose.
    assert_eq!(
        e.source.matches("ph::load_tile_shifted<Blk64x32>(").count(),
        4
    );
    assert_eq!(
        e.source
            .matches("ph::transpose_store_shifted<Blk32x64>(")
            .count(),
        1
    );
    assert!(!e.source.contains("ph::store_tile("), "{}", e.source);
    insta::assert_snapshot!(e.source);
}

/// 128-bit global loads and stores (`ld.global.nc.v4` / `st.global.v4`, not generic), no spills,
/// at the r17 winner's shape, the aligned winner's shape at odd sizes, and the smallest tiles.
#[test]
fn shifted_transposes_compile_to_128_bit_accesses() {
    let emitted = [
        emitted(&format!("{WINNER} VEC_COPY=1"), Some((8191, 8193))),
        emitted(
            "TILE_R=64 TILE_C=64 TILES=1 THREADS=512 VEC_COPY=1",
            Some((8191, 8193)),
        ),
        emitted(
            "TILE_R=64 TILE_C=64 TILES=4 THREADS=512 AHEAD=2 VEC_COPY=1",
            Some((8191, 8193)),
        ),
        emitted(
            "TILE_R=16 TILE_C=32 TILES=1 THREADS=128 VEC_COPY=1",
            Some((1001, 3001)),
        ),
    ];
    let jobs: Vec<_> = (emitted.iter())
        .map(|e| (e.source.clone(), common::compile_options(e)))
        .collect();
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    for (e, r) in emitted.iter().zip(&results) {
        let c = (r.as_ref()).unwrap_or_else(|err| panic!("{}: {}", e.entry, err.log));
        let count = |op: &str| {
            (c.ptx.lines())
                .filter(|l| l.contains(op) && l.contains(".v4."))
                .count()
        };
        assert!(count("ld.global") >= 2, "{}: loads\n{}", e.entry, c.ptx);
        assert!(count("st.global") >= 1, "{}: stores\n{}", e.entry, c.ptx);
        assert!(
            !(c.ptx.lines()).any(|l| {
                let l = l.trim_start();
                l.starts_with("ld.v4.") || l.starts_with("st.v4.")
            }),
            "{}: generic 128-bit accesses",
            e.entry
        );
        let res = phobos_gpu::resources::of_compiled(c, &e.entry).expect("ptxas report");
        assert_eq!(res.spill_store_bytes, 0, "{}: spills", e.entry);
    }
}
