//! The checker's entry points besides [`crate::load`]: instantiation at a variant, whole-module
//! checking with the per-point summary, and `@where` evaluation for a problem.

use crate::codes;
use crate::lower;
use crate::module::{KernelInfo, Module};
use crate::variant::Variant;
use phobos_ir as ir;
use phobos_ir::eval::{self, Bindings};
use phobos_ir::DType;
use phobos_syntax::ast::AttrKind;
use phobos_syntax::Diagnostic;

/// Spaces up to this size are checked point by point by [`check_module`].
pub const MAX_CHECKED_POINTS: u128 = 4096;

/// Checks a kernel at a variant and lowers it to the IR. On error, returns every diagnostic
/// (errors first-found order, warnings included).
pub fn instantiate(
    module: &Module,
    kernel: &KernelInfo,
    variant: &Variant,
) -> Result<ir::Kernel, Vec<Diagnostic>> {
    let (k, diags) = lower::instantiate_full(module, kernel, variant);
    k.ok_or(diags)
}

/// Whether a `@where` over the point's names alone is false at the variant, so that the point is
/// outside the space for every problem. Cheap next to [`instantiate`]: the body is not lowered.
pub fn outside_space(module: &Module, kernel: &KernelInfo, variant: &Variant) -> bool {
    lower::outside_space(module, kernel, variant)
}

/// Like [`instantiate`], also returning the warnings of a successful check.
pub fn instantiate_with_warnings(
    module: &Module,
    kernel: &KernelInfo,
    variant: &Variant,
) -> (Option<ir::Kernel>, Vec<Diagnostic>) {
    lower::instantiate_full(module, kernel, variant)
}

/// The variant `phobos check` uses: the default one, with any type parameter that has no
/// default bound to f32.
pub fn check_variant(kernel: &KernelInfo) -> Variant {
    Variant {
        point: kernel.space.default_point(),
        types: kernel
            .type_params
            .iter()
            .map(|(n, d)| (n.clone(), d.unwrap_or(DType::F32)))
            .collect(),
        orders: Vec::new(),
    }
}

/// What `phobos check` reports: the module's warnings, each kernel's diagnostics at its default
/// point, and, for spaces of at most [`MAX_CHECKED_POINTS`] points whose default point checks,
/// one warning per kernel summarizing the points that do not check (the tuner skips them).
pub fn check_module(module: &Module) -> Vec<Diagnostic> {
    let mut out = module.warnings.clone();
    for kernel in &module.kernels {
        let base = check_variant(kernel);
        let (ir, diags) = lower::instantiate_full(module, kernel, &base);
        out.extend(diags);
        let size = kernel.space.size();
        if ir.is_none() || size <= 1 || size > MAX_CHECKED_POINTS {
            continue;
        }
        let (mut failed, mut excluded) = (0u128, 0u128);
        let mut first: Option<(ir::Point, String)> = None;
        for point in kernel.space.points() {
            if point == base.point {
                continue;
            }
            let (k, diags) = lower::instantiate_full(module, kernel, &base.at(point.clone()));
            if k.is_none() {
                // A `@where` false at the point puts it outside the space, by design.
                let errors = diags.iter().filter(|d| d.is_error());
                if errors.clone().count() > 0
                    && errors.clone().all(|d| d.code == codes::WHERE_VIOLATED)
                {
                    excluded += 1;
                    continue;
                }
                failed += 1;
                if first.is_none() {
                    let msg = diags
                        .iter()
                        .find(|d| d.is_error())
                        .map_or_else(String::new, |d| d.message.clone());
                    first = Some((point, msg));
                }
            }
        }
        if let Some((point, msg)) = first {
            let span = module
                .kernel_ast(kernel)
                .attrs
                .iter()
                .find(|a| matches!(a.kind, AttrKind::Autotune(_)))
                .map_or(kernel.span, |a| a.span);
            let mut warning = Diagnostic::warning(
                codes::POINTS_FAIL,
                format!(
                    "{failed} of {size} points do not check, e.g. {}: {msg}",
                    point.to_pins()
                ),
                span,
            )
            .with_label(format!("the space of `{}`", kernel.name))
            .with_note("the tuner skips these points")
            .with_help(format!(
                "see the errors of one point with `phobos emit --kernel {} --autotune \"{}\"`",
                kernel.name,
                point.to_pins()
            ));
            if excluded > 0 {
                warning = warning.with_note(if excluded == 1 {
                    "1 other point violates a `@where`: outside the space, not counted".to_string()
                } else {
                    format!("{excluded} other points violate a `@where`: outside the space, not counted")
                });
            }
            out.push(warning);
        }
    }
    out
}

/// Evaluates the `@where` constraints of a kernel for a problem's runtime dims:
/// `Ok(None)` when all hold, `Ok(Some(reason))` naming the first violated constraint, and
/// `Err` when a dim the constraints need is missing.
pub fn eval_where(kernel: &ir::Kernel, dims: &[(String, i64)]) -> Result<Option<String>, String> {
    Ok(first_violated(kernel, dims)?
        .map(|(w, used)| format!("violates @where({}) with {used}", eval::display(w, kernel))))
}

/// [`eval_where`] as a diagnostic at the first violated constraint (for `phobos emit
/// --dims`, which shows code for one problem): `Ok(None)` when all hold, `Err` when a dim the
/// constraints need is not given.
pub fn where_diagnostic(
    kernel: &ir::Kernel,
    dims: &[(String, i64)],
) -> Result<Option<Diagnostic>, String> {
    Ok(first_violated(kernel, dims)?.map(|(w, used)| {
        Diagnostic::error(
            codes::WHERE_VIOLATED,
            format!("the problem violates @where({})", eval::display(w, kernel)),
            w.span,
        )
        .with_label(format!("false for {used}"))
        .with_help("choose other values or another problem; the tuner skips this point here")
    }))
}

/// The first `@where` false for `dims`, with the dims it reads (`N=9000 M=64`).
fn first_violated<'k>(
    kernel: &'k ir::Kernel,
    dims: &[(String, i64)],
) -> Result<Option<(&'k ir::Expr, String)>, String> {
    let env = Bindings::new(kernel, dims, &[]);
    for w in &kernel.wheres {
        if !eval::eval_bool(w, &env).map_err(|e| e.to_string())? {
            let mut used: Vec<String> = Vec::new();
            crate::lower::walk_expr(w, &mut |e| {
                if let ir::ExprKind::Dim(id) = e.kind {
                    let d = &kernel.dims[id].name;
                    let v = dims.iter().find(|(n, _)| n == d).map_or(0, |&(_, v)| v);
                    let s = format!("{d}={v}");
                    if !used.contains(&s) {
                        used.push(s);
                    }
                }
            });
            return Ok(Some((w, used.join(" "))));
        }
    }
    Ok(None)
}
