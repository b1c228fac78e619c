//! Operands of tensor-core dots streamed by a loop (attention's K and V tiles): copied into
//! shared memory with cp.async one iteration ahead, into two buffers that alternate, so the
//! copies of iteration i + 1 are in flight while iteration i multiplies (`ph::mma_prefetch`,
//! `ph::stile`).
//!
//! A tile load qualifies when it is an operand of a dot that runs on tensor cores
//! ([`crate::plan::dot_mma`]), lies in the loop's own body (not a nested loop's), its indices
//! read only the loop variable and locals the loop does not assign, and its tensor is never
//! written by the kernel: then reading it one iteration early reads the same values.
//!
//! In a loop whose wgmma dots overlap the iteration (`Plan::loops`, plan/overlap.rs) there are
//! three buffers: the previous iteration's is still read by the product deferred to this one.
//! With `RING=1` (`Overlap::ring`) those three buffers form a ring guarded by mbarriers instead
//! of the two block barriers an iteration ([`RingBars`]).

use super::{Emitter, Result};
use crate::layout::rc;
use crate::plan::streamed_loads;
use phobos_ir::{Expr, ExprKind, LocalId, Stmt};
use std::collections::BTreeSet;

/// One streamed operand: its load and its offset in a buffer.
pub(crate) struct Streamed<'k> {
    load: &'k Expr,
    offset: u32,
}

/// The mbarriers of a ring of streamed buffers (`Overlap::ring`, `ph::ring_*`): `bars[s]` is
/// buffer `s`'s full barrier, `bars[stages + s]` its empty one. Iteration `j` (from 0) reads
/// buffer `j % stages`, filled for the `j / stages`-th time: it waits on the full barrier's
/// phase of parity `(j / stages) & 1`. Its copies for iteration `j + 1` overwrite the buffer that
/// iteration `j + 1 - stages` read, released once that iteration's deferred product completed
/// (in iteration `j + 2 - stages`); before the loop the deferred product of "iteration −1"
/// reads the zeroed last buffer, released in iteration 0. So the copies of iteration `j ≥ 1`
/// wait on the empty barrier's phase of parity `((j - 1) / stages) & 1` (three stages), and
/// those of iteration 0 (into buffer 1, never read before) do not wait.
pub(crate) struct RingBars {
    pub name: String,
    pub stages: u32,
    /// A producer warp fills the buffers by TMA (`Overlap::producer`, emit/producer.rs): the
    /// barriers are set up at the kernel's start, and the consumers only wait on the full ones.
    pub tma: bool,
}

/// Bytes of one staged tile (`ph::mma_staged_bytes`).
fn staged_bytes(e: &Expr) -> u32 {
    let (r, c) = rc(e.ty.shape().unwrap_or(&[1]));
    crate::layout::staged_bytes(r, c)
}

impl<'k> Emitter<'k> {
    /// Before the loop over `var` (from `start`), with `buffers` buffers: the qualifying loads,
    /// the first iteration's copies issued. Empty when nothing streams.
    pub(crate) fn pipe_begin(
        &mut self,
        var: LocalId,
        body: &'k [Stmt],
        assigned: &BTreeSet<LocalId>,
        start: &str,
        buffers: u32,
    ) -> Result<Vec<Streamed<'k>>> {
        if assigned.contains(&var) {
            return Ok(Vec::new());
        }
        let loads = streamed_loads(self.k, &self.plan.target, var, body, assigned);
        let mut streamed = Vec::new();
        let mut stage = 0;
        for load in loads {
            streamed.push(Streamed {
                load,
                offset: stage,
            });
            stage += staged_bytes(load);
        }
        if streamed.is_empty() {
            return Ok(streamed);
        }
        self.pipe_stage = self.pipe_stage.max(stage);
        self.pipe_buffers = self.pipe_buffers.max(buffers);
        self.headers.insert(crate::MMA_HEADER);
        if let Some(r) = self.ring.as_ref().filter(|r| r.tma) {
            let line = format!(
                "// streamed through shared memory by the producer warp's TMA ({} buffers of {stage} bytes, the ring {}): {}",
                r.stages,
                r.name,
                streamed
                    .iter()
                    .map(|s| self.describe_load(s.load))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            self.line(line);
            return Ok(streamed);
        }
        let n = match buffers {
            2 => "two".to_string(),
            n => n.to_string(),
        };
        self.line(format!(
            "// streamed through shared memory one iteration ahead (cp.async, {n} buffers of {stage} bytes): {}",
            streamed
                .iter()
                .map(|s| self.describe_load(s.load))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if let Some(r) = &self.ring {
            let (bars, stages) = (r.name.clone(), r.stages);
            let threads = self.k.launch.threads;
            self.line(format!(
                "// the buffers a ring: {bars}[s] full (the copies landed), {bars}[{stages} + s] empty (the products read it)"
            ));
            self.line(format!(
                "__shared__ __align__(8) unsigned long long {bars}[{}];",
                2 * stages
            ));
            self.line(format!("ph::ring_init<{stages}, {threads}>({bars});"));
            self.barrier();
            self.prefetch(var, &streamed, start, "0")?;
            self.line(format!("ph::ring_copied({bars});"));
            return Ok(streamed);
        }
        self.prefetch(var, &streamed, start, "0")?;
        self.line("ph::gemm::cp_async_commit();");
        Ok(streamed)
    }

    /// At the top of an iteration: the next iteration's copies issued into the buffer after
    /// this one's (once every warp is done reading it), this iteration's awaited; the loads then
    /// read their buffer. Returns the name of this iteration's buffer index.
    pub(crate) fn pipe_top(
        &mut self,
        var: LocalId,
        streamed: &[Streamed<'k>],
        (start, step, end): (&str, &str, &str),
        buffers: u32,
    ) -> Result<String> {
        if streamed.is_empty() {
            return Ok(String::new());
        }
        let name = self.names.locals[var].clone();
        let buf = self.fresh("buf");
        let (index, into) = if buffers == 2 {
            ("& 1".to_string(), format!("({buf} ^ 1)"))
        } else {
            (format!("% {buffers}"), format!("(({buf} + 1) % {buffers})"))
        };
        if let Some(r) = self.ring.as_ref().filter(|r| r.tma) {
            // The producer warp copies; TMA writes through the async proxy, which the wgmma read.
            let (bars, stages) = (r.name.clone(), r.stages);
            let it = self.fresh("it");
            if self.persist {
                self.line(format!(
                    "const int {it} = {}++;  // the ring's counter runs on across logical blocks",
                    super::RING_T
                ));
            } else {
                self.line(format!("const int {it} = ({name} - {start}) / {step};"));
            }
            self.line(format!("const int {buf} = {it} % {stages};"));
            self.line(format!(
                "ph::ring_wait({bars} + {buf}, ({it} / {stages}) & 1);"
            ));
            for (p, st) in self.stiles(streamed, &buf) {
                self.streamed.insert(p, st);
            }
            return Ok(buf);
        }
        if let Some(r) = &self.ring {
            let (bars, stages) = (r.name.clone(), r.stages);
            let it = self.fresh("it");
            let nb = self.fresh("nb");
            self.line(format!("const int {it} = ({name} - {start}) / {step};"));
            self.line(format!("const int {buf} = {it} % {stages};"));
            let next = format!("({name} + {step})");
            self.line(format!("if ({next} < {end}) {{"));
            self.indent += 1;
            self.line(format!("const int {nb} = ({buf} + 1) % {stages};"));
            self.line(format!(
                "if ({it} >= 1) ph::ring_wait({bars} + {stages} + {nb}, (({it} - 1) / {stages}) & 1);"
            ));
            self.prefetch(var, streamed, &next, &nb)?;
            self.line(format!("ph::ring_copied({bars} + {nb});"));
            self.indent -= 1;
            self.line("}");
            self.line(format!(
                "ph::ring_wait({bars} + {buf}, ({it} / {stages}) & 1);"
            ));
            self.line("ph::mma_publish();");
            for (p, st) in self.stiles(streamed, &buf) {
                self.streamed.insert(p, st);
            }
            return Ok(buf);
        }
        self.line(format!(
            "const int {buf} = (({name} - {start}) / {step}) {index};"
        ));
        self.barrier();
        let next = format!("({name} + {step})");
        self.line(format!("if ({next} < {end}) {{"));
        self.indent += 1;
        self.prefetch(var, streamed, &next, &into)?;
        self.indent -= 1;
        self.line("}");
        self.line("ph::gemm::cp_async_commit();");
        self.line("ph::gemm::cp_async_wait<1>();");
        self.line("ph::mma_publish();");
        self.barrier();
        for (p, st) in self.stiles(streamed, &buf) {
            self.streamed.insert(p, st);
        }
        Ok(buf)
    }

    /// The staged operands of `streamed` in buffer `buf`, by load address.
    pub(crate) fn stiles(&self, streamed: &[Streamed<'k>], buf: &str) -> Vec<(usize, String)> {
        let stage = self.pipe_stage_name();
        streamed
            .iter()
            .map(|s| {
                let (r, c) = rc(s.load.ty.shape().unwrap_or(&[1]));
                (
                    s.load as *const Expr as usize,
                    format!(
                        "ph::stile<{r}, {c}>(ph_pipe + {} + {buf} * {stage})",
                        s.offset
                    ),
                )
            })
            .collect()
    }

    /// After the loop: no copy left in flight.
    pub(crate) fn pipe_end(&mut self, streamed: &[Streamed<'k>]) {
        if streamed.is_empty() {
            return;
        }
        for s in streamed {
            self.streamed.remove(&(s.load as *const Expr as usize));
        }
        if self.ring.as_ref().is_some_and(|r| r.tma) {
            // The producer warp's copies: none of the consumers' own.
            return;
        }
        if self.ring.is_some() {
            // The copies arrive on mbarriers, in no commit group: committed here, then awaited
            // (the first iteration's, when the loop ran none, is the only one not awaited yet).
            self.line("ph::gemm::cp_async_commit();");
        }
        self.line("ph::gemm::cp_async_wait<0>();");
    }

    /// The copies of `streamed` for the loop variable's value `at` into buffer `buf`.
    fn prefetch(
        &mut self,
        var: LocalId,
        streamed: &[Streamed<'k>],
        at: &str,
        buf: &str,
    ) -> Result<()> {
        let saved = std::mem::replace(&mut self.names.locals[var], format!("({at})"));
        let threads = self.k.launch.threads;
        let stage = self.pipe_stage_name();
        let mut result = Ok(());
        for s in streamed {
            let ExprKind::Load { tensor, index, .. } = &s.load.kind else {
                continue;
            };
            let (r, c) = rc(s.load.ty.shape().unwrap_or(&[1]));
            match self.region(*tensor, index, false) {
                Ok(region) => self.line(format!(
                    "ph::mma_prefetch<{r}, {c}, {threads}>({region}, ph_pipe + {} + {buf} * {stage});",
                    s.offset
                )),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.names.locals[var] = saved;
        result
    }

    /// The one assignment of a shared-memory resident operand (`Plan::resident`): its tile copied
    /// into its place in the resident region, complete and visible to the block on return.
    pub(crate) fn load_resident(&mut self, l: LocalId, value: &Expr) -> Result<()> {
        let ExprKind::Load { tensor, index, .. } = &value.kind else {
            return self.unsupported_expr("a resident operand that is not a tile load", value);
        };
        let at = self.resident_smem;
        self.resident_smem += staged_bytes(value);
        self.resident_at.insert(l, at);
        if let (Some(q), Some(bars)) =
            (self.persist_q.filter(|q| q.local == l), &self.producer_ring)
        {
            // PERSIST=2: the producer's TMA loads it (the only resident, at offset 0).
            let stages = self.ring_stages();
            self.line(format!(
                "ph::ring_wait({bars} + {}, {} & 1);  // {}, loaded by the producer",
                2 * stages,
                super::Q_N,
                self.k.locals[q.local].name
            ));
            return Ok(());
        }
        let (r, c) = rc(value.ty.shape().unwrap_or(&[1]));
        let region = self.region(*tensor, index, false)?;
        let threads = self.k.launch.threads;
        self.headers.insert(crate::MMA_HEADER);
        self.line(format!(
            "ph::mma_prefetch<{r}, {c}, {threads}>({region}, ph_resident + {at});  // {}",
            self.k.locals[l].name
        ));
        self.line("ph::gemm::cp_async_commit();");
        self.line("ph::gemm::cp_async_wait<0>();");
        self.line("ph::mma_publish();");
        self.barrier();
        Ok(())
    }

    /// Buffers of the producer's ring (`Overlap::ring` of the loop it fills).
    pub(crate) fn ring_stages(&self) -> u32 {
        (self.plan.loops.iter())
            .find_map(|r| match &r.overlap {
                Ok(o) if o.producer.is_ok() => o.ring.ok().map(|r| r.stages),
                _ => None,
            })
            .unwrap_or(3)
    }

    /// The staged operand of resident local `l`, once loaded.
    pub(crate) fn resident_operand(&self, l: LocalId, e: &Expr) -> Option<String> {
        let at = self.resident_at.get(&l)?;
        let (r, c) = rc(e.ty.shape().unwrap_or(&[1]));
        Some(format!("ph::stile<{r}, {c}>(ph_resident + {at})"))
    }

    /// The buffer size, a constant the kernel declares once all loops are known.
    fn pipe_stage_name(&self) -> &'static str {
        "PH_PIPE_STAGE"
    }

    fn describe_load(&self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Load { tensor, .. } => self.k.params[*tensor].name.clone(),
            _ => "?".into(),
        }
    }
}
