//! Never panic: load + check_module + instantiate over random and mutated inputs, with random
//! pins (any integer) and type bindings. Fixed seed, so a failure reproduces; a few seconds.
//! To explore further locally: `PHOBOS_FUZZ_SEED=n` (added to each test's seed) and
//! `PHOBOS_FUZZ_SCALE=k` (k times the cases), as phobos-syntax's fuzz reads them.

use phobos_check::{check_module, instantiate, load, Variant};
use phobos_ir::{DType, Point};
use phobos_syntax::SourceFile;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Tokens that make mutations land on interesting syntax.
const VOCAB: &[&str] = &[
    "kernel",
    "let",
    "var",
    "for",
    "in",
    "range",
    "if",
    "else",
    "while",
    "break",
    "continue",
    "tile<f32>[",
    "tensor<f16>[",
    "tile<i32>[4, 4]",
    "ctx.block.x",
    "ctx.thread",
    "ctx.lane",
    "ctx.grid.y",
    "ctx.threads",
    "@autotune(",
    "@launch(",
    "@grid(",
    "@where(",
    "@aligned(",
    "@flops(",
    "@bytes(",
    "@allow_tf32",
    "@what",
    "T in [1, 8]",
    ":+",
    ":",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    ",",
    "=",
    "+=",
    "*=",
    "==",
    "<",
    "&&",
    "||",
    "!",
    "-",
    "*",
    "/",
    "%",
    "<<",
    ">>",
    "0",
    "1",
    "-1",
    "7",
    "64",
    "0.5",
    "-inf",
    "inf",
    "true",
    "2147483648",
    "9223372036854775807",
    "dot(",
    "dot_t(",
    "sum(",
    "max(",
    "min(",
    "rowsum(",
    "rowmax(",
    "where(",
    "exp(",
    "cdiv(",
    "arange(",
    "transpose(",
    "f16(",
    "i64(",
    "u8(",
    "tf32(",
    "axis=1",
    "axis=-1",
    "\n",
    ";",
    "M",
    "N",
    "K",
    "acc",
    "a",
    "b",
    "X",
    "TILE_M",
    "for<unroll 4>",
    "for<unroll U>",
];

fn examples() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ph"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    out.sort();
    out
}

#[derive(Clone, Debug)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, usize),
    Replace(usize, usize, usize),
    Duplicate(usize, usize),
    /// The k-th integer literal becomes this value.
    Number(usize, i64),
    /// The k-th name becomes the j-th name of the file (or of the vocabulary).
    Name(usize, usize),
}

/// Byte ranges of integer literals and of names, in order.
/// Byte ranges `start..end` in a source text.
type Ranges = Vec<(usize, usize)>;

fn words(s: &str) -> (Ranges, Ranges) {
    let b = s.as_bytes();
    let (mut nums, mut names) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i].is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            nums.push((start, i));
        } else if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            names.push((start, i));
        } else {
            i += 1;
        }
    }
    (nums, names)
}

fn apply(src: &str, edits: &[Edit]) -> String {
    let mut text = src.to_string();
    for e in edits {
        let (nums, names) = words(&text);
        match *e {
            Edit::Number(k, v) if !nums.is_empty() => {
                let (a, b) = nums[k % nums.len()];
                text.replace_range(a..b, &v.to_string());
                continue;
            }
            Edit::Name(k, j) if !names.is_empty() => {
                let (a, b) = names[k % names.len()];
                let pick = if j % 3 == 0 {
                    VOCAB[j % VOCAB.len()].to_string()
                } else {
                    let (c, d) = names[j % names.len()];
                    text[c..d].to_string()
                };
                text.replace_range(a..b, &pick);
                continue;
            }
            _ => {}
        }
        text = apply_chars(&text, e);
    }
    text
}

fn apply_chars(src: &str, e: &Edit) -> String {
    let mut s: Vec<char> = src.chars().collect();
    let n = s.len().max(1);
    match *e {
        Edit::Delete(at, len) => {
            let at = at % n;
            let end = (at + len % 12).min(s.len());
            s.drain(at.min(s.len())..end);
        }
        Edit::Insert(at, tok) => {
            let at = (at % n).min(s.len());
            let t = format!(" {} ", VOCAB[tok % VOCAB.len()]);
            s.splice(at..at, t.chars());
        }
        Edit::Replace(at, len, tok) => {
            let at = (at % n).min(s.len());
            let end = (at + len % 6).min(s.len());
            s.splice(at..end, VOCAB[tok % VOCAB.len()].chars());
        }
        Edit::Duplicate(at, len) => {
            let at = (at % n).min(s.len());
            let end = (at + len % 40).min(s.len());
            let piece: Vec<char> = s[at..end].to_vec();
            s.splice(at..at, piece);
        }
        Edit::Number(..) | Edit::Name(..) => {}
    }
    s.into_iter().collect()
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, l)| Edit::Delete(a, l)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, t)| Edit::Insert(a, t)),
        (any::<usize>(), any::<usize>(), any::<usize>())
            .prop_map(|(a, l, t)| Edit::Replace(a, l, t)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, l)| Edit::Duplicate(a, l)),
        (any::<usize>(), pin_value()).prop_map(|(k, v)| Edit::Number(k, v)),
        (any::<usize>(), pin_value()).prop_map(|(k, v)| Edit::Number(k, v.rem_euclid(9))),
        (any::<usize>(), any::<usize>()).prop_map(|(k, j)| Edit::Name(k, j)),
        (any::<usize>(), any::<usize>()).prop_map(|(k, j)| Edit::Name(k, j)),
    ]
}

fn pin_value() -> impl Strategy<Value = i64> {
    prop_oneof![
        -3i64..300,
        Just(0),
        Just(1 << 20),
        Just(i64::MAX),
        Just(i64::MIN),
        any::<i64>()
    ]
}

/// Runs everything a host would on one source; panics are the failures.
fn exercise(src: &str, pins: &[i64], types: &[usize]) -> Reach {
    let Ok(module) = load(SourceFile::new("fuzz.ph", src)) else {
        return Reach::Parse;
    };
    let mut reach = Reach::Load;
    let _ = check_module(&module);
    for k in &module.kernels {
        let base = phobos_check::check_variant(k);
        let point = Point(
            k.space
                .names
                .iter()
                .zip(pins.iter().cycle())
                .map(|(n, v)| (n.name.clone(), *v))
                .collect(),
        );
        let types = k
            .type_params
            .iter()
            .zip(types.iter().cycle())
            .map(|((n, _), t)| (n.clone(), DType::ALL[t % DType::ALL.len()]))
            .collect();
        for v in [
            base.clone(),
            Variant {
                point,
                types,
                ..base.clone()
            },
        ] {
            if let Ok(ir) = instantiate(&module, k, &v) {
                reach = Reach::Instantiate;
                let dims: Vec<(String, i64)> =
                    ir.dims.iter().map(|d| (d.name.clone(), 37)).collect();
                let _ = phobos_check::eval_where(&ir, &dims);
            }
        }
    }
    reach
}

/// How far an input got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Reach {
    Parse,
    Load,
    Instantiate,
}

/// Counts how far inputs get, and checks that enough reach each stage to mean something.
struct Tally(std::sync::Mutex<std::collections::HashMap<Reach, u32>>);

impl Tally {
    fn new() -> Tally {
        Tally(Default::default())
    }
    fn add(&self, r: Reach) {
        *self.0.lock().unwrap().entry(r).or_default() += 1;
    }
    fn assert_reaches(&self, stage: Reach, min: u32) {
        let map = self.0.lock().unwrap();
        let got: u32 = map
            .iter()
            .filter(|(r, _)| **r as u8 >= stage as u8)
            .map(|(_, n)| n)
            .sum();
        assert!(got >= min, "only {got} inputs reached {stage:?}: {map:?}");
    }
}

fn runner(cases: u32, seed: u8) -> TestRunner {
    let env = |name: &str| std::env::var(name).ok().and_then(|s| s.parse::<u32>().ok());
    let seed = seed.wrapping_add(env("PHOBOS_FUZZ_SEED").unwrap_or(0) as u8);
    let cases = cases.saturating_mul(env("PHOBOS_FUZZ_SCALE").unwrap_or(1));
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    )
}

#[test]
fn mutated_examples_never_panic() {
    let sources = examples();
    let strategy = (
        0..sources.len(),
        prop::collection::vec(edit(), 1..4),
        prop::collection::vec(pin_value(), 1..4),
        prop::collection::vec(any::<usize>(), 1..3),
    );
    let tally = Tally::new();
    runner(1500, 7)
        .run(&strategy, |(i, edits, pins, types)| {
            tally.add(exercise(&apply(&sources[i], &edits), &pins, &types));
            Ok(())
        })
        .unwrap();
    tally.assert_reaches(Reach::Load, 300);
    tally.assert_reaches(Reach::Instantiate, 100);
}

#[test]
fn token_soup_never_panics() {
    let strategy = prop::collection::vec(0..VOCAB.len(), 0..80);
    let tally = Tally::new();
    runner(1500, 11)
        .run(&strategy, |toks| {
            let body: Vec<&str> = toks.iter().map(|&t| VOCAB[t]).collect();
            let src = format!(
                "kernel k(X: tensor<f32>[M, N], a: f32) {{\n{}\n}}\n",
                body.join(" ")
            );
            tally.add(exercise(&src, &[5], &[0]));
            Ok(())
        })
        .unwrap();
    tally.assert_reaches(Reach::Load, 20);
}

#[test]
fn pinned_examples_never_panic() {
    let sources = examples();
    let strategy = (0..sources.len(), prop::collection::vec(pin_value(), 1..8));
    runner(500, 3)
        .run(&strategy, |(i, pins)| {
            exercise(&sources[i], &pins, &[0, 5, 8, 9]);
            Ok(())
        })
        .unwrap();
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    // Run with the stack of a main thread: the CLI checks on one.
    let handle = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(|| {
            let deep_expr = format!("{}1{}", "(".repeat(250), ")".repeat(250));
            let deep_blocks = format!("{}{}", "if true {\n".repeat(120), "}\n".repeat(120));
            for body in [format!("X[0] = f32({deep_expr})\n"), deep_blocks] {
                let src = format!("kernel k(X: tensor<f32>[N]) {{\n{body}}}\n");
                exercise(&src, &[1], &[0]);
            }
        })
        .unwrap();
    handle.join().unwrap();
}
