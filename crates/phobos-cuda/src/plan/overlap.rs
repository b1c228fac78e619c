//! Loops whose wgmma dots overlap the rest of the iteration (FA3's intra-warpgroup overlap).
//!
//! A loop qualifies when its body holds exactly two tensor-core dots, both on wgmma, each in a
//! statement of the body itself (not a nested body):
//!   - the first (`ahead`) computes a fresh product (attention's S = q·Kᵀ) whose operands are
//!     in shared memory when the iteration starts: tile loads the loop streams
//!     ([`streamed_loads`]) or shared-memory residents (`Plan::resident`);
//!   - the second (`behind`) accumulates into a local, `acc = f(acc) + dot(a, b)`, that no
//!     other statement of the body reads or writes; `a` comes from registers (the accumulator
//!     layout's rows, attention's P) and `b` from shared memory like the first's operands.
//!
//! The second dot's product is deferred by one iteration: at its statement only `acc = f(acc)`
//! runs and `a` is kept in registers; the next iteration issues it right after issuing its own
//! first dot, so both are in flight together, and waits for the first only
//! (`wgmma.wait_group 1`): the statements between the two (the softmax) run while the tensor
//! cores finish the deferred product, which is awaited (`wgmma.wait_group 0`) just before
//! `acc` is read again. Nothing stays in flight across the loop's back edge, so ptxas keeps
//! the wgmma asynchronous; the last deferred product is issued after the loop. The streamed
//! copies keep three buffers: this iteration's, the previous one's (still read by the deferred
//! product) and the next one's (in flight). The first iteration's deferred product multiplies
//! zeros (a zeroed `a`, a zeroed buffer), adding exactly nothing.
//!
//! With two warpgroups, each holding its own 64 rows, `PINGPONG=1` adds FA3's
//! inter-warpgroup schedule ([`PingPong`]): the warpgroups take turns issuing the iteration's
//! products, on two named barriers, so that one's softmax runs while the other's products
//! occupy the tensor cores. `RING=1` guards the three buffers with mbarriers instead of block
//! barriers ([`Ring`]), so that the warpgroups need not meet at every iteration.

use super::persist::{persist, NoPersist, Persist, Walk};
use super::pingpong::{pingpong, NoPingPong, PingPong};
use super::producer::{producer, NoProducer, Producer};
use super::ring::{ring, NoRing, Ring};
use super::streamed::streamed_loads;
use super::{scaled_dot, MmaInstr};
use crate::layout::{rc, Layout};
use crate::visit::{bodies, stmt_exprs};
use crate::Target;
use phobos_ir::knobs::Knob;
use phobos_ir::{DType, Expr, ExprKind, Kernel, Lit, LocalId, Stmt, StmtKind};
use std::collections::{BTreeMap, BTreeSet};

/// Buffers of the streamed operands of an overlapped loop (two otherwise).
pub const OVERLAP_BUFFERS: u32 = 3;

/// The plan's decision for one loop with tensor-core dots outside the recognized GEMM loops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopRecord {
    /// The loop variable's name.
    pub var: String,
    /// The loop's path (as in `GemmMatch::path`).
    pub path: Vec<(usize, usize)>,
    pub overlap: Result<Overlap, NoOverlap>,
}

/// A software-pipelined loop: statement indices in its body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// The statement of the first dot.
    pub ahead: usize,
    /// The accumulating statement whose dot is deferred to the next iteration, and its
    /// accumulator.
    pub behind: usize,
    pub acc: LocalId,
    /// Buffers of the streamed operands (`OVERLAP_BUFFERS`) and the shared memory they and
    /// the residents take.
    pub buffers: u32,
    pub smem: u32,
    /// The wait for the deferred dot comes after a CTA memory fence (`OVERLAP=2`): ptxas
    /// schedules `wgmma.wait_group 0` no earlier than the fence, so the statements in between
    /// (the softmax's exponentials) run while the tensor cores finish the deferred product;
    /// without it ptxas moves the wait up to the row max.
    pub fenced: bool,
    /// The two warpgroups take turns issuing the products (`PINGPONG=1`), or why not.
    pub pingpong: Result<PingPong, NoPingPong>,
    /// The streamed buffers guarded by mbarriers (`RING=1`), or why not.
    pub ring: Result<Ring, NoRing>,
    /// The ring filled by a producer warp with TMA (`PRODUCER=1`), or why not.
    pub producer: Result<Producer, NoProducer>,
    /// Persistent blocks over the logical grid, the ring's counter carried across them
    /// (`PERSIST=1`), or why not.
    pub persist: Result<Persist, NoPersist>,
    /// How the deferred dot's A operand waits across the back edge.
    pub kept: KeptA,
}

/// How an overlapped loop keeps the deferred dot's A operand (`T(p)`, p in f32) from the
/// iteration that computes it to the next, which issues the dot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeptA {
    /// As the f32 value, packed to `T` when the dot is issued (a9: the cast costs no round
    /// trip). A [64, 128] P is 64 registers a thread.
    F32,
    /// Packed to `T` at its assignment (FA3's `tOrP`): 32 registers a thread for a [64, 128] P,
    /// live across the back edge beside the next S (64) and O while both products run. Taken
    /// where the consumers get fewer than 240 registers (`Producer::regs`: three consumer
    /// warpgroups, 160), in whose budget the f32 P spills at BC=128.
    Packed,
}

/// Below this many registers a consumer thread (`RegSplit::consumer`), the kept A operand is
/// packed ([`KeptA::Packed`]); at 240 (two consumer warpgroups) it stays f32, as before.
const PACK_KEPT_BELOW: u32 = 240;

/// How the loop keeps the A operand of the deferred dot (in the statement `behind`).
fn kept_a(producer: &Result<Producer, NoProducer>, behind: &Stmt) -> KeptA {
    let narrow =
        (producer.as_ref().ok().and_then(|p| p.regs)).is_some_and(|r| r.consumer < PACK_KEPT_BELOW);
    let cast = stmt_exprs(behind)
        .into_iter()
        .flat_map(dots_in)
        .next()
        .is_some_and(|d| {
            matches!(&d.kind, ExprKind::Dot { a, .. }
            if matches!(&a.kind, ExprKind::Cast(x)
                if matches!(a.ty.dtype(), DType::F16 | DType::BF16) && x.ty.dtype() == DType::F32))
        });
    if narrow && cast {
        KeptA::Packed
    } else {
        KeptA::F32
    }
}

/// Why a loop's dots wait for their wgmma at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoOverlap {
    /// The body holds this many tensor-core dots, not two.
    Dots(usize),
    /// A dot runs on mma.sync (its record says why).
    NotWgmma,
    /// A dot lies in a nested body, or its statement holds more than the dot's own work.
    Placement,
    /// The first dot reads an operand, or the second dot's B operand is one, not in shared
    /// memory before the iteration (neither streamed by the loop nor resident).
    LateOperand,
    /// The second dot's A operand is not in registers in its accumulator's rows.
    RegistersA,
    /// The second dot does not accumulate into a local `acc = f(acc) + dot(..)`, or the body
    /// reads `acc` elsewhere.
    Accumulator,
    /// The step is not a positive constant.
    Step,
    /// The body may leave an iteration early (`break` or `continue`), skipping the second
    /// dot's statement.
    EarlyExit,
    /// Three buffers and the residents need `need` bytes of shared memory, above the target's
    /// `limit`.
    SharedMemory { need: u32, limit: u32 },
    /// The point pins `OVERLAP=0` (the loop qualifies otherwise).
    Knob,
}

impl std::fmt::Display for LoopRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = &self.var;
        match &self.overlap {
            Ok(o) => write!(
                f,
                "loop over {v}: wgmma overlapped (statement {}'s dot issued with statement {}'s of the iteration before, wgmma.wait_group 1 before the first's result; {} buffers of streamed operands{}{}{}{}{}{}{})",
                o.ahead + 1,
                o.behind + 1,
                o.buffers,
                if o.fenced {
                    "; the wait for the second behind a fence: OVERLAP=2"
                } else {
                    ""
                },
                match o.pingpong {
                    // The default says nothing (the notes as before the knob).
                    Err(NoPingPong::Knob) => String::new(),
                    Ok(p) => format!(
                        "; the two warpgroups take turns issuing them, on named barriers {} and {}: PINGPONG=1",
                        p.barrier,
                        p.barrier + 1
                    ),
                    Err(why) => format!("; no ping-pong: {why}"),
                },
                match o.ring {
                    Err(NoRing::Knob) => String::new(),
                    Ok(r) => format!(
                        "; the {} buffers guarded by full and empty mbarriers, no block barrier in the loop: RING=1",
                        r.stages
                    ),
                    Err(why) => format!("; no mbarrier ring: {why}"),
                },
                match o.producer {
                    Err(NoProducer::Knob) => String::new(),
                    Ok(p) => format!(
                        "; a producer {} fills them by TMA ({} boxes, {} bytes a stage; {} consumer threads{}): PRODUCER={}",
                        if p.threads == 32 { "warp" } else { "warpgroup" },
                        p.boxes,
                        p.bytes,
                        p.consumers,
                        match p.regs {
                            Some(r) => format!(
                                ", setmaxnreg {} registers a producer thread and {} a consumer one",
                                r.producer, r.consumer
                            ),
                            None => String::new(),
                        },
                        if p.threads == 32 { 1 } else { 2 }
                    ),
                    Err(why) => format!("; no producer warp: {why}"),
                },
                match o.persist {
                    Err(NoPersist::Knob) => String::new(),
                    Ok(Persist { q: None, .. }) => "; persistent blocks loop over the logical grid, the ring's tile counter carried across them: PERSIST=1".to_string(),
                    Ok(Persist { q: Some(q), .. }) => format!(
                        "; persistent blocks loop over the logical grid, the ring's tile counter carried across them, the producer loading the resident operand too ({} boxes, {} bytes, on q-full and q-empty mbarriers): PERSIST=2",
                        q.boxes, q.bytes
                    ),
                    Err(why) => format!("; not persistent: {why}"),
                },
                match o.persist {
                    Ok(Persist { walk: Walk::Snake, .. }) => {
                        "; the logical blocks walked in a snake, x slowest: WALK=1"
                    }
                    Ok(Persist { walk: Walk::Paired, .. }) => {
                        "; the logical blocks walked in pairs of x and gx - 1 - x: WALK=2"
                    }
                    _ => "",
                },
                match o.kept {
                    KeptA::F32 => "",
                    KeptA::Packed => "; the deferred dot's A operand kept packed to its type across iterations",
                }
            ),
            Err(why) => write!(f, "loop over {v}: wgmma not overlapped: {why}"),
        }
    }
}

impl std::fmt::Display for NoOverlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoOverlap::Dots(n) => write!(f, "{n} tensor-core dot(s) in the body, not two"),
            NoOverlap::NotWgmma => write!(f, "a dot runs on mma.sync"),
            NoOverlap::Placement => write!(
                f,
                "a dot is not in a statement of the loop's own body, or is not the first one's only dot"
            ),
            NoOverlap::LateOperand => write!(
                f,
                "a dot reads a shared-memory operand that is neither streamed by the loop nor resident"
            ),
            NoOverlap::RegistersA => write!(
                f,
                "the second dot's A operand is not in registers in its accumulator's rows"
            ),
            NoOverlap::Accumulator => write!(
                f,
                "the second dot does not accumulate into a local that only its statement touches"
            ),
            NoOverlap::Step => write!(f, "the step is not a positive constant"),
            NoOverlap::EarlyExit => write!(f, "the body has a break or continue"),
            NoOverlap::SharedMemory { need, limit } => write!(
                f,
                "{need} bytes of shared memory for three buffers, above the limit of {limit}"
            ),
            NoOverlap::Knob => write!(f, "OVERLAP=0"),
        }
    }
}

/// The dots of `e` (pre-order).
fn dots_in(e: &Expr) -> Vec<&Expr> {
    let mut out = Vec::new();
    fn go<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
        if matches!(e.kind, ExprKind::Dot { .. }) {
            out.push(e);
        }
        crate::visit::children(e)
            .into_iter()
            .for_each(|c| go(c, out));
    }
    go(e, &mut out);
    out
}

/// A callback on a statement and its path.
type StmtVisitor<'f> = dyn FnMut(&Stmt, &[(usize, usize)]) + 'f;

/// The record of every loop (outside recognized GEMM loops) whose body holds a tensor-core dot
/// on wgmma: whether it is overlapped, or why not.
pub(super) fn loop_records(
    k: &Kernel,
    target: &Target,
    layouts: &BTreeMap<LocalId, Layout>,
    resident: &BTreeSet<LocalId>,
    gemm_paths: &[Vec<(usize, usize)>],
    extra_warp: Option<u32>,
) -> Vec<LoopRecord> {
    let mut out = Vec::new();
    fn walk(
        stmts: &[Stmt],
        body_idx: usize,
        path: &mut Vec<(usize, usize)>,
        f: &mut StmtVisitor<'_>,
    ) {
        for (i, s) in stmts.iter().enumerate() {
            path.push((body_idx, i));
            f(s, path);
            for (bi, b) in bodies(s).into_iter().enumerate() {
                walk(b, bi, path, f);
            }
            path.pop();
        }
    }
    let mut path = Vec::new();
    walk(&k.body, 0, &mut path, &mut |s, p| {
        let StmtKind::For {
            var, step, body, ..
        } = &s.kind
        else {
            return;
        };
        if gemm_paths.iter().any(|g| g == p) {
            return;
        }
        fn body_dots<'a>(stmts: &'a [Stmt], out: &mut Vec<&'a Expr>) {
            for s in stmts {
                for e in stmt_exprs(s) {
                    out.extend(dots_in(e));
                }
                for b in bodies(s) {
                    body_dots(b, out);
                }
            }
        }
        let mut dots = Vec::new();
        body_dots(body, &mut dots);
        dots.retain(|e| super::dot_mma(k, target, e).is_ok());
        let instr = |d: &Expr| {
            super::dot_mma(k, target, d)
                .ok()
                .map(|acc| super::dot_instr(target, d, &acc, layouts))
        };
        if !dots.iter().any(|d| instr(d) == Some(MmaInstr::Wgmma)) {
            return;
        }
        out.push(LoopRecord {
            var: k.locals[*var].name.clone(),
            path: p.to_vec(),
            overlap: overlap(
                k, target, *var, step, body, &dots, layouts, resident, &instr,
            )
            .and_then(|o| match Knob::Overlap.get(&k.point) {
                Some(0) => Err(NoOverlap::Knob),
                Some(2) => Ok(Overlap { fenced: true, ..o }),
                _ => Ok(o),
            })
            .map(|o| {
                let ring = ring(k, target, *var, body, o.buffers);
                let producer = producer(k, target, s, p, &ring, extra_warp);
                Overlap {
                    kept: kept_a(&producer, &body[o.behind]),
                    pingpong: pingpong(k),
                    persist: persist(
                        k,
                        &producer,
                        o.buffers,
                        resident,
                        match p {
                            [(0, at)] => Some(*at),
                            _ => None,
                        },
                    ),
                    producer,
                    ring,
                    ..o
                }
            }),
        });
    });
    out
}

#[allow(clippy::too_many_arguments)]
fn overlap(
    k: &Kernel,
    target: &Target,
    var: LocalId,
    step: &Expr,
    body: &[Stmt],
    dots: &[&Expr],
    layouts: &BTreeMap<LocalId, Layout>,
    resident: &BTreeSet<LocalId>,
    instr: &dyn Fn(&Expr) -> Option<MmaInstr>,
) -> Result<Overlap, NoOverlap> {
    if dots.len() != 2 {
        return Err(NoOverlap::Dots(dots.len()));
    }
    if dots.iter().any(|d| instr(d) != Some(MmaInstr::Wgmma)) {
        return Err(NoOverlap::NotWgmma);
    }
    if !matches!(step.kind, ExprKind::Lit(Lit::Int(v)) if v > 0) {
        return Err(NoOverlap::Step);
    }
    fn exits(stmts: &[Stmt]) -> bool {
        stmts.iter().any(|s| match &s.kind {
            StmtKind::Break | StmtKind::Continue => true,
            // A nested loop's own break or continue stays in it.
            StmtKind::For { .. } | StmtKind::While { .. } => false,
            _ => bodies(s).into_iter().any(exits),
        })
    }
    if exits(body) {
        return Err(NoOverlap::EarlyExit);
    }
    // Each dot in its own statement of the body itself.
    let stmt_of = |d: &Expr| {
        body.iter().position(|s| {
            stmt_exprs(s)
                .into_iter()
                .any(|e| dots_in(e).iter().any(|x| std::ptr::eq(*x, d)))
        })
    };
    let (Some(ahead), Some(behind)) = (stmt_of(dots[0]), stmt_of(dots[1])) else {
        return Err(NoOverlap::Placement);
    };
    if ahead >= behind {
        return Err(NoOverlap::Placement);
    }
    // The first: a fresh product, not an accumulation, of operands in shared memory.
    let StmtKind::Assign { local: s_local, .. } = &body[ahead].kind else {
        return Err(NoOverlap::Placement);
    };
    if stmt_exprs(&body[ahead])
        .iter()
        .any(|e| super::accumulates_dot(*s_local, e).is_some())
    {
        return Err(NoOverlap::Placement);
    }
    let mut assigned = BTreeSet::new();
    crate::visit::assigned_locals(body, &mut assigned);
    let streamed = streamed_loads(k, target, var, body, &assigned);
    let ExprKind::Dot { a, b, .. } = &dots[0].kind else {
        return Err(NoOverlap::Placement);
    };
    let early = |op: &Expr| {
        streamed.iter().any(|x| std::ptr::eq(*x, op))
            || matches!(op.kind, ExprKind::Local(l) if resident.contains(&l))
    };
    if !early(a) || !early(b) {
        return Err(NoOverlap::LateOperand);
    }
    // The second: `acc = f(acc) + dot(..)`, acc touched by no other statement of the body.
    let StmtKind::Assign { local: acc, value } = &body[behind].kind else {
        return Err(NoOverlap::Accumulator);
    };
    let acc_mma = super::dot_mma(k, target, dots[1]).map_err(|_| NoOverlap::Accumulator)?;
    match scaled_dot(*acc, value, &Layout::Mma(acc_mma)) {
        Some((_, d)) if std::ptr::eq(d, dots[1]) => {}
        _ => return Err(NoOverlap::Accumulator),
    }
    let ExprKind::Dot { a: pa, b: pb, .. } = &dots[1].kind else {
        return Err(NoOverlap::Accumulator);
    };
    let in_rows = matches!(super::natural(k, target, layouts, pa),
        Some(Layout::Mma(p)) if super::a_from_registers(&p, &acc_mma));
    if !in_rows || matches!(pa.kind, ExprKind::Local(l) if resident.contains(&l)) {
        return Err(NoOverlap::RegistersA);
    }
    if !early(pb) {
        return Err(NoOverlap::LateOperand);
    }
    let others_touch = body.iter().enumerate().any(|(i, s)| {
        i != behind && crate::visit::stmts_touch_local(std::slice::from_ref(s), *acc)
    });
    if others_touch {
        return Err(NoOverlap::Accumulator);
    }
    // Shared memory: the residents and three buffers of the streamed operands.
    let bytes = |e: &Expr| {
        let (r, c) = rc(e.ty.shape().unwrap_or(&[1]));
        crate::layout::staged_bytes(r, c)
    };
    let stage: u32 = streamed.iter().map(|e| bytes(e)).sum();
    let res: u32 = resident
        .iter()
        .map(|l| {
            let (r, c) = rc(k.locals[*l].ty.shape().unwrap_or(&[1]));
            crate::layout::staged_bytes(r, c)
        })
        .sum();
    let need = res + OVERLAP_BUFFERS * stage;
    let limit = target.max_smem_per_block();
    if need > limit {
        return Err(NoOverlap::SharedMemory { need, limit });
    }
    Ok(Overlap {
        ahead,
        behind,
        acc: *acc,
        buffers: OVERLAP_BUFFERS,
        smem: need,
        fenced: false,
        pingpong: Err(NoPingPong::Knob),
        ring: Err(NoRing::Knob),
        producer: Err(NoProducer::Knob),
        persist: Err(NoPersist::Knob),
        kept: KeptA::F32,
    })
}
