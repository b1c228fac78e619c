//! Grouped stores: `Y[..] = f(x, W[..], B[..], scalars)`, an elementwise value over register
//! tiles in the store's Blocked layout and tile loads in that same layout, is emitted one vector
//! group at a time (`cuda/phobos_group.cuh`): each load reads only the group, the value is
//! computed and the group stored. Loaded as whole tiles first, a norm's weight row and the row
//! itself were live together (64 registers of a 256-thread block at 8192 bf16 columns:
//! bench/NOTES.md r5, r7); a group at a time, only the row and one group of each load are.
//!
//! Only values that also read a register tile (a local) are grouped: there the loads' tiles
//! would be live beside it; a value of loads alone keeps `load_tile`'s form.
//!
//! Semantics are unchanged: each element of the stored value reads the same elements of the
//! loaded tiles; a loaded tensor that is the stored tensor keeps the whole-tile form (a group
//! stored could be another group's input).

use super::{Emitter, Result};
use crate::layout::{rc, Layout};
use phobos_ir::{Expr, ExprKind, Index, ParamId};

/// What a grouped store reads: its tile loads, each emitted once per group, and whether it
/// reads a register tile (a local).
struct Reads<'e> {
    loads: Vec<&'e Expr>,
    locals: bool,
}

impl<'k> Emitter<'k> {
    /// Emits `tensor[index] = value` a vector group at a time when the value allows it (see
    /// the module documentation); false when it does not, and nothing is emitted.
    pub(crate) fn grouped_store(
        &mut self,
        tensor: ParamId,
        index: &[Index],
        value: &Expr,
    ) -> Result<bool> {
        let lay = self.natural_layout(value);
        let Layout::Blocked { vec, .. } = lay else {
            return Ok(false);
        };
        let mut reads = Reads {
            loads: Vec::new(),
            locals: false,
        };
        // Only where a register tile is live beside the loads (a norm's row): a value of loads
        // alone keeps the whole-tile load, every group's load issued before any conversion
        // (bench/NOTES.md r4).
        // A load with an eviction hint keeps the whole-tile load, which honours it.
        if !self.groupable(value, &lay, tensor, &mut reads)
            || reads.loads.is_empty()
            || !reads.locals
            || reads.loads.iter().any(|l| {
                !matches!(
                    l.kind,
                    ExprKind::Load {
                        cache: phobos_ir::Eviction::Normal,
                        ..
                    }
                )
            })
        {
            return Ok(false);
        }
        let alias = self.alias(&lay);
        let out_region = self.region(tensor, index, true)?;
        let mut load_regions = Vec::new();
        for l in &reads.loads {
            let ExprKind::Load {
                tensor: t, index, ..
            } = &l.kind
            else {
                unreachable!("Reads holds loads only");
            };
            load_regions.push(self.region(*t, index, false)?);
        }
        self.headers.insert(crate::GROUP_HEADER);
        self.line(format!(
            "{{  // grouped store: {} tile load(s) read a vector group at a time",
            reads.loads.len()
        ));
        self.indent += 1;
        self.line("const int ph_tid = ph::opaque_tid();");
        self.line(format!("const auto ph_out = {out_region};"));
        let mut names = Vec::new();
        for (n, r) in load_regions.iter().enumerate() {
            self.line(format!("const auto ph_in{n} = {r};"));
            names.push(format!("ph_in{n}"));
        }
        // Every region's whole tile inside its tensor (the common case, tested once): groups
        // without branches. Otherwise each group takes its own path.
        if vec == 1 {
            self.group_loop(&alias, vec, value, &lay, &reads, &names, false)?;
            self.indent -= 1;
            self.line("}");
            return Ok(true);
        }
        let whole = std::iter::once("ph_out".to_string())
            .chain(names.iter().cloned())
            .map(|n| format!("ph::vector_ok<{alias}>({n})"))
            .collect::<Vec<_>>()
            .join(" && ");
        self.line(format!("if ({whole}) {{"));
        self.indent += 1;
        self.group_loop(&alias, vec, value, &lay, &reads, &names, true)?;
        self.indent -= 1;
        self.line("} else {");
        self.indent += 1;
        self.group_loop(&alias, vec, value, &lay, &reads, &names, false)?;
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
        Ok(true)
    }

    /// The loop over a thread's vector groups: load each read's group, compute, store.
    #[allow(clippy::too_many_arguments)]
    fn group_loop(
        &mut self,
        alias: &str,
        vec: i64,
        value: &Expr,
        lay: &Layout,
        reads: &Reads<'_>,
        names: &[String],
        whole: bool,
    ) -> Result<()> {
        let reg = crate::ctype::register(value.ty.dtype());
        if whole {
            // Every group's load first, packed; then each group converted, computed, stored.
            for (n, l) in reads.loads.iter().enumerate() {
                let ExprKind::Load { tensor, .. } = l.kind else {
                    unreachable!("Reads holds loads only");
                };
                let s = crate::ctype::storage(self.tensor_info(tensor).0);
                self.line(format!(
                    "ph::GroupRaw<{alias}, const {s}> ph_raw{n}[{alias}::N / {vec}];"
                ));
                self.line("#pragma unroll");
                self.line(format!(
                    "for (int ph_g = 0; ph_g < {alias}::N / {vec}; ++ph_g) ph_raw{n}[ph_g] = ph::load_group_raw<{alias}>({}, ph_tid, ph_g);",
                    names[n]
                ));
            }
        }
        self.line("#pragma unroll");
        self.line(format!(
            "for (int ph_g = 0; ph_g < {alias}::N / {vec}; ++ph_g) {{"
        ));
        self.indent += 1;
        for (n, l) in reads.loads.iter().enumerate() {
            let r = crate::ctype::register(l.ty.dtype());
            self.line(format!("{r} ph_w{n}[{vec}];"));
            if whole {
                self.line(format!(
                    "ph::unpack_group<{alias}>(ph_raw{n}[ph_g], ph_w{n});"
                ));
            } else {
                self.line(format!(
                    "ph::load_group<{alias}>({}, ph_tid, ph_g, ph_w{n});",
                    names[n]
                ));
            }
            self.group_loads
                .insert(*l as *const Expr as usize, format!("ph_w{n}[ph_v]"));
        }
        self.line(format!("{reg} ph_y[{vec}];"));
        self.line("#pragma unroll");
        self.line(format!("for (int ph_v = 0; ph_v < {vec}; ++ph_v) {{"));
        self.indent += 1;
        self.line(format!("const int ph_i = ph_g * {vec} + ph_v;"));
        let v = self.elem(value, lay);
        self.group_loads.clear();
        let v = v?;
        self.line(format!("ph_y[ph_v] = {};", v.full()));
        self.indent -= 1;
        self.line("}");
        self.line(format!(
            "ph::store_group<{alias}, {whole}>(ph_out, ph_tid, ph_g, ph_y);"
        ));
        self.indent -= 1;
        self.line("}");
        Ok(())
    }

    /// True when `e` is computed register by register in `lay` without emitting statements:
    /// elementwise operations over locals in `lay`, uniform scalars, column indices and tile
    /// loads of `lay`'s shape from tensors other than `stored` (collected into `reads`).
    fn groupable<'e>(
        &self,
        e: &'e Expr,
        lay: &Layout,
        stored: ParamId,
        reads: &mut Reads<'e>,
    ) -> bool {
        if !e.ty.is_tile() {
            return plain_scalar(e);
        }
        let same_shape = |a: &Expr| rc(a.ty.shape().unwrap_or(&[1])) == lay_rc(lay);
        match &e.kind {
            ExprKind::Local(l) => {
                reads.locals = true;
                self.plan.layouts.get(l) == Some(lay)
            }
            ExprKind::Load { tensor, .. } => {
                let ok = *tensor != stored && same_shape(e) && &self.natural_layout(e) == lay;
                if ok {
                    reads.loads.push(e);
                }
                ok
            }
            ExprKind::Arange(_) => same_shape(e),
            ExprKind::Unary(_, a) | ExprKind::Math(_, a) | ExprKind::Cast(a) => {
                self.groupable(a, lay, stored, reads)
            }
            ExprKind::Binary(_, a, b) => {
                self.groupable(a, lay, stored, reads) && self.groupable(b, lay, stored, reads)
            }
            ExprKind::Select(c, a, b) => {
                self.groupable(c, lay, stored, reads)
                    && self.groupable(a, lay, stored, reads)
                    && self.groupable(b, lay, stored, reads)
            }
            ExprKind::MathN(_, args) => args.iter().all(|a| self.groupable(a, lay, stored, reads)),
            ExprKind::Broadcast(a) if !a.ty.is_tile() => plain_scalar(a),
            ExprKind::Broadcast(a) | ExprKind::Reshape(a)
                if rc(a.ty.shape().unwrap_or(&[1])) == rc(e.ty.shape().unwrap_or(&[1])) =>
            {
                self.groupable(a, lay, stored, reads)
            }
            _ => false,
        }
    }
}

fn lay_rc(lay: &Layout) -> (i64, i64) {
    match lay {
        Layout::Blocked { r, c, .. } => (*r, *c),
        _ => (0, 0),
    }
}

/// A scalar that `Emitter::scalar` writes as one expression: literals, dims, parameters,
/// locals, the context, and operations on them.
fn plain_scalar(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_)
        | ExprKind::Dim(_)
        | ExprKind::Param(_)
        | ExprKind::Local(_)
        | ExprKind::Ctx(_) => true,
        ExprKind::Unary(_, a) | ExprKind::Math(_, a) | ExprKind::Cast(a) => plain_scalar(a),
        ExprKind::Binary(_, a, b) | ExprKind::Cdiv(a, b) => plain_scalar(a) && plain_scalar(b),
        ExprKind::Select(c, a, b) => plain_scalar(c) && plain_scalar(a) && plain_scalar(b),
        _ => false,
    }
}
