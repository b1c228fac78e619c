//! Sizes files: the seed's format, every accepted form, per-entry errors, malformed files.

use super::{fixture, report};
use phobos_ir::{DType, MemOrder, Point};
use phobos_syntax::SourceFile;
use phobos_tune::workflow::codes;
use phobos_tune::workflow::{parse_sizes, GemmProblem, SizesFile};

fn parse(text: &str) -> (SourceFile, SizesFile) {
    let f = SourceFile::new("sizes.yaml", text);
    let s = parse_sizes(&f).unwrap_or_else(|d| panic!("{}", report(&f, [&d])));
    (f, s)
}

fn codes_of(s: &SizesFile, index: usize) -> Vec<&'static str> {
    s.entries[index]
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect()
}

#[test]
fn the_seed_example_is_accepted_as_written() {
    let f = fixture("seed_gemm_input.yaml");
    let s = parse_sizes(&f).unwrap();
    assert!(
        s.diagnostics().is_empty(),
        "{}",
        report(&f, s.diagnostics())
    );
    let items = s.items().unwrap();
    let dims: Vec<_> = items
        .iter()
        .map(|i| (i.problem.m, i.problem.n, i.problem.k))
        .collect();
    assert_eq!(dims, vec![(4864, 4096, 8192), (8192, 8192, 8192)]);
    for item in items {
        assert_eq!(item.problem.operands.order_a, Some(MemOrder::RowMajor));
        assert_eq!(item.problem.operands.order_b, Some(MemOrder::ColMajor));
        assert_eq!(item.problem.operands.dtype_a, None);
        assert_eq!(item.problem.trans(), "NT");
        assert_eq!(item.config, None);
    }
    assert_eq!(s.entries[1].line, 2);
}

#[test]
fn every_accepted_form_reads_as_intended() {
    let f = fixture("sizes_mixed.yaml");
    let s = parse_sizes(&f).unwrap();
    assert!(
        s.diagnostics().is_empty(),
        "{}",
        report(&f, s.diagnostics())
    );
    let items = s.items().unwrap();
    assert_eq!(items.len(), 4);
    let ops = &items[1].problem.operands;
    assert_eq!(
        (ops.order_a, ops.order_b),
        (Some(MemOrder::RowMajor), Some(MemOrder::ColMajor))
    );
    assert_eq!(
        (ops.dtype_a, ops.dtype_b, ops.dtype_c),
        (Some(DType::F8E5M2), Some(DType::F8E4M3), Some(DType::F16))
    );
    // A block mapping, with tf32, a nested config and ignored measurement keys.
    assert_eq!(s.entries[2].line, 4);
    let block = items[2];
    assert_eq!(
        (block.problem.m, block.problem.n, block.problem.k),
        (1024, 1024, 64)
    );
    assert_eq!(block.problem.operands.dtype_a, Some(DType::Tf32));
    assert_eq!(block.problem.operands.dtype_b, Some(DType::F32));
    let want = Point(vec![
        ("TILE_M".into(), 128),
        ("TILE_N".into(), 64),
        ("STAGES".into(), 3),
    ]);
    assert_eq!(block.config.as_ref(), Some(&want));
    // A config string fills the operands the entry leaves out.
    let cs = items[3];
    assert_eq!(cs.problem.operands.dtype_a, Some(DType::F16));
    assert_eq!(cs.problem.operands.order_a, Some(MemOrder::ColMajor));
    assert_eq!(cs.problem.operands.dtype_c, Some(DType::F32));
    assert_eq!(cs.config, Some(Point(vec![("TILE_M".into(), 32)])));
}

#[test]
fn bad_entries_are_reported_one_by_one_with_their_lines() {
    let f = fixture("sizes_bad.yaml");
    let s = parse_sizes(&f).unwrap();
    insta::assert_snapshot!(report(&f, s.diagnostics()));
    assert_eq!(s.entries.len(), 11);
    assert!(codes_of(&s, 0).is_empty());
    assert_eq!(codes_of(&s, 1), [codes::MISSING_KEY]);
    assert_eq!(codes_of(&s, 2), [codes::DIM_RANGE]);
    assert_eq!(codes_of(&s, 3), [codes::UNKNOWN_DTYPE]);
    // A quoted and a fractional dim are wrong kinds, and not also "missing".
    assert_eq!(codes_of(&s, 4), [codes::WRONG_KIND, codes::WRONG_KIND]);
    assert_eq!(
        codes_of(&s, 5),
        [codes::BAD_LAYOUT, codes::UNKNOWN_KEY, codes::UNKNOWN_KEY]
    );
    assert_eq!(codes_of(&s, 6), [codes::DUP_KEY]);
    assert_eq!(codes_of(&s, 7), [codes::DUP_PROBLEM]);
    assert_eq!(s.entries[7].duplicate_of, Some(0));
    assert_eq!(codes_of(&s, 8), [codes::ENTRY_NOT_MAPPING]);
    assert_eq!(codes_of(&s, 9), [codes::DIM_RANGE, codes::WRONG_KIND]);
    assert_eq!(codes_of(&s, 10), [codes::BAD_CONFIG]);
    for (i, e) in s.entries.iter().enumerate() {
        assert_eq!(e.line, i + 1);
        assert_eq!(e.item.is_some(), i == 0 || i == 7, "entry {i}");
    }
    // Rejecting the file lists only errors; skipping keeps the two good entries.
    let errors = s.items().unwrap_err();
    assert!(errors.iter().all(|d| d.is_error()));
    assert_eq!(errors.len(), 11);
    assert_eq!(s.good_items().len(), 2);
    assert_eq!(s.bad_entries().len(), 9);
}

#[test]
fn warnings_alone_keep_the_entry() {
    let (f, s) = parse("- {M: 1, N: 2, K: 3, m: 4, note: hi}\n");
    assert!(!s.has_errors());
    let items = s.items().unwrap();
    assert_eq!(items[0].problem, GemmProblem::new(1, 2, 3));
    let text = report(&f, s.diagnostics());
    assert!(
        text.contains("sizes.yaml:1:22: warning[W1001]: unknown key `m` (ignored)"),
        "{text}"
    );
    assert!(text.contains("did you mean `M`?"), "{text}");
    assert!(text.contains("known keys: M, N, K"), "{text}");
}

#[test]
fn duplicate_keys_point_at_both_places() {
    let (f, s) = parse("- M: 1\n  N: 2\n  K: 3\n  N: 2\n");
    let d = &s.entries[0].diagnostics[0];
    assert_eq!(d.code, codes::DUP_KEY);
    assert_eq!(f.line_col(d.primary.span.lo), (4, 3));
    assert_eq!(f.line_col(d.secondary[0].span.lo), (2, 3));
}

#[test]
fn a_large_file_with_repeats_points_each_repeat_at_its_first_entry() {
    // 60 000 entries over 600 problems: each repeat names the first entry of its problem, and
    // the one bad entry at the end is still found (the check is one pass, not one per pair).
    let mut text: String = (0..60_000)
        .map(|i| format!("- {{M: {}, N: 64, K: 64}}\n", 1 + i % 600))
        .collect();
    text.push_str("- {M: 0, N: 64, K: 64}\n");
    let start = std::time::Instant::now();
    let (_, s) = parse(&text);
    let took = start.elapsed();
    assert_eq!(s.entries.len(), 60_001);
    for (i, e) in s.entries.iter().enumerate().take(60_000) {
        let expected = (i >= 600).then_some(i % 600);
        assert_eq!(e.duplicate_of, expected, "entry {i}");
    }
    assert!(s.entries[60_000].item.is_none());
    assert!(took.as_secs() < 60, "{took:?}");
}

#[test]
fn layouts_accept_the_seed_letters_and_booleans_only() {
    let (_, s) = parse("- {M: 1, N: 1, K: 1, rowMajorA: false, rowMajorB: 't'}\n- {M: 1, N: 1, K: 2, rowMajorA: row}\n");
    let ops = s.entries[0].item.as_ref().unwrap().problem.operands;
    assert_eq!(
        (ops.order_a, ops.order_b),
        (Some(MemOrder::ColMajor), Some(MemOrder::RowMajor))
    );
    assert_eq!(codes_of(&s, 1), [codes::BAD_LAYOUT]);
}

#[test]
fn every_dtype_alias_of_the_seed_is_accepted() {
    for (name, t) in [
        ("fp32", DType::F32),
        ("tf32", DType::Tf32),
        ("fp16", DType::F16),
        ("bf16", DType::BF16),
        ("fp8", DType::F8E4M3),
        ("bf8", DType::F8E5M2),
        ("int8", DType::I8),
        ("f8e5m2", DType::F8E5M2),
    ] {
        let (_, s) = parse(&format!("- {{M: 1, N: 1, K: 1, dtype_c: '{name}'}}\n"));
        assert_eq!(
            s.items().unwrap()[0].problem.operands.dtype_c,
            Some(t),
            "{name}"
        );
    }
}

#[test]
fn stored_configs_are_checked() {
    let text = "- {M: 1, N: 1, K: 1, config: {TILE_M: 1, TILE_M: 2}}\n\
                - {M: 1, N: 1, K: 1, config: 7}\n\
                - {M: 1, N: 1, K: 1, config: 'M=1_N=1_K=1_A=bf16', dtype_a: f16}\n\
                - {M: 1, N: 1, K: 1, config: 'TILE_M=4'}\n\
                - {M: 1, N: 1, K: 1, config: {}}\n";
    let (f, s) = parse(text);
    assert_eq!(codes_of(&s, 0), [codes::DUP_KEY]);
    assert_eq!(codes_of(&s, 1), [codes::BAD_CONFIG]);
    assert_eq!(codes_of(&s, 2), [codes::BAD_CONFIG]);
    assert_eq!(codes_of(&s, 3), [codes::BAD_CONFIG]);
    assert_eq!(
        s.entries[4].item.as_ref().unwrap().config,
        Some(Point::default())
    );
    let out = report(&f, s.diagnostics());
    assert!(
        out.contains("dtype_a is f16 in the entry and bf16 in the string"),
        "{out}"
    );
    assert!(
        out.contains("expected `M=<dim>`, found `TILE_M=4`"),
        "{out}"
    );
}

#[test]
fn aliases_and_tags_are_refused() {
    let (_, s) = parse("- {M: &m 64, N: *m, K: 64}\n");
    assert_eq!(codes_of(&s, 0), [codes::UNSUPPORTED_YAML]);
    let f = SourceFile::new("t.yaml", "- {M: !!int 64, N: 1, K: 1}\n");
    assert_eq!(parse_sizes(&f).unwrap_err().code, codes::UNSUPPORTED_YAML);
}

#[test]
fn malformed_files_are_one_error_with_its_line() {
    let cases = [
        (
            "{M: 1, N: 2, K: 3}\n",
            codes::NOT_A_SEQUENCE,
            1,
            "a sizes file is a sequence of problems, not a mapping",
        ),
        (
            "- {M: 1, N: 2, K: 3}\n- {M: 1, N: [2\n",
            codes::YAML_SYNTAX,
            3,
            "invalid YAML",
        ),
        (
            "- {M: 1}\n  bad: indent\n",
            codes::YAML_SYNTAX,
            2,
            "invalid YAML",
        ),
        (
            "# nothing here\n",
            codes::NOT_A_SEQUENCE,
            1,
            "the sizes file has no problems",
        ),
        (
            "- {M: 1, N: 1, K: 1}\n---\n- {M: 2, N: 1, K: 1}\n",
            codes::NOT_A_SEQUENCE,
            2,
            "second one",
        ),
        ("4096\n", codes::NOT_A_SEQUENCE, 1, "not the integer 4096"),
    ];
    for (text, code, line, message) in cases {
        let f = SourceFile::new("bad.yaml", text);
        let d = parse_sizes(&f).expect_err(text);
        assert_eq!(d.code, code, "{text}: {}", d.message);
        assert_eq!(
            f.line_col(d.primary.span.lo).0,
            line,
            "{text}: {}",
            d.message
        );
        assert!(d.message.contains(message), "{text}: {}", d.message);
    }
}

#[test]
fn an_empty_sequence_has_no_entries() {
    let (_, s) = parse("[]\n");
    assert!(s.entries.is_empty());
    assert!(s.items().unwrap().is_empty());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 512,
        rng_seed: proptest::test_runner::RngSeed::Fixed(2),
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Any text gives entries or one error, never a panic, with spans a renderer can slice.
    #[test]
    fn any_text_is_judged_without_panicking(text in "[-MNKTé{}\\[\\]:,'\" \n#&*!0-9a-z_]{0,60}") {
        let f = SourceFile::new("fuzz.yaml", text.clone());
        let diags: Vec<phobos_syntax::Diagnostic> = match parse_sizes(&f) {
            Ok(s) => s.diagnostics().into_iter().cloned().collect(),
            Err(d) => vec![d],
        };
        for d in diags.iter() {
            for span in std::iter::once(d.primary.span).chain(d.secondary.iter().map(|l| l.span)) {
                proptest::prop_assert!(text.get(span.range()).is_some(), "{:?} in {:?}", span, text);
            }
        }
    }
}
