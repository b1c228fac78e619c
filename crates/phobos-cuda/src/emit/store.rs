//! Tile stores (plain, through TMA, atomic and through the SPLIT_K workspace) and the
//! eviction hints of loads and stores.

use super::{Emitter, Result, STORE_TMA_HEADER};
use crate::plan::TmaStore;
use phobos_ir::{Eviction, Expr, ExprKind, Index, ParamId};

impl Emitter<'_> {
    /// A tile store: from the value's own layout (no conversion for locals). A store with an
    /// eviction hint takes `store_tile`'s paths, not the grouped store.
    pub(crate) fn store_tile(
        &mut self,
        tensor: ParamId,
        index: &[Index],
        value: &Expr,
        cache: Eviction,
    ) -> Result<()> {
        if self.store_through_row(tensor, index, value, cache)? {
            return Ok(());
        }
        if cache == Eviction::Normal && self.grouped_store(tensor, index, value)? {
            return Ok(());
        }
        if cache == Eviction::Normal && self.transpose_store_fused(tensor, index, value)? {
            return Ok(());
        }
        let value = self.store_rounds(tensor, value);
        let (name, lay) = self.as_tile(value)?;
        let region = self.region(tensor, index, true)?;
        let ev = match cache {
            Eviction::Normal => String::new(),
            c => format!("<{}>", eviction_const(c)),
        };
        if let Some(bytes) = self.shifted_row_store(tensor, &lay) {
            let s = self.scratch(bytes);
            self.line(format!("ph::store_row_shifted{ev}({region}, {name}, {s});"));
            return Ok(());
        }
        self.line(format!("ph::store_tile{ev}({region}, {name});"));
        Ok(())
    }

    /// A transposed tile stored to a 4-byte tensor whose rows are known unaligned, fused with its
    /// transpose: at VEC_COPY=1 (`Plan::shifted_stores`, a 4-element Blocked value)
    /// `ph::transpose_store_shifted`, which reads the shared tile at each output row's shift and
    /// writes aligned 16-byte chunks (bench/NOTES.md r19); at STORE_LINES=1
    /// (`Plan::line_stores`) `ph::transpose_store_lines`, a warp a row segment by windows on
    /// 128-byte lines (r37c, r40). False (nothing emitted) for every other store.
    fn transpose_store_fused(
        &mut self,
        tensor: ParamId,
        index: &[Index],
        value: &Expr,
    ) -> Result<bool> {
        let ExprKind::Transpose(arg) = &value.kind else {
            return Ok(false);
        };
        let lay = self.natural_layout(value);
        let func = if self.plan.shifted_stores.contains(&tensor)
            && matches!(lay, crate::layout::Layout::Blocked { vec: 4, .. })
        {
            "transpose_store_shifted"
        } else if self.plan.line_stores.contains(&tensor) {
            "transpose_store_lines"
        } else {
            return Ok(false);
        };
        let alias = self.alias(&lay);
        let (src, _) = self.as_tile(arg)?;
        let s = self.transpose_scratch(arg);
        self.headers.insert(crate::SHIFTED_HEADER);
        let region = self.region(tensor, index, true)?;
        self.line(format!("ph::{func}<{alias}>({region}, {src}, {s});"));
        Ok(true)
    }

    /// ROW_SMEM=1: the store that is a staged row's last use writes its value through the
    /// row's buffer (`ph::store_row_smem`); false (nothing emitted) for every other store.
    fn store_through_row(
        &mut self,
        tensor: ParamId,
        index: &[Index],
        value: &Expr,
        cache: Eviction,
    ) -> Result<bool> {
        if self.plan.row_smem.is_empty() {
            return Ok(false);
        }
        let value = self.store_rounds(tensor, value);
        let lay = self.natural_layout(value);
        let Some((x, in_place)) = self.store_through(&lay) else {
            return Ok(false);
        };
        // A group at a time: its elements computed, then written over the row's chunk, so no
        // more than a group of the value is live (the whole tile, computed first, spilled).
        let v = self.elem(value, &lay)?;
        let alias = self.alias(&lay);
        let t = crate::ctype::register(value.ty.dtype());
        let region = self.region(tensor, index, true)?;
        let ev = match cache {
            Eviction::Normal => String::new(),
            c => format!("<{}>", eviction_const(c)),
        };
        let storage = crate::ctype::storage(self.tensor_info(tensor).0);
        let group = |put: &str| {
            [
                "#pragma unroll".to_string(),
                format!("for (int ph_j = 0; ph_j < {alias}::N / {alias}::VEC; ++ph_j) {{"),
                format!("  {t} ph_g[{alias}::VEC];"),
                "  #pragma unroll".to_string(),
                format!(
                    "  for (int ph_k = 0; ph_k < {alias}::VEC; ++ph_k) {{ const int ph_i = ph_j * {alias}::VEC + ph_k; ph_g[ph_k] = {}; }}",
                    v.full()
                ),
                format!("  {put};"),
                "}".to_string(),
            ]
        };
        if in_place {
            // ROW_SMEM=2: where the destination's row starts at the row's shift, each group
            // stored from its registers; else through the buffer, realigned.
            let direct_ev = match cache {
                Eviction::Normal => String::new(),
                c => format!(", {}", eviction_const(c)),
            };
            self.line(format!(
                "const ph::RowOut<{storage}> ph_out = ph::row_out({region}, {x});"
            ));
            self.line("if (ph_out.direct) {");
            self.indent += 1;
            for l in group(&format!(
                "ph::smem_row_store_direct<{storage}{direct_ev}>({x}, ph_j, ph_g, ph_out)"
            )) {
                self.line(l);
            }
            self.indent -= 1;
            self.line("} else {");
            self.indent += 1;
            for l in group(&format!("ph::smem_row_put<{storage}>({x}, ph_j, ph_g)")) {
                self.line(l);
            }
            self.line(format!("ph::store_row_smem{ev}({region}, {x});"));
            self.indent -= 1;
            self.line("}");
            return Ok(true);
        }
        for l in group(&format!("ph::smem_row_put<{storage}>({x}, ph_j, ph_g)")) {
            self.line(l);
        }
        self.line(format!("ph::store_row_smem{ev}({region}, {x});"));
        Ok(true)
    }

    /// The epilogue store of a wgmma GEMM's tile through shared memory and TMA (the plan's
    /// `tma_store`): staged past the main loop's shared memory. Outside the persistent schedule
    /// the issuing threads wait for the copies to read it (the block exits next); in it, the
    /// next tile's store or `persistent_end` does.
    pub(crate) fn store_tile_tma(
        &mut self,
        ts: &TmaStore,
        tensor: ParamId,
        index: &[Index],
        value: &Expr,
    ) -> Result<()> {
        // `C[..] = TC(acc)`: the store rounds the accumulator to C's type itself, once.
        let (name, _) = match &value.kind {
            ExprKind::Cast(inner) if matches!(inner.kind, ExprKind::Local(_)) => {
                self.as_tile(inner)?
            }
            _ => self.as_tile(value)?,
        };
        let region = self.region(tensor, index, true)?;
        let at = self.gemm_smem.div_ceil(16) * 16;
        self.c_smem = ts.smem_bytes;
        self.headers.insert(STORE_TMA_HEADER);
        let drain = !self.plan.persistent;
        self.line(format!(
            "ph::gemm::sm90::store_tile_tma<{drain}, {}>({region}, {name}, &{}, ph_smem + {at});",
            ts.rounds, ts.map
        ));
        Ok(())
    }

    /// The SPLIT_K epilogue: adds the stored tile into f32 `tensor` with atomics (the host
    /// zeroed it before the launch; every part adds its partial sum).
    pub(crate) fn atomic_add_tile(
        &mut self,
        tensor: ParamId,
        index: &[Index],
        value: &Expr,
    ) -> Result<()> {
        let (name, _) = self.as_tile(value)?;
        let region = self.region(tensor, index, true)?;
        self.line(format!("ph::atomic_add_tile({region}, {name});"));
        Ok(())
    }

    /// The SPLIT_K epilogue through the f32 workspace (a C that is not f32): the accumulator
    /// into this part's slice; the part that arrives last at the tile's counter sums the
    /// slices into the accumulator and runs the store itself, once (`ph::split_*`).
    pub(crate) fn split_workspace_store(
        &mut self,
        tensor: ParamId,
        index: &[Index],
        value: &Expr,
        parts: u32,
    ) -> Result<()> {
        let acc = self.plan.gemms[0].0.acc;
        let acc = self.names.locals[acc].clone();
        let region = self.region(tensor, index, true)?;
        let c = self.names.params[tensor].clone();
        let n = (self.dim_strings(tensor).iter())
            .map(|d| format!("(long long){d}"))
            .collect::<Vec<_>>()
            .join(" * ");
        let ws = super::SPLIT_WS;
        // SPLIT_REDUCE=3: the paired forms; the last part passes its own slice's index.
        let paired = self.plan.split.as_ref().is_some_and(|s| s.pairs);
        let (pairs, own) = if paired {
            ("_pairs", "(int)blockIdx.z, ")
        } else {
            ("", "")
        };
        self.line("{  // SPLIT_K: partial tiles through the f32 workspace");
        self.indent += 1;
        self.line(format!("const auto ph_split_c = {region};"));
        self.line(format!("const long long ph_split_n = {n};"));
        self.line(format!(
            "ph::split_store_partial{pairs}(ph::split_slice(ph_split_c, {c}, {ws}, ph_split_n, (int)blockIdx.z), {acc});"
        ));
        self.line(format!(
            "unsigned* ph_split_count = reinterpret_cast<unsigned*>({ws} + {parts} * ph_split_n) + (blockIdx.y * gridDim.x + blockIdx.x);"
        ));
        self.line(format!("if (ph::split_arrive(ph_split_count, {parts})) {{"));
        self.indent += 1;
        self.line(format!(
            "ph::split_sum{pairs}(ph::split_slice(ph_split_c, {c}, {ws}, ph_split_n, 0), ph_split_n, {parts}, {own}{acc});"
        ));
        self.store_tile(tensor, index, value, Eviction::Normal)?;
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
        Ok(())
    }
}

impl Emitter<'_> {
    /// The SPLIT_REDUCE=4 epilogue: the cluster's parts reduce-scatter their partial tiles
    /// through distributed shared memory (`reduce_split_dsmem`), then each runs the kernel's
    /// store on its TILE_N / parts columns (the region narrowed by `narrow_cols`).
    pub(crate) fn split_cluster_store(
        &mut self,
        tensor: ParamId,
        index: &[Index],
        value: &Expr,
        parts: u32,
    ) -> Result<()> {
        let acc = self.plan.gemms[0].0.acc;
        let acc = self.names.locals[acc].clone();
        let (mainloop, bn) = match &self.plan.gemms[0].1 {
            crate::mainloop::MainLoop::Fast(f) => (
                f.plan.mainloop.clone(),
                f.plan.sm90.as_ref().map_or(0, |c| c.bn),
            ),
            _ => {
                let span = self.k.params[tensor].span;
                return super::unsupported("SPLIT_REDUCE=4 without the wgmma main loop", span);
            }
        };
        let w = bn / parts;
        self.line("{  // SPLIT_K: the cluster's parts reduce through distributed shared memory");
        self.indent += 1;
        self.line(format!(
            "{mainloop}::reduce_split_dsmem<{parts}>({acc}, ph_smem);"
        ));
        self.narrow_store = Some(format!("(int)ph::gemm::cluster_rank() * {w}, {w}"));
        let r = self.store_tile(tensor, index, value, Eviction::Normal);
        self.narrow_store = None;
        r?;
        self.indent -= 1;
        self.line("}");
        Ok(())
    }
}

/// The prelude's constant for an eviction hint (`ph::EVICT_LAST`).
pub(crate) fn eviction_const(cache: Eviction) -> &'static str {
    match cache {
        Eviction::Normal => "ph::EVICT_NORMAL",
        Eviction::Last => "ph::EVICT_LAST",
        Eviction::First => "ph::EVICT_FIRST",
        Eviction::NoAllocate => "ph::NO_ALLOCATE",
    }
}

/// A hint as a trailing template argument (`, ph::EVICT_LAST`), or nothing without one, so
/// that unhinted accesses emit the same code as before hints existed.
pub(crate) fn eviction_arg(cache: Eviction) -> String {
    match cache {
        Eviction::Normal => String::new(),
        c => format!(", {}", eviction_const(c)),
    }
}

impl Emitter<'_> {
    /// The hint an access is emitted with: its own, or none at a point that pins the knob
    /// `EVICT=0` (the code without hints, for the tuner to compare).
    pub(crate) fn hint(&self, cache: Eviction) -> Eviction {
        match phobos_ir::knobs::Knob::Evict.get(&self.k.point) {
            Some(0) => Eviction::Normal,
            _ => cache,
        }
    }

    /// The hint argument of a load of `tensor`: with `ph::READ_ONLY` added when the kernel
    /// never writes the tensor (its pointer is `const __restrict__`), so the hinted load keeps
    /// the non-coherent path the compiler gives such loads without a hint.
    pub(crate) fn load_eviction_arg(&self, tensor: ParamId, cache: Eviction) -> String {
        if cache == Eviction::Normal {
            return String::new();
        }
        let mut stored = std::collections::BTreeSet::new();
        crate::visit::stored_tensors(&self.k.body, &mut stored);
        if stored.contains(&tensor) {
            eviction_arg(cache)
        } else {
            format!(", {} + ph::READ_ONLY", eviction_const(cache))
        }
    }

    /// [`Self::load_eviction_arg`] of a load of `tensor` with `cache` (after the knob `EVICT`),
    /// always written out: `ph::EVICT_NORMAL` where no hint applies (the row loads' templates
    /// take further arguments after it).
    pub(crate) fn written_eviction_arg(&self, tensor: ParamId, cache: Eviction) -> String {
        let ev = self.load_eviction_arg(tensor, self.hint(cache));
        if ev.is_empty() {
            ", ph::EVICT_NORMAL".to_string()
        } else {
            ev
        }
    }
}
