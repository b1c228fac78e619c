//! The knob `ROWS_AHEAD` (bench/NOTES.md r18): a row staged by `ROW_SMEM` read a row ahead in
//! persistent blocks, two buffers each with its own mbarrier, the next logical block's row
//! issued before this one's statements. The plan record (applied, or a typed reason), the
//! emitted code (insta), and offline (NVRTC and ptxas) the bulk copies, the parity waits and the
//! registers. On the GPU: gpu_diff's `ROWS_AHEAD=1` cases (common::whole_rows), each also run on
//! a grid of two blocks.

mod common;

use phobos_cuda::{emit, AheadForm, AheadRow, EmitOptions, Emitted, NoRowsAhead};

/// `examples/FILE` at `pins` with `types`, specialized on `dims` (M and the row width).
fn example(file: &str, pins: &str, types: &str, dims: [(&str, i64); 2]) -> Emitted {
    common::specialized(
        common::source(&format!("examples/{file}")),
        pins,
        types,
        &dims,
    )
}

const XENT: &str = "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1";

fn xent(pins: &str) -> Emitted {
    example(
        "cross_entropy.ph",
        pins,
        "T=bf16",
        [("M", 4096), ("V", 50257)],
    )
}

fn ahead(e: &Emitted) -> Result<AheadRow, NoRowsAhead> {
    e.rows_ahead.as_ref().expect("a ROWS_AHEAD=1 record").ahead
}

#[test]
fn rows_ahead_stages_two_buffers_in_persistent_blocks() {
    let e = xent(XENT);
    let a = ahead(&e).unwrap_or_else(|why| panic!("{why}\n{:?}", e.notes));
    assert_eq!(a.bytes, 114_720);
    assert!(e.persistent, "the host launches the resident blocks");
    assert!(phobos::backend::cuda::launch_facts(&e).persistent);
    // Two buffers and the scratch area.
    assert_eq!(e.dynamic_smem_bytes, 2 * 114_720 + 128);
    for s in [
        "int M, int V, int ph_gx, int ph_gy)",
        "__launch_bounds__(1024, 2)",
        "ph::smem_row_ahead_init<Blk1x57344>(ph_resident + 0);",
        "for (int ph_tile = (int)blockIdx.x; ph_tile < ph_gx * ph_gy; ph_tile += (int)gridDim.x)",
        "const int ph_nbx = ph_nt % ph_gx;",
        // The next row's region reads the next logical block (the local `r` substituted).
        "ph::smem_row_ahead_issue<Blk1x57344>(ph::Region<const ph::bf16>{X + (long long)ph_nbx * V",
        ", ph_nt < ph_gx * ph_gy, ph_resident + 0, ph_row_n);",
        "const int r = ph_bx;",
        "ph::load_row_smem_ahead<Blk1x57344, ph::EVICT_NORMAL, true>(",
    ] {
        assert!(e.source.contains(s), "{s}\n{}", e.source);
    }
    // The issue comes before the body's first statement (the target's loads).
    let issue = e.source.rfind("ph::smem_row_ahead_issue").expect("issued");
    let target = e.source.find("ph::load1<true>(Target").expect("the target");
    assert!(issue < target);
    assert!(!e.source.contains("load_row_smem_fill"), "{}", e.source);
    // The record is rendered among the notes.
    let record = e.rows_ahead.as_ref().expect("a record").to_string();
    assert!(e.notes.contains(&record), "{:?}", e.notes);
    // The online softmax and softmax_row: the store through the buffer stays.
    for (file, pins) in [
        (
            "softmax_online.ph",
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        ),
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
        ),
    ] {
        let e = example(file, pins, "T=bf16", [("M", 2048), ("N", 50257)]);
        assert!(ahead(&e).is_ok(), "{file}: {:?}", e.notes);
        assert!(e.persistent);
        assert!(e.source.contains("ph::store_row_smem("), "{file}");
        assert!(e
            .source
            .contains("ph::load_row_smem_ahead<Blk1x57344, ph::EVICT_NORMAL>("));
    }
}

#[test]
fn rows_ahead_0_changes_nothing() {
    for pins in [
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=2",
        "BLOCK=2048 THREADS=256 PARTIALS=2",
    ] {
        let off = xent(&format!("{pins} ROWS_AHEAD=0"));
        assert!(off.rows_ahead.is_none() && !off.persistent, "{pins}");
        assert!(!off.source.contains("ph_gx") && !off.source.contains("ahead"));
        // The point's name (the first line) is all that differs from the undeclared default,
        // which the insta snapshots and the compile snapshot pin.
        let default = xent(pins);
        let body = |e: &Emitted| e.source.split_once('\n').unwrap().1.to_string();
        assert_eq!(body(&off), body(&default), "{pins}");
    }
    // Outside the space: the chunked rows, and a row not staged.
    let src = common::source("examples/cross_entropy.ph");
    let module = phobos_check::load(src).unwrap_or_else(|d| panic!("{d:?}"));
    let info = &module.kernels[0];
    for pins in [
        "BLOCK=2048 THREADS=256 PARTIALS=2 ROWS_AHEAD=1",
        "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=0 ROWS_AHEAD=1",
    ] {
        let variant = info.variant(Some(pins), Some("T=bf16"), None).expect(pins);
        let err = phobos_check::instantiate(&module, info, &variant).expect_err(pins);
        assert!(format!("{err:?}").contains("E0207"), "{pins}: {err:?}");
    }
}

#[test]
fn cross_entropy_rows_ahead_snapshot() {
    let e = xent(XENT);
    insta::assert_snapshot!(e.source.split_once('\n').unwrap().1);
}

/// A small kernel's body, its row's width and threads, its ROW_SMEM pin, and the record's
/// outcome.
type Why = (String, i64, u32, &'static str, Result<(), NoRowsAhead>);

/// Small kernels, each one reason the row is not read ahead (typed), or applied.
#[test]
fn rows_ahead_records_why_not() {
    let text = |width: i64, threads: u32, body: &str| {
        format!(
            "@autotune(PACK in {{4}}, ROW_SMEM in {{0, 1}}, ROWS_AHEAD in {{0, 1}})\n@launch({threads})\n{}\
             kernel k<T = f32>(X: tensor<T>[M, N], S: tensor<f32>[M], I: tensor<i32>[M]) {{\n  \
             let r = ctx.block.x\n{}}}\n",
            // A z axis is given explicitly.
            if body.contains("ctx.block.z") { "@grid(M, 1, 2)\n" } else { "" },
            body.replace("W", &width.to_string())
        )
    };
    let row = "where(arange(W) < N, X[r, 0 :+ W], 0.0)";
    let tail = "  let a = sum(f32(x))\n  if ctx.thread == 0 {\n    S[r] = a\n  }\n";
    let cases: Vec<Why> = vec![
        (format!("  let x = {row}\n{tail}"), 4096, 256, "ROW_SMEM=1", Ok(())),
        // The row index computed from the block index and a dimension: substituted.
        (
            format!("  let q = (r * 3 + 1) % M\n  let x = where(arange(W) < N, X[q, 0 :+ W], 0.0)\n{tail}"),
            4096,
            256,
            "ROW_SMEM=1",
            Ok(()),
        ),
        (format!("  let x = {row}\n{tail}"), 4096, 256, "ROW_SMEM=0", Err(NoRowsAhead::NotStaged)),
        // Read from a tensor: not known before the row's block runs.
        (
            format!("  let q = I[r]\n  let x = where(arange(W) < N, X[q, 0 :+ W], 0.0)\n{tail}"),
            4096,
            256,
            "ROW_SMEM=1",
            Err(NoRowsAhead::Address),
        ),
        // A variable.
        (
            format!("  var q = r\n  let x = where(arange(W) < N, X[q, 0 :+ W], 0.0)\n{tail}"),
            4096,
            256,
            "ROW_SMEM=1",
            Err(NoRowsAhead::Address),
        ),
        // Under a branch of the problem's values: not once per logical block.
        (
            format!("  if N > 7 {{\n  let x = {row}\n{tail}  }}\n"),
            4096,
            256,
            "ROW_SMEM=1",
            Err(NoRowsAhead::NotOnce),
        ),
        // Two buffers of 131,104 bytes.
        (format!("  let x = {row}\n{tail}"), 65536, 1024, "ROW_SMEM=1", Err(NoRowsAhead::TooLarge(131_104))),
        // The z axis.
        (
            format!("  let x = {row}\n  let a = sum(f32(x))\n  if ctx.thread == 0 {{\n    S[r + ctx.block.z] = a\n  }}\n"),
            4096,
            256,
            "ROW_SMEM=1",
            Err(NoRowsAhead::Grid),
        ),
    ];
    for (body, width, threads, smem, want) in cases {
        let src = phobos_syntax::SourceFile::new("k.ph", text(width, threads, &body));
        let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{body}: {d:?}"));
        let info = &module.kernels[0];
        let pins = format!("{smem} ROWS_AHEAD=1");
        let variant = info
            .variant(Some(&pins), Some("T=bf16"), None)
            .expect(&body);
        let k = phobos_check::instantiate(&module, info, &variant).expect(&body);
        let e = emit(&k, &EmitOptions { source: Some(src) }).expect(&body);
        let got = ahead(&e);
        assert_eq!(got.map(|_| ()), want, "{body}");
        assert_eq!(e.persistent, want.is_ok(), "{body}");
        let record = e.rows_ahead.as_ref().expect("a record").to_string();
        assert!(e.notes.contains(&record), "{body}");
        assert_eq!(
            e.source.contains("ph::load_row_smem_ahead"),
            want.is_ok(),
            "{body}"
        );
    }
}

/// Offline: the ROWS_AHEAD=1 points compile for sm_90a to bulk copies waited on by parity, at
/// the register budget of the one-buffer form; cross-entropy with no spill, the softmaxes with
/// at most 16 bytes in two passes (loop-invariant scratch addresses ptxas hoists out of the row
/// loop, read back once a row) and 32 in one (ONE_PASS=1, NOTES r30: the running max and sum
/// of each thread beside them; ptxas 13 spills 28).
#[test]
fn rows_ahead_compiles_to_bulk_copies_waited_by_parity() {
    let points = [
        ("cross_entropy.ph", XENT, "T=bf16", "V", 50257, 32, 0),
        (
            "cross_entropy.ph",
            "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SMEM=2 ROWS_AHEAD=1",
            "T=bf16",
            "V",
            32000,
            40,
            0,
        ),
        (
            "cross_entropy.ph",
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1",
            "T=f16",
            "V",
            50257,
            32,
            0,
        ),
        (
            "softmax_online.ph",
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1 ONE_PASS=0",
            "T=bf16",
            "N",
            50257,
            32,
            16,
        ),
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1 ONE_PASS=0",
            "T=bf16",
            "N",
            50257,
            32,
            16,
        ),
        (
            "softmax_online.ph",
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1 ONE_PASS=1",
            "T=bf16",
            "N",
            50257,
            32,
            32,
        ),
        (
            "softmax_row.ph",
            "BLOCK=57344 THREADS=1024 PACK=4 ROW_SMEM=1 ROWS_AHEAD=1 ONE_PASS=1",
            "T=bf16",
            "N",
            50257,
            32,
            32,
        ),
    ];
    // Both buffers' barriers initialized once, none invalidated.
    assert_ahead_compiles(&points, 2);
}

/// ROWS_AHEAD=2 (bench/NOTES.md r21): the next row lands in one buffer while this one, read out
/// of it into registers at its `let`, is computed; the loads are the landed row's, the stores
/// the register forms ROW_SMEM=0 has.
#[test]
fn rows_ahead_2_lands_the_next_row_for_registers() {
    // f32: a Tile of one-element groups (the rows are 4 bytes off 16), 50 a thread.
    let e = example(
        "softmax_online.ph",
        "BLOCK=51200 THREADS=1024 WHOLE=1 PACK=4 ROWS_AHEAD=2",
        "T=f32",
        [("M", 2048), ("N", 50257)],
    );
    let a = ahead(&e).unwrap_or_else(|why| panic!("{why}\n{:?}", e.notes));
    assert_eq!(a.form, AheadForm::Landed);
    // The barrier, the 51200 columns of f32, 16 bytes past them.
    assert_eq!(a.bytes, 16 + 51200 * 4 + 16);
    assert!(e.persistent && phobos::backend::cuda::launch_facts(&e).persistent);
    assert_eq!(e.dynamic_smem_bytes, a.bytes + 128);
    for s in [
        // One block a multiprocessor, 64 registers a thread: no second argument.
        "__launch_bounds__(1024) softmax_online(",
        "ph::row_land_init(ph_resident + 0);",
        "ph::row_land_issue<Blk1x51200>(ph::Region<const float>{X + (long long)ph_nbx * N",
        "const auto ph_next_row = [&] {",
        "ph::Tile<float, Blk1x51200> x = ph::load_row_landed<ph::Tile<float, Blk1x51200>, Blk1x51200, ph::EVICT_NORMAL>(",
        ", ph_resident + 0, ph_row_n, ph_next_row, ph_tile + (int)gridDim.x < ph_gx * ph_gy);",
        "ph::store_tile(ph::Region<float>{Y + (long long)r * N",
    ] {
        assert!(e.source.contains(s), "{s}\n{}", e.source);
    }
    assert!(!e.source.contains("smem_row_ahead"), "{}", e.source);
    let record = e.rows_ahead.as_ref().expect("a record").to_string();
    assert!(record.starts_with("ROWS_AHEAD=2: "), "{record}");
    assert!(e.notes.contains(&record));
    // bf16 cross-entropy: the packed row (PACK=4), one buffer of the 57344 columns.
    let e = xent("BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2");
    let a = ahead(&e).unwrap_or_else(|why| panic!("{why}\n{:?}", e.notes));
    assert_eq!((a.form, a.bytes), (AheadForm::Landed, 16 + 57344 * 2 + 16));
    assert!(e.source.contains(
        "ph::Packed<ph::bf16, Blk1x57344> x = ph::load_row_landed<ph::Packed<ph::bf16, Blk1x57344>, Blk1x57344, ph::EVICT_NORMAL>("
    ));
    assert!(e
        .source
        .contains("ph::reduce_all_packed<ph::Max>(x, ph_scratch)"));
}

#[test]
fn softmax_online_rows_ahead_2_snapshot() {
    let e = example(
        "softmax_online.ph",
        "BLOCK=51200 THREADS=1024 WHOLE=1 PACK=4 ROWS_AHEAD=2",
        "T=f32",
        [("M", 2048), ("N", 50257)],
    );
    insta::assert_snapshot!(e.source.split_once('\n').unwrap().1);
}

/// ROWS_AHEAD=2's reasons, typed: a staged row, no masked row load, several, and the checks it
/// shares with ROWS_AHEAD=1 (the address).
#[test]
fn rows_ahead_2_records_why_not() {
    let text = |body: &str| {
        format!(
            "@autotune(PACK in {{4}}, ROW_SMEM in {{0, 1}}, ROWS_AHEAD in {{0, 2}})\n@launch(256)\n\
             kernel k<T = f32>(X: tensor<T>[M, N], S: tensor<f32>[M], I: tensor<i32>[M]) {{\n  \
             let r = ctx.block.x\n{body}}}\n"
        )
    };
    let row = "where(arange(4096) < N, X[r, 0 :+ 4096], 0.0)";
    let tail = "  let a = sum(f32(x))\n  if ctx.thread == 0 {\n    S[r] = a\n  }\n";
    let cases: Vec<(String, &str, &str, Result<(), NoRowsAhead>)> = vec![
        (format!("  let x = {row}\n{tail}"), "T=bf16", "ROW_SMEM=0", Ok(())),
        (format!("  let x = {row}\n{tail}"), "T=f32", "ROW_SMEM=0", Ok(())),
        (format!("  let x = {row}\n{tail}"), "T=bf16", "ROW_SMEM=1", Err(NoRowsAhead::RowSmem)),
        // An unmasked load: not the `where` form.
        (
            format!("  let x = X[r, 0 :+ 4096]\n{tail}"),
            "T=f32",
            "ROW_SMEM=0",
            Err(NoRowsAhead::NoRow),
        ),
        (
            format!("  let x = {row}\n  let y = {row}\n  let a = sum(f32(x)) + sum(f32(y))\n  if ctx.thread == 0 {{\n    S[r] = a\n  }}\n"),
            "T=f32",
            "ROW_SMEM=0",
            Err(NoRowsAhead::Several(2)),
        ),
        (
            format!("  let q = I[r]\n  let x = where(arange(4096) < N, X[q, 0 :+ 4096], 0.0)\n{tail}"),
            "T=f32",
            "ROW_SMEM=0",
            Err(NoRowsAhead::Address),
        ),
    ];
    for (body, types, smem, want) in cases {
        let src = phobos_syntax::SourceFile::new("k.ph", text(&body));
        let module = phobos_check::load(src.clone()).unwrap_or_else(|d| panic!("{body}: {d:?}"));
        let info = &module.kernels[0];
        let pins = format!("{smem} ROWS_AHEAD=2");
        let variant = info.variant(Some(&pins), Some(types), None).expect(&body);
        let k = phobos_check::instantiate(&module, info, &variant).expect(&body);
        let e = emit(&k, &EmitOptions { source: Some(src) }).expect(&body);
        assert_eq!(ahead(&e).map(|_| ()), want, "{types} {body}");
        assert_eq!(e.persistent, want.is_ok(), "{body}");
        assert_eq!(
            e.source.contains("ph::load_row_landed"),
            want.is_ok(),
            "{body}"
        );
        let record = e.rows_ahead.as_ref().expect("a record").to_string();
        assert!(record.starts_with("ROWS_AHEAD=2"), "{record}");
    }
}

/// Offline: the ROWS_AHEAD=2 points compile for sm_90a to bulk copies waited on by parity, one
/// barrier, at 64 registers a thread; the spills (bytes stored) as ptxas reports them: the f32
/// rows of 50 a thread save a few loop-carried scalars around the row's reads, once a row
/// (bench/NOTES.md r21), the aligned f32 row and cross-entropy none.
#[test]
fn rows_ahead_2_compiles_to_one_buffer_waited_by_parity() {
    let points = [
        (
            "cross_entropy.ph",
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
            "T=bf16",
            "V",
            50257,
            64,
            0,
        ),
        (
            "softmax_online.ph",
            "BLOCK=57344 THREADS=1024 WHOLE=1 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
            "T=bf16",
            "N",
            50257,
            64,
            32,
        ),
        (
            "softmax_online.ph",
            "BLOCK=51200 THREADS=1024 WHOLE=1 PACK=4 ROWS_AHEAD=2",
            "T=f32",
            "N",
            50257,
            64,
            60,
        ),
        (
            "softmax_row.ph",
            "BLOCK=51200 THREADS=1024 PACK=4 ROW_SMEM=0 ROWS_AHEAD=2",
            "T=f32",
            "N",
            50257,
            64,
            60,
        ),
        (
            "softmax_online.ph",
            "BLOCK=32768 THREADS=1024 WHOLE=1 PACK=4 ROWS_AHEAD=2",
            "T=f32",
            "N",
            32000,
            64,
            0,
        ),
    ];
    assert_ahead_compiles(&points, 1);
}

/// (file, pins, types, the width's dim, its value, registers at most, spill stores at most).
type AheadPoint<'a> = (&'a str, &'a str, &'a str, &'a str, i64, u32, u32);

/// Offline: each point (M = 2048) compiles for sm_90a to bulk copies on mbarriers waited on by
/// parity behind a proxy fence, `barriers` of them initialized and none invalidated, within
/// its register and spill bounds.
fn assert_ahead_compiles(points: &[AheadPoint], barriers: usize) {
    let emitted: Vec<_> = (points.iter())
        .map(|(f, p, t, w, n, _, _)| example(f, p, t, [("M", 2048), (w, *n)]))
        .collect();
    let labels: Vec<_> = (points.iter())
        .map(|(f, p, t, ..)| format!("{f} {p} {t}"))
        .collect();
    let Some(results) = common::compiled(&emitted, &labels) else {
        return;
    };
    for (p, (c, res)) in points.iter().zip(&results) {
        let (file, pins, types, _, _, regs, spill) = p;
        common::assert_bulk_copied(&c.ptx, pins);
        assert!(c.ptx.contains("fence.proxy.async.shared::cta"), "{pins}");
        assert_eq!(
            c.ptx.matches("mbarrier.init.shared").count(),
            barriers,
            "{pins}"
        );
        assert!(!c.ptx.contains("mbarrier.inval"), "{pins}");
        assert!(res.registers <= *regs, "{file} {pins} {types}: {res:?}");
        assert!(
            res.spill_store_bytes <= *spill,
            "{file} {pins} {types}: {res:?}"
        );
    }
}
