//! Small queries over the IR (children, local references, tensors read and written).

use phobos_ir::{Expr, ExprKind, Index, LocalId, ParamId, Stmt, StmtKind};
use std::collections::BTreeSet;

/// The direct sub-expressions of `e`, index expressions included.
pub fn children(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Lit(_)
        | ExprKind::Dim(_)
        | ExprKind::Param(_)
        | ExprKind::Local(_)
        | ExprKind::Ctx(_)
        | ExprKind::Arange(_) => vec![],
        ExprKind::Unary(_, a)
        | ExprKind::Math(_, a)
        | ExprKind::Cast(a)
        | ExprKind::Broadcast(a)
        | ExprKind::Transpose(a)
        | ExprKind::Reshape(a) => vec![a],
        ExprKind::Reduce { arg, .. } => vec![arg],
        ExprKind::Binary(_, a, b) | ExprKind::Cdiv(a, b) => vec![a, b],
        ExprKind::Dot { a, b, .. } => vec![a, b],
        ExprKind::Select(c, a, b) => vec![c, a, b],
        ExprKind::MathN(_, args) => args.iter().collect(),
        ExprKind::Load { index, .. } => index_exprs(index),
        ExprKind::TileGet { tile, index } => {
            let mut v: Vec<&Expr> = vec![tile];
            v.extend(index.iter());
            v
        }
    }
}

pub fn index_exprs(index: &[Index]) -> Vec<&Expr> {
    index
        .iter()
        .map(|i| match i {
            Index::At(e) => e,
            Index::Span { start, .. } => start,
        })
        .collect()
}

/// True when `f` holds for `e` or any sub-expression.
pub fn any_expr(e: &Expr, f: &mut dyn FnMut(&Expr) -> bool) -> bool {
    f(e) || children(e).into_iter().any(|c| any_expr(c, f))
}

/// The expressions a statement evaluates itself (not those of nested bodies).
pub fn stmt_exprs(s: &Stmt) -> Vec<&Expr> {
    match &s.kind {
        StmtKind::Assign { value, .. } => vec![value],
        StmtKind::Store { index, value, .. } | StmtKind::Atomic { index, value, .. } => {
            let mut v = index_exprs(index);
            v.push(value);
            v
        }
        StmtKind::For {
            start, end, step, ..
        } => vec![start, end, step],
        StmtKind::While { cond, .. } => vec![cond],
        StmtKind::If { cond, .. } => vec![cond],
        StmtKind::Break | StmtKind::Continue => vec![],
    }
}

/// The nested statement lists of a statement.
pub fn bodies(s: &Stmt) -> Vec<&[Stmt]> {
    match &s.kind {
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => vec![body],
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => vec![then_body, else_body],
        _ => vec![],
    }
}

/// True when `f` holds for any expression evaluated in `stmts`, nested bodies included.
pub fn any_in_stmts(stmts: &[Stmt], f: &mut dyn FnMut(&Expr) -> bool) -> bool {
    stmts.iter().any(|s| {
        stmt_exprs(s).into_iter().any(|e| any_expr(e, f))
            || bodies(s).into_iter().any(|b| any_in_stmts(b, f))
    })
}

pub fn expr_reads_local(e: &Expr, id: LocalId) -> bool {
    any_expr(e, &mut |x| matches!(x.kind, ExprKind::Local(l) if l == id))
}

/// True when `stmts` read or assign local `id` (loop variables count as assigned).
pub fn stmts_touch_local(stmts: &[Stmt], id: LocalId) -> bool {
    stmts.iter().any(|s| {
        let own = match &s.kind {
            StmtKind::Assign { local, .. } => *local == id,
            StmtKind::Atomic { old, .. } => *old == Some(id),
            StmtKind::For { var, .. } => *var == id,
            _ => false,
        };
        own || stmt_exprs(s).into_iter().any(|e| expr_reads_local(e, id))
            || bodies(s).into_iter().any(|b| stmts_touch_local(b, id))
    })
}

/// Locals assigned anywhere in `stmts` (loop variables included).
pub fn assigned_locals(stmts: &[Stmt], out: &mut BTreeSet<LocalId>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { local, .. }
            | StmtKind::Atomic {
                old: Some(local), ..
            } => {
                out.insert(*local);
            }
            StmtKind::For { var, .. } => {
                out.insert(*var);
            }
            _ => {}
        }
        for b in bodies(s) {
            assigned_locals(b, out);
        }
    }
}

/// Tensors stored to anywhere in `stmts`.
pub fn stored_tensors(stmts: &[Stmt], out: &mut BTreeSet<ParamId>) {
    for s in stmts {
        if let StmtKind::Store { tensor, .. } | StmtKind::Atomic { tensor, .. } = &s.kind {
            out.insert(*tensor);
        }
        for b in bodies(s) {
            stored_tensors(b, out);
        }
    }
}

/// Tensors read by `e` through tile loads (`tile: true`) or element loads.
pub fn loaded_tensors(e: &Expr, tile: bool, out: &mut BTreeSet<ParamId>) {
    any_expr(e, &mut |x| {
        if let ExprKind::Load { tensor, .. } = &x.kind {
            if x.ty.is_tile() == tile {
                out.insert(*tensor);
            }
        }
        false
    });
}

/// True when `stmts` contain a tile-valued expression or a tile store (anything that may use
/// the scratch area or a barrier).
pub fn has_tile_work(stmts: &[Stmt]) -> bool {
    any_in_stmts(stmts, &mut |e| {
        e.ty.is_tile() || matches!(e.kind, ExprKind::TileGet { .. } | ExprKind::Reduce { .. })
    })
}
