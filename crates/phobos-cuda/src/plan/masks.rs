//! Masks that most tiles do not need: `x = where(cond, a, b)` in a loop (over the tiles of a
//! row, say) whose condition compares affine index tiles (`c + arange(BC) < N`, causal
//! `cols <= rows`) is emitted under a block-uniform test that holds when every element of the
//! condition does. On such a tile the select is skipped (`x = a`; nothing at all for `s =
//! where(cond, s, -inf)`), and only the others (the ragged last tile of a row, the causal tiles
//! on the diagonal) run the per-element select.
//!
//! Outside loops a mask runs once, over a tile that often reaches past the tensor (a row of
//! 8000 in a tile of 8192): there the test is each thread's, over the elements it holds
//! ([`MaskScope::Thread`]), so only the threads that hold an element past the edge run the
//! select (bench/NOTES.md r49). That needs the index tiles' axes and a blocked layout whose
//! registers' columns and rows are the thread's first plus constants; the unmasked value is
//! assigned first and the select then runs in place, so `cond` and the masked value must not
//! read the local.
//!
//! An index tile is `arange(n)` (as a row or a column, broadcast), a uniform scalar that cannot
//! change between its definition and the statement, or one of each added (`c + arange(BC)`,
//! `r + arange(BR)[:, None]`); immutable locals holding such a value are looked through. The
//! condition is a comparison (`<`, `<=`, `>`, `>=`) of two of them, or `&&` of such. Every
//! element of `a < b` holds when the largest element of `a` is below the smallest of `b`; the
//! test computes those extremes in 64 bits and also asks that the largest element of each side
//! fits an i32, so that the elements (32-bit sums) are the exact values the test reasons about.

use crate::emit::columns::{column_defs, is_row_index, Axis};
use crate::layout::Layout;
use crate::visit::{bodies, expr_reads_local};
use phobos_ir::knobs::Knob;
use phobos_ir::{BinOp, Ctx, DType, Expr, ExprKind, Kernel, Lit, LocalId, Stmt, StmtKind};
use std::collections::BTreeMap;
use std::fmt;

/// One index tile's elements: `base + 0 ..= base + span` (`base` absent for 0).
#[derive(Clone, Debug, PartialEq)]
pub struct Extent {
    /// The uniform scalar part, when there is one.
    pub base: Option<Expr>,
    /// The largest index added to it (`n - 1` for `arange(n)`; 0 for a scalar).
    pub span: i64,
    /// Where the index part runs in the tile: along its columns (`arange(n)`, `[1, n]`), its
    /// rows (`arange(n)[:, None]`), or None for a scalar or a reshape that is neither.
    pub axis: Option<Axis>,
}

/// Who decides that a mask is skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskScope {
    /// A block-uniform test on the whole tile's extremes (masks in loops).
    Block,
    /// Each thread's test on the extremes of the elements it holds (masks outside loops, over
    /// a blocked layout whose registers sit at constant offsets from the thread's first).
    Thread,
}

/// A comparison whose elements all hold when the test `lhs op rhs` on the extremes does.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub lhs: Extent,
    pub op: BinOp,
    pub rhs: Extent,
}

/// The plan's decision for one `where` statement whose mask can be skipped.
#[derive(Clone, Debug, PartialEq)]
pub struct MaskRecord {
    /// The assignment's path (as in `GemmMatch::path`).
    pub path: Vec<(usize, usize)>,
    /// The assigned local, and whether the unmasked value is that local itself (then the
    /// skipped form runs nothing).
    pub local: LocalId,
    pub keeps_local: bool,
    /// Every element of the condition holds when all of these do.
    pub bounds: Vec<Bound>,
    /// Block-uniform or per thread.
    pub scope: MaskScope,
    /// Names of the kernel's values, for the note (`Display`).
    names: Names,
}

#[derive(Clone, Debug, PartialEq)]
struct Names {
    local: String,
    dims: Vec<String>,
    params: Vec<String>,
    locals: Vec<String>,
}

/// The masks of `k` that a block-uniform (in loops) or per-thread (outside them) test can
/// skip, in program order.
pub fn mask_records(k: &Kernel, layouts: &BTreeMap<LocalId, Layout>) -> Vec<MaskRecord> {
    let mut defs = column_defs(k, Axis::Cols);
    defs.extend(column_defs(k, Axis::Rows));
    let mut walk = Walk {
        k,
        layouts,
        defs: &defs,
        path: Vec::new(),
        out: Vec::new(),
    };
    walk.stmts(&k.body, 0, false);
    walk.out
}

struct Walk<'a> {
    k: &'a Kernel,
    layouts: &'a BTreeMap<LocalId, Layout>,
    defs: &'a BTreeMap<LocalId, Expr>,
    path: Vec<(usize, usize)>,
    out: Vec<MaskRecord>,
}

impl Walk<'_> {
    fn stmts(&mut self, stmts: &[Stmt], body_idx: usize, in_loop: bool) {
        for (i, s) in stmts.iter().enumerate() {
            self.path.push((body_idx, i));
            if let StmtKind::Assign { local, value } = &s.kind {
                // PACK (a knob) holds 2-byte masked row loads packed, filled at the load
                // (`Emitter::packs`): their masks stay as they are.
                let packed = matches!(Knob::Pack.get(&self.k.point), Some(1..=4))
                    && matches!(value.ty.dtype(), DType::BF16 | DType::F16)
                    && super::row_smem::filled_parts(value).is_some();
                let scope = if in_loop {
                    Some(MaskScope::Block)
                } else if packed {
                    None
                } else {
                    (self.layouts.get(local))
                        .filter(|l| thread_offsets_constant(l))
                        .map(|_| MaskScope::Thread)
                };
                let r =
                    scope.and_then(|sc| record(self.k, *local, value, &self.path, self.defs, sc));
                self.out.extend(r);
            }
            let loop_body = matches!(s.kind, StmtKind::For { .. } | StmtKind::While { .. });
            for (b, body) in bodies(s).into_iter().enumerate() {
                self.stmts(body, b, in_loop || loop_body);
            }
            self.path.pop();
        }
    }
}

/// A blocked layout whose register step divides a row or a row divides it: each register's
/// column and row are the thread's first plus a constant (`ph::ThreadSpan`).
fn thread_offsets_constant(l: &Layout) -> bool {
    let Layout::Blocked {
        c, threads, vec, ..
    } = *l
    else {
        return false;
    };
    let step = threads as i64 * vec;
    c > 0 && step > 0 && (c % step == 0 || step % c == 0)
}

fn record(
    k: &Kernel,
    local: LocalId,
    value: &Expr,
    path: &[(usize, usize)],
    defs: &BTreeMap<LocalId, Expr>,
    scope: MaskScope,
) -> Option<MaskRecord> {
    let ExprKind::Select(cond, a, b) = &value.kind else {
        return None;
    };
    if !value.ty.is_tile() {
        return None;
    }
    let mut bounds = Vec::new();
    condition(k, cond, defs, &mut bounds)?;
    let keeps_local = matches!(a.kind, ExprKind::Local(l) if l == local);
    if scope == MaskScope::Thread {
        // Each side's thread extremes need its axis; the in-place select (the unmasked value
        // assigned first) needs a condition and a masked value that do not read the local.
        let sides = bounds.iter().flat_map(|b| [&b.lhs, &b.rhs]);
        if sides.clone().any(|x| x.span > 0 && x.axis.is_none())
            || (!keeps_local && (expr_reads_local(cond, local) || expr_reads_local(b, local)))
        {
            return None;
        }
    }
    Some(MaskRecord {
        path: path.to_vec(),
        local,
        keeps_local,
        bounds,
        scope,
        names: Names {
            local: k.locals[local].name.clone(),
            dims: k.dims.iter().map(|d| d.name.clone()).collect(),
            params: k.params.iter().map(|p| p.name.clone()).collect(),
            locals: k.locals.iter().map(|l| l.name.clone()).collect(),
        },
    })
}

/// The bounds under which every element of `cond` holds; None when `cond` is not a
/// conjunction of comparisons of index tiles.
fn condition(
    k: &Kernel,
    cond: &Expr,
    defs: &BTreeMap<LocalId, Expr>,
    out: &mut Vec<Bound>,
) -> Option<()> {
    match &cond.kind {
        ExprKind::Broadcast(c) => condition(k, c, defs, out),
        ExprKind::Local(l) => condition(k, defs.get(l)?, defs, out),
        ExprKind::Binary(BinOp::And, a, b) => {
            condition(k, a, defs, out)?;
            condition(k, b, defs, out)
        }
        ExprKind::Binary(op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge), a, b) => {
            let (lhs, rhs) = (extent(k, a, defs)?, extent(k, b, defs)?);
            // At least one side a tile (a scalar comparison is no mask).
            if lhs.span == 0 && rhs.span == 0 && !a.ty.is_tile() && !b.ty.is_tile() {
                return None;
            }
            out.push(Bound { lhs, op: *op, rhs });
            Some(())
        }
        _ => None,
    }
}

/// The extent of an i32 index tile (or scalar) `e`.
fn extent(k: &Kernel, e: &Expr, defs: &BTreeMap<LocalId, Expr>) -> Option<Extent> {
    if e.ty.dtype() != phobos_ir::DType::I32 {
        return None;
    }
    if !e.ty.is_tile() {
        return stable(k, e).then(|| Extent {
            base: Some(e.clone()),
            span: 0,
            axis: None,
        });
    }
    match &e.kind {
        ExprKind::Arange(n) => Some(Extent {
            base: None,
            span: n - 1,
            axis: Some(Axis::Cols),
        }),
        // `arange(n)[:, None]` runs along the rows; `[n]` to `[1, n]` and broadcasts keep the
        // axis; another reshape keeps the elements but not where they sit.
        ExprKind::Reshape(a) => {
            let x = extent(k, a, defs)?;
            let shape = e.ty.shape().unwrap_or(&[]);
            let axis = if is_row_index(e, a) {
                Some(Axis::Rows)
            } else if a.ty.shape().unwrap_or(&[]).len() == 1 && shape.len() == 2 && shape[0] == 1 {
                x.axis
            } else {
                None
            };
            Some(Extent { axis, ..x })
        }
        ExprKind::Broadcast(a) => extent(k, a, defs),
        ExprKind::Local(l) => extent(k, defs.get(l)?, defs),
        ExprKind::Binary(BinOp::Add, a, b) => {
            let (x, y) = (extent(k, a, defs)?, extent(k, b, defs)?);
            match (x.base, y.base) {
                (Some(base), None) | (None, Some(base)) => Some(Extent {
                    base: Some(base),
                    span: x.span + y.span,
                    axis: x.axis.or(y.axis),
                }),
                // Two scalar parts, or two index parts (sums of index tiles of different
                // axes), are left alone.
                _ => None,
            }
        }
        _ => None,
    }
}

/// A uniform scalar whose value cannot change between a definition and a later use.
fn stable(k: &Kernel, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(Lit::Int(_)) | ExprKind::Dim(_) | ExprKind::Param(_) => true,
        ExprKind::Ctx(c) => matches!(c, Ctx::Block(_) | Ctx::Grid(_)),
        ExprKind::Local(l) => !k.locals[*l].mutable && k.locals[*l].uniform,
        ExprKind::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => {
            stable(k, a) && stable(k, b)
        }
        _ => false,
    }
}

impl Bound {
    /// The extremes the test compares: the largest of the left side and the smallest of the
    /// right for `<`/`<=`, the other way round for `>`/`>=`, as (left, right) offsets from the
    /// bases (the smallest element is the base itself).
    pub fn offsets(&self) -> (i64, i64) {
        match self.op {
            BinOp::Lt | BinOp::Le => (self.lhs.span, 0),
            _ => (0, self.rhs.span),
        }
    }
}

impl Names {
    fn expr(&self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Lit(Lit::Int(i)) => i.to_string(),
            ExprKind::Dim(d) => self.dims.get(*d).cloned().unwrap_or_default(),
            ExprKind::Param(p) => self.params.get(*p).cloned().unwrap_or_default(),
            ExprKind::Local(l) => self.locals.get(*l).cloned().unwrap_or_default(),
            ExprKind::Ctx(Ctx::Block(a)) => format!("ctx.block.{}", axis(*a)),
            ExprKind::Ctx(Ctx::Grid(a)) => format!("ctx.grid.{}", axis(*a)),
            ExprKind::Binary(op, a, b) => {
                format!("({} {} {})", self.expr(a), op.symbol(), self.expr(b))
            }
            _ => "..".into(),
        }
    }

    fn side(&self, x: &Extent, offset: i64) -> String {
        match (&x.base, offset) {
            (Some(b), 0) => self.expr(b),
            (Some(b), o) => format!("{} + {o}", self.expr(b)),
            (None, o) => o.to_string(),
        }
    }
}

fn axis(a: u8) -> char {
    (b'x' + a) as char
}

impl fmt::Display for MaskRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tests: Vec<String> = (self.bounds.iter())
            .map(|b| {
                let (l, r) = b.offsets();
                format!(
                    "{} {} {}",
                    self.names.side(&b.lhs, l),
                    b.op.symbol(),
                    self.names.side(&b.rhs, r)
                )
            })
            .collect();
        let skipped = if self.keeps_local {
            "skipped"
        } else {
            "replaced by its unmasked value"
        };
        let statement = self.path.last().map_or(0, |p| p.1 + 1);
        if self.scope == MaskScope::Thread {
            // The condition on each element, by its column or row.
            let side = |x: &Extent| {
                let index = match x.axis {
                    Some(Axis::Cols) if x.span > 0 => Some("col"),
                    Some(Axis::Rows) if x.span > 0 => Some("row"),
                    _ => None,
                };
                match (&x.base, index) {
                    (Some(b), Some(i)) => format!("{} + {i}", self.names.expr(b)),
                    (Some(b), None) => self.names.expr(b),
                    (None, Some(i)) => i.to_string(),
                    (None, None) => "0".into(),
                }
            };
            let conds: Vec<String> = (self.bounds.iter())
                .map(|b| format!("{} {} {}", side(&b.lhs), b.op.symbol(), side(&b.rhs)))
                .collect();
            return write!(
                f,
                "mask of `{}` (statement {statement}): {skipped} in the threads whose every element has {}",
                self.names.local,
                conds.join(" && ")
            );
        }
        write!(
            f,
            "mask of `{}` (statement {statement}): {skipped} on tiles where {}",
            self.names.local,
            tests.join(" && ")
        )
    }
}
