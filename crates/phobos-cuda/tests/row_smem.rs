//! The knob `ROW_SMEM` (`cuda/phobos_rowsmem.cuh`, bench/NOTES.md r15): with PACK=4 a masked row
//! load's `let` of a 2-byte type is staged in shared memory by bulk copies (`ph::SmemRow`), the
//! store that is its last use writes through the buffer, and the launch bounds ask for the blocks
//! its shared memory admits. Emitted code, the plan's note, and offline (NVRTC and ptxas) the
//! bulk copies, the mbarrier and 128-bit shared-memory reads. On the GPU: gpu_diff's
//! `softmax_row.ph ... ROW_SMEM=1` cases (bf16 and f16, odd rows of every shift). The
//! cross-entropy's staged row and ROW_SMEM=2 are in tests/row_smem_xent.rs.

mod common;

use phobos_cuda::{emit, EmitOptions, Emitted, NoRowSmem};

/// `examples/softmax_row.ph` at `pins` with `types`, specialized on M x N.
fn row(pins: &str, types: &str, n: i64) -> Emitted {
    let src = common::source("examples/softmax_row.ph");
    common::specialized(src, pins, types, &[("M", 2048), ("N", n)])
}

#[test]
fn row_smem_stages_the_row_and_stores_through_it() {
    let e = row(
        "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=1 ONE_PASS=0",
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
    // x's record: staged in 114,720 bytes, its store writing through the buffer.
    let [rec] = e.row_smem.as_slice() else {
        panic!("{:?}", e.row_smem)
    };
    assert_eq!(rec.name(), "x");
    let staged = rec.staged.as_ref().unwrap_or_else(|why| panic!("{why:?}"));
    assert_eq!(staged.bytes, 114720);
    assert!(staged.store.is_some(), "{staged:?}");
    assert!(e.notes.contains(&rec.to_string()), "{:?}", e.notes);
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
    assert_eq!(common::body(&with), common::body(&without));
    assert!(!with.source.contains("SmemRow"), "{}", with.source);
    assert!(with.row_smem.is_empty(), "{:?}", with.row_smem);
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
        ("PACK=3 ROW_SMEM=1", "T=bf16", Some(NoRowSmem::Pack)),
        ("PACK=4 ROW_SMEM=1", "T=f32", Some(NoRowSmem::ElementType)),
        ("PACK=4 ROW_SMEM=1", "T=f16", None),
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
        let [rec] = e.row_smem.as_slice() else {
            panic!("{pins} {types}: {:?}", e.row_smem)
        };
        assert_eq!(rec.name(), "x");
        assert!(e.notes.contains(&rec.to_string()), "{:?}", e.notes);
        let Some(why) = why else {
            assert!(rec.staged.is_ok(), "{pins} {types}: {rec:?}");
            // Staged, and its store writes through the buffer.
            assert!(e.source.contains("ph::SmemRow<ph::f16, "), "{}", e.source);
            assert!(e.source.contains("ph::store_row_smem("), "{}", e.source);
            continue;
        };
        assert!(!e.source.contains("SmemRow"), "{pins} {types}");
        assert_eq!(rec.staged, Err(why), "{pins} {types}");
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
    let labels: Vec<_> = points.iter().map(|(p, _, _)| p.to_string()).collect();
    let Some(results) = common::compiled(&emitted, &labels) else {
        return;
    };
    for ((pins, t, _), (c, res)) in points.iter().zip(&results) {
        common::assert_bulk_copied(&c.ptx, pins);
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
            assert_eq!(res.spill_store_bytes, 0, "{pins}: {res:?}");
        }
    }
}

/// softmax_online.ph's whole-row point (cross_entropy.ph's too: tests/row_smem_xent.rs).
const WHOLE: &str = "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1 ONE_PASS=0";

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
        common::specialized(src.clone(), pins, types, &[("M", 2048), ("N", 50257)])
    };
    let e = at(WHOLE, "T=bf16");
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
        (WHOLE, "T=f32"),
        ("BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 EVICT=1", "T=bf16"),
        ("BLOCK=2048 THREADS=256 WHOLE=0 PACK=4", "T=bf16"),
        ("BLOCK=32768 THREADS=1024 WHOLE=0", "T=bf16"),
    ] {
        let variant = info.variant(Some(pins), Some(types), None).expect(pins);
        let err = phobos_check::instantiate(&module, info, &variant).expect_err(pins);
        assert!(format!("{err:?}").contains("E0207"), "{pins} {types}");
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
    let at = |block: i64| {
        let pins = format!("BLOCK={block} THREADS=1024 PACK=4 ROW_SMEM=1");
        common::specialized(src.clone(), &pins, "T=bf16", &[("M", 2048), ("N", 50257)])
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
