//! Walks over a kernel's IR: every expression (indices, conditions and loop bounds included)
//! and the tensors it stores to. Hosts use it to decide which outputs to poison and which
//! tolerance a comparison needs.

use crate::{DType, Expr, ExprKind, Index, Kernel, ParamId, Stmt, StmtKind};
use std::collections::BTreeSet;

/// Calls `f` on every expression of `body`, outer expressions before their operands, in
/// program order (a loop's bounds before its body).
pub fn exprs(body: &[Stmt], f: &mut dyn FnMut(&Expr)) {
    stmts(body, &mut |s| stmt_exprs(s, f));
}

/// Calls `f` on every statement of `body`, nested ones included, in program order.
pub fn stmts(body: &[Stmt], f: &mut dyn FnMut(&Stmt)) {
    for s in body {
        f(s);
        match &s.kind {
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => stmts(body, f),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                stmts(then_body, f);
                stmts(else_body, f);
            }
            StmtKind::Assign { .. }
            | StmtKind::Store { .. }
            | StmtKind::Atomic { .. }
            | StmtKind::Break
            | StmtKind::Continue => {}
        }
    }
}

/// Calls `f` on the expressions of one statement and their operands, not on those of the
/// statements nested in it.
pub fn stmt_exprs(s: &Stmt, f: &mut dyn FnMut(&Expr)) {
    match &s.kind {
        StmtKind::Assign { value, .. } => expr(value, f),
        StmtKind::Store { index, value, .. } | StmtKind::Atomic { index, value, .. } => {
            indices(index, f);
            expr(value, f);
        }
        StmtKind::For {
            start, end, step, ..
        } => {
            for e in [start, end, step] {
                expr(e, f);
            }
        }
        StmtKind::While { cond, .. } | StmtKind::If { cond, .. } => expr(cond, f),
        StmtKind::Break | StmtKind::Continue => {}
    }
}

/// The tensors `body` stores to (atomics included).
pub fn stored(body: &[Stmt]) -> BTreeSet<ParamId> {
    let mut out = BTreeSet::new();
    stmts(body, &mut |s| {
        if let StmtKind::Store { tensor, .. } | StmtKind::Atomic { tensor, .. } = &s.kind {
            out.insert(*tensor);
        }
    });
    out
}

/// The tensors `body` updates with atomics: they are read as well as written, so their
/// contents before the launch matter (a host must not poison them).
pub fn atomic_targets(body: &[Stmt]) -> BTreeSet<ParamId> {
    let mut out = BTreeSet::new();
    stmts(body, &mut |s| {
        if let StmtKind::Atomic { tensor, .. } = &s.kind {
            out.insert(*tensor);
        }
    });
    out
}

fn indices(index: &[Index], f: &mut dyn FnMut(&Expr)) {
    for i in index {
        match i {
            Index::At(e) | Index::Span { start: e, .. } => expr(e, f),
        }
    }
}

/// Calls `f` on `e`, then on its operands (indices included), recursively.
pub fn expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Load { index, .. } => indices(index, f),
        ExprKind::Unary(_, a)
        | ExprKind::Math(_, a)
        | ExprKind::Cast(a)
        | ExprKind::Broadcast(a)
        | ExprKind::Transpose(a)
        | ExprKind::Reshape(a)
        | ExprKind::Reduce { arg: a, .. } => expr(a, f),
        ExprKind::Binary(_, a, b) | ExprKind::Cdiv(a, b) | ExprKind::Dot { a, b, .. } => {
            expr(a, f);
            expr(b, f);
        }
        ExprKind::Select(c, a, b) => {
            for x in [c, a, b] {
                expr(x, f);
            }
        }
        ExprKind::MathN(_, args) => args.iter().for_each(|a| expr(a, f)),
        ExprKind::TileGet { tile, index } => {
            expr(tile, f);
            index.iter().for_each(|i| expr(i, f));
        }
        ExprKind::Lit(_)
        | ExprKind::Dim(_)
        | ExprKind::Param(_)
        | ExprKind::Local(_)
        | ExprKind::Ctx(_)
        | ExprKind::Arange(_) => {}
    }
}

/// Whether a `dot` of `kernel` runs in reduced precision on the tensor cores, and which: TF32
/// (a `tf32` operand or `@allow_tf32`: the hardware truncates f32 operands to TF32, the
/// interpreter rounds them to nearest) or 8-bit floats (Hopper accumulates fp8 products in fewer
/// bits than f32). Outputs of such kernels are compared at the TF32 tolerance, not their own.
pub fn reduced_precision_dot(kernel: &Kernel) -> Option<&'static str> {
    let mut found = None;
    exprs(&kernel.body, &mut |e| {
        if let ExprKind::Dot { a, b, tf32, .. } = &e.kind {
            let (ta, tb) = (a.ty.dtype(), b.ty.dtype());
            if *tf32 || ta == DType::Tf32 || tb == DType::Tf32 {
                found = Some("TF32 dot");
            } else if [ta, tb]
                .iter()
                .any(|t| matches!(t, DType::F8E4M3 | DType::F8E5M2))
                && found.is_none()
            {
                found = Some("fp8 dot");
            }
        }
    });
    found
}

/// The tolerance an output of `kernel` of type `dtype` is compared at: the type's own
/// ([`DType::tolerance`]), widened to TF32's for floats when [`reduced_precision_dot`] finds one.
pub fn output_tolerance(kernel: &Kernel, dtype: DType) -> f64 {
    let own = dtype.tolerance();
    if dtype.is_float() && reduced_precision_dot(kernel).is_some() {
        own.max(DType::Tf32.tolerance())
    } else {
        own
    }
}

/// Why the blocks of a launch may depend on each other (see [`blocks_independent`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockDependence {
    /// The kernel loads from a tensor it also stores to, so a block may read an element
    /// another block wrote.
    ReadsWritten { tensor: String },
    /// The kernel updates a tensor with atomics: blocks combine their updates in it, so a
    /// subset of the blocks leaves other values than the whole launch.
    Atomics { tensor: String },
}

impl std::fmt::Display for BlockDependence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlockDependence::ReadsWritten { tensor } => {
                write!(f, "it reads `{tensor}`, which it also writes")
            }
            BlockDependence::Atomics { tensor } => {
                write!(f, "its blocks update `{tensor}` with atomics")
            }
        }
    }
}

/// The first reason, if any, why the blocks of a launch of `kernel` might not be independent;
/// `None` when each block computes what it stores from the inputs alone, so that any subset of
/// the grid's blocks, run by itself in any order, stores exactly what those blocks store in the
/// whole launch. Hosts check a sample of blocks only when this is `None`.
///
/// The language guarantees that blocks never communicate within a launch; what the IR lets us
/// see beyond that is conservative: a tensor both loaded and stored could carry one block's
/// results into another's, so it makes the blocks dependent even when each block reads only
/// what it writes itself. Any operation that makes blocks communicate (atomics) must be
/// classified here.
pub fn block_dependence(kernel: &Kernel) -> Option<BlockDependence> {
    let name = |p: ParamId| {
        kernel
            .params
            .get(p)
            .map_or_else(|| format!("#{p}"), |p| p.name.clone())
    };
    if let Some(&t) = atomic_targets(&kernel.body).iter().next() {
        return Some(BlockDependence::Atomics { tensor: name(t) });
    }
    let written = stored(&kernel.body);
    let mut read_written = None;
    exprs(&kernel.body, &mut |e| {
        if let ExprKind::Load { tensor, .. } = &e.kind {
            if read_written.is_none() && written.contains(tensor) {
                read_written = Some(*tensor);
            }
        }
    });
    read_written.map(|p| BlockDependence::ReadsWritten { tensor: name(p) })
}

/// Whether the blocks of a launch of `kernel` are independent ([`block_dependence`] finds no
/// reason they might not be): the one predicate hosts ask before checking a sample of blocks.
pub fn blocks_independent(kernel: &Kernel) -> bool {
    block_dependence(kernel).is_none()
}
