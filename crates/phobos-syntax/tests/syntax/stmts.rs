//! Statements, blocks and statement-level recovery.

use super::*;

fn stmts(body: &str) -> Vec<String> {
    body_ok(body).iter().map(sx_stmt).collect()
}

#[test]
fn let_and_var_forms() {
    assert_eq!(
        stmts(
            "let x = 1\nlet y: i32 = 2\nvar z: tile<f32>[TILE_M, TILE_N] = 0.0\nvar w: f32\nlet u"
        ),
        [
            "(let x = 1)",
            "(let y: i32 = 2)",
            "(var z: tile<f32>[TILE_M, TILE_N] = 0.0)",
            "(var w: f32)",
            "(let u)",
        ]
    );
    let body = body_ok("var w: f32");
    let StmtKind::Let { mutable, init, .. } = &body[0].kind else {
        panic!()
    };
    assert!(*mutable);
    assert!(init.is_none());
}

#[test]
fn assignments_to_any_target() {
    assert_eq!(
        stmts("x = 1\nx += 2\nx -= 3\nx *= 4\nx /= 5\nC[i :+ 4, j] = acc\nctx.y = 1"),
        [
            "(Set x 1)",
            "(Add x 2)",
            "(Sub x 3)",
            "(Mul x 4)",
            "(Div x 5)",
            "(Set (idx C [i :+ 4] j) acc)",
            "(Set (. ctx y) 1)",
        ]
    );
}

#[test]
fn for_loops() {
    assert_eq!(
        stmts("for i in range(a, b) {\n  x += i\n}\nfor<unroll U> i in range(a, b, s) { }\nfor<unroll 2 * U> j in range(0, N) {}"),
        [
            "(for i (call range a b) {(Add x i)})",
            "(for<U> i (call range a b s) {})",
            "(for<(* 2 U)> j (call range 0 N) {})",
        ]
    );
    // A comparison in the unroll factor must be parenthesized: `>` closes the brackets.
    assert_eq!(
        stmts("for<unroll (A > B)> i in r {}"),
        ["(for<(> A B)> i r {})"]
    );
}

#[test]
fn while_if_else_chains() {
    assert_eq!(
        stmts("while i < n {\n  i += 1\n}"),
        ["(while (< i n) {(Add i 1)})"]
    );
    assert_eq!(
        stmts("if a { x = 1 } else if b { x = 2 } else { x = 3 }"),
        ["(if a {(Set x 1)} else (if b {(Set x 2)} else {(Set x 3)}))"]
    );
    // `else` may start the line after the closing brace, and `{` the line after the header.
    assert_eq!(
        stmts("if a\n{\n  break\n}\nelse\n{\n  continue\n}"),
        ["(if a {break} else {continue})"]
    );
    let body = body_ok("if a { } else { }");
    let StmtKind::If { els, .. } = &body[0].kind else {
        panic!()
    };
    assert!(matches!(els.as_ref().unwrap().kind, StmtKind::Block(_)));
}

#[test]
fn break_continue_and_expression_statements() {
    assert_eq!(
        stmts("break\ncontinue\nf(x)\nx"),
        ["break", "continue", "(call f x)", "x"]
    );
}

#[test]
fn semicolons_blank_lines_and_comments() {
    assert_eq!(
        stmts("\n\n  x = 1; y = 2;\n  // comment\n\n  /* block\n comment */ z = 3 // trailing\n  ;;\n"),
        ["(Set x 1)", "(Set y 2)", "(Set z 3)"]
    );
    assert_eq!(
        stmts("if a { x = 1; y = 2 }"),
        ["(if a {(Set x 1); (Set y 2)})"]
    );
}

#[test]
fn statement_spans() {
    let src = "kernel k() {\n  acc += dot(a, b)\n  var x: f32 = 0.0\n  for i in r { }\n}";
    let file = parse_ok(src);
    let texts: Vec<&str> = file.kernels[0]
        .body
        .stmts
        .iter()
        .map(|s| &src[s.span.range()])
        .collect();
    assert_eq!(
        texts,
        ["acc += dot(a, b)", "var x: f32 = 0.0", "for i in r { }"]
    );
}

#[test]
fn two_statements_on_one_line_need_a_semicolon() {
    let d = parse_err("kernel k() {\n  x = 1 y = 2\n}");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, "E0022");
    assert_eq!(
        d[0].message,
        "expected a newline or `;` after the statement, found `y`"
    );
}

#[test]
fn dot_range_is_reported_and_recovered() {
    let src = "kernel k() {\n  for i in 0..N {\n    x += i\n  }\n}";
    let (file, d) = parse(&SourceFile::new("t", src));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, "E0026");
    assert_eq!(d[0].help.as_deref(), Some("write `range(0, N)`"));
    assert_eq!(&src[d[0].primary.span.range()], "..");
    // Read as `range(0, N)` so the body parses.
    assert_eq!(
        sx_stmt(&file.kernels[0].body.stmts[0]),
        "(for i (call range 0 N) {(Add x i)})"
    );
}

#[test]
fn assignment_in_condition_is_reported() {
    for src in [
        "kernel k() {\n  if x = 3 { }\n}",
        "kernel k() {\n  while x = 3 { }\n}",
    ] {
        let d = parse_err(src);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, "E0027");
        assert_eq!(d[0].help.as_deref(), Some("use `==` to compare: `x == 3`"));
    }
}

#[test]
fn else_without_if() {
    assert_eq!(
        codes("kernel k() {\n  x = 1\n  else { y = 2 }\n}"),
        ["E0033"]
    );
}

#[test]
fn recovery_reports_every_broken_statement() {
    let src =
        "kernel k() {\n  x = 1 +\n\n  let = 2\n  y = (3\n  z = 4\n  for i in { }\n  ok = 5\n}";
    let (file, d) = parse(&SourceFile::new("t", src));
    let sf = SourceFile::new("t", src);
    let lines: Vec<usize> = d.iter().map(|d| sf.line_col(d.primary.span.lo).0).collect();
    let codes: Vec<&str> = d.iter().map(|d| d.code).collect();
    // `x = 1 +` runs into `let` (line 4); `(3` is not closed (an empty span right after
    // `3`, line 5); the loop has no range (line 7).
    assert_eq!(lines, [4, 5, 7], "{d:#?}");
    assert_eq!(codes, ["E0021", "E0023", "E0021"]);
    assert!(d[1].primary.span.is_empty());
    // The good statements survive, including `z = 4` on the line after the unclosed `(`.
    let kept: Vec<String> = file.kernels[0].body.stmts.iter().map(sx_stmt).collect();
    assert_eq!(kept, ["(Set z 4)", "(Set ok 5)"]);
}

#[test]
fn missing_closing_brace_before_the_next_kernel() {
    let src = "kernel a() {\n  x = 1\n\nkernel b() {\n  y = 2\n}\n";
    let (file, d) = parse(&SourceFile::new("t", src));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, "E0023");
    // An empty span right after the last token of `a`.
    assert_eq!(d[0].primary.span.range(), 20..20);
    assert_eq!(file.kernels.len(), 2);
    assert_eq!(file.kernels[1].body.stmts.len(), 1);
}
