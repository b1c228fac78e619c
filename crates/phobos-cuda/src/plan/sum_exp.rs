//! A row's max and its sum of exponentials in one pass (bench/NOTES.md r30). The softmaxes and
//! the cross-entropy write
//!
//! ```text
//! m = max(f32(x))                                 (or `max(f32(x)) * a`)
//! ...                                             (only `let`s of other locals)
//! s = sum(exp2(f32(x) * a - m * a))               (or `- m` after `* a`; or `exp(f32(x) - m)`)
//! ```
//!
//! two passes over `x`, the second's exponentials after the whole row's max. The sum equals
//! `sum over threads of exp2(o_t - m a) * sum over the thread's elements of exp2(x a - o_t)`
//! for any per-thread offset `o_t`: each thread keeps a running max and a sum at an offset of
//! its own (for a > 0 its first group's max times a, summed again at its max in the rare thread
//! whose values climb 96 above it; bench/NOTES.md r35), and the block combines the pairs. On a
//! row staged in shared memory whose groups land on their own barriers (ROW_SMEM=2), the
//! exponentials then run while the row lands instead of after it (`ph::row_max_sumexp2`). The
//! value differs from the two passes' by rounding alone (every term is at most 2^96, f32's
//! relative rounding the same at any scale).
//!
//! This module finds the pairs (syntax over the IR); the emitter fuses a pair when the max is
//! the packed max of a staged bf16 row (`Emitted::sum_exp` records each one fused).

use phobos_ir::{BinOp, Expr, ExprKind, Kernel, Lit, LocalId, MathFn, ReduceOp, Stmt, StmtKind};
use phobos_syntax::Span;

use crate::visit::bodies;

/// log2(e), the factor `exp(v)` is `exp2(v * LOG2E)` by.
const LOG2E: f64 = std::f64::consts::LOG2_E;

/// A whole-row max and a later sum of exponentials of the same row, scaled alike.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SumExpPair {
    /// The row (a tile local): `f32(x)` is what both reduce.
    pub x: LocalId,
    /// The local the max is assigned to.
    pub m: LocalId,
    /// The local the sum is assigned to.
    pub s: LocalId,
    /// The factor of the exponent: the sum is `sum(exp2(f32(x) * a - max(f32(x)) * a))`.
    pub a: f64,
    /// The `max` reduction's and the `sum` reduction's spans (how the emitter finds them).
    pub max_span: Span,
    pub sum_span: Span,
}

/// A pair the emitter fused (`Emitted::sum_exp`; the notes render it): the max's statement
/// computes both, the sum's reads the result.
#[derive(Clone, Debug, PartialEq)]
pub struct SumExpRecord {
    /// The row's, the max's and the sum's locals.
    pub row: LocalId,
    pub max: LocalId,
    pub sum: LocalId,
    /// The exponent's factor (`SumExpPair::a`).
    pub a: f64,
    /// Their names, for the note.
    names: [String; 3],
}

impl SumExpRecord {
    pub(crate) fn new(pair: &SumExpPair, k: &Kernel) -> SumExpRecord {
        let name = |l: LocalId| k.locals[l].name.clone();
        SumExpRecord {
            row: pair.x,
            max: pair.m,
            sum: pair.s,
            a: pair.a,
            names: [name(pair.x), name(pair.m), name(pair.s)],
        }
    }
}

impl std::fmt::Display for SumExpRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [x, m, s] = &self.names;
        write!(
            f,
            "max and sum of exponentials of `{x}` in one pass ({m}, {s}): each thread's running \
             max and its sum at an offset of its own as the staged row's groups land, then the \
             block's combine (ph::row_max_sumexp2)"
        )
    }
}

/// Every such pair in the kernel, in program order.
pub fn sum_exp_pairs(k: &Kernel) -> Vec<SumExpPair> {
    let mut out = Vec::new();
    find(&k.body, &mut out);
    out
}

fn find(stmts: &[Stmt], out: &mut Vec<SumExpPair>) {
    for (i, s) in stmts.iter().enumerate() {
        if let Some((x, m, c, max_span)) = max_of_row(s) {
            if let Some(pair) = later_sum(&stmts[i + 1..], x, m, c, max_span) {
                out.push(pair);
            }
        }
        for b in bodies(s) {
            find(b, out);
        }
    }
}

/// `m = max(f32(x))` or `m = max(f32(x)) * c`: (x, m, c, the max's span).
fn max_of_row(s: &Stmt) -> Option<(LocalId, LocalId, f64, Span)> {
    let StmtKind::Assign { local, value } = &s.kind else {
        return None;
    };
    let (reduce, c) = match &value.kind {
        ExprKind::Binary(BinOp::Mul, r, f) => (&**r, lit(f)?),
        _ => (value, 1.0),
    };
    let x = whole_reduce(reduce, ReduceOp::Max)?;
    row_of(x).map(|x| (x, *local, c, reduce.span))
}

/// The first statement after the max that assigns `m` or `x` ends the search; only `let`s of
/// other locals may come between. The sum must be a statement's whole value.
fn later_sum(stmts: &[Stmt], x: LocalId, m: LocalId, c: f64, max_span: Span) -> Option<SumExpPair> {
    for s in stmts {
        let StmtKind::Assign { local, value } = &s.kind else {
            return None;
        };
        if *local == x || *local == m {
            return None;
        }
        if let Some(a) = whole_reduce(value, ReduceOp::Sum).and_then(|e| exponent(e, x, m, c)) {
            return Some(SumExpPair {
                x,
                m,
                s: *local,
                a,
                max_span,
                sum_span: value.span,
            });
        }
    }
    None
}

/// The argument of a whole-tile reduction `op`.
fn whole_reduce(e: &Expr, op: ReduceOp) -> Option<&Expr> {
    match &e.kind {
        ExprKind::Reduce {
            op: o,
            axis: None,
            arg,
        } if *o == op => Some(arg),
        _ => None,
    }
}

/// `f32(x)` of a tile local: x.
fn row_of(e: &Expr) -> Option<LocalId> {
    let ExprKind::Cast(inner) = &e.kind else {
        return None;
    };
    match inner.kind {
        ExprKind::Local(x) if e.ty.dtype() == phobos_ir::DType::F32 && inner.ty.is_tile() => {
            Some(x)
        }
        _ => None,
    }
}

fn lit(e: &Expr) -> Option<f64> {
    match e.kind {
        ExprKind::Lit(Lit::Float(v)) if v.is_finite() && v > 0.0 => Some(v),
        _ => None,
    }
}

/// The sum's argument as `exp2(f32(x) * a - m * b)`, `exp2(f32(x) * a - m)` or
/// `exp(f32(x) - m)`, where the max was scaled by `c`: the factor `a` when the exponent is
/// `(x - max) * a` (a == b c), else None.
fn exponent(e: &Expr, x: LocalId, m: LocalId, c: f64) -> Option<f64> {
    let ExprKind::Math(f, arg) = &e.kind else {
        return None;
    };
    let ExprKind::Binary(BinOp::Sub, lhs, rhs) = &arg.kind else {
        return None;
    };
    let is_m = |e: &Expr| matches!(e.kind, ExprKind::Local(l) if l == m);
    match f {
        MathFn::Exp => (c == 1.0 && row_of(lhs) == Some(x) && is_m(rhs)).then_some(LOG2E),
        MathFn::Exp2 => {
            let ExprKind::Binary(BinOp::Mul, xr, a) = &lhs.kind else {
                return None;
            };
            let a = lit(a)?;
            if row_of(xr) != Some(x) {
                return None;
            }
            let b = match &rhs.kind {
                ExprKind::Binary(BinOp::Mul, mr, b) if is_m(mr) => lit(b)?,
                _ if is_m(rhs) => 1.0,
                _ => return None,
            };
            // Exactly one of b and c is the factor, the other 1: the scale the source wrote.
            ((b == 1.0 && c == a) || (c == 1.0 && b == a)).then_some(a)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pairs of the kernel `src` at its one point.
    fn pairs(src: &str) -> Vec<SumExpPair> {
        let module =
            phobos_check::load(phobos_syntax::SourceFile::new("t.ph", src)).expect("checks");
        let info = module.kernel(None).expect("one kernel");
        let v = info.default_variant().expect("variant");
        sum_exp_pairs(&phobos_check::instantiate(&module, info, &v).expect("instantiates"))
    }

    const XENT: &str = "@autotune(B in {64})
kernel k(X: tensor<bf16>[M, V], L: tensor<f32>[M]) {
  let r = ctx.block.x
  var m: f32 = -inf
  var s: f32 = 0.0
  let x = X[r, 0 :+ B]
  let y = 2
  m = max(f32(x))
  let t = f32(X[r, y])
  s = sum(exp2(f32(x) * 1.4426950408889634 - m * 1.4426950408889634))
  L[r] = log(s) + m - t
}";

    #[test]
    fn finds_the_cross_entropy_form() {
        let p = pairs(XENT);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].a, 1.4426950216293335);
    }

    #[test]
    fn finds_the_softmax_forms() {
        let soft = "@autotune(B in {64})
kernel k(X: tensor<bf16>[M, N], Y: tensor<bf16>[M, N]) {
  let r = ctx.block.x
  let x = X[r, 0 :+ B]
  let m = max(f32(x)) * 1.4426950408889634
  let l = sum(exp2(f32(x) * 1.4426950408889634 - m))
  Y[r, 0 :+ B] = bf16(exp2(f32(x) * 1.4426950408889634 - m) * (1.0 / l))
}";
        assert_eq!(pairs(soft).len(), 1);
        let natural = "@autotune(B in {64})
kernel k(X: tensor<bf16>[M, N], Y: tensor<f32>[M]) {
  let r = ctx.block.x
  let x = X[r, 0 :+ B]
  let m = max(f32(x))
  let l = sum(exp(f32(x) - m))
  Y[r] = l
}";
        let p = pairs(natural);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].a, LOG2E);
    }

    #[test]
    fn refuses_what_is_not_the_same_sum() {
        // The max reassigned between.
        let re = XENT.replace(
            "  let t = f32(X[r, y])\n",
            "  m = m + 1.0\n  let t = f32(X[r, y])\n",
        );
        assert!(pairs(&re).is_empty());
        // Scales that differ: exp2(x a - m b) with b != a is not (x - max) a.
        let scale = XENT.replace("m * 1.4426950408889634", "m * 2.0");
        assert!(pairs(&scale).is_empty());
        // A store between (not a `let`).
        let store = XENT.replace(
            "  let t = f32(X[r, y])\n",
            "  L[r] = 1.0\n  let t = f32(X[r, y])\n",
        );
        assert!(pairs(&store).is_empty());
        // exp of another row.
        let other = XENT.replace("sum(exp2(f32(x)", "sum(exp2(f32(X[r, 0 :+ B])");
        assert!(pairs(&other).is_empty());
    }
}
