//! The AST printed back as canonical Phobos source: two-space indents, one statement per line,
//! and parentheses exactly where precedence needs them. `parse(print(ast))` gives back `ast`
//! up to spans; the round-trip test holds it to that.

use std::fmt::Write;

use crate::ast::*;

/// Canonical source text of a whole file.
pub fn print_file(file: &File) -> String {
    let mut out = String::new();
    for (i, k) in file.kernels.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        kernel(&mut out, k);
    }
    out
}

/// Canonical source text of one expression.
pub fn print_expr(e: &Expr) -> String {
    let mut out = String::new();
    expr(&mut out, e);
    out
}

/// Binding power of unary operators and of postfix forms and atoms, above every binary level.
const PREC_UNARY: u8 = 10;
const PREC_POSTFIX: u8 = 11;
/// `for<unroll ...>` parses at `|` level, since `>` closes it.
const PREC_BITOR: u8 = 4;
const PREC_CMP: u8 = 3;

fn binop_prec(op: BinOp) -> u8 {
    match op {
        BinOp::Or => 1,
        BinOp::And => 2,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => PREC_CMP,
        BinOp::BitOr => PREC_BITOR,
        BinOp::BitXor => 5,
        BinOp::BitAnd => 6,
        BinOp::Shl | BinOp::Shr => 7,
        BinOp::Add | BinOp::Sub => 8,
        BinOp::Mul | BinOp::Div | BinOp::Rem => 9,
    }
}

fn prec(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Binary { op, .. } => binop_prec(*op),
        ExprKind::Unary { .. } => PREC_UNARY,
        _ => PREC_POSTFIX,
    }
}

fn kernel(out: &mut String, k: &Kernel) {
    for a in &k.attrs {
        attr(out, a);
        out.push('\n');
    }
    let _ = write!(out, "kernel {}", k.name.name);
    if !k.type_params.is_empty() {
        out.push('<');
        for (i, tp) in k.type_params.iter().enumerate() {
            sep(out, i);
            out.push_str(&tp.name.name);
            if let Some(d) = &tp.default {
                let _ = write!(out, " = {}", d.name);
            }
        }
        out.push('>');
    }
    out.push('(');
    for (i, p) in k.params.iter().enumerate() {
        sep(out, i);
        let _ = write!(out, "{}: ", p.name.name);
        ty(out, &p.ty);
    }
    out.push_str(") ");
    block(out, &k.body, 0);
    out.push('\n');
}

fn sep(out: &mut String, i: usize) {
    if i > 0 {
        out.push_str(", ");
    }
}

fn exprs(out: &mut String, es: &[Expr]) {
    for (i, e) in es.iter().enumerate() {
        sep(out, i);
        expr(out, e);
    }
}

fn attr(out: &mut String, a: &Attr) {
    let _ = write!(out, "@{}", a.name.name);
    match &a.kind {
        AttrKind::Autotune(entries) => {
            out.push('(');
            for (i, e) in entries.iter().enumerate() {
                sep(out, i);
                let (open, close) = match e.list {
                    ChoiceList::Brackets => ('[', ']'),
                    ChoiceList::Braces => ('{', '}'),
                };
                let _ = write!(out, "{} in {open}", e.name.name);
                exprs(out, &e.values);
                out.push(close);
            }
            out.push(')');
        }
        AttrKind::Launch(es) | AttrKind::Grid(es) => {
            out.push('(');
            exprs(out, es);
            out.push(')');
        }
        AttrKind::Where(e) | AttrKind::Flops(e) | AttrKind::Bytes(e) => {
            out.push('(');
            expr(out, e);
            out.push(')');
        }
        AttrKind::Aligned(pairs) => {
            out.push('(');
            for (i, (id, e)) in pairs.iter().enumerate() {
                sep(out, i);
                let _ = write!(out, "{} = ", id.name);
                expr(out, e);
            }
            out.push(')');
        }
        AttrKind::AllowTf32 => {}
        AttrKind::Unknown(raw) => {
            if !raw.is_empty() {
                let _ = write!(out, "({raw})");
            }
        }
    }
}

fn ty(out: &mut String, t: &TypeExpr) {
    match t {
        TypeExpr::Scalar(id) => out.push_str(&id.name),
        TypeExpr::Tensor { elem, dims, .. } => {
            let _ = write!(out, "tensor<{}>[", elem.name);
            for (i, d) in dims.iter().enumerate() {
                sep(out, i);
                match d {
                    DimExpr::Name(id) => out.push_str(&id.name),
                    DimExpr::Lit(v, _) => {
                        let _ = write!(out, "{v}");
                    }
                }
            }
            out.push(']');
        }
        TypeExpr::Tile { elem, dims, .. } => {
            let _ = write!(out, "tile<{}>[", elem.name);
            exprs(out, dims);
            out.push(']');
        }
    }
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn block(out: &mut String, b: &Block, level: usize) {
    out.push_str("{\n");
    for s in &b.stmts {
        indent(out, level + 1);
        stmt(out, s, level + 1);
        out.push('\n');
    }
    indent(out, level);
    out.push('}');
}

fn stmt(out: &mut String, s: &Stmt, level: usize) {
    match &s.kind {
        StmtKind::Let {
            name,
            mutable,
            ty: t,
            init,
        } => {
            out.push_str(if *mutable { "var " } else { "let " });
            out.push_str(&name.name);
            if let Some(t) = t {
                out.push_str(": ");
                ty(out, t);
            }
            if let Some(e) = init {
                out.push_str(" = ");
                expr(out, e);
            }
        }
        StmtKind::Assign { target, op, value } => {
            expr(out, target);
            out.push_str(match op {
                AssignOp::Set => " = ",
                AssignOp::Add => " += ",
                AssignOp::Sub => " -= ",
                AssignOp::Mul => " *= ",
                AssignOp::Div => " /= ",
            });
            expr(out, value);
        }
        StmtKind::Expr(e) => expr(out, e),
        StmtKind::For {
            unroll,
            var,
            iter,
            body,
        } => {
            out.push_str("for");
            if let Some(u) = unroll {
                out.push_str("<unroll ");
                expr_at(out, u, PREC_BITOR);
                out.push('>');
            }
            let _ = write!(out, " {} in ", var.name);
            expr(out, iter);
            out.push(' ');
            block(out, body, level);
        }
        StmtKind::While { cond, body } => {
            out.push_str("while ");
            expr(out, cond);
            out.push(' ');
            block(out, body, level);
        }
        StmtKind::If { cond, then, els } => {
            out.push_str("if ");
            expr(out, cond);
            out.push(' ');
            block(out, then, level);
            if let Some(e) = els {
                out.push_str(" else ");
                stmt(out, e, level);
            }
        }
        StmtKind::Block(b) => block(out, b, level),
        StmtKind::Break => out.push_str("break"),
        StmtKind::Continue => out.push_str("continue"),
    }
}

/// Prints `e`, parenthesized when its loosest operator binds less tightly than `min`.
fn expr_at(out: &mut String, e: &Expr, min: u8) {
    if prec(e) < min {
        out.push('(');
        expr(out, e);
        out.push(')');
    } else {
        expr(out, e);
    }
}

fn expr(out: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::Int(v) => {
            let _ = write!(out, "{v}");
        }
        // `{:?}` is the shortest text that reads back to the same f64, and always has a `.`
        // or an exponent, so it lexes as a float.
        ExprKind::Float(v) => {
            let _ = write!(out, "{v:?}");
        }
        ExprKind::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        ExprKind::Name(id) => out.push_str(&id.name),
        ExprKind::Field { base, field } => {
            postfix_base(out, base);
            let _ = write!(out, ".{}", field.name);
        }
        ExprKind::Unary { op, arg } => {
            out.push(match op {
                UnOp::Neg => '-',
                UnOp::Not => '!',
            });
            expr_at(out, arg, PREC_UNARY);
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let p = binop_prec(*op);
            // Left-associative; comparisons do not chain, so a comparison operand of a
            // comparison is parenthesized on both sides.
            let lhs_min = if p == PREC_CMP { p + 1 } else { p };
            expr_at(out, lhs, lhs_min);
            let _ = write!(out, " {} ", op.as_str());
            expr_at(out, rhs, p + 1);
        }
        ExprKind::Call { callee, args } => {
            let _ = write!(out, "{}(", callee.name);
            for (i, a) in args.iter().enumerate() {
                sep(out, i);
                if let Some(n) = &a.name {
                    let _ = write!(out, "{} = ", n.name);
                }
                expr(out, &a.value);
            }
            out.push(')');
        }
        ExprKind::List(items) => {
            out.push('[');
            exprs(out, items);
            out.push(']');
        }
        ExprKind::Index {
            base,
            indices,
            options,
        } => {
            postfix_base(out, base);
            out.push('[');
            for (i, ix) in indices.iter().enumerate() {
                sep(out, i);
                index(out, ix);
            }
            for o in options {
                let _ = write!(out, ", {} = ", o.name.name);
                expr(out, &o.value);
            }
            out.push(']');
        }
    }
}

/// The base of `.field` or `[...]`: operators and literals are parenthesized (`(1).x` is not
/// the float `1.`).
fn postfix_base(out: &mut String, base: &Expr) {
    let literal = matches!(base.kind, ExprKind::Int(_) | ExprKind::Float(_));
    if literal || prec(base) < PREC_POSTFIX {
        out.push('(');
        expr(out, base);
        out.push(')');
    } else {
        expr(out, base);
    }
}

fn index(out: &mut String, ix: &IndexExpr) {
    match ix {
        IndexExpr::At(e) => expr(out, e),
        IndexExpr::Span { start, len, .. } => {
            expr(out, start);
            out.push_str(" :+ ");
            expr(out, len);
        }
        IndexExpr::Range { start, end, .. } => {
            if let Some(s) = start {
                expr(out, s);
                out.push(' ');
            }
            out.push(':');
            if let Some(e) = end {
                out.push(' ');
                expr(out, e);
            }
        }
    }
}
