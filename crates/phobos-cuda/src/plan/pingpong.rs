//! FA3's ping-pong of an overlapped loop's two warpgroups (`PINGPONG=1`): whether they take
//! turns issuing the iteration's products, on which named barriers, or why not.

use phobos_ir::knobs::Knob;
use phobos_ir::Kernel;

/// The named barriers of the ping-pong ([`PingPong`]): warpgroup `w` waits for its turn on
/// `PINGPONG_BARRIER + w`. No other code of a kernel with attention loops uses them (block
/// barriers are 0; the GEMM loops' TMA store, which takes 1 and 2, is never in the same kernel's
/// loop).
pub const PINGPONG_BARRIER: u32 = 14;

/// FA3's ping-pong of an overlapped loop's two warpgroups (`PINGPONG=1`): before issuing the
/// iteration's two products a warpgroup waits (`bar.sync`) on its own named barrier, and after
/// issuing them it arrives (`bar.arrive`) on the other's; warpgroup 1 arrives once on warpgroup
/// 0's before the loop (warpgroup 0 goes first), and warpgroup 0 waits once more after it (the
/// arrival of warpgroup 1's last turn), so both barriers complete as often as they are reached.
/// Both warpgroups run every iteration (the loop's trip count is the block's: the streamed
/// copies already meet at block barriers each iteration, and causal attention's bound
/// `min(N, r + BR)` is the block's), and no block barrier lies between a wait and its arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingPong {
    /// Warpgroup 0's barrier; warpgroup 1's is the next.
    pub barrier: u32,
}

/// Why an overlapped loop's warpgroups do not take turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoPingPong {
    /// The point does not pin `PINGPONG=1`.
    Knob,
    /// The block has this many warpgroups, not two.
    Warpgroups(u32),
}

impl std::fmt::Display for NoPingPong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoPingPong::Knob => write!(f, "PINGPONG=0"),
            NoPingPong::Warpgroups(n) => write!(f, "{n} warpgroup(s), not two"),
        }
    }
}

/// Whether an overlapped loop's warpgroups take turns: `PINGPONG=1` and two warpgroups. (Its
/// dots run on wgmma, so each warp holds 16 whole rows of the accumulators: with two
/// warpgroups, 64 rows each, and each warpgroup's softmax reads its own rows only.)
pub(super) fn pingpong(k: &Kernel) -> Result<PingPong, NoPingPong> {
    if Knob::PingPong.get(&k.point) != Some(1) {
        return Err(NoPingPong::Knob);
    }
    match k.launch.threads {
        256 => Ok(PingPong {
            barrier: PINGPONG_BARRIER,
        }),
        t => Err(NoPingPong::Warpgroups(t / 128)),
    }
}
