//! The knob `ONE_PASS` (bench/NOTES.md r30): a staged bf16 row's max and its later sum of
//! exponentials in one pass (`ph::row_max_sumexp2`). The plan record, where it applies and where
//! not, the emitted code, and offline (NVRTC and ptxas) the compile of the examples' fused points.
//! On the GPU: gpu_diff's whole-row cases of the three examples (common::whole_rows), which run
//! at the default ONE_PASS=1, and their ONE_PASS=0 twins.

mod common;

use phobos_cuda::Emitted;

/// `examples/FILE` at `pins` with `types`, specialized on M and the row width (`w` named `dim`).
fn example(file: &str, pins: &str, types: &str, dim: &str, m: i64, w: i64) -> Emitted {
    common::specialized(
        common::source(&format!("examples/{file}")),
        pins,
        types,
        &[("M", m), (dim, w)],
    )
}

const XENT: &str = "BLOCK=57344 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=2";
const SOFTMAX: &str = "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=2";
const ONLINE: &str = "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2";

/// The three examples' staged rows fuse their max and sum: one record naming the row, the max
/// and the sum and the exponent's factor, one `ph::row_max_sumexp2` in place of the packed max,
/// no element loop of exponentials before the sum, and the sum's statement reading the result.
#[test]
fn staged_rows_take_max_and_sum_in_one_pass() {
    let log2e = 1.4426950216293335; // log2(e) rounded to f32, as the examples write it
    let cases = [
        (
            example("cross_entropy.ph", XENT, "T=bf16", "V", 4096, 50257),
            ["x", "m", "s"],
        ),
        (
            example("softmax_row.ph", SOFTMAX, "T=bf16", "N", 2048, 50257),
            ["x", "m", "l"],
        ),
        (
            example("softmax_online.ph", ONLINE, "T=bf16", "N", 2048, 50257),
            ["x", "mw", "lw"],
        ),
    ];
    for (e, [x, m, s]) in cases {
        assert_eq!(e.sum_exp.len(), 1, "{:?}", e.notes);
        let rec = &e.sum_exp[0];
        assert_eq!(rec.a, log2e);
        assert!(e.notes.contains(&rec.to_string()), "{:?}", e.notes);
        assert!(rec
            .to_string()
            .contains(&format!("of `{x}` in one pass ({m}, {s})")));
        let live = common::body(&e);
        let fused = live
            .find("ph::row_max_sumexp2(x")
            .unwrap_or_else(|| panic!("{live}"));
        assert!(
            !live.contains("ph::reduce_all_packed<ph::Max>(x,"),
            "{live}"
        );
        // The sum's statement takes the value the max's statement computed, with no pass of
        // exponentials or reduction between.
        let sum_var = live[fused..]
            .split_once(", ph_scratch, ")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(v, _)| v.to_string())
            .expect("the sum's variable");
        let read = format!(" = {sum_var};");
        let between = live[fused..]
            .split_once(&read)
            .unwrap_or_else(|| panic!("{live}"))
            .0;
        assert!(!between.contains("exp2_approx"), "{between}");
        assert!(!between.contains("reduce_all"), "{between}");
        // The cross-entropy reads its row no more after the pass: no landed view, whose waits
        // would hold the target's logit load behind them; the softmaxes' store reads it.
        assert_eq!(live.contains("ph::smem_row_landed("), s != "s", "{live}");
    }
}

/// Where it does not apply: ONE_PASS=0 (the two passes, as before the knob), the row in
/// registers (no ROW_SMEM), f32 rows (never staged), a ROW_SPLIT cluster step.
#[test]
fn one_pass_only_on_staged_rows_and_not_when_off() {
    let off = example(
        "cross_entropy.ph",
        &format!("{XENT} ONE_PASS=0"),
        "T=bf16",
        "V",
        4096,
        50257,
    );
    assert!(off.sum_exp.is_empty(), "{:?}", off.notes);
    let body = common::body(&off);
    assert!(
        body.contains("ph::reduce_all_packed<ph::Max>(x, ph_scratch)"),
        "{body}"
    );
    assert!(body.contains("ph::reduce_all_lanes<ph::Sum>("), "{body}");
    for (file, pins, types, dim) in [
        (
            "cross_entropy.ph",
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4",
            "T=bf16",
            "V",
        ),
        (
            "cross_entropy.ph",
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4",
            "T=f32",
            "V",
        ),
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=4",
            "T=bf16",
            "N",
        ),
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=4 ROW_SPLIT=2",
            "T=bf16",
            "N",
        ),
    ] {
        let e = example(file, pins, types, dim, 2048, 50257);
        assert!(e.sum_exp.is_empty(), "{file} {pins} {types}: {:?}", e.notes);
        assert!(!e.source.contains("row_max_sumexp2("), "{file} {pins}");
    }
}

/// ONE_PASS=0 emits what the examples emitted before the knob: the same code as ONE_PASS=1 on
/// every point the fusion does not touch (the row in registers), and the two passes on staged
/// rows.
#[test]
fn one_pass_off_leaves_other_points_unchanged() {
    for (file, pins, dim) in [
        (
            "cross_entropy.ph",
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4",
            "V",
        ),
        ("softmax_row.ph", "BLOCK=57344 THREADS=1024 PACK=4", "N"),
    ] {
        let on = example(file, pins, "T=bf16", dim, 2048, 50257);
        let mut src = common::source(&format!("examples/{file}")).text;
        // The same kernel with ONE_PASS's @where dropped, pinned to 0.
        src = src.replace("@where(ONE_PASS == 1 || ROW_SMEM >= 1)\n", "");
        let off = common::specialized(
            phobos_syntax::SourceFile::new(file, &src),
            &format!("{pins} ONE_PASS=0"),
            "T=bf16",
            &[("M", 2048), (dim, 50257)],
        );
        let strip = |s: &str| {
            (s.lines())
                .filter(|l| !l.contains("ONE_PASS") && !l.starts_with("#line"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(strip(&on.source), strip(&off.source), "{file} {pins}");
    }
}

/// Offline (NVRTC + ptxas, sm_90a): the fused points of the three examples compile without
/// spills, their exponentials (`ex2.approx`) inside the pass that waits on the row's slabs.
#[test]
fn fused_points_compile_without_spills() {
    let emitted = vec![
        example("cross_entropy.ph", XENT, "T=bf16", "V", 4096, 50257),
        example(
            "cross_entropy.ph",
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2",
            "T=bf16",
            "V",
            133,
            1001,
        ),
        example("softmax_row.ph", SOFTMAX, "T=bf16", "N", 2048, 50257),
        example("softmax_online.ph", ONLINE, "T=bf16", "N", 2048, 32000),
    ];
    let labels: Vec<String> = (0..emitted.len()).map(|i| format!("point {i}")).collect();
    let Some(results) = common::compiled(&emitted, &labels) else {
        return;
    };
    for ((c, res), label) in results.iter().zip(&labels) {
        assert!(c.ptx.contains("ex2.approx"), "{label}");
        assert!(c.ptx.contains("mbarrier.try_wait"), "{label}");
        assert_eq!(res.spill_store_bytes, 0, "{label}: {res:?}");
    }
}
