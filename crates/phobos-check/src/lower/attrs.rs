//! Attributes at a point: `@launch`, `@where`, `@aligned`, `@flops`, `@bytes`.
//! (`@autotune` is the space, `@grid` is in grid.rs.)

use super::types::ty_str;
use super::value::ex;
use super::{Cx, Mode};
use crate::codes;
use crate::suggest::did_you_mean;
use phobos_ir as ir;
use phobos_ir::eval::Value;
use phobos_ir::DType;
use phobos_syntax::ast::{self, AttrKind};
use phobos_syntax::Diagnostic;

/// Attributes read dims and constants; `@flops` and `@bytes` also scalar parameters (the tuner
/// evaluates them per problem, with the arguments it runs).
fn attr_mode(what: &'static str) -> Mode {
    Mode::Attr {
        what,
        params: matches!(what, "@flops" | "@bytes"),
        wide: true,
    }
}

/// Results of [`Cx::kernel_attrs`]: wheres, aligned dims, flops, bytes.
pub(crate) type KernelAttrs = (
    Vec<ir::Expr>,
    Vec<(ir::DimId, i64)>,
    Option<ir::Expr>,
    Option<ir::Expr>,
);

impl Cx<'_> {
    /// `@launch(threads[, min_blocks[, max_regs]])`, default 256 threads. Also sets
    /// `self.threads` for `ctx.threads`.
    pub fn launch(&mut self) -> ir::Launch {
        let mut launch = ir::Launch {
            threads: 256,
            min_blocks_per_sm: None,
            max_regs: None,
        };
        let Some(args) = self.ast.attrs.iter().find_map(|a| match &a.kind {
            AttrKind::Launch(args) => Some(args),
            _ => None,
        }) else {
            return launch;
        };
        let names = ["threads", "min_blocks", "max_regs"];
        for (i, e) in args.iter().enumerate() {
            let Some(what) = names.get(i) else {
                self.error(
                    Diagnostic::error(
                        codes::ATTR_NOT_CONST,
                        "@launch takes at most 3 arguments",
                        e.span,
                    )
                    .with_label("extra argument")
                    .with_help("@launch(threads[, min_blocks_per_sm[, max_regs]])"),
                );
                break;
            };
            let label = format!("the @launch argument `{what}`");
            let Some(v) = self.in_mode(attr_mode("@launch"), |cx| {
                cx.const_int(e, &label, codes::ATTR_NOT_CONST)
            }) else {
                continue;
            };
            let shown = self.text(e.span);
            let at_point = if shown.trim() == v.to_string() {
                String::new()
            } else {
                format!(" (`{shown}` = {v} at this point)")
            };
            match i {
                0 if !(1..=1024).contains(&v) || v % 32 != 0 => self.error(
                    Diagnostic::error(
                        codes::LAUNCH_THREADS,
                        format!("a block of {v} threads is not allowed{at_point}"),
                        e.span,
                    )
                    .with_label("threads per block")
                    .with_help("use a multiple of 32 between 32 and 1024"),
                ),
                0 => launch.threads = v as u32,
                1 if v < 1 || v > u32::MAX as i64 => self.error(
                    Diagnostic::error(
                        codes::LAUNCH_BOUNDS,
                        format!("min_blocks must be at least 1, not {v}{at_point}"),
                        e.span,
                    )
                    .with_label("min blocks per SM"),
                ),
                1 => launch.min_blocks_per_sm = Some(v as u32),
                _ if !(16..=255).contains(&v) => self.error(
                    Diagnostic::error(
                        codes::LAUNCH_BOUNDS,
                        format!("max_regs must be in 16..=255, not {v}{at_point}"),
                        e.span,
                    )
                    .with_label("registers per thread"),
                ),
                _ => launch.max_regs = Some(v as u32),
            }
        }
        self.threads = launch.threads;
        launch
    }

    /// `@where`, `@aligned`, `@flops` and `@bytes` at this point.
    pub fn kernel_attrs(&mut self) -> KernelAttrs {
        let mut wheres = Vec::new();
        let mut aligned: Vec<(ir::DimId, i64)> = Vec::new();
        let (mut flops, mut bytes) = (None, None);
        let attrs = &self.ast.attrs;
        for attr in attrs {
            match &attr.kind {
                AttrKind::Where(e) => {
                    if let Some(w) = self.in_mode(attr_mode("@where"), |cx| cx.where_expr(e)) {
                        wheres.extend(w);
                    }
                }
                AttrKind::Aligned(items) => {
                    for (name, e) in items {
                        if let Some(a) = self.aligned(name, e) {
                            if aligned.iter().any(|(d, _)| *d == a.0) {
                                self.error(
                                    Diagnostic::error(
                                        codes::DUP_ATTR,
                                        format!("`{}` is aligned twice", name.name),
                                        name.span,
                                    )
                                    .with_label("given again here"),
                                );
                            } else {
                                aligned.push(a);
                            }
                        }
                    }
                }
                AttrKind::Flops(e) => {
                    flops = self.in_mode(attr_mode("@flops"), |cx| cx.work(e, "@flops"))
                }
                AttrKind::Bytes(e) => {
                    bytes = self.in_mode(attr_mode("@bytes"), |cx| cx.work(e, "@bytes"))
                }
                _ => {}
            }
        }
        (wheres, aligned, flops, bytes)
    }

    /// A `@where` constraint: `None` on error, `Some(None)` when true at this point.
    fn where_expr(&mut self, e: &ast::Expr) -> Option<Option<ir::Expr>> {
        let v = self.expr(e)?;
        if v.is_tile() || v.dtype() != DType::Bool || v.weak.is_some() {
            self.error(
                Diagnostic::error(
                    codes::ATTR_TYPE,
                    format!("@where needs a bool, found {}", ty_str(v.ty())),
                    e.span,
                )
                .with_label("not a condition")
                .with_help("compare, e.g. `@where(K % TILE_K == 0)`"),
            );
            return None;
        }
        match v.konst() {
            Some(Value::Bool(true)) => Some(None),
            Some(_) => {
                self.error(
                    Diagnostic::error(
                        codes::WHERE_VIOLATED,
                        format!("this point violates `@where({})`", self.text(e.span)),
                        e.span,
                    )
                    .with_label("false at this point")
                    .with_note(format!("the point: {}", self.point.to_pins()))
                    .with_help("choose other values; the tuner skips points that violate @where"),
                );
                None
            }
            None => Some(Some(v.e)),
        }
    }

    fn aligned(&mut self, name: &ast::Ident, e: &ast::Expr) -> Option<(ir::DimId, i64)> {
        let dim = self.dims.iter().position(|d| d.name == name.name);
        let label = format!("the alignment of `{}`", name.name);
        let value = self.in_mode(attr_mode("@aligned"), |cx| {
            cx.const_int(e, &label, codes::ALIGNED_VALUE)
        });
        let Some(dim) = dim else {
            let why = if self.point.get(&name.name).is_some() {
                format!("`{}` is an @autotune constant, already static", name.name)
            } else {
                format!("`{}` is not a runtime dim of this kernel", name.name)
            };
            let mut d = Diagnostic::error(
                codes::ALIGNED_NOT_DIM,
                format!("@aligned names a runtime dim; {why}"),
                name.span,
            )
            .with_label("not a runtime dim");
            let dims: Vec<&str> = self.dims.iter().map(|d| d.name.as_str()).collect();
            d = match did_you_mean(&name.name, dims.iter().copied()) {
                Some(s) => d.with_help(s),
                None if dims.is_empty() => d.with_help("this kernel has no runtime dims"),
                None => d.with_help(format!("runtime dims: {}", dims.join(", "))),
            };
            self.error(d);
            return None;
        };
        let v = value?;
        if v < 1 {
            self.error(
                Diagnostic::error(
                    codes::ALIGNED_VALUE,
                    format!("an alignment must be at least 1, not {v}"),
                    e.span,
                )
                .with_label("alignment"),
            );
            return None;
        }
        Some((dim, v))
    }

    /// `@flops(e)`/`@bytes(e)`: an i64 (or f64) expression over dims, constants and scalar
    /// parameters.
    fn work(&mut self, e: &ast::Expr, what: &str) -> Option<ir::Expr> {
        let v = self.expr(e)?;
        let v = self.materialize(v)?;
        let t = v.dtype();
        if v.is_tile() || !(t.is_int() || t.is_float()) {
            self.error(
                Diagnostic::error(
                    codes::ATTR_TYPE,
                    format!("{what} needs a number, found {}", ty_str(v.ty())),
                    e.span,
                )
                .with_label("not a number"),
            );
            return None;
        }
        let target = if t.is_int() { DType::I64 } else { DType::F64 };
        if t == target {
            return Some(v.e);
        }
        let span = v.span();
        self.fold(ex(
            ir::ExprKind::Cast(Box::new(v.e)),
            ir::Ty::Scalar(target),
            true,
            span,
        ))
    }
}
