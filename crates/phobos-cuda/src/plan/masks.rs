//! Masks that most tiles do not need: `x = where(cond, a, b)` in a loop (over the tiles of a
//! row, say) whose condition compares affine index tiles (`c + arange(BC) < N`, causal
//! `cols <= rows`) is emitted under a block-uniform test that holds when every element of the
//! condition does. (Outside loops a mask runs once; it is left as it is.) On such a tile the select is
//! skipped (`x = a`; nothing at all for `s = where(cond, s, -inf)`), and only the others (the
//! ragged last tile of a row, the causal tiles on the diagonal) run the per-element select.
//!
//! An index tile is `arange(n)` (as a row or a column, broadcast), a uniform scalar that cannot
//! change between its definition and the statement, or one of each added (`c + arange(BC)`,
//! `r + arange(BR)[:, None]`); immutable locals holding such a value are looked through. The
//! condition is a comparison (`<`, `<=`, `>`, `>=`) of two of them, or `&&` of such. Every
//! element of `a < b` holds when the largest element of `a` is below the smallest of `b`; the
//! test computes those extremes in 64 bits and also asks that the largest element of each side
//! fits an i32, so that the elements (32-bit sums) are the exact values the test reasons about.

use crate::emit::columns::{column_defs, Axis};
use crate::visit::bodies;
use phobos_ir::{BinOp, Ctx, Expr, ExprKind, Kernel, Lit, LocalId, Stmt, StmtKind};
use std::collections::BTreeMap;
use std::fmt;

/// One index tile's elements: `base + 0 ..= base + span` (`base` absent for 0).
#[derive(Clone, Debug, PartialEq)]
pub struct Extent {
    /// The uniform scalar part, when there is one.
    pub base: Option<Expr>,
    /// The largest index added to it (`n - 1` for `arange(n)`; 0 for a scalar).
    pub span: i64,
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

/// The masks of `k` that a block-uniform test can skip, in program order.
pub fn mask_records(k: &Kernel) -> Vec<MaskRecord> {
    let mut defs = column_defs(k, Axis::Cols);
    defs.extend(column_defs(k, Axis::Rows));
    let mut walk = Walk {
        k,
        defs: &defs,
        path: Vec::new(),
        out: Vec::new(),
    };
    walk.stmts(&k.body, 0, false);
    walk.out
}

struct Walk<'a> {
    k: &'a Kernel,
    defs: &'a BTreeMap<LocalId, Expr>,
    path: Vec<(usize, usize)>,
    out: Vec<MaskRecord>,
}

impl Walk<'_> {
    fn stmts(&mut self, stmts: &[Stmt], body_idx: usize, in_loop: bool) {
        for (i, s) in stmts.iter().enumerate() {
            self.path.push((body_idx, i));
            if let (StmtKind::Assign { local, value }, true) = (&s.kind, in_loop) {
                if let Some(r) = record(self.k, *local, value, &self.path, self.defs) {
                    self.out.push(r);
                }
            }
            let loop_body = matches!(s.kind, StmtKind::For { .. } | StmtKind::While { .. });
            for (b, body) in bodies(s).into_iter().enumerate() {
                self.stmts(body, b, in_loop || loop_body);
            }
            self.path.pop();
        }
    }
}

fn record(
    k: &Kernel,
    local: LocalId,
    value: &Expr,
    path: &[(usize, usize)],
    defs: &BTreeMap<LocalId, Expr>,
) -> Option<MaskRecord> {
    let ExprKind::Select(cond, a, _) = &value.kind else {
        return None;
    };
    if !value.ty.is_tile() {
        return None;
    }
    let mut bounds = Vec::new();
    condition(k, cond, defs, &mut bounds)?;
    Some(MaskRecord {
        path: path.to_vec(),
        local,
        keeps_local: matches!(a.kind, ExprKind::Local(l) if l == local),
        bounds,
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
        });
    }
    match &e.kind {
        ExprKind::Arange(n) => Some(Extent {
            base: None,
            span: n - 1,
        }),
        ExprKind::Reshape(a) | ExprKind::Broadcast(a) => extent(k, a, defs),
        ExprKind::Local(l) => extent(k, defs.get(l)?, defs),
        ExprKind::Binary(BinOp::Add, a, b) => {
            let (x, y) = (extent(k, a, defs)?, extent(k, b, defs)?);
            match (x.base, y.base) {
                (Some(base), None) | (None, Some(base)) => Some(Extent {
                    base: Some(base),
                    span: x.span + y.span,
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
        write!(
            f,
            "mask of `{}` (statement {}): {skipped} on tiles where {}",
            self.names.local,
            self.path.last().map_or(0, |p| p.1 + 1),
            tests.join(" && ")
        )
    }
}
