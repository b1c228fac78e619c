//! Which tile loads a loop streams into shared memory ahead of the iteration that reads them:
//! the operands the overlapped loop, its mbarrier ring and its producer are planned around, and
//! the copies the pipeline (`emit/pipe.rs`) and the producer (`emit/producer.rs`) issue.

use crate::visit::stmt_exprs;
use crate::Target;
use phobos_ir::{Expr, ExprKind, Index, Kernel, LocalId, Stmt, StmtKind};
use std::collections::BTreeSet;

/// The loads of `body` (the loop over `var`) that the loop streams into shared memory: tile
/// operands of tensor-core dots in the body itself (or its branches), of a 16-bit tensor the
/// kernel never writes, whose indices read only `var` and locals the loop does not assign.
pub(crate) fn streamed_loads<'k>(
    k: &'k Kernel,
    target: &Target,
    var: LocalId,
    body: &'k [Stmt],
    assigned: &BTreeSet<LocalId>,
) -> Vec<&'k Expr> {
    let mut stored = BTreeSet::new();
    crate::visit::stored_tensors(&k.body, &mut stored);
    let invariant = |e: &Expr| {
        !crate::visit::any_expr(e, &mut |x| match &x.kind {
            ExprKind::Local(l) => *l != var && assigned.contains(l),
            ExprKind::Load { .. } | ExprKind::TileGet { .. } | ExprKind::Reduce { .. } => true,
            _ => false,
        })
    };
    let qualifies = |op: &Expr| match &op.kind {
        ExprKind::Load { tensor, index, .. } => {
            !stored.contains(tensor)
                && crate::ctype::register_bytes(op.ty.dtype()) == 4
                && matches!(
                    op.ty.dtype(),
                    phobos_ir::DType::F16 | phobos_ir::DType::BF16
                )
                && index.iter().all(|i| match i {
                    Index::At(e) => invariant(e),
                    Index::Span { start, .. } => invariant(start),
                })
        }
        _ => false,
    };
    let mut out: Vec<&'k Expr> = Vec::new();
    fn walk<'k>(stmts: &'k [Stmt], f: &mut dyn FnMut(&'k Expr)) {
        for s in stmts {
            for e in stmt_exprs(s) {
                visit_ref(e, f);
            }
            if let StmtKind::If {
                then_body,
                else_body,
                ..
            } = &s.kind
            {
                walk(then_body, f);
                walk(else_body, f);
            }
        }
    }
    walk(body, &mut |e| {
        if let ExprKind::Dot { a, b, .. } = &e.kind {
            if super::dot_mma(k, target, e).is_ok() {
                for op in [&**a, &**b] {
                    if qualifies(op) && !out.iter().any(|x| std::ptr::eq(*x, op)) {
                        out.push(op);
                    }
                }
            }
        }
    });
    out
}

/// Calls `f` on `e` and every subexpression, with the lifetime of the IR.
fn visit_ref<'k>(e: &'k Expr, f: &mut dyn FnMut(&'k Expr)) {
    f(e);
    crate::visit::children(e)
        .into_iter()
        .for_each(|c| visit_ref(c, f));
}
