//! The tile IR with layouts: a layout for every tile local, the strategy of every recognized
//! GEMM loop, and where each local is declared. Kept in side tables over the IR.

use crate::gemm_fast::{BIssue, Knobs, SharedOperand, Strategy};
use crate::gemm_match::{find_gemms, GemmMatch};
use crate::gemm_split::{
    plan_split, reads_block_xy, split_cluster_blocker, NoSplit, SplitK, SplitReduce,
};
use crate::launch::TmaParam;
use crate::layout::{
    blocked_capped, kernel_vec_cap, line_store_tensors, shifted_store_tensors, shifted_tensors,
    Layout,
};
use crate::mainloop::{select, MainLoop};
use crate::visit::{bodies, stmt_exprs, stmts_touch_local};
use crate::GemmPolicy;
use crate::Target;

mod cluster;
mod dots;
pub use dots::{
    a_from_registers, dot_instr, dot_layout, dot_mma, scaled_dot, DotRecord, MmaInstr, NoMma,
    NoWgmma,
};
mod masks;
mod mma_type;
pub use mma_type::{
    dot_tensor, k_major_staged, staged_a_from_registers, staged_instr, MmaType, TensorDot,
    WgOperand, WgmmaForm,
};
mod overlap;
mod persist;
mod pingpong;
mod producer;
mod ring;
mod row_smem;
mod rows_ahead;
mod schedule;
mod streamed;
mod sum_exp;
mod tma_store;
pub use cluster::{cluster_blocker, NoCluster, NoProducerLoop};
use dots::{a_operand_layouts, dot_records, resident_operands};
pub use masks::{Bound, Extent, MaskRecord, MaskScope};
pub use overlap::{KeptA, LoopRecord, NoOverlap, Overlap};
pub use persist::{NoPersist, Persist, QByProducer, Walk};
use phobos_ir::{BinOp, Expr, ExprKind, Kernel, LocalId, Stmt, StmtKind};
pub use pingpong::{NoPingPong, PingPong, PINGPONG_BARRIER};
pub(crate) use producer::{head_tile, producer_scalar_stmt};
pub use producer::{producer_warp, reg_split, NoProducer, Producer, RegSplit};
pub use ring::{NoRing, Ring};
pub(crate) use row_smem::{elementwise_in, filled_parts};
pub use row_smem::{NoRowSmem, RowSmemRecord, StagedRow};
pub(crate) use rows_ahead::block_index;
pub use rows_ahead::{AheadForm, AheadRow, NoRowsAhead, RowsAheadRecord};
pub use schedule::{persistent_blocker, Blocker, Schedule};
use std::collections::{BTreeMap, BTreeSet};
pub(crate) use streamed::streamed_loads;
pub use sum_exp::{SumExpPair, SumExpRecord};
use tma_store::plan_tma_store;
pub use tma_store::{NoTmaStore, TmaStore};

/// Layout and declaration decisions for one kernel.
pub struct Plan {
    pub layouts: BTreeMap<LocalId, Layout>,
    pub gemms: Vec<(GemmMatch, MainLoop)>,
    /// Per GEMM (same order): the names of its A and B tensor-map parameters (wgmma + TMA).
    pub gemm_tma: Vec<Option<(String, String)>>,
    /// The tensor-map parameters, in signature order.
    pub tma: Vec<TmaParam>,
    /// GROUP_M when above 1 and the kernel has a recognized GEMM: `ctx.block.x/y` read the
    /// swizzled block indices.
    pub group_m: u32,
    /// The split k loop, when SPLIT_K applies.
    pub split: Option<SplitK>,
    /// Why SPLIT_K, declared above 1 on a kernel with a recognized GEMM, was not applied
    /// (typed; `notes` renders it); `None` when applied or not declared.
    pub split_refused: Option<NoSplit>,
    /// SCHEDULE=2 applies: the kernel body runs in a loop over the tiles of the logical grid
    /// (see [`persistent_blocker`]).
    pub persistent: bool,
    /// The schedule decision, and the index in `notes` of the line that renders it (when
    /// SCHEDULE=2 was declared).
    pub schedule: Schedule,
    pub schedule_note: Option<usize>,
    /// CLUSTER=2 applies: the kernel runs in thread block clusters of this many blocks along x
    /// whose GEMMs share B (see [`cluster_blocker`]); 1 otherwise.
    pub cluster: u32,
    /// Under a cluster, the operand its blocks share: [`SharedOperand::A`] (CLUSTER=4) pairs
    /// neighbouring N tiles of one M tile in the persistent tile loop.
    pub cluster_shares: SharedOperand,
    /// Why CLUSTER, declared above 1 on a kernel with a recognized GEMM, was not applied
    /// (typed; `notes` renders it); `None` when applied or not declared.
    pub cluster_refused: Option<NoCluster>,
    /// The epilogue store that goes through shared memory and TMA (see [`tma_store::plan_tma_store`]).
    pub tma_store: Option<TmaStore>,
    /// A wgmma GEMM's C store: through shared memory and TMA (`tma_store`), or why not (typed;
    /// `notes` renders it); `None` without a GEMM on the wgmma main loop.
    pub c_store: Option<Result<TmaStore, NoTmaStore>>,
    /// Locals declared at their first assignment (or `for`), by that statement's path (as
    /// in `GemmMatch::path`); the others are declared at the top of the kernel.
    pub decl_inline: BTreeMap<LocalId, Vec<(usize, usize)>>,
    /// The main-loop choices and why faster ones were not taken (for `Emitted::notes`).
    pub notes: Vec<String>,
    /// The widest vector group of the kernel's Blocked layouts ([`kernel_vec_cap`]).
    pub vec_cap: i64,
    /// Tensors whose tile loads are shifted 16-byte accesses ([`shifted_tensors`]).
    pub shifted: BTreeSet<phobos_ir::ParamId>,
    /// Tensors whose transposed tile stores are shifted 16-byte stores
    /// ([`shifted_store_tensors`], `VEC_COPY=1`).
    pub shifted_stores: BTreeSet<phobos_ir::ParamId>,
    /// Tensors whose transposed tile stores go by warp windows on 128-byte lines
    /// ([`line_store_tensors`], `STORE_LINES=1`).
    pub line_stores: BTreeSet<phobos_ir::ParamId>,
    /// The target GPU.
    pub target: Target,
    /// Tile locals held in shared memory as tensor-core dot operands ([`resident_operands`]).
    pub resident: BTreeSet<LocalId>,
    /// Every dot outside the recognized GEMM loops, in program order.
    pub dots: Vec<DotRecord>,
    /// Every loop with a wgmma dot outside the recognized GEMM loops: overlapped or why not.
    pub loops: Vec<LoopRecord>,
    /// The `where` statements emitted under a block-uniform test that skips their mask.
    pub masks: Vec<MaskRecord>,
    /// ROW_SMEM=1: the masked row loads' `let`s, staged in shared memory or why not.
    pub row_smem: BTreeMap<LocalId, RowSmemRecord>,
    /// Each whole-row max with a later sum of exponentials of the same row (the emitter fuses
    /// those of staged rows).
    pub sum_exp: Vec<SumExpPair>,
    /// ROWS_AHEAD=1: the staged row read a row ahead in persistent blocks, or why not.
    pub rows_ahead: Option<RowsAheadRecord>,
}

/// `extra_warp`: the launch has a producer of this many threads beyond `k.launch.threads`
/// ([`producer_warp`]; `k` is then the kernel at its consumer threads).
pub fn plan(k: &Kernel, policy: GemmPolicy, target: &Target, extra_warp: Option<u32>) -> Plan {
    let threads = k.launch.threads;
    let mut layouts = BTreeMap::new();
    // Recognized GEMM loops fix their accumulators' layouts first.
    let mut gemms = Vec::new();
    let mut notes = Vec::new();
    for m in find_gemms(k) {
        let (ml, why) = select(k, &m, layouts.get(&m.acc), policy, target);
        notes.extend(why);
        layouts.insert(m.acc, ml.acc_layout().clone());
        gemms.push((m, ml));
    }
    let knobs = Knobs::from_point(&k.point);
    let group_m = if gemms.is_empty() { 1 } else { knobs.group_m() };
    if group_m > 1 {
        notes.push(format!(
            "GROUP_M={group_m}: blocks are swizzled (ph::gemm::swizzle_block), {}",
            if reads_block_xy(&k.body) {
                "ctx.block.x/y read the remapped M/N tile indices"
            } else {
                "but the kernel does not read ctx.block.x/y"
            }
        ));
    }
    let mut split_refused = None;
    let split = match knobs.split_k() {
        parts if parts > 1 && !gemms.is_empty() => {
            let ms: Vec<&GemmMatch> = gemms.iter().map(|(m, _)| m).collect();
            let mut cluster_note = None;
            let mut planned = plan_split(
                k,
                &ms,
                parts,
                knobs.split_workspace(),
                knobs.split_pairs(),
                knobs.split_cluster(),
            );
            if let Ok(s) = &planned {
                let ml = &gemms[0].1;
                let why = (s.reduce == SplitReduce::Cluster)
                    .then(|| split_cluster_blocker(ml, parts, knobs.persistent(), knobs.cluster()))
                    .flatten();
                if let Some(why) = why {
                    // Through the paired workspace instead, as SPLIT_REDUCE=3.
                    cluster_note = Some(why.note());
                    planned = plan_split(k, &ms, parts, true, true, false).map(|s| SplitK {
                        cluster_refused: Some(why),
                        ..s
                    });
                }
            }
            notes.extend(cluster_note);
            match planned {
                Ok(s) => {
                    notes.push(s.note(&k.params[s.c].name));
                    Some(s)
                }
                Err(why) => {
                    notes.push(why.note(parts));
                    split_refused = Some(why);
                    None
                }
            }
        }
        _ => None,
    };
    let schedule = if !knobs.persistent() {
        Schedule::OneBlockPerTile
    } else {
        match persistent_blocker(k, &gemms, split.is_some()) {
            None => Schedule::Persistent,
            Some(why) => Schedule::NotApplied(why),
        }
    };
    let persistent = schedule == Schedule::Persistent;
    let mut release_note = None;
    if persistent {
        if let Some((_, MainLoop::Fast(f))) = gemms.first_mut() {
            f.plan.persistent = true;
            if knobs.release_own() {
                let before = f.plan.mainloop.clone();
                release_note = Some(match f.plan.apply_release_own() {
                    Ok(()) => (before, f.plan.mainloop.clone()),
                    Err(why) => (String::new(), why.to_string()),
                });
            }
        }
    }
    let schedule_note = (schedule != Schedule::OneBlockPerTile).then(|| {
        notes.push(schedule.note(knobs.schedule.unwrap_or(2)));
        notes.len() - 1
    });
    if let Some((before, after)) = release_note {
        if before.is_empty() {
            notes.push(format!("SCHEDULE=3's early release not applied: {after}"));
        } else {
            // The GEMM's note names the main loop it now calls.
            for note in notes.iter_mut() {
                *note = note.replace(&before, &after);
            }
            notes.push(
                "SCHEDULE=3: each consumer warpgroup waits for its own MMAs of a stage \
                 (wgmma.wait_group 0) and hands the stage's slot back at once (RELEASE_OWN), so \
                 every slot is in flight while the consumers wait"
                    .to_string(),
            );
        }
    }
    let mut cluster = 1;
    let mut cluster_shares = SharedOperand::B;
    let mut cluster_refused = None;
    if knobs.cluster() > 1 && !gemms.is_empty() {
        let n = knobs.cluster();
        // The knob's value: 3 is clusters of two with one block copying B, 4 of two sharing A.
        let kv = knobs.cluster.unwrap_or(n);
        let shared = knobs.shared();
        let why = cluster_blocker(k, &gemms, shared, persistent).or_else(|| {
            match gemms.first_mut() {
                Some((_, MainLoop::Fast(f))) => {
                    let before = f.plan.mainloop.clone();
                    let why = (f.plan.apply_cluster(n, knobs.b_issue(), shared).err())
                        .map(NoCluster::Loop);
                    // The GEMM's note names the main loop it now calls.
                    for note in notes.iter_mut() {
                        *note = note.replace(&before, &f.plan.mainloop);
                    }
                    why
                }
                _ => Some(NoCluster::MainLoop(NoProducerLoop::GenericLoop)),
            }
        });
        match why {
            None if shared == SharedOperand::A => {
                cluster = n;
                cluster_shares = shared;
                notes.push(format!(
                    "CLUSTER={kv}: thread block clusters of {n} blocks on neighbouring N tiles of \
                     one M tile (__cluster_dims__({n}, 1, 1); ph::gemm::cluster_n_swizzle_block, \
                     the persistent tile loop stepping in whole clusters over the N tiles \
                     rounded up) share each A stage: every block copies 1/{n} of it, multicast \
                     to all, and its own B (none past the last N tile)"
                ));
            }
            None => {
                cluster = n;
                let share = match knobs.b_issue() {
                    BIssue::Shares => format!("every block copies 1/{n} of it"),
                    BIssue::Rank0 => "rank 0 copies all of it".to_string(),
                };
                notes.push(format!(
                    "CLUSTER={kv}: thread block clusters of {n} blocks on neighbouring M tiles \
                     (__cluster_dims__({n}, 1, 1), the grid's x rounded up to whole clusters; \
                     ph::gemm::cluster_swizzle_block{}) share each B stage: {share}, multicast \
                     to all",
                    if persistent {
                        ", the persistent tile loop stepping in whole clusters"
                    } else {
                        ""
                    }
                ));
            }
            Some(why) => {
                notes.push(why.note(kv));
                cluster_refused = Some(why);
            }
        }
    }
    // After CLUSTER, which changes B's box.
    let (gemm_tma, mut tma) = tensor_maps(k, &gemms, &mut notes);
    // Every other tile local: the natural layout of what is assigned to it (a dot's accumulator
    // layout propagates through elementwise expressions), else Blocked. Iterated because a
    // local's layout feeds the natural layouts of later assignments.
    let mut assigns: Vec<(LocalId, &Expr)> = Vec::new();
    collect_assigns(&k.body, &mut assigns);
    for _ in 0..4 {
        let mut changed = false;
        for &(l, value) in &assigns {
            if layouts.get(&l).is_some_and(|x| !x.is_blocked()) {
                continue;
            }
            if let Some(lay) = natural(k, target, &layouts, value).filter(|x| !x.is_blocked()) {
                layouts.insert(l, lay);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let resident = resident_operands(k, target);
    for (l, lay) in a_operand_layouts(k, target, &layouts) {
        if !resident.contains(&l) {
            layouts.entry(l).or_insert(lay);
        }
    }
    for &l in &resident {
        notes.push(format!(
            "{}: loaded once into shared memory, the dots read it there",
            k.locals[l].name
        ));
    }
    let vec_cap = kernel_vec_cap(k);
    let shifted = shifted_tensors(k, vec_cap);
    for &t in &shifted {
        notes.push(format!(
            "{}: rows known unaligned, tile loads shifted (two aligned 16-byte loads a group)",
            k.params[t].name
        ));
    }
    let shifted_stores = shifted_store_tensors(k, vec_cap);
    for &t in &shifted_stores {
        notes.push(format!(
            "{}: rows known unaligned, transposed tile stores shifted (aligned 16-byte chunks, the row segment's ends by element)",
            k.params[t].name
        ));
    }
    let line_stores = line_store_tensors(k);
    for &t in &line_stores {
        notes.push(format!(
            "{}: rows known unaligned, transposed tile stores by warp windows on 128-byte lines (a warp a row)",
            k.params[t].name
        ));
    }
    for (l, local) in k.locals.iter().enumerate() {
        if let Some(shape) = local.ty.shape() {
            layouts
                .entry(l)
                .or_insert_with(|| blocked_capped(shape, threads, vec_cap));
        }
    }
    let c_store = plan_tma_store(
        k,
        &gemms,
        &layouts,
        split.as_ref().map(|s| s.reduce),
        &mut tma,
        target,
    );
    notes.extend(c_store.as_ref().map(|c| match c {
        Ok(ts) => ts.to_string(),
        Err(why) => why.to_string(),
    }));
    let tma_store = c_store.clone().and_then(Result::ok);
    let dots = dot_records(k, target, &gemms, &layouts);
    notes.extend(dots.iter().map(DotRecord::to_string));
    let gemm_paths: Vec<Vec<(usize, usize)>> = gemms.iter().map(|(m, _)| m.path.clone()).collect();
    let loops = overlap::loop_records(k, target, &layouts, &resident, &gemm_paths, extra_warp);
    let maps = producer::producer_maps(k, target, &loops, tma.len());
    tma.extend(maps);
    notes.extend(loops.iter().map(LoopRecord::to_string));
    let mut masks = masks::mask_records(k, &layouts);
    let row_smem = row_smem::row_smem_records(k, target, &layouts);
    let remapped = persistent
        || group_m > 1
        || cluster > 1
        || split.is_some()
        || extra_warp.is_some()
        || (loops.iter()).any(|r| matches!(&r.overlap, Ok(o) if o.persist.is_ok()));
    let rows_ahead = rows_ahead::rows_ahead(k, target, &layouts, &row_smem, remapped);
    // A row landed a row ahead, staged in shared memory or held as a dot operand there is
    // assigned by its own form, which writes its mask itself: no per-thread record for it.
    let landed = (rows_ahead.iter())
        .filter_map(|r| r.ahead.as_ref().ok())
        .map(|a| a.local);
    let own_form: BTreeSet<LocalId> = (resident.iter().copied())
        .chain(row_smem.keys().copied())
        .chain(landed)
        .collect();
    masks.retain(|m| m.scope == MaskScope::Block || !own_form.contains(&m.local));
    notes.extend(masks.iter().map(MaskRecord::to_string));
    notes.extend(row_smem.values().map(RowSmemRecord::to_string));
    notes.extend(rows_ahead.iter().map(RowsAheadRecord::to_string));
    let mut decl_inline = BTreeMap::new();
    for l in 0..k.locals.len() {
        let mut path = Vec::new();
        if declares_inline(&k.body, 0, l, &mut path) {
            decl_inline.insert(l, path);
        }
    }
    Plan {
        layouts,
        gemms,
        gemm_tma,
        tma,
        group_m,
        split,
        split_refused,
        persistent,
        schedule,
        schedule_note,
        cluster,
        cluster_shares,
        cluster_refused,
        tma_store,
        c_store,
        decl_inline,
        notes,
        vec_cap,
        shifted,
        shifted_stores,
        line_stores,
        target: *target,
        resident,
        dots,
        loops,
        masks,
        row_smem,
        rows_ahead,
        sum_exp: sum_exp::sum_exp_pairs(k),
    }
}

/// The tensor-map parameters of the wgmma + TMA main loops: two per such GEMM (A, B), named
/// `ph_tma<i>`, in GEMM order. A GEMM whose maps cannot be described keeps no maps (it never
/// happens for a plan `gemm_fast` accepted: it checks rank 2 and the operand orders).
#[allow(clippy::type_complexity)]
fn tensor_maps(
    k: &Kernel,
    gemms: &[(GemmMatch, MainLoop)],
    notes: &mut Vec<String>,
) -> (Vec<Option<(String, String)>>, Vec<TmaParam>) {
    let mut per = Vec::new();
    let mut all = Vec::new();
    for (m, ml) in gemms {
        let MainLoop::Fast(f) = ml else {
            per.push(None);
            continue;
        };
        let (Strategy::Sm90, Some((sa, sb))) = (f.plan.strategy, f.plan.tma.clone()) else {
            per.push(None);
            continue;
        };
        let (na, nb) = (
            format!("ph_tma{}", all.len()),
            format!("ph_tma{}", all.len() + 1),
        );
        let a = TmaParam::new(
            na.clone(),
            m.a.tensor,
            &k.params[m.a.tensor].kind,
            m.a.k_axis,
            sa,
        );
        let b = TmaParam::new(
            nb.clone(),
            m.b.tensor,
            &k.params[m.b.tensor].kind,
            m.b.k_axis,
            sb,
        );
        match (a, b) {
            (Some(a), Some(b)) => {
                all.push(a);
                all.push(b);
                per.push(Some((na, nb)));
            }
            _ => {
                notes.push("internal: a wgmma operand has no tensor map".into());
                per.push(None);
            }
        }
    }
    (per, all)
}

fn collect_assigns<'a>(stmts: &'a [Stmt], out: &mut Vec<(LocalId, &'a Expr)>) {
    for s in stmts {
        if let StmtKind::Assign { local, value } = &s.kind {
            out.push((*local, value));
        }
        for b in bodies(s) {
            collect_assigns(b, out);
        }
    }
}

/// The layout a tile expression is cheapest to compute in: a local's own layout, a dot's
/// accumulator layout, the rows of an accumulator for its row reductions, or for elementwise
/// expressions the first non-Blocked layout among their operands. None means Blocked of its
/// shape.
pub fn natural(
    k: &Kernel,
    target: &Target,
    layouts: &BTreeMap<LocalId, Layout>,
    e: &Expr,
) -> Option<Layout> {
    let shape = e.ty.shape()?;
    let nat = |x: &Expr| natural(k, target, layouts, x).filter(|l| !l.is_blocked());
    match &e.kind {
        ExprKind::Local(l) => layouts.get(l).cloned(),
        ExprKind::Dot { .. } => Some(dot_layout(k, target, e)),
        ExprKind::Reduce {
            axis: Some(1), arg, ..
        } if arg.ty.shape().is_some_and(|s| s.len() == 2) => match nat(arg) {
            Some(Layout::Mma(m)) => Some(Layout::MmaRows(m.rows())),
            _ => None,
        },
        ExprKind::Unary(_, a) | ExprKind::Math(_, a) | ExprKind::Cast(a) => nat(a),
        ExprKind::Binary(_, a, b) => [a, b]
            .into_iter()
            .filter(|x| x.ty.shape() == Some(shape))
            .find_map(|x| nat(x)),
        ExprKind::Select(c, a, b) => [c, a, b]
            .into_iter()
            .filter(|x| x.ty.shape() == Some(shape))
            .find_map(|x| nat(x)),
        _ => None,
    }
}

/// True when `acc = acc + dot(..)` (either order) accumulates into `l`.
pub fn accumulates_dot(l: LocalId, value: &Expr) -> Option<&Expr> {
    let ExprKind::Binary(BinOp::Add, x, y) = &value.kind else {
        return None;
    };
    match (&x.kind, &y.kind) {
        (ExprKind::Local(a), ExprKind::Dot { .. }) if *a == l => Some(y),
        (ExprKind::Dot { .. }, ExprKind::Local(a)) if *a == l => Some(x),
        _ => None,
    }
}

/// True when local `l` can be declared at its first assignment: that assignment is a direct
/// statement of the innermost statement list holding every use, and nothing before it in
/// that list touches `l`. `path` receives the declaring statement's path.
fn declares_inline(
    stmts: &[Stmt],
    body_idx: usize,
    l: LocalId,
    path: &mut Vec<(usize, usize)>,
) -> bool {
    let touching: Vec<usize> = (0..stmts.len())
        .filter(|&i| stmts_touch_local(&stmts[i..=i], l))
        .collect();
    let Some(&first) = touching.first() else {
        return false;
    };
    path.push((body_idx, first));
    let s = &stmts[first];
    let declares = match &s.kind {
        StmtKind::Assign { local, value } if *local == l => {
            !crate::visit::expr_reads_local(value, l)
        }
        StmtKind::For { var, .. } if *var == l => touching.len() == 1,
        StmtKind::Atomic { old: Some(o), .. } if *o == l => true,
        _ if touching.len() == 1 => {
            // All uses inside one statement: descend if its own expressions do not use l and
            // exactly one of its bodies does.
            let own = stmt_exprs(s)
                .into_iter()
                .any(|e| crate::visit::expr_reads_local(e, l));
            let inner: Vec<(usize, &[Stmt])> = bodies(s)
                .into_iter()
                .enumerate()
                .filter(|(_, b)| stmts_touch_local(b, l))
                .collect();
            !own && inner.len() == 1 && declares_inline(inner[0].1, inner[0].0, l, path)
        }
        _ => false,
    };
    if !declares {
        path.clear();
    }
    declares
}
