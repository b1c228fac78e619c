//! Tests of the lexer, parser, printer and diagnostics. One binary; helpers live here.

mod diagnostics;
mod exprs;
mod fuzz;
mod items;
mod lexer;
mod roundtrip;
mod seeds;
mod stmts;

use phobos_syntax::ast::*;
use phobos_syntax::{parse, parse_expr, Diagnostic, SourceFile};

/// Parses a file that must have no diagnostics.
pub fn parse_ok(src: &str) -> File {
    let (file, diags) = parse(&SourceFile::new("t.ph", src));
    assert!(
        diags.is_empty(),
        "unexpected diagnostics for {src:?}: {diags:#?}"
    );
    file
}

/// Parses a file that must have diagnostics, and returns them.
pub fn parse_err(src: &str) -> Vec<Diagnostic> {
    let (_, diags) = parse(&SourceFile::new("t.ph", src));
    assert!(!diags.is_empty(), "expected diagnostics for {src:?}");
    diags
}

/// The codes of the diagnostics of `src`, in source order.
pub fn codes(src: &str) -> Vec<&'static str> {
    let (_, diags) = parse(&SourceFile::new("t.ph", src));
    diags.iter().map(|d| d.code).collect()
}

/// Parses an expression that must have no diagnostics.
pub fn expr_ok(src: &str) -> Expr {
    let (e, diags) = parse_expr(&SourceFile::new("e.ph", src));
    assert!(
        diags.is_empty(),
        "unexpected diagnostics for {src:?}: {diags:#?}"
    );
    e.expect("an expression")
}

/// The statements of the body of `kernel k() { <body> }`.
pub fn body_ok(body: &str) -> Vec<Stmt> {
    let file = parse_ok(&format!("kernel k() {{\n{body}\n}}\n"));
    file.kernels.into_iter().next().unwrap().body.stmts
}

/// Compact s-expression of an expression, to assert tree shape: `(+ a (* b c))`.
pub fn sx(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Name(id) => id.name.clone(),
        ExprKind::Field { base, field } => format!("(. {} {})", sx(base), field.name),
        ExprKind::Unary { op, arg } => {
            let op = match op {
                UnOp::Neg => "neg",
                UnOp::Not => "not",
            };
            format!("({op} {})", sx(arg))
        }
        ExprKind::Binary { op, lhs, rhs } => format!("({} {} {})", op.as_str(), sx(lhs), sx(rhs)),
        ExprKind::Call { callee, args } => {
            let mut s = format!("(call {}", callee.name);
            for a in args {
                s.push(' ');
                if let Some(n) = &a.name {
                    s.push_str(&format!("{}=", n.name));
                }
                s.push_str(&sx(&a.value));
            }
            s + ")"
        }
        ExprKind::List(items) => {
            format!(
                "(list{})",
                items
                    .iter()
                    .map(|x| format!(" {}", sx(x)))
                    .collect::<String>()
            )
        }
        ExprKind::Index {
            base,
            indices,
            options,
        } => {
            let mut s = format!("(idx {}", sx(base));
            for i in indices {
                s.push(' ');
                s.push_str(&match i {
                    IndexExpr::At(e) => sx(e),
                    IndexExpr::Span { start, len, .. } => format!("[{} :+ {}]", sx(start), sx(len)),
                    IndexExpr::Range { start, end, .. } => format!(
                        "[{}:{}]",
                        start.as_ref().map_or(String::new(), sx),
                        end.as_ref().map_or(String::new(), sx)
                    ),
                });
            }
            for o in options {
                s.push_str(&format!(" ({} = {})", o.name.name, sx(&o.value)));
            }
            s + ")"
        }
    }
}

/// S-expression of a statement (blocks as `{s; s}`).
pub fn sx_stmt(s: &Stmt) -> String {
    match &s.kind {
        StmtKind::Let {
            name,
            mutable,
            ty,
            init,
        } => format!(
            "({} {}{}{})",
            if *mutable { "var" } else { "let" },
            name.name,
            ty.as_ref()
                .map_or(String::new(), |t| format!(": {}", sx_ty(t))),
            init.as_ref()
                .map_or(String::new(), |e| format!(" = {}", sx(e)))
        ),
        StmtKind::Assign { target, op, value } => format!("({op:?} {} {})", sx(target), sx(value)),
        StmtKind::Expr(e) => sx(e),
        StmtKind::For {
            unroll,
            var,
            iter,
            body,
        } => format!(
            "(for{} {} {} {})",
            unroll
                .as_ref()
                .map_or(String::new(), |u| format!("<{}>", sx(u))),
            var.name,
            sx(iter),
            sx_block(body)
        ),
        StmtKind::While { cond, body } => format!("(while {} {})", sx(cond), sx_block(body)),
        StmtKind::If { cond, then, els } => format!(
            "(if {} {}{})",
            sx(cond),
            sx_block(then),
            els.as_ref()
                .map_or(String::new(), |e| format!(" else {}", sx_stmt(e)))
        ),
        StmtKind::Block(b) => sx_block(b),
        StmtKind::Break => "break".into(),
        StmtKind::Continue => "continue".into(),
    }
}

pub fn sx_block(b: &Block) -> String {
    let inner: Vec<String> = b.stmts.iter().map(sx_stmt).collect();
    format!("{{{}}}", inner.join("; "))
}

pub fn sx_ty(t: &TypeExpr) -> String {
    match t {
        TypeExpr::Scalar(id) => id.name.clone(),
        TypeExpr::Tensor { elem, dims, .. } => {
            let dims: Vec<String> = dims
                .iter()
                .map(|d| match d {
                    DimExpr::Name(id) => id.name.clone(),
                    DimExpr::Lit(v, _) => v.to_string(),
                })
                .collect();
            format!("tensor<{}>[{}]", elem.name, dims.join(", "))
        }
        TypeExpr::Tile { elem, dims, .. } => {
            let dims: Vec<String> = dims.iter().map(sx).collect();
            format!("tile<{}>[{}]", elem.name, dims.join(", "))
        }
    }
}

/// The two seed kernels of the language reference, exactly as written there.
pub const SEED_GEMM: &str =
    "@autotune(TILE_M in [32, 128], TILE_N in [32, 128], TILE_K in [8, 16, 32])
@launch(256)
kernel gemm(A: tensor<f32>[M, K], B: tensor<f32>[K, N], C: tensor<f32>[M, N]) {
  let pm = ctx.block.x
  let pn = ctx.block.y
  var acc: tile<f32>[TILE_M, TILE_N] = 0.0
  for kt in range(0, K, TILE_K) {
    var a = A[pm * TILE_M :+ TILE_M, kt :+ TILE_K]
    var b = B[kt :+ TILE_K, pn * TILE_N :+ TILE_N]
    acc += dot(a, b)
  }
  C[pm * TILE_M :+ TILE_M, pn * TILE_N :+ TILE_N] = acc
}
";

pub const SEED_PARTIAL_SUMS: &str = "@autotune(U in [1, 8])
@launch(256)
kernel partial_sums(X: tensor<f32>[1, N], O: tensor<f32>[1, 256]) {
  var acc: f32 = 0.0
  for<unroll U> i in range(ctx.thread, N, 256) {
    acc += X[0, i]
  }
  O[0, ctx.thread] = acc
}
";

/// Larger valid kernels using most of the grammar (fuzz and round-trip material).
pub const LARGER: &[&str] = &[
    "@autotune(D in [64], BR in [32, 128], BC in [32, 128])
@launch(128)
@grid(cdiv(Nq, BR), H)
@where(Nk % BC == 0)
@flops(4 * Nq * Nk * D * H)
@bytes(2 * (Nq + 2 * Nk) * D * H)
kernel attention<T = f16>(Q: tensor<T>[H, Nq, D], K: tensor<T>[H, Nk, D], V: tensor<T>[H, Nk, D], O: tensor<T>[H, Nq, D], scale: f32) {
  let h = ctx.block.y
  let row = ctx.block.x * BR
  let q = Q[h, row :+ BR, :]
  var m: tile<f32>[BR, 1] = -inf
  var l: tile<f32>[BR, 1] = 0.0
  var acc: tile<f32>[BR, D] = 0.0
  for j in range(0, Nk, BC) {
    let k = K[h, j :+ BC, :]
    let s = dot_t(q, k) * scale
    let m_new = max(m, rowmax(s))
    let p = exp(s - m_new)
    l = l * exp(m - m_new) + sum(p, axis = 1)
    acc = acc * exp(m - m_new) + dot(T(p), V[h, j :+ BC, :])
    m = m_new
  }
  O[h, row :+ BR, :] = acc / l
}
",
    "@aligned(K = 8, N = TILE_N)
@allow_tf32
@experimental(level = 2, mode(fast))
kernel misc(X: tensor<f32>[N], Y: tensor<i32>[N], n: i32) {
  var i = ctx.thread; var total: i64
  while i < n && !(i >= 1000 || i == -1) {
    if X[i] != 0.0 {
      total += i64(Y[i] << 2 | Y[i] >> 1 ^ Y[i] & 255)
    } else if i % 2 == 0 {
      continue
    } else {
      break
    }
    i += ctx.threads
  }
  let w = where(X[0 : 16] > 0.5, X[0 : 16], 1e-3 * X[: 16])
  Y[4 :] = Y[:]
  let big = 0xFF_FF + 1_000_000 - 2.5E+4 / 1.
}
",
];
