//! Column tiles: rank-1 (or `[1, C]`) tile values that are functions of the column index and
//! uniform scalars alone (`arange(BLOCK) < N`, `c + arange(BC)`). Broadcast over the rows of a
//! wider tile, such a value is recomputed in the wide tile's own layout (`ph::col_of`) instead
//! of moving through shared memory: the broadcast costs no barrier and no staging. Row tiles
//! (`[R, 1]` functions of the row index, `r + arange(BR)[:, None]`) likewise (`ph::row_of`).

use phobos_ir::{Ctx, Expr, ExprKind, Kernel, LocalId, Stmt, StmtKind, Ty};
use std::collections::BTreeMap;

/// Which index a tile is a function of (also where a mask's index tile runs: `Extent::axis`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// `[1, C]` (or `[C]`) of the column index: leaves `arange(C)`.
    Cols,
    /// `[R, 1]` of the row index: leaves `arange(R)[:, None]` (a reshape of an arange).
    Rows,
}

/// The definitions of the immutable tile locals whose values are column (or row) expressions.
pub(crate) fn column_defs(k: &Kernel, axis: Axis) -> BTreeMap<LocalId, Expr> {
    let mut defs = BTreeMap::new();
    collect(k, &k.body, axis, &mut defs);
    defs
}

fn collect(k: &Kernel, stmts: &[Stmt], axis: Axis, defs: &mut BTreeMap<LocalId, Expr>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { local, value } => {
                let l = &k.locals[*local];
                if !l.mutable && value.ty.is_tile() {
                    if let Some(e) = inline(k, value, axis, defs) {
                        defs.insert(*local, e);
                    }
                }
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                collect(k, body, axis, defs)
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                collect(k, then_body, axis, defs);
                collect(k, else_body, axis, defs);
            }
            _ => {}
        }
    }
}

/// `e` with column-tile (row-tile) locals replaced by their definitions, when `e` is a column
/// (row) expression; None otherwise.
pub(crate) fn inline(
    k: &Kernel,
    e: &Expr,
    axis: Axis,
    defs: &BTreeMap<LocalId, Expr>,
) -> Option<Expr> {
    if !e.ty.is_tile() {
        return stable_scalar(k, e).then(|| e.clone());
    }
    let (r, c) = e.ty.shape().map(crate::layout::rc)?;
    let one_line = match axis {
        Axis::Cols => r == 1,
        Axis::Rows => c == 1 && e.ty.shape().is_some_and(|s| s.len() == 2),
    };
    if !one_line {
        return None;
    }
    let inline = |x: &Expr| inline(k, x, axis, defs);
    let kind = match &e.kind {
        ExprKind::Arange(_) if axis == Axis::Cols => e.kind.clone(),
        ExprKind::Reshape(a) if axis == Axis::Rows && is_row_index(e, a) => e.kind.clone(),
        // `t[None, :]` of a column expression: the same columns.
        ExprKind::Reshape(a)
            if axis == Axis::Cols && a.ty.shape().map(crate::layout::rc) == Some((1, c)) =>
        {
            ExprKind::Reshape(Box::new(inline(a)?))
        }
        // `t[:, None]` of a rank-1 column expression: the same function of the row index.
        ExprKind::Reshape(a)
            if axis == Axis::Rows && a.ty.shape().is_some_and(|s| s.len() == 1) =>
        {
            let cols = inline_cols(k, a)?;
            return Some(as_rows(&cols, e));
        }
        ExprKind::Local(l) => return defs.get(l).cloned(),
        ExprKind::Unary(op, a) => ExprKind::Unary(*op, Box::new(inline(a)?)),
        ExprKind::Math(f, a) => ExprKind::Math(*f, Box::new(inline(a)?)),
        ExprKind::Cast(a) => ExprKind::Cast(Box::new(inline(a)?)),
        ExprKind::Broadcast(a) => ExprKind::Broadcast(Box::new(inline(a)?)),
        ExprKind::Binary(op, a, b) => {
            ExprKind::Binary(*op, Box::new(inline(a)?), Box::new(inline(b)?))
        }
        ExprKind::Select(c, a, b) => ExprKind::Select(
            Box::new(inline(c)?),
            Box::new(inline(a)?),
            Box::new(inline(b)?),
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

/// `a` inlined as a column expression over no column locals (a definition in place).
fn inline_cols(k: &Kernel, a: &Expr) -> Option<Expr> {
    inline(k, a, Axis::Cols, &BTreeMap::new())
}

/// A rank-1 column expression `a` (an inlined one: arange, scalars, elementwise operations)
/// as the same function of the row index, with `e`'s `[n, 1]` type.
fn as_rows(a: &Expr, e: &Expr) -> Expr {
    let (Ty::Tile(_, shape), true) = (&e.ty, a.ty.is_tile()) else {
        return a.clone();
    };
    let ty = Ty::Tile(a.ty.dtype(), shape.clone());
    let rows = |x: &Expr| Box::new(as_rows(x, e));
    let kind = match &a.kind {
        ExprKind::Arange(_) => ExprKind::Reshape(Box::new(a.clone())),
        ExprKind::Unary(op, x) => ExprKind::Unary(*op, rows(x)),
        ExprKind::Math(f, x) => ExprKind::Math(*f, rows(x)),
        ExprKind::Cast(x) => ExprKind::Cast(rows(x)),
        ExprKind::Broadcast(x) if !x.ty.is_tile() => ExprKind::Broadcast(x.clone()),
        ExprKind::Broadcast(x) | ExprKind::Reshape(x) => return as_rows(x, e),
        ExprKind::Binary(op, x, y) => ExprKind::Binary(*op, rows(x), rows(y)),
        ExprKind::Select(c, x, y) => ExprKind::Select(rows(c), rows(x), rows(y)),
        _ => return a.clone(),
    };
    Expr {
        kind,
        ty,
        uniform: a.uniform,
        span: a.span,
    }
}

/// `arange(n)[:, None]`: the row index of an `[n, 1]` tile.
pub(crate) fn is_row_index(e: &Expr, inner: &Expr) -> bool {
    matches!(inner.kind, ExprKind::Arange(_))
        && e.ty.shape().is_some_and(|s| s.len() == 2 && s[1] == 1)
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
