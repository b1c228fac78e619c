//! ROW_SMEM on examples/cross_entropy.ph's whole-row form (WHOLE=1, bench/NOTES.md r16): the
//! staged row of a scalar loss (no store through the buffer), its emitted code, the GPU cases'
//! reach, the offline compile; and ROW_SMEM=2's in-place mask of position-blind rows. The knob's
//! softmax forms are in tests/row_smem.rs.

mod common;

use phobos_cuda::{emit, AheadForm, EmitOptions, Emitted};

/// `examples/cross_entropy.ph` at `pins` with `types`, specialized on M x V.
fn xent(pins: &str, types: &str, m: i64, v: i64) -> Emitted {
    let src = common::source("examples/cross_entropy.ph");
    common::specialized(src, pins, types, &[("M", m), ("V", v)])
}

const XENT_WHOLE: &str = "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1 ONE_PASS=0";

/// cross_entropy.ph's whole-row form (WHOLE=1, bench/NOTES.md r16): its masked row is staged
/// (no store writes through the buffer: the loss is a scalar), the max taken on packed pairs,
/// the target's index loaded under the row's copy and its logit after the max, two blocks a
/// multiprocessor.
#[test]
fn cross_entropy_whole_row_is_staged() {
    let e = xent(XENT_WHOLE, "T=bf16", 4096, 50257);
    assert_eq!(e.row_smem.len(), 1, "{:?}", e.notes);
    let rec = &e.row_smem[0];
    assert_eq!(
        rec.staged,
        Ok(phobos_cuda::StagedRow {
            bytes: 114_720,
            store: None,
            in_place: false,
            slabs: None,
        })
    );
    assert!(e.notes.contains(&rec.to_string()), "{:?}", e.notes);
    let s = &e.source;
    assert!(s.contains("__launch_bounds__(1024, 2)"), "{s}");
    assert!(s.contains("ph::Scratch<128> ph_scratch"), "{s}");
    assert!(
        s.contains("= ph::reduce_all_packed<ph::Max>(x, ph_scratch);"),
        "{s}"
    );
    // In the kernel's order: the row's copy, the target's index, the row's max, the target's
    // logit (bench/NOTES.md r28).
    let at = |what: &str| s.find(what).unwrap_or_else(|| panic!("{what}: {s}"));
    let order = [
        at("ph::load_row_smem_fill<Blk1x57344"),
        at("const int target = ph::load1<true>(Target, r, M);"),
        at("= ph::reduce_all_packed<ph::Max>(x, ph_scratch);"),
        at("const float t = ph::load2<true>(X, r, target, M, V);"),
    ];
    assert!(order.is_sorted(), "{order:?}");
    // 512 threads: 112 elements a thread, still two blocks; aligned rows of 32000 in 65.6 KB
    // blocks: three.
    let half = xent(
        "BLOCK=57344 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        4096,
        50257,
    );
    assert!(half.source.contains("__launch_bounds__(512, 2)"));
    let aligned = xent(
        "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=1",
        "T=bf16",
        16384,
        32000,
    );
    assert!(aligned.source.contains("__launch_bounds__(512, 3)"));
    assert!(matches!(aligned.row_smem[0].staged, Ok(ref s) if s.bytes == 65_568));
    // f16: staged, the max read as f32 (no packed max for f16).
    let f16 = xent(XENT_WHOLE, "T=f16", 4096, 50257);
    assert!(f16.row_smem[0].staged.is_ok());
    assert!(f16.source.contains("ph::SmemRow<ph::f16, Blk1x57344> x"));
    assert!(!f16.source.contains("reduce_all_packed"));
    // ROW_SMEM=0: the packed row in registers, no record.
    let regs = xent(
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=0",
        "T=bf16",
        4096,
        50257,
    );
    assert!(regs.row_smem.is_empty());
    assert!(regs.source.contains("ph::load_row_packed_fill<Blk1x57344"));
    // The example's @where keeps the whole form to PACK=4, 2-byte types and the chunked
    // knobs' first values; the chunked form to PACK=0 and ROW_SMEM=0.
    let src = common::source("examples/cross_entropy.ph");
    let module = phobos_check::load(src).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    for (pins, types) in [
        (
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1",
            "T=f32",
        ),
        ("BLOCK=57344 THREADS=1024 WHOLE=1 PACK=0", "T=bf16"),
        (
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 PARTIALS=2",
            "T=bf16",
        ),
        ("BLOCK=2048 THREADS=256 WHOLE=0 PACK=4", "T=bf16"),
        ("BLOCK=2048 THREADS=256 WHOLE=0 ROW_SMEM=1", "T=bf16"),
        (
            "BLOCK=57344 THREADS=256 WHOLE=1 PACK=4 ROW_SMEM=1",
            "T=bf16",
        ),
    ] {
        let variant = info.variant(Some(pins), Some(types), None).expect(pins);
        let err = phobos_check::instantiate(&module, info, &variant).expect_err(pins);
        assert!(
            format!("{err:?}").contains("E0207"),
            "{pins} {types}: {err:?}"
        );
    }
}

/// The whole-row form's CUDA (bf16, rows of 50257).
#[test]
fn cross_entropy_whole_row_snapshot() {
    insta::assert_snapshot!(common::body(&xent(XENT_WHOLE, "T=bf16", 4096, 50257)));
}

/// The GPU cases' targets (common::whole_rows) reach the staged row's unaligned head and tail
/// and its bulk-copied interior, each at several shifts, and every case builds offline.
#[test]
fn cross_entropy_whole_row_cases_reach_head_tail_and_interior() {
    use common::whole_rows::{
        target_of, whole_row_cases, CLIMB_POINTS, ONLINE_WHOLE_POINTS, ROW_AHEAD_POINTS,
        ROW_SPLIT_POINTS, WHOLE_ROW_POINTS,
    };
    let (m, v) = (9usize, 50257i64);
    let mut seen = [0; 3];
    for r in 0..m {
        let sh = (r as i64 * v) % 8;
        let t = target_of(r, v) as i64;
        let head = (8 - sh) % 8;
        let tail = (sh + v) % 8;
        let class = if t < head {
            0
        } else if t >= v - tail {
            1
        } else {
            2
        };
        seen[class] += 1;
    }
    assert!(
        seen.iter().all(|&n| n >= 2),
        "head, tail, interior: {seen:?}"
    );
    let cases = whole_row_cases();
    assert_eq!(
        cases.len(),
        WHOLE_ROW_POINTS.len()
            + ONLINE_WHOLE_POINTS.len()
            + ROW_AHEAD_POINTS.len()
            + ROW_SPLIT_POINTS.len()
            + CLIMB_POINTS.len()
    );
    for c in cases {
        let c = c.unwrap_or_else(|e| panic!("{e}"));
        // ROW_SPLIT applies to every such case: clusters of 2 or 4 (tests/row_split.rs).
        let split = c.label.contains("ROW_SPLIT=");
        assert_eq!(c.emitted.row_split_blocks() > 1, split, "{}", c.label);
        let row = c.label.starts_with("softmax_row.ph");
        assert!(row || c.emitted.source.contains("WHOLE=1"), "{}", c.label);
        let row = row && !split;
        if c.label.contains("ROW_SMEM=1") {
            assert!(c.emitted.row_smem[0].staged.is_ok(), "{}", c.label);
        }
        // ROWS_AHEAD=1 and 2 apply to every such case: persistent, the next row issued ahead.
        let ahead = c.label.contains("ROWS_AHEAD=1") || c.label.contains("ROWS_AHEAD=2");
        assert!(
            !row || ahead,
            "softmax_row.ph's cases are ROWS_AHEAD=1 or 2: {}",
            c.label
        );
        if c.label.contains("ROWS_AHEAD=2") {
            let form = c.emitted.rows_ahead.as_ref().and_then(|r| r.ahead.ok());
            assert_eq!(form.map(|a| a.form), Some(AheadForm::Landed), "{}", c.label);
        }
        assert_eq!(
            (c.emitted.rows_ahead.as_ref()).is_some_and(|r| r.ahead.is_ok()),
            ahead,
            "{}",
            c.label
        );
        assert_eq!(c.emitted.persistent, ahead, "{}", c.label);
    }
}

/// Offline: the whole-row points compile for sm_90a to bulk copies on an mbarrier, 128-bit
/// shared-memory reads and the packed max, with no spill.
#[test]
fn cross_entropy_whole_row_compiles_to_bulk_copies() {
    let points = [
        (XENT_WHOLE, "T=bf16", 4096, 50257),
        (
            "BLOCK=57344 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=1",
            "T=bf16",
            4096,
            50257,
        ),
        (
            "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=1",
            "T=bf16",
            16384,
            32000,
        ),
        (XENT_WHOLE, "T=f16", 4096, 50257),
        (
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2",
            "T=bf16",
            4096,
            50257,
        ),
        (
            "BLOCK=57344 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=2",
            "T=bf16",
            4096,
            50257,
        ),
        (
            "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=2",
            "T=bf16",
            16384,
            32000,
        ),
    ];
    let emitted: Vec<_> = (points.iter())
        .map(|(pins, t, m, v)| xent(pins, t, *m, *v))
        .collect();
    let labels: Vec<_> = (points.iter())
        .map(|(p, t, m, v)| format!("{p} {t} {m}x{v}"))
        .collect();
    let Some(results) = common::compiled(&emitted, &labels) else {
        return;
    };
    for ((pins, t, _, _), (c, res)) in points.iter().zip(&results) {
        common::assert_bulk_copied(&c.ptx, pins);
        assert!(
            (c.ptx.lines()).any(|l| l.contains("ld.shared") && l.contains(".v4.")),
            "{pins}: no 128-bit shared-memory reads"
        );
        if *t == "T=bf16" {
            assert!(c.ptx.contains("max.bf16x2"), "{pins}: no packed max");
        }
        assert_eq!(res.spill_store_bytes, 0, "{pins} {t}: {res:?}");
    }
}

/// ROW_SMEM=2: a staged row whose uses are whole-row max, min or sum of position-blind
/// element-wise values of it, or the store through its buffer of such a value, is masked in
/// place, not realigned (the cross-entropy's, the softmax's); a row with a column index in such a
/// use or in the stored value is realigned as at ROW_SMEM=1. ROW_SMEM=1 emits what it did (the
/// snapshot above).
#[test]
fn row_smem_2_masks_order_free_rows_in_place() {
    let e = xent(
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2 ONE_PASS=0",
        "T=bf16",
        4096,
        50257,
    );
    let staged = e.row_smem[0].staged.as_ref().expect("staged");
    assert!(staged.in_place, "{:?}", e.notes);
    // Loaded once a block: its slabs land on their own barriers (bench/NOTES.md r26), waited on
    // by its first use (the max, the `let`'s next statement: statement 2 of the body of
    // `if WHOLE == 1`, the kernel's statement 3), after which the exp pass reads the landed view.
    assert_eq!(staged.slabs, Some(vec![(0, 3), (0, 2)]), "{:?}", e.notes);
    let max = e
        .source
        .find("ph::reduce_all_packed<ph::Max>(x, ph_scratch)");
    let landed = e
        .source
        .find("const auto x_landed = ph::smem_row_landed(x);");
    let exp = e.source.find("ph::exp2_approx(x_landed.v[ph_i]");
    assert!(
        max.is_some() && max < landed && landed < exp,
        "{}",
        e.source
    );
    // Its head: seven mbarriers (one a group of every thread) in 64 bytes where one took 16.
    assert_eq!(staged.bytes, 114_720 + 48);
    assert!(
        e.source
            .contains("ph::load_row_smem_fill<Blk1x57344, ph::EVICT_NORMAL, true, true>("),
        "{}",
        e.source
    );
    let one = xent(XENT_WHOLE, "T=bf16", 4096, 50257);
    assert!(!one.row_smem[0].staged.as_ref().expect("staged").in_place);
    assert!(!one.source.contains(", true>("), "{}", one.source);
    // Small kernels: a sum with a column index, a store, and the plain sum.
    let text = |body: &str| {
        format!(
            "@autotune(PACK in {{4}}, ROW_SMEM in {{0, 1, 2}})\n@launch(256)\n\
             kernel k<T = f32>(X: tensor<T>[M, N], S: tensor<f32>[M], Y: tensor<T>[M, N]) {{\n  \
             let r = ctx.block.x\n  let x = where(arange(4096) < N, X[r, 0 :+ 4096], 0.0)\n{body}}}\n"
        )
    };
    for (body, in_place) in [
        ("  let a = sum(f32(x))\n  if ctx.thread == 0 {\n    S[r] = a\n  }\n", true),
        (
            "  let a = sum(f32(x) * f32(arange(4096)))\n  if ctx.thread == 0 {\n    S[r] = a\n  }\n",
            false,
        ),
        (
            "  let a = min(f32(x)) + max(f32(x) * 2.0)\n  if ctx.thread == 0 {\n    S[r] = a\n  }\n",
            true,
        ),
        // A tile computed from the row (not a whole-row reduction in place).
        (
            "  let y = f32(x) * 2.0\n  let a = sum(y)\n  if ctx.thread == 0 {\n    S[r] = a\n  }\n",
            false,
        ),
        ("  Y[r, 0 :+ 4096] = T(f32(x) * 2.0)\n", true),
        (
            "  let a = max(f32(x))\n  Y[r, 0 :+ 4096] = T(f32(x) - a)\n",
            true,
        ),
        // The stored value reads a column index: realigned.
        (
            "  Y[r, 0 :+ 4096] = T(f32(x) * f32(arange(4096)))\n",
            false,
        ),
        // A store that is not the row's last use, so not through the buffer, reads the row in
        // the layout's order: realigned.
        (
            "  Y[r, 0 :+ 4096] = T(f32(x) * 2.0)\n  let a = sum(f32(x))\n  if ctx.thread == 0 {\n    S[r] = a\n  }\n",
            false,
        ),
    ] {
        let src = phobos_syntax::SourceFile::new("k.ph", text(body));
        let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{body}: {d:?}"));
        let info = &module.kernels[0];
        let variant = info.variant(Some("ROW_SMEM=2"), Some("T=bf16"), None).expect(body);
        let k = phobos_check::instantiate(&module, info, &variant).expect(body);
        let e = emit(&k, &EmitOptions { source: Some(src) }).expect(body);
        let staged = e.row_smem[0].staged.as_ref().expect(body);
        assert_eq!(staged.in_place, in_place, "{body}");
        // Each row is loaded once a block: in place means by slabs.
        assert_eq!(staged.slabs.is_some(), in_place, "{body}");
        // The landed view (no waits) is declared before the first later statement that reads
        // the row, and only if one does (bench/NOTES.md r30).
        let later_use = body.contains("T(f32(x) - a)");
        assert_eq!(
            e.source.contains("ph::smem_row_landed(x)"),
            in_place && later_use,
            "{body}"
        );
        assert_eq!(e.source.contains(", true>("), in_place, "{body}");
        // A store through the buffer of a row left in place stores from the registers.
        let direct = in_place && staged.store.is_some();
        assert_eq!(
            e.source.contains("ph::smem_row_store_direct<"),
            direct,
            "{body}"
        );
    }
}

/// SLABS (bench/NOTES.md r26) only where the row's `let` runs once a block: a staged row in
/// place inside a loop, or under ROWS_AHEAD's persistent blocks, lands whole on one barrier
/// (the slabs' barriers are initialized once and never reused).
#[test]
fn slabs_only_for_rows_loaded_once_a_block() {
    let text = "@autotune(PACK in {4}, ROW_SMEM in {0, 1, 2})\n@launch(256)\n\
        kernel k<T = f32>(X: tensor<T>[M, N], S: tensor<f32>[M]) {\n  \
        let r = ctx.block.x\n  var a: f32 = 0.0\n  for i in range(0, 2) {\n    \
        let x = where(arange(4096) < N, X[r, 0 :+ 4096], 0.0)\n    a = a + sum(f32(x))\n  }\n  \
        if ctx.thread == 0 {\n    S[r] = a\n  }\n}\n";
    let src = phobos_syntax::SourceFile::new("k.ph", text.to_string());
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(Some("ROW_SMEM=2"), Some("T=bf16"), None)
        .expect("variant");
    let k = phobos_check::instantiate(&module, info, &variant).expect("instance");
    let e = emit(&k, &EmitOptions { source: Some(src) }).expect("emit");
    let staged = e.row_smem[0].staged.as_ref().expect("staged");
    assert!(staged.in_place && staged.slabs.is_none(), "{:?}", e.notes);
    assert!(
        e.source.contains(", ph::EVICT_NORMAL, true>("),
        "{}",
        e.source
    );
    assert!(!e.source.contains("smem_row_landed"), "{}", e.source);
    let ahead = xent(
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1",
        "T=bf16",
        4096,
        50257,
    );
    let staged = ahead.row_smem[0].staged.as_ref().expect("staged");
    assert!(
        staged.in_place && staged.slabs.is_none(),
        "{:?}",
        ahead.notes
    );
    assert!(!ahead.source.contains("true, true>("), "{}", ahead.source);
}
