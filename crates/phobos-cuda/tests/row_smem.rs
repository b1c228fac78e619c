//! The knob `ROW_SMEM` (`cuda/phobos_rowsmem.cuh`, bench/NOTES.md r15): with PACK=4 a masked row
//! load's `let` of a 2-byte type is staged in shared memory by bulk copies (`ph::SmemRow`), the
//! store that is its last use writes through the buffer, and the launch bounds ask for the blocks
//! its shared memory admits. Emitted code, the plan's note, and offline (NVRTC and ptxas) the
//! bulk copies, the mbarrier and 128-bit shared-memory reads. On the GPU: gpu_diff's
//! `softmax_row.ph ... ROW_SMEM=1` cases (bf16 and f16, odd rows of every shift).

mod common;

use phobos_cuda::{emit, AheadForm, EmitOptions, Emitted, NoRowSmem};

/// `examples/softmax_row.ph` at `pins` with `types`, specialized on M x N.
fn row(pins: &str, types: &str, n: i64) -> Emitted {
    let path = "examples/softmax_row.ph";
    let src = common::source(path);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(Some(pins), Some(types), None)
        .unwrap_or_else(|e| panic!("{pins}: {e:?}"));
    let mut k = phobos_check::instantiate(&module, info, &variant)
        .unwrap_or_else(|d| panic!("{pins}: {d:?}"));
    let dims = [("M".to_string(), 2048), ("N".to_string(), n)];
    phobos_cuda::specialize_alignment(&mut k, &dims);
    let opts = EmitOptions { source: Some(src) };
    emit(&k, &opts).unwrap_or_else(|e| panic!("{pins}: {e}"))
}

/// Everything but the first line (which names the point).
fn body(e: &Emitted) -> String {
    e.source
        .split_once('\n')
        .expect("a header line")
        .1
        .to_string()
}

#[test]
fn row_smem_stages_the_row_and_stores_through_it() {
    let e = row(
        "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=1",
        "T=bf16",
        50257,
    );
    let s = &e.source;
    assert!(
        s.contains(
            "ph::SmemRow<ph::bf16, Blk1x57344> x_2 = ph::load_row_smem_fill<Blk1x57344, ph::EVICT_NORMAL>("
        ),
        "{s}"
    );
    assert!(s.contains(", N, -ph::inf_f32(), ph_resident + 0);"), "{s}");
    assert!(s.contains("#include \"phobos_rowsmem.cuh\""), "{s}");
    assert!(
        s.contains("= ph::reduce_all_packed<ph::Max>(x_2, ph_scratch);"),
        "{s}"
    );
    assert!(s.contains("ph::store_row_smem(ph::Region<ph::bf16>"), "{s}");
    assert!(s.contains(", x_2);"), "{s}");
    // The live branch (PACK=4's) stores through the buffer alone, a group at a time.
    let live = s.split_once("  } else {\n").expect("the PACK branch").1;
    assert!(!live.contains("ph::store_row_shifted("), "{live}");
    assert!(!live.contains("ph::load_row_packed"), "{live}");
    assert!(
        live.contains("  ph::smem_row_put<ph::bf16>(x_2, ph_j, ph_g);"),
        "{live}"
    );
    // The sum's barrier comes before its element loop, not between the loop and the reduction.
    let (before_sum, _) = live
        .split_once("ph::reduce_all_lanes<ph::Sum>(")
        .expect("the sum");
    let tail = before_sum
        .rsplit_once("__syncthreads();")
        .expect("a barrier")
        .1;
    assert!(tail.contains("ph::exp2_approx(x_2.v[ph_i]"), "{live}");
    // The scratch area is the live code's (128 bytes for the reductions), not the dead
    // branch's 3.5 KB of row exchanges.
    assert!(s.contains("ph::Scratch<128> ph_scratch"), "{s}");
    // One block of 114,704 bytes and a scratch: two a multiprocessor.
    assert!(s.contains("__launch_bounds__(1024, 2)"), "{s}");
    let note = e.notes.iter().find(|n| n.starts_with("ROW_SMEM=1: x"));
    let note = note.unwrap_or_else(|| panic!("{:?}", e.notes));
    assert!(note.contains("114720 bytes"), "{note}");
    assert!(note.contains("store writes through the buffer"), "{note}");
    // 512 threads: 112 elements a thread, still two blocks a multiprocessor.
    let half = row("BLOCK=57344 THREADS=512 PACK=4 ROW_SMEM=1", "T=bf16", 50257);
    assert!(
        half.source.contains("__launch_bounds__(512, 2)"),
        "{}",
        half.source
    );
    // A 65536-wide row (131 KB) fits one block only: no second argument.
    let one = row(
        "BLOCK=65536 THREADS=1024 PACK=4 ROW_SMEM=1",
        "T=bf16",
        50257,
    );
    assert!(
        one.source.contains("__launch_bounds__(1024)"),
        "{}",
        one.source
    );
    assert!(
        one.source.contains("ph::load_row_smem_fill<"),
        "{}",
        one.source
    );
}

/// ROW_SMEM=0 is PACK=4's code, byte for byte but the line naming the point; ROW_SMEM=1 acts
/// with PACK=4 on 2-byte types only.
#[test]
fn row_smem_0_changes_nothing() {
    let with = row(
        "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=0",
        "T=bf16",
        50257,
    );
    let without = row("BLOCK=57344 THREADS=1024 PACK=4", "T=bf16", 50257);
    assert_eq!(body(&with), body(&without));
    assert!(!with.source.contains("SmemRow"), "{}", with.source);
    assert!(
        !with.notes.iter().any(|n| n.contains("ROW_SMEM")),
        "{:?}",
        with.notes
    );
    // softmax_row.ph's @where keeps ROW_SMEM=1 to PACK=4 and 2-byte types.
    let src = common::source("examples/softmax_row.ph");
    let module = phobos_check::load(src).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    for (pins, types) in [
        ("BLOCK=57344 THREADS=1024 PACK=3 ROW_SMEM=1", "T=bf16"),
        ("BLOCK=32768 THREADS=1024 PACK=4 ROW_SMEM=1", "T=f32"),
    ] {
        let variant = info.variant(Some(pins), Some(types), None).expect(pins);
        let err = phobos_check::instantiate(&module, info, &variant).expect_err(pins);
        assert!(
            format!("{err:?}").contains("E0207"),
            "{pins} {types}: {err:?}"
        );
    }
    // Elsewhere the plan says why not (`phobos emit`'s notes).
    let text = "\
@autotune(PACK in {3, 4}, ROW_SMEM in {0, 1})
@launch(256)
kernel twice<T = f32>(X: tensor<T>[M, N], Y: tensor<T>[M, N]) {
  let r = ctx.block.x
  let x = where(arange(4096) < N, X[r, 0 :+ 4096], -inf)
  Y[r, 0 :+ 4096] = T(f32(x) * 2.0)
}
";
    let src = phobos_syntax::SourceFile::new("twice.ph", text);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    for (pins, types, why) in [
        (
            "PACK=3 ROW_SMEM=1",
            "T=bf16",
            "held packed and filled only at PACK=4",
        ),
        ("PACK=4 ROW_SMEM=1", "T=f32", "not bf16 or f16"),
        ("PACK=4 ROW_SMEM=1", "T=f16", ""),
    ] {
        let variant = info.variant(Some(pins), Some(types), None).expect(pins);
        let k = phobos_check::instantiate(&module, info, &variant).expect(pins);
        let e = emit(
            &k,
            &EmitOptions {
                source: Some(src.clone()),
            },
        )
        .expect(pins);
        if why.is_empty() {
            // Staged, and its store writes through the buffer.
            assert!(e.source.contains("ph::SmemRow<ph::f16, "), "{}", e.source);
            assert!(e.source.contains("ph::store_row_smem("), "{}", e.source);
            continue;
        }
        assert!(!e.source.contains("SmemRow"), "{pins} {types}");
        let note = (e.notes.iter()).find(|n| n.starts_with("ROW_SMEM=1 not applied to x"));
        let note = note.unwrap_or_else(|| panic!("{pins} {types}: {:?}", e.notes));
        assert!(note.contains(why), "{note}");
    }
}

/// Offline: the staged points compile for sm_90a with the bulk copies, the mbarrier's wait and
/// 128-bit shared-memory reads, and no spill at two blocks a multiprocessor.
#[test]
fn row_smem_compiles_to_bulk_copies() {
    let points = [
        (
            "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=1",
            "T=bf16",
            50257,
        ),
        ("BLOCK=57344 THREADS=512 PACK=4 ROW_SMEM=1", "T=bf16", 50257),
        (
            "BLOCK=32768 THREADS=1024 PACK=4 ROW_SMEM=1",
            "T=bf16",
            32000,
        ),
        ("BLOCK=8192 THREADS=1024 PACK=4 ROW_SMEM=1", "T=f16", 1001),
    ];
    let emitted: Vec<_> = (points.iter())
        .map(|(pins, t, n)| row(pins, t, *n))
        .collect();
    let jobs: Vec<_> = (emitted.iter())
        .map(|e| (e.source.clone(), common::compile_options(e)))
        .collect();
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    for ((pins, t, _), (e, r)) in points.iter().zip(emitted.iter().zip(&results)) {
        let c = r
            .as_ref()
            .unwrap_or_else(|err| panic!("{pins}: {}", err.log));
        assert!(
            c.ptx
                .contains("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"),
            "{pins}: no bulk copy"
        );
        assert!(c.ptx.contains("mbarrier.try_wait.parity"), "{pins}");
        let lds4 = (c.ptx.lines())
            .filter(|l| l.contains("ld.shared") && l.contains(".v4."))
            .count();
        assert!(lds4 > 0, "{pins}: no 128-bit shared-memory reads");
        let st4 = (c.ptx.lines())
            .filter(|l| l.contains("st.global") && l.contains(".v4."))
            .count();
        assert!(st4 > 0, "{pins}: no 128-bit global stores");
        if *t == "T=bf16" {
            assert!(c.ptx.contains("max.bf16x2"), "{pins}: no packed max");
            let res = phobos_gpu::resources::of_compiled(c, &e.entry).expect("ptxas report");
            assert_eq!(res.spill_store_bytes, 0, "{pins}: {res:?}");
        }
    }
}

/// `examples/cross_entropy.ph` at `pins` with `types`, specialized on M x V.
fn xent(pins: &str, types: &str, m: i64, v: i64) -> Emitted {
    let path = "examples/cross_entropy.ph";
    let src = common::source(path);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let variant = info
        .variant(Some(pins), Some(types), None)
        .unwrap_or_else(|e| panic!("{pins}: {e:?}"));
    let mut k = phobos_check::instantiate(&module, info, &variant)
        .unwrap_or_else(|d| panic!("{pins}: {d:?}"));
    let dims = [("M".to_string(), m), ("V".to_string(), v)];
    phobos_cuda::specialize_alignment(&mut k, &dims);
    let opts = EmitOptions { source: Some(src) };
    emit(&k, &opts).unwrap_or_else(|e| panic!("{pins}: {e}"))
}

const XENT_WHOLE: &str = "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1";

/// cross_entropy.ph's whole-row form (WHOLE=1, bench/NOTES.md r16): its masked row is staged
/// (no store writes through the buffer: the loss is a scalar), the max taken on packed pairs,
/// the target's logit loaded before the row, two blocks a multiprocessor.
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
            in_place: false
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
    let target = s
        .find("const float t = ph::load2<true>(X, r,")
        .expect("the target's logit");
    let row = s
        .find("ph::load_row_smem_fill<Blk1x57344")
        .expect("the staged row");
    assert!(target < row, "the target's logit is loaded before the row");
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
    insta::assert_snapshot!(body(&xent(XENT_WHOLE, "T=bf16", 4096, 50257)));
}

/// The GPU cases' targets (common::whole_rows) reach the staged row's unaligned head and tail
/// and its bulk-copied interior, each at several shifts, and every case builds offline.
#[test]
fn cross_entropy_whole_row_cases_reach_head_tail_and_interior() {
    use common::whole_rows::{
        target_of, whole_row_cases, ONLINE_WHOLE_POINTS, ROW_AHEAD_POINTS, ROW_SPLIT_POINTS,
        WHOLE_ROW_POINTS,
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
    ];
    let emitted: Vec<_> = (points.iter())
        .map(|(pins, t, m, v)| xent(pins, t, *m, *v))
        .collect();
    let jobs: Vec<_> = (emitted.iter())
        .map(|e| (e.source.clone(), common::compile_options(e)))
        .collect();
    let Some(results) = common::compile_or_skip(&jobs, 2) else {
        return;
    };
    for ((pins, t, _, _), (e, r)) in points.iter().zip(emitted.iter().zip(&results)) {
        let c = r
            .as_ref()
            .unwrap_or_else(|err| panic!("{pins}: {}", err.log));
        assert!(
            c.ptx
                .contains("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"),
            "{pins}: no bulk copy"
        );
        assert!(c.ptx.contains("mbarrier.try_wait.parity"), "{pins}");
        assert!(
            (c.ptx.lines()).any(|l| l.contains("ld.shared") && l.contains(".v4.")),
            "{pins}: no 128-bit shared-memory reads"
        );
        if *t == "T=bf16" {
            assert!(c.ptx.contains("max.bf16x2"), "{pins}: no packed max");
        }
        let res = phobos_gpu::resources::of_compiled(c, &e.entry).expect("ptxas report");
        assert_eq!(res.spill_store_bytes, 0, "{pins} {t}: {res:?}");
    }
}

/// softmax_online.ph's whole-row form (WHOLE=1, bench/NOTES.md r16) is softmax_row.ph's PACK=4
/// body: staged, the store through the buffer, two blocks a multiprocessor; the chunked points'
/// @where keeps them to PACK=0 and ROW_SMEM=0.
#[test]
fn softmax_online_whole_row_is_staged() {
    let path = "examples/softmax_online.ph";
    let src = common::source(path);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let at = |pins: &str, types: &str| {
        let variant = info.variant(Some(pins), Some(types), None).expect(pins);
        let mut k = phobos_check::instantiate(&module, info, &variant).expect(pins);
        let dims = [("M".to_string(), 2048), ("N".to_string(), 50257)];
        phobos_cuda::specialize_alignment(&mut k, &dims);
        emit(
            &k,
            &EmitOptions {
                source: Some(src.clone()),
            },
        )
        .expect(pins)
    };
    let e = at(XENT_WHOLE, "T=bf16");
    assert_eq!(e.row_smem.len(), 1, "{:?}", e.notes);
    let Ok(staged) = &e.row_smem[0].staged else {
        panic!("{:?}", e.notes)
    };
    assert_eq!(staged.bytes, 114_720);
    assert!(
        staged.store.is_some(),
        "the store writes through the buffer"
    );
    let s = &e.source;
    assert!(s.contains("__launch_bounds__(1024, 2)"), "{s}");
    assert!(
        s.contains("ph::smem_row_put<ph::bf16>(x, ph_j, ph_g);"),
        "{s}"
    );
    assert!(s.contains("ph::store_row_smem(ph::Region<ph::bf16>"), "{s}");
    assert!(
        s.contains("ph::reduce_all_packed<ph::Max>(x, ph_scratch)"),
        "{s}"
    );
    for (pins, types) in [
        (XENT_WHOLE, "T=f32"),
        ("BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 EVICT=1", "T=bf16"),
        ("BLOCK=2048 THREADS=256 WHOLE=0 PACK=4", "T=bf16"),
        ("BLOCK=32768 THREADS=1024 WHOLE=0", "T=bf16"),
    ] {
        let variant = info.variant(Some(pins), Some(types), None).expect(pins);
        let err = phobos_check::instantiate(&module, info, &variant).expect_err(pins);
        assert!(format!("{err:?}").contains("E0207"), "{pins} {types}");
    }
}

/// ROW_SMEM=2: a staged row whose uses are whole-row max, min or sum of position-blind
/// element-wise values of it is masked in place, not realigned (the cross-entropy's); a row with
/// a column index in such a use, or a store, is realigned as at ROW_SMEM=1. ROW_SMEM=1 emits what
/// it did (the snapshot above).
#[test]
fn row_smem_2_masks_order_free_rows_in_place() {
    let e = xent(
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2",
        "T=bf16",
        4096,
        50257,
    );
    let staged = e.row_smem[0].staged.as_ref().expect("staged");
    assert!(staged.in_place, "{:?}", e.notes);
    assert!(
        e.source
            .contains("ph::load_row_smem_fill<Blk1x57344, ph::EVICT_NORMAL, true>("),
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
        ("  Y[r, 0 :+ 4096] = T(f32(x) * 2.0)\n", false),
    ] {
        let src = phobos_syntax::SourceFile::new("k.ph", text(body));
        let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{body}: {d:?}"));
        let info = &module.kernels[0];
        let variant = info.variant(Some("ROW_SMEM=2"), Some("T=bf16"), None).expect(body);
        let k = phobos_check::instantiate(&module, info, &variant).expect(body);
        let e = emit(&k, &EmitOptions { source: Some(src) }).expect(body);
        let staged = e.row_smem[0].staged.as_ref().expect(body);
        assert_eq!(staged.in_place, in_place, "{body}");
        assert_eq!(e.source.contains(", true>("), in_place, "{body}");
    }
}

/// A row whose 8-element groups do not split evenly over the threads stays in registers: a
/// thread's groups past the tile would index the staged buffer from the row's start again and
/// overwrite it (BLOCK=53760 at 1024 threads did not finish on the GPU, bench/NOTES.md r23b).
#[test]
fn row_smem_refuses_groups_that_do_not_split_evenly() {
    let path = "examples/softmax_row.ph";
    let text = std::fs::read_to_string(common::root().join(path))
        .expect("softmax_row.ph")
        .replace(
            "BLOCK in {8192, 16384, 32768, 51200, 57344, 65536}",
            "BLOCK in {53760, 57344}",
        );
    let src = phobos_syntax::SourceFile::new(path, text);
    let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    let at = |block: i64| {
        let pins = format!("BLOCK={block} THREADS=1024 PACK=4 ROW_SMEM=1");
        let variant = info
            .variant(Some(&pins), Some("T=bf16"), None)
            .unwrap_or_else(|e| panic!("{pins}: {e:?}"));
        let mut k = phobos_check::instantiate(&module, info, &variant)
            .unwrap_or_else(|d| panic!("{pins}: {d:?}"));
        let dims = [("M".to_string(), 2048), ("N".to_string(), 50257)];
        phobos_cuda::specialize_alignment(&mut k, &dims);
        let opts = EmitOptions {
            source: Some(src.clone()),
        };
        emit(&k, &opts).unwrap_or_else(|e| panic!("{pins}: {e}"))
    };
    // 6720 groups over 1024 threads: 6.56 a thread.
    let uneven = at(53760);
    let staged: Vec<_> = uneven.row_smem.iter().map(|r| r.staged.clone()).collect();
    assert!(!staged.is_empty(), "{:?}", uneven.notes);
    assert!(
        staged.iter().all(|s| *s == Err(NoRowSmem::Uneven)),
        "{staged:?}"
    );
    assert!(!uneven.source.contains("SmemRow"), "{}", uneven.source);
    // 7168 groups: 7 a thread, staged as before.
    let even = at(57344);
    assert!(
        even.row_smem.iter().any(|r| r.staged.is_ok()),
        "{:?}",
        even.notes
    );
}
