//! Reading facts off an instantiated kernel: which tensors it reads and writes, with which
//! static span lengths.

use phobos_ir::walk::{stmt_exprs, stmts};
use phobos_ir::{Expr, ExprKind, Index, Kernel, ParamId, Stmt, StmtKind};

/// One tensor access: the parameter, and per axis the static span length (`None` for a
/// single-element index).
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    pub tensor: ParamId,
    pub spans: Vec<Option<i64>>,
    pub store: bool,
}

/// Every tensor access of a kernel, in program order.
pub fn accesses(kernel: &Kernel) -> Vec<Access> {
    let mut out = Vec::new();
    stmts(&kernel.body, &mut |s| stmt(s, &mut out));
    out
}

/// Parameters the kernel stores to.
pub fn written(kernel: &Kernel) -> Vec<ParamId> {
    let mut ids: Vec<ParamId> = accesses(kernel)
        .into_iter()
        .filter(|a| a.store)
        .map(|a| a.tensor)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Parameters the kernel stores to and never loads: their old contents cannot matter, so a
/// check may poison them.
pub fn write_only(kernel: &Kernel) -> Vec<ParamId> {
    let acc = accesses(kernel);
    written(kernel)
        .into_iter()
        .filter(|&p| !acc.iter().any(|a| a.tensor == p && !a.store))
        .collect()
}

/// Whether a `dot` may round its operands to TF32 (a `tf32` operand or `@allow_tf32`).
pub fn uses_tf32(kernel: &Kernel) -> bool {
    let mut found = false;
    let mut visit = |e: &Expr| {
        if let ExprKind::Dot { tf32: true, .. } = e.kind {
            found = true;
        }
    };
    phobos_ir::walk::exprs(&kernel.body, &mut visit);
    found
}

fn spans(index: &[Index]) -> Vec<Option<i64>> {
    index
        .iter()
        .map(|i| match i {
            Index::At(_) => None,
            Index::Span { len, .. } => Some(*len),
        })
        .collect()
}

fn stmt(s: &Stmt, out: &mut Vec<Access>) {
    if let StmtKind::Store { tensor, index, .. } = &s.kind {
        out.push(Access {
            tensor: *tensor,
            spans: spans(index),
            store: true,
        });
    }
    // An atomic reads the element it updates: its tensor is never write-only.
    if let StmtKind::Atomic { tensor, index, .. } = &s.kind {
        for store in [false, true] {
            out.push(Access {
                tensor: *tensor,
                spans: spans(index),
                store,
            });
        }
    }
    stmt_exprs(s, &mut |e| {
        if let ExprKind::Load { tensor, index, .. } = &e.kind {
            out.push(Access {
                tensor: *tensor,
                spans: spans(index),
                store: false,
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_syntax::SourceFile;

    #[test]
    fn an_atomic_reads_and_writes_its_tensor() {
        let src = "@grid(cdiv(N, 256))\nkernel k(X: tensor<i32>[N], H: tensor<i32>[8], Y: tensor<f32>[N]) {\n  \
                   let i = ctx.block.x * 256 + ctx.thread\n  atomic_add(H[X[i]], 1)\n  Y[i] = 0.0\n}\n";
        let module = phobos_check::load(SourceFile::new("k.ph", src)).unwrap();
        let info = &module.kernels[0];
        let k = phobos_check::instantiate(&module, info, &info.default_variant().unwrap()).unwrap();
        assert_eq!(written(&k), vec![1, 2]);
        // H's old contents are counted into: a check must not poison it.
        assert_eq!(write_only(&k), vec![2]);
    }
}
