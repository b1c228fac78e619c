//! The streamed buffers of an overlapped loop as a ring guarded by mbarriers (`RING=1`):
//! whether they form one, or why they keep block barriers.

use super::streamed::streamed_loads;
use crate::Target;
use phobos_ir::knobs::Knob;
use phobos_ir::{Kernel, LocalId, Stmt};
use std::collections::BTreeSet;

/// The streamed buffers of an overlapped loop as a ring guarded by mbarriers (`RING=1`) instead
/// of two block barriers an iteration: buffer `b` has a "full" mbarrier, on which every thread
/// arrives once its own copies into `b` have landed (`cp.async.mbarrier.arrive.noinc`) and which
/// every thread waits on before reading `b`, and an "empty" one, on which every thread arrives
/// once its last product reading `b` has completed (after the deferred product's
/// `wgmma.wait_group 0`) and which every thread waits on before copying into `b` again. No block
/// barrier lies in the loop, so the warpgroups of a block drift apart by up to an iteration (each
/// waits only for the other's copies into the buffer it reads and for the other to be done with
/// the buffer it overwrites). The copies stay the block's cp.async (every thread its share).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    /// Buffers in the ring (`Overlap::buffers`); two mbarriers each.
    pub stages: u32,
}

/// Why an overlapped loop keeps block barriers around its streamed buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoRing {
    /// The point does not pin `RING=1`.
    Knob,
    /// The loop streams no operand (every dot reads residents).
    NothingStreamed,
}

impl std::fmt::Display for NoRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoRing::Knob => write!(f, "RING=0"),
            NoRing::NothingStreamed => write!(f, "the loop streams no operand"),
        }
    }
}

/// Whether an overlapped loop's streamed buffers form an mbarrier ring: `RING=1` and some
/// operand streamed.
pub(super) fn ring(
    k: &Kernel,
    target: &Target,
    var: LocalId,
    body: &[Stmt],
    stages: u32,
) -> Result<Ring, NoRing> {
    if Knob::Ring.get(&k.point) != Some(1) {
        return Err(NoRing::Knob);
    }
    let mut assigned = BTreeSet::new();
    crate::visit::assigned_locals(body, &mut assigned);
    if assigned.contains(&var) || streamed_loads(k, target, var, body, &assigned).is_empty() {
        return Err(NoRing::NothingStreamed);
    }
    Ok(Ring { stages })
}
