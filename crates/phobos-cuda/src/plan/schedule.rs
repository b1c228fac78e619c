//! The SCHEDULE decision: one block per tile, or the persistent schedule (SCHEDULE=2), or why
//! the persistent schedule was declared and not applied. A typed record in the plan; the notes
//! render it.

use super::cluster::{one_gemm_with_producer_warp, NoProducerLoop};
use crate::gemm_match::GemmMatch;
use crate::mainloop::MainLoop;
use phobos_ir::{ExprKind, Kernel};

/// How the kernel's blocks map to its tiles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// One block per tile (SCHEDULE=1, or not declared).
    OneBlockPerTile,
    /// SCHEDULE=2 applied: each block loops over the tiles of the logical grid.
    Persistent,
    /// SCHEDULE=2 declared, one block per tile run instead, and why.
    NotApplied(Blocker),
}

/// Why SCHEDULE=2 does not apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocker {
    /// The kernel's GEMM is not one wgmma main loop with a producer warp.
    MainLoop(NoProducerLoop),
    /// SPLIT_K applies: its parts are the grid's z axis.
    SplitK,
    /// The kernel's own grid has a z axis.
    GridZ,
    /// The code around the main loop synchronizes the block or uses the shared scratch (the
    /// producer warp, running ahead, would wait for the consumers while they wait for it).
    Surroundings,
}

impl std::fmt::Display for Blocker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Blocker::MainLoop(why) => write!(f, "{why}"),
            Blocker::SplitK => write!(f, "SPLIT_K uses the grid's z axis"),
            Blocker::GridZ => write!(f, "the kernel's grid has a z axis"),
            Blocker::Surroundings => write!(
                f,
                "the code around the main loop synchronizes the block or uses shared memory"
            ),
        }
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Schedule::OneBlockPerTile => write!(f, "one block per tile"),
            Schedule::Persistent => write!(
                f,
                "SCHEDULE=2 (persistent): each block loops over the tiles of the grid (the \
                 launch has as many blocks as are resident at once); the producer warp loads \
                 the next tile's stages while the consumers store the last"
            ),
            Schedule::NotApplied(why) => {
                write!(f, "SCHEDULE=2 not applied (one block per tile): {why}")
            }
        }
    }
}

impl Schedule {
    /// The note of the decision under the declared `SCHEDULE` value (2 or 3, 3 being 2 with
    /// the early release): the value as the point spells it.
    pub fn note(&self, knob: u32) -> String {
        self.to_string()
            .replacen("SCHEDULE=2", &format!("SCHEDULE={knob}"), 1)
    }
}

/// Why the kernel cannot loop over its tiles, or `None`: it needs exactly one recognized GEMM,
/// on the wgmma main loop with a producer warp, a grid without a z axis, and no SPLIT_K. (The
/// emitter adds the last condition: no block barrier in the code around the main loop.)
pub fn persistent_blocker(
    k: &Kernel,
    gemms: &[(GemmMatch, MainLoop)],
    split_k: bool,
) -> Option<Blocker> {
    if let Err(why) = one_gemm_with_producer_warp(gemms) {
        return Some(Blocker::MainLoop(why));
    }
    if split_k {
        return Some(Blocker::SplitK);
    }
    if !matches!(k.grid[2].kind, ExprKind::Lit(phobos_ir::Lit::Int(1))) {
        return Some(Blocker::GridZ);
    }
    None
}
