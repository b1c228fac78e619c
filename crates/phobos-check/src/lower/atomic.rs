//! Atomics: `atomic_add(X[..], v)`, `atomic_max`, `atomic_min`.
//!
//! An atomic is a statement: written alone, or as the initializer of a `let`/`var` that
//! receives the element's old value (element form only). Anywhere else it is an error
//! (`E0619`), so the IR keeps expressions free of side effects. The target is a tensor access
//! (`E0617`) of an element type the operation supports (`E0618`); the value has that type (a
//! literal adopts it) and the access's shape, or is a uniform scalar filling a tile (`E0613`).

use super::stmt::{mentions_tile, stmt};
use super::types::ty_str;
use super::{Binding, Cx};
use crate::codes;
use crate::lower::names::Named;
use phobos_ir as ir;
use phobos_ir::{AtomicOp, DType};
use phobos_syntax::ast::{self, Arg, Expr, ExprKind, Ident};
use phobos_syntax::{Diagnostic, Span};

/// The atomic a function name calls.
pub(super) fn atomic_op(name: &str) -> Option<AtomicOp> {
    Some(match name {
        "atomic_add" => AtomicOp::Add,
        "atomic_max" => AtomicOp::Max,
        "atomic_min" => AtomicOp::Min,
        _ => return None,
    })
}

/// The operation and arguments of `e` when it is a call of an atomic.
pub(super) fn as_atomic(e: &Expr) -> Option<(AtomicOp, &[Arg])> {
    match &e.kind {
        ExprKind::Call { callee, args } => atomic_op(&callee.name).map(|op| (op, &args[..])),
        _ => None,
    }
}

/// The element types an operation supports, for messages.
fn supported(op: AtomicOp) -> Vec<&'static str> {
    DType::ALL
        .iter()
        .filter(|&&t| op.supports(t))
        .map(|t| t.name())
        .collect()
}

/// A checked atomic call: the operation, the access and the value, ready for the IR.
struct Checked {
    op: AtomicOp,
    tensor: ir::ParamId,
    index: Vec<ir::Index>,
    value: ir::Expr,
    /// The tensor's element type (the old value's type).
    dtype: DType,
}

/// Where an atomic's old value goes.
pub(super) struct Bind<'a> {
    pub name: &'a ast::Ident,
    pub mutable: bool,
    /// The declared type, when written (`None` inside: it did not resolve, already reported).
    pub ty: Option<Option<ir::Ty>>,
}

impl Cx<'_> {
    /// `atomic_op(X[..], v)` as a statement, its old value bound to `bind` when given.
    pub(super) fn atomic_stmt(
        &mut self,
        e: &Expr,
        bind: Option<Bind<'_>>,
        span: Span,
        out: &mut Vec<ir::Stmt>,
    ) {
        let lowered = self.atomic_parts(e, bind.is_some());
        let Some(Checked {
            op,
            tensor,
            index,
            value,
            dtype,
        }) = lowered
        else {
            if let Some(b) = bind {
                self.declare(&b.name.name, Binding::Poison);
            }
            return;
        };
        let old = match bind {
            None => None,
            Some(b) => {
                let ty = ir::Ty::Scalar(dtype);
                match b.ty {
                    Some(Some(declared)) if declared != ty => {
                        self.error(
                            Diagnostic::error(
                                codes::ASSIGN_TYPE,
                                format!(
                                    "`{}` has type {}, but the old value of `{}` is {}",
                                    b.name.name,
                                    ty_str(&declared),
                                    op.name(),
                                    ty_str(&ty)
                                ),
                                e.span,
                            )
                            .with_label(format!("the old value: {}", ty_str(&ty)))
                            .with_help(format!(
                                "declare it `{}: {}`",
                                b.name.name,
                                ty_str(&ty)
                            )),
                        );
                        self.declare(&b.name.name, Binding::Poison);
                        return;
                    }
                    Some(None) => {
                        self.declare(&b.name.name, Binding::Poison);
                        return;
                    }
                    _ => {}
                }
                // Each thread gets its own old value: per-thread even for uniform operands.
                match self.new_local(b.name, ty, false, b.mutable, None) {
                    Some(l) => Some(l),
                    None => return,
                }
            }
        };
        out.push(stmt(
            ir::StmtKind::Atomic {
                op,
                tensor,
                index,
                value,
                old,
            },
            span,
        ));
    }

    /// An atomic used as a value inside an expression.
    pub(super) fn atomic_in_expr(&mut self, callee: &Ident, span: Span) -> Option<super::V> {
        self.error(
            Diagnostic::error(
                codes::ATOMIC_VALUE,
                format!(
                    "`{}` is a statement, not part of an expression",
                    callee.name
                ),
                span,
            )
            .with_label("used as a value here")
            .with_help(format!(
                "write it alone, or bind the old value first: `let old = {}` (one element only)",
                self.text(span)
            )),
        );
        None
    }

    /// Checks an atomic call: the operation, the tensor, the index, the value (of the tensor's
    /// element type and the access's shape) and the element type.
    fn atomic_parts(&mut self, e: &Expr, bound: bool) -> Option<Checked> {
        let (op, args) = as_atomic(e)?;
        let name = op.name();
        let (pos, _) = self.args(name, args, (2, 2), &[], e.span)?;
        let target = pos[0];
        let ExprKind::Index {
            base,
            indices,
            options,
        } = &target.kind
        else {
            self.expr(pos[1]);
            return self.not_atomic_target(op, target, "not a tensor access");
        };
        let pid = match &base.kind {
            ExprKind::Name(id) => match self.lookup(&id.name) {
                Named::Tensor(pid) => Some(pid),
                _ => None,
            },
            _ => None,
        };
        let Some(pid) = pid else {
            self.expr(pos[1]);
            return self.not_atomic_target(op, target, "not an access of a tensor parameter");
        };
        if !self.no_options(
            options,
            "an atomic",
            "an atomic is a read-modify-write in L2: it takes no eviction hint",
        ) {
            self.expr(pos[1]);
            return None;
        }
        let acc = self.access(pid, indices, &[], target.span);
        let v = self.expr(pos[1]);
        let (acc, v) = (acc?, v?);
        let t = acc.dtype;
        if !op.supports(t) {
            let tensor = self.params[pid].name.clone();
            self.error(
                Diagnostic::error(
                    codes::ATOMIC_TYPE,
                    format!("`{name}` is not defined on {t} tensors"),
                    target.span,
                )
                .with_label(format!("`{tensor}` holds {t}"))
                .with_help(format!(
                    "`{name}` updates {} tensors",
                    supported(op).join(", ")
                )),
            );
            return None;
        }
        let v = self.coerce(v, t)?;
        if v.dtype() != t {
            self.error(
                Diagnostic::error(
                    codes::ATOMIC_TYPE,
                    format!(
                        "the value of `{name}` is {}, but the tensor holds {t}",
                        ty_str(v.ty())
                    ),
                    v.span(),
                )
                .with_label(format!("expected {t}"))
                .with_secondary(target.span, format!("{t} elements"))
                .with_help(format!("convert it: `{t}({})`", self.text(v.span()))),
            );
            return None;
        }
        let tile = acc.shape.is_some();
        if tile && bound {
            self.error(
                Diagnostic::error(
                    codes::ATOMIC_VALUE,
                    format!("`{name}` of a tile has no old value to bind"),
                    e.span,
                )
                .with_label("updates a tile: returns nothing")
                .with_help(format!(
                    "write it alone as a statement (`{}`); only the one-element form returns the old value",
                    self.text(e.span)
                )),
            );
            return None;
        }
        let value = self.store_value(&acc, v, target.span)?;
        let mut exprs: Vec<&ir::Expr> = vec![&value];
        for i in &acc.index {
            match i {
                ir::Index::At(x) | ir::Index::Span { start: x, .. } => exprs.push(x),
            }
        }
        let is_tile = tile || exprs.iter().any(|x| mentions_tile(x));
        self.tile_stmt_if(e.span, is_tile);
        Some(Checked {
            op,
            tensor: pid,
            index: acc.index,
            value,
            dtype: t,
        })
    }

    fn not_atomic_target<T>(&mut self, op: AtomicOp, target: &Expr, label: &str) -> Option<T> {
        let name = op.name();
        self.error(
            Diagnostic::error(
                codes::ATOMIC_TARGET,
                format!("the first argument of `{name}` must be a tensor access"),
                target.span,
            )
            .with_label(label)
            .with_help(format!(
                "update tensor elements: `{name}(X[i], v)` for one element per thread, `{name}(X[r :+ R], t)` for a tile"
            )),
        );
        None
    }
}
