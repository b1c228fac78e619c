//! The persistent schedule of a loop with a producer warpgroup (`PERSIST=1`, FA3's persistent
//! form): a typed record beside `Overlap::producer`.

use super::overlap::{NoProducer, Producer};
use phobos_ir::knobs::Knob;
use phobos_ir::{Ctx, ExprKind, Kernel, Lit};

/// Persistent blocks (`PERSIST=1`): the launch has as many blocks as are resident at once (at
/// most the logical grid's), the kernel takes the logical grid's extents as two more
/// parameters (those of the GEMM persistent schedule), and the consumers and the producer each
/// loop over the logical blocks `blockIdx.x, blockIdx.x + gridDim.x, ..` (x fastest, as the
/// logical grid orders them). The ring's tile counter runs on across a block's logical blocks:
/// the producer's (stage and phase continue, so it fills the next logical block's first tiles
/// while the consumers finish the previous one) and the consumers' (their first deferred
/// product of a later logical block reads the previous one's last buffer, with the kept A
/// operand zeroed; the ring's zeroed buffer is written once, in the first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Persist {
    /// Buffers of the ring whose counter continues.
    pub stages: u32,
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
pub(super) fn persist(
    k: &Kernel,
    producer: &Result<Producer, NoProducer>,
    stages: u32,
) -> Result<Persist, NoPersist> {
    if Knob::Persist.get(&k.point) != Some(1) {
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
    Ok(Persist { stages })
}
