//! The lexer: tokens, literals, comments and lexical errors.

use phobos_syntax::lex;
use phobos_syntax::token::TokenKind::{self, *};

fn kinds(src: &str) -> Vec<TokenKind> {
    let (toks, diags) = lex(src);
    assert!(
        diags.is_empty(),
        "unexpected diagnostics for {src:?}: {diags:#?}"
    );
    toks.iter().map(|t| t.kind).filter(|k| *k != Eof).collect()
}

fn one(src: &str) -> TokenKind {
    let k = kinds(src);
    assert_eq!(k.len(), 1, "{src:?} lexed as {k:?}");
    k[0]
}

fn lex_codes(src: &str) -> Vec<&'static str> {
    lex(src).1.iter().map(|d| d.code).collect()
}

#[test]
fn keywords_and_identifiers() {
    assert_eq!(
        kinds("kernel let var for in while if else break continue true false"),
        [Kernel, Let, Var, For, In, While, If, Else, Break, Continue, True, False]
    );
    assert_eq!(
        kinds("tensor tile range unroll ctx _x x1 kernels"),
        [Ident; 8]
    );
    let (toks, _) = lex("  foo_1 ");
    assert_eq!(toks[0].span.range(), 2..7);
}

#[test]
fn integer_literals() {
    assert_eq!(one("0"), Int(0));
    assert_eq!(one("1234"), Int(1234));
    assert_eq!(one("1_000_000"), Int(1_000_000));
    assert_eq!(one("0x1F"), Int(31));
    assert_eq!(one("0XfF_fF"), Int(0xffff));
    assert_eq!(one("9223372036854775807"), Int(i64::MAX));
    assert_eq!(one("0x7fffffffffffffff"), Int(i64::MAX));
}

#[test]
fn integer_overflow_is_a_diagnostic() {
    assert_eq!(lex_codes("9223372036854775808"), ["E0003"]);
    assert_eq!(lex_codes("0x8000000000000000"), ["E0003"]);
    assert_eq!(lex_codes("123456789012345678901234567890"), ["E0003"]);
    let (toks, diags) = lex("x = 99999999999999999999 + 1");
    assert_eq!(diags[0].primary.span.range(), 4..24);
    assert!(toks.iter().any(|t| t.kind == Error));
    // Lexing continues after the error.
    assert_eq!(toks.iter().filter(|t| t.kind == Int(1)).count(), 1);
}

#[test]
fn float_literals() {
    assert_eq!(one("1.0"), Float(1.0));
    assert_eq!(one("1e-3"), Float(1e-3));
    assert_eq!(one("2.5E+4"), Float(2.5e4));
    assert_eq!(one("1."), Float(1.0));
    assert_eq!(one("1.e5"), Float(1e5));
    assert_eq!(one("3e2"), Float(300.0));
    assert_eq!(one("1_000.25"), Float(1000.25));
    assert_eq!(one("0.1"), Float(0.1));
}

#[test]
fn not_floats() {
    // `.5` is a dot and an integer; the parser explains it.
    assert_eq!(kinds(".5"), [Dot, Int(5)]);
    assert_eq!(kinds("0..N"), [Int(0), DotDot, Ident]);
    assert_eq!(kinds("1.x"), [Int(1), Dot, Ident]);
    assert_eq!(kinds("a.b.c"), [Ident, Dot, Ident, Dot, Ident]);
}

#[test]
fn malformed_numbers() {
    assert_eq!(lex_codes("0x"), ["E0004"]);
    assert_eq!(lex_codes("1e"), ["E0004"]);
    assert_eq!(lex_codes("1e+"), ["E0004"]);
    assert_eq!(lex_codes("12abc"), ["E0004"]);
    assert_eq!(lex_codes("0xfg"), ["E0004"]);
    assert_eq!(lex_codes("1e999"), ["E0005"]);
    let (_, d) = lex("1f32");
    assert_eq!(
        d[0].help.as_deref(),
        Some("literals take no type suffix; write a cast: `f32(1)`")
    );
    assert_eq!(d[0].primary.span.range(), 0..4);
}

#[test]
fn operators() {
    assert_eq!(
        kinds(":+ : = += -= *= /= == != < <= > >= && || ! & | ^ << >> + - * / % @ . , ;"),
        [
            ColonPlus, Colon, Eq, PlusEq, MinusEq, StarEq, SlashEq, EqEq, Ne, Lt, Le, Gt, Ge,
            AndAnd, OrOr, Bang, Amp, Pipe, Caret, Shl, Shr, Plus, Minus, Star, Slash, Percent, At,
            Dot, Comma, Semi
        ]
    );
    assert_eq!(
        kinds("( ) [ ] { }"),
        [LParen, RParen, LBracket, RBracket, LBrace, RBrace]
    );
    assert_eq!(kinds("a:+b"), [Ident, ColonPlus, Ident]);
    assert_eq!(kinds("a: +b"), [Ident, Colon, Plus, Ident]);
}

#[test]
fn comments_and_newlines() {
    assert_eq!(kinds("a // comment\nb"), [Ident, Newline, Ident]);
    assert_eq!(kinds("a /* x */ b"), [Ident, Ident]);
    assert_eq!(
        kinds("a /* outer /* inner */ still comment */ b"),
        [Ident, Ident]
    );
    // A block comment that spans lines ends the statement like a newline.
    assert_eq!(kinds("a /* x\n y */ b"), [Ident, Newline, Ident]);
    assert_eq!(kinds("a\r\n\tb"), [Ident, Newline, Ident]);
    assert_eq!(kinds("a / b"), [Ident, Slash, Ident]);
}

#[test]
fn unterminated_block_comment() {
    let (_, d) = lex("a /* never /* closed */");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, "E0002");
    assert_eq!(d[0].primary.span.range(), 2..4);
}

#[test]
fn unknown_characters_are_reported_and_skipped() {
    let (toks, d) = lex("a $ b é c");
    assert_eq!(
        d.iter().map(|d| d.code).collect::<Vec<_>>(),
        ["E0001", "E0001"]
    );
    assert_eq!(d[0].primary.span.range(), 2..3);
    // A multi-byte character is one span on char boundaries.
    assert_eq!(d[1].primary.span.range(), 6..8);
    let idents = toks.iter().filter(|t| t.kind == Ident).count();
    assert_eq!(idents, 3);
    assert_eq!(
        lex("#").1[0].help.as_deref(),
        Some("comments start with `//`")
    );
}

#[test]
fn eof_token_is_last_and_empty() {
    let (toks, _) = lex("ab");
    let last = toks.last().unwrap();
    assert_eq!(last.kind, Eof);
    assert_eq!(last.span.range(), 2..2);
    assert_eq!(lex("").0.len(), 1);
}
