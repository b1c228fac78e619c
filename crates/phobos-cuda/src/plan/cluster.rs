//! Whether a kernel's GEMM can run in clusters whose blocks share an operand tile (CLUSTER):
//! one recognized GEMM on the wgmma main loop with a producer warp, its shared operand's start
//! and k range independent of the block index that tells the cluster's blocks apart.

use crate::gemm_fast::{NoClusterLoop, SharedOperand, Strategy};
use crate::gemm_match::GemmMatch;
use crate::mainloop::MainLoop;
use crate::visit::{bodies, stmt_exprs};
use phobos_ir::{Expr, ExprKind, Kernel, LocalId, Stmt, StmtKind};
use std::collections::BTreeSet;

/// Why the kernel cannot run in clusters whose blocks share the GEMM's B tile, or `None`. Both
/// blocks of a cluster must run the main loop, on the same B tile and k range: exactly one
/// recognized GEMM, at the kernel's top level (under no branch or loop), unbatched, with B's
/// start, the k range and everything they are computed from independent of `ctx.block.x`
/// (which tells the cluster's blocks apart); a producer warp (the waits on the other block stay
/// out of the consumers' way); and no read of `ctx.grid.x` (the launch rounds the grid's x up to
/// whole clusters). The persistent schedule combines: the cluster walks the tiles in whole
/// clusters, its blocks in lock step. SPLIT_K combines: the cluster's blocks share
/// `blockIdx.z`, so they run the same part of the k range; a padding block past M stores no
/// partial tile (its C region is empty) and still takes its ticket on its own counter.
/// Sharing A (`shared`, CLUSTER=4): the blocks differ in `ctx.block.y` instead (A's start and
/// the k range independent of it), and only the persistent schedule's tile loop (`persistent`)
/// pairs them.
pub fn cluster_blocker(
    k: &Kernel,
    gemms: &[(GemmMatch, MainLoop)],
    shared: SharedOperand,
    persistent: bool,
) -> Option<NoCluster> {
    // The producer warp: with thread 0 issuing the copies between its MMAs, its warpgroup
    // waited for the other block every k step, at 0.64x the speed (bench/NOTES.md, v6).
    let m = match one_gemm_with_producer_warp(gemms) {
        Ok(m) => m,
        Err(why) => return Some(NoCluster::MainLoop(why)),
    };
    if m.path.len() != 1 {
        return Some(NoCluster::UnderBranch);
    }
    if !m.a.batch.is_empty() || !m.b.batch.is_empty() {
        return Some(NoCluster::Batched);
    }
    let reads_grid_x = crate::visit::any_in_stmts(&k.body, &mut |e| {
        matches!(e.kind, ExprKind::Ctx(phobos_ir::Ctx::Grid(0)))
    });
    if reads_grid_x {
        return Some(NoCluster::ReadsGridX);
    }
    let (axis, start) = match shared {
        SharedOperand::B => (0, &m.b.mn_start),
        SharedOperand::A => (1, &m.a.mn_start),
    };
    if shared == SharedOperand::A && !persistent {
        return Some(NoCluster::ShareANeedsPersistent);
    }
    let by_block = block_axis_locals(&k.body, axis);
    if [start, &m.k_start, &m.k_end]
        .into_iter()
        .any(|e| reads_block_axis(e, &by_block, axis))
    {
        return Some(NoCluster::DependsOnBlock(shared));
    }
    None
}

/// Why CLUSTER (declared above 1) does not apply: the kernel runs one block per cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoCluster {
    /// The kernel's GEMM is not one wgmma main loop with a producer warp.
    MainLoop(NoProducerLoop),
    /// The GEMM loop is under a branch or loop, which both blocks must take.
    UnderBranch,
    /// The GEMM's operands are batched.
    Batched,
    /// The kernel reads `ctx.grid.x` (the launch rounds the grid's x up to whole clusters).
    ReadsGridX,
    /// The shared operand's start or the k range depends on the block index that tells the
    /// cluster's blocks apart: `ctx.block.x` for B, `ctx.block.y` for A.
    DependsOnBlock(SharedOperand),
    /// Sharing A (CLUSTER=4 or 5) without the persistent schedule declared.
    ShareANeedsPersistent,
    /// Sharing A was planned on the persistent schedule, which the code around the main loop
    /// then ruled out ([`super::Blocker::Surroundings`]).
    PersistentRuledOut,
    /// The main loop cannot share the operand ([`crate::gemm_fast::GemmPlan::apply_cluster`]).
    Loop(NoClusterLoop),
}

impl std::fmt::Display for NoCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoCluster::MainLoop(why) => write!(f, "{why}"),
            NoCluster::UnderBranch => write!(
                f,
                "the GEMM loop is under a branch or loop, which both blocks must take"
            ),
            NoCluster::Batched => write!(f, "batched operands"),
            NoCluster::ReadsGridX => write!(f, "the kernel reads ctx.grid.x"),
            NoCluster::DependsOnBlock(SharedOperand::B) => {
                write!(f, "B's tile or the k range depends on ctx.block.x")
            }
            NoCluster::DependsOnBlock(SharedOperand::A) => {
                write!(f, "A's tile or the k range depends on ctx.block.y")
            }
            NoCluster::ShareANeedsPersistent => write!(
                f,
                "sharing A needs the persistent schedule (SCHEDULE=2 or 3)"
            ),
            NoCluster::PersistentRuledOut => write!(
                f,
                "sharing A needs the persistent schedule, which the code around the main loop \
                 rules out"
            ),
            NoCluster::Loop(why) => write!(f, "{why}"),
        }
    }
}

impl NoCluster {
    /// The note under the declared `CLUSTER` value: the value as the point spells it.
    pub fn note(&self, knob: u32) -> String {
        format!("CLUSTER={knob} not applied (one block per cluster): {self}")
    }
}

/// Why a kernel's GEMM is not the one wgmma main loop with a producer warp that the
/// persistent schedule and clusters build on (`one_gemm_with_producer_warp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoProducerLoop {
    /// The kernel has no recognized GEMM loop, or more than one.
    NotOneGemm,
    /// The GEMM runs the generic FFMA loop of `phobos_dot.cuh`.
    GenericLoop,
    /// The GEMM runs a `cuda/gemm/` main loop other than wgmma (no sm_90a, or operands the
    /// copy engine cannot map).
    NotWgmma,
    /// The wgmma loop's copies are issued by thread 0: `@launch` has no producer warp.
    NoProducerWarp,
}

impl NoProducerLoop {
    /// The reason as the notes say it.
    pub fn reason(self) -> &'static str {
        match self {
            NoProducerLoop::NotOneGemm => "it needs exactly one recognized GEMM loop",
            NoProducerLoop::GenericLoop => "it needs the wgmma main loop",
            NoProducerLoop::NotWgmma => "it needs the wgmma main loop (sm_90a, aligned operands)",
            NoProducerLoop::NoProducerWarp => {
                "it needs a producer warp: @launch(128 * warpgroups + 32)"
            }
        }
    }
}

impl std::fmt::Display for NoProducerLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.reason())
    }
}

/// The one recognized GEMM of the kernel when it runs on the wgmma main loop with a producer
/// warp (what both the persistent schedule and clusters build on), else why not.
pub(super) fn one_gemm_with_producer_warp(
    gemms: &[(GemmMatch, MainLoop)],
) -> Result<&GemmMatch, NoProducerLoop> {
    let [(m, ml)] = gemms else {
        return Err(NoProducerLoop::NotOneGemm);
    };
    let MainLoop::Fast(f) = ml else {
        return Err(NoProducerLoop::GenericLoop);
    };
    if f.plan.strategy != Strategy::Sm90 {
        return Err(NoProducerLoop::NotWgmma);
    }
    if f.plan.threads % 128 != 32 {
        return Err(NoProducerLoop::NoProducerWarp);
    }
    Ok(m)
}

/// True when `e` reads `ctx.block.x` or one of the locals in `by_x`.
fn reads_block_axis(e: &Expr, by_block: &BTreeSet<LocalId>, axis: u8) -> bool {
    crate::visit::any_expr(e, &mut |x| match &x.kind {
        ExprKind::Ctx(phobos_ir::Ctx::Block(a)) => *a == axis,
        ExprKind::Local(l) => by_block.contains(l),
        _ => false,
    })
}

/// The locals whose value may depend on `ctx.block.x`: assigned from an expression that reads
/// it or such a local, or assigned under a condition or loop bound that does (to a fixpoint).
fn block_axis_locals(body: &[Stmt], axis: u8) -> BTreeSet<LocalId> {
    fn walk(stmts: &[Stmt], under: bool, set: &mut BTreeSet<LocalId>, axis: u8) -> bool {
        let mut grew = false;
        for s in stmts {
            let own = stmt_exprs(s)
                .into_iter()
                .any(|e| reads_block_axis(e, set, axis));
            // An atomic's old value may come from any block.
            let atomic = matches!(s.kind, StmtKind::Atomic { .. });
            let target = match &s.kind {
                StmtKind::Assign { local, .. } => Some(*local),
                StmtKind::For { var, .. } => Some(*var),
                StmtKind::Atomic { old, .. } => *old,
                _ => None,
            };
            if let Some(l) = target {
                if (under || own || atomic) && set.insert(l) {
                    grew = true;
                }
            }
            for b in bodies(s) {
                grew |= walk(b, under || own, set, axis);
            }
        }
        grew
    }
    let mut set = BTreeSet::new();
    while walk(body, false, &mut set, axis) {}
    set
}
