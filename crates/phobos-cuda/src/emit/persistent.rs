//! The loops of persistent blocks: the GEMM schedule's tile loop (SCHEDULE=2/3, the main
//! loop's barriers set up once) and the loop over the logical blocks that PERSIST's producer
//! and consumers walk in the same order.

use super::{Emitter, Result, BX, BY, GX, GY, Q_N, RING_T, ROUND, SCHED_HEADER, TILE};
use crate::mainloop::MainLoop;
use crate::Emitted;

impl Emitter<'_> {
    /// The kernel body inside the persistent tile loop: the main loop's barriers set up once,
    /// each tile's (M tile, N tile) from the tile index (GROUP_M-swizzled), the pipeline counter
    /// carried across tiles.
    pub(super) fn persistent_body(mut self) -> Result<(Emitted, bool)> {
        let mainloop = self
            .plan
            .gemms
            .iter()
            .find_map(|(_, ml)| match ml {
                MainLoop::Fast(f) => Some(f.plan.mainloop.clone()),
                MainLoop::Ffma(_) => None,
            })
            .expect("the plan has the persistent GEMM");
        let (ta, tb) = self.plan.gemm_tma[0]
            .clone()
            .expect("a persistent GEMM has tensor maps");
        self.headers.insert(SCHED_HEADER);
        self.line(format!(
            "unsigned {} = 0;  // k tiles through the pipeline so far, across this block's tiles",
            crate::gemm_fast::PIPE
        ));
        self.line(format!(
            "{mainloop}::persistent_begin(ph_smem, &{ta}, &{tb});"
        ));
        let c = self.plan.cluster;
        if c > 1 && self.plan.cluster_shares == crate::SharedOperand::A {
            // CLUSTER=4: the cluster walks the tiles in units of `c` neighbouring N tiles of one
            // M tile (the logical grid's y rounded up to whole clusters), its blocks in lock
            // step; whole clusters are GROUP_M-swizzled. A block past the last N tile still
            // runs (it shares A's copies); its C store is masked.
            self.line(format!("const int ph_cy = ({GY} + {}) / {c};", c - 1));
            self.line(format!(
                "for (int {TILE} = (int)blockIdx.x / {c}; {TILE} < {GX} * ph_cy; {TILE} += (int)gridDim.x / {c}) {{"
            ));
            self.indent += 1;
            self.line(format!(
                "int {BX}, {BY}; ph::gemm::cluster_n_swizzle_block({TILE} % {GX}, {TILE} / {GX} * {c} + (int)blockIdx.x % {c}, {GX}, ph_cy * {c}, {}, {c}, &{BX}, &{BY});",
                self.plan.group_m
            ));
        } else if c > 1 {
            // CLUSTER: the cluster walks the tiles in units of `c` neighbouring M tiles of one N
            // tile (the logical grid's x rounded up to whole clusters), its blocks in lock step;
            // whole clusters are GROUP_M-swizzled. A block past the last M tile still runs
            // (it shares B's copies); its C store is masked.
            self.line(format!("const int ph_cx = ({GX} + {}) / {c};", c - 1));
            self.line(format!(
                "for (int {TILE} = (int)blockIdx.x / {c}; {TILE} < ph_cx * {GY}; {TILE} += (int)gridDim.x / {c}) {{"
            ));
            self.indent += 1;
            self.line(format!(
                "int {BX}, {BY}; ph::gemm::cluster_swizzle_block({TILE} % ph_cx * {c} + (int)blockIdx.x % {c}, {TILE} / ph_cx, ph_cx * {c}, {GY}, {}, {c}, &{BX}, &{BY});",
                self.plan.group_m
            ));
        } else {
            self.line(format!(
                "for (int {TILE} = (int)blockIdx.x; {TILE} < {GX} * {GY}; {TILE} += (int)gridDim.x) {{"
            ));
            self.indent += 1;
            self.line(format!(
                "int {BX}, {BY}; ph::gemm::swizzle_block({TILE} % {GX}, {TILE} / {GX}, {GX}, {GY}, {}, &{BX}, &{BY});",
                self.plan.group_m
            ));
        }
        self.hoisted_declarations()?;
        self.block(&self.k.body, 0)?;
        self.indent -= 1;
        self.line("}");
        self.line(format!("{mainloop}::persistent_end(ph_smem);"));
        let syncs = self.synchronizes();
        Ok((self.finish()?, syncs))
    }

    /// Opens the loop of a persistent block over its logical blocks (`Overlap::persist`), in the
    /// logical grid's order (x fastest) or in a snake (x slowest, `Walk::Snake`), with the
    /// ring's counter before it; the caller closes it. The producer and the consumers both open
    /// it here, so they walk the same sequence.
    pub(crate) fn logical_blocks_begin(&mut self, who: &str) {
        if self.persist_q.is_some() {
            self.line(format!(
                "int {Q_N} = 0;  // logical blocks so far: the phases of q's barriers"
            ));
        }
        if self.persist {
            self.line(format!(
                "int {RING_T} = 0;  // the ring's tiles so far, across this block's logical blocks"
            ));
        }
        if self.walk == crate::plan::Walk::Snake {
            // Rounds of gridDim.x logical blocks while a round starts inside the grid; in an odd
            // last round the low blocks are past the end and the high ones not, so a miss
            // skips, never ends the walk.
            self.line(format!(
                "for (int {ROUND} = 0; {ROUND} * (int)gridDim.x < {GX} * {GY}; ++{ROUND}) {{  // {who}, a logical block at a time, in a snake"
            ));
            self.indent += 1;
            self.line(format!(
                "const int {TILE} = {ROUND} * (int)gridDim.x + ({ROUND} % 2 == 0 ? (int)blockIdx.x : (int)gridDim.x - 1 - (int)blockIdx.x);"
            ));
            self.line(format!("if ({TILE} >= {GX} * {GY}) continue;"));
            self.line(format!(
                "const int {BX} = {TILE} / {GY};  // x slowest: every y's first x, then the next"
            ));
            self.line(format!("const int {BY} = {TILE} % {GY};"));
            return;
        }
        if self.walk == crate::plan::Walk::Paired {
            // Units of two logical blocks (x and gx - 1 - x of one y) round robin; the second of
            // the middle unit of an odd gx skips (the same in every loop of the kernel, so the
            // producer's and the consumers' counters stay paired).
            self.line(format!(
                "for (int {ROUND} = 0; ; ++{ROUND}) {{  // {who}, a logical block at a time, x paired with gx - 1 - x"
            ));
            self.indent += 1;
            self.line(format!(
                "const int ph_unit = (int)blockIdx.x + ({ROUND} >> 1) * (int)gridDim.x;"
            ));
            self.line(format!("const int ph_half = ({GX} + 1) >> 1;"));
            self.line(format!("if (ph_unit >= ph_half * {GY}) break;"));
            self.line("const int ph_p = ph_unit % ph_half;");
            self.line(format!(
                "if (({ROUND} & 1) && 2 * ph_p + 1 == {GX}) continue;  // the middle x of an odd gx, once"
            ));
            self.line(format!(
                "const int {BX} = ({ROUND} & 1) ? {GX} - 1 - ph_p : ph_p;"
            ));
            self.line(format!("const int {BY} = ph_unit / ph_half;"));
            return;
        }
        self.line(format!(
            "for (int {TILE} = (int)blockIdx.x; {TILE} < {GX} * {GY}; {TILE} += (int)gridDim.x) {{  // {who}, a logical block at a time"
        ));
        self.indent += 1;
        self.line(format!("const int {BX} = {TILE} % {GX};"));
        self.line(format!("const int {BY} = {TILE} / {GX};"));
    }
}
