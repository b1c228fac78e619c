//! Statements: assignments, stores, loops, branches, and recognized GEMM loops.

use super::ops::Code;
use super::{unsupported, Emitter, Result};
use crate::gemm_fast::Strategy;
use crate::mainloop::{LoopArgs, MainLoop};
use crate::visit::{assigned_locals, has_tile_work, stored_tensors};
use crate::{ctype, SplitReduce};
use phobos_ir::{Expr, ExprKind, Lit, Stmt, StmtKind, Ty};
use std::collections::BTreeSet;

impl<'k> Emitter<'k> {
    /// Emits a statement list; `body_idx` says which body of the enclosing statement it is.
    pub(crate) fn block(&mut self, stmts: &'k [Stmt], body_idx: usize) -> Result<()> {
        // Staged rows whose first use has been emitted, their landed view not yet.
        let mut landing = Vec::new();
        for (i, s) in stmts.iter().enumerate() {
            self.path.push((body_idx, i));
            self.source_line(s.span);
            self.land_staged_rows(s, &mut landing);
            let r = self
                .stmt(s)
                .map(|()| landing.extend(self.first_used_here()));
            self.path.pop();
            r?;
        }
        Ok(())
    }

    /// SLABS (plan::row_smem): the staged rows whose first use is the statement being emitted.
    fn first_used_here(&self) -> Vec<phobos_ir::LocalId> {
        (self.plan.row_smem.iter())
            .filter(|(_, r)| {
                matches!(&r.staged, Ok(s) if s.slabs.as_deref() == Some(self.path.as_slice()))
            })
            .map(|(&l, _)| l)
            .collect()
    }

    /// SLABS: after a staged row's first use the row landed whole, and its later uses read a
    /// view of it with no waits (`ph::smem_row_landed`), declared before the first statement
    /// `s` that reads the row, not right after the first use: the view's waits are volatile, so
    /// the compiler keeps what follows them below them, and a load between (the cross-entropy's
    /// target logit) would wait for the row instead of being in flight under its pass
    /// (bench/NOTES.md r30). A statement whose sum the row's max already computed
    /// (`Emitter::fused_sums`) does not read it.
    fn land_staged_rows(&mut self, s: &Stmt, landing: &mut Vec<phobos_ir::LocalId>) {
        let fused = matches!(&s.kind, StmtKind::Assign { value, .. }
            if self.fused_sums.contains_key(&(value.span.lo, value.span.hi)));
        if fused {
            return;
        }
        let reads: Vec<_> = (landing.iter().copied())
            .filter(|&l| crate::visit::stmts_touch_local(std::slice::from_ref(s), l))
            .collect();
        for l in reads {
            landing.retain(|&x| x != l);
            let name = self.names.locals[l].clone();
            let view = format!("{name}_landed");
            self.line(format!("const auto {view} = ph::smem_row_landed({name});"));
            self.names.locals[l] = view;
        }
    }

    pub(crate) fn stmt(&mut self, s: &'k Stmt) -> Result<()> {
        // A tile statement loading a tensor stored to since the last barrier sees the stores.
        let mut tile_loads = BTreeSet::new();
        for e in crate::visit::stmt_exprs(s) {
            crate::visit::loaded_tensors(e, true, &mut tile_loads);
        }
        if matches!(s.kind, StmtKind::For { .. }) {
            if let Some(g) = self.gemm_here() {
                tile_loads.insert(g.a.tensor);
                tile_loads.insert(g.b.tensor);
            }
        }
        if tile_loads.iter().any(|t| self.pending.contains(t)) {
            self.barrier();
        }
        match &s.kind {
            StmtKind::Assign { local, value } => self.assign(*local, value),
            StmtKind::Store {
                tensor,
                index,
                value,
                cache,
            } => {
                let top = (self.path.len() == 1).then(|| self.path[0].1);
                let split_store =
                    top.is_some() && self.plan.split.as_ref().map(|sk| sk.store) == top;
                let tma_store = (self.plan.tma_store.as_ref())
                    .filter(|t| top == Some(t.stmt))
                    .cloned();
                if let Some(ts) = tma_store {
                    self.store_tile_tma(&ts, *tensor, index, value)?;
                    self.pending.insert(*tensor);
                } else if split_store {
                    match self.plan.split.as_ref().map(|sk| (sk.reduce, sk.parts)) {
                        Some((SplitReduce::Workspace, parts)) => {
                            self.split_workspace_store(*tensor, index, value, parts)?
                        }
                        Some((SplitReduce::Cluster, parts)) => {
                            self.split_cluster_store(*tensor, index, value, parts)?
                        }
                        _ => self.atomic_add_tile(*tensor, index, value)?,
                    }
                    self.pending.insert(*tensor);
                } else if value.ty.is_tile() {
                    self.store_tile(*tensor, index, value, self.hint(*cache))?;
                    if self.element_loaded.contains(tensor) {
                        self.barrier();
                    } else {
                        self.pending.insert(*tensor);
                    }
                } else {
                    let v = self.scalar(value)?;
                    let call = self.element_access(*tensor, index, Some(&v), self.hint(*cache))?;
                    self.line(format!("{call};"));
                    self.pending.insert(*tensor);
                }
                Ok(())
            }
            StmtKind::Atomic {
                op,
                tensor,
                index,
                value,
                old,
            } => self.atomic(*op, *tensor, index, value, *old),
            StmtKind::For {
                var,
                start,
                end,
                step,
                unroll,
                body,
            } => {
                if let Some(i) = self.gemm_index_here() {
                    return self.main_loop(i);
                }
                self.for_loop(*var, start, end, step, *unroll, body)
            }
            StmtKind::While { cond, body } => {
                let saved = std::mem::take(&mut self.lines);
                let c = self.scalar(cond);
                let pre = std::mem::replace(&mut self.lines, saved);
                let c = c?;
                self.enter_loop(body);
                if pre.is_empty() {
                    self.line(format!("while ({}) {{", c.full()));
                    self.indent += 1;
                } else {
                    // The condition needs statements of its own: evaluate them every iteration.
                    self.line("while (true) {");
                    self.indent += 1;
                    for l in pre {
                        self.line(l.trim_start());
                    }
                    self.line(format!("if (!({})) break;", c.full()));
                }
                self.block(body, 0)?;
                self.indent -= 1;
                self.line("}");
                self.enter_loop(body);
                Ok(())
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                let c = self.scalar(cond)?;
                self.line(format!("if ({}) {{", c.full()));
                let (dirty0, pending0) = (self.scratch_dirty, self.pending.clone());
                let outer_dead = self.in_dead;
                self.indent += 1;
                self.in_dead = outer_dead || c.full() == "false";
                self.block(then_body, 0)?;
                self.in_dead = outer_dead;
                self.indent -= 1;
                if !else_body.is_empty() {
                    let (dirty1, pending1) = (self.scratch_dirty, self.pending.clone());
                    self.scratch_dirty = dirty0;
                    self.pending = pending0;
                    self.line("} else {");
                    self.indent += 1;
                    self.in_dead = outer_dead || c.full() == "true";
                    self.block(else_body, 1)?;
                    self.in_dead = outer_dead;
                    self.indent -= 1;
                    self.scratch_dirty |= dirty1;
                    self.pending.extend(pending1);
                } else {
                    self.scratch_dirty |= dirty0;
                    self.pending.extend(pending0);
                }
                self.line("}");
                Ok(())
            }
            StmtKind::Break => {
                self.line("break;");
                Ok(())
            }
            StmtKind::Continue => {
                self.line("continue;");
                Ok(())
            }
        }
    }

    /// Loop bodies run again: the state at their top is anything their end may leave.
    fn enter_loop(&mut self, body: &[Stmt]) {
        if has_tile_work(body) {
            self.scratch_dirty = true;
        }
        let mut stored = BTreeSet::new();
        stored_tensors(body, &mut stored);
        self.pending.extend(stored);
    }

    fn assign(&mut self, l: usize, value: &'k Expr) -> Result<()> {
        let name = self.names.locals[l].clone();
        let declare = self.declares_here(l);
        match &self.k.locals[l].ty {
            Ty::Scalar(t) => {
                let v = self.scalar(value)?;
                let konst = if self.k.locals[l].mutable {
                    ""
                } else {
                    "const "
                };
                let decl = if declare {
                    format!("{konst}{} ", ctype::register(*t))
                } else {
                    String::new()
                };
                self.line(format!("{decl}{name} = {};", v.full()));
                Ok(())
            }
            Ty::Tile(_, _) if self.plan.resident.contains(&l) => self.load_resident(l, value),
            Ty::Tile(t, _) => {
                let lay = self.plan.layouts[&l].clone();
                let landed = self
                    .rows_ahead
                    .is_some_and(|a| a.form == crate::plan::AheadForm::Landed && a.local == l);
                if declare && landed {
                    return self.landed_load(l, &lay, value, *t);
                }
                let mask = (self.plan.masks.iter()).find(|m| m.path == self.path);
                // PACK=4: a row loaded with its mask (`where(arange(n) < e, load, fill)`) is held
                // packed, the fill in its registers, not assigned through the masked load.
                let filled = declare && self.filled_load(value).is_some();
                if let (true, Some(storage)) = (filled, self.packs(l, *t, value)) {
                    self.note_layout(l, &lay);
                    self.packed.insert(l, storage);
                    return self.packed_load(l, &name, &lay, value, storage);
                }
                if let Some(rec) = mask.cloned() {
                    if declare {
                        self.note_layout(l, &lay);
                        let ty = self.tile_type(*t, &lay);
                        self.line(format!("{ty} {name};"));
                    }
                    return self.masked_assign(&name, &lay, value, &rec);
                }
                if declare {
                    self.note_layout(l, &lay);
                    if let Some(storage) = self.packs(l, *t, value) {
                        self.packed.insert(l, storage);
                        return self.packed_load(l, &name, &lay, value, storage);
                    }
                    let ty = self.tile_type(*t, &lay);
                    if let Some(rhs) = self.tile_rhs(&lay, value)? {
                        self.line(format!("{ty} {name} = {rhs};"));
                        return Ok(());
                    }
                    self.line(format!("{ty} {name};"));
                }
                let behind = self.ahead.as_ref().map(|a| a.behind as *const Expr);
                let acc_dot = crate::plan::accumulates_dot(l, value)
                    .map(|d| (None, d))
                    .or_else(|| crate::plan::scaled_dot(l, value, &lay).map(|(r, d)| (Some(r), d)));
                if let Some((rest, dot)) =
                    acc_dot.filter(|(_, d)| behind == Some(*d as *const Expr))
                {
                    // The overlapped loop's accumulation: deferred to the next iteration.
                    if self.behind_dot(rest, dot)? {
                        return Ok(());
                    }
                }
                if let Some(dot) = crate::plan::accumulates_dot(l, value) {
                    return self.dot_into(&name, &lay, dot);
                }
                // `acc = f(acc) + dot(..)` with a tensor-core accumulator: `acc = f(acc)`, then
                // the mma accumulates into it (no second accumulator tile live at once).
                if let Some((rest, dot)) = crate::plan::scaled_dot(l, value, &lay) {
                    self.tile_into(&name, &lay, rest)?;
                    return self.dot_into(&name, &lay, dot);
                }
                self.tile_into(&name, &lay, value)
            }
        }
    }

    fn for_loop(
        &mut self,
        var: usize,
        start: &'k Expr,
        end: &'k Expr,
        step: &'k Expr,
        unroll: u32,
        body: &'k [Stmt],
    ) -> Result<()> {
        let name = self.names.locals[var].clone();
        let mut assigned = BTreeSet::new();
        assigned_locals(body, &mut assigned);
        let step_lit = match step.kind {
            ExprKind::Lit(Lit::Int(v)) => Some(v),
            _ => None,
        };
        if step_lit.is_some_and(|v| v <= 0) {
            self.line(format!(
                "// for {name}: the step is {}, no iterations",
                step_lit.unwrap_or(0)
            ));
            return Ok(());
        }
        // The bounds are evaluated once, before the loop: hoist any that the body could change.
        let s = self.scalar(start)?;
        let e = self.bound(end, &assigned, &format!("{name}_end"))?;
        let st = match step_lit {
            Some(_) => self.scalar(step)?,
            None => {
                let v = self.scalar(step)?;
                let n = format!("{name}_step");
                self.line(format!("const int {n} = {};", v.full()));
                Code::atom(n)
            }
        };
        // The loop variable is read-only in the language; if the body assigned it anyway, the
        // iteration runs on a hidden counter.
        let counter = if assigned.contains(&var) {
            format!("ph_{name}")
        } else {
            name.clone()
        };
        let cond = match step_lit {
            Some(_) => format!("{counter} < {}", e.at(8)),
            None => format!("{} > 0 && {counter} < {}", st.s, e.at(8)),
        };
        let decl = if self.declares_here(var) || counter != name {
            "int "
        } else {
            ""
        };
        let overlap = (self.plan.loops.iter())
            .find(|r| r.path == self.path)
            .and_then(|r| r.overlap.clone().ok());
        let buffers = overlap.as_ref().map_or(2, |o| o.buffers);
        self.ring = match overlap.as_ref().map(|o| (o.ring, o.producer)) {
            // The producer warp's ring, declared and set up at the kernel's start.
            Some((Ok(r), Ok(_))) => self
                .producer_ring
                .clone()
                .map(|name| super::pipe::RingBars {
                    name,
                    stages: r.stages,
                    tma: true,
                }),
            Some((Ok(r), Err(_))) => Some(super::pipe::RingBars {
                name: self.fresh("ring"),
                stages: r.stages,
                tma: false,
            }),
            _ => None,
        };
        let streamed = self.pipe_begin(var, body, &assigned, s.full(), buffers)?;
        if let Some(o) = &overlap {
            self.ahead_begin(o, body, &streamed)?;
        }
        self.enter_loop(body);
        self.line(format!("#pragma unroll {unroll}"));
        self.line(format!(
            "for ({decl}{counter} = {}; {cond}; {counter} += {}) {{",
            s.full(),
            st.at(15)
        ));
        self.indent += 1;
        if counter != name {
            let d = if self.declares_here(var) { "int " } else { "" };
            self.line(format!("{d}{name} = {counter};"));
        }
        let buf = self.pipe_top(var, &streamed, (s.full(), st.full(), e.full()), buffers)?;
        if let Some(a) = self.ahead.as_mut() {
            a.buf = buf;
        }
        self.block(body, 0)?;
        self.indent -= 1;
        self.line("}");
        self.pipe_end(&streamed);
        if let (Some(q), Some(r)) = (self.persist_q, self.ring.as_ref().filter(|r| r.tma)) {
            // PERSIST=2: this thread's Q·Kᵀ products have completed (each iteration awaited
            // its own); the producer may load the next logical block's q once all have.
            self.line(format!(
                "ph::ring_release({} + {});  // done with {}",
                r.name,
                2 * r.stages + 1,
                self.k.locals[q.local].name
            ));
        }
        if overlap.is_some() {
            self.ahead_end(!streamed.is_empty())?;
        }
        self.ring = None;
        self.enter_loop(body);
        Ok(())
    }

    /// A loop bound as an expression evaluated once: inline when nothing in the body can change
    /// it, else a `const` before the loop.
    fn bound(&mut self, e: &'k Expr, assigned: &BTreeSet<usize>, name: &str) -> Result<Code> {
        let stable = !crate::visit::any_expr(e, &mut |x| match &x.kind {
            ExprKind::Local(l) => assigned.contains(l),
            ExprKind::Load { .. } | ExprKind::TileGet { .. } | ExprKind::Reduce { .. } => true,
            _ => false,
        });
        let c = self.scalar(e)?;
        if stable {
            return Ok(c);
        }
        self.line(format!(
            "const {} {name} = {};",
            ctype::register(e.ty.dtype()),
            c.full()
        ));
        Ok(Code::atom(name))
    }

    /// True when the statement being emitted declares local `l`.
    fn declares_here(&self, l: usize) -> bool {
        self.plan.decl_inline.get(&l) == Some(&self.path)
    }

    pub(crate) fn note_layout(&mut self, l: usize, lay: &crate::layout::Layout) {
        let note = format!("layout of {}: {}", self.k.locals[l].name, lay.cpp());
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    fn gemm_index_here(&self) -> Option<usize> {
        self.plan
            .gemms
            .iter()
            .position(|(m, _)| m.path == self.path)
    }

    fn gemm_here(&self) -> Option<&crate::gemm_match::GemmMatch> {
        self.gemm_index_here().map(|i| &self.plan.gemms[i].0)
    }

    /// A recognized GEMM loop: the strategy's call replaces it. Under SPLIT_K the call runs
    /// over this block's part of the k range.
    fn main_loop(&mut self, i: usize) -> Result<()> {
        let (m, ml) = self.plan.gemms[i].clone();
        let tma = self.plan.gemm_tma[i].clone();
        if let MainLoop::Fast(f) = &ml {
            if f.plan.strategy == Strategy::Sm90 && tma.is_none() {
                let span = self.k.locals[m.k_var].span;
                return super::unsupported("a wgmma main loop without tensor maps", span);
            }
        }
        let a = self.operand(&m.a, m.a.k_inner)?;
        let b = self.operand(&m.b, m.b.k_inner)?;
        let mut k_start = self.scalar(&m.k_start)?.s;
        let mut k_end = self.scalar(&m.k_end)?.s;
        let acc_layout = ml.acc_layout().clone();
        let acc_alias = self.alias(&acc_layout);
        self.line(format!("// {}", ml.describe()));
        if let Some(split) = &self.plan.split {
            // The parts are whole steps of the main loop from k_start, so each of its tiles lies
            // in one part, masked exactly as in the unsplit loop.
            let step = match &ml {
                MainLoop::Ffma(f) => f.tile_k,
                MainLoop::Fast(f) => f.plan.tile_k as i64,
            };
            self.headers.insert(super::SCHED_HEADER);
            self.line(format!(
                "int ph_kb, ph_ke; ph::gemm::split_k_range({k_start}, {k_end}, {step}, {}, (int)blockIdx.z, &ph_kb, &ph_ke);",
                split.parts
            ));
            k_start = "ph_kb".into();
            k_end = "ph_ke".into();
        }
        let line = ml.emit(&LoopArgs {
            acc: self.names.locals[m.acc].clone(),
            acc_alias,
            a,
            b,
            k_start,
            k_end,
            smem: "ph_smem".into(),
            tma,
        });
        self.line(line);
        self.gemm_smem = self.gemm_smem.max(ml.smem_bytes());
        for h in ml.headers() {
            self.headers.insert(h);
        }
        Ok(())
    }

    /// `ph::Operand<S>{p, mn0, mn_dim, k_dim, ld, ok}` of a GEMM operand.
    fn operand(&mut self, o: &crate::gemm_match::GemmOperand, k_inner: bool) -> Result<String> {
        let (p, ok) = self.batch_base(o.tensor, &o.batch)?;
        let mn0 = self.scalar(&o.mn_start)?;
        let dims = self.dim_strings(o.tensor);
        let ld_axis = if k_inner { o.mn_axis } else { o.k_axis };
        let ld = self.stride(o.tensor, ld_axis);
        Ok(format!(
            "ph::Operand<{}>{{{p}, {}, {}, {}, {ld}, {ok}}}",
            ctype::storage(o.dtype),
            mn0.full(),
            dims[o.mn_axis],
            dims[o.k_axis]
        ))
    }

    pub(crate) fn unsupported_expr<T>(&self, what: &str, e: &Expr) -> Result<T> {
        unsupported(what, e.span)
    }
}
