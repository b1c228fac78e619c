//! Tile expressions: elementwise trees become one loop over a thread's registers; loads,
//! conversions, broadcasts, reductions, transposes, reshapes and dots become prelude calls.

use super::expr::{int_lit, reduce_op};
use super::ops::{self, Code};
use super::{Emitter, Result};
use crate::ctype;
use crate::layout::{blocked_capped, rc, rows_in_registers, Layout};
use crate::mainloop::dot_ld;
use phobos_ir::{Expr, ExprKind, Lit, ReduceOp};

/// The register index of the per-register loops.
const I: &str = "ph_i";

/// True when two tile expressions have the same layout shape (`[n]` and `[1, n]`).
fn same_rc(a: &Expr, b: &Expr) -> bool {
    rc(a.ty.shape().unwrap_or(&[1])) == rc(b.ty.shape().unwrap_or(&[1]))
}

pub(super) fn ceil16(x: i64) -> u32 {
    (x.max(0) as u32).div_ceil(16) * 16
}

impl<'k> Emitter<'k> {
    pub(crate) fn natural_layout(&self, e: &Expr) -> Layout {
        crate::plan::natural(self.k, &self.plan.target, &self.plan.layouts, e).unwrap_or_else(
            || {
                blocked_capped(
                    e.ty.shape().unwrap_or(&[1]),
                    self.k.launch.threads,
                    self.plan.vec_cap,
                )
            },
        )
    }

    /// Scratch bytes of a tile staged row-major (mirrors `ph::smem_tile_bytes`).
    /// The scratch of `ph::transpose` (and `ph::transpose_store_shifted`) of tile `arg`: its
    /// rows at the odd stride C + 1.
    pub(crate) fn transpose_scratch(&mut self, arg: &Expr) -> String {
        let (r, c) = rc(arg.ty.shape().unwrap_or(&[1]));
        let bytes = ceil16(r * (c + 1) * ctype::register_bytes(arg.ty.dtype()) as i64);
        self.headers.insert(crate::REDUCE_HEADER);
        self.scratch(bytes)
    }

    pub(crate) fn tile_smem_bytes(&self, e: &Expr) -> u32 {
        let (r, c) = rc(e.ty.shape().unwrap_or(&[1]));
        let ld = if c >= 32 && c % 32 == 0 { c + 1 } else { c };
        ceil16(r * ld * ctype::register_bytes(e.ty.dtype()) as i64)
    }

    /// A tile value as a variable: a local, or a temporary in its natural layout.
    pub(crate) fn as_tile(&mut self, e: &Expr) -> Result<(String, Layout)> {
        if let ExprKind::Local(l) = e.kind {
            // A shared-memory resident operand read where no dot takes it in place.
            if let Some(staged) = self.resident_operand(l, e) {
                let lay = self.natural_layout(e);
                let alias = self.alias(&lay);
                let ty = self.tile_type(e.ty.dtype(), &lay);
                let dt = match e.ty.dtype() {
                    phobos_ir::DType::BF16 => "ph::gemm::BF16",
                    _ => "ph::gemm::F16",
                };
                let name = self.fresh("t");
                self.line(format!(
                    "{ty} {name} = ph::mma_unstage<{alias}, {dt}>({staged});"
                ));
                return Ok((name, lay));
            }
            let lay = self.plan.layouts[&l].clone();
            if self.packed.contains_key(&l) {
                // A packed local where a whole tile is wanted: its f32 registers.
                let ty = self.tile_type(e.ty.dtype(), &lay);
                let name = self.fresh("t");
                let packed = &self.names.locals[l];
                self.line(format!("{ty} {name} = ph::unpack({packed});"));
                return Ok((name, lay));
            }
            return Ok((self.names.locals[l].clone(), lay));
        }
        let lay = self.natural_layout(e);
        let name = self.materialize(e, &lay)?;
        Ok((name, lay))
    }

    pub(crate) fn materialize(&mut self, e: &Expr, lay: &Layout) -> Result<String> {
        let ty = self.tile_type(e.ty.dtype(), lay);
        if let Some(rhs) = self.tile_rhs(lay, e)? {
            let name = self.fresh("t");
            self.line(format!("{ty} {name} = {rhs};"));
            return Ok(name);
        }
        let name = self.fresh("t");
        self.line(format!("{ty} {name};"));
        self.tile_into(&name, lay, e)?;
        Ok(name)
    }

    /// One C++ expression computing `e` in `lay` when `e` is a single prelude call (the
    /// statements it needs are emitted first); None for register loops and dots.
    pub(crate) fn tile_rhs(&mut self, lay: &Layout, e: &Expr) -> Result<Option<String>> {
        let alias = self.alias(lay);
        Ok(Some(match &e.kind {
            ExprKind::Local(x) => {
                let mut name = self.names.locals[*x].clone();
                if self.packed.contains_key(x) {
                    name = format!("ph::unpack({name})");
                }
                if &self.plan.layouts[x] == lay {
                    name
                } else {
                    let s = self.scratch(self.tile_smem_bytes(e));
                    format!("ph::convert<{alias}>({name}, {s})")
                }
            }
            ExprKind::Load {
                tensor,
                index,
                cache,
            } => {
                let region = self.region(*tensor, index, false)?;
                let ev = self.load_eviction_arg(*tensor, self.hint(*cache));
                if self.plan.shifted.contains(tensor) {
                    self.headers.insert(crate::SHIFTED_HEADER);
                    // SHIFT=1: the row's shift once; 2: and whole tiles without the per-group
                    // guards (the hint argument is then written out).
                    let shift = match phobos_ir::knobs::Knob::Shift.get(&self.k.point) {
                        Some(s @ (1 | 2)) => {
                            let ev = match ev.as_str() {
                                "" => ", ph::EVICT_NORMAL".to_string(),
                                _ => ev,
                            };
                            format!("{ev}, {s}")
                        }
                        _ => ev,
                    };
                    format!("ph::load_tile_shifted<{alias}{shift}>({region})")
                } else {
                    format!("ph::load_tile<{alias}{ev}>({region})")
                }
            }
            ExprKind::Broadcast(inner) if inner.ty.is_tile() && !same_rc(inner, e) => {
                let (sr, sc) = rc(inner.ty.shape().unwrap_or(&[1]));
                if let Some(call) = self.fused_row_reduce(inner, e, &alias)? {
                    call
                } else if let ExprKind::Load { tensor, index, .. } = &inner.kind {
                    let region = self.region(*tensor, index, false)?;
                    format!("ph::load_tile_bcast<{alias}, {sr}, {sc}>({region})")
                } else {
                    let (src, _) = self.as_tile(inner)?;
                    let s = self.scratch(self.tile_smem_bytes(inner));
                    format!("ph::broadcast<{alias}>({src}, {s})")
                }
            }
            ExprKind::Reduce {
                op,
                axis: Some(_),
                arg,
            } if !(*op == ReduceOp::Sum && ctype::is_narrow_float(e.ty.dtype())) => {
                self.reduce_call(e, *op, arg, lay)?
            }
            ExprKind::Transpose(arg) => {
                let (src, _) = self.as_tile(arg)?;
                let s = self.transpose_scratch(arg);
                format!("ph::transpose<{alias}>({src}, {s})")
            }
            ExprKind::Reshape(arg) if !same_rc(arg, e) => {
                let (src, _) = self.as_tile(arg)?;
                let (r, c) = rc(arg.ty.shape().unwrap_or(&[1]));
                let s = self.scratch(ceil16(r * c * ctype::register_bytes(arg.ty.dtype()) as i64));
                format!("ph::reshape<{alias}>({src}, {s})")
            }
            _ => return Ok(None),
        }))
    }

    fn reduce_call(&mut self, e: &Expr, op: ReduceOp, arg: &Expr, lay: &Layout) -> Result<String> {
        let alias = self.alias(lay);
        let ExprKind::Reduce {
            axis: Some(axis), ..
        } = e.kind
        else {
            return self.unsupported_expr("a full reduction as a tile", e);
        };
        let shape = arg.ty.shape().unwrap_or(&[1]);
        // A rank-1 tile is laid out as one row: its axis 0 is the layout's columns.
        let ax = if shape.len() == 1 { 1 } else { axis };
        let (r, c) = rc(shape);
        let outputs = if ax == 1 { r } else { c };
        let (src, src_layout) = self.as_tile(arg)?;
        let size = ctype::register_bytes(arg.ty.dtype()) as i64;
        // The rows of a tensor-core accumulator reduce into its rows layout by quad shuffles
        // (shared memory only across warp columns).
        if let (Layout::Mma(m), Layout::MmaRows(rows), 1) = (&src_layout, lay, ax) {
            if m.rows() == *rows {
                self.headers.insert(crate::MMA_HEADER);
                let op = reduce_op(op);
                if m.warps_n == 1 {
                    return Ok(format!("ph::mma_reduce_rows<{op}, {alias}>({src})"));
                }
                let s = self.scratch(ceil16(m.warps_n * m.bm * size));
                return Ok(format!("ph::mma_reduce_rows<{op}, {alias}>({src}, {s})"));
            }
        }
        // Rows of a Blocked tile reduce in registers (`ph::RowsInRegisters`): only the
        // partials go through shared memory.
        let bytes = match rows_in_registers(&src_layout).filter(|_| ax == 1) {
            Some(ri) => ceil16(ri.smem_bytes(size)),
            None => self.tile_smem_bytes(arg) + ceil16(outputs * size),
        };
        let s = self.scratch(bytes);
        self.headers.insert(crate::REDUCE_HEADER);
        Ok(format!(
            "ph::reduce<{}, {ax}, {alias}>({src}, {s})",
            reduce_op(op)
        ))
    }

    /// Assigns `e`, computed in `lay`, to the tile variable `dst`.
    pub(crate) fn tile_into(&mut self, dst: &str, lay: &Layout, e: &Expr) -> Result<()> {
        if let Some(rhs) = self.tile_rhs(lay, e)? {
            self.line(format!("{dst} = {rhs};"));
            return Ok(());
        }
        let alias = self.alias(lay);
        match &e.kind {
            ExprKind::Dot { .. } => {
                if self.ahead_dot(dst, lay, e)? {
                    return Ok(());
                }
                let zero = ctype::literal(Lit::Int(0), e.ty.dtype()).0;
                self.line("#pragma unroll");
                self.line(format!(
                    "for (int {I} = 0; {I} < {alias}::N; ++{I}) {dst}.v[{I}] = {zero};"
                ));
                self.dot_into(dst, lay, e)
            }
            ExprKind::Reduce { op, arg, .. } => {
                // A sum of a narrow float type: accumulated in float, rounded once.
                let call = self.reduce_call(e, *op, arg, lay)?;
                self.line(format!("{dst} = {call};"));
                let r = ctype::rounder(e.ty.dtype()).unwrap_or("");
                self.line("#pragma unroll");
                self.line(format!(
                    "for (int {I} = 0; {I} < {alias}::N; ++{I}) {dst}.v[{I}] = {r}({dst}.v[{I}]);"
                ));
                Ok(())
            }
            _ => {
                let v = self.elem(e, lay)?;
                self.line("#pragma unroll");
                self.line(format!(
                    "for (int {I} = 0; {I} < {alias}::N; ++{I}) {dst}.v[{I}] = {};",
                    v.full()
                ));
                Ok(())
            }
        }
    }

    /// `dst += a @ b` (or `a @ b^T`) for a dot expression: on tensor cores when `dst` has a
    /// tensor-core accumulator layout (the A operand from registers when it is an accumulator
    /// holding whole rows per warp), else FFMA over operands staged in the scratch area.
    pub(crate) fn dot_into(&mut self, dst: &str, lay: &Layout, dot: &Expr) -> Result<()> {
        let ExprKind::Dot { a, b, trans_b, .. } = &dot.kind else {
            return self.unsupported_expr("a dot", dot);
        };
        let (m, k) = rc(a.ty.shape().unwrap_or(&[1]));
        let (_, n) = rc(dot.ty.shape().unwrap_or(&[1]));
        if let (Layout::Mma(_), Some(ty)) = (lay, crate::plan::k_major_staged(dot)) {
            return self.staged_dot(dst, dot, ty);
        }
        if let Layout::Mma(acc) = lay {
            // The operands' element type, read before `packed_register_operand` strips the cast
            // of an f32 accumulator (`T(p)`): the stripped operand is f32 but packs as `T`.
            let dt = match a.ty.dtype() {
                phobos_ir::DType::BF16 => "ph::gemm::BF16",
                _ => "ph::gemm::F16",
            };
            let a = self.packed_register_operand(a, acc);
            let (an, a_lay) = self.mma_operand(a)?;
            let (bn, _) = self.mma_operand(b)?;
            let staged = |e: &Expr| {
                self.streamed.contains_key(&(e as *const Expr as usize))
                    || matches!(e.kind, ExprKind::Local(l) if self.resident_at.contains_key(&l))
            };
            let a_bytes = if staged(a) {
                0
            } else {
                crate::layout::staged_bytes(m, k)
            };
            let b_bytes = match (staged(b), *trans_b) {
                (true, _) => 0,
                (false, true) => crate::layout::staged_bytes(n, k),
                (false, false) => crate::layout::staged_bytes(k, n),
            };
            self.headers.insert(crate::MMA_HEADER);
            let wg = crate::plan::dot_instr(&self.plan.target, dot, acc, &self.plan.layouts)
                == crate::plan::MmaInstr::Wgmma;
            // Issued only: the caller commits and waits (an overlapped loop's dots).
            let wg = if self.dot_async {
                format!("{wg}, true")
            } else {
                wg.to_string()
            };
            let from_registers =
                matches!(&a_lay, Some(Layout::Mma(p)) if crate::plan::a_from_registers(p, acc));
            if from_registers {
                let s = self.mma_scratch(b_bytes);
                self.line(format!(
                    "ph::mma_dot_ra<{trans_b}, {dt}, {wg}>({dst}, {an}, {bn}, {s});"
                ));
            } else {
                let s = self.mma_scratch(a_bytes + b_bytes);
                self.line(format!(
                    "ph::mma_dot<{trans_b}, {dt}, {wg}>({dst}, {an}, {bn}, {s});"
                ));
            }
            return Ok(());
        }
        let (an, _) = self.as_tile(a)?;
        let (bn, _) = self.as_tile(b)?;
        let size = ctype::register_bytes(dot.ty.dtype()) as i64;
        let bytes = ceil16((k * dot_ld(m) + k * dot_ld(n)) * size);
        let s = self.scratch(bytes);
        self.headers.insert(crate::DOT_HEADER);
        self.line(format!("ph::dot_acc<{trans_b}>({dst}, {an}, {bn}, {s});"));
        Ok(())
    }

    /// The A operand a dot with accumulator `acc` reads: `x` for `T(x)` (f16 / bf16 of an f32
    /// local laid out as an accumulator whose registers are the A fragments), since the
    /// fragments' pack (`ph::mma_pack`, round to nearest) rounds `x` to `T` exactly as the cast
    /// would: no cast's round trip (a conversion to `T` and back to f32 an element). Any other
    /// operand (one an overlapped loop keeps, or streams) is read as it is.
    fn packed_register_operand<'e>(&self, a: &'e Expr, acc: &crate::layout::MmaAcc) -> &'e Expr {
        let key = a as *const Expr as usize;
        if self.streamed.contains_key(&key)
            || matches!(&self.operand_override, Some((p, _, _)) if *p == key)
        {
            return a;
        }
        let x = super::ahead::packed_operand(a);
        match &x.kind {
            ExprKind::Local(l) if !std::ptr::eq(x, a) => match self.plan.layouts.get(l) {
                Some(Layout::Mma(p)) if crate::plan::a_from_registers(p, acc) => x,
                _ => a,
            },
            _ => a,
        }
    }

    /// The scratch argument of a tensor-core dot staging `bytes` (none when every operand was
    /// streamed into shared memory by its loop: no scratch use, no barrier).
    fn mma_scratch(&mut self, bytes: u32) -> String {
        if bytes == 0 {
            return "ph::Scratch<0>{nullptr}".into();
        }
        self.scratch(bytes)
    }

    /// A tensor-core dot's operand: a tile load goes straight from global to shared memory
    /// (`ph::gtile`, no layout); anything else is a register tile.
    pub(super) fn mma_operand(&mut self, e: &Expr) -> Result<(String, Option<Layout>)> {
        if let Some(staged) = self.streamed.get(&(e as *const Expr as usize)) {
            return Ok((staged.clone(), None));
        }
        if let Some((p, name, lay)) = &self.operand_override {
            if *p == e as *const Expr as usize {
                return Ok((name.clone(), Some(lay.clone())));
            }
        }
        if let ExprKind::Local(l) = e.kind {
            if let Some(staged) = self.resident_operand(l, e) {
                return Ok((staged, None));
            }
        }
        if let ExprKind::Load { tensor, index, .. } = &e.kind {
            let (r, c) = rc(e.ty.shape().unwrap_or(&[1]));
            let region = self.region(*tensor, index, false)?;
            return Ok((format!("ph::gtile<{r}, {c}>({region})"), None));
        }
        let (name, lay) = self.as_tile(e)?;
        Ok((name, Some(lay)))
    }

    /// The value of tile expression `e` at register `ph_i` of layout `lay`.
    pub(crate) fn elem(&mut self, e: &Expr, lay: &Layout) -> Result<Code> {
        if !e.ty.is_tile() {
            return self.scalar(e);
        }
        if let Some(reg) = self.group_loads.get(&(e as *const Expr as usize)) {
            return Ok(Code::atom(reg.clone()));
        }
        let t = e.ty.dtype();
        Ok(match &e.kind {
            ExprKind::Local(x) if &self.plan.layouts[x] == lay => {
                Code::atom(format!("{}.v[{I}]", self.names.locals[*x]))
            }
            ExprKind::Unary(op, a) => {
                let a = self.elem(a, lay)?;
                ops::unary(*op, t, &a)
            }
            ExprKind::Binary(op, a, b) => match self.lean_column_mask(*op, a, b, lay)? {
                Some(mask) => mask,
                None => {
                    let ot = a.ty.dtype();
                    let blit = int_lit(b);
                    let (a, b) = (self.elem(a, lay)?, self.elem(b, lay)?);
                    ops::binary(*op, ot, &a, &b, blit)
                }
            },
            ExprKind::Math(f, a) => {
                let c = self.elem(a, lay)?;
                match ops::math(*f, t, &c) {
                    Some(c) => c,
                    None => return self.unsupported_expr(&format!("{f:?} on {t}"), e),
                }
            }
            ExprKind::Select(c, a, b) => {
                let (c, a, b) = (self.elem(c, lay)?, self.elem(a, lay)?, self.elem(b, lay)?);
                ops::select(&c, &a, &b)
            }
            ExprKind::MathN(f, args) => {
                let cs = args
                    .iter()
                    .map(|a| self.elem(a, lay))
                    .collect::<Result<Vec<_>>>()?;
                ops::math_n(*f, t, &cs)
            }
            ExprKind::Cast(a) => {
                let from = a.ty.dtype();
                let c = self.elem(a, lay)?;
                ops::cast(from, t, &c)
            }
            ExprKind::Broadcast(a) if !a.ty.is_tile() => self.scalar(a)?,
            // A column tile over more rows: recomputed in this layout (see `columns`).
            ExprKind::Broadcast(a) if self.column_broadcast(a, e).is_some() => {
                let inlined = self.column_broadcast(a, e).expect("checked");
                self.elem(&inlined, lay)?
            }
            // A row tile over more columns: recomputed in this layout.
            ExprKind::Broadcast(a) if self.row_broadcast(a, e).is_some() => {
                let inlined = self.row_broadcast(a, e).expect("checked");
                self.elem(&inlined, lay)?
            }
            // Row totals and expressions of them over more columns: in this layout.
            ExprKind::Broadcast(a) if self.reduce_broadcast(a, e).is_some() => {
                let pushed = self.reduce_broadcast(a, e).expect("checked");
                self.elem(&pushed, lay)?
            }
            // `arange(n)[:, None]`: the row index of the register, in any layout.
            ExprKind::Reshape(a) if super::columns::is_row_index(e, a) => {
                let alias = self.alias(lay);
                Code::atom(format!("ph::row_of<{alias}>({I})"))
            }
            // `[n]` to `[1, n]`: the same layout shape, nothing moves.
            ExprKind::Broadcast(a) | ExprKind::Reshape(a) if same_rc(a, e) => self.elem(a, lay)?,
            // The rows of an accumulator broadcast to an accumulator of the same rows: a
            // register of the rows tile (`ph::mma_row_reg`, a constant per unrolled register).
            ExprKind::Broadcast(a) if self.rows_broadcast(a, lay) => {
                let (name, _) = self.as_tile(a)?;
                let alias = self.alias(lay);
                Code::atom(format!("{name}.v[ph::mma_row_reg<{alias}>({I})]"))
            }
            ExprKind::Arange(_) => {
                let alias = self.alias(lay);
                Code::atom(format!("ph::col_of<{alias}>({I})"))
            }
            _ => {
                let name = self.materialize(e, lay)?;
                Code::atom(format!("{name}.v[{I}]"))
            }
        })
    }

    /// True when `a`, an `[R, 1]` tile, lies in the rows layout of accumulator layout `lay`.
    fn rows_broadcast(&self, a: &Expr, lay: &Layout) -> bool {
        let Layout::Mma(m) = lay else {
            return false;
        };
        let (r, c) = rc(a.ty.shape().unwrap_or(&[1]));
        c == 1 && r == m.bm && self.natural_layout(a) == Layout::MmaRows(m.rows())
    }

    /// The inlined row expression of `Broadcast(a)` to `e`'s shape when `a` is a row tile
    /// (`[R, 1]`) and the broadcast only adds columns.
    fn row_broadcast(&self, a: &Expr, e: &Expr) -> Option<Expr> {
        let (ar, ac) = rc(a.ty.shape()?);
        let (er, _) = rc(e.ty.shape()?);
        if ac != 1 || ar != er || ar == 1 {
            return None;
        }
        super::columns::inline(self.k, a, super::columns::Axis::Rows, &self.row_defs)
    }

    /// The inlined column expression of `Broadcast(a)` to `e`'s shape when `a` is a column
    /// tile (`[C]` or `[1, C]`) and the broadcast only adds rows.
    fn column_broadcast(&self, a: &Expr, e: &Expr) -> Option<Expr> {
        let (ar, ac) = rc(a.ty.shape()?);
        let (_, ec) = rc(e.ty.shape()?);
        if ar != 1 || ac != ec {
            return None;
        }
        super::columns::inline(self.k, a, super::columns::Axis::Cols, &self.column_defs)
    }
}
