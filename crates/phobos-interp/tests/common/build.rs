//! A small builder for hand-written IR, for semantics the front end cannot (yet) produce.

#![allow(dead_code)]

use phobos_ir::*;
use phobos_syntax::Span;

pub fn span(lo: usize) -> Span {
    Span::new(lo, lo + 1)
}

pub fn e(kind: ExprKind, ty: Ty, uniform: bool) -> Expr {
    Expr {
        kind,
        ty,
        uniform,
        span: Span::default(),
    }
}

pub fn at(x: Expr, lo: usize) -> Expr {
    Expr {
        span: span(lo),
        ..x
    }
}

pub fn int(v: i64) -> Expr {
    e(ExprKind::Lit(Lit::Int(v)), Ty::Scalar(DType::I32), true)
}

pub fn lit(v: f64, t: DType) -> Expr {
    let l = if t.is_float() {
        Lit::Float(v)
    } else if t == DType::Bool {
        Lit::Bool(v != 0.0)
    } else {
        Lit::Int(v as i64)
    };
    e(ExprKind::Lit(l), Ty::Scalar(t), true)
}

pub fn ctx(c: Ctx) -> Expr {
    let uniform = matches!(c, Ctx::Block(_) | Ctx::Grid(_) | Ctx::Threads);
    e(ExprKind::Ctx(c), Ty::Scalar(DType::I32), uniform)
}

pub fn dim(id: DimId) -> Expr {
    e(ExprKind::Dim(id), Ty::Scalar(DType::I32), true)
}

pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    let uniform = a.uniform && b.uniform;
    let ty = if a.ty.is_tile() {
        a.ty.clone()
    } else {
        b.ty.clone()
    };
    let ty = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
        match ty {
            Ty::Tile(_, s) => Ty::Tile(DType::Bool, s),
            Ty::Scalar(_) => Ty::Scalar(DType::Bool),
        }
    } else {
        ty
    };
    e(ExprKind::Binary(op, Box::new(a), Box::new(b)), ty, uniform)
}

pub fn add(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Add, a, b)
}

pub fn mul(a: Expr, b: Expr) -> Expr {
    bin(BinOp::Mul, a, b)
}

pub fn cast(a: Expr, t: DType) -> Expr {
    let ty = match &a.ty {
        Ty::Tile(_, s) => Ty::Tile(t, s.clone()),
        Ty::Scalar(_) => Ty::Scalar(t),
    };
    let u = a.uniform;
    e(ExprKind::Cast(Box::new(a)), ty, u)
}

pub fn broadcast(a: Expr, t: DType, shape: &[i64]) -> Expr {
    e(
        ExprKind::Broadcast(Box::new(a)),
        Ty::Tile(t, shape.to_vec()),
        true,
    )
}

pub fn math(f: MathFn, a: Expr) -> Expr {
    let (ty, u) = (a.ty.clone(), a.uniform);
    e(ExprKind::Math(f, Box::new(a)), ty, u)
}

pub fn select(c: Expr, a: Expr, b: Expr) -> Expr {
    let (ty, u) = (a.ty.clone(), c.uniform && a.uniform && b.uniform);
    e(
        ExprKind::Select(Box::new(c), Box::new(a), Box::new(b)),
        ty,
        u,
    )
}

pub fn reduce(op: ReduceOp, axis: Option<usize>, a: Expr) -> Expr {
    let (t, mut shape) = match &a.ty {
        Ty::Tile(t, s) => (*t, s.clone()),
        Ty::Scalar(t) => (*t, vec![]),
    };
    let ty = match axis {
        None => Ty::Scalar(t),
        Some(ax) => {
            shape[ax] = 1;
            Ty::Tile(t, shape)
        }
    };
    e(
        ExprKind::Reduce {
            op,
            axis,
            arg: Box::new(a),
        },
        ty,
        true,
    )
}

pub fn dot(a: Expr, b: Expr, trans_b: bool, tf32: bool) -> Expr {
    let t = a.ty.dtype();
    let m = a.ty.shape().unwrap()[0];
    let n = if trans_b {
        b.ty.shape().unwrap()[0]
    } else {
        b.ty.shape().unwrap()[1]
    };
    e(
        ExprKind::Dot {
            a: Box::new(a),
            b: Box::new(b),
            trans_b,
            tf32,
        },
        Ty::Tile(t.dot_acc().unwrap(), vec![m, n]),
        true,
    )
}

pub fn transpose(a: Expr) -> Expr {
    let t = a.ty.dtype();
    let s = a.ty.shape().unwrap();
    let ty = Ty::Tile(t, vec![s[1], s[0]]);
    e(ExprKind::Transpose(Box::new(a)), ty, true)
}

pub fn ati(x: Expr) -> Index {
    Index::At(x)
}

pub fn span_of(start: Expr, len: i64) -> Index {
    Index::Span { start, len }
}

pub fn stmt(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::default(),
    }
}

pub fn stmt_at(kind: StmtKind, lo: usize) -> Stmt {
    Stmt {
        kind,
        span: span(lo),
    }
}

/// Builds a kernel: parameters, dims and locals are declared in order and return their ids.
pub struct KernelBuilder {
    pub k: Kernel,
}

impl KernelBuilder {
    pub fn new(name: &str, threads: u32) -> KernelBuilder {
        KernelBuilder {
            k: Kernel {
                name: name.to_string(),
                point: Point::default(),
                type_args: vec![],
                params: vec![],
                dims: vec![],
                aligned: vec![],
                launch: Launch {
                    threads,
                    min_blocks_per_sm: None,
                    max_regs: None,
                },
                grid: [int(1), int(1), int(1)],
                wheres: vec![],
                flops: None,
                bytes: None,
                locals: vec![],
                body: vec![],
                span: Span::default(),
            },
        }
    }

    /// A tensor parameter; a dim named in `dims` by a string is a runtime dim (created on first
    /// use, read from this tensor's axis), a number is static.
    pub fn tensor(&mut self, name: &str, dtype: DType, dims: &[&str]) -> ParamId {
        let id = self.k.params.len();
        let dims = dims
            .iter()
            .enumerate()
            .map(|(axis, d)| match d.parse::<i64>() {
                Ok(n) => Dim::Static(n),
                Err(_) => Dim::Dyn(self.dim_id(d, (id, axis))),
            })
            .collect();
        self.k.params.push(Param {
            name: name.to_string(),
            kind: ParamKind::Tensor {
                dtype,
                dims,
                order: MemOrder::RowMajor,
            },
            span: Span::default(),
        });
        id
    }

    fn dim_id(&mut self, name: &str, source: (ParamId, usize)) -> DimId {
        if let Some(i) = self.k.dims.iter().position(|d| d.name == name) {
            return i;
        }
        self.k.dims.push(DimVar {
            name: name.to_string(),
            source,
        });
        self.k.dims.len() - 1
    }

    pub fn dim(&self, name: &str) -> Expr {
        dim(self.k.dims.iter().position(|d| d.name == name).unwrap())
    }

    pub fn scalar(&mut self, name: &str, dtype: DType) -> Expr {
        self.k.params.push(Param {
            name: name.to_string(),
            kind: ParamKind::Scalar { dtype },
            span: Span::default(),
        });
        e(
            ExprKind::Param(self.k.params.len() - 1),
            Ty::Scalar(dtype),
            true,
        )
    }

    /// Declares a local and returns (id, an expression reading it).
    pub fn local(&mut self, name: &str, ty: Ty, uniform: bool) -> (LocalId, Expr) {
        self.k.locals.push(Local {
            name: name.to_string(),
            ty: ty.clone(),
            uniform,
            mutable: true,
            span: Span::default(),
        });
        let id = self.k.locals.len() - 1;
        (id, e(ExprKind::Local(id), ty, uniform))
    }

    pub fn load(&self, p: ParamId, index: Vec<Index>) -> Expr {
        let ParamKind::Tensor { dtype, .. } = self.k.params[p].kind else {
            panic!("not a tensor")
        };
        let mut shape = vec![];
        let mut uniform = true;
        for i in &index {
            match i {
                Index::At(x) => uniform &= x.uniform,
                Index::Span { len, .. } => shape.push(*len),
            }
        }
        let ty = if shape.is_empty() {
            Ty::Scalar(dtype)
        } else {
            uniform = true;
            Ty::Tile(dtype, shape)
        };
        let cache = phobos_ir::Eviction::Normal;
        e(
            ExprKind::Load {
                tensor: p,
                index,
                cache,
            },
            ty,
            uniform,
        )
    }

    pub fn finish(mut self, grid: [Expr; 3], body: Vec<Stmt>) -> Kernel {
        self.k.grid = grid;
        self.k.body = body;
        self.k
    }
}

pub fn assign(local: LocalId, value: Expr) -> Stmt {
    stmt(StmtKind::Assign { local, value })
}

pub fn store(tensor: ParamId, index: Vec<Index>, value: Expr) -> Stmt {
    stmt(StmtKind::Store {
        tensor,
        index,
        value,
        cache: phobos_ir::Eviction::Normal,
    })
}

pub fn for_range(
    var: LocalId,
    start: Expr,
    end: Expr,
    step: Expr,
    unroll: u32,
    body: Vec<Stmt>,
) -> Stmt {
    stmt(StmtKind::For {
        var,
        start,
        end,
        step,
        unroll,
        body,
    })
}

pub fn if_(cond: Expr, then_body: Vec<Stmt>, else_body: Vec<Stmt>) -> Stmt {
    stmt(StmtKind::If {
        cond,
        then_body,
        else_body,
    })
}

pub fn while_(cond: Expr, body: Vec<Stmt>) -> Stmt {
    stmt(StmtKind::While { cond, body })
}

pub fn cdiv(a: Expr, b: Expr) -> Expr {
    e(
        ExprKind::Cdiv(Box::new(a), Box::new(b)),
        Ty::Scalar(DType::I32),
        true,
    )
}
