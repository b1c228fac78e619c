//! The odd transpose's stores by warp windows on 128-byte lines (`STORE_LINES=1`,
//! bench/NOTES.md r37c, r40, r43): a transposed 4- or 2-byte tile stored to a tensor whose rows
//! are known not to start on 16 bytes goes through `ph::transpose_store_lines`, a warp a row
//! segment, each window one whole line. Which tensors take it (the layout function the plan
//! records), that STORE_LINES=0, VEC_COPY=1 and aligned problems keep the code of before, the
//! emitted code (a snapshot), and that the kernels compile to one store a window (4-byte
//! elements) or one 4-byte store and a 2-byte edge store for each bound the window tests (2-byte
//! elements), on two paths (a tile inside the tensor's columns tests only its end windows), no
//! spills (offline NVRTC). On the GPU: gpu_diff's `transpose.ph ... STORE_LINES=1` cases at ragged
//! shapes, in f32, bf16 and f16.

mod common;

use phobos_cuda::layout::{line_store_tensors, shifted_store_tensors};
use phobos_cuda::{emit, EmitOptions, Emitted};

/// r25's winner at 8191x8193 (bench/NOTES.md r37).
const WINNER: &str = "TILE_R=128 TILE_C=64 TILES=1 THREADS=1024 AHEAD=1";

/// examples/transpose.ph at `pins` and the type binding `types` (`T=bf16`; None: f32),
/// specialized on M and N when given. Its `@where` that keeps STORE_LINES=1 from VEC_COPY=1 is
/// dropped, so that tests can ask for both.
fn kernel(pins: &str, types: Option<&str>, dims: Option<(i64, i64)>) -> phobos_ir::Kernel {
    let path = "examples/transpose.ph";
    let full = common::source(path);
    let rule = "@where(STORE_LINES == 0 || VEC_COPY == 0)\n";
    assert!(full.text.contains(rule));
    let src = phobos_syntax::SourceFile::new(path, full.text.replace(rule, ""));
    let dims = dims.map(|(m, n)| [("M", m), ("N", n)]);
    common::specialized_kernel(src, pins, types, dims.as_ref().map_or(&[], |d| &d[..]))
}

fn emitted(pins: &str, dims: Option<(i64, i64)>) -> Emitted {
    typed_emitted(pins, None, dims)
}

fn typed_emitted(pins: &str, types: Option<&str>, dims: Option<(i64, i64)>) -> Emitted {
    let opts = EmitOptions {
        source: Some(common::source("examples/transpose.ph")),
    };
    emit(&kernel(pins, types, dims), &opts).unwrap_or_else(|e| panic!("{pins}: {e}"))
}

/// The names of the tensors stored by line windows, and of those stored shifted.
fn decisions(pins: &str, dims: Option<(i64, i64)>) -> (Vec<String>, Vec<String>) {
    typed_decisions(pins, None, dims)
}

fn typed_decisions(
    pins: &str,
    types: Option<&str>,
    dims: Option<(i64, i64)>,
) -> (Vec<String>, Vec<String>) {
    let k = kernel(pins, types, dims);
    let names = |s: std::collections::BTreeSet<usize>| -> Vec<String> {
        s.into_iter().map(|t| k.params[t].name.clone()).collect()
    };
    let cap = phobos_cuda::layout::kernel_vec_cap(&k);
    (
        names(line_store_tensors(&k)),
        names(shifted_store_tensors(&k, cap)),
    )
}

#[test]
fn unaligned_f32_rows_take_line_windows_at_store_lines_1() {
    let on = format!("{WINNER} STORE_LINES=1");
    let none: Vec<String> = Vec::new();
    let y = vec!["Y".to_string()];
    // Odd M: Y's rows unaligned.
    assert_eq!(
        decisions(&on, Some((8191, 8193))),
        (y.clone(), none.clone())
    );
    assert_eq!(
        decisions(&on, Some((8193, 8192))),
        (y.clone(), none.clone())
    );
    // M ≡ 2 (mod 4): rows aligned to 8 bytes only are unaligned too.
    assert_eq!(decisions(&on, Some((94, 99))), (y.clone(), none.clone()));
    // Only X's rows unaligned (M = 128): Y's stores keep `store_tile`'s vectors.
    assert_eq!(
        decisions(&on, Some((128, 77))),
        (none.clone(), none.clone())
    );
    // Aligned, and not specialized.
    assert_eq!(
        decisions(&on, Some((8192, 8192))),
        (none.clone(), none.clone())
    );
    assert_eq!(decisions(&on, None), (none.clone(), none.clone()));
    // STORE_LINES=0 or undeclared: the layout's element stores.
    let off = format!("{WINNER} STORE_LINES=0");
    assert_eq!(
        decisions(&off, Some((8191, 8193))),
        (none.clone(), none.clone())
    );
    assert_eq!(
        decisions(WINNER, Some((8191, 8193))),
        (none.clone(), none.clone())
    );
    // VEC_COPY=1 takes the shifted 16-byte stores, not the windows.
    let both = format!("{WINNER} VEC_COPY=1 STORE_LINES=1");
    assert_eq!(decisions(&both, Some((8191, 8193))), (none, y));
}

#[test]
fn store_lines_0_and_aligned_problems_emit_the_code_of_before() {
    // The point's comment line names the knob; every other line is the same.
    let body = |e: Emitted| -> String {
        (e.source.lines())
            .filter(|l| !l.starts_with("// Phobos kernel `transpose` at"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for dims in [Some((8191, 8193)), Some((77, 45))] {
        let old = body(emitted(WINNER, dims));
        assert_eq!(body(emitted(&format!("{WINNER} STORE_LINES=0"), dims)), old);
        assert!(!old.contains("lines"), "{old}");
        let shifted = format!("{WINNER} VEC_COPY=1");
        assert_eq!(
            body(emitted(&format!("{shifted} STORE_LINES=1"), dims)),
            body(emitted(&shifted, dims))
        );
    }
    for dims in [Some((8192, 8192)), Some((128, 77)), None] {
        let old = body(emitted(WINNER, dims));
        assert_eq!(body(emitted(&format!("{WINNER} STORE_LINES=1"), dims)), old);
        assert!(!old.contains("transpose_store_lines"), "{old}");
    }
}

#[test]
fn odd_transpose_by_lines_snapshot() {
    let e = emitted(&format!("{WINNER} STORE_LINES=1"), Some((8191, 8193)));
    assert_eq!(
        (e.source)
            .matches("ph::transpose_store_lines<Blk64x128>(")
            .count(),
        1
    );
    assert!(!e.source.contains("ph::store_tile("), "{}", e.source);
    assert!(!e.source.contains("ph::transpose<"), "{}", e.source);
    insta::assert_snapshot!(e.source);
}

/// The 2-byte edge stores of window `j` of a row segment of `c` elements (`per` elements a
/// 128-byte line), over both paths: a tile inside the tensor's columns tests the window's first
/// element only for j = 0 and its last only when per * (j + 1) > c, an edge store for each test;
/// a tile at the tensor's edge tests both in every window.
fn window_edge_stores(j: i64, c: i64, per: i64) -> usize {
    usize::from(j == 0) + usize::from(per * (j + 1) > c) + 2
}

/// What a thread's stores in the PTX must be at a point storing `rows` row segments of `c`
/// elements: (pair or element stores, edge stores, distinct base registers). Each window is one
/// pair or element store on each of the two paths, and each row segment's windows store at
/// immediate offsets from one address, on each path.
fn expected_stores(rows: i64, c: i64, two_byte: bool) -> (usize, usize, usize) {
    let per = if two_byte { 64 } else { 32 };
    let windows = (c + 2 * per - 2) / per;
    let edges: usize = if two_byte {
        (0..windows).map(|j| window_edge_stores(j, c, per)).sum()
    } else {
        0
    };
    let rows = rows as usize;
    (rows * 2 * windows as usize, rows * edges, 2 * rows)
}

/// The base register of a PTX store (`st.global.f32 \t[%rd10+128], %f36;` → `%rd10`).
fn base(store: &str) -> &str {
    let at = store.split('[').nth(1).unwrap_or("");
    at.split(['+', ']']).next().unwrap_or("")
}

/// One 4-byte store a window on each of the two paths (a tile inside the tensor's columns, one
/// at its edge), `ROWS` rows a warp, `(C + 62) / 32` windows a row, unrolled, each row's at
/// immediate offsets from one address; no vector stores and no spills: r25's winner, a tile
/// with fewer Y rows than warps (warps left idle), rows shorter than a line, and several tiles a
/// block.
#[test]
fn line_stores_compile_to_one_store_a_window() {
    // (pins, M, N, row segments a thread, their length C = TILE_R)
    let points = [
        (WINNER, 8191, 8193, 2, 128),
        ("TILE_R=128 TILE_C=16 TILES=1 THREADS=1024", 77, 131, 1, 128),
        ("TILE_R=16 TILE_C=16 TILES=1 THREADS=128", 35, 67, 4, 16),
        (
            "TILE_R=32 TILE_C=32 TILES=4 THREADS=256 AHEAD=2",
            130,
            94,
            4 * 4,
            32,
        ),
        ("TILE_R=64 TILE_C=32 TILES=1 THREADS=512", 1001, 3001, 2, 64),
    ];
    let at: Vec<_> = (points.iter())
        .map(|&(p, m, n, ..)| (p, None, m, n))
        .collect();
    let Some(compiled) = line_store_ptx(&at) else {
        return;
    };
    for ((entry, st), &(.., rows, c)) in compiled.iter().zip(&points) {
        let (stores, edges, bases) = expected_stores(rows, c, false);
        assert_eq!((st.len(), edges), (stores, 0), "{entry}: stores {st:?}");
        assert!(
            st.iter()
                .all(|l| !l.contains(".v2.") && !l.contains(".v4.")),
            "{entry}: vector stores {st:?}"
        );
        let distinct: std::collections::BTreeSet<_> = st.iter().map(|l| base(l)).collect();
        assert_eq!(distinct.len(), bases, "{entry}: {st:?}");
    }
}

/// Each point (pins, types, M, N) at STORE_LINES=1, emitted through `ph::transpose_store_lines`
/// and compiled offline with no spill: its entry and its PTX's global stores (None without
/// NVRTC, where the compile tests skip).
fn line_store_ptx(points: &[(&str, Option<&str>, i64, i64)]) -> Option<Vec<(String, Vec<String>)>> {
    let emitted: Vec<Emitted> = (points.iter())
        .map(|&(pins, types, m, n)| {
            let e = typed_emitted(&format!("{pins} STORE_LINES=1"), types, Some((m, n)));
            assert!(e.source.contains("ph::transpose_store_lines<"), "{pins}");
            e
        })
        .collect();
    let jobs: Vec<_> = (emitted.iter())
        .map(|e| (e.source.clone(), common::compile_options(e)))
        .collect();
    let results = common::compile_or_skip(&jobs, 2)?;
    let out = emitted.iter().zip(&results).map(|(e, r)| {
        let c = (r.as_ref()).unwrap_or_else(|err| panic!("{}: {}", e.entry, err.log));
        let res = phobos_gpu::resources::of_compiled(c, &e.entry).expect("ptxas report");
        assert_eq!(res.spill_store_bytes, 0, "{}: spills", e.entry);
        let st = (c.ptx.lines())
            .map(str::trim_start)
            .filter(|l| l.starts_with("st.global"))
            .map(String::from)
            .collect();
        (e.entry.clone(), st)
    });
    Some(out.collect())
}

/// The fused transposed stores' strided-region path: a transpose stored into a 3-axis tensor at
/// a fixed last index (the region's column stride K, Y's rows known unaligned) takes the shifted
/// store at VEC_COPY=1 and the store by lines at STORE_LINES=1, whose run-time check sends the
/// strided region to `ph::transposed_from` and the layout's element stores. Each point's gpu_diff
/// case builds (the interpreter's reference at ragged tiles) and compiles with no spill; the GPU
/// runs it (`strided transposed store` in gpu_diff).
#[test]
fn strided_regions_take_the_fused_stores_and_compile() {
    use common::store_cases::{strided_transpose_kernel, STRIDED_TRANSPOSE};
    let dims = [
        ("M".to_string(), 99),
        ("N".to_string(), 77),
        ("K".to_string(), 3),
    ];
    let src = phobos_syntax::SourceFile::new("strided.ph", STRIDED_TRANSPOSE);
    let points = [
        ("VEC_COPY=0 STORE_LINES=0", None),
        (
            "VEC_COPY=1 STORE_LINES=0",
            Some("ph::transpose_store_shifted<Blk32x64>("),
        ),
        (
            "VEC_COPY=0 STORE_LINES=1",
            Some("ph::transpose_store_lines<Blk32x64>("),
        ),
    ];
    let mut emitted = Vec::new();
    for (pins, fused) in points {
        let k = strided_transpose_kernel(pins, &dims);
        let case = common::cases::build(pins.to_string(), k.clone(), src.clone(), &dims, 13, false)
            .unwrap_or_else(|e| panic!("{pins}: {e}"));
        assert_eq!(case.grid, [2, 3, 1], "{pins}");
        let e = emit(
            &k,
            &EmitOptions {
                source: Some(src.clone()),
            },
        )
        .unwrap_or_else(|e| panic!("{pins}: {e}"));
        // Y's region: its column stride is K (the tile's columns step along Y's middle axis).
        assert!(
            e.source
                .contains("(long long)M * K, K, (unsigned)1 < (unsigned)K}"),
            "{pins}: {}",
            e.source
        );
        match fused {
            Some(call) => assert_eq!(e.source.matches(call).count(), 1, "{pins}: {}", e.source),
            None => assert!(
                !e.source.contains("transpose_store_"),
                "{pins}: {}",
                e.source
            ),
        }
        emitted.push(e);
    }
    let labels: Vec<String> = points.iter().map(|(p, _)| p.to_string()).collect();
    common::assert_no_spills(&emitted, &labels);
}

/// 2-byte elements (r43): Y's rows take the windows wherever they are known not to start on 16
/// bytes (M not a multiple of 8: odd, or rows aligned to 4 or 8 bytes only), never the shifted
/// 16-byte stores (those are for 4-byte elements), and aligned rows keep `store_tile`'s vectors.
#[test]
fn unaligned_two_byte_rows_take_line_windows_at_store_lines_1() {
    let on = format!("{WINNER} STORE_LINES=1");
    let none: Vec<String> = Vec::new();
    let y = vec!["Y".to_string()];
    for types in ["T=bf16", "T=f16"] {
        let at = |pins: &str, m, n| typed_decisions(pins, Some(types), Some((m, n)));
        assert_eq!(at(&on, 8191, 8193), (y.clone(), none.clone()), "{types}");
        // Rows aligned to 4 (M ≡ 2 mod 4) or 8 bytes (M ≡ 4 mod 8) only.
        assert_eq!(at(&on, 130, 94), (y.clone(), none.clone()), "{types}");
        assert_eq!(at(&on, 132, 77), (y.clone(), none.clone()), "{types}");
        // Aligned rows (M a multiple of 8), and only X's rows unaligned.
        assert_eq!(at(&on, 136, 77), (none.clone(), none.clone()), "{types}");
        assert_eq!(at(&on, 8192, 8192), (none.clone(), none.clone()), "{types}");
        // STORE_LINES=0, and VEC_COPY=1 (a 4-byte form: nothing fused at 2-byte elements).
        assert_eq!(
            at(&format!("{WINNER} STORE_LINES=0"), 8191, 8193),
            (none.clone(), none.clone()),
            "{types}"
        );
        assert_eq!(
            at(&format!("{WINNER} VEC_COPY=1 STORE_LINES=1"), 8191, 8193),
            (none.clone(), none.clone()),
            "{types}"
        );
    }
}

/// 2-byte elements: a window is one 4-byte store (the pair both inside the segment and the
/// tensor; PTX `st.global.v2.u16`, one `STG.E`) and a 2-byte store for each bound it tests (a
/// pair with one element outside): at a tile inside the tensor's columns the middle windows test
/// neither, the first window the first element and the last windows the last; at the tensor's
/// edge every window tests both (`window_edge_stores`). Each row's windows store at immediate
/// offsets from one address; no vector stores, no spills. r25's winner and tiles with idle
/// warps, rows shorter than a line and several tiles a block, in bf16 and f16.
#[test]
fn two_byte_line_stores_compile_to_a_pair_store_a_window() {
    // (pins, types, M, N, row segments a thread, their length C = TILE_R)
    let points = [
        (WINNER, "T=bf16", 8191, 8193, 2, 128),
        (
            "TILE_R=128 TILE_C=16 TILES=1 THREADS=1024",
            "T=f16",
            77,
            131,
            1,
            128,
        ),
        (
            "TILE_R=16 TILE_C=16 TILES=1 THREADS=128",
            "T=bf16",
            35,
            67,
            4,
            16,
        ),
        (
            "TILE_R=32 TILE_C=32 TILES=4 THREADS=256 AHEAD=2",
            "T=f16",
            130,
            94,
            4 * 4,
            32,
        ),
        (
            "TILE_R=64 TILE_C=64 TILES=1 THREADS=512",
            "T=bf16",
            1001,
            3001,
            4,
            64,
        ),
    ];
    let at: Vec<_> = (points.iter())
        .map(|&(p, t, m, n, ..)| (p, Some(t), m, n))
        .collect();
    let Some(compiled) = line_store_ptx(&at) else {
        return;
    };
    for ((entry, st), &(.., rows, c)) in compiled.iter().zip(&points) {
        let (windows, edge_stores, bases) = expected_stores(rows, c, true);
        // A pair is 4 bytes, written as one 32-bit or one 2 x 16-bit vector store (one `STG.E`).
        let count = |forms: &[&str]| {
            (st.iter())
                .filter(|l| forms.iter().any(|f| l.starts_with(f)))
                .count()
        };
        let pairs = count(&[
            "st.global.v2.u16 ",
            "st.global.v2.b16 ",
            "st.global.b32 ",
            "st.global.u32 ",
        ]);
        let edges = count(&["st.global.u16 ", "st.global.b16 "]);
        assert_eq!(pairs, windows, "{entry}: {st:?}");
        assert_eq!(edges, edge_stores, "{entry}: {st:?}");
        assert_eq!(st.len(), windows + edge_stores, "{entry}: {st:?}");
        let distinct: std::collections::BTreeSet<_> = st.iter().map(|l| base(l)).collect();
        assert_eq!(distinct.len(), bases, "{entry}: {st:?}");
    }
}
