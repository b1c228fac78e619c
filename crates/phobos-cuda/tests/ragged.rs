//! `RAGGED` in `examples/flash_attention.ph` (bench/NOTES.md a17): causal BR=192's row blocks
//! aligned to N's end, so that the ragged block (192 does not divide N) is the first, the
//! shortest under causal, instead of the last, the longest. RAGGED=0 compiles to the PTX of the
//! example without the knob; RAGGED=1 is a causal BR=192 point only, shifts the rows, keeps the
//! block-uniform mask test, and compiles without spills. The GPU cases are in
//! tests/common/attention_cases.rs.

mod common;

const FA: &str = "examples/flash_attention.ph";
const FORM: &str = "BR=192 THREADS=512 MIN_BLOCKS=1 RING=1 PRODUCER=2";
const SHIFT: &str = "r0 = ph::max(0, ph::sub(r0, ph::sub(ph::mul(";

/// The example as it was before the knob: its declaration, its `@where` and its row shift gone,
/// with the lines kept (as comments) so that the `#line`s stay where they were.
fn without_ragged() -> String {
    let text = common::source(FA).text;
    let decl = ", RAGGED in {0, 1}";
    let filter = "@where(RAGGED == 0 || (CAUSAL == 1 && BR == 192))";
    let start = text
        .find("  var r0 = rb * BR\n")
        .expect("the shift's block");
    let end = text.find("  let r = r0\n").expect("the shift's end");
    assert!(text.contains(decl) && text.contains(filter));
    let lines = text[start..end].lines().count();
    let before = "//\n".repeat(lines) + "  let r = rb * BR\n";
    let body = format!(
        "{}{before}{}",
        &text[..start],
        &text[end + "  let r = r0\n".len()..]
    );
    body.replace(decl, "").replace(filter, "//")
}

/// PTX without its debug lines (`.loc`, `.file`, comments): the `#line`s and the header differ.
fn code(ptx: &str) -> Vec<&str> {
    (ptx.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(".loc") && !l.starts_with(".file"))
        .filter(|l| !l.starts_with("//"))
        .collect()
}

/// RAGGED=0 emits a dead `if (false)` block and reads `r` through a copy; NVRTC makes the same
/// PTX of it as of the example without the knob, causal and not, persistent and not.
#[test]
fn ragged_0_compiles_to_the_code_before() {
    let points = [
        ("BR=192 BC=128 THREADS=512 MIN_BLOCKS=1 OVERLAP=2 RING=1 PRODUCER=2 PERSIST=2 WALK=1 CAUSAL=1", "T=f16"),
        ("BR=128 BC=128 THREADS=384 MIN_BLOCKS=1 OVERLAP=1 PINGPONG=1 RING=1 PRODUCER=2 PERSIST=2", "T=bf16"),
        ("BR=64 BC=32 THREADS=128 MIN_BLOCKS=3 OVERLAP=0 CAUSAL=1", "T=f16"),
    ];
    let without = without_ragged();
    let mut jobs = Vec::new();
    for (pins, types) in points {
        let pins = format!("D=64 {pins}");
        let before = common::emitted_sm90(FA, &without, &pins, types);
        let now = common::example_sm90(FA, &format!("{pins} RAGGED=0"), types);
        assert!(
            now.source.contains(SHIFT) && !before.source.contains(SHIFT),
            "{pins}"
        );
        assert!(!before.source.contains("r0"), "{pins}");
        for e in [now, before] {
            let mut o = common::compile_options(&e);
            o.cubin = false;
            jobs.push((e.source.clone(), o));
        }
    }
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    for (pair, (pins, types)) in results.chunks(2).zip(points) {
        let [now, before] = pair else { unreachable!() };
        let (now, before) = (now.as_ref().unwrap(), before.as_ref().unwrap());
        assert_eq!(code(&now.ptx), code(&before.ptx), "{pins} {types}");
    }
}

/// RAGGED=1 is a causal BR=192 point only: elsewhere the shift is none (BR divides the N of
/// the other forms' tuning) or, non-causal, only moves the wasted rows.
#[test]
fn ragged_1_is_causal_br_192_only() {
    let module = phobos_check::load(common::source(FA)).unwrap();
    let info = &module.kernels[0];
    let outside = |pins: &str| {
        let v = info.variant(Some(pins), None, None).unwrap();
        common::outside_where(&module, info, &v)
    };
    let causal = format!("{FORM} BC=128 OVERLAP=1 PERSIST=2 CAUSAL=1");
    assert!(!outside(&format!("{causal} RAGGED=1")));
    assert!(!outside(&format!("{causal} RAGGED=0")));
    assert!(outside(&format!(
        "{FORM} BC=128 OVERLAP=1 PERSIST=2 CAUSAL=0 RAGGED=1"
    )));
    assert!(outside(
        "BR=128 BC=128 THREADS=384 MIN_BLOCKS=1 OVERLAP=1 RING=1 PRODUCER=2 CAUSAL=1 RAGGED=1"
    ));
}

/// Both walks of the persistent form (the producer's, which loads q at `r`, and the
/// consumers') shift r under `if (true)`, and the mask still skips on `r` (an immutable
/// uniform): the causal test `c + 127 <= r` is in the key loop.
#[test]
fn ragged_1_shifts_both_walks_and_keeps_the_mask_test() {
    let e = common::example_sm90(
        FA,
        &format!("{FORM} BC=128 OVERLAP=2 PERSIST=2 WALK=1 CAUSAL=1 RAGGED=1"),
        "T=f16",
    );
    let src = &e.source;
    assert_eq!(src.matches(SHIFT).count(), 2);
    for (at, _) in src.match_indices(SHIFT) {
        let guard = src[..at].rsplit("if (").next().unwrap();
        assert!(guard.starts_with("true) {"), "{guard}");
    }
    assert!(src.contains("const int r = r0;"));
    assert!(src.contains("((long long)(c) + 127LL) <= (long long)(r)"));
    assert!(src.contains("ph::ring_tma_3d(ph_resident + 0, &ph_tma2, 0, r, bh,"));
}

/// The rows and key tiles RAGGED's shift gives (the emitted formula, r = max(0, rb·BR −
/// (gx·BR − N))): every row of [0, N) in some row block and none past N once N ≥ BR; at
/// N=4096, a head runs 364 key tiles of 128 instead of 384 (the count a17's prediction uses).
#[test]
fn the_shift_covers_every_row_and_runs_fewer_tiles() {
    let (br, bc) = (192i64, 128i64);
    let tiles = |n: i64, ragged: bool| -> i64 {
        let gx = (n + br - 1) / br;
        let mut covered = vec![false; n as usize];
        let mut count = 0;
        for rb in 0..gx {
            let r = if ragged {
                (rb * br - (gx * br - n)).max(0)
            } else {
                rb * br
            };
            if ragged && n >= br {
                assert!(r + br <= n, "N={n} rb={rb}");
            }
            for row in r..(r + br).min(n) {
                covered[row as usize] = true;
            }
            let hi = n.min(r + br);
            count += (hi + bc - 1) / bc;
        }
        assert!(covered.iter().all(|&c| c), "N={n} ragged={ragged}");
        count
    };
    for n in [577, 1000, 4096, 4097, 8192] {
        assert!(tiles(n, true) <= tiles(n, false), "N={n}");
    }
    assert_eq!((tiles(4096, false), tiles(4096, true)), (384, 364));
}

/// RAGGED=1's points compile with no spill, as their RAGGED=0 twins (tests/three_warpgroups.rs).
#[test]
fn ragged_1_points_compile_without_spills() {
    let points = [
        ("BC=128 OVERLAP=2 PERSIST=2 WALK=1", "T=f16"),
        ("BC=128 OVERLAP=1 PERSIST=2", "T=bf16"),
        ("BC=64 OVERLAP=1 PERSIST=2 WALK=1", "T=f16"),
    ];
    let emitted: Vec<_> = (points.iter())
        .map(|(p, t)| common::example_sm90(FA, &format!("{FORM} {p} CAUSAL=1 RAGGED=1"), t))
        .collect();
    let labels: Vec<String> = (points.iter()).map(|(p, t)| format!("{p} {t}")).collect();
    common::assert_no_spills(&emitted, &labels);
}
