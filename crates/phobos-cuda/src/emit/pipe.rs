//! Operands of tensor-core dots streamed by a loop (attention's K and V tiles): copied into
//! shared memory with cp.async one iteration ahead, into two buffers that alternate, so the
//! copies of iteration i + 1 are in flight while iteration i multiplies (`ph::mma_prefetch`,
//! `ph::stile`).
//!
//! A tile load qualifies when it is an operand of a dot that runs on tensor cores
//! ([`crate::plan::dot_mma`]), lies in the loop's own body (not a nested loop's), its indices
//! read only the loop variable and locals the loop does not assign, and its tensor is never
//! written by the kernel: then reading it one iteration early reads the same values.

use super::{Emitter, Result};
use crate::layout::rc;
use crate::Target;
use phobos_ir::{Expr, ExprKind, Index, Kernel, LocalId, Stmt, StmtKind};
use std::collections::BTreeSet;

/// One streamed operand: its load and its offset in a buffer.
pub(crate) struct Streamed<'k> {
    load: &'k Expr,
    offset: u32,
}

/// The loads of `body` (the loop over `var`) that qualify, in order of appearance.
fn streamed_loads<'k>(
    k: &'k Kernel,
    target: &Target,
    var: LocalId,
    body: &'k [Stmt],
    assigned: &BTreeSet<LocalId>,
) -> Vec<&'k Expr> {
    let mut stored = BTreeSet::new();
    crate::visit::stored_tensors(&k.body, &mut stored);
    let invariant = |e: &Expr| {
        !crate::visit::any_expr(e, &mut |x| match &x.kind {
            ExprKind::Local(l) => *l != var && assigned.contains(l),
            ExprKind::Load { .. } | ExprKind::TileGet { .. } | ExprKind::Reduce { .. } => true,
            _ => false,
        })
    };
    let qualifies = |op: &Expr| match &op.kind {
        ExprKind::Load { tensor, index } => {
            !stored.contains(tensor)
                && crate::ctype::register_bytes(op.ty.dtype()) == 4
                && matches!(
                    op.ty.dtype(),
                    phobos_ir::DType::F16 | phobos_ir::DType::BF16
                )
                && index.iter().all(|i| match i {
                    Index::At(e) => invariant(e),
                    Index::Span { start, .. } => invariant(start),
                })
        }
        _ => false,
    };
    let mut out: Vec<&'k Expr> = Vec::new();
    fn walk<'k>(stmts: &'k [Stmt], f: &mut dyn FnMut(&'k Expr)) {
        for s in stmts {
            for e in crate::visit::stmt_exprs(s) {
                visit_ref(e, f);
            }
            if let StmtKind::If {
                then_body,
                else_body,
                ..
            } = &s.kind
            {
                walk(then_body, f);
                walk(else_body, f);
            }
        }
    }
    walk(body, &mut |e| {
        if let ExprKind::Dot { a, b, .. } = &e.kind {
            if crate::plan::dot_mma(k, target, e).is_ok() {
                for op in [&**a, &**b] {
                    if qualifies(op) && !out.iter().any(|x| std::ptr::eq(*x, op)) {
                        out.push(op);
                    }
                }
            }
        }
    });
    out
}

/// Calls `f` on `e` and every subexpression, with the lifetime of the IR.
fn visit_ref<'k>(e: &'k Expr, f: &mut dyn FnMut(&'k Expr)) {
    f(e);
    crate::visit::children(e)
        .into_iter()
        .for_each(|c| visit_ref(c, f));
}

/// Bytes of one staged tile (`ph::mma_staged_bytes`).
fn staged_bytes(e: &Expr) -> u32 {
    let (r, c) = rc(e.ty.shape().unwrap_or(&[1]));
    crate::layout::staged_bytes(r, c)
}

impl<'k> Emitter<'k> {
    /// Before the loop over `var` (from `start`, by `step`): the qualifying loads, the first
    /// iteration's copies issued. Empty when nothing streams.
    pub(crate) fn pipe_begin(
        &mut self,
        var: LocalId,
        body: &'k [Stmt],
        assigned: &BTreeSet<LocalId>,
        start: &str,
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
        self.headers.insert(crate::MMA_HEADER);
        self.line(format!(
            "// streamed through shared memory one iteration ahead (cp.async, two buffers of {stage} bytes): {}",
            streamed
                .iter()
                .map(|s| self.describe_load(s.load))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        self.prefetch(var, &streamed, start, "0")?;
        self.line("ph::gemm::cp_async_commit();");
        Ok(streamed)
    }

    /// At the top of an iteration: the next iteration's copies issued into the other buffer
    /// (once every warp is done reading it), this iteration's awaited; the loads then read
    /// their buffer.
    pub(crate) fn pipe_top(
        &mut self,
        var: LocalId,
        streamed: &[Streamed<'k>],
        start: &str,
        step: &str,
        end: &str,
    ) -> Result<()> {
        if streamed.is_empty() {
            return Ok(());
        }
        let name = self.names.locals[var].clone();
        let buf = self.fresh("buf");
        self.line(format!(
            "const int {buf} = (({name} - {start}) / {step}) & 1;"
        ));
        self.barrier();
        self.line(format!("if ({name} + {step} < {end}) {{"));
        self.indent += 1;
        let next = format!("({name} + {step})");
        self.prefetch(var, streamed, &next, &format!("({buf} ^ 1)"))?;
        self.indent -= 1;
        self.line("}");
        self.line("ph::gemm::cp_async_commit();");
        self.line("ph::gemm::cp_async_wait<1>();");
        self.line("ph::mma_publish();");
        self.barrier();
        let stage = self.pipe_stage_name();
        for s in streamed {
            let (r, c) = rc(s.load.ty.shape().unwrap_or(&[1]));
            self.streamed.insert(
                s.load as *const Expr as usize,
                format!(
                    "ph::stile<{r}, {c}>(ph_pipe + {} + {buf} * {stage})",
                    s.offset
                ),
            );
        }
        Ok(())
    }

    /// After the loop: no copy left in flight.
    pub(crate) fn pipe_end(&mut self, streamed: &[Streamed<'k>]) {
        if streamed.is_empty() {
            return;
        }
        for s in streamed {
            self.streamed.remove(&(s.load as *const Expr as usize));
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
            let ExprKind::Load { tensor, index } = &s.load.kind else {
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
        let ExprKind::Load { tensor, index } = &value.kind else {
            return self.unsupported_expr("a resident operand that is not a tile load", value);
        };
        let at = self.resident_smem;
        self.resident_smem += staged_bytes(value);
        self.resident_at.insert(l, at);
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
