//! Dots staged K-major (`cuda/phobos_mma_k.cuh`, `cuda/phobos_wgmma_k.cuh`): tf32, fp8, i8/u8,
//! and f16/bf16 with a K of no whole k steps. Both operands are staged K-major, the last k step
//! padded with zeros: on mma.sync (`ph::mma_dot_k`) to whole 32-byte k steps, on wgmma (sm_90a,
//! `WGMMA_K=1`, `ph::wg_dot_k`) to whole 128-byte lines, A read from registers when the plan says so
//! (`ph::wg_dot_k_ra`). Never a streamed or resident operand: those feed direct dots only.

use super::{Emitter, Result};
use crate::layout::{rc, Layout};
use crate::plan::{self, MmaInstr, MmaType};
use phobos_ir::{Expr, ExprKind};

impl<'k> Emitter<'k> {
    /// `dst += a @ b` (or `a @ bᵀ`) for a K-major staged dot of operand type `ty` into `dst`, a
    /// tensor-core accumulator.
    pub(super) fn staged_dot(&mut self, dst: &str, dot: &Expr, ty: MmaType) -> Result<()> {
        let ExprKind::Dot { a, b, trans_b, .. } = &dot.kind else {
            return self.unsupported_expr("a dot", dot);
        };
        let (m, k) = rc(a.ty.shape().unwrap_or(&[1]));
        let (_, n) = rc(dot.ty.shape().unwrap_or(&[1]));
        let (an, a_lay) = self.mma_operand(a)?;
        let (bn, _) = self.mma_operand(b)?;
        let (kernel, target, layouts) = (self.k, &self.plan.target, &self.plan.layouts);
        let t = plan::dot_tensor(kernel, target, dot);
        let wg = t.is_ok_and(|t| plan::staged_instr(kernel, target, &t) == MmaInstr::Wgmma);
        // A from registers as the plan's record says, its layout the one the operand was
        // computed in.
        let a_regs = t.is_ok_and(|t| {
            plan::staged_a_from_registers(kernel, target, layouts, dot, &t)
                && matches!(&a_lay, Some(Layout::Mma(p)) if plan::a_from_registers(p, &t.acc))
        });
        let kp = match wg {
            true => ty.wgmma_padded_k(k),
            false => ty.padded_k(k),
        };
        let k16 = kp * ty.bytes() / 2;
        let a_bytes = match a_regs {
            true => 0,
            false => crate::layout::staged_bytes(m, k16),
        };
        let bytes = a_bytes + crate::layout::staged_bytes(n, k16);
        self.headers.insert(crate::MMA_HEADER);
        self.headers.insert(crate::MMA_K_HEADER);
        if wg {
            self.headers.insert(crate::WGMMA_K_HEADER);
            self.headers.insert(crate::WGMMA_INT_HEADER);
        }
        let f = match (wg, a_regs) {
            (true, true) => "wg_dot_k_ra",
            (true, false) => "wg_dot_k",
            _ => "mma_dot_k",
        };
        let s = self.scratch(bytes);
        let dt = ty.cuda();
        self.line(format!("ph::{f}<{trans_b}, {dt}>({dst}, {an}, {bn}, {s});"));
        Ok(())
    }
}
