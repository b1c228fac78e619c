//! GEMM recognition: finds the main loops a strategy of [`crate::mainloop`] can replace.
//!
//! The recognized form (any equivalent one the IR produces):
//!
//! ```text
//! for k in range(k0, k1, TK) {          // TK a positive literal
//!   a = A[.., m0 :+ TM, k :+ TK]        // `var a = ..` (or the load inline in the dot)
//!   b = B[.., k :+ TK, n0 :+ TN]        // or B[.., n0 :+ TN, k :+ TK] with dot_t
//!   acc = acc + dot(a, b)               // `acc += dot(a, b)`; `dot(a, b) + acc` too
//! }
//! ```
//!
//! with `m0`, `n0`, `k0`, `k1` and the leading indices uniform and loop-invariant, `a`, `b`
//! used nowhere else, `acc` a `[TM, TN]` tile of the dot's accumulator type, and each operand's
//! two tile axes with one of them contiguous in memory.

use crate::visit::{assigned_locals, expr_reads_local, stmts_touch_local};
use phobos_ir::{
    DType, Expr, ExprKind, Index, Kernel, LocalId, MemOrder, ParamId, ParamKind, Stmt, StmtKind,
};
use std::collections::BTreeSet;

/// One operand of a recognized GEMM as the main loop reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmOperand {
    pub tensor: ParamId,
    pub dtype: DType,
    pub order: MemOrder,
    /// Leading `At` indices (batch): (axis, index).
    pub batch: Vec<(usize, Expr)>,
    /// The tensor axis of the m (or n) extent and of the k extent.
    pub mn_axis: usize,
    pub k_axis: usize,
    /// Start of the m (or n) span.
    pub mn_start: Expr,
    /// True when k is the contiguous axis (`p[mn * ld + k]`), false when m/n is.
    pub k_inner: bool,
}

/// A recognized GEMM main loop.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmMatch {
    /// Where the `for` statement is: from the kernel body down, (which body of the enclosing
    /// statement: 0 for loop bodies and `then`, 1 for `else`; index in that body).
    pub path: Vec<(usize, usize)>,
    pub acc: LocalId,
    pub acc_dtype: DType,
    pub k_var: LocalId,
    pub k_start: Expr,
    pub k_end: Expr,
    pub a: GemmOperand,
    pub b: GemmOperand,
    pub trans_b: bool,
    pub tf32: bool,
    pub tile_m: i64,
    pub tile_n: i64,
    pub tile_k: i64,
    /// Statements after the loop in the same body that read `acc` (the epilogue).
    pub epilogue: Vec<usize>,
}

/// Every recognized GEMM loop of the kernel, outermost first.
pub fn find_gemms(k: &Kernel) -> Vec<GemmMatch> {
    let mut out = Vec::new();
    walk(k, &k.body, 0, &mut vec![], &mut out);
    out
}

fn walk(
    k: &Kernel,
    stmts: &[Stmt],
    body_idx: usize,
    path: &mut Vec<(usize, usize)>,
    out: &mut Vec<GemmMatch>,
) {
    for (i, s) in stmts.iter().enumerate() {
        path.push((body_idx, i));
        if let Some(m) = match_loop(k, stmts, i, path) {
            out.push(m);
        } else {
            for (bi, b) in crate::visit::bodies(s).into_iter().enumerate() {
                walk(k, b, bi, path, out);
            }
        }
        path.pop();
    }
}

/// Matches `stmts[idx]` (a `for`) against the GEMM form.
pub fn match_loop(
    k: &Kernel,
    stmts: &[Stmt],
    idx: usize,
    path: &[(usize, usize)],
) -> Option<GemmMatch> {
    let StmtKind::For {
        var,
        start,
        end,
        step,
        body,
        ..
    } = &stmts[idx].kind
    else {
        return None;
    };
    let ExprKind::Lit(phobos_ir::Lit::Int(tk)) = step.kind else {
        return None;
    };
    if tk <= 0 || !start.uniform || !end.uniform {
        return None;
    }
    let mut in_body = BTreeSet::new();
    assigned_locals(body, &mut in_body);
    in_body.insert(*var);

    // The accumulator update is the last statement; everything before it assigns operands.
    let (last, operand_stmts) = body.split_last()?;
    let StmtKind::Assign { local: acc, value } = &last.kind else {
        return None;
    };
    let ExprKind::Binary(phobos_ir::BinOp::Add, x, y) = &value.kind else {
        return None;
    };
    let dot = match (&x.kind, &y.kind) {
        (ExprKind::Local(l), ExprKind::Dot { .. }) if l == acc => y,
        (ExprKind::Dot { .. }, ExprKind::Local(l)) if l == acc => x,
        _ => return None,
    };
    let ExprKind::Dot {
        a,
        b,
        trans_b,
        tf32,
    } = &dot.kind
    else {
        return None;
    };
    let acc_ty = &k.locals[*acc].ty;
    let (acc_dtype, acc_shape) = (acc_ty.dtype(), acc_ty.shape()?.to_vec());
    if acc_shape.len() != 2 || &dot.ty != acc_ty {
        return None;
    }
    // Operands: a local assigned exactly once in the body from a load, or the load itself.
    let mut used = BTreeSet::new();
    let mut operand = |e: &Expr| -> Option<(Expr, Option<LocalId>)> {
        match &e.kind {
            ExprKind::Local(l) => {
                let mut found = None;
                for s in operand_stmts {
                    if let StmtKind::Assign { local, value } = &s.kind {
                        if local == l {
                            if found.is_some() {
                                return None;
                            }
                            found = Some(value.clone());
                        }
                    }
                }
                used.insert(*l);
                Some((found?, Some(*l)))
            }
            ExprKind::Load { .. } => Some((e.clone(), None)),
            _ => None,
        }
    };
    let (a_load, a_local) = operand(a)?;
    let (b_load, b_local) = operand(b)?;
    if a_local.is_some() && a_local == b_local {
        return None;
    }
    // Nothing else in the body: only the operand assignments.
    for s in operand_stmts {
        match &s.kind {
            StmtKind::Assign { local, .. } if used.contains(local) => {}
            _ => return None,
        }
    }
    let tile_m = acc_shape[0];
    let tile_n = acc_shape[1];
    let a_op = operand_of(k, &a_load, *var, &in_body, tile_m, tk, false)?;
    let b_op = operand_of(k, &b_load, *var, &in_body, tile_n, tk, !*trans_b)?;
    if a_op.dtype != b_op.dtype || a_op.dtype.dot_acc() != Some(acc_dtype) {
        return None;
    }
    // The accumulator is read only by the update inside the loop; the operand locals nowhere
    // outside it.
    if operand_stmts.iter().any(|s| match &s.kind {
        StmtKind::Assign { value, .. } => expr_reads_local(value, *acc),
        _ => true,
    }) {
        return None;
    }
    for l in [a_local, b_local].into_iter().flatten() {
        if touched_outside(&k.body, path, l) {
            return None;
        }
    }
    let epilogue = (idx + 1..stmts.len())
        .filter(|&j| stmts_touch_local(&stmts[j..=j], *acc))
        .collect();
    Some(GemmMatch {
        path: path.to_vec(),
        acc: *acc,
        acc_dtype,
        k_var: *var,
        k_start: start.clone(),
        k_end: end.clone(),
        a: a_op,
        b: b_op,
        trans_b: *trans_b,
        tf32: *tf32,
        tile_m,
        tile_n,
        tile_k: tk,
        epilogue,
    })
}

/// `load` as an operand whose tile is `[mn, tk]` (`k_first`: `[tk, mn]`) along the loop.
fn operand_of(
    k: &Kernel,
    load: &Expr,
    var: LocalId,
    in_body: &BTreeSet<LocalId>,
    mn: i64,
    tk: i64,
    k_first: bool,
) -> Option<GemmOperand> {
    let ExprKind::Load { tensor, index, .. } = &load.kind else {
        return None;
    };
    let ParamKind::Tensor { dtype, dims, order } = &k.params[*tensor].kind else {
        return None;
    };
    let rank = index.len();
    if rank < 2 || dims.len() != rank {
        return None;
    }
    let invariant = |e: &Expr| e.uniform && !in_body.iter().any(|&l| expr_reads_local(e, l));
    let mut batch = Vec::new();
    for (axis, ix) in index[..rank - 2].iter().enumerate() {
        match ix {
            Index::At(e) if invariant(e) => batch.push((axis, e.clone())),
            _ => return None,
        }
    }
    let span = |ix: &Index| match ix {
        Index::Span { start, len } => Some((start.clone(), *len)),
        Index::At(_) => None,
    };
    let (s0, l0) = span(&index[rank - 2])?;
    let (s1, l1) = span(&index[rank - 1])?;
    let is_k = |e: &Expr| matches!(e.kind, ExprKind::Local(l) if l == var);
    let (mn_axis, k_axis, mn_start) = if k_first {
        (is_k(&s0) && l0 == tk && l1 == mn && invariant(&s1)).then_some((rank - 1, rank - 2, s1))?
    } else {
        (is_k(&s1) && l1 == tk && l0 == mn && invariant(&s0)).then_some((rank - 2, rank - 1, s0))?
    };
    // The contiguous axis: the last one row-major, the first one column-major.
    let contiguous = match order {
        MemOrder::RowMajor => rank - 1,
        MemOrder::ColMajor => 0,
    };
    let k_inner = if contiguous == k_axis {
        true
    } else if contiguous == mn_axis {
        false
    } else {
        return None;
    };
    Some(GemmOperand {
        tensor: *tensor,
        dtype: *dtype,
        order: *order,
        batch,
        mn_axis,
        k_axis,
        mn_start,
        k_inner,
    })
}

/// True when local `l` is read or assigned outside the statement at `path`.
fn touched_outside(body: &[Stmt], path: &[(usize, usize)], l: LocalId) -> bool {
    let (&(_, first), rest) = path.split_first().expect("path names a statement");
    body.iter().enumerate().any(|(i, s)| {
        if i != first {
            return stmts_touch_local(std::slice::from_ref(s), l);
        }
        if rest.is_empty() {
            return false;
        }
        // Inside the enclosing statement: its own expressions, and its bodies.
        crate::visit::stmt_exprs(s)
            .into_iter()
            .any(|e| expr_reads_local(e, l))
            || crate::visit::bodies(s)
                .into_iter()
                .enumerate()
                .any(|(bi, b)| {
                    if bi == rest[0].0 {
                        touched_outside(b, rest, l)
                    } else {
                        stmts_touch_local(b, l)
                    }
                })
    })
}
