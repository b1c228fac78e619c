//! The producer warp of an overlapped loop's mbarrier ring (`PRODUCER=1`, plan/overlap.rs
//! `Producer`). The kernel is emitted at the consumer warpgroups' threads; the launch has one
//! warp more, which branches off here, before any tile statement:
//!
//! ```text
//! __shared__ unsigned long long ring[2 * S];   // full[s] (1 arrival + bytes), empty[s] (consumers)
//! ph::ring_init_tma<S, CONSUMERS>(ring); __syncthreads();
//! if (threadIdx.x >= CONSUMERS) {              // the producer warp (or warpgroup)
//!   ph::producer_regs<..>();                   // setmaxnreg.dec (a warpgroup, two consumer ones)
//!   <the scalar statements before the loop>    // its bounds: causal skips the same tiles
//!   if (threadIdx.x == CONSUMERS)              // one lane: the maps prefetched, then
//!     for (c ...) { t = tile; b = t % S;
//!       if (t >= 2) wait empty[b], phase ((t - 2) / S) & 1;
//!       expect_tx(full[b], bytes); the tile's boxes (cp.async.bulk.tensor.3d) into buffer b }
//!   return;
//! }
//! ph::consumer_regs<..>();                     // setmaxnreg.inc
//! ```
//!
//! Tiles 0 and 1 go into buffers never read before; tile t ≥ 2 overwrites the buffer tile
//! t − 3 (or, for t = 2, the zeroed buffer of the first deferred product) was read from, released
//! by the consumers' `ph::ring_release` once the deferred product reading it completed (a11's
//! parities, the copies one iteration earlier than the consumers' own issued them). The
//! consumers wait on the full barrier before reading a buffer, as with RING=1; their block
//! barriers are named barriers of their own threads (`ph::consumer_sync`).

use super::{Emitter, Result};
use crate::layout::rc;
use crate::plan::{head_tile, producer_scalar_stmt, streamed_loads};
use phobos_ir::StmtKind;
use std::collections::BTreeSet;

impl<'k> Emitter<'k> {
    /// The producer warp's branch at the kernel's start (see the module's documentation); with
    /// no loop to fill, the extra warp returns at once.
    pub(crate) fn producer_branch(&mut self) -> Result<()> {
        let k = self.k;
        let consumers = k.launch.threads;
        let rec = (self.plan.loops.iter())
            .find(|r| matches!(&r.overlap, Ok(o) if o.producer.is_ok()))
            .cloned();
        let found = rec.as_ref().and_then(|r| {
            let o = r.overlap.as_ref().ok()?;
            let (Ok(p), Ok(ring), [(0, at)]) = (o.producer, o.ring, r.path.as_slice()) else {
                return None;
            };
            Some((p, ring.stages, *at))
        });
        let Some((p, stages, at)) = found else {
            self.line(format!(
                "if (threadIdx.x >= {consumers}) return;  // the extra warp: no ring to fill"
            ));
            return Ok(());
        };
        self.headers.insert(crate::MMA_HEADER);
        let bars = self.fresh("ring");
        self.line(format!(
            "// the producer (PRODUCER=1: a warp, 2: a warpgroup): threads {consumers}.., apart from the tile layouts; the buffers a ring: {bars}[s] full (the TMA copies landed), {bars}[{stages} + s] empty (the products read it)"
        ));
        let q = self.persist_q;
        self.line(format!(
            "__shared__ __align__(8) unsigned long long {bars}[{}];",
            2 * stages + if q.is_some() { 2 } else { 0 }
        ));
        if q.is_some() {
            self.line(format!(
                "ph::ring_init_tma_q<{stages}, {consumers}>({bars});  // and {bars}[{}] q full, {bars}[{}] q empty",
                2 * stages,
                2 * stages + 1
            ));
        } else {
            self.line(format!("ph::ring_init_tma<{stages}, {consumers}>({bars});"));
        }
        self.line("__syncthreads();  // the whole block, the producer warp included");
        self.producer_ring = Some(bars.clone());
        // The register split of the plan record (`Producer::regs`), when there is one.
        let setmaxnreg = p.regs;
        self.line(format!("if (threadIdx.x >= {consumers}) {{"));
        self.indent += 1;
        if let Some(regs) = setmaxnreg {
            self.line(format!("ph::producer_regs<{}>();", regs.producer));
        }
        if self.persist {
            // One lane walks the logical blocks: the bounds of each, then its tiles.
            self.line(format!(
                "if (threadIdx.x == {consumers}) {{  // one lane issues"
            ));
            self.indent += 1;
            self.prefetch_maps();
            self.logical_blocks_begin("the producer");
        }
        for (i, st) in k.body[..at].iter().enumerate() {
            if producer_scalar_stmt(st) {
                self.path.push((0, i));
                self.source_line(st.span);
                let r = self.stmt(st);
                self.path.pop();
                r?;
            }
        }
        if let Some(q) = q {
            self.producer_q(q, &bars, stages)?;
        }
        let StmtKind::For {
            var,
            start,
            end,
            step,
            body,
            ..
        } = &k.body[at].kind
        else {
            return super::unsupported("a producer loop that is not a for loop", k.body[at].span);
        };
        let name = self.names.locals[*var].clone();
        let s = self.scalar(start)?;
        let e = self.scalar(end)?;
        let st = self.scalar(step)?;
        if !self.persist {
            self.line(format!(
                "if (threadIdx.x == {consumers}) {{  // one lane issues"
            ));
            self.indent += 1;
            self.prefetch_maps();
        }
        self.line("#pragma unroll 1");
        self.line(format!(
            "for (int {name} = {}; {name} < {}; {name} += {}) {{",
            s.full(),
            e.at(8),
            st.at(15)
        ));
        self.indent += 1;
        let it = self.fresh("it");
        let buf = self.fresh("buf");
        if self.persist {
            self.line(format!(
                "const int {it} = {}++;  // the ring's counter runs on across logical blocks",
                super::RING_T
            ));
        } else {
            self.line(format!(
                "const int {it} = ({name} - {}) / {};",
                s.at(6),
                st.at(5)
            ));
        }
        self.line(format!("const int {buf} = {it} % {stages};"));
        self.line(format!(
            "if ({it} >= 2) ph::ring_wait({bars} + {stages} + {buf}, (({it} - 2) / {stages}) & 1);"
        ));
        self.line(format!(
            "ph::ring_expect({bars} + {buf}, {});  // the stage's bytes",
            p.bytes
        ));
        let mut assigned = BTreeSet::new();
        crate::visit::assigned_locals(body, &mut assigned);
        let mut offset = 0u32;
        for load in streamed_loads(k, &self.plan.target, *var, body, &assigned) {
            let (r, c) = rc(load.ty.shape().unwrap_or(&[1]));
            let here = offset;
            offset += crate::layout::staged_bytes(r, c);
            let Some(t) = head_tile(k, load) else {
                return super::unsupported(
                    "a streamed operand the producer cannot copy",
                    load.span,
                );
            };
            let Some(map) = (self.plan.tma.iter())
                .find(|m| m.tensor == t.tensor && m.outer.is_some())
                .map(|m| m.name.clone())
            else {
                return super::unsupported("a streamed operand without its tensor map", load.span);
            };
            let head = self.scalar(t.head)?;
            let row = self.scalar(t.row)?;
            for slab in 0..t.cols / 64 {
                self.line(format!(
                    "ph::ring_tma_3d(ph_pipe + {} + {buf} * PH_PIPE_STAGE, &{map}, {}, {}, {}, {bars} + {buf});  // {}",
                    here as i64 + slab * t.rows * 128,
                    slab * 64,
                    row.full(),
                    head.full(),
                    k.params[t.tensor].name
                ));
            }
        }
        self.indent -= 1;
        self.line("}");
        if self.persist {
            // The loop over the logical blocks.
            self.indent -= 1;
            self.line("}");
        }
        self.indent -= 1;
        self.line("}");
        self.line("return;");
        self.indent -= 1;
        self.line("}");
        if let Some(regs) = setmaxnreg {
            self.line(format!("ph::consumer_regs<{}>();", regs.consumer));
        }
        // The consumers' statements name their source lines again.
        self.last_line = None;
        Ok(())
    }

    /// PERSIST=2: the resident q of the logical block loaded by TMA, once the consumers are done
    /// with the previous one's (`Persist::q`).
    fn producer_q(&mut self, q: crate::plan::QByProducer, bars: &str, stages: u32) -> Result<()> {
        let k = self.k;
        let StmtKind::Assign { value, .. } = &k.body[q.stmt].kind else {
            return super::unsupported(
                "a resident operand that is not assigned",
                k.body[q.stmt].span,
            );
        };
        let Some(t) = head_tile(k, value) else {
            return super::unsupported("a resident operand the producer cannot copy", value.span);
        };
        // Its map is the last of the producer's (after the streamed operands').
        let Some(map) = (self.plan.tma.iter())
            .rfind(|m| m.tensor == t.tensor && m.outer.is_some())
            .map(|m| m.name.clone())
        else {
            return super::unsupported("a resident operand without its tensor map", value.span);
        };
        let head = self.scalar(t.head)?;
        let row = self.scalar(t.row)?;
        let (full, empty) = (2 * stages, 2 * stages + 1);
        let n = super::Q_N;
        self.line(format!(
            "if ({n} >= 1) ph::ring_wait({bars} + {empty}, ({n} - 1) & 1);  // the consumers' last Q·Kᵀ of the logical block before"
        ));
        self.line(format!(
            "ph::ring_expect({bars} + {full}, {});  // {}'s bytes",
            q.bytes, k.locals[q.local].name
        ));
        for slab in 0..t.cols / 64 {
            self.line(format!(
                "ph::ring_tma_3d(ph_resident + {}, &{map}, {}, {}, {}, {bars} + {full});  // {}",
                slab * t.rows * 128,
                slab * 64,
                row.full(),
                head.full(),
                k.params[t.tensor].name
            ));
        }
        self.line(format!("++{n};"));
        Ok(())
    }

    /// The producer's tensor maps prefetched (`prefetch.tensormap`).
    fn prefetch_maps(&mut self) {
        let maps: Vec<String> = (self.plan.tma.iter())
            .filter(|m| m.outer.is_some())
            .map(|m| m.name.clone())
            .collect();
        for m in &maps {
            self.line(format!("ph::gemm::tma_prefetch_desc(&{m});"));
        }
    }
}
