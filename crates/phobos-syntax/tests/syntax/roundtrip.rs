//! Property: printing an AST and parsing the text gives the same AST, up to spans.
//! ASTs come from proptest strategies with a fixed seed, so the test is repeatable.

use phobos_syntax::ast::*;
use phobos_syntax::spans::{erase_expr_spans, erase_spans};
use phobos_syntax::{parse, parse_expr, print_expr, print_file, SourceFile, Span};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const NAMES: &[&str] = &[
    "a", "b", "x", "acc", "TILE_M", "N", "ctx", "range", "f32", "dot", "i", "U", "_t2",
];

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]))
}

fn ident() -> impl Strategy<Value = Ident> {
    prop::sample::select(NAMES).prop_map(|n| Ident {
        name: n.to_string(),
        span: Span::default(),
    })
}

fn named(name: &'static str) -> Ident {
    Ident {
        name: name.to_string(),
        span: Span::default(),
    }
}

fn ex(kind: ExprKind) -> Expr {
    Expr {
        kind,
        span: Span::default(),
    }
}

fn int() -> impl Strategy<Value = i64> {
    prop_oneof![4 => 0i64..300, 1 => 0i64..=i64::MAX]
}

fn float() -> impl Strategy<Value = f64> {
    use prop::num::f64 as pf;
    prop_oneof![
        3 => (0u32..4000).prop_map(|v| f64::from(v) / 8.0),
        1 => pf::POSITIVE | pf::NORMAL | pf::SUBNORMAL | pf::ZERO,
    ]
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        1 => int().prop_map(|v| ex(ExprKind::Int(v))),
        1 => float().prop_map(|v| ex(ExprKind::Float(v))),
        1 => any::<bool>().prop_map(|b| ex(ExprKind::Bool(b))),
        3 => ident().prop_map(|id| ex(ExprKind::Name(id))),
    ]
}

fn binop() -> impl Strategy<Value = BinOp> {
    use BinOp::*;
    prop::sample::select(vec![
        Or, And, Eq, Ne, Lt, Le, Gt, Ge, BitOr, BitXor, BitAnd, Shl, Shr, Add, Sub, Mul, Div, Rem,
    ])
}

fn index(e: BoxedStrategy<Expr>) -> impl Strategy<Value = IndexExpr> {
    let sp = Span::default();
    prop_oneof![
        e.clone().prop_map(IndexExpr::At),
        (e.clone(), e.clone()).prop_map(move |(start, len)| IndexExpr::Span {
            start,
            len,
            span: sp
        }),
        (option::of(e.clone()), option::of(e)).prop_map(move |(start, end)| IndexExpr::Range {
            start,
            end,
            span: sp
        }),
    ]
}

fn expr() -> BoxedStrategy<Expr> {
    leaf()
        .prop_recursive(5, 48, 3, |inner| {
            prop_oneof![
                3 => (binop(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| ex(ExprKind::Binary {
                    op,
                    lhs: Box::new(l),
                    rhs: Box::new(r)
                })),
                1 => (prop::bool::ANY, inner.clone()).prop_map(|(neg, a)| ex(ExprKind::Unary {
                    op: if neg { UnOp::Neg } else { UnOp::Not },
                    arg: Box::new(a)
                })),
                1 => (inner.clone(), ident()).prop_map(|(b, field)| ex(ExprKind::Field { base: Box::new(b), field })),
                1 => (ident(), vec((option::weighted(0.3, ident()), inner.clone()), 0..3)).prop_map(|(callee, args)| {
                    ex(ExprKind::Call {
                        callee,
                        args: args.into_iter().map(|(name, value)| Arg { name, value }).collect(),
                    })
                }),
                1 => (inner.clone(), vec(index(inner.clone()), 1..3), vec((ident(), inner.clone()), 0..2)).prop_map(|(b, indices, options)| ex(ExprKind::Index {
                    base: Box::new(b),
                    indices,
                    options: options.into_iter().map(|(name, value)| IndexOption { name, value }).collect(),
                })),
                1 => vec(inner.clone(), 0..3).prop_map(|items| ex(ExprKind::List(items))),
            ]
        })
        .boxed()
}

fn ty() -> impl Strategy<Value = TypeExpr> {
    let sp = Span::default();
    let dim = prop_oneof![
        ident().prop_map(DimExpr::Name),
        int().prop_map(move |v| DimExpr::Lit(v, sp)),
    ];
    prop_oneof![
        ident().prop_map(TypeExpr::Scalar),
        (ident(), vec(dim, 0..4)).prop_map(move |(elem, dims)| TypeExpr::Tensor {
            elem,
            dims,
            span: sp
        }),
        (ident(), vec(expr(), 1..3)).prop_map(move |(elem, dims)| TypeExpr::Tile {
            elem,
            dims,
            span: sp
        }),
    ]
}

fn st(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::default(),
    }
}

fn blk(stmts: Vec<Stmt>) -> Block {
    Block {
        stmts,
        span: Span::default(),
    }
}

fn assign_op() -> impl Strategy<Value = AssignOp> {
    use AssignOp::*;
    prop::sample::select(vec![Set, Add, Sub, Mul, Div])
}

fn simple_stmt() -> impl Strategy<Value = Stmt> {
    prop_oneof![
        (ident(), any::<bool>(), option::of(ty()), option::of(expr())).prop_map(
            |(name, mutable, ty, init)| st(StmtKind::Let {
                name,
                mutable,
                ty,
                init
            })
        ),
        (expr(), assign_op(), expr()).prop_map(|(target, op, value)| st(StmtKind::Assign {
            target,
            op,
            value
        })),
        expr().prop_map(|e| st(StmtKind::Expr(e))),
        Just(st(StmtKind::Break)),
        Just(st(StmtKind::Continue)),
    ]
}

fn stmt() -> BoxedStrategy<Stmt> {
    simple_stmt()
        .prop_recursive(3, 24, 4, |inner| {
            let block = vec(inner.clone(), 0..4).prop_map(blk);
            let if_stmt = (expr(), block.clone()).prop_map(|(cond, then)| {
                st(StmtKind::If {
                    cond,
                    then,
                    els: None,
                })
            });
            let els = prop_oneof![
                block.clone().prop_map(|b| st(StmtKind::Block(b))),
                if_stmt.clone(),
            ];
            prop_oneof![
                (option::of(expr()), ident(), expr(), block.clone()).prop_map(
                    |(unroll, var, iter, body)| st(StmtKind::For {
                        unroll,
                        var,
                        iter,
                        body
                    })
                ),
                (expr(), block.clone()).prop_map(|(cond, body)| st(StmtKind::While { cond, body })),
                (expr(), block, option::of(els)).prop_map(|(cond, then, els)| st(StmtKind::If {
                    cond,
                    then,
                    els: els.map(Box::new)
                })),
            ]
        })
        .boxed()
}

fn attr() -> impl Strategy<Value = Attr> {
    let e = expr;
    let sp = Span::default();
    let entry = (ident(), vec(e(), 1..4), any::<bool>()).prop_map(move |(name, values, braces)| {
        AutotuneEntry {
            name,
            values,
            list: if braces {
                ChoiceList::Braces
            } else {
                ChoiceList::Brackets
            },
            list_span: sp,
            span: sp,
        }
    });
    let kind = prop_oneof![
        vec(entry, 0..3).prop_map(|es| ("autotune", AttrKind::Autotune(es))),
        vec(e(), 1..=3).prop_map(|es| ("launch", AttrKind::Launch(es))),
        vec(e(), 1..=3).prop_map(|es| ("grid", AttrKind::Grid(es))),
        e().prop_map(|x| ("where", AttrKind::Where(x))),
        vec((ident(), e()), 1..3).prop_map(|ps| ("aligned", AttrKind::Aligned(ps))),
        e().prop_map(|x| ("flops", AttrKind::Flops(x))),
        e().prop_map(|x| ("bytes", AttrKind::Bytes(x))),
        Just(("allow_tf32", AttrKind::AllowTf32)),
        (
            prop::sample::select(vec!["inline", "hint", "foo"]),
            prop::sample::select(vec!["", "1, 2", "x = 3", "a(b, [c])"])
        )
            .prop_map(|(n, raw)| (n, AttrKind::Unknown(raw.to_string()))),
    ];
    kind.prop_map(move |(name, kind)| Attr {
        name: named(name),
        kind,
        span: sp,
    })
}

fn kernel() -> impl Strategy<Value = Kernel> {
    let sp = Span::default();
    let type_param = (ident(), option::of(ident())).prop_map(move |(name, default)| TypeParam {
        name,
        default,
        span: sp,
    });
    let param = (ident(), ty()).prop_map(move |(name, ty)| Param { name, ty, span: sp });
    (
        vec(attr(), 0..4),
        ident(),
        vec(type_param, 0..3),
        vec(param, 0..4),
        vec(stmt(), 0..6),
    )
        .prop_map(move |(attrs, name, type_params, params, stmts)| Kernel {
            attrs,
            name,
            type_params,
            params,
            body: blk(stmts),
            span: sp,
        })
}

fn file() -> impl Strategy<Value = File> {
    vec(kernel(), 1..3).prop_map(|kernels| File { kernels })
}

#[test]
fn print_then_parse_gives_back_the_file() {
    runner(256)
        .run(&file(), |ast| {
            let text = print_file(&ast);
            let (mut back, diags) = parse(&SourceFile::new("p.ph", text.clone()));
            prop_assert!(diags.is_empty(), "diagnostics for\n{}\n{:#?}", text, diags);
            erase_spans(&mut back);
            prop_assert_eq!(&back, &ast, "text:\n{}", text);
            // Printing is canonical: the reparsed tree prints the same text.
            prop_assert_eq!(print_file(&back), text);
            Ok(())
        })
        .unwrap();
}

#[test]
fn print_then_parse_expr_gives_back_the_expression() {
    runner(512)
        .run(&expr(), |e| {
            let text = print_expr(&e);
            let (back, diags) = parse_expr(&SourceFile::new("e.ph", text.clone()));
            prop_assert!(diags.is_empty(), "diagnostics for {}: {:#?}", text, diags);
            let mut back = back.unwrap();
            erase_expr_spans(&mut back);
            prop_assert_eq!(&back, &e, "text: {}", text);
            Ok(())
        })
        .unwrap();
}

#[test]
fn printer_adds_only_needed_parentheses() {
    for src in [
        "a + b * c",
        "(a + b) * c",
        "a - (b - c)",
        "a - b - c",
        "(a < b) == (c < d)",
        "-(a + b)",
        "--a",
        "(-a).x",
        "(1).x",
        "f(x)[i :+ 4, : b, a :, :].y",
        "!(a && b) || c",
        "a | b ^ c & d << e + f * g",
    ] {
        let (e, d) = parse_expr(&SourceFile::new("e", src));
        assert!(d.is_empty(), "{src}: {d:?}");
        assert_eq!(print_expr(&e.unwrap()), src);
    }
}

#[test]
fn seeds_print_back_as_written() {
    for src in [super::SEED_GEMM, super::SEED_PARTIAL_SUMS] {
        let (ast, d) = parse(&SourceFile::new("s", src));
        assert!(d.is_empty());
        assert_eq!(print_file(&ast), src);
    }
}
