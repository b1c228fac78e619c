//! The knob `ROW_SMEM` (with `PACK=4`): a `let` bound to a masked row load `where(arange(n) < e,
//! X[r, c :+ n], fill)` of a 2-byte float type staged in shared memory instead of registers
//! (`ph::load_row_smem_fill`, cuda/phobos_rowsmem.cuh). Its 16-byte-aligned interior arrives by
//! bulk copies completing on an mbarrier, so the whole row's bytes are in flight with no thread
//! waiting on them, and the registers the packed row took are free for a second block a
//! multiprocessor (bench/NOTES.md r15). A store of an element-wise value of the row that is the
//! last statement of the `let`'s block writes through the row's buffer (`ph::store_row_smem`):
//! the value never held whole in registers.

use crate::layout::Layout;
use crate::visit::{bodies, children, stmt_exprs, stmts_touch_local};
use crate::Target;
use phobos_ir::knobs::Knob;
use phobos_ir::{BinOp, DType, Expr, ExprKind, Kernel, LocalId, ReduceOp, Stmt, StmtKind};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Bytes of dynamic shared memory one block may take on sm_90 (227 KB), less a margin for the
/// scratch area of the kernel's reductions.
pub(super) const SMEM_LIMIT: u32 = 227 * 1024 - 1024;

/// What ROW_SMEM=1 did with one masked row load's `let`.
#[derive(Clone, Debug, PartialEq)]
pub struct RowSmemRecord {
    pub local: LocalId,
    pub staged: Result<StagedRow, NoRowSmem>,
    name: String,
}

impl RowSmemRecord {
    /// The name of the `let`'s local, as the notes give it.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A row staged in shared memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedRow {
    /// The buffer: its head (the mbarrier, 16 bytes; with `slabs`, an 8-byte mbarrier a group of
    /// every thread, in 16-byte units), one 16-byte chunk a group of every thread, and one more
    /// (`ph::smem_row_bytes`).
    pub bytes: u32,
    /// The path (as in `GemmMatch::path`) of the store that writes through the buffer.
    pub store: Option<Vec<(usize, usize)>>,
    /// ROW_SMEM=2 and every use of the row is a whole-row `max`, `min` or `sum` of an
    /// element-wise value of it, or the store through its buffer of such a value, blind to where
    /// an element lies: the row stays where its copy put it, masked in place, not realigned
    /// (`ph::smem_row_mask_in_place`); the store writes each thread's chunks straight from its
    /// registers when the destination's row starts at the same shift (`ph::smem_row_store_direct`).
    pub in_place: bool,
    /// In place and loaded once a block (not inside a loop, no ROWS_AHEAD): each group of every
    /// thread (a slab) lands on its own mbarrier, and the row's first use (the statement after
    /// its `let`, in the same block, that mentions it) reads each group after its slab's wait,
    /// so that pass runs under the copy (bench/NOTES.md r26). After that statement the row is
    /// landed (`ph::smem_row_landed`) and later uses read it with no waits. The path of that
    /// statement, as `store`'s.
    pub slabs: Option<Vec<(usize, usize)>>,
}

/// Why a masked row load stays in registers at ROW_SMEM=1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoRowSmem {
    /// The row is not held packed: PACK=4 is what packs (and fills) it.
    Pack,
    /// Not bf16 or f16.
    ElementType,
    /// Not a blocked row tile of 8-element groups over whole warps.
    Layout,
    /// The row's groups do not split evenly over the threads: a thread's groups past the tile
    /// would index the buffer from the row's start again (bench/NOTES.md r23b).
    Uneven,
    /// Bulk copies need sm_90.
    Target,
    /// The buffer exceeds a block's shared memory.
    TooLarge(u32),
}

impl NoRowSmem {
    fn why(self) -> String {
        match self {
            NoRowSmem::Pack => "the row is held packed and filled only at PACK=4".into(),
            NoRowSmem::ElementType => "its element type is not bf16 or f16".into(),
            NoRowSmem::Layout => {
                "its layout is not a blocked row of 8-element groups over whole warps".into()
            }
            NoRowSmem::Uneven => "its 8-element groups do not split evenly over the threads".into(),
            NoRowSmem::Target => "bulk copies need sm_90".into(),
            NoRowSmem::TooLarge(b) => {
                format!("its buffer of {b} bytes exceeds a block's shared memory")
            }
        }
    }
}

impl fmt::Display for RowSmemRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.staged {
            Ok(s) => write!(
                f,
                "ROW_SMEM=1: {} staged in shared memory ({} bytes: its 16-byte interior by bulk \
                 copies on an mbarrier, its ends by ordinary loads), read a 16-byte chunk a group; {}{}{}",
                self.name,
                s.bytes,
                if s.store.is_some() {
                    "its last statement's store writes through the buffer"
                } else {
                    "no store writes through the buffer (none is its block's last statement, element-wise in it)"
                },
                match (s.in_place, s.store.is_some()) {
                    (true, false) => "; ROW_SMEM=2: its uses are whole-row max, min or sum, so it is masked in place, not realigned",
                    (true, true) => "; ROW_SMEM=2: its uses are whole-row max, min or sum and the store of a position-blind value, so it is masked in place, not realigned, and stored from the registers where the destination's shift is the row's",
                    (false, _) => "",
                },
                if s.slabs.is_some() {
                    "; loaded once a block, each group of every thread lands on its own mbarrier, waited on by the first use's reads"
                } else {
                    ""
                }
            ),
            Err(why) => write!(
                f,
                "ROW_SMEM=1 not applied to {} (held in registers): {}",
                self.name,
                why.why()
            ),
        }
    }
}

/// The parts of `where(arange(n) < e, load, fill)` (a column mask over a tile load of the mask's
/// shape, an i32 scalar bound, a scalar fill): (e, the load, fill).
pub(crate) fn filled_parts(value: &Expr) -> Option<(&Expr, &Expr, &Expr)> {
    let ExprKind::Select(c, a, b) = &value.kind else {
        return None;
    };
    let ExprKind::Binary(BinOp::Lt, x, e) = &c.kind else {
        return None;
    };
    let ExprKind::Arange(_) = x.kind else {
        return None;
    };
    // The fill: a scalar, broadcast to the tile by the checker.
    let b = match &b.kind {
        ExprKind::Broadcast(s) if !s.ty.is_tile() => s.as_ref(),
        _ => b.as_ref(),
    };
    let load = matches!(a.kind, ExprKind::Load { .. });
    let same_shape = x.ty.shape() == a.ty.shape();
    if !load
        || !same_shape
        || e.ty.is_tile()
        || b.ty.is_tile()
        || !matches!(e.ty.dtype(), DType::I32)
    {
        return None;
    }
    Some((e, a, b))
}

/// The records of `k`'s masked row loads at ROW_SMEM=1, by local (none otherwise).
pub fn row_smem_records(
    k: &Kernel,
    target: &Target,
    layouts: &BTreeMap<LocalId, Layout>,
) -> BTreeMap<LocalId, RowSmemRecord> {
    let mut out = BTreeMap::new();
    let knob = Knob::RowSmem.get(&k.point);
    if !matches!(knob, Some(1 | 2)) {
        return out;
    }
    let mut path = Vec::new();
    let mut stores = BTreeMap::new();
    let mut looped = BTreeSet::new();
    walk(
        k,
        target,
        layouts,
        &k.body,
        (0, false),
        &mut path,
        &mut out,
        &mut stores,
        &mut looped,
    );
    // ROWS_AHEAD's persistent blocks run the whole body again for each row.
    let once = !matches!(Knob::RowsAhead.get(&k.point), Some(1 | 2));
    for (l, r) in out.iter_mut() {
        if let Ok(s) = &mut r.staged {
            if knob == Some(2) {
                let store = stores.get(l).copied();
                s.in_place =
                    store.is_none_or(|st| stored_blind(k, st)) && order_free(k, &k.body, *l, store);
            }
            if !(s.in_place && once && !looped.contains(l)) {
                s.slabs = None;
            }
            if s.slabs.is_some() {
                // The head grows from one mbarrier to one a group (`ph::smem_row_head`).
                let groups = slab_groups(layouts.get(l)).expect("a staged row's layout");
                s.bytes += groups.div_ceil(2) * 16 - 16;
            }
        }
    }
    out
}

/// Every use of tile local `l` in `stmts` is a whole-row `max`, `min` or `sum` of a value
/// computed element by element from `l` and uniform scalars, with no column index: the result
/// does not depend on where each element lies. `store` (the store through the row's buffer, when
/// it has one) is left out: `stored_blind` judges it.
fn order_free(k: &Kernel, stmts: &[Stmt], l: LocalId, store: Option<&Stmt>) -> bool {
    stmts.iter().all(|s| {
        store.is_some_and(|st| std::ptr::eq(s, st))
            || (stmt_exprs(s).into_iter().all(|e| uses_order_free(k, e, l))
                && bodies(s).into_iter().all(|b| order_free(k, b, l, store)))
    })
}

/// The store through a row's buffer stores a value that does not depend on where an element
/// lies, so each thread may compute its chunks where the copy put them and store them there.
fn stored_blind(k: &Kernel, s: &Stmt) -> bool {
    let StmtKind::Store { value, .. } = &s.kind else {
        return false;
    };
    position_blind(k, value)
}

/// `e` mentions `l` only inside whole-row `max`, `min` or `sum` of position-blind element-wise
/// values of it.
fn uses_order_free(k: &Kernel, e: &Expr, l: LocalId) -> bool {
    if let ExprKind::Reduce {
        op,
        axis: None,
        arg,
    } = &e.kind
    {
        if matches!(op, ReduceOp::Max | ReduceOp::Min | ReduceOp::Sum)
            && elementwise_in(arg, l)
            && position_blind(k, arg)
        {
            return true;
        }
    }
    match &e.kind {
        ExprKind::Local(x) => *x != l,
        _ => children(e).into_iter().all(|c| uses_order_free(k, c, l)),
    }
}

/// `e` reads no column index or value that differs between threads (`arange`, the thread's
/// index, a local that is not uniform).
fn position_blind(k: &Kernel, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Arange(_) | ExprKind::Ctx(_) => false,
        ExprKind::Local(x) if !k.locals[*x].uniform => false,
        _ => children(e).into_iter().all(|c| position_blind(k, c)),
    }
}

/// `body`: the index of `stmts` among its statement's bodies, and whether a loop holds it.
/// `looped` collects the staged locals a loop holds.
#[allow(clippy::too_many_arguments)]
fn walk<'a>(
    k: &Kernel,
    target: &Target,
    layouts: &BTreeMap<LocalId, Layout>,
    stmts: &'a [Stmt],
    body: (usize, bool),
    path: &mut Vec<(usize, usize)>,
    out: &mut BTreeMap<LocalId, RowSmemRecord>,
    stores: &mut BTreeMap<LocalId, &'a Stmt>,
    looped: &mut BTreeSet<LocalId>,
) {
    let (body_idx, in_loop) = body;
    for (i, s) in stmts.iter().enumerate() {
        path.push((body_idx, i));
        if let StmtKind::Assign { local, value } = &s.kind {
            let l = *local;
            if in_loop {
                looped.insert(l);
            }
            if !k.locals[l].mutable && filled_parts(value).is_some() {
                let staged = stage(k, target, layouts.get(&l), value.ty.dtype()).map(|bytes| {
                    let last = stmts.len() - 1;
                    let through = last > i && stores_through(k, &stmts[last], l);
                    if through {
                        stores.insert(l, &stmts[last]);
                    }
                    let store = through.then(|| {
                        let mut p = path.clone();
                        p.last_mut().expect("this statement's path").1 = last;
                        p
                    });
                    let first_use = (i + 1..stmts.len())
                        .find(|&j| stmts_touch_local(std::slice::from_ref(&stmts[j]), l))
                        .map(|j| {
                            let mut p = path.clone();
                            p.last_mut().expect("this statement's path").1 = j;
                            p
                        });
                    StagedRow {
                        bytes,
                        store,
                        in_place: false,
                        slabs: first_use,
                    }
                });
                out.entry(l).or_insert(RowSmemRecord {
                    local: l,
                    staged,
                    name: k.locals[l].name.clone(),
                });
            }
        }
        let loop_body = in_loop || matches!(s.kind, StmtKind::For { .. } | StmtKind::While { .. });
        for (b, body) in bodies(s).into_iter().enumerate() {
            walk(
                k,
                target,
                layouts,
                body,
                (b, loop_body),
                path,
                out,
                stores,
                looped,
            );
        }
        path.pop();
    }
}

/// The buffer's bytes when a masked row load of `t` in `lay` is staged.
fn stage(k: &Kernel, target: &Target, lay: Option<&Layout>, t: DType) -> Result<u32, NoRowSmem> {
    if Knob::Pack.get(&k.point) != Some(4) {
        return Err(NoRowSmem::Pack);
    }
    if !matches!(t, DType::BF16 | DType::F16) {
        return Err(NoRowSmem::ElementType);
    }
    let Some(Layout::Blocked {
        r: 1,
        c,
        threads,
        vec: 8,
    }) = lay
    else {
        return Err(NoRowSmem::Layout);
    };
    if threads % 32 != 0 {
        return Err(NoRowSmem::Layout);
    }
    if (c / 8) % i64::from(*threads) != 0 {
        return Err(NoRowSmem::Uneven);
    }
    if target.cc() < 90 {
        return Err(NoRowSmem::Target);
    }
    let t = i64::from(*threads);
    let groups = (c / 8 + t - 1) / t;
    let bytes = 16 + (groups * t + 1) * 16;
    match u32::try_from(bytes) {
        Ok(b) if b <= SMEM_LIMIT => Ok(b),
        _ => Err(NoRowSmem::TooLarge(bytes.min(i64::from(u32::MAX)) as u32)),
    }
}

/// The groups a thread holds of a staged row in `lay` (each a slab of the buffer with SLABS).
fn slab_groups(lay: Option<&Layout>) -> Option<u32> {
    match lay {
        Some(Layout::Blocked {
            r: 1,
            c,
            threads,
            vec: 8,
        }) => u32::try_from(c / 8 / i64::from(*threads)).ok(),
        _ => None,
    }
}

/// `s` stores a value computed element by element from `l` (and scalars) into a tensor of a
/// 2-byte type: each thread's elements of the value come from its own elements of `l`.
fn stores_through(k: &Kernel, s: &Stmt, l: LocalId) -> bool {
    let StmtKind::Store { tensor, value, .. } = &s.kind else {
        return false;
    };
    let two_bytes = matches!(
        &k.params[*tensor].kind,
        phobos_ir::ParamKind::Tensor {
            dtype: DType::BF16 | DType::F16,
            ..
        }
    );
    let mut mentions = false;
    two_bytes && value.ty.is_tile() && elementwise_of(value, l, &mut mentions) && mentions
}

/// `e` is computed element by element from tile local `l` (and scalars): each thread's elements
/// from its own elements of `l`, with no scratch area or barrier.
pub(crate) fn elementwise_in(e: &Expr, l: LocalId) -> bool {
    let mut mentions = false;
    elementwise_of(e, l, &mut mentions) && mentions
}

/// `e` is element-wise in tile local `l`: every tile it reads is `l` itself.
fn elementwise_of(e: &Expr, l: LocalId, mentions: &mut bool) -> bool {
    match &e.kind {
        ExprKind::Local(x) if *x == l => {
            *mentions = true;
            true
        }
        ExprKind::Local(_) => !e.ty.is_tile(),
        ExprKind::Lit(_)
        | ExprKind::Dim(_)
        | ExprKind::Param(_)
        | ExprKind::Ctx(_)
        | ExprKind::Arange(_) => true,
        ExprKind::Unary(_, a) | ExprKind::Math(_, a) | ExprKind::Cast(a) => {
            elementwise_of(a, l, mentions)
        }
        ExprKind::Broadcast(a) => !a.ty.is_tile() && elementwise_of(a, l, mentions),
        ExprKind::Binary(_, a, b) | ExprKind::Cdiv(a, b) => {
            elementwise_of(a, l, mentions) && elementwise_of(b, l, mentions)
        }
        ExprKind::Select(c, a, b) => {
            elementwise_of(c, l, mentions)
                && elementwise_of(a, l, mentions)
                && elementwise_of(b, l, mentions)
        }
        ExprKind::MathN(_, args) => args.iter().all(|a| elementwise_of(a, l, mentions)),
        // Scalar reductions or element reads of other tiles: not read in place.
        ExprKind::Load { .. }
        | ExprKind::TileGet { .. }
        | ExprKind::Reduce { .. }
        | ExprKind::Dot { .. }
        | ExprKind::Transpose(_)
        | ExprKind::Reshape(_) => false,
    }
}
