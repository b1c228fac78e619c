//! The knob `ROW_SPLIT=k` (bench/NOTES.md r22): one program instance (`ctx.block`) runs on a
//! cluster of k blocks, each holding one k-th of every row tile, so that a row too wide for one
//! multiprocessor to hold twice (an f32 row of 50k fills a register file) spreads over k of
//! them, and each multiprocessor holds parts of several rows at once.
//!
//! A rewrite of the checked kernel before planning, so that every later stage (layouts, packed
//! rows, masks, loads and stores) sees an ordinary kernel of narrower tiles:
//! - every tile of the kernel is `[W]` or `[1, W]` for one width W, a multiple of 8k; each
//!   becomes `[W / k]`, block `rank` (`blockIdx.x % k`, its rank in the cluster) taking the
//!   columns `off = rank * W / k ..` of it;
//! - accesses `X[.., c :+ W]` read and write `X[.., c + off :+ W / k]`; `arange(W)` is
//!   `off + arange(W / k)`, and a comparison of an index tile with a scalar moves `off` to the
//!   scalar's side (`arange(W) < N` is `arange(W / k) < N - off`), the form the row loads'
//!   masks are recognized in;
//! - `ctx.block.x` and `ctx.grid.x` count clusters (`blockIdx.x / k`, `gridDim.x / k`);
//! - per-thread code runs in every block of the cluster alike (its values are the same in
//!   each: whole-tile reductions are combined across the cluster in rank order), so its
//!   scalar stores and atomics run in rank 0 alone.
//!
//! The emitter adds the cluster's part: `__cluster_dims__(k, 1, 1)`, the launch's x grid times
//! k ([`crate::Emitted::row_split`]), and each whole-tile reduction's cluster step
//! (`ph::cluster_all`, cuda/phobos_cluster.cuh). The interpreter runs the kernel as written: the
//! split changes how an instance runs, never what it computes.

use phobos_ir::knobs::Knob;
use phobos_ir::{BinOp, Ctx, DType, Expr, ExprKind, Index, Kernel, Lit, Stmt, StmtKind, Ty};
use phobos_syntax::Span;
use std::fmt;

/// What ROW_SPLIT did.
#[derive(Clone, Debug, PartialEq)]
pub struct RowSplitRecord {
    /// The knob's value: blocks a cluster.
    pub blocks: u32,
    pub split: Result<SplitRow, NoRowSplit>,
}

/// The split applied: tiles of `width` held `part` columns a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitRow {
    pub width: i64,
    pub part: i64,
}

/// Why an instance runs on one block after all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoRowSplit {
    /// The kernel has no tile.
    NoTile,
    /// A tile that is not `[W]` or `[1, W]` for the kernel's one width (the first width seen).
    Shape { width: i64, shape: Vec<i64> },
    /// The width is not a multiple of 8 columns a block.
    Indivisible { width: i64 },
    /// A construct that needs a whole tile in one block.
    Construct(Whole),
    /// Another knob already remaps the blocks or stages the row.
    Knob(Knob),
    /// The knob's value is not 2, 4 or 8.
    Blocks,
    /// The target has no thread block clusters (before sm_90).
    Target,
}

/// Constructs that need a whole tile in one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whole {
    Dot,
    Transpose,
    /// A reshape other than between `[W]` and `[1, W]`.
    Reshape,
    /// One element of a tile (`t[i]`).
    TileGet,
    /// A reduction along an axis (`sum(t, axis = 1)`).
    AxisReduce,
    /// An atomic whose old value the thread reads: it must run once, and every block reads it.
    AtomicOld,
    /// A read of a tensor the kernel writes: another block of the cluster may hold the element.
    ReadBack,
}

impl fmt::Display for Whole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Whole::Dot => "a dot",
            Whole::Transpose => "a transpose",
            Whole::Reshape => "a reshape",
            Whole::TileGet => "an element of a tile",
            Whole::AxisReduce => "a reduction along an axis",
            Whole::AtomicOld => "an atomic whose old value is read",
            Whole::ReadBack => "a read of a tensor the kernel writes",
        })
    }
}

impl fmt::Display for RowSplitRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = self.blocks;
        match &self.split {
            Ok(s) => write!(
                f,
                "ROW_SPLIT={k}: each instance on a cluster of {k} blocks (__cluster_dims__({k}, 1, 1)), \
                 tiles of {} columns held {} a block, whole-tile reductions combined across the cluster",
                s.width, s.part
            ),
            Err(why) => {
                write!(f, "ROW_SPLIT={k} not applied (one block an instance): ")?;
                match why {
                    NoRowSplit::NoTile => f.write_str("the kernel has no tile"),
                    NoRowSplit::Shape { width, shape } => write!(
                        f,
                        "a tile of shape {shape:?} where every tile must be [{width}] or [1, {width}]"
                    ),
                    NoRowSplit::Indivisible { width } => write!(
                        f,
                        "{width} columns are not a multiple of {} (8 columns a block)",
                        8 * k
                    ),
                    NoRowSplit::Construct(w) => write!(f, "{w} needs the whole tile in one block"),
                    NoRowSplit::Knob(n) => write!(f, "{} is applied", n.name()),
                    NoRowSplit::Blocks => f.write_str("the clusters are of 2, 4 or 8 blocks"),
                    NoRowSplit::Target => f.write_str("the target has no thread block clusters"),
                }
            }
        }
    }
}

/// Knobs whose forms remap blocks or stage rows: ROW_SPLIT applies without them.
const EXCLUSIVE: [Knob; 8] = [
    Knob::RowSmem,
    Knob::RowsAhead,
    Knob::Persist,
    Knob::GroupM,
    Knob::Cluster,
    Knob::Producer,
    Knob::SplitK,
    Knob::Schedule,
];

/// ROW_SPLIT's record and, applied, the rewritten kernel for `target`; `None` where the kernel
/// does not declare it above 1.
pub fn split_rows(k: &Kernel, target: &crate::Target) -> Option<(RowSplitRecord, Option<Kernel>)> {
    let blocks = Knob::RowSplit.get(&k.point).filter(|&v| v > 1)?;
    let record = |split| RowSplitRecord {
        blocks: blocks.clamp(0, u32::MAX as i64) as u32,
        split,
    };
    if ![2, 4, 8].contains(&blocks) {
        return Some((record(Err(NoRowSplit::Blocks)), None));
    }
    if !target.clusters() {
        return Some((record(Err(NoRowSplit::Target)), None));
    }
    let remapping = |n: &Knob| match n {
        Knob::Producer | Knob::SplitK | Knob::GroupM | Knob::Cluster | Knob::Schedule => {
            n.get(&k.point).is_some_and(|v| v > 1)
        }
        _ => n.get(&k.point).is_some_and(|v| v > 0),
    };
    if let Some(n) = EXCLUSIVE.iter().find(|n| remapping(n)) {
        return Some((record(Err(NoRowSplit::Knob(*n))), None));
    }
    let width = match tile_width(k) {
        Ok(w) => w,
        Err(why) => return Some((record(Err(why)), None)),
    };
    if width % (8 * blocks) != 0 {
        return Some((record(Err(NoRowSplit::Indivisible { width })), None));
    }
    let split = SplitRow {
        width,
        part: width / blocks,
    };
    let r = Rewrite { split, blocks };
    let mut out = k.clone();
    for l in &mut out.locals {
        l.ty = r.ty(&l.ty);
    }
    out.body = r.stmts(&k.body);
    Some((record(Ok(split)), Some(out)))
}

/// The one width of the kernel's tiles, or why there is none.
fn tile_width(k: &Kernel) -> Result<i64, NoRowSplit> {
    let mut width = None;
    let mut bad = None;
    let mut check = |ty: &Ty| {
        let Ty::Tile(_, shape) = ty else { return };
        let w = match shape.as_slice() {
            [w] | [1, w] => *w,
            _ => {
                bad.get_or_insert(NoRowSplit::Shape {
                    width: width.unwrap_or(0),
                    shape: shape.clone(),
                });
                return;
            }
        };
        match width {
            None => width = Some(w),
            Some(first) if first != w => {
                bad.get_or_insert(NoRowSplit::Shape {
                    width: first,
                    shape: shape.clone(),
                });
            }
            Some(_) => {}
        }
    };
    for l in &k.locals {
        check(&l.ty);
    }
    let mut whole = None;
    phobos_ir::walk::exprs(&k.body, &mut |e| {
        check(&e.ty);
        let w = match &e.kind {
            ExprKind::Dot { .. } => Some(Whole::Dot),
            ExprKind::Transpose(_) => Some(Whole::Transpose),
            ExprKind::TileGet { .. } => Some(Whole::TileGet),
            ExprKind::Reduce { axis: Some(_), .. } => Some(Whole::AxisReduce),
            ExprKind::Reshape(a)
                if a.ty.shape().map(|s| s.len()) == e.ty.shape().map(|s| s.len()) =>
            {
                Some(Whole::Reshape)
            }
            _ => None,
        };
        if let Some(w) = w {
            whole.get_or_insert(w);
        }
    });
    let stored = phobos_ir::walk::stored(&k.body);
    phobos_ir::walk::stmts(&k.body, &mut |s| {
        if let StmtKind::Atomic { old: Some(_), .. } = &s.kind {
            whole.get_or_insert(Whole::AtomicOld);
        }
    });
    phobos_ir::walk::exprs(&k.body, &mut |e| {
        if let ExprKind::Load { tensor, .. } = &e.kind {
            if stored.contains(tensor) {
                whole.get_or_insert(Whole::ReadBack);
            }
        }
    });
    if let Some(w) = whole {
        return Err(NoRowSplit::Construct(w));
    }
    if let Some(b) = bad {
        return Err(b);
    }
    width.ok_or(NoRowSplit::NoTile)
}

struct Rewrite {
    split: SplitRow,
    blocks: i64,
}

fn int(v: i64, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Lit(Lit::Int(v)),
        ty: Ty::Scalar(DType::I32),
        uniform: true,
        span,
    }
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    let (ty, uniform, span) = (a.ty.clone(), a.uniform && b.uniform, a.span);
    Expr {
        kind: ExprKind::Binary(op, Box::new(a), Box::new(b)),
        ty,
        uniform,
        span,
    }
}

fn raw_block(span: Span) -> Expr {
    Expr {
        kind: ExprKind::Ctx(Ctx::Block(0)),
        ty: Ty::Scalar(DType::I32),
        uniform: true,
        span,
    }
}

impl Rewrite {
    fn ty(&self, t: &Ty) -> Ty {
        match t {
            Ty::Tile(d, shape) => {
                let mut s = shape.clone();
                if let Some(last) = s.last_mut() {
                    *last = self.split.part;
                }
                Ty::Tile(*d, s)
            }
            s => s.clone(),
        }
    }

    /// The block's rank in its cluster (`blockIdx.x % k`).
    fn rank(&self, span: Span) -> Expr {
        bin(BinOp::Rem, raw_block(span), int(self.blocks, span))
    }

    /// The block's first column of every tile (`rank * W / k`).
    fn offset(&self, span: Span) -> Expr {
        bin(BinOp::Mul, self.rank(span), int(self.split.part, span))
    }

    fn index(&self, i: &Index) -> Index {
        match i {
            Index::Span { start, len } if *len == self.split.width => {
                let start = self.expr(start);
                let start = match start.kind {
                    ExprKind::Lit(Lit::Int(0)) => self.offset(start.span),
                    _ => {
                        let span = start.span;
                        bin(BinOp::Add, start, self.offset(span))
                    }
                };
                Index::Span {
                    start,
                    len: self.split.part,
                }
            }
            Index::Span { start, len } => Index::Span {
                start: self.expr(start),
                len: *len,
            },
            Index::At(e) => Index::At(self.expr(e)),
        }
    }

    /// `arange(W / k)` in place of `e`, an `arange(W)`.
    fn part_arange(&self, e: &Expr) -> Expr {
        Expr {
            kind: ExprKind::Arange(self.split.part),
            ty: self.ty(&e.ty),
            ..e.clone()
        }
    }

    /// An index tile (`arange(W)`, `c + arange(W)`, `arange(W) + c`) at the block's columns
    /// less `off`: `None` for any other expression.
    fn index_tile(&self, e: &Expr) -> Option<Expr> {
        match &e.kind {
            ExprKind::Arange(n) if *n == self.split.width => Some(self.part_arange(e)),
            ExprKind::Binary(BinOp::Add, a, b) => {
                let (a, b) = match (a.ty.is_tile(), b.ty.is_tile()) {
                    (false, true) => (self.expr(a), self.index_tile(b)?),
                    (true, false) => (self.index_tile(a)?, self.expr(b)),
                    _ => return None,
                };
                Some(Expr {
                    kind: ExprKind::Binary(BinOp::Add, Box::new(a), Box::new(b)),
                    ty: self.ty(&e.ty),
                    ..e.clone()
                })
            }
            _ => None,
        }
    }

    fn expr(&self, e: &Expr) -> Expr {
        let ty = self.ty(&e.ty);
        let b = |x: &Expr| Box::new(self.expr(x));
        let kind = match &e.kind {
            ExprKind::Ctx(Ctx::Block(0)) => {
                return bin(BinOp::Div, raw_block(e.span), int(self.blocks, e.span));
            }
            ExprKind::Ctx(Ctx::Grid(0)) => {
                return bin(BinOp::Div, e.clone(), int(self.blocks, e.span));
            }
            ExprKind::Arange(n) if *n == self.split.width => {
                let a = self.part_arange(e);
                return Expr {
                    kind: ExprKind::Binary(BinOp::Add, Box::new(self.offset(e.span)), Box::new(a)),
                    ty,
                    uniform: true,
                    span: e.span,
                };
            }
            ExprKind::Binary(op, x, y)
                if matches!(
                    op,
                    BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
                ) && !y.ty.is_tile() =>
            {
                match self.index_tile(x) {
                    Some(x) => {
                        let y = self.expr(y);
                        let span = y.span;
                        let y = bin(BinOp::Sub, y, self.offset(span));
                        ExprKind::Binary(*op, Box::new(x), Box::new(y))
                    }
                    None => ExprKind::Binary(*op, b(x), b(y)),
                }
            }
            ExprKind::Lit(_)
            | ExprKind::Dim(_)
            | ExprKind::Param(_)
            | ExprKind::Local(_)
            | ExprKind::Ctx(_)
            | ExprKind::Arange(_) => e.kind.clone(),
            ExprKind::Unary(op, a) => ExprKind::Unary(*op, b(a)),
            ExprKind::Binary(op, x, y) => ExprKind::Binary(*op, b(x), b(y)),
            ExprKind::Math(f, a) => ExprKind::Math(*f, b(a)),
            ExprKind::MathN(f, args) => {
                ExprKind::MathN(*f, args.iter().map(|a| self.expr(a)).collect())
            }
            ExprKind::Select(c, x, y) => ExprKind::Select(b(c), b(x), b(y)),
            ExprKind::Cast(a) => ExprKind::Cast(b(a)),
            ExprKind::Cdiv(x, y) => ExprKind::Cdiv(b(x), b(y)),
            ExprKind::Broadcast(a) => ExprKind::Broadcast(b(a)),
            ExprKind::Load {
                tensor,
                index,
                cache,
            } => ExprKind::Load {
                tensor: *tensor,
                index: index.iter().map(|i| self.index(i)).collect(),
                cache: *cache,
            },
            ExprKind::TileGet { tile, index } => ExprKind::TileGet {
                tile: b(tile),
                index: index.iter().map(|i| self.expr(i)).collect(),
            },
            ExprKind::Reduce { op, axis, arg } => ExprKind::Reduce {
                op: *op,
                axis: *axis,
                arg: b(arg),
            },
            ExprKind::Dot {
                a,
                b: y,
                trans_b,
                tf32,
            } => ExprKind::Dot {
                a: b(a),
                b: b(y),
                trans_b: *trans_b,
                tf32: *tf32,
            },
            ExprKind::Transpose(a) => ExprKind::Transpose(b(a)),
            ExprKind::Reshape(a) => ExprKind::Reshape(b(a)),
        };
        Expr {
            kind,
            ty,
            uniform: e.uniform,
            span: e.span,
        }
    }

    fn stmts(&self, body: &[Stmt]) -> Vec<Stmt> {
        body.iter().map(|s| self.stmt(s)).collect()
    }

    /// `s` in rank 0 alone: a scalar store or atomic, the same in every block of the cluster.
    fn rank_zero(&self, s: Stmt) -> Stmt {
        let span = s.span;
        let cond = Expr {
            ty: Ty::Scalar(DType::Bool),
            ..bin(BinOp::Eq, self.rank(span), int(0, span))
        };
        Stmt {
            kind: StmtKind::If {
                cond,
                then_body: vec![s],
                else_body: vec![],
            },
            span,
        }
    }

    fn stmt(&self, s: &Stmt) -> Stmt {
        let kind = match &s.kind {
            StmtKind::Assign { local, value } => StmtKind::Assign {
                local: *local,
                value: self.expr(value),
            },
            StmtKind::Store {
                tensor,
                index,
                value,
                cache,
            } => {
                let scalar = !value.ty.is_tile();
                let out = Stmt {
                    kind: StmtKind::Store {
                        tensor: *tensor,
                        index: index.iter().map(|i| self.index(i)).collect(),
                        value: self.expr(value),
                        cache: *cache,
                    },
                    span: s.span,
                };
                return if scalar { self.rank_zero(out) } else { out };
            }
            StmtKind::Atomic {
                op,
                tensor,
                index,
                value,
                old,
            } => {
                let scalar = !value.ty.is_tile();
                let out = Stmt {
                    kind: StmtKind::Atomic {
                        op: *op,
                        tensor: *tensor,
                        index: index.iter().map(|i| self.index(i)).collect(),
                        value: self.expr(value),
                        old: *old,
                    },
                    span: s.span,
                };
                // (An atomic whose `old` is read prevents the split.)
                return if scalar { self.rank_zero(out) } else { out };
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                unroll,
                body,
            } => StmtKind::For {
                var: *var,
                start: self.expr(start),
                end: self.expr(end),
                step: self.expr(step),
                unroll: *unroll,
                body: self.stmts(body),
            },
            StmtKind::While { cond, body } => StmtKind::While {
                cond: self.expr(cond),
                body: self.stmts(body),
            },
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => StmtKind::If {
                cond: self.expr(cond),
                then_body: self.stmts(then_body),
                else_body: self.stmts(else_body),
            },
            StmtKind::Break => StmtKind::Break,
            StmtKind::Continue => StmtKind::Continue,
        };
        Stmt { kind, span: s.span }
    }
}
