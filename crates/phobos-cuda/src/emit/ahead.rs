//! The emission of an overlapped loop's dots (plan/overlap.rs). In iteration i:
//!   - at the first dot's statement: its product issued, then the second dot's product of
//!     iteration i − 1 (its A operand kept in registers, its B in the previous buffer), each
//!     committed as a group; `wgmma.wait_group 1` then waits for the first only (groups
//!     complete in order) and the statement reads it;
//!   - at the second dot's statement: `wgmma.wait_group 0` (the deferred product is in
//!     `acc`), then `acc = f(acc)`, and the A operand and the buffer kept for iteration i + 1.
//!
//! Before the loop the kept A operand and the buffer the first deferred product reads are
//! zeroed; after it the last deferred product is issued and awaited.
//!
//! With the ping-pong (`Overlap::pingpong`) the two products' issue is a warpgroup's turn:
//! `ph::pp_turn` before it, `ph::pp_pass` after both commits (no block barrier in between),
//! `ph::pp_begin` before the loop and `ph::pp_end` after it.
//!
//! With the mbarrier ring (`Overlap::ring`) the deferred product's wait releases the previous
//! buffer (`ph::ring_release` on its empty barrier), and the zeroed buffer is published by a
//! block barrier before the loop, since the iterations have none.

use super::pipe::Streamed;
use super::{Emitter, Result};
use crate::layout::Layout;
use crate::plan::{KeptA, Overlap};
use phobos_ir::{DType, Expr, ExprKind, Stmt};

/// The overlapped loop being emitted.
pub(crate) struct Ahead<'k> {
    /// The first dot.
    pub dot: &'k Expr,
    /// The second (deferred) dot, its accumulator and the accumulator's layout.
    pub behind: &'k Expr,
    pub acc: String,
    pub acc_lay: Layout,
    /// The register tile that keeps the deferred dot's A operand, and its layout.
    pub a: String,
    pub a_lay: Layout,
    /// The variable holding the buffer index the deferred dot's streamed operands lie in, and
    /// those operands there (by load address).
    pub prev: String,
    pub prev_ops: Vec<(usize, String)>,
    /// This iteration's buffer index.
    pub buf: String,
    /// The deferred dot's wait goes behind a fence (`Overlap::fenced`).
    pub fenced: bool,
    /// Warpgroup 0's named barrier of the ping-pong (`Overlap::pingpong`), when taken.
    pub pingpong: Option<u32>,
    /// `a` holds the operand packed to its type (`KeptA::Packed`), not in f32.
    pub packed: bool,
}

/// The first dot of the statement's own expressions.
fn first_dot(s: &Stmt) -> Option<&Expr> {
    fn find(e: &Expr) -> Option<&Expr> {
        if matches!(e.kind, ExprKind::Dot { .. }) {
            return Some(e);
        }
        crate::visit::children(e).into_iter().find_map(find)
    }
    crate::visit::stmt_exprs(s).into_iter().find_map(find)
}

/// The value the kept A operand holds: `x` for `T(x)` with `x` in f32 and `T` f16 or bf16, whose
/// A fragments the dot packs with a round-to-nearest conversion (`mma_pack`) that rounds `x` to
/// `T` itself, exactly as the cast would; keeping `x` saves the cast's round trip (a conversion
/// to `T` and one back to f32 an element). Any other operand is kept as it is.
pub(super) fn packed_operand(a: &Expr) -> &Expr {
    match &a.kind {
        ExprKind::Cast(x)
            if matches!(a.ty.dtype(), DType::F16 | DType::BF16) && x.ty.dtype() == DType::F32 =>
        {
            x
        }
        _ => a,
    }
}

impl<'k> Emitter<'k> {
    /// Before an overlapped loop: the kept A operand zeroed, the last buffer (which the first
    /// deferred product reads) zeroed, the buffer index of the deferred product set to it.
    pub(crate) fn ahead_begin(
        &mut self,
        o: &Overlap,
        body: &'k [Stmt],
        streamed: &[Streamed<'k>],
    ) -> Result<()> {
        let stmt = &body[o.ahead];
        let (Some(dot), Some(behind)) = (first_dot(stmt), first_dot(&body[o.behind])) else {
            return super::unsupported("an overlapped loop without its dots", stmt.span);
        };
        let ExprKind::Dot { a, .. } = &behind.kind else {
            return super::unsupported("an overlapped loop without its dots", stmt.span);
        };
        let acc = self.names.locals[o.acc].clone();
        let acc_lay = self.plan.layouts[&o.acc].clone();
        let a_lay = self.natural_layout(a);
        let ty = self.tile_type(a.ty.dtype(), &a_lay);
        let alias = self.alias(&a_lay);
        let kept = self.fresh("kept");
        let prev = self.fresh("prev");
        let last = o.buffers - 1;
        self.line(format!(
            "// dots overlapped: statement {}'s product is issued with statement {}'s of the iteration before",
            o.ahead + 1,
            o.behind + 1
        ));
        let packed = o.kept == KeptA::Packed;
        if packed {
            let dt = match a.ty.dtype() {
                phobos_ir::DType::BF16 => "ph::gemm::BF16",
                _ => "ph::gemm::F16",
            };
            self.line(format!(
                "ph::PackedA<{dt}, {alias}> {kept} = {{}};  // kept packed, half the registers of f32"
            ));
        } else {
            self.line(format!("{ty} {kept};"));
            self.line("#pragma unroll");
            self.line(format!(
                "for (int ph_i = 0; ph_i < {alias}::N; ++ph_i) {kept}.v[ph_i] = 0.0f;"
            ));
        }
        let persist = self.persist && !streamed.is_empty() && self.ring.is_some();
        if persist {
            // A later logical block's first deferred product reads the previous one's last
            // buffer (kept A zeroed, so it adds zeros); it is released in this block's first
            // iteration, as the zeroed buffer is in the first block.
            let t = super::RING_T;
            let b = o.buffers;
            self.line(format!("int {prev} = ({t} + {last}) % {b};"));
            let threads = self.k.launch.threads;
            self.line(format!(
                "if ({t} == 0) ph::mma_zero<{threads}>(ph_pipe + {last} * PH_PIPE_STAGE, PH_PIPE_STAGE);"
            ));
        } else {
            self.line(format!("int {prev} = {last};"));
        }
        if !streamed.is_empty() && !persist {
            let threads = self.k.launch.threads;
            self.line(format!(
                "ph::mma_zero<{threads}>(ph_pipe + {last} * PH_PIPE_STAGE, PH_PIPE_STAGE);"
            ));
        }
        if !streamed.is_empty() && self.ring.is_some() {
            // No block barrier at the top of the iterations: the zeros published here.
            self.line("ph::mma_publish();");
            self.barrier();
        }
        let prev_ops = self.stiles(streamed, &prev);
        let pingpong = o.pingpong.ok().map(|p| p.barrier);
        if let Some(b) = pingpong {
            self.line(format!(
                "ph::pp_begin<{b}>();  // the warpgroups take turns issuing the products, warpgroup 0 first"
            ));
        }
        self.ahead = Some(Ahead {
            dot,
            behind,
            acc,
            acc_lay,
            a: kept,
            a_lay,
            prev,
            prev_ops,
            buf: String::new(),
            fenced: o.fenced,
            pingpong,
            packed,
        });
        Ok(())
    }

    /// Issues the deferred product (not committed).
    fn issue_deferred(&mut self) -> Result<()> {
        let Some(a) = self.ahead.as_ref() else {
            return Ok(());
        };
        let (behind, acc, acc_lay) = (a.behind, a.acc.clone(), a.acc_lay.clone());
        let ops = a.prev_ops.clone();
        let ExprKind::Dot { a: op_a, .. } = &behind.kind else {
            return self.unsupported_expr("a deferred dot", behind);
        };
        let saved: Vec<(usize, Option<String>)> = ops
            .iter()
            .map(|(p, _)| (*p, self.streamed.get(p).cloned()))
            .collect();
        self.streamed.extend(ops);
        let kept = self.ahead.as_ref().map(|a| (a.a.clone(), a.a_lay.clone()));
        self.operand_override = kept.map(|(n, l)| (&**op_a as *const Expr as usize, n, l));
        self.dot_async = true;
        let r = self.dot_into(&acc, &acc_lay, behind);
        self.dot_async = false;
        self.operand_override = None;
        for (p, old) in saved {
            match old {
                Some(s) => self.streamed.insert(p, s),
                None => self.streamed.remove(&p),
            };
        }
        r
    }

    /// At the first dot's statement, when `e` is that dot: its product issued into `dst`
    /// (zeroed), the deferred product issued, and the first awaited. False for other dots.
    pub(crate) fn ahead_dot(&mut self, dst: &str, lay: &Layout, e: &Expr) -> Result<bool> {
        if !self
            .ahead
            .as_ref()
            .is_some_and(|a| std::ptr::eq(a.dot, e) && !self.dot_async)
        {
            return Ok(false);
        }
        let pingpong = self.ahead.as_ref().and_then(|a| a.pingpong);
        let alias = self.alias(lay);
        self.line("#pragma unroll");
        self.line(format!(
            "for (int ph_i = 0; ph_i < {alias}::N; ++ph_i) {dst}.v[ph_i] = 0.0f;"
        ));
        if let Some(b) = pingpong {
            self.line(format!("ph::pp_turn<{b}>();"));
        }
        self.dot_async = true;
        let r = self.dot_into(dst, lay, e);
        self.dot_async = false;
        r?;
        self.line("ph::wg_commit();");
        self.issue_deferred()?;
        self.line("ph::wg_commit();");
        if let Some(b) = pingpong {
            self.line(format!("ph::pp_pass<{b}>();"));
        }
        self.line(format!("ph::wg_wait<1>({dst});"));
        Ok(true)
    }

    /// At the second dot's statement (`acc = rest + dot(a, b)`, `rest` absent for `acc += ..`):
    /// the deferred product awaited, `acc = rest`, `a` and the buffer kept for the next
    /// iteration. False when `dot` is not the loop's second dot.
    pub(crate) fn behind_dot(&mut self, rest: Option<&Expr>, dot: &Expr) -> Result<bool> {
        let Some(a) = self.ahead.as_ref().filter(|a| std::ptr::eq(a.behind, dot)) else {
            return Ok(false);
        };
        let (acc, acc_lay) = (a.acc.clone(), a.acc_lay.clone());
        let (kept, kept_lay) = (a.a.clone(), a.a_lay.clone());
        let (prev, buf) = (a.prev.clone(), a.buf.clone());
        let (fenced, packed) = (a.fenced, a.packed);
        let ExprKind::Dot { a: op_a, .. } = &dot.kind else {
            return Ok(false);
        };
        if fenced {
            self.line("ph::wg_wait_fence();");
        }
        self.line(format!("ph::wg_wait<0>({acc});"));
        if let Some(rest) = rest {
            self.tile_into(&acc, &acc_lay, rest)?;
        }
        if packed {
            // The f32 value (the cast's operand), then its fragments packed to the cast's type.
            let x = packed_operand(op_a);
            let f = self.fresh("t");
            let ty = self.tile_type(DType::F32, &kept_lay);
            self.line(format!("{ty} {f};"));
            self.tile_into(&f, &kept_lay, x)?;
            self.line(format!("ph::pack_a({kept}, {f});"));
        } else {
            self.tile_into(&kept, &kept_lay, packed_operand(op_a))?;
        }
        if let (Some(r), false) = (&self.ring, buf.is_empty()) {
            // This thread's last product reading the previous buffer has completed.
            self.line(format!(
                "ph::ring_release({} + {} + {prev});",
                r.name, r.stages
            ));
        }
        if !buf.is_empty() {
            self.line(format!("{prev} = {buf};"));
        }
        Ok(true)
    }

    /// After an overlapped loop: the last deferred product issued and awaited. (When the loop
    /// ran no iteration it reads the zeroed buffer, which the barrier publishes.)
    pub(crate) fn ahead_end(&mut self, streamed: bool) -> Result<()> {
        if let Some(b) = self.ahead.as_ref().and_then(|a| a.pingpong) {
            self.line(format!("ph::pp_end<{b}>();"));
        }
        if streamed {
            self.line("ph::mma_publish();");
            self.barrier();
        }
        self.issue_deferred()?;
        self.line("ph::wg_commit();");
        if let Some(a) = self.ahead.take() {
            self.line(format!("ph::wg_wait<0>({});", a.acc));
        }
        Ok(())
    }
}
