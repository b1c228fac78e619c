//! The knob `ROW_SPLIT` (bench/NOTES.md r22): each program instance on a cluster of k blocks,
//! every row tile split into k column parts, whole-tile reductions combined across the cluster.
//! The plan record (applied, or a typed reason), the emitted code (insta), the launch facts, and
//! offline (NVRTC and ptxas) the registers that let two blocks share a multiprocessor. On the
//! GPU: gpu_diff's `ROW_SPLIT` cases (common::whole_rows::ROW_SPLIT_POINTS) against the
//! interpreter, which runs each instance whole.

mod common;

use phobos::backend::cuda::launch_facts;
use phobos_cuda::row_split::{NoRowSplit, SplitRow, Whole};
use phobos_cuda::Emitted;
use phobos_ir::knobs::Knob;

const ROW: &str = "examples/softmax_row.ph";
const F32_SPLIT: &str = "BLOCK=51200 THREADS=512 PACK=4 ROW_SPLIT=2";

fn split(e: &Emitted) -> Result<SplitRow, NoRowSplit> {
    e.row_split
        .as_ref()
        .expect("a ROW_SPLIT record")
        .split
        .clone()
}

#[test]
fn the_f32_row_splits_over_a_cluster_of_two() {
    let e = common::example_sm90(ROW, F32_SPLIT, "T=f32");
    assert_eq!(
        split(&e),
        Ok(SplitRow {
            width: 51200,
            part: 25600
        })
    );
    assert_eq!(e.row_split_blocks(), 2);
    assert_eq!(launch_facts(&e).row_split, 2);
    // The record is rendered among the notes.
    let record = e.row_split.as_ref().expect("a record").to_string();
    assert!(e.notes.contains(&record), "{:?}", e.notes);
    for s in [
        "__cluster_dims__(2, 1, 1) __launch_bounds__(512, 2)",
        "const int r = (int)blockIdx.x / 2;",
        "using Blk1x25600 = ph::Blocked<1, 25600, 512, 4>;",
        "ph::cluster_start<2>(ph_cluster_slots);",
        "ph::cluster_all<ph::Max, 2>(",
        "ph::cluster_all<ph::Sum, 2>(",
    ] {
        assert!(e.source.contains(s), "{s}\n{}", e.source);
    }
    insta::assert_snapshot!("softmax_row_split_f32", e.source);
    // Without the knob (ROW_SPLIT=1): no record, no cluster.
    let one = common::example_sm90(ROW, "BLOCK=51200 THREADS=1024 PACK=4", "T=f32");
    assert_eq!(one.row_split, None);
    assert_eq!(one.row_split_blocks(), 1);
    assert!(!one.source.contains("cluster"), "{}", one.source);
}

#[test]
fn a_scalar_store_runs_in_rank_zero_and_the_packed_row_keeps_its_load() {
    let e = common::example_sm90(
        "examples/cross_entropy.ph",
        "BLOCK=57344 THREADS=512 WHOLE=1 PACK=4 ROW_SPLIT=2",
        "T=bf16",
    );
    assert!(split(&e).is_ok(), "{:?}", e.notes);
    for s in [
        // The block's part of the row, its limit the row's width less the part's first column.
        "ph::load_row_packed_fill<Blk1x28672, ph::EVICT_NORMAL>(ph::Region<const ph::bf16>{X + (long long)r * V, 0, ph::mul((int)blockIdx.x % 2, 28672), 1, V, 0, 1, (unsigned)r < (unsigned)M}, ph::sub(V, ph::mul((int)blockIdx.x % 2, 28672)), ",
        "if ((int)blockIdx.x % 2 == 0) {\n        ph::store1<true>(Loss, r, M, ",
    ] {
        assert!(e.source.contains(s), "{s}\n{}", e.source);
    }
}

/// A kernel `body` over rows of width 64 (`X: [M, N]`, `Y: [M, N]`) at `pins`.
fn tiny(body: &str, pins: &str) -> Emitted {
    let text = format!(
        "@autotune(ROW_SPLIT in {{1, 2, 3}}, ROW_SMEM in {{0, 1}}, PACK in {{0, 4}})\n\
         @launch(32)\n\
         kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N], W: tensor<f32>[64, 64]) {{\n\
         let r = ctx.block.x\n{body}\n}}\n"
    );
    common::emitted_sm90("split.ph", &text, pins, "")
}

#[test]
fn what_keeps_an_instance_on_one_block() {
    let row = "let x = X[r, 0 :+ 64]\nY[r, 0 :+ 64] = x - max(x)";
    // The plain row splits: 32 columns a block.
    assert_eq!(
        split(&tiny(row, "ROW_SPLIT=2")),
        Ok(SplitRow {
            width: 64,
            part: 32
        })
    );
    let cases = [
        (row, "ROW_SPLIT=3", NoRowSplit::Blocks),
        (
            row,
            "ROW_SPLIT=2 ROW_SMEM=1 PACK=4",
            NoRowSplit::Knob(Knob::RowSmem),
        ),
        (
            "let x = X[r, 0 :+ 64]\nY[r, 0 :+ 64] = x\nlet w = W[0 :+ 64, 0 :+ 64]",
            "ROW_SPLIT=2",
            NoRowSplit::Shape {
                width: 64,
                shape: vec![64, 64],
            },
        ),
        (
            "let x = X[r, 0 :+ 64]\nY[r, 0 :+ 32] = X[r, 0 :+ 32]\nY[r, 32 :+ 64] = x",
            "ROW_SPLIT=2",
            NoRowSplit::Shape {
                width: 64,
                shape: vec![32],
            },
        ),
        (
            "let x = X[r, 0 :+ 64]\nY[r, 0 :+ 64] = x + Y[r, 0 :+ 64]",
            "ROW_SPLIT=2",
            NoRowSplit::Construct(Whole::ReadBack),
        ),
        (
            "let x = X[r, 0 :+ 64]\nY[r, 0] = x[3]",
            "ROW_SPLIT=2",
            NoRowSplit::Construct(Whole::TileGet),
        ),
        (
            "let w = W[0 :+ 64, 0 :+ 64]\nY[r, 0] = sum(dot(w, w))",
            "ROW_SPLIT=2",
            NoRowSplit::Construct(Whole::Dot),
        ),
        ("Y[r, 0] = 1.0", "ROW_SPLIT=2", NoRowSplit::NoTile),
    ];
    // Before sm_90 there are no clusters: one block an instance.
    let text = "@autotune(ROW_SPLIT in {1, 2})\n@launch(32)\n\
                kernel k(X: tensor<f32>[M, N], Y: tensor<f32>[M, N]) {\n\
                let x = X[ctx.block.x, 0 :+ 64]\nY[ctx.block.x, 0 :+ 64] = x - max(x)\n}\n";
    let module = phobos_check::load(phobos_syntax::SourceFile::new("split.ph", text)).unwrap();
    let info = &module.kernels[0];
    let variant = info.variant(Some("ROW_SPLIT=2"), None, None).unwrap();
    let k = phobos_check::instantiate(&module, info, &variant).unwrap();
    let sm80 = phobos_cuda::emit_for_arch(&k, &phobos_cuda::EmitOptions::default(), 80).unwrap();
    assert_eq!(split(&sm80), Err(NoRowSplit::Target));
    assert!(!sm80.source.contains("__cluster_dims__"), "{}", sm80.source);
    for (body, pins, why) in cases {
        let e = tiny(body, pins);
        assert_eq!(split(&e), Err(why.clone()), "{body} at {pins}");
        // Not applied: one block an instance, as without the knob; the notes say why.
        assert_eq!(e.row_split_blocks(), 1);
        assert_eq!(launch_facts(&e).row_split, 1);
        assert!(!e.source.contains("__cluster_dims__"), "{}", e.source);
        let note = e.row_split.as_ref().expect("a record").to_string();
        assert!(note.contains("not applied"), "{note}");
    }
}

/// `examples/FILE` at `pins` with `types`, specialized on the problem `dims` as the tuner
/// compiles it (rows of 50257 known unaligned: element groups at f32).
fn specialized(file: &str, pins: &str, types: &str, dims: [(&str, i64); 2]) -> Emitted {
    common::specialized(common::source(file), pins, types, &dims)
}

#[test]
fn the_rows_in_registers_leave_room_for_two_blocks() {
    // No spill, and registers for two blocks a multiprocessor (`__launch_bounds__(T, 2)`: at
    // most 65536 / 2T a thread): two blocks of the clusters' parts a multiprocessor, where the
    // unsplit row (1024 threads) fills the register file alone. The f32 points are the
    // benchmark's winners at 2048x50257 (bench/NOTES.md r22c).
    let points = [
        (
            ROW,
            "BLOCK=51200 THREADS=256 PACK=4 ROW_SPLIT=4",
            "T=f32",
            "N",
            50257,
            256,
        ),
        (ROW, F32_SPLIT, "T=f32", "N", 50257, 512),
        (
            ROW,
            "BLOCK=32768 THREADS=512 PACK=4 ROW_SPLIT=2",
            "T=bf16",
            "N",
            32000,
            512,
        ),
        (
            "examples/softmax_online.ph",
            "BLOCK=51200 THREADS=256 WHOLE=1 PACK=4 ROW_SPLIT=4",
            "T=f32",
            "N",
            50257,
            256,
        ),
        (
            "examples/cross_entropy.ph",
            "BLOCK=32768 THREADS=512 WHOLE=1 PACK=4 ROW_SPLIT=2",
            "T=bf16",
            "V",
            32000,
            512,
        ),
    ];
    let emitted: Vec<Emitted> = (points.iter())
        .map(|&(f, p, t, w, n, _)| specialized(f, p, t, [("M", 4096), (w, n)]))
        .collect();
    let labels: Vec<String> = (points.iter())
        .map(|(f, p, t, w, n, _)| format!("{f} {p} {t} {w}={n}"))
        .collect();
    for (e, (.., threads)) in emitted.iter().zip(&points) {
        let bounds = format!("__launch_bounds__({threads}, 2)");
        assert!(e.source.contains(&bounds), "{bounds}\n{}", e.source);
    }
    let Some(reports) = common::assert_no_spills(&emitted, &labels) else {
        return;
    };
    for (((_, res), label), (.., threads)) in reports.iter().zip(&labels).zip(&points) {
        assert!(
            res.registers <= 65536 / (2 * threads),
            "{label}: {} registers",
            res.registers
        );
    }
}
