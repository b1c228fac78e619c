//! Shifted loads (`cuda/phobos_shifted.cuh`, `layout::shifted_tensors`): the tile loads of a
//! 2-byte tensor whose rows are known not to start on 16 bytes (the problem's row length has no
//! factor 8) read the two aligned 16-byte vectors covering each 8-element group. Which kernels
//! take them (the plan's decision, a note in the emitted code), and that they compile to 128-bit
//! global loads (offline NVRTC). On the GPU: gpu_diff's row-wise bf16 cases at odd widths
//! (`cargo test -p phobos-cuda --release --test gpu_diff -- --ignored`).

mod common;

use phobos_cuda::{emit, EmitOptions, Emitted};

/// `examples/{file}` at `pins` with `types`, specialized on `dims` when given.
fn example(file: &str, pins: &str, types: &str, dims: Option<&[(&str, i64)]>) -> Emitted {
    let path = format!("examples/{file}");
    let src = common::source(&path);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{path}: {d:?}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(Some(pins), Some(types), None)
        .unwrap_or_else(|e| panic!("{path} {pins}: {e:?}"));
    let mut k = phobos_check::instantiate(&module, info, &variant)
        .unwrap_or_else(|d| panic!("{path} {pins}: {d:?}"));
    if let Some(dims) = dims {
        let dims: Vec<(String, i64)> = dims.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        phobos_cuda::specialize_alignment(&mut k, &dims);
    }
    let opts = EmitOptions { source: Some(src) };
    emit(&k, &opts).unwrap_or_else(|e| panic!("{path} {pins}: {e}"))
}

const NOTE: &str = "X: rows known unaligned, tile loads shifted";

#[test]
fn odd_bf16_rows_take_shifted_loads() {
    let ce = |types: &str, dims: Option<&[(&str, i64)]>| {
        example("cross_entropy.ph", "BLOCK=4096 THREADS=256", types, dims).source
    };
    let odd = ce("T=bf16", Some(&[("M", 4096), ("V", 50257)]));
    // Two loads of the chunk loop, six of the PARTIALS branch, emitted under `if (false)` at
    // the default PARTIALS=0 (four chunks a step, the masked rest's two mask paths), and the
    // whole row's of the WHOLE branch (dead at WHOLE=0).
    assert_eq!(odd.matches("ph::load_tile_shifted<").count(), 9, "{odd}");
    assert!(!odd.contains("ph::load_tile<"), "{odd}");
    assert!(odd.contains(NOTE), "{odd}");
    assert!(odd.contains("#include \"phobos_shifted.cuh\""), "{odd}");
    // Rows on 16 bytes (50256 = 8 × 6282), rows of unknown alignment (not specialized), and
    // 4-byte elements (element groups, r6) keep `load_tile`.
    for (label, src) in [
        ("aligned", ce("T=bf16", Some(&[("M", 4096), ("V", 50256)]))),
        ("unknown", ce("T=bf16", None)),
        ("f32", ce("T=f32", Some(&[("M", 4096), ("V", 50257)]))),
    ] {
        assert!(!src.contains("ph::load_tile_shifted<"), "{label}: {src}");
        assert!(!src.contains(NOTE), "{label}: {src}");
        assert!(src.contains("ph::load_tile<"), "{label}: {src}");
    }
    // The online softmax: every load of X (each pass's first chunk and the chunk it loads
    // ahead) is shifted; its store keeps `store_tile` (the default point drops its eviction
    // hints: EVICT=0).
    let sm = example(
        "softmax_online.ph",
        "BLOCK=4096 THREADS=512",
        "T=bf16",
        Some(&[("M", 2048), ("N", 50257)]),
    )
    .source;
    // Two a pass, six of the first pass's PARTIALS form (dead code at PARTIALS=0), and the
    // whole row's (dead at WHOLE=0).
    assert_eq!(sm.matches("ph::load_tile_shifted<").count(), 11, "{sm}");
    assert!(!sm.contains("ph::load_tile<"), "{sm}");
    assert!(sm.contains("ph::store_tile("), "{sm}");
    // The SHIFT knob: 1 names the row-shift form (with the hint written out), 0 is the default.
    let once = ce_at("BLOCK=4096 THREADS=256 SHIFT=1");
    assert_eq!(
        once.matches("ph::load_tile_shifted<Blk1x4096, ph::EVICT_NORMAL, 1>(")
            .count(),
        9,
        "{once}"
    );
    // SHIFT=2 names its own form; every load of the partials' loop takes it.
    let inside = ce_at("BLOCK=2048 THREADS=256 SHIFT=2 PARTIALS=4");
    assert_eq!(
        inside
            .matches("ph::load_tile_shifted<Blk1x2048, ph::EVICT_NORMAL, 2>(")
            .count(),
        9,
        "{inside}"
    );
    assert!(!inside.contains("ph::EVICT_NORMAL, 1>("), "{inside}");
    assert_eq!(
        ce_at("BLOCK=4096 THREADS=256 SHIFT=0"),
        ce_at("BLOCK=4096 THREADS=256")
    );
}

fn ce_at(pins: &str) -> String {
    example(
        "cross_entropy.ph",
        pins,
        "T=bf16",
        Some(&[("M", 4096), ("V", 50257)]),
    )
    .source
}

/// The shifted loads are 128-bit loads of global memory (`ld.global.v4`, not generic `ld.v4`:
/// the aligned address is derived from the tensor's pointer), and the kernels do not spill.
#[test]
fn shifted_loads_are_128_bit_global_loads() {
    let emitted = [
        example(
            "cross_entropy.ph",
            "BLOCK=4096 THREADS=256",
            "T=bf16",
            Some(&[("M", 4096), ("V", 50257)]),
        ),
        example(
            "softmax_online.ph",
            "BLOCK=4096 THREADS=512",
            "T=bf16",
            Some(&[("M", 2048), ("N", 50257)]),
        ),
        // SHIFT=2 and the per-position partials (bench/NOTES.md r13): no spill at 105
        // registers, the unguarded whole-chunk path's loads 128-bit too.
        example(
            "cross_entropy.ph",
            "BLOCK=2048 THREADS=256 SHIFT=2 PARTIALS=4",
            "T=bf16",
            Some(&[("M", 4096), ("V", 50257)]),
        ),
        // SHIFT=1: the row's shift once, the conversion branching on it.
        example(
            "cross_entropy.ph",
            "BLOCK=4096 THREADS=256 SHIFT=1",
            "T=bf16",
            Some(&[("M", 4096), ("V", 50257)]),
        ),
        example(
            "softmax_online.ph",
            "BLOCK=4096 THREADS=512 SHIFT=1",
            "T=bf16",
            Some(&[("M", 2048), ("N", 50257)]),
        ),
    ];
    let jobs: Vec<_> = (emitted.iter())
        .map(|e| (e.source.clone(), common::compile_options(e)))
        .collect();
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    for (e, r) in emitted.iter().zip(&results) {
        let c = r
            .as_ref()
            .unwrap_or_else(|err| panic!("{}: {}", e.entry, err.log));
        let v4 = c
            .ptx
            .lines()
            .filter(|l| l.contains("ld.global") && l.contains(".v4."))
            .count();
        assert!(v4 >= 4, "{}: {v4} 128-bit global loads\n{}", e.entry, c.ptx);
        assert!(
            !c.ptx.lines().any(|l| l.trim_start().starts_with("ld.v4.")),
            "{}: generic 128-bit loads",
            e.entry
        );
        let res = phobos_gpu::resources::of_compiled(c, &e.entry).expect("ptxas report");
        assert_eq!(res.spill_store_bytes, 0, "{}: spills", e.entry);
    }
}
