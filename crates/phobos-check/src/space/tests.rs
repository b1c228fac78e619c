//! One test per row of seed 000's table and per edge case.

use super::*;
use phobos_syntax::ast::{Attr, AttrKind, AutotuneEntry, ChoiceList, Expr, ExprKind, Ident};

/// `@autotune(NAME in [v, ..])` with distinct fake spans per value.
fn attr(entries: &[(&str, &[i64])]) -> Attr {
    attr_with(entries, ChoiceList::Brackets)
}

/// `@autotune(NAME in {v, ..})`.
fn braces(values: &[i64]) -> Result<Vec<i64>, &'static str> {
    let mut diags = Vec::new();
    let space = Space::from_attrs(
        &[attr_with(&[("X", values)], ChoiceList::Braces)],
        &mut diags,
    );
    match diags.first() {
        Some(d) => Err(d.code),
        None => Ok(space.names[0].choices.clone()),
    }
}

fn attr_with(entries: &[(&str, &[i64])], list: ChoiceList) -> Attr {
    let mut pos = 0;
    let mut span = |len: usize| {
        pos += len + 1;
        Span::new(pos - len - 1, pos - 1)
    };
    let entries = entries
        .iter()
        .map(|(name, values)| AutotuneEntry {
            name: Ident {
                name: name.to_string(),
                span: span(name.len()),
            },
            values: values
                .iter()
                .map(|&v| Expr {
                    kind: ExprKind::Int(v),
                    span: span(3),
                })
                .collect(),
            list,
            list_span: span(5),
            span: span(1),
        })
        .collect();
    Attr {
        name: Ident {
            name: "autotune".into(),
            span: Span::new(0, 9),
        },
        kind: AttrKind::Autotune(entries),
        span: Span::new(0, 9),
    }
}

fn build(entries: &[(&str, &[i64])]) -> (Space, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let space = Space::from_attrs(&[attr(entries)], &mut diags);
    (space, diags)
}

fn choices(values: &[i64]) -> Vec<i64> {
    let (space, diags) = build(&[("X", values)]);
    assert!(diags.is_empty(), "{diags:?}");
    space.names[0].choices.clone()
}

fn error_code(values: &[i64]) -> &'static str {
    let (space, diags) = build(&[("X", values)]);
    assert!(space.names.is_empty());
    assert_eq!(diags.len(), 1, "{diags:?}");
    diags[0].code
}

#[test]
fn row_two_values_double_inclusive() {
    assert_eq!(choices(&[32, 128]), vec![32, 64, 128]);
}

#[test]
fn row_three_values_are_the_list() {
    assert_eq!(choices(&[8, 16, 32]), vec![8, 16, 32]);
    assert_eq!(choices(&[32, 8, 16]), vec![32, 8, 16]);
}

#[test]
fn row_doubling_from_the_lower_bound() {
    let c = choices(&[16, 8192]);
    assert_eq!(c.len(), 10);
    assert_eq!(c.first(), Some(&16));
    assert_eq!(c.last(), Some(&8192));
    assert!(c.windows(2).all(|w| w[1] == 2 * w[0]));
}

#[test]
fn row_upper_bound_always_included() {
    assert_eq!(choices(&[16, 48]), vec![16, 32, 48]);
    assert_eq!(choices(&[3, 4]), vec![3, 4]);
}

#[test]
fn row_one_value_is_a_constant() {
    assert_eq!(choices(&[64]), vec![64]);
    assert_eq!(choices(&[0]), vec![0]);
}

#[test]
fn lower_bound_below_one() {
    assert_eq!(error_code(&[0, 8]), codes::AUTOTUNE_LOW_BOUND);
    assert_eq!(error_code(&[-4, 8]), codes::AUTOTUNE_LOW_BOUND);
}

#[test]
fn upper_below_lower() {
    assert_eq!(error_code(&[128, 32]), codes::AUTOTUNE_BOUNDS_ORDER);
}

#[test]
fn equal_bounds_are_the_one_value_range() {
    for v in [64, 1] {
        let (space, diags) = build(&[("X", &[v, v])]);
        assert_eq!(space.names[0].choices, vec![v]);
        // A warning that suggests `[v]`, not an error.
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].code, crate::codes::AUTOTUNE_EQUAL_BOUNDS);
        assert!(!diags[0].is_error());
    }
}

#[test]
fn braces_list_the_choices_in_order() {
    assert_eq!(braces(&[0, 1]), Ok(vec![0, 1]));
    assert_eq!(braces(&[8, 1]), Ok(vec![8, 1]));
    assert_eq!(braces(&[-1]), Ok(vec![-1]));
    assert_eq!(braces(&[32, 8, 16, 4]), Ok(vec![32, 8, 16, 4]));
}

#[test]
fn braces_reject_duplicates_and_emptiness() {
    assert_eq!(braces(&[1, 1]), Err(codes::AUTOTUNE_DUP_VALUE));
    assert_eq!(braces(&[]), Err(codes::AUTOTUNE_EMPTY));
}

#[test]
fn duplicated_list_value_points_at_the_second() {
    let (space, diags) = build(&[("X", &[8, 16, 8])]);
    assert!(space.names.is_empty());
    assert_eq!(diags[0].code, codes::AUTOTUNE_DUP_VALUE);
    assert_ne!(diags[0].primary.span, diags[0].secondary[0].span);
    assert!(diags[0].primary.span.lo > diags[0].secondary[0].span.lo);
}

#[test]
fn empty_list() {
    assert_eq!(error_code(&[]), codes::AUTOTUNE_EMPTY);
}

#[test]
fn non_integer_value() {
    let mut a = attr(&[("X", &[1, 2])]);
    if let AttrKind::Autotune(entries) = &mut a.kind {
        entries[0].values[1].kind = ExprKind::Float(2.5);
    }
    let mut diags = Vec::new();
    let space = Space::from_attrs(&[a], &mut diags);
    assert!(space.names.is_empty());
    assert_eq!(diags[0].code, codes::AUTOTUNE_NOT_INT);
}

#[test]
fn negated_literal_is_an_integer() {
    let mut a = attr(&[("X", &[1, 2, 3])]);
    if let AttrKind::Autotune(entries) = &mut a.kind {
        let inner = entries[0].values[0].clone();
        entries[0].values[0].kind = ExprKind::Unary {
            op: UnOp::Neg,
            arg: Box::new(inner),
        };
    }
    let mut diags = Vec::new();
    let space = Space::from_attrs(&[a], &mut diags);
    assert!(diags.is_empty());
    assert_eq!(space.names[0].choices, vec![-1, 2, 3]);
}

#[test]
fn doubling_near_i64_max_cannot_overflow() {
    let lo = (1i64 << 62) + 1;
    assert_eq!(choices(&[lo, i64::MAX]), vec![lo, i64::MAX]);
    let c = choices(&[1, i64::MAX]);
    assert_eq!(c.len(), 64);
    assert_eq!(c[62], 1 << 62);
}

#[test]
fn duplicated_name_across_attributes() {
    let mut diags = Vec::new();
    let space = Space::from_attrs(
        &[attr(&[("A", &[1, 2])]), attr(&[("B", &[4]), ("A", &[8])])],
        &mut diags,
    );
    assert_eq!(space.names.len(), 2);
    assert_eq!(space.names[0].choices, vec![1, 2]);
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, codes::AUTOTUNE_DUP_NAME);
}

fn seed_gemm() -> Space {
    build(&[
        ("TILE_M", &[32, 128]),
        ("TILE_N", &[32, 128]),
        ("TILE_K", &[8, 16, 32]),
    ])
    .0
}

#[test]
fn seed_gemm_has_27_points_and_its_default() {
    let space = seed_gemm();
    assert_eq!(space.size(), 27);
    assert_eq!(
        space.default_point().to_pins(),
        "TILE_M=32 TILE_N=32 TILE_K=8"
    );
}

#[test]
fn points_first_name_slowest() {
    let space = seed_gemm();
    let points: Vec<Point> = space.points().collect();
    assert_eq!(points.len(), 27);
    assert_eq!(points[0], space.default_point());
    assert_eq!(points[1].to_pins(), "TILE_M=32 TILE_N=32 TILE_K=16");
    assert_eq!(points[3].to_pins(), "TILE_M=32 TILE_N=64 TILE_K=8");
    assert_eq!(points[26].to_pins(), "TILE_M=128 TILE_N=128 TILE_K=32");
    let unique: std::collections::HashSet<_> = points.iter().collect();
    assert_eq!(unique.len(), 27);
}

#[test]
fn empty_space_has_one_empty_point() {
    let space = Space::default();
    assert_eq!(space.size(), 1);
    assert_eq!(space.points().collect::<Vec<_>>(), vec![Point::default()]);
    assert_eq!(space.declared(), "none");
}

#[test]
fn parse_pins_accepts_spaces_and_commas() {
    let want = vec![("A".to_string(), 1), ("B_2".to_string(), -2)];
    assert_eq!(parse_pins("A=1 B_2=-2"), Ok(want.clone()));
    assert_eq!(parse_pins("A=1,B_2=-2"), Ok(want.clone()));
    assert_eq!(parse_pins(" A = 1 , B_2 = -2 "), Ok(want));
    assert_eq!(parse_pins(""), Ok(vec![]));
}

#[test]
fn parse_pins_rejects_malformed() {
    assert!(matches!(parse_pins("A"), Err(PinError::Malformed { .. })));
    assert!(matches!(parse_pins("A=x"), Err(PinError::Malformed { text }) if text == "A=x"));
    assert!(matches!(parse_pins("=3"), Err(PinError::Malformed { .. })));
    assert!(matches!(
        parse_pins("1A=3"),
        Err(PinError::Malformed { .. })
    ));
    assert!(matches!(
        parse_pins("A=1.5"),
        Err(PinError::Malformed { .. })
    ));
}

#[test]
fn pin_reduces_to_one_value_any_integer() {
    let space = seed_gemm();
    let pinned = space.pin(&parse_pins("TILE_K=7").unwrap()).unwrap();
    assert_eq!(pinned.size(), 9);
    assert_eq!(pinned.get("TILE_K").unwrap().choices, vec![7]);
    assert_eq!(pinned.get("TILE_M").unwrap().choices, vec![32, 64, 128]);
}

#[test]
fn pin_rejects_undeclared_listing_declared() {
    let err = seed_gemm().pin(&[("M".into(), 1)]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`M` is not declared in @autotune (declared: TILE_M, TILE_N, TILE_K)"
    );
}

#[test]
fn pin_rejects_duplicates() {
    let err = seed_gemm()
        .pin(&[("TILE_M".into(), 64), ("TILE_M".into(), 32)])
        .unwrap_err();
    assert_eq!(
        err,
        PinError::Duplicate {
            name: "TILE_M".into()
        }
    );
}

#[test]
fn bind_overrides_the_default_point() {
    let point = seed_gemm().bind(&[("TILE_N".into(), 128)]).unwrap();
    assert_eq!(point.to_pins(), "TILE_M=32 TILE_N=128 TILE_K=8");
}

#[test]
fn point_at_agrees_with_enumeration_and_reaches_huge_spaces() {
    let (s, d) = build(&[("A", &[1, 2, 3]), ("B", &[4, 5, 10]), ("C", &[6, 7, 8, 9])]);
    assert!(d.is_empty());
    let all: Vec<_> = s.points().collect();
    assert_eq!(all.len(), 36);
    for (i, p) in all.iter().enumerate() {
        assert_eq!(s.point_at(i as u128).as_ref(), Some(p), "index {i}");
    }
    assert_eq!(s.point_at(36), None);
    // Twelve names of eight values: the last point, without the 8^12 before it.
    let eight: &[i64] = &[1, 2, 3, 4, 5, 6, 7, 8];
    let names: Vec<String> = (0..12).map(|i| format!("N{i}")).collect();
    let entries: Vec<(&str, &[i64])> = names.iter().map(|n| (n.as_str(), eight)).collect();
    let (big, _) = build(&entries);
    assert_eq!(big.size(), 8u128.pow(12));
    let last = big.point_at(8u128.pow(12) - 1).unwrap();
    assert!(last.0.iter().all(|(_, v)| *v == 8), "{last:?}");
    assert_eq!(big.point_at(9).unwrap().get("N11"), Some(2));
    assert_eq!(big.point_at(9).unwrap().get("N10"), Some(2));
}
