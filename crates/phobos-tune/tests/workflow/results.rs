//! Results files: valid sizes files that read back to what was written, byte for byte stable.

use super::{fixture, report};
use phobos_ir::{DType, MemOrder, Point};
use phobos_syntax::SourceFile;
use phobos_tune::workflow::{
    parse_sizes, write_results, ConfigString, GemmProblem, Operands, ResultRow, SizesItem,
};
use proptest::prelude::*;

fn read_back(text: &str) -> Vec<SizesItem> {
    let f = SourceFile::new("results.yaml", text);
    let s = parse_sizes(&f).unwrap_or_else(|d| panic!("{}\n{text}", report(&f, [&d])));
    assert!(
        s.diagnostics().is_empty(),
        "{}\n{text}",
        report(&f, s.diagnostics())
    );
    s.items().unwrap().into_iter().cloned().collect()
}

fn tuned(problem: GemmProblem, point: &[(&str, i64)]) -> SizesItem {
    SizesItem {
        problem,
        config: Some(Point(
            point.iter().map(|&(n, v)| (n.to_string(), v)).collect(),
        )),
    }
}

fn rows() -> Vec<ResultRow> {
    let mut p = GemmProblem::new(4864, 4096, 8192);
    p.operands = Operands {
        dtype_a: Some(DType::F8E5M2),
        dtype_b: Some(DType::F8E5M2),
        dtype_c: Some(DType::F16),
        order_a: Some(MemOrder::RowMajor),
        order_b: Some(MemOrder::ColMajor),
    };
    let q = GemmProblem::new(8192, 8192, 8192);
    vec![
        ResultRow::timed(
            tuned(
                p,
                &[
                    ("TILE_M", 256),
                    ("TILE_N", 128),
                    ("TILE_K", 64),
                    ("SPLIT_K", 1),
                ],
            ),
            0.3877,
        ),
        ResultRow::timed(tuned(q, &[("TILE_M", 128), ("NEG", -2)]), 1.4752)
            .with_note("ran on\r\ndevice 0"),
        ResultRow::new(SizesItem {
            problem: GemmProblem::new(16, 16, 16),
            config: None,
        })
        .with_note("no valid configuration:\nevery point was pruned"),
    ]
}

#[test]
fn results_read_back_as_the_items_written() {
    let rows = rows();
    let text = write_results(&rows, &["kernel gemm in gemm.ph".to_string()]);
    let items: Vec<SizesItem> = rows.iter().map(|r| r.item.clone()).collect();
    assert_eq!(read_back(&text), items);
}

#[test]
fn results_are_one_flow_mapping_per_line() {
    let text = write_results(
        &rows(),
        &[
            "kernel gemm in gemm.ph".to_string(),
            "device: H200\rline two".to_string(),
        ],
    );
    insta::assert_snapshot!(text);
    assert_eq!(
        text,
        write_results(
            &rows(),
            &[
                "kernel gemm in gemm.ph".to_string(),
                "device: H200\rline two".to_string()
            ]
        )
    );
}

#[test]
fn the_comment_is_the_config_string_of_the_row() {
    let rows = rows();
    let text = write_results(&rows, &[]);
    let line = text.lines().find(|l| l.starts_with("- ")).unwrap();
    let comment = line.split("  # ").nth(1).unwrap();
    let cs: ConfigString = comment.parse().unwrap();
    assert_eq!(cs.problem, rows[0].item.problem);
    assert_eq!(Some(cs.point), rows[0].item.config);
}

#[test]
fn tflops_follow_from_the_time() {
    let row = ResultRow::timed(tuned(GemmProblem::new(1000, 1000, 1000), &[]), 2.0);
    assert_eq!(row.tflops, Some(1.0));
    let row = ResultRow::timed(tuned(GemmProblem::new(1, 1, 1), &[]), f64::NAN);
    assert_eq!((row.time_ms, row.tflops), (None, None));
    let text = write_results(&[row], &[]);
    assert!(
        !text.contains("time_ms") && !text.contains("tflops"),
        "{text}"
    );
}

#[test]
fn no_rows_is_an_empty_sizes_file() {
    let text = write_results(&[], &[]);
    assert_eq!(text, "# phobos-kbench results\n[]\n");
    assert!(read_back(&text).is_empty());
}

#[test]
fn the_seed_input_survives_a_round_trip() {
    let f = fixture("sizes_mixed.yaml");
    let items: Vec<SizesItem> = parse_sizes(&f)
        .unwrap()
        .items()
        .unwrap()
        .into_iter()
        .cloned()
        .collect();
    let rows: Vec<ResultRow> = items.iter().cloned().map(ResultRow::new).collect();
    assert_eq!(read_back(&write_results(&rows, &[])), items);
}

fn dtype() -> impl Strategy<Value = Option<DType>> {
    prop::option::of(prop::sample::select(DType::ALL.to_vec()))
}

fn order() -> impl Strategy<Value = Option<MemOrder>> {
    prop::option::of(prop_oneof![
        Just(MemOrder::RowMajor),
        Just(MemOrder::ColMajor)
    ])
}

prop_compose! {
    fn item()(
        dims in (1..=i32::MAX as i64, 1..=i32::MAX as i64, 1..=i32::MAX as i64),
        ops in (dtype(), dtype(), dtype(), order(), order()),
        config in prop::option::of(prop::collection::btree_map("[A-Z_][A-Z0-9_]{0,8}", any::<i64>(), 0..5)),
    ) -> SizesItem {
        let (dtype_a, dtype_b, dtype_c, order_a, order_b) = ops;
        SizesItem {
            problem: GemmProblem {
                m: dims.0,
                n: dims.1,
                k: dims.2,
                operands: Operands { dtype_a, dtype_b, dtype_c, order_a, order_b },
            },
            config: config.map(|c| Point(c.into_iter().collect())),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        rng_seed: proptest::test_runner::RngSeed::Fixed(2),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_results_file_reads_back(items in prop::collection::vec(item(), 1..6), time in 1e-4f64..1e3) {
        let rows: Vec<ResultRow> = items.iter().cloned().map(|i| ResultRow::timed(i, time)).collect();
        let text = write_results(&rows, &[]);
        // Problems listed twice are warned about; compare items, not diagnostics.
        let f = SourceFile::new("r.yaml", text.clone());
        let s = parse_sizes(&f).unwrap();
        let back: Vec<SizesItem> = s.items().unwrap().into_iter().cloned().collect();
        prop_assert_eq!(back, items, "{}", text);
    }
}
