//! Expressions: precedence, associativity, postfix forms, index positions, newlines.

use super::*;

fn s(src: &str) -> String {
    sx(&expr_ok(src))
}

#[test]
fn precedence_levels_from_lowest_to_highest() {
    assert_eq!(s("a || b && c"), "(|| a (&& b c))");
    assert_eq!(s("a && b == c"), "(&& a (== b c))");
    assert_eq!(s("a == b | c"), "(== a (| b c))");
    assert_eq!(s("a < b | c"), "(< a (| b c))");
    assert_eq!(s("a | b ^ c"), "(| a (^ b c))");
    assert_eq!(s("a ^ b & c"), "(^ a (& b c))");
    assert_eq!(s("a & b << c"), "(& a (<< b c))");
    assert_eq!(s("a >> b + c"), "(>> a (+ b c))");
    assert_eq!(s("a + b * c"), "(+ a (* b c))");
    assert_eq!(s("a - b % c"), "(- a (% b c))");
    assert_eq!(s("-a * b"), "(* (neg a) b)");
    assert_eq!(s("!a && b"), "(&& (not a) b)");
    assert_eq!(s("-a[i]"), "(neg (idx a i))");
    assert_eq!(s("-f(x).y"), "(neg (. (call f x) y))");
}

#[test]
fn every_comparison_operator() {
    for op in ["==", "!=", "<", "<=", ">", ">="] {
        assert_eq!(
            s(&format!("a + 1 {op} b * 2")),
            format!("({op} (+ a 1) (* b 2))")
        );
    }
}

#[test]
fn binary_operators_are_left_associative() {
    assert_eq!(s("a - b - c"), "(- (- a b) c)");
    assert_eq!(s("a / b * c % d"), "(% (* (/ a b) c) d)");
    assert_eq!(s("a || b || c"), "(|| (|| a b) c)");
    assert_eq!(s("a << b >> c"), "(>> (<< a b) c)");
    assert_eq!(s("a & b & c"), "(& (& a b) c)");
}

#[test]
fn parentheses_override_precedence() {
    assert_eq!(s("(a + b) * c"), "(* (+ a b) c)");
    assert_eq!(s("a - (b - c)"), "(- a (- b c))");
    assert_eq!(s("(a < b) < c"), "(< (< a b) c)");
    let e = expr_ok("(a + b) * c");
    let ExprKind::Binary { lhs, .. } = &e.kind else {
        panic!()
    };
    // A parenthesized expression's span covers its parentheses.
    assert_eq!(lhs.span.range(), 0..7);
    assert_eq!(e.span.range(), 0..11);
}

#[test]
fn comparisons_do_not_chain() {
    let (_, diags) = parse_expr(&SourceFile::new("e", "a < b < c"));
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, "E0025");
    assert_eq!(diags[0].primary.span.range(), 6..7);
    assert_eq!(
        diags[0].help.as_deref(),
        Some("comparisons do not chain; write `a < b && b < c`")
    );
    assert_eq!(codes("kernel k() {\n  x = a == b != c\n}"), ["E0025"]);
}

#[test]
fn unary_operators_nest() {
    assert_eq!(s("--x"), "(neg (neg x))");
    assert_eq!(s("!!x"), "(not (not x))");
    assert_eq!(s("-1"), "(neg 1)");
    assert_eq!(s("- -1.5"), "(neg (neg 1.5))");
}

#[test]
fn literals() {
    assert_eq!(s("true"), "true");
    assert_eq!(s("false"), "false");
    assert_eq!(s("0x10 + 1_0"), "(+ 16 10)");
    assert_eq!(s("1.5e3"), "1500.0");
}

#[test]
fn calls_with_positional_and_named_arguments() {
    assert_eq!(s("f()"), "(call f)");
    assert_eq!(s("sum(t, axis = 1)"), "(call sum t axis=1)");
    assert_eq!(s("f32(x)"), "(call f32 x)");
    assert_eq!(s("max(a, b,)"), "(call max a b)");
    assert_eq!(
        s("where(a == b, f(g(x)), 0)"),
        "(call where (== a b) (call f (call g x)) 0)"
    );
    let e = expr_ok("sum(t, axis=1)");
    let ExprKind::Call { args, .. } = &e.kind else {
        panic!()
    };
    assert_eq!(args[1].name.as_ref().unwrap().span.range(), 7..11);
}

#[test]
fn field_chains_nest() {
    assert_eq!(s("ctx.block.x"), "(. (. ctx block) x)");
    assert_eq!(s("ctx.thread"), "(. ctx thread)");
    assert_eq!(s("a[i].b[j]"), "(idx (. (idx a i) b) j)");
}

#[test]
fn only_names_are_called() {
    assert_eq!(codes("kernel k() {\n  x = a.b(1)\n}"), ["E0032"]);
    assert_eq!(codes("kernel k() {\n  x = (f)(1)\n}"), ["E0032"]);
}

#[test]
fn index_positions() {
    assert_eq!(s("x[i]"), "(idx x i)");
    assert_eq!(s("x[s :+ n]"), "(idx x [s :+ n])");
    assert_eq!(s("x[a : b]"), "(idx x [a:b])");
    assert_eq!(s("x[a :]"), "(idx x [a:])");
    assert_eq!(s("x[: b]"), "(idx x [:b])");
    assert_eq!(s("x[:]"), "(idx x [:])");
    assert_eq!(
        s("x[:, 0, a:b, i*4 :+ 4]"),
        "(idx x [:] 0 [a:b] [(* i 4) :+ 4])"
    );
    assert_eq!(s("x[i][j]"), "(idx (idx x i) j)");
}

#[test]
fn index_position_spans_cover_their_text() {
    let src = "x[pm * T :+ T, a : b, a :, : b, :, i]";
    let e = expr_ok(src);
    let ExprKind::Index { indices, .. } = &e.kind else {
        panic!()
    };
    let texts: Vec<&str> = indices.iter().map(|i| &src[i.span().range()]).collect();
    assert_eq!(texts, ["pm * T :+ T", "a : b", "a :", ": b", ":", "i"]);
}

#[test]
fn index_options_follow_the_indices() {
    assert_eq!(
        s("x[r, c :+ B, cache = evict_last]"),
        "(idx x r [c :+ B] (cache = evict_last))"
    );
    assert_eq!(s("x[i, cache = f(a)]"), "(idx x i (cache = (call f a)))");
    assert_eq!(s("x[i, a = b, c = d]"), "(idx x i (a = b) (c = d))");
    // `==` inside brackets is still a comparison, not an option.
    assert_eq!(s("x[a == b]"), "(idx x (== a b))");
    let src = "x[i, cache = evict_first]";
    let e = expr_ok(src);
    let ExprKind::Index { options, .. } = &e.kind else {
        panic!()
    };
    assert_eq!(&src[options[0].name.span.range()], "cache");
    assert_eq!(&src[options[0].value.span.range()], "evict_first");
}

#[test]
fn an_index_after_an_option_is_an_error() {
    assert_eq!(
        codes("kernel k() {\n  y = x[cache = evict_last, i]\n}"),
        ["E0035"]
    );
    assert_eq!(
        codes("kernel k() {\n  y = x[cache = evict_last]\n}"),
        ["E0035"]
    );
}

#[test]
fn bad_index_positions() {
    assert_eq!(codes("kernel k() {\n  y = x[]\n}"), ["E0035"]);
    assert_eq!(codes("kernel k() {\n  y = x[:+ 4]\n}"), ["E0035"]);
}

#[test]
fn newlines_inside_brackets_are_ignored() {
    assert_eq!(s("f(a,\n  b)"), "(call f a b)");
    let body =
        body_ok("  y = f(\n    a,\n    b\n  )\n  z = x[\n    i,\n    j\n  ]\n  w = (a\n  + b)");
    let got: Vec<String> = body.iter().map(sx_stmt).collect();
    assert_eq!(
        got,
        [
            "(Set y (call f a b))",
            "(Set z (idx x i j))",
            "(Set w (+ a b))"
        ]
    );
}

#[test]
fn a_trailing_operator_continues_the_line() {
    let body = body_ok("  y = a +\n    b *\n\n    c\n  z = p &&\n  q");
    let got: Vec<String> = body.iter().map(sx_stmt).collect();
    assert_eq!(got, ["(Set y (+ a (* b c)))", "(Set z (&& p q))"]);
    let body = body_ok("  y =\n    1");
    assert_eq!(sx_stmt(&body[0]), "(Set y 1)");
}

#[test]
fn a_leading_operator_does_not_continue_the_line() {
    let d = parse_err("kernel k() {\n  y = a\n    + b\n}");
    assert_eq!(d[0].code, "E0021");
    assert!(d[0]
        .help
        .as_deref()
        .unwrap()
        .contains("must end with the operator"));
    // A leading `-` is a new statement (a negation), which is valid syntax.
    let body = body_ok("  y = a\n  -b");
    assert_eq!(body.len(), 2);
}

#[test]
fn parse_expr_rejects_trailing_tokens() {
    let (e, d) = parse_expr(&SourceFile::new("e", "a b"));
    assert!(e.is_some());
    assert_eq!(d[0].code, "E0020");
    assert_eq!(d[0].message, "expected end of input, found `b`");
}

#[test]
fn leading_dot_float_is_explained() {
    let d = parse_err("kernel k() {\n  x = .5\n}");
    assert_eq!(d[0].code, "E0021");
    assert_eq!(
        d[0].help.as_deref(),
        Some("a float literal needs a digit before the point: write `0.5`")
    );
}

#[test]
fn expression_spans() {
    let src = "a + f(b)[c].d * -e";
    let e = expr_ok(src);
    assert_eq!(e.span.range(), 0..src.len());
    let ExprKind::Binary { rhs, .. } = &e.kind else {
        panic!()
    };
    assert_eq!(&src[rhs.span.range()], "f(b)[c].d * -e");
    let ExprKind::Binary { lhs: mul_lhs, .. } = &rhs.kind else {
        panic!()
    };
    assert_eq!(&src[mul_lhs.span.range()], "f(b)[c].d");
}

#[test]
fn parse_expr_of_nothing_is_an_error() {
    let (e, d) = parse_expr(&SourceFile::new("e", "  \n "));
    assert!(e.is_none());
    assert_eq!(d[0].code, "E0021");
    assert_eq!(d[0].message, "expected an expression, found end of file");
}

#[test]
fn lists_are_primaries() {
    assert_eq!(
        s("reshape(t, [R, 2 * C])"),
        "(call reshape t (list R (* 2 C)))"
    );
    assert_eq!(s("[]"), "(list)");
    assert_eq!(s("[a, b][0]"), "(idx (list a b) 0)");
}
