//! Walking every span of a tree: erasing them (to compare trees by shape, e.g. after a
//! print/parse round trip) or checking them.

use crate::ast::*;
use crate::span::Span;

/// Calls `f` on every span in the file, in source order of the nodes.
pub fn visit_spans_mut(file: &mut File, f: &mut dyn FnMut(&mut Span)) {
    for k in &mut file.kernels {
        for a in &mut k.attrs {
            ident(&mut a.name, f);
            match &mut a.kind {
                AttrKind::Autotune(entries) => {
                    for e in entries {
                        ident(&mut e.name, f);
                        e.values.iter_mut().for_each(|v| expr(v, f));
                        f(&mut e.list_span);
                        f(&mut e.span);
                    }
                }
                AttrKind::Launch(es) | AttrKind::Grid(es) => es.iter_mut().for_each(|e| expr(e, f)),
                AttrKind::Where(e) | AttrKind::Flops(e) | AttrKind::Bytes(e) => expr(e, f),
                AttrKind::Aligned(pairs) => {
                    for (id, e) in pairs {
                        ident(id, f);
                        expr(e, f);
                    }
                }
                AttrKind::AllowTf32 | AttrKind::Unknown(_) => {}
            }
            f(&mut a.span);
        }
        ident(&mut k.name, f);
        for tp in &mut k.type_params {
            ident(&mut tp.name, f);
            if let Some(d) = &mut tp.default {
                ident(d, f);
            }
            f(&mut tp.span);
        }
        for p in &mut k.params {
            ident(&mut p.name, f);
            ty(&mut p.ty, f);
            f(&mut p.span);
        }
        block(&mut k.body, f);
        f(&mut k.span);
    }
}

/// Calls `f` on every span of one expression.
pub fn visit_expr_spans_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Span)) {
    expr(e, f);
}

/// Sets every span in the file to `0..0`.
pub fn erase_spans(file: &mut File) {
    visit_spans_mut(file, &mut |s| *s = Span::default());
}

/// Sets every span in the expression to `0..0`.
pub fn erase_expr_spans(e: &mut Expr) {
    expr(e, &mut |s| *s = Span::default());
}

fn ident(id: &mut Ident, f: &mut dyn FnMut(&mut Span)) {
    f(&mut id.span);
}

fn ty(t: &mut TypeExpr, f: &mut dyn FnMut(&mut Span)) {
    match t {
        TypeExpr::Scalar(id) => ident(id, f),
        TypeExpr::Tensor { elem, dims, span } => {
            ident(elem, f);
            for d in dims {
                match d {
                    DimExpr::Name(id) => ident(id, f),
                    DimExpr::Lit(_, s) => f(s),
                }
            }
            f(span);
        }
        TypeExpr::Tile { elem, dims, span } => {
            ident(elem, f);
            dims.iter_mut().for_each(|d| expr(d, f));
            f(span);
        }
    }
}

fn block(b: &mut Block, f: &mut dyn FnMut(&mut Span)) {
    b.stmts.iter_mut().for_each(|s| stmt(s, f));
    f(&mut b.span);
}

fn stmt(s: &mut Stmt, f: &mut dyn FnMut(&mut Span)) {
    match &mut s.kind {
        StmtKind::Let {
            name, ty: t, init, ..
        } => {
            ident(name, f);
            if let Some(t) = t {
                ty(t, f);
            }
            if let Some(e) = init {
                expr(e, f);
            }
        }
        StmtKind::Assign { target, value, .. } => {
            expr(target, f);
            expr(value, f);
        }
        StmtKind::Expr(e) => expr(e, f),
        StmtKind::For {
            unroll,
            var,
            iter,
            body,
        } => {
            if let Some(u) = unroll {
                expr(u, f);
            }
            ident(var, f);
            expr(iter, f);
            block(body, f);
        }
        StmtKind::While { cond, body } => {
            expr(cond, f);
            block(body, f);
        }
        StmtKind::If { cond, then, els } => {
            expr(cond, f);
            block(then, f);
            if let Some(e) = els {
                stmt(e, f);
            }
        }
        StmtKind::Block(b) => block(b, f),
        StmtKind::Break | StmtKind::Continue => {}
    }
    f(&mut s.span);
}

fn expr(e: &mut Expr, f: &mut dyn FnMut(&mut Span)) {
    match &mut e.kind {
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => {}
        ExprKind::Name(id) => ident(id, f),
        ExprKind::Field { base, field } => {
            expr(base, f);
            ident(field, f);
        }
        ExprKind::Unary { arg, .. } => expr(arg, f),
        ExprKind::Binary { lhs, rhs, .. } => {
            expr(lhs, f);
            expr(rhs, f);
        }
        ExprKind::Call { callee, args } => {
            ident(callee, f);
            for a in args {
                if let Some(n) = &mut a.name {
                    ident(n, f);
                }
                expr(&mut a.value, f);
            }
        }
        ExprKind::List(items) => items.iter_mut().for_each(|x| expr(x, f)),
        ExprKind::Index {
            base,
            indices,
            options,
        } => {
            expr(base, f);
            for i in indices {
                match i {
                    IndexExpr::At(e) => expr(e, f),
                    IndexExpr::Span { start, len, span } => {
                        expr(start, f);
                        expr(len, f);
                        f(span);
                    }
                    IndexExpr::Range { start, end, span } => {
                        if let Some(s) = start {
                            expr(s, f);
                        }
                        if let Some(e) = end {
                            expr(e, f);
                        }
                        f(span);
                    }
                }
            }
            for o in options {
                ident(&mut o.name, f);
                expr(&mut o.value, f);
            }
        }
    }
    f(&mut e.span);
}
