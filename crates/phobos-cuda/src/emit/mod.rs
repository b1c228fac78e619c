//! Kernel assembly and statements: the signature of the launch ABI, declarations, control flow,
//! and the barrier discipline.
//!
//! Barriers: the scratch area of shared memory is reused by every conversion, broadcast,
//! reduction and dot; a `__syncthreads()` goes before a scratch user only when an earlier one
//! may still be reading (`scratch_dirty`). Tile statements act as block-wide barriers for
//! memory, so a tile load of a tensor stored to since the last barrier gets one first, and a
//! tile store to a tensor that element loads read gets one after it.

mod ahead;
mod atomic;
pub(crate) mod columns;
mod dot_k;
mod expr;
mod finish;
mod group;
mod masks;
pub(crate) mod ops;
mod persistent;
mod pipe;
mod producer;
mod row_totals;
mod rowpack;
mod rows_ahead;
mod stmt;
mod store;
mod tile;

use crate::layout::Layout;
use crate::mainloop::MainLoop;
use crate::names::Names;
use crate::plan::{plan, Plan};
use crate::{ctype, EmitError, EmitOptions, Emitted, Target};
use phobos_ir::{Kernel, ParamId};
use phobos_syntax::Span;
use std::collections::BTreeSet;

pub(crate) type Result<T> = std::result::Result<T, EmitError>;

/// The header of the grid-level GEMM knobs (GROUP_M swizzle, SPLIT_K range).
pub(crate) const SCHED_HEADER: &str = "gemm/sched.cuh";
/// The C store through shared memory and TMA.
pub(crate) const STORE_TMA_HEADER: &str = "gemm/store_tma.cuh";
/// The swizzled block indices under GROUP_M (`ctx.block.x`, `ctx.block.y`).
pub(crate) const BX: &str = "ph_bx";
pub(crate) const BY: &str = "ph_by";

pub(crate) fn unsupported<T>(what: impl Into<String>, span: Span) -> Result<T> {
    Err(EmitError::Unsupported {
        what: what.into(),
        span,
    })
}

pub(crate) struct Emitter<'k> {
    k: &'k Kernel,
    opts: &'k EmitOptions,
    names: Names,
    plan: Plan,
    lines: Vec<String>,
    indent: usize,
    tmp: usize,
    /// Largest scratch use, in bytes (outside branches whose condition is a constant false).
    scratch_bytes: u32,
    /// Largest scratch use inside branches that never run (`if (false)`, a knob's other form),
    /// and whether such a branch is being emitted. With a staged row (ROW_SMEM=1) the scratch
    /// area is sized by live code alone (dead code compiles against the smaller area, taking
    /// its fallback forms), so a second block's shared memory is not spent on it.
    dead_scratch: u32,
    in_dead: bool,
    /// A scratch user's reads may still be in flight: the next user needs a barrier first.
    scratch_dirty: bool,
    /// Tensors stored to since the last barrier.
    pending: BTreeSet<ParamId>,
    /// Tensors read by element loads anywhere in the kernel.
    element_loaded: BTreeSet<ParamId>,
    /// Column-tile locals and their definitions (see [`columns`]).
    column_defs: std::collections::BTreeMap<phobos_ir::LocalId, phobos_ir::Expr>,
    /// Row-tile locals and their definitions (the same, for `[R, 1]` tiles of the row index).
    row_defs: std::collections::BTreeMap<phobos_ir::LocalId, phobos_ir::Expr>,
    /// Every layout the kernel names, with the alias it is declared by: its own
    /// ([`Layout::alias`]) unless a layout of another C++ type holds that name (say two
    /// `Blk128x256` tiles of 4- and 16-element vectors), then that name and a number.
    layouts_used: std::collections::BTreeMap<Layout, String>,
    headers: BTreeSet<&'static str>,
    gemm_smem: u32,
    /// Shared memory of the TMA C store's staging buffer, after the main loop's.
    c_smem: u32,
    /// Bytes of one buffer of the loops' streamed dot operands (`pipe_buffers` of them, after
    /// the C store's staging buffer; see [`pipe`]).
    pipe_stage: u32,
    /// How many such buffers: two, or three when a loop's dots overlap (`OVERLAP_BUFFERS`,
    /// plan/overlap.rs: the previous iteration's is still read by its deferred product).
    pipe_buffers: u32,
    /// The overlapped loop being emitted (see [`ahead`]).
    ahead: Option<ahead::Ahead<'k>>,
    /// The mbarrier array of the loop being emitted whose streamed buffers form a ring
    /// (`Overlap::ring`): `stages` full barriers, then `stages` empty ones.
    ring: Option<pipe::RingBars>,
    /// The launch has a producer of this many threads beyond `k.launch.threads`
    /// (`plan::producer_warp`: `k` is the kernel at its consumer threads): block barriers are
    /// named barriers of the consumers.
    extra_warp: Option<u32>,
    /// The ring the producer warp fills (`Overlap::producer`), declared at the kernel's start.
    producer_ring: Option<String>,
    /// Persistent blocks over the logical grid (`Overlap::persist`): the consumers' body and the
    /// producer's loop run in a loop over the logical blocks, the ring's counter
    /// ([`RING_T`]) carried across them.
    persist: bool,
    /// The resident operand the producer loads at each logical block (`Persist::q`,
    /// `PERSIST=2`): q-full and q-empty mbarriers follow the ring's, counted by [`Q_N`].
    persist_q: Option<crate::plan::QByProducer>,
    /// The order of the logical blocks both loops walk (`Persist::walk`, `WALK`).
    walk: crate::plan::Walk,
    /// ROWS_AHEAD=1 applied (`Plan::rows_ahead`): the body runs in a loop over the logical
    /// blocks, the staged row in two buffers, the next logical block's copied ahead.
    rows_ahead: Option<crate::plan::AheadRow>,
    /// The names `ctx.block.x/y` read instead of the logical block's while the next logical
    /// block's row address is emitted (ROWS_AHEAD).
    block_names: Option<(&'static str, &'static str)>,
    /// The dot being emitted is only issued (`ASYNC`), the caller commits and waits.
    dot_async: bool,
    /// A dot operand (by address) read from this register tile instead (an overlapped loop's
    /// deferred dot reads its kept A operand).
    operand_override: Option<(usize, String, Layout)>,
    /// SPLIT_REDUCE=4's epilogue: the write region is narrowed to this block's columns
    /// (the arguments of `ph::gemm::sm90::narrow_cols` after the region).
    narrow_store: Option<String>,
    /// Bytes of the shared-memory resident dot operands (`Plan::resident`), before the
    /// streamed buffers; each local's offset in it.
    resident_smem: u32,
    resident_at: std::collections::BTreeMap<phobos_ir::LocalId, u32>,
    /// Streamed loads of the loops being emitted (by address) and the shared-memory operand
    /// the dot reads instead.
    streamed: std::collections::BTreeMap<usize, String>,
    /// Tile loads (by address) of the grouped store being emitted and the register of the
    /// current group each reads instead (see [`group`]).
    group_loads: std::collections::BTreeMap<usize, String>,
    /// Tile locals held packed (`ph::Packed`, the knob `PACK`): the storage type of each.
    packed: std::collections::BTreeMap<phobos_ir::LocalId, &'static str>,
    /// Packed locals staged in shared memory (`ph::SmemRow`, ROW_SMEM=1): each one's offset in
    /// the resident region.
    staged_rows: std::collections::BTreeMap<phobos_ir::LocalId, u32>,
    /// ROWS_AHEAD=2: the landed row and its buffer's offset in the resident region, reserved.
    landed: Option<(phobos_ir::LocalId, u32)>,
    /// The sums of exponentials already computed by their row's max (`plan::SumExpPair`), by
    /// the sum's span (lo, hi): the variable holding each.
    fused_sums: std::collections::BTreeMap<(u32, u32), String>,
    /// The pairs fused, in the order emitted.
    sum_exp: Vec<crate::plan::SumExpRecord>,
    notes: Vec<String>,
    /// The statement being emitted, as in `GemmMatch::path`.
    path: Vec<(usize, usize)>,
    last_line: Option<usize>,
    /// ROW_SPLIT's record (the kernel already rewritten where applied).
    row_split: Option<crate::row_split::RowSplitRecord>,
}

pub(crate) fn emit_kernel(
    k: &Kernel,
    opts: &EmitOptions,
    policy: crate::GemmPolicy,
    target: &Target,
) -> Result<Emitted> {
    // ROW_SPLIT: the kernel rewritten for the blocks of a cluster, planned and emitted as any.
    let (split, rewritten) = match crate::row_split::split_rows(k, target) {
        Some((record, rewritten)) => (Some(record), rewritten),
        None => (None, None),
    };
    let k = rewritten.as_ref().unwrap_or(k);
    let (e, syncs) = emit_with(k, opts, policy, target, true, split.clone())?;
    if e.persistent && syncs {
        // The producer warp runs ahead into the next tile and would wait for the consumers
        // while they wait for it at a block barrier: one block per tile after all.
        return emit_with(k, opts, policy, target, false, split).map(|(e, _)| e);
    }
    Ok(e)
}

/// The persistent tile loop's names: the logical grid's extents (kernel parameters) and the
/// tile index.
const GX: &str = "ph_gx";
/// The SPLIT_K workspace parameter ([`crate::SplitWorkspace`]).
pub(crate) const SPLIT_WS: &str = "ph_split_ws";
const GY: &str = "ph_gy";
pub(crate) const TILE: &str = "ph_tile";
/// A persistent block's round of the snake walk (`Walk::Snake`).
const ROUND: &str = "ph_round";
/// The ring's tiles so far across a persistent block's logical blocks (`Overlap::persist`):
/// the producer's and the consumers' own counters.
pub(crate) const RING_T: &str = "ph_ring_t";
/// The logical blocks so far of a persistent block whose producer loads q (`PERSIST=2`): the
/// q barriers' phases.
pub(crate) const Q_N: &str = "ph_q_n";
/// ROW_SPLIT: the cluster steps of whole-tile reductions so far (their slots alternate).
pub(crate) const CLUSTER_N: &str = "ph_cluster_n";
/// ROW_SPLIT: the shared slots the blocks of a cluster write their partials into.
pub(crate) const CLUSTER_SLOTS: &str = "ph_cluster_slots";

/// Emits the kernel; the flag says whether the code around the main loops synchronizes the
/// block or uses the shared scratch (which the persistent schedule cannot have).
fn emit_with(
    k: &Kernel,
    opts: &EmitOptions,
    policy: crate::GemmPolicy,
    target: &Target,
    allow_persistent: bool,
    row_split: Option<crate::row_split::RowSplitRecord>,
) -> Result<(Emitted, bool)> {
    // PRODUCER=1: planned and emitted at the consumer warpgroups' threads; the launch keeps the
    // producer warp (`Emitter::launch_threads`).
    let extra_warp = crate::plan::producer_warp(k);
    let consumers_only;
    let k = if let Some(p) = extra_warp {
        consumers_only = Kernel {
            launch: phobos_ir::Launch {
                threads: k.launch.threads - p,
                ..k.launch
            },
            ..k.clone()
        };
        &consumers_only
    } else {
        k
    };
    let mut plan = plan(k, policy, target, extra_warp);
    if plan.persistent && !allow_persistent && plan.cluster_shares == crate::SharedOperand::A {
        // CLUSTER=4's pairs of N tiles exist only in the persistent tile loop: planned again
        // without the cluster (the kernel's point otherwise unchanged).
        let mut alone = k.clone();
        for (name, v) in alone.point.0.iter_mut() {
            if name == phobos_ir::knobs::Knob::Cluster.name() {
                *v = 1;
            }
        }
        plan = crate::plan::plan(&alone, policy, target, extra_warp);
        let why = crate::plan::NoCluster::PersistentRuledOut;
        let kv = crate::gemm_fast::Knobs::from_point(&k.point).cluster;
        plan.notes.push(why.note(kv.unwrap_or(4)));
        plan.cluster_refused = Some(why);
    }
    let persist = (plan.loops.iter()).any(|r| matches!(&r.overlap, Ok(o) if o.persist.is_ok()));
    let persist_q = (plan.loops.iter()).find_map(|r| match &r.overlap {
        Ok(o) => o.persist.ok().and_then(|p| p.q),
        Err(_) => None,
    });
    let walk = (plan.loops.iter())
        .find_map(|r| match &r.overlap {
            Ok(o) => o.persist.ok().map(|p| p.walk),
            Err(_) => None,
        })
        .unwrap_or(crate::plan::Walk::RoundRobin);
    if plan.persistent && !allow_persistent {
        plan.persistent = false;
        for (_, ml) in plan.gemms.iter_mut() {
            if let MainLoop::Fast(f) = ml {
                f.plan.persistent = false;
            }
        }
        plan.schedule = crate::plan::Schedule::NotApplied(crate::plan::Blocker::Surroundings);
        if let Some(i) = plan.schedule_note {
            plan.notes[i] = plan.schedule.to_string();
        }
    }
    let em_rows_ahead = plan.rows_ahead.clone();
    let mut element_loaded = BTreeSet::new();
    crate::visit::any_in_stmts(&k.body, &mut |e| {
        crate::visit::loaded_tensors(e, false, &mut element_loaded);
        false
    });
    // An element atomic reads its element too: a tile store before it must be complete.
    phobos_ir::walk::stmts(&k.body, &mut |s| {
        if let phobos_ir::StmtKind::Atomic { tensor, index, .. } = &s.kind {
            if index.iter().all(|i| matches!(i, phobos_ir::Index::At(_))) {
                element_loaded.insert(*tensor);
            }
        }
    });
    let mut em = Emitter {
        k,
        opts,
        names: Names::new(k),
        plan,
        lines: Vec::new(),
        indent: 1,
        tmp: 0,
        scratch_bytes: 0,
        dead_scratch: 0,
        in_dead: false,
        scratch_dirty: false,
        pending: BTreeSet::new(),
        element_loaded,
        column_defs: columns::column_defs(k, columns::Axis::Cols),
        row_defs: columns::column_defs(k, columns::Axis::Rows),
        layouts_used: Default::default(),
        headers: BTreeSet::new(),
        gemm_smem: 0,
        c_smem: 0,
        pipe_stage: 0,
        pipe_buffers: 2,
        ahead: None,
        ring: None,
        extra_warp,
        producer_ring: None,
        persist,
        persist_q,
        walk,
        rows_ahead: (em_rows_ahead.as_ref()).and_then(|r| r.ahead.ok()),
        block_names: None,
        dot_async: false,
        operand_override: None,
        narrow_store: None,
        group_loads: Default::default(),
        packed: Default::default(),
        staged_rows: Default::default(),
        landed: None,
        fused_sums: Default::default(),
        sum_exp: Vec::new(),
        resident_smem: 0,
        resident_at: Default::default(),
        streamed: Default::default(),
        notes: Vec::new(),
        path: Vec::new(),
        last_line: None,
        row_split,
    };
    em.headers.insert(crate::PRELUDE_HEADER);
    em.notes = em.plan.notes.clone();
    em.notes.extend(em.row_split.iter().map(|r| r.to_string()));
    if let Some(n) = em.split_blocks() {
        // The blocks of a cluster must all have started before one writes into another's
        // shared memory (the reductions' cluster step).
        em.headers.insert(crate::CLUSTER_HEADER);
        em.headers.insert("gemm/ptx.cuh");
        em.line(format!(
            "ph::cluster_start<{n}>({CLUSTER_SLOTS});  // ROW_SPLIT: {n} blocks an instance; waited at the first cluster step"
        ));
        em.line(format!(
            "unsigned {CLUSTER_N} = 0;  // the cluster steps so far"
        ));
    }
    if em.plan.persistent {
        return em.persistent_body();
    }
    if em.plan.cluster > 1 {
        // CLUSTER: the blocks of a cluster (consecutive x) take neighbouring M tiles of one N
        // tile; whole clusters are GROUP_M-swizzled.
        em.headers.insert(SCHED_HEADER);
        em.line(format!(
            "int {BX}, {BY}; ph::gemm::cluster_swizzle_block((int)blockIdx.x, (int)blockIdx.y, (int)gridDim.x, (int)gridDim.y, {}, {}, &{BX}, &{BY});",
            em.plan.group_m, em.plan.cluster
        ));
    } else if em.plan.group_m > 1 {
        // GROUP_M: the block's (M tile, N tile) indices in swizzled order, read wherever the
        // kernel reads ctx.block.x/y (a bijection of the grid: blocks never communicate).
        em.headers.insert(SCHED_HEADER);
        em.line(format!(
            "int {BX}, {BY}; ph::gemm::swizzle_block((int)blockIdx.x, (int)blockIdx.y, (int)gridDim.x, (int)gridDim.y, {}, &{BX}, &{BY});",
            em.plan.group_m
        ));
    }
    em.hoisted_declarations()?;
    if em.extra_warp.is_some() {
        em.producer_branch()?;
    }
    if let Some(a) = em.rows_ahead {
        em.rows_ahead_body(a)?;
        return Ok((em.finish()?, false));
    }
    if em.persist {
        em.logical_blocks_begin("the consumers");
        em.block(&k.body, 0)?;
        if em.persist_q.is_some() {
            em.line(format!("++{Q_N};"));
        }
        em.indent -= 1;
        em.line("}");
        // The whole block's `__syncthreads` lies before the producer branches off.
        return Ok((em.finish()?, false));
    }
    em.block(&k.body, 0)?;
    if em.split_blocks().is_some() {
        // The start's arrive is waited for where no cluster step ran.
        em.line(format!("if ({CLUSTER_N} == 0) ph::cluster_wait();"));
    }
    let syncs = em.synchronizes();
    Ok((em.finish()?, syncs))
}

impl<'k> Emitter<'k> {
    /// ROW_SPLIT applied: the blocks of an instance's cluster.
    pub(crate) fn split_blocks(&self) -> Option<u32> {
        self.row_split
            .as_ref()
            .filter(|r| r.split.is_ok())
            .map(|r| r.blocks)
    }

    /// Whether the emitted code (outside the main loops' own functions) has a block barrier or
    /// uses the shared scratch area.
    fn synchronizes(&self) -> bool {
        self.scratch_total() > 0 || self.lines.iter().any(|l| l.contains("__syncthreads"))
    }

    /// The names `ctx.block.x/y` read when blocks are remapped (GROUP_M, CLUSTER, or the
    /// persistent tile loop), else `None`.
    pub(crate) fn remapped_block(&self, axis: u8) -> Option<&'static str> {
        if let Some((x, y)) = self.block_names {
            return [Some(x), Some(y)].get(axis as usize).copied().flatten();
        }
        let remapped = self.plan.group_m > 1
            || self.plan.persistent
            || self.plan.cluster > 1
            || self.logical_grid();
        match axis {
            0 if remapped => Some(BX),
            1 if remapped => Some(BY),
            _ => None,
        }
    }

    /// The names `ctx.grid.x/y` read in the persistent tile loop (the logical grid).
    pub(crate) fn remapped_grid(&self, axis: u8) -> Option<&'static str> {
        match axis {
            0 if self.plan.persistent || self.logical_grid() => Some(GX),
            1 if self.plan.persistent || self.logical_grid() => Some(GY),
            _ => None,
        }
    }

    /// Blocks loop over a logical grid outside the GEMM schedule (`PERSIST`, `ROWS_AHEAD`): the
    /// kernel takes its extents as parameters and the host launches the resident blocks.
    pub(crate) fn logical_grid(&self) -> bool {
        self.persist || self.rows_ahead.is_some()
    }

    pub(crate) fn line(&mut self, s: impl AsRef<str>) {
        let pad = "  ".repeat(self.indent);
        self.lines.push(format!("{pad}{}", s.as_ref()));
    }

    /// Bytes of the scratch area: the largest use, live or dead, but with a staged row
    /// (ROW_SMEM=1) the live code's alone.
    pub(crate) fn scratch_total(&self) -> u32 {
        if self.staged_rows.is_empty() {
            self.scratch_bytes.max(self.dead_scratch)
        } else {
            self.scratch_bytes
        }
    }

    pub(crate) fn fresh(&mut self, base: &str) -> String {
        self.tmp += 1;
        format!("ph_{base}{}", self.tmp)
    }

    pub(crate) fn barrier(&mut self) {
        if self.extra_warp.is_some() {
            // The producer warp is away: the consumers meet on a named barrier of their own.
            self.line(format!("ph::consumer_sync<{}>();", self.k.launch.threads));
        } else {
            self.line("__syncthreads();");
        }
        self.scratch_dirty = false;
        self.pending.clear();
    }

    /// Threads of the launch: the kernel's, and the producer's with `extra_warp`.
    fn launch_threads(&self) -> u32 {
        self.k.launch.threads + self.extra_warp.unwrap_or(0)
    }

    /// Called before a prelude function that uses the scratch area of `bytes` bytes; returns
    /// the scratch argument.
    pub(crate) fn scratch(&mut self, bytes: u32) -> String {
        if self.scratch_dirty {
            self.barrier();
        }
        if self.in_dead {
            self.dead_scratch = self.dead_scratch.max(bytes);
        } else {
            self.scratch_bytes = self.scratch_bytes.max(bytes);
        }
        // The function's own barrier orders everything before it.
        self.scratch_dirty = true;
        self.pending.clear();
        "ph_scratch".into()
    }

    /// The alias of a layout, recording it for the `using` lines. Layouts of one C++ type share
    /// an alias; a name already declaring another type takes a number (`_2`, `_3`).
    pub(crate) fn alias(&mut self, l: &Layout) -> String {
        if let Some(name) = self.layouts_used.get(l) {
            return name.clone();
        }
        let (base, cpp) = (l.alias(), l.cpp());
        let free = |name: &str| {
            self.layouts_used
                .iter()
                .all(|(other, n)| n != name || other.cpp() == cpp)
        };
        let name = std::iter::once(base.clone())
            .chain((2..).map(|i| format!("{base}_{i}")))
            .find(|name| free(name))
            .expect("an unbounded sequence of names has a free one");
        self.layouts_used.insert(l.clone(), name.clone());
        name
    }

    pub(crate) fn tile_type(&mut self, t: phobos_ir::DType, l: &Layout) -> String {
        format!("ph::Tile<{}, {}>", ctype::register(t), self.alias(l))
    }

    /// `#line` directive when a statement starts a new source line.
    pub(crate) fn source_line(&mut self, span: Span) {
        let Some(src) = &self.opts.source else {
            return;
        };
        if span.is_empty() && span.lo == 0 {
            return;
        }
        let (line, _) = src.line_col(span.lo);
        if self.last_line != Some(line) {
            let name = src.name.replace('\\', "/").replace('"', "'");
            self.lines.push(format!("#line {line} \"{name}\""));
            self.last_line = Some(line);
        }
    }

    /// Declarations of locals that cannot be declared where first assigned.
    fn hoisted_declarations(&mut self) -> Result<()> {
        let in_gemm: BTreeSet<usize> = self
            .plan
            .gemms
            .iter()
            .flat_map(|(m, _)| [m.k_var])
            .collect();
        for (l, local) in self.k.locals.iter().enumerate() {
            if self.plan.decl_inline.contains_key(&l)
                || in_gemm.contains(&l)
                || self.plan.resident.contains(&l)
            {
                continue;
            }
            if !crate::visit::stmts_touch_local(&self.k.body, l) {
                continue;
            }
            let name = self.names.locals[l].clone();
            let ty = match &local.ty {
                phobos_ir::Ty::Scalar(t) => ctype::register(*t).to_string(),
                phobos_ir::Ty::Tile(t, _) => {
                    let lay = self.plan.layouts[&l].clone();
                    self.note_layout(l, &lay);
                    self.tile_type(*t, &lay)
                }
            };
            self.line(format!("{ty} {name};"));
        }
        Ok(())
    }
}

fn type_args(k: &Kernel) -> String {
    if k.type_args.is_empty() {
        return String::new();
    }
    let a: Vec<String> = k
        .type_args
        .iter()
        .map(|(n, t)| format!("{n}={t}"))
        .collect();
    format!(" with {}", a.join(", "))
}
