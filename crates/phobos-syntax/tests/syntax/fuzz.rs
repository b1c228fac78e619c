//! Never-panic fuzzing with a fixed seed: random bytes, token soup, mutations of valid kernels
//! and deeply nested input. `parse` must return, and every diagnostic and AST span must lie in
//! the text on char boundaries.

use phobos_syntax::spans::{erase_spans, visit_spans_mut};
use phobos_syntax::{lex, parse, parse_expr, print_file, SourceFile, Span};

/// How many times the default corpus to run: `PHOBOS_FUZZ_SCALE=50 cargo test fuzz` fuzzes
/// longer locally; the default keeps the test to about a second.
fn scale() -> usize {
    std::env::var("PHOBOS_FUZZ_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// The corpus is the same on every run: drawn from SplitMix64 with fixed seeds.
use phobos_ir::rng::SplitMix64 as Rng;

fn span_ok(text: &str, s: Span) -> bool {
    s.lo <= s.hi
        && (s.hi as usize) <= text.len()
        && text.is_char_boundary(s.lo as usize)
        && text.is_char_boundary(s.hi as usize)
}

/// Parses `text` and checks every span it reports.
fn check(text: &str) {
    let (mut file, diags) = parse(&SourceFile::new("f.ph", text));
    for d in &diags {
        assert!(
            span_ok(text, d.primary.span),
            "bad diagnostic span {:?} in {text:?}: {d:?}",
            d.primary.span
        );
        for l in &d.secondary {
            assert!(
                span_ok(text, l.span),
                "bad secondary span in {text:?}: {d:?}"
            );
        }
        assert!(d.code.starts_with("E00") && d.code.len() == 5, "{d:?}");
    }
    let mut bad = None;
    visit_spans_mut(&mut file, &mut |s| {
        if !span_ok(text, *s) {
            bad = Some(*s);
        }
    });
    assert!(bad.is_none(), "bad AST span {bad:?} in {text:?}");
    // Whatever was parsed prints; a clean parse also survives a print/parse round trip.
    let printed = print_file(&file);
    if diags.is_empty() {
        let (mut back, diags2) = parse(&SourceFile::new("p.ph", printed.clone()));
        assert!(
            diags2.is_empty(),
            "printed form of {text:?} does not parse:\n{printed}\n{diags2:#?}"
        );
        erase_spans(&mut file);
        erase_spans(&mut back);
        assert_eq!(back, file, "round trip changed {text:?}:\n{printed}");
    }
    let _ = parse_expr(&SourceFile::new("e.ph", text));
}

const PIECES: &[&str] = &[
    "kernel",
    "let",
    "var",
    "for",
    "in",
    "while",
    "if",
    "else",
    "break",
    "continue",
    "true",
    "false",
    "@",
    "autotune",
    "launch",
    "grid",
    "where",
    "aligned",
    "flops",
    "bytes",
    "allow_tf32",
    "tensor",
    "tile",
    "range",
    "unroll",
    "ctx",
    ".",
    "..",
    "x",
    "A",
    "f32",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "<",
    ">",
    "<<",
    ">>",
    ":",
    ":+",
    "=",
    "==",
    "+=",
    "-=",
    "*=",
    "/=",
    "!=",
    "<=",
    ">=",
    "&&",
    "||",
    "!",
    "&",
    "|",
    "^",
    "+",
    "-",
    "*",
    "/",
    "%",
    ",",
    ";",
    "\n",
    "\n",
    " ",
    "0",
    "1",
    "256",
    "0x1f",
    "1.5",
    "1e-3",
    "1.",
    "99999999999999999999",
    "1e999",
    "0x",
    "1e",
    "// c\n",
    "/* c */",
    "/*",
    "*/",
    "$",
    "é",
    "\t",
    "\r\n",
];

fn seeds() -> Vec<&'static str> {
    let mut v = vec![super::SEED_GEMM, super::SEED_PARTIAL_SUMS];
    v.extend_from_slice(super::LARGER);
    v
}

/// One random edit of `text`, at the character or the token level.
fn mutate(rng: &mut Rng, text: &str) -> String {
    let (toks, _) = lex(text);
    let toks: Vec<_> = toks.iter().filter(|t| !t.span.is_empty()).collect();
    let mut out = text.to_string();
    match rng.below(6) {
        0 | 1 if !toks.is_empty() => {
            // Delete or duplicate one token.
            let t = rng.pick(&toks);
            let r = t.span.range();
            if rng.below(2) == 0 {
                out.replace_range(r, "");
            } else {
                let piece = text[r.clone()].to_string();
                out.insert_str(r.start, &piece);
            }
        }
        2 if toks.len() > 1 => {
            // Swap two tokens (the later one first, so the earlier range stays valid).
            let (mut a, mut b) = (rng.pick(&toks).span.range(), rng.pick(&toks).span.range());
            if a.start > b.start {
                std::mem::swap(&mut a, &mut b);
            }
            if a.end <= b.start {
                let (ta, tb) = (text[a.clone()].to_string(), text[b.clone()].to_string());
                out.replace_range(b, &ta);
                out.replace_range(a, &tb);
            }
        }
        3 => {
            // Insert a piece at a char boundary.
            let mut at = rng.below(out.len() + 1);
            while !out.is_char_boundary(at) {
                at -= 1;
            }
            let piece = *rng.pick(PIECES);
            out.insert_str(at, piece);
        }
        _ => {
            // Delete one character.
            if !out.is_empty() {
                let mut at = rng.below(out.len());
                while !out.is_char_boundary(at) {
                    at -= 1;
                }
                out.remove(at);
            }
        }
    }
    out
}

#[test]
fn random_bytes() {
    let mut rng = Rng(1);
    for _ in 0..1500 * scale() {
        let len = rng.below(200);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        check(&String::from_utf8_lossy(&bytes));
        // Printable ASCII only, which reaches further into the parser.
        let ascii: String = (0..len)
            .map(|_| (b' ' + (rng.next_u64() % 95) as u8) as char)
            .collect();
        check(&ascii);
    }
}

#[test]
fn token_soup() {
    let mut rng = Rng(2);
    for _ in 0..2000 * scale() {
        let n = rng.below(80);
        let mut text = String::new();
        if rng.below(2) == 0 {
            text.push_str("kernel k(A: tensor<f32>[M]) {\n");
        }
        for _ in 0..n {
            let piece = *rng.pick::<&str>(PIECES);
            text.push_str(piece);
            if rng.below(3) == 0 {
                text.push(' ');
            }
        }
        check(&text);
    }
}

#[test]
fn mutated_kernels() {
    let mut rng = Rng(3);
    let seeds = seeds();
    for _ in 0..2500 * scale() {
        let mut text = rng.pick(&seeds).to_string();
        for _ in 0..1 + rng.below(4) {
            text = mutate(&mut rng, &text);
        }
        check(&text);
    }
}

#[test]
fn deep_nesting_is_a_diagnostic() {
    let deep = 5000;
    let cases = [
        format!(
            "kernel k() {{\n  x = {}1{}\n}}",
            "(".repeat(deep),
            ")".repeat(deep)
        ),
        format!("kernel k() {{\n  x = {}1\n}}", "(".repeat(deep)),
        format!("kernel k() {{\n  x = {}y\n}}", "-".repeat(deep)),
        format!("kernel k() {{\n  x = {}y\n}}", "!-".repeat(deep)),
        format!(
            "kernel k() {{\n  x = {}0{}\n}}",
            "a[".repeat(deep),
            "]".repeat(deep)
        ),
        format!(
            "kernel k() {{\n  x = {}0{}\n}}",
            "f(".repeat(deep),
            ")".repeat(deep)
        ),
        format!(
            "kernel k() {{\n{}{}\n}}",
            "if a {\n".repeat(deep),
            "}\n".repeat(deep)
        ),
        format!(
            "kernel k() {{\n  if a {{ }}{}\n}}",
            " else if a { }".repeat(deep)
        ),
        format!("kernel k() {}", "{".repeat(deep)),
        format!("kernel k(A: tensor<f32>[{}]) {{}}", "(".repeat(deep)),
        format!(
            "@launch({}1{})\nkernel k() {{}}",
            "(".repeat(deep),
            ")".repeat(deep)
        ),
        format!("@foo({}\nkernel k() {{}}", "(".repeat(deep)),
        format!(
            "kernel k() {{\n  x = {}\n}}",
            "1 + ".repeat(deep).trim_end_matches("+ ")
        ),
        "/*".repeat(deep),
        "[".repeat(deep),
        "{".repeat(deep) + &"}".repeat(deep),
    ];
    for text in &cases {
        check(text);
    }
    // Deep but legal nesting parses; too deep nesting says so.
    let ok = format!(
        "kernel k() {{\n  x = {}1{}\n}}",
        "(".repeat(100),
        ")".repeat(100)
    );
    assert!(parse(&SourceFile::new("t", ok)).1.is_empty());
    let (_, d) = parse(&SourceFile::new("t", cases[0].clone()));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, "E0028");
    assert_eq!(d[0].message, "expression nested too deeply");
    let (_, d) = parse(&SourceFile::new("t", cases[6].clone()));
    assert_eq!(d[0].code, "E0028");
    // A chain of operators builds a deep tree: 200 terms are fine, 5000 are too deep.
    let chain = |n: usize| format!("kernel k() {{\n  x = 1{}\n}}", " + 1".repeat(n));
    assert!(parse(&SourceFile::new("t", chain(200))).1.is_empty());
    let (_, d) = parse(&SourceFile::new("t", cases[12].clone()));
    assert_eq!(d.iter().map(|d| d.code).collect::<Vec<_>>(), ["E0028"]);
}

/// The deepest legal nesting fits in a small stack (1 MiB, half a test thread's default), so
/// callers on ordinary threads never overflow.
#[test]
fn deepest_legal_nesting_fits_in_a_small_stack() {
    let worst = [
        format!(
            "kernel k() {{\n  x = {}1{}\n}}",
            "a || b && c == d | e ^ f & g << h + i * -(".repeat(120),
            ")".repeat(120)
        ),
        format!(
            "kernel k() {{\n  x = {}1{}\n}}",
            "f(x[".repeat(127),
            "])".repeat(127)
        ),
        format!(
            "kernel k() {{\n{}{}\n}}",
            "while a {\n".repeat(255),
            "}\n".repeat(255)
        ),
        format!("kernel k() {{\n  x = {}y\n}}", "-".repeat(255)),
    ];
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            for text in &worst {
                check(text);
            }
        })
        .unwrap();
    handle.join().expect("parser overflowed a 1 MiB stack");
}
