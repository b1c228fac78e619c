//! The knob `ROWS_AHEAD=1` (with a row staged by `ROW_SMEM`): persistent blocks over the logical
//! grid, as `PERSIST` has them (`Walk::RoundRobin`), the staged row in two buffers, the next
//! logical block's row copied into one while this block's row is computed from the other
//! (`ph::load_row_smem_ahead`, cuda/phobos_rowsmem.cuh; bench/NOTES.md r18). The next row's
//! copy is issued before this one is waited on, so its address must be known from the logical
//! block index alone: the staged load's indices may read the block index, parameters,
//! dimensions and constants, and locals bound once to such values (substituted by their
//! definitions, [`block_index`]).
//!
//! `ROWS_AHEAD=2` (bench/NOTES.md r21) keeps the persistent blocks but lands the next row in ONE
//! buffer while this row is computed from registers (`ph::load_row_landed`,
//! cuda/phobos_rowland.cuh): the row's `let` (held in registers, ROW_SMEM=0) reads its elements
//! out of the buffer, and once every thread has, the next logical block's copy is issued into
//! it. A register file that holds one row and shared memory another: two rows a multiprocessor
//! where a row fills the registers (f32 rows of 50k) or computing out of shared memory costs more
//! than the row's bytes (ROWS_AHEAD=1, r18).

use super::row_smem::SMEM_LIMIT;
use super::RowSmemRecord;
use crate::layout::Layout;
use crate::Target;
use phobos_ir::knobs::Knob;
use phobos_ir::{Ctx, Expr, ExprKind, Index, Kernel, Lit, LocalId, ParamKind, Stmt, StmtKind};
use std::collections::BTreeMap;
use std::fmt;

/// What ROWS_AHEAD=1 did.
#[derive(Clone, Debug, PartialEq)]
pub struct RowsAheadRecord {
    pub ahead: Result<AheadRow, NoRowsAhead>,
    /// The knob's value: 1 or 2.
    pub knob: i64,
}

/// The row read a row ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AheadRow {
    pub local: LocalId,
    /// Bytes of one buffer (`StagedRow::bytes`, or `ph::row_land_bytes`).
    pub bytes: u32,
    pub form: AheadForm,
}

/// Where the row read ahead lives while it is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AheadForm {
    /// ROWS_AHEAD=1: staged by ROW_SMEM, computed out of shared memory, two buffers (this row's
    /// and the next one's).
    Staged,
    /// ROWS_AHEAD=2: one buffer the next row lands in; this row is read out of it into registers
    /// at its `let` and computed there.
    Landed,
}

/// Why each logical block stages its own row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoRowsAhead {
    /// No row is staged in shared memory (ROW_SMEM, or its record's reason).
    NotStaged,
    /// More than one row is staged.
    Several(usize),
    /// The staged `let` is inside a loop, or under a branch whose condition is not a constant:
    /// it does not run exactly once per logical block.
    NotOnce,
    /// The staged load's indices read something other than the logical block index,
    /// parameters, dimensions and constants (a tensor element, a thread index, a variable).
    Address,
    /// The grid has a z axis, or the kernel reads `ctx.block.z` / `ctx.grid.z`.
    Grid,
    /// The blocks are already remapped (GROUP_M, CLUSTER, a persistent GEMM, PERSIST, a
    /// producer warp).
    Remapped,
    /// Two buffers of this many bytes exceed a block's shared memory.
    TooLarge(u32),
    /// ROWS_AHEAD=2: no `let` of a masked row load `where(arange(n) < e, X[.., c :+ n], fill)`
    /// of a 2- or 4-byte type in a blocked row layout over whole warps (16-byte groups, or
    /// groups of one 2- or 4-byte word).
    NoRow,
    /// ROWS_AHEAD=2: ROW_SMEM stages the row in shared memory; landing reads it into registers.
    RowSmem,
    /// ROWS_AHEAD=2: bulk copies need sm_90.
    Target,
    /// ROWS_AHEAD=2: the one buffer of this many bytes exceeds a block's shared memory.
    Buffer(u32),
}

impl fmt::Display for NoRowsAhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoRowsAhead::NotStaged => write!(f, "no row is staged in shared memory"),
            NoRowsAhead::Several(n) => write!(f, "{n} rows are staged, not one"),
            NoRowsAhead::NotOnce => write!(
                f,
                "the staged row's `let` does not run once per logical block (a loop or a branch around it)"
            ),
            NoRowsAhead::Address => write!(
                f,
                "the staged row's address reads more than the block index, parameters and constants"
            ),
            NoRowsAhead::Grid => write!(f, "the grid has a z axis"),
            NoRowsAhead::Remapped => write!(f, "the blocks are already remapped"),
            NoRowsAhead::TooLarge(b) => {
                write!(f, "two buffers of {b} bytes exceed a block's shared memory")
            }
            NoRowsAhead::NoRow => write!(
                f,
                "no `let` of a masked row load of a 2- or 4-byte type in a blocked row layout of whole warps"
            ),
            NoRowsAhead::RowSmem => write!(
                f,
                "ROW_SMEM stages the row in shared memory; ROWS_AHEAD=2 lands a row held in registers"
            ),
            NoRowsAhead::Target => write!(f, "bulk copies need sm_90"),
            NoRowsAhead::Buffer(b) => {
                write!(f, "its buffer of {b} bytes exceeds a block's shared memory")
            }
        }
    }
}

impl fmt::Display for RowsAheadRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.ahead {
            Ok(a) if a.form == AheadForm::Landed => write!(
                f,
                "ROWS_AHEAD=2: persistent blocks over the logical grid, the next logical block's row landing in one buffer of {} bytes while this one is computed from registers (read out of the buffer at its `let`)",
                a.bytes
            ),
            Ok(a) => write!(
                f,
                "ROWS_AHEAD=1: persistent blocks over the logical grid, the staged row in two buffers of {} bytes, the next logical block's row copied while this one's is computed",
                a.bytes
            ),
            Err(why) => write!(
                f,
                "ROWS_AHEAD={} not applied (one block a row): {why}",
                self.knob
            ),
        }
    }
}

/// The record at ROWS_AHEAD=1 (`None` otherwise). `remapped`: the plan already remaps the
/// blocks (GROUP_M, CLUSTER, the persistent GEMM schedule, PERSIST, a producer warp).
pub(super) fn rows_ahead(
    k: &Kernel,
    target: &Target,
    layouts: &BTreeMap<LocalId, Layout>,
    row_smem: &BTreeMap<LocalId, RowSmemRecord>,
    remapped: bool,
) -> Option<RowsAheadRecord> {
    let knob = Knob::RowsAhead.get(&k.point)?;
    let ahead = match knob {
        1 => ahead(k, row_smem, remapped),
        2 => landed(k, target, layouts, row_smem, remapped),
        _ => return None,
    };
    Some(RowsAheadRecord { ahead, knob })
}

/// ROWS_AHEAD=2: the one masked row load `let` held in registers, landed a row ahead.
fn landed(
    k: &Kernel,
    target: &Target,
    layouts: &BTreeMap<LocalId, Layout>,
    row_smem: &BTreeMap<LocalId, RowSmemRecord>,
    remapped: bool,
) -> Result<AheadRow, NoRowsAhead> {
    if row_smem.values().any(|r| r.staged.is_ok()) {
        return Err(NoRowsAhead::RowSmem);
    }
    let mut rows = Vec::new();
    phobos_ir::walk::stmts(&k.body, &mut |s| {
        if let StmtKind::Assign { local, value } = &s.kind {
            if !k.locals[*local].mutable {
                if let Some(bytes) = land_bytes(k, layouts.get(local), value) {
                    rows.push((*local, bytes));
                }
            }
        }
    });
    let (local, bytes) = match rows[..] {
        [] => return Err(NoRowsAhead::NoRow),
        [one] => one,
        _ => return Err(NoRowsAhead::Several(rows.len())),
    };
    if target.cc() < 90 {
        return Err(NoRowsAhead::Target);
    }
    check_address(k, local, remapped)?;
    if bytes > SMEM_LIMIT {
        return Err(NoRowsAhead::Buffer(bytes));
    }
    Ok(AheadRow {
        local,
        bytes,
        form: AheadForm::Landed,
    })
}

/// The buffer's bytes (`ph::row_land_bytes`) when `value` is a masked row load of a 2- or
/// 4-byte type in `lay`, a blocked row layout over whole warps whose groups are 16 bytes or
/// one 2- or 4-byte word.
fn land_bytes(k: &Kernel, lay: Option<&Layout>, value: &Expr) -> Option<u32> {
    let (_, load, _) = super::filled_parts(value)?;
    let ExprKind::Load { tensor, .. } = &load.kind else {
        return None;
    };
    let ParamKind::Tensor { dtype, .. } = &k.params[*tensor].kind else {
        return None;
    };
    let size = dtype.size_bytes() as i64;
    let Some(&Layout::Blocked {
        r: 1,
        c,
        threads,
        vec,
    }) = lay
    else {
        return None;
    };
    let groups_ok = vec * size == 16 || vec * size <= 4;
    if !matches!(size, 2 | 4) || threads % 32 != 0 || !groups_ok {
        return None;
    }
    let bytes = 16 + (c * size + 15) / 16 * 16 + 16;
    Some(u32::try_from(bytes).unwrap_or(u32::MAX))
}

/// The row's `let` runs once a logical block, its address known from the block index, in a
/// kernel whose blocks the plan does not already remap and whose grid has no z axis.
fn check_address(k: &Kernel, local: LocalId, remapped: bool) -> Result<(), NoRowsAhead> {
    if remapped {
        return Err(NoRowsAhead::Remapped);
    }
    let reads_z = crate::visit::any_in_stmts(&k.body, &mut |e| {
        matches!(e.kind, ExprKind::Ctx(Ctx::Block(2) | Ctx::Grid(2)))
    });
    if reads_z || !matches!(k.grid[2].kind, ExprKind::Lit(Lit::Int(1))) {
        return Err(NoRowsAhead::Grid);
    }
    let value = once(&k.body, local).ok_or(NoRowsAhead::NotOnce)?;
    let (_, load, _) = super::filled_parts(value).expect("a row read ahead is a masked row load");
    let ExprKind::Load { index, .. } = &load.kind else {
        unreachable!("filled_parts returns a load")
    };
    if block_index(k, index).is_none() {
        return Err(NoRowsAhead::Address);
    }
    Ok(())
}

fn ahead(
    k: &Kernel,
    row_smem: &BTreeMap<LocalId, RowSmemRecord>,
    remapped: bool,
) -> Result<AheadRow, NoRowsAhead> {
    let staged: Vec<_> = (row_smem.values())
        .filter_map(|r| r.staged.as_ref().ok().map(|s| (r.local, s.bytes)))
        .collect();
    let (local, bytes) = match staged[..] {
        [] => return Err(NoRowsAhead::NotStaged),
        [one] => one,
        _ => return Err(NoRowsAhead::Several(staged.len())),
    };
    check_address(k, local, remapped)?;
    if 2 * u64::from(bytes) > u64::from(SMEM_LIMIT) {
        return Err(NoRowsAhead::TooLarge(bytes));
    }
    Ok(AheadRow {
        local,
        bytes,
        form: AheadForm::Staged,
    })
}

/// The value of `l`'s one assignment, when it runs once per run of `stmts`: reached through
/// `if`s of constant conditions only (the branch taken), under no loop, and assigned nowhere
/// else.
fn once(stmts: &[Stmt], l: LocalId) -> Option<&Expr> {
    let mut count = 0;
    phobos_ir::walk::stmts(stmts, &mut |s| {
        if matches!(&s.kind, StmtKind::Assign { local, .. } if *local == l) {
            count += 1;
        }
    });
    if count != 1 {
        return None;
    }
    reached(stmts, l)
}

fn reached(stmts: &[Stmt], l: LocalId) -> Option<&Expr> {
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { local, value } if *local == l => return Some(value),
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => match cond.kind {
                ExprKind::Lit(Lit::Bool(true)) => {
                    if let Some(v) = reached(then_body, l) {
                        return Some(v);
                    }
                }
                ExprKind::Lit(Lit::Bool(false)) => {
                    if let Some(v) = reached(else_body, l) {
                        return Some(v);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    None
}

/// `index` with every local replaced by its one definition, when the result reads only the
/// logical block index (x, y), the grid, the thread count, parameters, dimensions and constants:
/// the same value at any point of a logical block, so the emitter can compute it for the next
/// logical block before that block's statements run.
pub(crate) fn block_index(k: &Kernel, index: &[Index]) -> Option<Vec<Index>> {
    index
        .iter()
        .map(|i| match i {
            Index::At(e) => block_expr(k, e).map(Index::At),
            Index::Span { start, len } => {
                block_expr(k, start).map(|start| Index::Span { start, len: *len })
            }
        })
        .collect()
}

fn block_expr(k: &Kernel, e: &Expr) -> Option<Expr> {
    if e.ty.is_tile() {
        return None;
    }
    let kind = match &e.kind {
        ExprKind::Lit(_) | ExprKind::Dim(_) | ExprKind::Param(_) => e.kind.clone(),
        ExprKind::Ctx(Ctx::Block(0 | 1) | Ctx::Grid(0 | 1) | Ctx::Threads) => e.kind.clone(),
        ExprKind::Local(l) => {
            if k.locals[*l].mutable {
                return None;
            }
            let mut defs = Vec::new();
            phobos_ir::walk::stmts(&k.body, &mut |s| {
                if let StmtKind::Assign { local, value } = &s.kind {
                    if local == l {
                        defs.push(value.clone());
                    }
                }
            });
            let [def] = &defs[..] else {
                return None;
            };
            return block_expr(k, def);
        }
        ExprKind::Unary(op, a) => ExprKind::Unary(*op, Box::new(block_expr(k, a)?)),
        ExprKind::Math(f, a) => ExprKind::Math(*f, Box::new(block_expr(k, a)?)),
        ExprKind::Cast(a) => ExprKind::Cast(Box::new(block_expr(k, a)?)),
        ExprKind::Binary(op, a, b) => ExprKind::Binary(
            *op,
            Box::new(block_expr(k, a)?),
            Box::new(block_expr(k, b)?),
        ),
        ExprKind::Cdiv(a, b) => {
            ExprKind::Cdiv(Box::new(block_expr(k, a)?), Box::new(block_expr(k, b)?))
        }
        ExprKind::Select(c, a, b) => ExprKind::Select(
            Box::new(block_expr(k, c)?),
            Box::new(block_expr(k, a)?),
            Box::new(block_expr(k, b)?),
        ),
        ExprKind::MathN(f, args) => ExprKind::MathN(
            *f,
            args.iter()
                .map(|a| block_expr(k, a))
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    };
    Some(Expr { kind, ..e.clone() })
}
