//! The grid: from `@grid(..)`, or inferred from the accesses each `ctx.block` axis drives.
//!
//! `X[B * S :+ S, ..]` and `X[S * B :+ S, ..]` over dim D propose `cdiv(D, S)` blocks along B's
//! axis, and `X[B, ..]` proposes `D`, where B is `ctx.block.a` or a `let` alias of it (a `let`
//! of `ctx.block.a * S` is an alias of the scaled index, so `let r = ctx.block.x * S` then
//! `X[r :+ S]` proposes `cdiv(D, S)` too). All
//! proposals of an axis must agree (at this point); an axis that is read without a proposal, or
//! with disagreeing ones, is an error asking for `@grid`. Axes that are never read get 1 block.

use super::value::{ex, lit};
use super::{Cx, Mode};
use crate::codes;
use phobos_ir as ir;
use phobos_ir::eval::Value;
use phobos_ir::DType;
use phobos_syntax::ast::AttrKind;
use phobos_syntax::{Diagnostic, Span};

const AXES: [char; 3] = ['x', 'y', 'z'];

/// One access's claim on an axis's block count.
#[derive(Clone, Debug)]
struct Proposal {
    axis: u8,
    /// Equal keys are equal extents: (runtime dim, span length) or (None, static extent).
    key: (Option<ir::DimId>, i64),
    expr: ir::Expr,
    text: String,
    span: Span,
}

/// What a pass learned about the grid.
#[derive(Clone, Debug, Default)]
pub(crate) struct Inference {
    reads: [Option<Span>; 3],
    proposals: Vec<Proposal>,
}

impl Inference {
    /// Records a read of `ctx.block.<axis>`.
    pub fn read(&mut self, axis: u8, span: Span) {
        let slot = &mut self.reads[axis as usize];
        if slot.is_none() {
            *slot = Some(span);
        }
    }
}

fn i32_ty() -> ir::Ty {
    ir::Ty::Scalar(DType::I32)
}

impl Cx<'_> {
    /// `(axis, scale)` when an index expression is `ctx.block.a * scale`, directly, through
    /// `let` aliases, or multiplied by constants.
    pub fn block_scaled(&self, e: &ir::Expr) -> Option<(u8, i64)> {
        match &e.kind {
            ir::ExprKind::Ctx(ir::Ctx::Block(a)) => Some((*a, 1)),
            ir::ExprKind::Local(l) => self.meta.get(*l).and_then(|m| m.block_alias),
            ir::ExprKind::Binary(ir::BinOp::Mul, a, b) => {
                let k = |x: &ir::Expr| match x.kind {
                    ir::ExprKind::Lit(ir::Lit::Int(k)) => Some(k),
                    _ => None,
                };
                match (k(a), k(b)) {
                    (_, Some(k)) => self
                        .block_scaled(a)
                        .and_then(|(ax, s)| Some((ax, s.checked_mul(k)?))),
                    (Some(k), _) => self
                        .block_scaled(b)
                        .and_then(|(ax, s)| Some((ax, s.checked_mul(k)?))),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `X[B, ..]` over `dim`.
    pub fn propose_at(&mut self, index: &ir::Expr, dim: ir::Dim, dim_text: String, span: Span) {
        let Some((axis, 1)) = self.block_scaled(index) else {
            return;
        };
        let (key, expr) = match dim {
            ir::Dim::Static(v) => ((None, v), lit(Value::Int(v), DType::I32, span)),
            ir::Dim::Dyn(id) => (
                (Some(id), 1),
                ex(ir::ExprKind::Dim(id), i32_ty(), true, span),
            ),
        };
        self.grid.proposals.push(Proposal {
            axis,
            key,
            expr,
            text: dim_text,
            span,
        });
    }

    /// `X[B * S :+ S, ..]` over `dim`.
    pub fn propose_span(
        &mut self,
        start: &ir::Expr,
        len: i64,
        dim: ir::Dim,
        dim_text: String,
        len_text: String,
        span: Span,
    ) {
        let Some((axis, scale)) = self.block_scaled(start) else {
            return;
        };
        if scale != len {
            return;
        }
        let (key, expr) = match dim {
            ir::Dim::Static(v) => {
                let n = v / len + i64::from(v % len != 0);
                ((None, n), lit(Value::Int(n), DType::I32, span))
            }
            ir::Dim::Dyn(id) => {
                let d = ex(ir::ExprKind::Dim(id), i32_ty(), true, span);
                let s = lit(Value::Int(len), DType::I32, span);
                (
                    (Some(id), len),
                    ex(
                        ir::ExprKind::Cdiv(Box::new(d), Box::new(s)),
                        i32_ty(),
                        true,
                        span,
                    ),
                )
            }
        };
        self.grid.proposals.push(Proposal {
            axis,
            key,
            expr,
            text: format!("cdiv({dim_text}, {len_text})"),
            span,
        });
    }

    /// The grid of the kernel: `@grid` when given, else inferred.
    pub fn grid_exprs(&mut self) -> [ir::Expr; 3] {
        let one = |span| lit(Value::Int(1), DType::I32, span);
        let at = self.ast.name.span;
        let explicit = self.ast.attrs.iter().find_map(|a| match &a.kind {
            AttrKind::Grid(args) => Some((args, a.span)),
            _ => None,
        });
        if let Some((args, span)) = explicit {
            if args.len() > 3 || args.is_empty() {
                self.error(
                    Diagnostic::error(
                        codes::GRID_ARGS,
                        format!("@grid takes 1 to 3 axes, found {}", args.len()),
                        span,
                    )
                    .with_label("@grid(x[, y[, z]])"),
                );
            }
            let mode = Mode::Attr {
                what: "@grid",
                params: true,
                wide: false,
            };
            let mut out = [one(at), one(at), one(at)];
            for (slot, e) in out.iter_mut().zip(args) {
                if let Some(x) = self.in_mode(mode, |cx| cx.grid_axis(e)) {
                    *slot = x;
                }
            }
            return out;
        }
        let mut out = [one(at), one(at), one(at)];
        let mut texts: Vec<String> = Vec::new();
        let last_read = self.grid.reads.iter().rposition(Option::is_some);
        for axis in 0..3u8 {
            let props: Vec<&Proposal> = self
                .grid
                .proposals
                .iter()
                .filter(|p| p.axis == axis)
                .collect();
            match props.first() {
                Some(p) => texts.push(p.text.clone()),
                None if self.grid.reads[axis as usize].is_some() => {
                    texts.push(format!("<blocks along {}>", AXES[axis as usize]))
                }
                None => texts.push("1".into()),
            }
        }
        let suggestion = match last_read {
            Some(n) => format!("@grid({})", texts[..=n].join(", ")),
            None => String::new(),
        };
        for axis in 0..3usize {
            let Some(read) = self.grid.reads[axis] else {
                continue;
            };
            let props: Vec<Proposal> = self
                .grid
                .proposals
                .iter()
                .filter(|p| p.axis as usize == axis)
                .cloned()
                .collect();
            let Some(first) = props.first() else {
                self.error(
                    Diagnostic::error(
                        codes::GRID_UNKNOWN,
                        format!("cannot infer how many blocks run along {}", AXES[axis]),
                        read,
                    )
                    .with_label(format!("`ctx.block.{}` is read here", AXES[axis]))
                    .with_note(format!(
                        "the grid is inferred from accesses `X[ctx.block.{0} * S :+ S, ..]` or `X[ctx.block.{0}, ..]`, directly or through a `let` of `ctx.block.{0}` (times S)",
                        AXES[axis]
                    ))
                    .with_help(format!("give the grid explicitly: `{suggestion}`")),
                );
                continue;
            };
            if let Some(other) = props.iter().find(|p| p.key != first.key) {
                self.error(
                    Diagnostic::error(
                        codes::GRID_CONFLICT,
                        format!(
                            "the accesses imply different grids along {}: {} and {}",
                            AXES[axis], first.text, other.text
                        ),
                        other.span,
                    )
                    .with_label(format!("implies {}", other.text))
                    .with_secondary(first.span, format!("implies {}", first.text))
                    .with_help(format!("choose one with `{suggestion}`")),
                );
                continue;
            }
            out[axis] = first.expr.clone();
        }
        out
    }

    fn grid_axis(&mut self, e: &phobos_syntax::ast::Expr) -> Option<ir::Expr> {
        let v = self.expr(e)?;
        let v = self.coerce(v, DType::I32)?;
        if v.is_tile() || !v.dtype().is_int() {
            self.error(
                Diagnostic::error(
                    codes::GRID_ARGS,
                    format!("a grid extent must be an integer, found {}", v.dtype()),
                    e.span,
                )
                .with_label("not an integer"),
            );
            return None;
        }
        if v.dtype() == DType::I32 {
            return Some(v.e);
        }
        let span = v.span();
        self.fold(ex(ir::ExprKind::Cast(Box::new(v.e)), i32_ty(), true, span))
    }
}
