//! Snapshots of parse diagnostics in a plain text form (code, message, line:col, caret, help).
//! The CLI owns the real renderer; this form only makes the data reviewable.

use phobos_syntax::{parse, SourceFile};

/// Renders every diagnostic of `src` as text.
fn render(src: &str) -> String {
    let file = SourceFile::new("t.ph", src);
    let (_, diags) = parse(&file);
    let mut out = String::new();
    for d in &diags {
        let (line, col) = file.line_col(d.primary.span.lo);
        out.push_str(&format!(
            "error[{}]: {}\n --> {}:{}\n",
            d.code, d.message, line, col
        ));
        let text = file.line_text(line);
        let width = if d.primary.span.is_empty() {
            1
        } else {
            let (end_line, end_col) = file.line_col(d.primary.span.hi);
            if end_line == line {
                end_col - col
            } else {
                text.chars().count() + 1 - col
            }
            .max(1)
        };
        out.push_str(&format!(
            "  | {text}\n  | {}{}",
            " ".repeat(col - 1),
            "^".repeat(width)
        ));
        if !d.primary.message.is_empty() {
            out.push_str(&format!(" {}", d.primary.message));
        }
        out.push('\n');
        for l in &d.secondary {
            let (line, col) = file.line_col(l.span.lo);
            out.push_str(&format!("  = note: {}:{}: {}\n", line, col, l.message));
        }
        for n in &d.notes {
            out.push_str(&format!("  = note: {n}\n"));
        }
        if let Some(h) = &d.help {
            out.push_str(&format!("  = help: {h}\n"));
        }
    }
    out
}

macro_rules! snap {
    ($name:ident, $src:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(stringify!($name), render($src));
        }
    };
}

snap!(
    dot_range_in_for,
    "kernel k(X: tensor<f32>[N]) {\n  for i in 0..N {\n    X[i] = 0.0\n  }\n}\n"
);
snap!(assign_in_if, "kernel k() {\n  if x = 3 {\n  }\n}\n");
snap!(
    missing_kernel_keyword,
    "@launch(256)\ngemm(A: tensor<f32>[M, K]) {\n}\n"
);
snap!(misspelt_kernel_keyword, "kernal gemm() {\n}\n");
snap!(
    tensor_dims_in_parens,
    "kernel k(A: tensor<f32>(M, K)) {\n}\n"
);
snap!(
    chained_comparison,
    "kernel k() {\n  let ok = 0 <= i < N\n}\n"
);
snap!(
    unclosed_call,
    "kernel k() {\n  let y = f(a, b\n  let z = 1\n}\n"
);
snap!(
    missing_closing_brace,
    "kernel k() {\n  for i in range(0, N) {\n    x += i\n}\n"
);
snap!(
    autotune_wrong_shape,
    "@autotune(TILE_M = [32, 128])\nkernel k() {\n}\n"
);
snap!(
    launch_too_many_args,
    "@launch(256, 2, 64, 1)\nkernel k() {\n}\n"
);
snap!(allow_tf32_with_args, "@allow_tf32(true)\nkernel k() {\n}\n");
snap!(unknown_character, "kernel k() {\n  let x = a # b\n}\n");
snap!(
    integer_overflow,
    "kernel k() {\n  let x = 99999999999999999999\n}\n"
);
snap!(
    unterminated_comment,
    "kernel k() {\n  /* never closed\n  x = 1\n}\n"
);
snap!(leading_dot_float, "kernel k() {\n  let x = .5\n}\n");
snap!(leading_operator, "kernel k() {\n  let x = a\n    + b\n}\n");
snap!(
    two_statements_one_line,
    "kernel k() {\n  let x = 1 let y = 2\n}\n"
);
snap!(else_without_if, "kernel k() {\n  x = 1\n  else {\n  }\n}\n");
snap!(method_call, "kernel k() {\n  let s = t.sum(1)\n}\n");
snap!(bad_tensor_dim, "kernel k(A: tensor<f32>[M * 2]) {\n}\n");
snap!(type_suffix, "kernel k() {\n  let x = 1f32\n}\n");
snap!(keyword_as_name, "kernel k() {\n  let in = 1\n}\n");
snap!(
    too_deep,
    &format!(
        "kernel k() {{\n  x = {}1{}\n}}\n",
        "(".repeat(300),
        ")".repeat(300)
    )
);
snap!(
    many_errors_one_run,
    "@launch()\nkernel k(A: tensor<f32>(M), b f32) {\n  for i in 0..N {\n    if i = 0 { }\n  }\n  x = 1 +\n}\n"
);
