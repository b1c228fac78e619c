//! Scalar expressions (per-thread code) and tensor addressing.

use super::ops::{self, Code, ATOM, UNARY};
use super::{Emitter, Result};
use crate::ctype;
use phobos_ir::{
    Ctx, DType, Dim, Eviction, Expr, ExprKind, Index, Lit, MemOrder, ParamId, ParamKind, ReduceOp,
};
use phobos_syntax::Span;

impl<'k> Emitter<'k> {
    /// A scalar expression. Tile reads inside it (`t[i, j]`, full reductions) become statements
    /// emitted before the one using the value.
    pub(crate) fn scalar(&mut self, e: &Expr) -> Result<Code> {
        let t = e.ty.dtype();
        Ok(match &e.kind {
            ExprKind::Lit(l) => lit(*l, t),
            ExprKind::Dim(d) => Code::atom(self.names.dims[*d].clone()),
            ExprKind::Param(p) => Code::atom(self.names.params[*p].clone()),
            ExprKind::Local(l) => Code::atom(self.names.locals[*l].clone()),
            ExprKind::Ctx(Ctx::Block(a)) if self.remapped_block(*a).is_some() => {
                Code::atom(self.remapped_block(*a).expect("checked"))
            }
            ExprKind::Ctx(Ctx::Grid(a)) if self.remapped_grid(*a).is_some() => {
                Code::atom(self.remapped_grid(*a).expect("checked"))
            }
            ExprKind::Ctx(c) => ctx(*c, self.k.launch.threads),
            ExprKind::Unary(op, a) => {
                let a = self.scalar(a)?;
                ops::unary(*op, t, &a)
            }
            ExprKind::Binary(op, a, b) => {
                let ot = a.ty.dtype();
                let blit = int_lit(b);
                let (a, b) = (self.scalar(a)?, self.scalar(b)?);
                ops::binary(*op, ot, &a, &b, blit)
            }
            ExprKind::Math(f, a) => {
                let c = self.scalar(a)?;
                match ops::math(*f, t, &c) {
                    Some(c) => c,
                    None => return self.unsupported_expr(&format!("{f:?} on {t}"), e),
                }
            }
            ExprKind::Select(c, a, b) => {
                let (c, a, b) = (self.scalar(c)?, self.scalar(a)?, self.scalar(b)?);
                ops::select(&c, &a, &b)
            }
            ExprKind::MathN(f, args) => {
                let cs = args
                    .iter()
                    .map(|a| self.scalar(a))
                    .collect::<Result<Vec<_>>>()?;
                ops::math_n(*f, t, &cs)
            }
            ExprKind::Cast(a) => {
                let from = a.ty.dtype();
                let c = self.scalar(a)?;
                ops::cast(from, t, &c)
            }
            ExprKind::Cdiv(a, b) => {
                let (a, b) = (self.scalar(a)?, self.scalar(b)?);
                ops::cdiv(&a, &b)
            }
            ExprKind::Broadcast(a) => self.scalar(a)?,
            ExprKind::Load {
                tensor,
                index,
                cache,
            } => Code::atom(self.element_access(*tensor, index, None, self.hint(*cache))?),
            ExprKind::TileGet { tile, index } => self.tile_get(tile, index)?,
            ExprKind::Reduce {
                op,
                axis: None,
                arg,
            } => self.reduce_all(*op, arg, e.span)?,
            _ => return self.unsupported_expr("a tile expression in scalar position", e),
        })
    }

    fn tile_get(&mut self, tile: &Expr, index: &[Expr]) -> Result<Code> {
        let (name, _) = self.as_tile(tile)?;
        let idx: Vec<Code> = index
            .iter()
            .map(|i| self.scalar(i))
            .collect::<Result<_>>()?;
        let (r, c) = match idx.as_slice() {
            [c] => (Code::atom("0"), c.clone()),
            [r, c] => (r.clone(), c.clone()),
            _ => return self.unsupported_expr("a tile index of rank > 2", tile),
        };
        let t = tile.ty.dtype();
        let bytes = self.tile_smem_bytes(tile);
        let s = self.scratch(bytes);
        let v = self.fresh("get");
        self.line(format!(
            "const {} {v} = ph::get({name}, {}, {}, {s});",
            ctype::register(t),
            r.full(),
            c.full()
        ));
        self.headers.insert(crate::REDUCE_HEADER);
        Ok(Code::atom(v))
    }

    fn reduce_all(&mut self, op: ReduceOp, arg: &Expr, span: Span) -> Result<Code> {
        if op == ReduceOp::Sum {
            if let Some(sum) = self.fused_sums.get(&(span.lo, span.hi)) {
                return Ok(Code::atom(sum.clone()));
            }
        }
        if let Some(max) = self.max_and_sum_exp(op, arg, span) {
            return Ok(max);
        }
        if let Some((op, x)) = self.packed_reduce(op, arg) {
            let bytes = (self.k.launch.threads / 32 * 4).div_ceil(16) * 16;
            let s = self.scratch(bytes);
            let v = self.fresh("all");
            let value = self.cluster_step(&op, format!("ph::reduce_all_packed<{op}>({x}, {s})"));
            self.line(format!("const float {v} = {value};"));
            self.headers.insert(crate::REDUCE_HEADER);
            self.headers.insert(crate::ROWPACK_HEADER);
            return Ok(Code::atom(v));
        }
        let t = arg.ty.dtype();
        let threads = self.k.launch.threads;
        let per = if threads.is_multiple_of(32) {
            threads / 32
        } else {
            threads
        };
        let bytes = (per * ctype::register_bytes(t)).div_ceil(16) * 16;
        // ROW_SMEM=1: the scratch's barrier before the tile of a staged row's element-wise
        // value is computed, not between it and its reduction (where the whole tile would be
        // live across the barrier: 56 registers at BLOCK=57344, THREADS=1024).
        let staged = (self.staged_rows.keys()).any(|&l| crate::plan::elementwise_in(arg, l));
        let early = (threads != 32 && staged).then(|| self.scratch(bytes));
        let (name, _) = self.as_tile(arg)?;
        let v = self.fresh("all");
        // A block of one warp reduces by shuffles alone: no scratch, so no barrier either.
        let mut value = if threads == 32 {
            format!("ph::reduce_warp<{}>({name})", reduce_op(op))
        } else {
            let s = match early {
                Some(s) => s,
                None => self.scratch(bytes),
            };
            // PACK=4: the partials combined by lanes (`ph::reduce_all_lanes`, fewer registers).
            let f = if self.filled_rows() && threads.is_multiple_of(32) {
                self.headers.insert(crate::ROWPACK_HEADER);
                "reduce_all_lanes"
            } else {
                "reduce_all"
            };
            format!("ph::{f}<{}>({name}, {s})", reduce_op(op))
        };
        value = self.cluster_step(reduce_op(op), value);
        if op == ReduceOp::Sum {
            if let Some(r) = ctype::rounder(t) {
                value = format!("{r}({value})");
            }
        }
        self.line(format!("const {} {v} = {value};", ctype::register(t)));
        self.headers.insert(crate::REDUCE_HEADER);
        Ok(Code::atom(v))
    }

    /// A staged bf16 row's packed max whose sum of exponentials follows (`plan::SumExpPair`):
    /// both in one pass (`ph::row_max_sumexp2`), the sum kept for its statement; None where the
    /// max is not one (no pair, the row in registers, ROW_SPLIT's cluster step, or ONE_PASS=0).
    fn max_and_sum_exp(&mut self, op: ReduceOp, arg: &Expr, span: Span) -> Option<Code> {
        if phobos_ir::knobs::Knob::OnePass.get(&self.k.point) == Some(0) {
            return None;
        }
        let pair = *(self.plan.sum_exp.iter()).find(|p| p.max_span == span)?;
        let (_, x) = self.packed_reduce(op, arg)?;
        if !self.staged_rows.contains_key(&pair.x) || self.split_blocks().is_some() {
            return None;
        }
        let bytes = (self.k.launch.threads / 32 * 4).div_ceil(16) * 16;
        let s = self.scratch(bytes);
        let (max, sum) = (self.fresh("all"), self.fresh("sum"));
        self.line(format!("float {sum};"));
        self.line(format!(
            "const float {max} = ph::row_max_sumexp2({x}, {}, {s}, {sum});",
            ctype::literal(Lit::Float(pair.a), DType::F32).0
        ));
        self.headers.insert(crate::REDUCE_HEADER);
        self.headers.insert(crate::ROWPACK_HEADER);
        self.fused_sums
            .insert((pair.sum_span.lo, pair.sum_span.hi), sum);
        let record = crate::plan::SumExpRecord::new(&pair, self.k);
        self.notes.push(record.to_string());
        self.sum_exp.push(record);
        Some(Code::atom(max))
    }

    /// ROW_SPLIT: a whole-tile reduction's block partial `value` combined across the cluster
    /// (`ph::cluster_all`); else `value` itself.
    fn cluster_step(&mut self, op: &str, value: String) -> String {
        match self.split_blocks() {
            Some(n) => {
                self.headers.insert(crate::CLUSTER_HEADER);
                self.headers.insert("gemm/ptx.cuh");
                format!(
                    "ph::cluster_all<{op}, {n}>({value}, {}, {})",
                    super::CLUSTER_SLOTS,
                    super::CLUSTER_N
                )
            }
            None => value,
        }
    }

    /// The extents of a tensor as C++ expressions (literals or dim names).
    pub(crate) fn dim_strings(&self, tensor: ParamId) -> Vec<String> {
        let ParamKind::Tensor { dims, .. } = &self.k.params[tensor].kind else {
            return vec![];
        };
        dims.iter()
            .map(|d| match d {
                Dim::Static(n) => n.to_string(),
                Dim::Dyn(id) => self.names.dims[*id].clone(),
            })
            .collect()
    }

    pub(crate) fn tensor_info(&self, tensor: ParamId) -> (DType, MemOrder, Vec<Dim>) {
        match &self.k.params[tensor].kind {
            ParamKind::Tensor { dtype, dims, order } => (*dtype, *order, dims.clone()),
            ParamKind::Scalar { dtype } => (*dtype, MemOrder::RowMajor, vec![]),
        }
    }

    /// The element stride of `axis` (a C++ expression; `long long` when it multiplies dims).
    pub(crate) fn stride(&self, tensor: ParamId, axis: usize) -> String {
        let (_, order, dims) = self.tensor_info(tensor);
        let factors: Vec<&Dim> = match order {
            MemOrder::RowMajor => dims[axis + 1..].iter().collect(),
            MemOrder::ColMajor => dims[..axis].iter().collect(),
        };
        let mut constant = 1i64;
        let mut names = Vec::new();
        for d in factors {
            match d {
                Dim::Static(n) => constant *= n,
                Dim::Dyn(id) => names.push(self.names.dims[*id].clone()),
            }
        }
        match (names.len(), constant) {
            (0, c) => c.to_string(),
            (1, 1) => names[0].clone(),
            _ => {
                let mut parts = vec![format!("(long long){}", names[0])];
                parts.extend(names[1..].iter().cloned());
                if constant != 1 {
                    parts.push(constant.to_string());
                }
                parts.join(" * ")
            }
        }
    }

    /// An element load (`value: None`) or store of a tensor by logical indices.
    pub(crate) fn element_access(
        &mut self,
        tensor: ParamId,
        index: &[Index],
        value: Option<&Code>,
        cache: Eviction,
    ) -> Result<String> {
        let ev = match value {
            None => self.load_eviction_arg(tensor, cache),
            Some(_) => super::store::eviction_arg(cache),
        };
        let (_, order, _) = self.tensor_info(tensor);
        let dims = self.dim_strings(tensor);
        let mut idx = Vec::new();
        for i in index {
            match i {
                Index::At(e) => idx.push(self.scalar(e)?.s),
                Index::Span { start, .. } => {
                    return self.unsupported_expr("a span in an element access", start);
                }
            }
        }
        let rank = idx.len();
        let row = order == MemOrder::RowMajor;
        let name = &self.names.params[tensor];
        if rank > 3 {
            let i = format!("ph::Idx<{rank}>{{{{{}}}}}", idx.join(", "));
            let d = format!("ph::Idx<{rank}>{{{{{}}}}}", dims.join(", "));
            return Ok(match value {
                None => format!("ph::load_n<{row}, {rank}{ev}>({name}, {i}, {d})"),
                Some(v) => format!("ph::store_n<{row}, {rank}{ev}>({name}, {i}, {d}, {})", v.s),
            });
        }
        let mut args = vec![name.clone()];
        args.extend(idx);
        args.extend(dims);
        Ok(match value {
            None => format!("ph::load{rank}<{row}{ev}>({})", args.join(", ")),
            Some(v) => {
                args.push(v.s.clone());
                format!("ph::store{rank}<{row}{ev}>({})", args.join(", "))
            }
        })
    }

    /// The base pointer after leading element indices, and whether they are in bounds.
    pub(crate) fn batch_base(
        &mut self,
        tensor: ParamId,
        at: &[(usize, Expr)],
    ) -> Result<(String, String)> {
        let dims = self.dim_strings(tensor);
        let mut p = self.names.params[tensor].clone();
        let mut ok = Vec::new();
        for (axis, e) in at {
            let c = self.scalar(e)?;
            if matches!(e.kind, ExprKind::Lit(Lit::Int(0))) {
                continue;
            }
            let stride = self.stride(tensor, *axis);
            p = format!("{p} + (long long){} * {stride}", c.at(UNARY));
            ok.push(format!(
                "(unsigned){} < (unsigned){}",
                c.at(UNARY),
                dims[*axis]
            ));
        }
        let ok = if ok.is_empty() {
            "true".to_string()
        } else {
            ok.join(" && ")
        };
        Ok((p, ok))
    }

    /// `ph::Region<S>{..}` of a tile access: the spans become the tile's rows and columns.
    pub(crate) fn region(
        &mut self,
        tensor: ParamId,
        index: &[Index],
        write: bool,
    ) -> Result<String> {
        let (dtype, _, _) = self.tensor_info(tensor);
        let dims = self.dim_strings(tensor);
        let mut at = Vec::new();
        let mut spans = Vec::new();
        for (axis, i) in index.iter().enumerate() {
            match i {
                Index::At(e) => at.push((axis, e.clone())),
                Index::Span { start, .. } => spans.push((axis, start)),
            }
        }
        let (p, ok) = self.batch_base(tensor, &at)?;
        let mut dim_parts = Vec::new();
        for (axis, start) in &spans {
            let s = self.scalar(start)?;
            dim_parts.push((s.s, dims[*axis].clone(), self.stride(tensor, *axis)));
        }
        let ((r0, rn, rs), (c0, cn, cs)) = match dim_parts.as_slice() {
            [c] => (("0".into(), "1".into(), "0".into()), c.clone()),
            [r, c] => (r.clone(), c.clone()),
            _ => {
                let span = self.k.params[tensor].span;
                return super::unsupported("a tile access with more than two spans", span);
            }
        };
        let c = if write { "" } else { "const " };
        let region = format!(
            "ph::Region<{c}{}>{{{p}, {r0}, {c0}, {rn}, {cn}, {rs}, {cs}, {ok}}}",
            ctype::storage(dtype)
        );
        Ok(match self.narrow_store.as_deref().filter(|_| write) {
            Some(cols) => format!("ph::gemm::sm90::narrow_cols({region}, {cols})"),
            None => region,
        })
    }
}

pub(crate) fn reduce_op(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "ph::Sum",
        ReduceOp::Max => "ph::Max",
        ReduceOp::Min => "ph::Min",
    }
}

fn lit(l: Lit, t: DType) -> Code {
    let (s, neg) = ctype::literal(l, t);
    Code::new(s, if neg { UNARY } else { ATOM })
}

/// The value of an integer literal operand.
pub(crate) fn int_lit(e: &Expr) -> Option<i64> {
    match e.kind {
        ExprKind::Lit(Lit::Int(v)) if e.ty.dtype().is_int() => Some(v),
        _ => None,
    }
}

fn ctx(c: Ctx, threads: u32) -> Code {
    const AXES: [&str; 3] = ["x", "y", "z"];
    match c {
        Ctx::Block(a) => Code::new(format!("(int)blockIdx.{}", AXES[a as usize % 3]), UNARY),
        Ctx::Grid(a) => Code::new(format!("(int)gridDim.{}", AXES[a as usize % 3]), UNARY),
        Ctx::Thread => Code::new("(int)threadIdx.x", UNARY),
        Ctx::Threads => Code::atom(threads.to_string()),
        Ctx::Warp => Code::new("(int)threadIdx.x / 32", 5),
        Ctx::Lane => Code::new("(int)threadIdx.x % 32", 5),
    }
}
