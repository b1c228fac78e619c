//! A readable dump of the typed IR (`phobos emit --ir`): every cast and broadcast explicit,
//! every local with its type, uniform values marked.

use crate::ir::*;
use std::fmt::Write;

/// The kernel as text: header (point, parameters, dims, launch, grid), locals, body.
pub fn print_kernel(k: &Kernel) -> String {
    let mut out = String::new();
    let point = if k.point.0.is_empty() {
        "its only point".to_string()
    } else {
        k.point.to_pins()
    };
    let _ = writeln!(out, "kernel {} at {point}", k.name);
    for (n, t) in &k.type_args {
        let _ = writeln!(out, "  type {n} = {t}");
    }
    for p in &k.params {
        let ty = match &p.kind {
            ParamKind::Tensor { dtype, dims, order } => {
                let dims: Vec<String> = dims
                    .iter()
                    .map(|d| match d {
                        Dim::Static(n) => n.to_string(),
                        Dim::Dyn(id) => k.dims.get(*id).map_or("?".into(), |d| d.name.clone()),
                    })
                    .collect();
                let order = match order {
                    MemOrder::RowMajor => "",
                    MemOrder::ColMajor => " col-major",
                };
                format!("tensor<{dtype}>[{}]{order}", dims.join(", "))
            }
            ParamKind::Scalar { dtype } => dtype.to_string(),
        };
        let _ = writeln!(out, "  param {}: {ty}", p.name);
    }
    for d in &k.dims {
        let src = k.params.get(d.source.0).map_or("?", |p| p.name.as_str());
        let _ = writeln!(
            out,
            "  dim {} = extent of {src} axis {}",
            d.name, d.source.1
        );
    }
    for (d, a) in &k.aligned {
        let name = k.dims.get(*d).map_or("?", |d| d.name.as_str());
        let _ = writeln!(out, "  aligned {name} % {a} == 0");
    }
    let mut launch = format!("  launch {} threads", k.launch.threads);
    if let Some(m) = k.launch.min_blocks_per_sm {
        let _ = write!(launch, ", at least {m} blocks per SM");
    }
    if let Some(r) = k.launch.max_regs {
        let _ = write!(launch, ", at most {r} registers");
    }
    let _ = writeln!(out, "{launch}");
    let grid: Vec<String> = k.grid.iter().map(|e| expr(k, e)).collect();
    let _ = writeln!(out, "  grid [{}]", grid.join(", "));
    for w in &k.wheres {
        let _ = writeln!(out, "  where {}", expr(k, w));
    }
    for (i, l) in k.locals.iter().enumerate() {
        let kind = if l.mutable { "var" } else { "let" };
        let uniform = if l.uniform { " uniform" } else { "" };
        let _ = writeln!(out, "  {kind} %{i} {}: {}{uniform}", l.name, ty(&l.ty));
    }
    out.push_str("body\n");
    block(&mut out, k, &k.body, 1);
    out
}

fn ty(t: &Ty) -> String {
    match t {
        Ty::Scalar(d) => d.to_string(),
        Ty::Tile(d, s) => {
            let s: Vec<String> = s.iter().map(|x| x.to_string()).collect();
            format!("tile<{d}>[{}]", s.join(", "))
        }
    }
}

fn block(out: &mut String, k: &Kernel, stmts: &[Stmt], depth: usize) {
    let pad = "  ".repeat(depth);
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { local, value } => {
                let _ = writeln!(out, "{pad}{} = {}", local_name(k, *local), expr(k, value));
            }
            StmtKind::Store {
                tensor,
                index,
                value,
                cache,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}store {} = {}",
                    access(k, *tensor, index, *cache),
                    expr(k, value)
                );
            }
            StmtKind::Atomic {
                op,
                tensor,
                index,
                value,
                old,
            } => {
                let bind = old.map_or(String::new(), |l| format!("{} = ", local_name(k, l)));
                let _ = writeln!(
                    out,
                    "{pad}{bind}{}({}, {})",
                    op.name(),
                    access(k, *tensor, index, Eviction::Normal),
                    expr(k, value)
                );
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                unroll,
                body,
            } => {
                let u = if *unroll > 1 {
                    format!(" unroll {unroll}")
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "{pad}for {} in range({}, {}, {}){u} {{",
                    local_name(k, *var),
                    expr(k, start),
                    expr(k, end),
                    expr(k, step)
                );
                block(out, k, body, depth + 1);
                let _ = writeln!(out, "{pad}}}");
            }
            StmtKind::While { cond, body } => {
                let _ = writeln!(out, "{pad}while {} {{", expr(k, cond));
                block(out, k, body, depth + 1);
                let _ = writeln!(out, "{pad}}}");
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let _ = writeln!(out, "{pad}if {} {{", expr(k, cond));
                block(out, k, then_body, depth + 1);
                if !else_body.is_empty() {
                    let _ = writeln!(out, "{pad}}} else {{");
                    block(out, k, else_body, depth + 1);
                }
                let _ = writeln!(out, "{pad}}}");
            }
            StmtKind::Break => {
                let _ = writeln!(out, "{pad}break");
            }
            StmtKind::Continue => {
                let _ = writeln!(out, "{pad}continue");
            }
        }
    }
}

fn local_name(k: &Kernel, id: LocalId) -> String {
    k.locals
        .get(id)
        .map_or(format!("%{id}"), |l| format!("{}%{id}", l.name))
}

fn access(k: &Kernel, tensor: ParamId, index: &[Index], cache: Eviction) -> String {
    let name = k.params.get(tensor).map_or("?", |p| p.name.as_str());
    let mut ix: Vec<String> = index
        .iter()
        .map(|i| match i {
            Index::At(e) => expr(k, e),
            Index::Span { start, len } => format!("{} :+ {len}", expr(k, start)),
        })
        .collect();
    if cache != Eviction::Normal {
        ix.push(format!("cache = {}", cache.name()));
    }
    format!("{name}[{}]", ix.join(", "))
}

/// An expression, fully parenthesized, with casts, broadcasts and literal types explicit.
fn expr(k: &Kernel, e: &Expr) -> String {
    match &e.kind {
        ExprKind::Lit(l) => {
            let v = match l {
                Lit::Int(i) => i.to_string(),
                Lit::Float(f) => format!("{f:?}"),
                Lit::Bool(b) => b.to_string(),
            };
            format!("{v}:{}", e.ty.dtype())
        }
        ExprKind::Dim(id) => k.dims.get(*id).map_or("?".into(), |d| d.name.clone()),
        ExprKind::Param(id) => k.params.get(*id).map_or("?".into(), |p| p.name.clone()),
        ExprKind::Local(id) => local_name(k, *id),
        ExprKind::Ctx(c) => match c {
            Ctx::Block(a) => format!("ctx.block.{}", axis(*a)),
            Ctx::Grid(a) => format!("ctx.grid.{}", axis(*a)),
            Ctx::Thread => "ctx.thread".into(),
            Ctx::Threads => "ctx.threads".into(),
            Ctx::Warp => "ctx.warp".into(),
            Ctx::Lane => "ctx.lane".into(),
        },
        ExprKind::Unary(op, a) => match op {
            UnOp::Neg => format!("(-{})", expr(k, a)),
            UnOp::Not => format!("(!{})", expr(k, a)),
        },
        ExprKind::Binary(op, a, b) => match op {
            BinOp::Min | BinOp::Max => {
                let f = if *op == BinOp::Min { "min" } else { "max" };
                format!("{f}({}, {})", expr(k, a), expr(k, b))
            }
            _ => format!("({} {} {})", expr(k, a), op.symbol(), expr(k, b)),
        },
        ExprKind::Math(f, a) => format!("{}({})", format!("{f:?}").to_lowercase(), expr(k, a)),
        ExprKind::MathN(f, args) => format!(
            "{}({})",
            format!("{f:?}").to_lowercase(),
            args.iter()
                .map(|a| expr(k, a))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ExprKind::Select(c, a, b) => {
            format!("where({}, {}, {})", expr(k, c), expr(k, a), expr(k, b))
        }
        ExprKind::Cast(a) => format!("{}({})", e.ty.dtype(), expr(k, a)),
        ExprKind::Cdiv(a, b) => format!("cdiv({}, {})", expr(k, a), expr(k, b)),
        ExprKind::Broadcast(a) => format!("broadcast<{}>({})", ty(&e.ty), expr(k, a)),
        ExprKind::Load {
            tensor,
            index,
            cache,
        } => access(k, *tensor, index, *cache),
        ExprKind::TileGet { tile, index } => {
            let ix: Vec<String> = index.iter().map(|i| expr(k, i)).collect();
            format!("{}[{}]", expr(k, tile), ix.join(", "))
        }
        ExprKind::Reduce { op, axis, arg } => {
            let f = format!("{op:?}").to_lowercase();
            match axis {
                Some(a) => format!("{f}({}, axis={a})", expr(k, arg)),
                None => format!("{f}({})", expr(k, arg)),
            }
        }
        ExprKind::Dot {
            a,
            b,
            trans_b,
            tf32,
        } => {
            let f = if *trans_b { "dot_t" } else { "dot" };
            let t = if *tf32 { ".tf32" } else { "" };
            format!("{f}{t}({}, {})", expr(k, a), expr(k, b))
        }
        ExprKind::Transpose(a) => format!("transpose({})", expr(k, a)),
        ExprKind::Reshape(a) => format!(
            "reshape({}, [{}])",
            expr(k, a),
            e.ty.shape()
                .unwrap_or(&[])
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ExprKind::Arange(n) => format!("arange({n})"),
    }
}

fn axis(a: u8) -> char {
    ['x', 'y', 'z'].get(a as usize).copied().unwrap_or('?')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;
    use phobos_syntax::Span;

    fn e(kind: ExprKind, ty: Ty) -> Expr {
        Expr {
            kind,
            ty,
            uniform: true,
            span: Span::default(),
        }
    }

    #[test]
    fn prints_types_and_explicit_conversions() {
        let f32s = Ty::Scalar(DType::F32);
        let tile = Ty::Tile(DType::F32, vec![4, 8]);
        let zero = e(ExprKind::Lit(Lit::Float(0.0)), f32s);
        let k = Kernel {
            name: "k".into(),
            point: Point(vec![("B".into(), 4)]),
            type_args: vec![],
            params: vec![],
            dims: vec![],
            aligned: vec![],
            launch: Launch {
                threads: 128,
                min_blocks_per_sm: None,
                max_regs: None,
            },
            grid: [1, 1, 1].map(|v| e(ExprKind::Lit(Lit::Int(v)), Ty::Scalar(DType::I32))),
            wheres: vec![],
            flops: None,
            bytes: None,
            locals: vec![Local {
                name: "acc".into(),
                ty: tile.clone(),
                uniform: true,
                mutable: true,
                span: Span::default(),
            }],
            body: vec![Stmt {
                kind: StmtKind::Assign {
                    local: 0,
                    value: e(ExprKind::Broadcast(Box::new(zero)), tile),
                },
                span: Span::default(),
            }],
            span: Span::default(),
        };
        let text = print_kernel(&k);
        assert!(text.contains("kernel k at B=4"), "{text}");
        assert!(
            text.contains("var %0 acc: tile<f32>[4, 8] uniform"),
            "{text}"
        );
        assert!(
            text.contains("acc%0 = broadcast<tile<f32>[4, 8]>(0.0:f32)"),
            "{text}"
        );
        assert!(text.contains("grid [1:i32, 1:i32, 1:i32]"), "{text}");
    }
}
