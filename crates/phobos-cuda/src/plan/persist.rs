//! The persistent schedule of a loop with a producer warpgroup (`PERSIST=1`, FA3's persistent
//! form): a typed record beside `Overlap::producer`.

use super::producer::{head_tile, producer_scalar_stmt, NoProducer, Producer};
use phobos_ir::knobs::Knob;
use phobos_ir::{Ctx, ExprKind, Kernel, Lit, LocalId, StmtKind};
use std::collections::BTreeSet;

/// Persistent blocks (`PERSIST=1`): the launch has as many blocks as are resident at once (at
/// most the logical grid's), the kernel takes the logical grid's extents as two more
/// parameters (those of the GEMM persistent schedule), and the consumers and the producer each
/// loop over the logical blocks `blockIdx.x, blockIdx.x + gridDim.x, ..` (x fastest, as the
/// logical grid orders them; or in a snake, [`Walk`]). The ring's tile counter runs on across
/// a block's logical blocks: the producer's (stage and phase continue, so it fills the next
/// logical block's first tiles while the consumers finish the previous one) and the consumers'
/// (their first deferred product of a later logical block reads the previous one's last
/// buffer, with the kept A operand zeroed; the ring's zeroed buffer is written once, in the
/// first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Persist {
    /// Buffers of the ring whose counter continues.
    pub stages: u32,
    /// The resident tile the producer loads by TMA too (`PERSIST=2`), or `None`: the consumers
    /// load it with cp.async at each logical block's start.
    pub q: Option<QByProducer>,
    /// The order both loops take the logical blocks in (`WALK`).
    pub walk: Walk,
}

/// The order of a persistent block's logical blocks; the producer's and the consumers' loops
/// walk the same one (the ring's counters pair their tiles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// `WALK=0`: block j takes t = j, j + G, .. (G = gridDim.x), x fastest (`bx = t % gx`).
    RoundRobin,
    /// `WALK=1`: rounds r = 0, 1, .. of G logical blocks, block j taking t = r·G + j in an even
    /// round and r·G + G − 1 − j in an odd one (t past the grid skipped), x slowest
    /// (`bx = t / gy`): when work falls with x (causal attention's reversed row blocks), the
    /// heaviest go first in every y and the snake pairs each round's heavy with the next
    /// round's light (bench/NOTES.md a15).
    Snake,
    /// `WALK=2`: the row blocks in pairs (x and gx − 1 − x of one y, x < gx − 1 − x; the middle
    /// x of an odd gx alone), units u = j, j + G, .. of block j, each unit's two logical blocks
    /// one after the other, x = p first (`p = u % cdiv(gx, 2)`, `y = u / cdiv(gx, 2)`): when
    /// work rises or falls linearly in x (causal attention's row blocks), every unit carries
    /// the same work, so round robin over units balances to the rounding of the units'
    /// count, while the blocks in flight still span a few y (the K/V of a few heads live in L2,
    /// as at WALK=0; bench/NOTES.md a18).
    Paired,
}

/// The one shared-memory resident dot operand (attention's q, `Plan::resident`) loaded by the
/// producer (`PERSIST=2`): per logical block it waits on a q-empty mbarrier (the consumers
/// arrive on it once their last Q·Kᵀ of the previous logical block has completed), arrives on a
/// q-full one with the tile's bytes (`expect_tx`) and issues its boxes (64 columns by the tile's
/// rows by one head, on a third rank-3 map); the consumers wait on q-full instead of copying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QByProducer {
    /// The resident local and the index of its one assignment in the kernel's body.
    pub local: LocalId,
    pub stmt: usize,
    /// TMA boxes (64-column slabs) and the bytes they bring.
    pub boxes: u32,
    pub bytes: u32,
}

/// Why each logical block is a block of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoPersist {
    /// The point does not pin `PERSIST=1`.
    Knob,
    /// The ring has no producer warpgroup (`PRODUCER=2`), whose own loop carries the counter.
    Producer,
    /// The kernel's grid has a z axis, or the kernel reads `ctx.block.z` / `ctx.grid.z`.
    Grid,
}

impl std::fmt::Display for NoPersist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoPersist::Knob => write!(f, "PERSIST=0"),
            NoPersist::Producer => {
                write!(f, "the ring has no producer warpgroup (PRODUCER=2)")
            }
            NoPersist::Grid => write!(f, "the grid has a z axis"),
        }
    }
}

/// Whether the loop whose ring `producer` fills (with `stages` buffers) runs persistent blocks.
/// `PERSIST=2` also has the producer load the resident operand `q` ([`QByProducer`]) when
/// there is exactly one, assigned once at the top level before the loop (at `at`) from a head's
/// tile whose indices the producer's scalar statements compute.
pub(super) fn persist(
    k: &Kernel,
    producer: &Result<Producer, NoProducer>,
    stages: u32,
    resident: &BTreeSet<LocalId>,
    at: Option<usize>,
) -> Result<Persist, NoPersist> {
    let knob = Knob::Persist.get(&k.point);
    if !matches!(knob, Some(1 | 2)) {
        return Err(NoPersist::Knob);
    }
    if !matches!(producer, Ok(p) if p.threads == 128) {
        return Err(NoPersist::Producer);
    }
    let reads_z = crate::visit::any_in_stmts(&k.body, &mut |e| {
        matches!(e.kind, ExprKind::Ctx(Ctx::Block(2) | Ctx::Grid(2)))
    });
    if reads_z || !matches!(k.grid[2].kind, ExprKind::Lit(Lit::Int(1))) {
        return Err(NoPersist::Grid);
    }
    let q = match (knob, at) {
        (Some(2), Some(at)) => q_by_producer(k, resident, at),
        _ => None,
    };
    let walk = match Knob::Walk.get(&k.point) {
        Some(1) => Walk::Snake,
        Some(2) => Walk::Paired,
        _ => Walk::RoundRobin,
    };
    Ok(Persist { stages, q, walk })
}

fn q_by_producer(k: &Kernel, resident: &BTreeSet<LocalId>, at: usize) -> Option<QByProducer> {
    let [l] = resident.iter().copied().collect::<Vec<_>>()[..] else {
        return None;
    };
    let mut found = None;
    let mut from_tiles = BTreeSet::new();
    for (i, st) in k.body[..at].iter().enumerate() {
        match &st.kind {
            StmtKind::Assign { local, value } if *local == l => found = Some((i, value)),
            _ if !producer_scalar_stmt(st) => {
                crate::visit::assigned_locals(std::slice::from_ref(st), &mut from_tiles)
            }
            _ => {}
        }
    }
    let (i, value) = found?;
    let t = head_tile(k, value)?;
    let reads_tiles = |e: &phobos_ir::Expr| {
        crate::visit::any_expr(
            e,
            &mut |x| matches!(x.kind, ExprKind::Local(v) if from_tiles.contains(&v) || v == l),
        )
    };
    if reads_tiles(t.head) || reads_tiles(t.row) {
        return None;
    }
    Some(QByProducer {
        local: l,
        stmt: i,
        boxes: (t.cols / 64) as u32,
        bytes: (t.rows * t.cols * 2) as u32,
    })
}
