//! A small linear-form normalizer: `a : b` has a static length when `b - a` folds to a constant
//! after writing both sides as `c + sum(k_i * atom_i)`, where atoms are dims, locals, `ctx`
//! values and any other subexpression (compared structurally, spans ignored).

use phobos_ir as ir;
use std::collections::BTreeMap;

/// `c + sum(k * atom)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Lin {
    c: i64,
    terms: BTreeMap<String, i64>,
}

impl Lin {
    fn constant(c: i64) -> Lin {
        Lin {
            c,
            terms: BTreeMap::new(),
        }
    }

    fn atom(key: String) -> Lin {
        Lin {
            c: 0,
            terms: BTreeMap::from([(key, 1)]),
        }
    }

    fn scale(mut self, k: i64) -> Lin {
        self.c = self.c.wrapping_mul(k);
        for v in self.terms.values_mut() {
            *v = v.wrapping_mul(k);
        }
        self.terms.retain(|_, v| *v != 0);
        self
    }

    /// `self + k * other`.
    fn add(mut self, other: Lin, k: i64) -> Lin {
        self.c = self.c.wrapping_add(other.c.wrapping_mul(k));
        for (key, v) in other.terms {
            let e = self.terms.entry(key).or_insert(0);
            *e = e.wrapping_add(v.wrapping_mul(k));
        }
        self.terms.retain(|_, v| *v != 0);
        self
    }

    /// The value when no atom remains.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.c)
    }
}

/// The linear form of an integer expression.
pub(crate) fn lin(e: &ir::Expr) -> Lin {
    match &e.kind {
        ir::ExprKind::Lit(ir::Lit::Int(i)) => Lin::constant(*i),
        ir::ExprKind::Binary(ir::BinOp::Add, a, b) => lin(a).add(lin(b), 1),
        ir::ExprKind::Binary(ir::BinOp::Sub, a, b) => lin(a).add(lin(b), -1),
        ir::ExprKind::Binary(ir::BinOp::Mul, a, b) => {
            let (la, lb) = (lin(a), lin(b));
            match (la.as_const(), lb.as_const()) {
                (Some(k), _) => lb.scale(k),
                (_, Some(k)) => la.scale(k),
                _ => Lin::atom(key(e)),
            }
        }
        ir::ExprKind::Unary(ir::UnOp::Neg, a) => lin(a).scale(-1),
        _ => Lin::atom(key(e)),
    }
}

/// `b - a`, when it is a constant.
pub(crate) fn const_difference(a: &ir::Expr, b: &ir::Expr) -> Option<i64> {
    lin(b).add(lin(a), -1).as_const()
}

/// A structural key of an expression that ignores spans.
fn key(e: &ir::Expr) -> String {
    let text = format!("{:?}", (&e.kind, &e.ty));
    // Spans print as `span: lo..hi`; drop them so equal expressions at different places match.
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(i) = rest.find("span: ") {
        out.push_str(&rest[..i]);
        rest = rest[i + 6..].trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_ir::{DType, Ty};
    use phobos_syntax::Span;

    fn e(kind: ir::ExprKind, at: usize) -> ir::Expr {
        ir::Expr {
            kind,
            ty: Ty::Scalar(DType::I32),
            uniform: true,
            span: Span::new(at, at + 1),
        }
    }
    fn int(v: i64, at: usize) -> ir::Expr {
        e(ir::ExprKind::Lit(ir::Lit::Int(v)), at)
    }
    fn bin(op: ir::BinOp, a: ir::Expr, b: ir::Expr, at: usize) -> ir::Expr {
        e(ir::ExprKind::Binary(op, Box::new(a), Box::new(b)), at)
    }

    #[test]
    fn differences_of_shifted_atoms_are_constant() {
        let i = |at| e(ir::ExprKind::Local(3), at);
        let start = bin(ir::BinOp::Mul, i(1), int(64, 2), 3);
        let end = bin(
            ir::BinOp::Add,
            bin(ir::BinOp::Mul, int(64, 4), i(5), 6),
            int(64, 7),
            8,
        );
        assert_eq!(const_difference(&start, &end), Some(64));
        let other = bin(
            ir::BinOp::Add,
            e(ir::ExprKind::Local(4), 9),
            int(64, 10),
            11,
        );
        assert_eq!(const_difference(&start, &other), None);
    }

    #[test]
    fn nonlinear_subterms_are_atoms() {
        let d = |at| e(ir::ExprKind::Dim(0), at);
        let sq = |at| bin(ir::BinOp::Mul, d(at), d(at + 1), at + 2);
        let a = bin(ir::BinOp::Sub, sq(0), int(1, 5), 6);
        let b = bin(ir::BinOp::Add, sq(10), int(7, 15), 16);
        assert_eq!(const_difference(&a, &b), Some(8));
    }
}
