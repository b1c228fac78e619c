//! Row totals over a wide tile: a row reduction broadcast over the columns of a Blocked tile
//! whose rows reduce in registers lands in the wide layout itself (`ph::reduce_rows_bcast`), and
//! so does an `[R, 1]` expression of such reductions (`1.0 / rowsum(e)`): no `[R, 1]` tile and
//! no broadcast through shared memory (bench/NOTES.md r46).

use super::expr::reduce_op;
use super::tile::ceil16;
use super::{Emitter, Result};
use crate::ctype;
use crate::layout::{rc, rows_in_registers, RowsInRegisters};
use phobos_ir::{Expr, ExprKind, ReduceOp};

impl Emitter<'_> {
    /// `broadcast(rowmax(x))` and the like, when x's rows reduce in registers: the reduction
    /// lands in the broadcast's layout directly (`ph::reduce_rows_bcast`), no `[R, 1]` tile
    /// and no second pass through shared memory. None when the pattern does not apply (a sum
    /// of a narrow float type keeps its rounding step, columns keep the general path).
    pub(super) fn fused_row_reduce(
        &mut self,
        inner: &Expr,
        e: &Expr,
        alias: &str,
    ) -> Result<Option<String>> {
        let Some((op, arg, ri)) = self.fusable_row_reduce(inner, e) else {
            return Ok(None);
        };
        let (src, _) = self.as_tile(arg)?;
        let size = ctype::register_bytes(arg.ty.dtype()) as i64;
        let s = self.scratch(ceil16(ri.smem_bytes(size)));
        self.headers.insert(crate::REDUCE_HEADER);
        Ok(Some(format!(
            "ph::reduce_rows_bcast<{}, {alias}>({src}, {s})",
            reduce_op(op)
        )))
    }

    /// `inner`, a reduction broadcast to `e`'s shape, when it can land in the broadcast's layout
    /// (`fused_row_reduce`): its operator, its argument and how the argument's rows lie in
    /// registers.
    fn fusable_row_reduce<'e>(
        &self,
        inner: &'e Expr,
        e: &Expr,
    ) -> Option<(ReduceOp, &'e Expr, RowsInRegisters)> {
        let ExprKind::Reduce {
            op,
            axis: Some(axis),
            arg,
        } = &inner.kind
        else {
            return None;
        };
        let shape = arg.ty.shape().unwrap_or(&[1]);
        let row_axis = shape.len() == 1 || *axis == 1;
        let narrow_sum = *op == ReduceOp::Sum && ctype::is_narrow_float(inner.ty.dtype());
        if !row_axis || narrow_sum || rc(shape).0 != rc(e.ty.shape().unwrap_or(&[1])).0 {
            return None;
        }
        let arg_layout = match &arg.kind {
            ExprKind::Local(l) => self.plan.layouts[l].clone(),
            _ => self.natural_layout(arg),
        };
        rows_in_registers(&arg_layout).map(|ri| (*op, &**arg, ri))
    }

    /// `Broadcast(a)` to `e`'s shape with the broadcast moved onto the row reductions inside
    /// `a`, when `a` is an `[R, 1]` elementwise expression of row reductions of tile locals
    /// that land in the broadcast's layout (`fused_row_reduce`), scalars and constants:
    /// `rowmax(x) * 1.44`, `1.0 / rowsum(e)`. The expression is then computed in the wide
    /// layout on `ph::reduce_rows_bcast`'s registers (a thread's copies of its rows' totals, so
    /// the compiler computes it once a row run) with the same operations and roundings, where
    /// an `[R, 1]` tile would take a layout of its own and a broadcast through shared memory
    /// (a second barrier). None when some leaf is anything else, no reduction is inside or `a`
    /// is one.
    pub(super) fn reduce_broadcast(&self, a: &Expr, e: &Expr) -> Option<Expr> {
        let ((ar, ac), (er, ec)) = (rc(a.ty.shape()?), rc(e.ty.shape()?));
        // A bare reduction is `fused_row_reduce`'s already.
        let bare = matches!(a.kind, ExprKind::Reduce { .. });
        if bare || ac != 1 || ar != er || ec == 1 {
            return None;
        }
        let mut reductions = 0;
        let pushed = self.push_broadcast(a, e, &mut reductions)?;
        (reductions > 0).then_some(pushed)
    }

    fn push_broadcast(&self, a: &Expr, e: &Expr, reductions: &mut usize) -> Option<Expr> {
        if !a.ty.is_tile() {
            return Some(a.clone());
        }
        let mut push = |x: &Expr| self.push_broadcast(x, e, reductions).map(Box::new);
        let kind = match &a.kind {
            ExprKind::Reduce { arg, .. } if matches!(arg.kind, ExprKind::Local(_)) => {
                self.fusable_row_reduce(a, e)?;
                *reductions += 1;
                ExprKind::Broadcast(Box::new(a.clone()))
            }
            ExprKind::Broadcast(x) if !x.ty.is_tile() => ExprKind::Broadcast(x.clone()),
            ExprKind::Unary(op, x) => ExprKind::Unary(*op, push(x)?),
            ExprKind::Math(f, x) => ExprKind::Math(*f, push(x)?),
            ExprKind::Cast(x) => ExprKind::Cast(push(x)?),
            ExprKind::Binary(op, x, y) => ExprKind::Binary(*op, push(x)?, push(y)?),
            ExprKind::Select(c, x, y) => ExprKind::Select(push(c)?, push(x)?, push(y)?),
            _ => return None,
        };
        let shape = e.ty.shape()?.to_vec();
        Some(Expr {
            kind,
            ty: phobos_ir::Ty::Tile(a.ty.dtype(), shape),
            uniform: a.uniform,
            span: a.span,
        })
    }
}
