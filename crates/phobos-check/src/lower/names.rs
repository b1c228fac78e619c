//! Names and scopes: what an identifier means at a point of the body or in an attribute.
//!
//! Lookup order: block scopes innermost first (shadowing is allowed and creates a new local),
//! then parameters, runtime dims, shape-environment constants, type parameters, and the
//! built-in names `ctx` and `inf`. Kernel-level names never collide (kernel.rs checks that).

use super::value::{ex, Weak, V};
use super::{Binding, Cx, Mode};
use crate::codes;
use crate::suggest::did_you_mean;
use phobos_ir as ir;
use phobos_ir::{DType, DimId, ParamId};
use phobos_syntax::{ast, Diagnostic, Span};

/// What a name refers to.
pub(crate) enum Named {
    Binding(Binding),
    Tensor(ParamId),
    Scalar(ParamId, DType),
    Dim(DimId),
    Env(i64),
    TypeParam,
    Ctx,
    Inf,
    Unknown,
}

impl Cx<'_> {
    pub fn lookup(&self, name: &str) -> Named {
        for scope in self.scopes.iter().rev() {
            if let Some((_, b)) = scope.iter().rev().find(|(n, _)| n == name) {
                return Named::Binding(b.clone());
            }
        }
        if let Some(pid) = self.params.iter().position(|p| p.name == name) {
            return match self.params[pid].kind {
                ir::ParamKind::Tensor { .. } => Named::Tensor(pid),
                ir::ParamKind::Scalar { dtype } => Named::Scalar(pid, dtype),
            };
        }
        if let Some(id) = self.dims.iter().position(|d| d.name == name) {
            return Named::Dim(id);
        }
        if let Some(v) = self.point.get(name) {
            return Named::Env(v);
        }
        if self.types.iter().any(|(n, _)| n == name) {
            return Named::TypeParam;
        }
        match name {
            "ctx" => Named::Ctx,
            "inf" => Named::Inf,
            _ => Named::Unknown,
        }
    }

    pub fn push_scope(&mut self) {
        self.scopes.push(Vec::new());
    }

    pub fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    pub fn declare(&mut self, name: &str, b: Binding) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.push((name.to_string(), b));
        }
    }

    /// Every value name visible here (for suggestions).
    fn visible(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .scopes
            .iter()
            .flatten()
            .map(|(n, _)| n.clone())
            .collect();
        out.extend(self.params.iter().map(|p| p.name.clone()));
        out.extend(self.dims.iter().map(|d| d.name.clone()));
        out.extend(self.point.0.iter().map(|(n, _)| n.clone()));
        if self.mode == Mode::Body {
            out.push("ctx".into());
        }
        out.push("inf".into());
        out
    }

    /// Runs `f` in an attribute mode, with the body's scopes hidden.
    pub fn in_mode<T>(&mut self, mode: Mode, f: impl FnOnce(&mut Self) -> T) -> T {
        let scopes = std::mem::take(&mut self.scopes);
        let old = std::mem::replace(&mut self.mode, mode);
        let out = f(self);
        self.mode = old;
        self.scopes = scopes;
        out
    }

    fn not_here(&mut self, span: Span, what: &str) -> Option<V> {
        let Mode::Attr { what: attr, .. } = self.mode else {
            return None;
        };
        self.error(
            Diagnostic::error(
                codes::ATTR_SCOPE,
                format!("{attr} cannot read {what}"),
                span,
            )
            .with_label("not available here")
            .with_help(format!(
                "{attr} may use runtime dims, @autotune names and literals"
            )),
        );
        None
    }

    /// The value of a name used as an expression.
    pub fn name_value(&mut self, id: &ast::Ident, span: Span) -> Option<V> {
        let name = id.name.as_str();
        match self.lookup(name) {
            Named::Binding(Binding::Local(l)) => {
                let local = &self.locals[l];
                let ty = local.ty.clone();
                let uniform = local.uniform;
                Some(V::strong(ex(ir::ExprKind::Local(l), ty, uniform, span)))
            }
            Named::Binding(Binding::Const(mut v, _)) => {
                v.e.span = span;
                Some(v)
            }
            Named::Binding(Binding::Poison) => None,
            Named::Tensor(pid) => {
                if self.mode != Mode::Body {
                    return self.not_here(span, &format!("the tensor `{name}`"));
                }
                let rank = match &self.params[pid].kind {
                    ir::ParamKind::Tensor { dims, .. } => dims.len(),
                    ir::ParamKind::Scalar { .. } => 1,
                };
                let at: Vec<&str> =
                    ["i", "j", "k", "l", "m", "n", "o", "p"][..rank.min(8)].to_vec();
                let spans: Vec<&str> = vec!["a :+ 64"; rank.min(8)];
                self.error(
                    Diagnostic::error(
                        codes::NOT_A_VALUE,
                        format!("the tensor `{name}` is not a value"),
                        span,
                    )
                    .with_label("a tensor in device memory")
                    .with_help(format!(
                        "index it: `{name}[{}]` reads one element, `{name}[{}]` a tile",
                        at.join(", "),
                        spans.join(", ")
                    )),
                );
                None
            }
            Named::Scalar(pid, dtype) => {
                if matches!(self.mode, Mode::Attr { params: false, .. }) {
                    return self.not_here(span, &format!("the parameter `{name}`"));
                }
                let param = ex(ir::ExprKind::Param(pid), ir::Ty::Scalar(dtype), true, span);
                // In `@flops`/`@bytes` integers are i64 and floats f64, as dims are.
                let wide = match dtype {
                    t if t.is_int() => DType::I64,
                    t if t.is_float() => DType::F64,
                    t => t,
                };
                if matches!(self.mode, Mode::Attr { wide: true, .. }) && wide != dtype {
                    let kind = ir::ExprKind::Cast(Box::new(param));
                    return Some(V::strong(ex(kind, ir::Ty::Scalar(wide), true, span)));
                }
                Some(V::strong(param))
            }
            Named::Dim(d) => {
                let dim = ex(ir::ExprKind::Dim(d), ir::Ty::Scalar(DType::I32), true, span);
                if matches!(self.mode, Mode::Attr { wide: true, .. }) {
                    let kind = ir::ExprKind::Cast(Box::new(dim));
                    return Some(V::strong(ex(kind, ir::Ty::Scalar(DType::I64), true, span)));
                }
                Some(V::strong(dim))
            }
            Named::Env(v) => Some(self.weak(Weak::Int(v), span)),
            Named::Inf => Some(self.weak(Weak::Float(f64::INFINITY), span)),
            Named::TypeParam => {
                self.error(
                    Diagnostic::error(
                        codes::NOT_A_VALUE,
                        format!("the type parameter `{name}` is not a value"),
                        span,
                    )
                    .with_label("an element type")
                    .with_help(format!("convert a value to it with `{name}(x)`")),
                );
                None
            }
            Named::Ctx => {
                if self.mode != Mode::Body {
                    return self.not_here(span, "`ctx`");
                }
                self.error(
                    Diagnostic::error(codes::BAD_CTX, "`ctx` is not a value", span)
                        .with_label("read one of its fields")
                        .with_help("ctx.block.x|y|z, ctx.grid.x|y|z, ctx.thread, ctx.threads, ctx.warp, ctx.lane"),
                );
                None
            }
            Named::Unknown => {
                let mut d =
                    Diagnostic::error(codes::UNKNOWN_NAME, format!("unknown name `{name}`"), span)
                        .with_label("not found in this scope");
                let visible = self.visible();
                if let Some(s) = did_you_mean(name, visible.iter().map(String::as_str)) {
                    d = d.with_help(s);
                } else if self.mode == Mode::Body {
                    d = d.with_help(format!("declare it first: `let {name} = ...`"));
                }
                self.error(d);
                None
            }
        }
    }
}
