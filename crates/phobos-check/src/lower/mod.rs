//! Checking and lowering one kernel at one point of its shape environment:
//!
//! ```text
//! ast::Kernel + Variant -> names (names.rs) -> typed values (value.rs, expr.rs, calls/,
//! index.rs) -> statements and uniformity (stmt.rs) -> attributes and grid (attrs.rs, grid.rs)
//! -> ir::Kernel
//! ```
//!
//! Uniformity is a fixpoint: a `var` assigned a per-thread value (or under per-thread control)
//! is per-thread everywhere, and a loop with a per-thread `break` is divergent as a whole, so
//! the body is lowered again whenever a pass learns such a fact, until nothing changes. Only
//! the last pass's diagnostics count.

mod assign;
mod atomic;
mod attrs;
mod calls;
mod expr;
mod grid;
mod index;
mod linear;
mod names;
mod options;
mod stmt;
mod types;
mod value;

use crate::codes;
use crate::module::{KernelInfo, Module};
use crate::variant::Variant;
use phobos_ir as ir;
use phobos_ir::DType;
use phobos_syntax::{ast, Diagnostic, SourceFile, Span};
use std::collections::HashMap;

pub use stmt::MAX_UNROLL;
pub use types::MAX_TILE_ELEMS;
pub(crate) use value::V;

/// Facts learned by earlier passes.
#[derive(Clone, Debug, Default)]
struct Fix {
    /// Declaration spans of `var`s that hold per-thread values -> the assignment that made
    /// them so, and why.
    per_thread: HashMap<Span, (Span, &'static str)>,
    /// Loop statement span -> the condition of a per-thread `break` inside it.
    divergent_loops: HashMap<Span, Span>,
}

/// Why the current code runs under per-thread control flow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Div {
    /// The condition (or loop bounds) that differs between threads.
    pub cond: Span,
    pub kind: DivKind,
    /// How many loops enclosed the point where the divergence began.
    pub loops: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DivKind {
    If,
    While,
    LoopBounds,
    AfterJump,
    BrokenLoop,
}

/// What names an expression may read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The kernel body: everything.
    Body,
    /// An attribute: dims and constants (and scalar parameters when `params`); in `wide`
    /// mode integers are i64 and floats f64.
    Attr {
        what: &'static str,
        params: bool,
        wide: bool,
    },
}

/// A name bound in a block scope.
#[derive(Clone, Debug)]
pub(crate) enum Binding {
    Local(ir::LocalId),
    /// A `let` of a scalar constant: folded at every use.
    Const(V, Span),
    /// A declaration that failed; uses stay silent.
    Poison,
}

/// Per-local facts the IR does not keep.
#[derive(Clone, Debug)]
pub(crate) struct LocalMeta {
    /// `let b = ctx.block.x` or `let r = ctx.block.x * S`: the axis and the scale it aliases.
    pub block_alias: Option<(u8, i64)>,
}

/// The state of one lowering pass.
pub(crate) struct Cx<'a> {
    pub file: &'a SourceFile,
    pub info: &'a KernelInfo,
    pub ast: &'a ast::Kernel,
    pub point: &'a ir::Point,
    pub types: &'a [(String, DType)],
    pub params: &'a [ir::Param],
    pub dims: &'a [ir::DimVar],
    pub threads: u32,
    pub mode: Mode,
    pub locals: Vec<ir::Local>,
    pub meta: Vec<LocalMeta>,
    pub scopes: Vec<Vec<(String, Binding)>>,
    pub diags: Vec<Diagnostic>,
    pub div: Option<Div>,
    /// Divergence left by a per-thread `break`/`continue`, applied to the statements after it
    /// up to the end of the loop body.
    pub pending: Option<Div>,
    /// Spans of the enclosing loop statements, innermost last.
    pub loops: Vec<Span>,
    fix: Fix,
    changed: bool,
    pub grid: grid::Inference,
}

impl<'a> Cx<'a> {
    pub fn error(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    /// The source text of a span.
    pub fn text(&self, span: Span) -> &'a str {
        self.file.snippet(span)
    }

    /// Whether a `var` declared at `decl` is known to be per-thread.
    pub fn known_per_thread(&self, decl: Span) -> bool {
        self.fix.per_thread.contains_key(&decl)
    }

    /// The assignment that made the `var` declared at `decl` per-thread, and why.
    pub fn per_thread_cause(&self, decl: Span) -> Option<(Span, &'static str)> {
        self.fix.per_thread.get(&decl).copied()
    }

    /// Records that the `var` declared at `decl` holds per-thread values because of the
    /// assignment at `cause`.
    pub fn mark_per_thread(&mut self, decl: Span, cause: Span, why: &'static str) {
        if let std::collections::hash_map::Entry::Vacant(e) = self.fix.per_thread.entry(decl) {
            e.insert((cause, why));
            self.changed = true;
        }
    }

    /// The `break` condition that makes the loop at `span` divergent, if a pass found one.
    pub fn broken_loop(&self, span: Span) -> Option<Span> {
        self.fix.divergent_loops.get(&span).copied()
    }

    pub fn mark_broken_loop(&mut self, span: Span, cond: Span) {
        if let std::collections::hash_map::Entry::Vacant(e) = self.fix.divergent_loops.entry(span) {
            e.insert(cond);
            self.changed = true;
        }
    }
}

/// The kernel tables every pass shares.
struct Tables {
    types: Vec<(String, DType)>,
    params: Vec<ir::Param>,
    dims: Vec<ir::DimVar>,
}

/// Checks and lowers a kernel at a variant; returns the IR (when there are no errors) and every
/// diagnostic, warnings included.
pub(crate) fn instantiate_full(
    module: &Module,
    info: &KernelInfo,
    variant: &Variant,
) -> (Option<ir::Kernel>, Vec<Diagnostic>) {
    let ast = module.kernel_ast(info);
    let mut diags = Vec::new();
    let Some(tables) = tables(info, ast, variant, &mut diags) else {
        return (None, diags);
    };
    let mut fix = Fix::default();
    let max_passes = 2 + count_decls(&ast.body);
    let mut pass = 0;
    loop {
        pass += 1;
        let mut cx = Cx::new(module, info, variant, &tables, fix.clone());
        let launch = cx.launch();
        let body = cx.block(&ast.body.stmts);
        if cx.changed && pass < max_passes {
            fix = cx.fix;
            continue;
        }
        let grid = cx.grid_exprs();
        let (wheres, aligned, flops, bytes) = cx.kernel_attrs();
        diags.append(&mut cx.diags);
        if phobos_syntax::has_errors(&diags) {
            return (None, diags);
        }
        let kernel = ir::Kernel {
            name: info.name.clone(),
            point: variant.point.clone(),
            type_args: tables.types.clone(),
            params: tables.params.clone(),
            dims: tables.dims.clone(),
            aligned,
            launch,
            grid,
            wheres,
            flops,
            bytes,
            locals: cx.locals,
            body,
            span: ast.span,
        };
        return (Some(kernel), diags);
    }
}

/// Whether a `@where` over the point's names alone is false at the variant (E0207): the point is
/// outside the space, whatever the problem. Only the attributes are lowered, not the body, so a
/// search can walk a space much larger than it compiles to drop such points first. A variant
/// whose tables do not build is not called outside: its instantiation reports why.
pub(crate) fn outside_space(module: &Module, info: &KernelInfo, variant: &Variant) -> bool {
    let ast = module.kernel_ast(info);
    let Some(tables) = tables(info, ast, variant, &mut Vec::new()) else {
        return false;
    };
    let mut cx = Cx::new(module, info, variant, &tables, Fix::default());
    cx.kernel_attrs();
    cx.diags.iter().any(|d| d.code == codes::WHERE_VIOLATED)
}

impl<'a> Cx<'a> {
    /// A context for lowering `info`'s body at `variant`, knowing the facts `fix`.
    fn new(
        module: &'a Module,
        info: &'a KernelInfo,
        variant: &'a Variant,
        tables: &'a Tables,
        fix: Fix,
    ) -> Cx<'a> {
        Cx {
            file: &module.file,
            info,
            ast: module.kernel_ast(info),
            point: &variant.point,
            types: &tables.types,
            params: &tables.params,
            dims: &tables.dims,
            threads: 256,
            mode: Mode::Body,
            locals: Vec::new(),
            meta: Vec::new(),
            scopes: vec![Vec::new()],
            diags: Vec::new(),
            div: None,
            pending: None,
            loops: Vec::new(),
            fix,
            changed: false,
            grid: grid::Inference::default(),
        }
    }
}

/// An upper bound on the facts a pass can learn: one per declaration or loop.
fn count_decls(b: &ast::Block) -> usize {
    b.stmts.iter().map(count_stmt).sum()
}

fn count_stmt(s: &ast::Stmt) -> usize {
    match &s.kind {
        ast::StmtKind::Let { .. } => 1,
        ast::StmtKind::For { body, .. } | ast::StmtKind::While { body, .. } => {
            1 + count_decls(body)
        }
        ast::StmtKind::If { then, els, .. } => {
            count_decls(then) + els.as_deref().map_or(0, count_stmt)
        }
        ast::StmtKind::Block(b) => count_decls(b),
        _ => 0,
    }
}

/// Binds type parameters, checks the point, and builds the parameter and dim tables.
fn tables(
    info: &KernelInfo,
    ast: &ast::Kernel,
    variant: &Variant,
    diags: &mut Vec<Diagnostic>,
) -> Option<Tables> {
    let at = ast.name.span;
    let host_error =
        |msg: String| Diagnostic::error(codes::BAD_POINT, msg, at).with_label("in this kernel");
    let mut ok = true;
    for n in &info.space.names {
        if variant.point.get(&n.name).is_none() {
            diags.push(host_error(format!(
                "the point gives no value for `{}`",
                n.name
            )));
            ok = false;
        }
    }
    for (n, _) in &variant.point.0 {
        if info.space.get(n).is_none() {
            diags.push(host_error(format!(
                "`{n}` is not declared in @autotune (declared: {})",
                info.space.declared()
            )));
            ok = false;
        }
    }
    let mut types = Vec::new();
    for (name, default) in &info.type_params {
        match variant
            .types
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, t)| t)
            .or(*default)
        {
            Some(t) => types.push((name.clone(), t)),
            None => {
                diags.push(
                    host_error(format!(
                        "the type parameter `{name}` has no default and is not bound"
                    ))
                    .with_help(format!("bind it, e.g. --types \"{name}=f16\"")),
                );
                ok = false;
            }
        }
    }
    for (n, _) in &variant.types {
        if !info.type_params.iter().any(|(t, _)| t == n) {
            diags.push(host_error(format!(
                "`{n}` is not a type parameter of `{}`",
                info.name
            )));
            ok = false;
        }
    }
    for (n, _) in &variant.orders {
        if !info.tensor_names().contains(&n.as_str()) {
            diags.push(host_error(format!(
                "`{n}` is not a tensor parameter of `{}`",
                info.name
            )));
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    let (params, dims) = types::params(info, ast, &variant.point, &types, &variant.orders, diags)?;
    Some(Tables {
        types,
        params,
        dims,
    })
}

/// Calls `f` on every node of an IR expression.
pub(crate) fn walk_expr(e: &ir::Expr, f: &mut dyn FnMut(&ir::Expr)) {
    value::walk(e, f)
}
