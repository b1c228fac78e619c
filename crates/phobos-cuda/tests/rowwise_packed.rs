//! Packed rows (the knob `PACK`, `cuda/phobos_rowpack.cuh`): a `let` bound to a tile load of a
//! 2-byte float type is held two elements to a 32-bit register (`ph::Packed`), a row tile
//! loaded straight into them (`ph::load_row_packed`). Which kernels take it (emitted code),
//! and that examples/softmax_row.ph's wide points compile to 128-bit global loads without
//! spills (offline NVRTC and ptxas). On the GPU: gpu_diff's bf16 `softmax_row.ph` cases at odd
//! and aligned widths (`cargo test -p phobos-cuda --release --test gpu_diff -- --ignored`).

mod common;

use phobos_cuda::Emitted;

/// `examples/softmax_row.ph` at `pins` with `types`, specialized on M x N.
fn row(pins: &str, types: &str, n: i64) -> Emitted {
    let src = common::source("examples/softmax_row.ph");
    common::specialized(src, pins, types, &[("M", 2048), ("N", n)])
}

/// The branch of softmax_row.ph's `if PACK != 4` that the point runs (the other is emitted as
/// dead code under a constant condition).
fn live(src: &str) -> String {
    let (head, rest) = src.split_once("  if (").expect("the PACK branch");
    let (cond, rest) = rest.split_once(") {\n").expect("its body");
    let (taken, other) = rest.split_once("  } else {\n").expect("its else");
    let body = match cond {
        "true" => taken,
        "false" => other,
        _ => panic!("not a constant condition: {cond}"),
    };
    format!("{head}{body}")
}

#[test]
fn pack_holds_2_byte_rows_packed() {
    let packed = live(&row("BLOCK=57344 THREADS=1024 PACK=1", "T=bf16", 50257).source);
    assert!(
        packed.contains("ph::Packed<ph::bf16, Blk1x57344> x = ph::load_row_packed<Blk1x57344, "),
        "{packed}"
    );
    assert!(
        packed.contains("#include \"phobos_rowpack.cuh\""),
        "{packed}"
    );
    // Every use reads the packed registers in place: no f32 copy of the row.
    assert!(!packed.contains("ph::unpack("), "{packed}");
    assert!(!packed.contains("ph::load_tile_shifted<"), "{packed}");
    // PACK=1 stores as before; PACK=2 stores odd rows by aligned vectors, aligned rows as before.
    assert!(
        packed.contains("ph::store_tile(ph::Region<ph::bf16>"),
        "{packed}"
    );
    let shifted = live(&row("BLOCK=57344 THREADS=1024 PACK=2", "T=bf16", 50257).source);
    assert!(
        shifted.contains("ph::store_row_shifted(ph::Region<ph::bf16>"),
        "{shifted}"
    );
    assert!(shifted.contains("ph::load_row_packed<"), "{shifted}");
    let aligned = live(&row("BLOCK=32768 THREADS=1024 PACK=2", "T=bf16", 32000).source);
    assert!(!aligned.contains("ph::store_row_shifted("), "{aligned}");
    assert!(aligned.contains("ph::store_tile("), "{aligned}");
    // PACK=0 is the code of before (the shifted f32 tile); f32 rows ignore the knob.
    let plain = live(&row("BLOCK=57344 THREADS=1024 PACK=0", "T=bf16", 50257).source);
    assert!(!plain.contains("ph::Packed<"), "{plain}");
    assert!(
        plain.contains("ph::Tile<float, Blk1x57344> x = ph::load_tile_shifted<"),
        "{plain}"
    );
    // (the same code but the first line, which names the point).
    let body = |pins: &str| {
        let src = row(pins, "T=f32", 32000).source;
        src.split_once('\n').expect("a header line").1.to_string()
    };
    assert_eq!(
        body("BLOCK=32768 THREADS=1024 PACK=1"),
        body("BLOCK=32768 THREADS=1024 PACK=0")
    );
}

/// PACK=3 is PACK=2 with fewer instructions an element: the column masks compare a constant of
/// the register with the limit less the thread's first column; PACK=2 keeps its masks. At every
/// PACK the store of `T(..)` rounds once (no `rn_bf16` before it; bench/NOTES.md r49).
#[test]
fn pack3_masks_against_the_first_column_and_rounds_once() {
    let lean = live(&row("BLOCK=57344 THREADS=1024 PACK=3", "T=bf16", 50257).source);
    let mask = "(ph::col_rel<Blk1x57344>(ph_i) < (N) - ph::col_of<Blk1x57344>(0))";
    assert_eq!(lean.matches(mask).count(), 2, "{lean}");
    assert!(!lean.contains("ph::col_of<Blk1x57344>(ph_i)"), "{lean}");
    assert!(!lean.contains("ph::rn_bf16("), "{lean}");
    assert!(lean.contains("ph::load_row_packed<"), "{lean}");
    assert!(
        lean.contains("ph::store_row_shifted(ph::Region<ph::bf16>"),
        "{lean}"
    );
    let before = live(&row("BLOCK=57344 THREADS=1024 PACK=2", "T=bf16", 50257).source);
    assert!(!before.contains("ph::col_rel<"), "{before}");
    assert_eq!(
        before.matches("ph::col_of<Blk1x57344>(ph_i) < N").count(),
        2,
        "{before}"
    );
    assert!(!before.contains("ph::rn_bf16("), "{before}");
    // f32 rows take the masks (a cast to f32 is no rounding to drop).
    let f32 = live(&row("BLOCK=32768 THREADS=1024 PACK=3", "T=f32", 32000).source);
    assert!(
        f32.contains("ph::col_rel<Blk1x32768>(ph_i) < (N) - "),
        "{f32}"
    );
}

/// PACK=4 writes the mask once, at the load: the `let` of `where(arange(BLOCK) < N, X[..], -inf)`
/// is held packed with -inf filled past N, neither pass masks, the max combines packed pairs and
/// the reductions combine the warps' partials by lanes (bench/NOTES.md r14). The same body in
/// f32 is an f32 tile (nothing to pack) with the same lane-combined reductions.
#[test]
fn pack4_fills_the_row_at_its_load() {
    let filled = live(&row("BLOCK=57344 THREADS=1024 PACK=4", "T=bf16", 50257).source);
    assert!(
        filled.contains(
            "ph::Packed<ph::bf16, Blk1x57344> x_2 = ph::load_row_packed_fill<Blk1x57344, ph::EVICT_NORMAL>("
        ),
        "{filled}"
    );
    assert!(
        filled.contains(", N, -ph::inf_f32(), ph_scratch);"),
        "{filled}"
    );
    assert!(!filled.contains("ph::col_rel<"), "{filled}");
    assert!(
        filled.contains("= ph::reduce_all_packed<ph::Max>(x_2, ph_scratch);"),
        "{filled}"
    );
    assert!(
        filled.contains("ph::reduce_all_lanes<ph::Sum>("),
        "{filled}"
    );
    assert!(
        filled.contains("ph::store_row_shifted(ph::Region<ph::bf16>"),
        "{filled}"
    );
    let f32 = live(&row("BLOCK=32768 THREADS=1024 PACK=4", "T=f32", 32000).source);
    assert!(!f32.contains("ph::Packed<"), "{f32}");
    assert!(!f32.contains("ph::reduce_all_packed<"), "{f32}");
    assert!(f32.contains("ph::reduce_all_lanes<ph::Max>("), "{f32}");
    // PACK=3 keeps its masks and block reductions.
    let lean = live(&row("BLOCK=57344 THREADS=1024 PACK=3", "T=bf16", 50257).source);
    assert!(!lean.contains("reduce_all_lanes"), "{lean}");
    assert!(!lean.contains("load_row_packed_fill"), "{lean}");
}

/// The packed loads are 128-bit global loads, odd rows exchange the next group's vector by
/// warp shuffles, and the wide bf16 points hold their rows without spilling (the f32 tile of
/// the same row spills: the reason for the knob).
#[test]
fn packed_rows_compile_without_spills() {
    let points = [
        ("BLOCK=57344 THREADS=1024 PACK=1", 50257, true),
        ("BLOCK=32768 THREADS=1024 PACK=1", 32000, true),
        ("BLOCK=16384 THREADS=1024 PACK=1", 16384, true),
        ("BLOCK=57344 THREADS=1024 PACK=0", 50257, false),
        ("BLOCK=57344 THREADS=1024 PACK=2", 50257, true),
        ("BLOCK=57344 THREADS=1024 PACK=3", 50257, true),
        ("BLOCK=57344 THREADS=1024 PACK=4", 50257, true),
        ("BLOCK=32768 THREADS=1024 PACK=4", 32000, true),
    ];
    let emitted: Vec<_> = (points.iter())
        .map(|(pins, n, _)| row(pins, "T=bf16", *n))
        .collect();
    let jobs: Vec<_> = (emitted.iter())
        .map(|e| (e.source.clone(), common::compile_options(e)))
        .collect();
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    // Every PACK converts each element of the store once (before r49 PACK=2 rounded `T(..)` to
    // bf16, back, and again at the store: twice PACK=3's conversions).
    let cvts = |i: usize| {
        let c = results[i].as_ref().expect("compiled");
        c.ptx.matches("cvt.rn.bf16.f32").count()
    };
    assert!(cvts(5) > 0, "PACK=3 stores no bf16");
    assert_eq!(cvts(5), cvts(4), "PACK=3 against PACK=2");
    for ((pins, n, packed), (e, r)) in points.iter().zip(emitted.iter().zip(&results)) {
        let c = r
            .as_ref()
            .unwrap_or_else(|err| panic!("{pins}: {}", err.log));
        let v4 = (c.ptx.lines())
            .filter(|l| l.contains("ld.global") && l.contains(".v4."))
            .count();
        assert!(v4 >= 7, "{pins}: {v4} 128-bit global loads");
        let res = phobos_gpu::resources::of_compiled(c, &e.entry).expect("ptxas report");
        if !packed {
            assert!(
                res.spill_store_bytes > 0,
                "{pins}: the f32 row no longer spills"
            );
            continue;
        }
        if pins.ends_with("PACK=4") {
            // The max on packed pairs; no spill but PACK=3's register at the odd row.
            assert!(c.ptx.contains("max.bf16x2"), "{pins}: no packed max");
            assert!(res.spill_store_bytes <= 4, "{pins}: {res:?}");
            if n % 8 != 0 {
                assert!(c.ptx.contains("shfl.sync.up"), "{pins}: no shuffle up");
            } else {
                assert_eq!(res.spill_store_bytes, 0, "{pins}: spills");
            }
            continue;
        }
        if pins.ends_with("PACK=2") || pins.ends_with("PACK=3") {
            // Vector stores of the odd row; the tile is packed before the store's switch on
            // the shift, so at most lane 31's exchange in one shift's load path spills a
            // register (bench/NOTES.md r12; r11's 20 bytes were the f32 tile across the switch).
            let st = (c.ptx.lines())
                .filter(|l| l.contains("st.global") && l.contains(".v4."))
                .count();
            assert!(st >= 7, "{pins}: {st} 128-bit global stores");
            assert!(c.ptx.contains("shfl.sync.up"), "{pins}: no shuffle up");
            assert!(res.spill_store_bytes <= 4, "{pins}: {res:?}");
            continue;
        }
        assert_eq!(res.spill_store_bytes, 0, "{pins}: spills");
        let shuffles = c.ptx.matches("shfl.sync.down").count();
        if n % 8 != 0 {
            assert!(shuffles > 0, "{pins}: no warp shuffle for the odd row");
        }
    }
}
