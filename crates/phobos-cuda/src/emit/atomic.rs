//! Atomic statements: `atomic_add(X[i], v)` per thread (with its old value when bound) and
//! `atomic_add(X[r :+ R, c :+ C], t)` per block, over `cuda/phobos_atomic.cuh`.

use super::{Emitter, Result};
use crate::ctype;
use phobos_ir::{AtomicOp, Expr, Index, LocalId, MemOrder, ParamId};

/// The operation's tag type in `phobos_atomic.cuh`.
fn op_tag(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Add => "ph::AtomAdd",
        AtomicOp::Max => "ph::AtomMax",
        AtomicOp::Min => "ph::AtomMin",
    }
}

impl<'k> Emitter<'k> {
    pub(crate) fn atomic(
        &mut self,
        op: AtomicOp,
        tensor: ParamId,
        index: &'k [Index],
        value: &'k Expr,
        old: Option<LocalId>,
    ) -> Result<()> {
        self.headers.insert(crate::ATOMIC_HEADER);
        let tag = op_tag(op);
        if index.iter().any(|i| matches!(i, Index::Span { .. })) {
            // A tile statement is a barrier: element updates and stores before it are complete
            // (the order of different operations on one element matters).
            if self.pending.contains(&tensor) {
                self.barrier();
            }
            // Each element of the tile once, by the thread holding it (the layout contract).
            let (name, _) = self.as_tile(value)?;
            let region = self.region(tensor, index, true)?;
            self.line(format!("ph::atomic_tile<{tag}>({region}, {name});"));
            if self.element_loaded.contains(&tensor) {
                self.barrier();
            } else {
                self.pending.insert(tensor);
            }
            return Ok(());
        }
        let v = self.scalar(value)?;
        let ptr = self.element_ptr(tensor, index)?;
        let call = format!("ph::atomic<{tag}>({ptr}, {})", v.s);
        match old {
            Some(l) => {
                let name = self.names.locals[l].clone();
                let decl = if self.plan.decl_inline.get(&l) == Some(&self.path) {
                    format!("{} ", ctype::register(value.ty.dtype()))
                } else {
                    String::new()
                };
                self.line(format!("{decl}{name} = {call};"));
            }
            None => self.line(format!("{call};")),
        }
        self.pending.insert(tensor);
        Ok(())
    }

    /// The address of one element (`ph::ptr2<ROW>(X, i, j, M, N)`), null outside the tensor.
    fn element_ptr(&mut self, tensor: ParamId, index: &'k [Index]) -> Result<String> {
        let (_, order, _) = self.tensor_info(tensor);
        let dims = self.dim_strings(tensor);
        let mut idx = Vec::new();
        for i in index {
            match i {
                Index::At(e) => idx.push(self.scalar(e)?.s),
                Index::Span { start, .. } => {
                    return self.unsupported_expr("a span in an element access", start);
                }
            }
        }
        let rank = idx.len();
        let row = order == MemOrder::RowMajor;
        let name = self.names.params[tensor].clone();
        if rank > 3 {
            let i = format!("ph::Idx<{rank}>{{{{{}}}}}", idx.join(", "));
            let d = format!("ph::Idx<{rank}>{{{{{}}}}}", dims.join(", "));
            return Ok(format!("ph::ptr_n<{row}, {rank}>({name}, {i}, {d})"));
        }
        let mut args = vec![name];
        args.extend(idx);
        args.extend(dims);
        Ok(format!("ph::ptr{rank}<{row}>({})", args.join(", ")))
    }
}
