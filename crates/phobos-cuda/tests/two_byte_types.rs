//! The row-wise examples generic over their element type at 2-byte types (`T=bf16`, `T=f16`):
//! examples/softmax.ph (the row loaded into an f32 tile by `f32(X[..])`, reduced and normalized
//! in f32, the output rounded once at the store by `T(..)`) and examples/transpose.ph (the bits
//! moved through the f32 scratch of `transpose`). Which accesses the code generator chooses
//! (emitted code), and that the points at bench/rowwise.py's bf16 shapes compile without spills
//! to 16-byte global accesses (offline NVRTC and ptxas). On the GPU: gpu_diff's bf16 and f16
//! `softmax.ph` and `transpose.ph` cases (`cargo test -p phobos-cuda --release --test gpu_diff
//! -- --ignored`).

mod common;

const SOFTMAX: &str = "examples/softmax.ph";
const TRANSPOSE: &str = "examples/transpose.ph";

/// The example at `path` at `pins` with `types` (the defaults when empty), specialized on M x N.
fn at(path: &str, pins: &str, types: &str, m: i64, n: i64) -> phobos_cuda::Emitted {
    common::specialized(common::source(path), pins, types, &[("M", m), ("N", n)])
}

fn emitted(pins: &str, types: &str, m: i64, n: i64) -> phobos_cuda::Emitted {
    at(SOFTMAX, pins, types, m, n)
}

/// The PTX's 128-bit accesses of kind `op` (`ld.global`, `st.global`).
fn vectors(ptx: &str, op: &str) -> usize {
    (ptx.lines())
        .filter(|l| l.contains(op) && l.contains(".v4."))
        .count()
}

/// Rows of 8 two-byte elements a 16-byte vector: the tile's layout groups 8, aligned rows load
/// and store by whole vectors, odd rows by the shifted loads; f32 keeps its 4-element groups.
#[test]
fn two_byte_rows_take_8_element_groups() {
    let aligned = emitted("ROWS=1 BLOCK=4096 THREADS=512", "T=bf16", 32768, 4096).source;
    assert!(
        aligned.contains("using Blk1x4096 = ph::Blocked<1, 4096, 512, 8>;"),
        "{aligned}"
    );
    assert!(
        aligned.contains(
            "ph::Tile<float, Blk1x4096> ph_t1 = ph::load_tile<Blk1x4096>(ph::Region<const ph::bf16>{X, "
        ),
        "{aligned}"
    );
    // The mask's unmasked value, assigned first (a per-thread mask test, plan/masks.rs).
    assert!(aligned.contains("x.v[ph_i] = ph_t1.v[ph_i];"), "{aligned}");
    // `T(..)` is stored by the store's own rounding (no `rn_bf16` round trip first).
    assert!(!aligned.contains("ph::rn_bf16("), "{aligned}");
    assert!(
        aligned.contains("ph::store_tile(ph::Region<ph::bf16>{Y, "),
        "{aligned}"
    );
    let odd = emitted("ROWS=2 BLOCK=1024 THREADS=256", "T=bf16", 9, 1001).source;
    assert!(
        odd.contains("ph::load_tile_shifted<Blk2x1024>(ph::Region<const ph::bf16>{X, "),
        "{odd}"
    );
    let half = emitted("ROWS=1 BLOCK=4096 THREADS=512", "T=f16", 32768, 4096).source;
    assert!(half.contains("ph::Region<const ph::f16>{X, "), "{half}");
    assert!(!half.contains("ph::rn_f16("), "{half}");
    assert!(
        half.contains("ph::store_tile(ph::Region<ph::f16>{Y, "),
        "{half}"
    );
    let f32 = emitted("ROWS=1 BLOCK=4096 THREADS=512", "", 32768, 4096).source;
    assert!(
        f32.contains("using Blk1x4096 = ph::Blocked<1, 4096, 512, 4>;"),
        "{f32}"
    );
    // The casts of an f32 row are no code: no rounding, the tile loaded as before.
    assert!(!f32.contains("ph::rn_"), "{f32}");
    assert!(
        f32.contains("ph::load_tile<Blk1x4096>(ph::Region<const float>{X, "),
        "{f32}"
    );
}

/// Every point whose `@where` holds in bf16 at the aligned shapes of bench/rowwise.py's softmax
/// rows of 4096 and 8000 (rows of 8k and less in one tile): the row read by 128-bit loads and
/// written by 128-bit stores. The space holds 128 bytes of X a thread in either type, so bf16
/// has twice f32's elements a thread (bench/NOTES.md r45). Points of both spaces: no spills
/// wherever the f32 row at the same pins has none (the tile is f32 in both types, so a row
/// needs the same registers; 32 elements a thread at two 512-thread blocks, a 64-register cap,
/// spill in either). Points only bf16 has (33 to 64 elements a thread): no spills under a cap
/// of 128 registers or more, among them the 8k row a 128-thread block.
#[test]
fn bf16_points_at_the_bench_shapes_compile_to_vectors_without_spills() {
    struct Case {
        /// Where the bf16 compile is in the list.
        bf16: usize,
        /// Where the f32 twin's compile is; `None` for a point only bf16 has.
        f32_twin: Option<usize>,
        cap: i64,
        wide_row: bool,
    }
    let (mut emitted_all, mut labels, mut cases) = (Vec::new(), Vec::new(), Vec::new());
    let mut add = |e, label: String| {
        emitted_all.push(e);
        labels.push(label);
        labels.len() - 1
    };
    for (m, n) in [(32768, 4096), (8192, 8000)] {
        let dims = [("M", m), ("N", n)];
        let points = common::points_where_typed(SOFTMAX, "T=bf16", &dims);
        let f32_points = common::points_where(SOFTMAX, &dims);
        assert!(
            f32_points.len() >= 6,
            "{m}x{n}: {} f32 points",
            f32_points.len()
        );
        assert!(
            f32_points.iter().all(|p| points.contains(p)),
            "{m}x{n}: an f32 point the bf16 space lacks"
        );
        assert!(
            points.len() > f32_points.len(),
            "{m}x{n}: {} bf16 points, {} f32",
            points.len(),
            f32_points.len()
        );
        for p in points {
            let pins = p.to_pins();
            let v = |k| p.get(k).unwrap();
            let label = format!("{pins} at M={m},N={n}");
            let bf16 = add(emitted(&pins, "T=bf16", m, n), label.clone());
            let f32_twin = f32_points
                .contains(&p)
                .then(|| add(emitted(&pins, "", m, n), format!("{label} (f32)")));
            cases.push(Case {
                bf16,
                f32_twin,
                cap: (65536 / (v("THREADS") * v("MIN_BLOCKS"))).min(255),
                wide_row: (v("ROWS"), v("BLOCK"), v("THREADS")) == (1, 8192, 128),
            });
        }
    }
    let Some(out) = common::compiled(&emitted_all, &labels) else {
        return;
    };
    let spills = |i: usize| (out[i].1.spill_store_bytes, out[i].1.spill_load_bytes);
    let (mut clean, mut only_bf16, mut wide_rows) = (0, 0, 0);
    for c in &cases {
        let (i, label) = (c.bf16, &labels[c.bf16]);
        let bf16 = &out[i].0;
        assert!(
            vectors(&bf16.ptx, "ld.global") >= 1,
            "{label}: no 128-bit load"
        );
        assert!(
            vectors(&bf16.ptx, "st.global") >= 1,
            "{label}: no 128-bit store"
        );
        match c.f32_twin {
            Some(t) if spills(t) == (0, 0) => {
                clean += 1;
                assert_eq!(spills(i), (0, 0), "{label}: spills where f32 does not");
            }
            Some(_) => {}
            None if c.cap >= 128 => {
                only_bf16 += 1;
                assert_eq!(
                    spills(i),
                    (0, 0),
                    "{label}: spills under {} registers",
                    c.cap
                );
            }
            None => {}
        }
        if c.wide_row {
            wide_rows += 1;
            assert!(
                c.f32_twin.is_none(),
                "{label}: f32 holds 64 elements a thread"
            );
        }
    }
    assert!(wide_rows >= 2, "{wide_rows} 8k rows a 128-thread block");
    assert!(clean >= 12, "{clean} points without f32 spills");
    assert!(
        only_bf16 >= 6,
        "{only_bf16} points only bf16 has, compiled clean"
    );
}

fn transposed(pins: &str, types: &str, m: i64, n: i64) -> phobos_cuda::Emitted {
    at(TRANSPOSE, pins, types, m, n)
}

/// A 2-byte transpose keeps its tiles in 8-element groups (16-byte loads, and 16-byte stores
/// where Y's rows are aligned) and transposes through the f32 scratch; odd rows load by the
/// shifted 16-byte loads. Its f32 code is unchanged by the type parameter (4-element groups).
#[test]
fn two_byte_transposes_take_8_element_groups() {
    let pins = "TILE_R=64 TILE_C=64 TILES=2 THREADS=256";
    let aligned = transposed(pins, "T=bf16", 8192, 8192).source;
    assert!(
        aligned.contains("using Blk64x64 = ph::Blocked<64, 64, 256, 8>;"),
        "{aligned}"
    );
    assert!(
        aligned.contains("ph::load_tile<Blk64x64>(ph::Region<const ph::bf16>{X, "),
        "{aligned}"
    );
    assert!(
        aligned.contains("= ph::transpose<Blk64x64>(t, ph_scratch);"),
        "{aligned}"
    );
    assert!(
        aligned.contains("ph::store_tile(ph::Region<ph::bf16>{Y, "),
        "{aligned}"
    );
    let odd = transposed(pins, "T=bf16", 8191, 8193).source;
    assert!(
        odd.contains("ph::load_tile_shifted<Blk64x64>(ph::Region<const ph::bf16>{X, "),
        "{odd}"
    );
    let f32 = transposed(pins, "", 8192, 8192).source;
    assert!(
        f32.contains("using Blk64x64 = ph::Blocked<64, 64, 256, 4>;"),
        "{f32}"
    );
}

/// bf16 transposes at bench/rowwise.py's shapes, odd and aligned, at tiles of each size the
/// f32 winners use: no spills, 16-byte loads.
#[test]
fn bf16_transposes_compile_without_spills() {
    let mut all = Vec::new();
    let mut labels = Vec::new();
    for pins in [
        "TILE_R=128 TILE_C=64 TILES=4 THREADS=1024 AHEAD=2",
        "TILE_R=128 TILE_C=32 TILES=2 THREADS=512",
        "TILE_R=64 TILE_C=64 TILES=4 THREADS=256 AHEAD=2",
        "TILE_R=32 TILE_C=32 TILES=1 THREADS=128",
    ] {
        for (m, n) in [(8191, 8193), (8192, 8192), (4096, 16384)] {
            all.push(transposed(pins, "T=bf16", m, n));
            labels.push(format!("{pins} at M={m},N={n}"));
        }
    }
    let Some(out) = common::assert_no_spills(&all, &labels) else {
        return;
    };
    for ((c, _), label) in out.iter().zip(&labels) {
        assert!(
            vectors(&c.ptx, "ld.global") >= 1,
            "{label}: no 128-bit load"
        );
    }
}
