//! Column tiles: rank-1 (or `[1, C]`) tile values that are functions of the column index and
//! uniform scalars alone (`arange(BLOCK) < N`, `c + arange(BC)`). Broadcast over the rows of a
//! wider tile, such a value is recomputed in the wide tile's own layout (`ph::col_of`) instead
//! of moving through shared memory: the broadcast costs no barrier and no staging.

use phobos_ir::{Ctx, Expr, ExprKind, Kernel, LocalId, Stmt, StmtKind};
use std::collections::BTreeMap;

/// The definitions of the immutable tile locals whose values are column expressions.
pub(crate) fn column_defs(k: &Kernel) -> BTreeMap<LocalId, Expr> {
    let mut defs = BTreeMap::new();
    collect(k, &k.body, &mut defs);
    defs
}

fn collect(k: &Kernel, stmts: &[Stmt], defs: &mut BTreeMap<LocalId, Expr>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { local, value } => {
                let l = &k.locals[*local];
                if !l.mutable && value.ty.is_tile() {
                    if let Some(e) = inline(k, value, defs) {
                        defs.insert(*local, e);
                    }
                }
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => collect(k, body, defs),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                collect(k, then_body, defs);
                collect(k, else_body, defs);
            }
            _ => {}
        }
    }
}

/// `e` with column-tile locals replaced by their definitions, when `e` is a column
/// expression; None otherwise.
pub(crate) fn inline(k: &Kernel, e: &Expr, defs: &BTreeMap<LocalId, Expr>) -> Option<Expr> {
    if !e.ty.is_tile() {
        return stable_scalar(k, e).then(|| e.clone());
    }
    let rows = e.ty.shape().map(crate::layout::rc).map(|(r, _)| r);
    if rows != Some(1) {
        return None;
    }
    let kind = match &e.kind {
        ExprKind::Arange(_) => e.kind.clone(),
        ExprKind::Local(l) => return defs.get(l).cloned(),
        ExprKind::Unary(op, a) => ExprKind::Unary(*op, Box::new(inline(k, a, defs)?)),
        ExprKind::Math(f, a) => ExprKind::Math(*f, Box::new(inline(k, a, defs)?)),
        ExprKind::Cast(a) => ExprKind::Cast(Box::new(inline(k, a, defs)?)),
        ExprKind::Broadcast(a) => ExprKind::Broadcast(Box::new(inline(k, a, defs)?)),
        ExprKind::Binary(op, a, b) => ExprKind::Binary(
            *op,
            Box::new(inline(k, a, defs)?),
            Box::new(inline(k, b, defs)?),
        ),
        ExprKind::Select(c, a, b) => ExprKind::Select(
            Box::new(inline(k, c, defs)?),
            Box::new(inline(k, a, defs)?),
            Box::new(inline(k, b, defs)?),
        ),
        _ => return None,
    };
    Some(Expr {
        kind,
        ty: e.ty.clone(),
        uniform: e.uniform,
        span: e.span,
    })
}

/// A uniform scalar whose value cannot change between a definition and a later use: literals,
/// dims, scalar parameters, block indices and immutable locals, and arithmetic on them.
fn stable_scalar(k: &Kernel, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Dim(_) | ExprKind::Param(_) => true,
        ExprKind::Ctx(c) => matches!(c, Ctx::Block(_) | Ctx::Grid(_) | Ctx::Threads),
        ExprKind::Local(l) => !k.locals[*l].mutable && k.locals[*l].uniform,
        ExprKind::Unary(_, a) | ExprKind::Math(_, a) | ExprKind::Cast(a) => stable_scalar(k, a),
        ExprKind::Binary(_, a, b) | ExprKind::Cdiv(a, b) => {
            stable_scalar(k, a) && stable_scalar(k, b)
        }
        _ => false,
    }
}
