//! Packed tiles (the knob `PACK`): a `let` bound to a tile load of a 2-byte float type held two
//! elements to a 32-bit register (`ph::Packed`), each use reading its element as f32. A row
//! tile loads straight into the packed registers (`ph::load_row_packed`, phobos_rowpack.cuh):
//! the whole row of a wide softmax fits a block's registers where its f32 tile spills. `PACK=2`
//! also stores row tiles of 2-byte tensors whose rows are known unaligned by aligned 16-byte
//! vectors (`ph::store_row_shifted`), not 8 two-byte stores a group. `PACK=3` also takes the
//! lean element path: a column mask `arange(n) < e` compares against `e` less the thread's first
//! column (a constant per unrolled register, no add an element), and a store of `T(e)` (`e` f32)
//! into a tensor of 2-byte type `T` converts `e` once in the store (no rounding round trip).
//! `PACK=4` is `PACK=3` where the row's mask is written once, at its load: a `let` of
//! `where(arange(n) < e, load, fill)` is held packed with `fill` in the columns past `e`
//! (`ph::load_row_packed_fill`), the whole-row `max` / `min` of a packed bf16 row combines its
//! words two halves at a time (`ph::reduce_all_packed`), and whole-tile reductions combine the
//! warps' partials by lanes (`ph::reduce_all_lanes`: fewer registers and instructions than
//! every thread reading every warp's; bench/NOTES.md r14).

use super::ops::Code;
use super::{Emitter, Result};
use crate::layout::Layout;
use phobos_ir::{BinOp, DType, Expr, ExprKind, ParamId, ParamKind};

impl<'k> Emitter<'k> {
    /// The point sets `PACK=3` (the lean element path).
    pub(crate) fn lean_elements(&self) -> bool {
        matches!(phobos_ir::knobs::Knob::Pack.get(&self.k.point), Some(3 | 4))
    }

    /// The point sets `PACK=4` (the row's mask at its load, the packed max, the warps' partials
    /// combined by lanes).
    pub(crate) fn filled_rows(&self) -> bool {
        phobos_ir::knobs::Knob::Pack.get(&self.k.point) == Some(4)
    }

    /// At `PACK=4`, the whole-row `max` or `min` of `f32(x)`, `x` a packed bf16 local, by its
    /// words (`ph::reduce_all_packed`); None otherwise.
    pub(crate) fn packed_reduce(
        &self,
        op: phobos_ir::ReduceOp,
        arg: &Expr,
    ) -> Option<(String, String)> {
        let name = match op {
            phobos_ir::ReduceOp::Max => "ph::Max",
            phobos_ir::ReduceOp::Min => "ph::Min",
            _ => return None,
        };
        let threads = self.k.launch.threads;
        if !self.filled_rows() || threads == 32 || !threads.is_multiple_of(32) {
            return None;
        }
        let ExprKind::Cast(inner) = &arg.kind else {
            return None;
        };
        let ExprKind::Local(x) = inner.kind else {
            return None;
        };
        if arg.ty.dtype() != DType::F32 || self.packed.get(&x) != Some(&"ph::bf16") {
            return None;
        }
        Some((name.to_string(), self.names.locals[x].clone()))
    }

    /// At `PACK=4`, the parts of a `let`'s value `where(arange(n) < e, load, fill)` (a column
    /// mask over a tile load, a scalar fill): (e, the load, fill).
    pub(crate) fn filled_load<'e>(
        &self,
        value: &'e Expr,
    ) -> Option<(&'e Expr, &'e Expr, &'e Expr)> {
        if !self.filled_rows() {
            return None;
        }
        crate::plan::filled_parts(value)
    }

    /// At `PACK=3`, register `ph_i`'s value of `arange(n) < b` in `lay` as
    /// `col_rel(ph_i) < b - col_of(0)` (`col_rel`: the column less the thread's first): the left
    /// side is a constant of the unrolled register in a blocked row layout, the right side the
    /// same for every register (computed once), so each element is one compare. None otherwise
    /// (the plain form).
    pub(crate) fn lean_column_mask(
        &mut self,
        op: BinOp,
        a: &Expr,
        b: &Expr,
        lay: &Layout,
    ) -> Result<Option<Code>> {
        if !self.lean_elements() || op != BinOp::Lt || !matches!(a.kind, ExprKind::Arange(_)) {
            return Ok(None);
        }
        if !matches!(b.ty.dtype(), DType::I32) {
            return Ok(None);
        }
        let b = self.elem(b, lay)?;
        let alias = self.alias(lay);
        Ok(Some(Code::atom(format!(
            "(ph::col_rel<{alias}>(ph_i) < ({}) - ph::col_of<{alias}>(0))",
            b.s
        ))))
    }

    /// The value a store of `value` into `tensor` takes: `e` for `T(e)` of an f32 `e` when `T`
    /// is the tensor's bf16 or f16 element type (the store rounds `e` to `T` itself, to nearest
    /// even as the cast does, so the stored bits are the same; the cast's round trip through `T`
    /// cost two instructions an element, bench/NOTES.md r49); `value` otherwise.
    pub(crate) fn store_rounds<'e>(&self, tensor: ParamId, value: &'e Expr) -> &'e Expr {
        let ParamKind::Tensor { dtype, .. } = &self.k.params[tensor].kind else {
            return value;
        };
        match &value.kind {
            ExprKind::Cast(inner)
                if matches!(dtype, DType::BF16 | DType::F16)
                    && value.ty.dtype() == *dtype
                    && inner.ty.dtype() == DType::F32 =>
            {
                inner
            }
            _ => value,
        }
    }

    /// The storage type when local `l` (declared here, of element type `t`) is held packed:
    /// the point sets `PACK=1`, `2` or `3`, `l` is a `let` of bf16 or f16 and its value is a
    /// tile load. The values are the same; their registers are halved.
    pub(crate) fn packs(&self, l: usize, t: DType, value: &Expr) -> Option<&'static str> {
        let on = matches!(phobos_ir::knobs::Knob::Pack.get(&self.k.point), Some(1..=4));
        let load = matches!(value.kind, ExprKind::Load { .. }) || self.filled_load(value).is_some();
        if !on || !load || self.k.locals[l].mutable || self.plan.resident.contains(&l) {
            return None;
        }
        match t {
            DType::BF16 => Some("ph::bf16"),
            DType::F16 => Some("ph::f16"),
            _ => None,
        }
    }

    /// The scratch bytes of `ph::store_row_shifted` when a store of a row tile in `lay` to
    /// `tensor` takes it: at `PACK=2` or `3`, for 2-byte tensors whose rows are known unaligned and
    /// blocked row tiles of 8-element groups.
    pub(crate) fn shifted_row_store(&mut self, tensor: usize, lay: &Layout) -> Option<u32> {
        if !matches!(phobos_ir::knobs::Knob::Pack.get(&self.k.point), Some(2..=4))
            || !crate::layout::rows_known_unaligned(self.k, tensor)
        {
            return None;
        }
        let Layout::Blocked {
            r: 1,
            c,
            threads,
            vec: 8,
        } = lay
        else {
            return None;
        };
        if threads % 32 != 0 {
            return None;
        }
        self.headers.insert(crate::REDUCE_HEADER);
        self.headers.insert(crate::ROWPACK_HEADER);
        Some(row_scratch(*c, *threads))
    }

    /// Declares packed local `name` in `lay` from tile load `value`: a row tile of a blocked
    /// layout through `ph::load_row_packed` (its shared-memory exchange in the scratch area),
    /// any other tile loaded as f32 and packed.
    pub(crate) fn packed_load(
        &mut self,
        l: phobos_ir::LocalId,
        name: &str,
        lay: &Layout,
        value: &Expr,
        storage: &str,
    ) -> Result<()> {
        let alias = self.alias(lay);
        let filled = self.filled_load(value);
        let load = filled.map_or(value, |(_, load, _)| load);
        let ExprKind::Load {
            tensor,
            index,
            cache,
        } = &load.kind
        else {
            unreachable!("packs() takes loads only")
        };
        let rhs = match lay {
            Layout::Blocked {
                r: 1,
                c,
                threads,
                vec: 8,
            } if threads % 32 == 0 => {
                self.headers.insert(crate::REDUCE_HEADER);
                self.headers.insert(crate::ROWPACK_HEADER);
                let region = self.region(*tensor, index, false)?;
                let ev = self.written_eviction_arg(*tensor, *cache);
                if let Some(at) = self.staged_row(l) {
                    // ROW_SMEM=1: the row in shared memory (plan::row_smem); at 2, masked in
                    // place where its uses allow.
                    let (e, _, fill) = filled.expect("a staged row is a masked row load");
                    let e = self.scalar(e)?;
                    let fill = self.scalar(fill)?;
                    let staged = match self.plan.row_smem.get(&l).map(|r| &r.staged) {
                        Some(Ok(s)) => Some((s.in_place, s.slabs.is_some())),
                        _ => None,
                    };
                    let ev = match staged {
                        Some((true, true)) => format!("{ev}, true, true"),
                        Some((true, false)) => format!("{ev}, true"),
                        _ => ev,
                    };
                    if self.rows_ahead.is_some_and(|a| a.local == l) {
                        self.line(format!(
                            "ph::SmemRow<{storage}, {alias}> {name} = ph::load_row_smem_ahead<{alias}{ev}>({region}, {}, {}, ph_resident + {at}, {});",
                            e.full(),
                            fill.full(),
                            super::rows_ahead::ROW_N
                        ));
                        return Ok(());
                    }
                    // SLABS: the row's type says its groups land one by one.
                    let slabs = if matches!(staged, Some((_, true))) {
                        ", true"
                    } else {
                        ""
                    };
                    self.line(format!(
                        "ph::SmemRow<{storage}, {alias}{slabs}> {name} = ph::load_row_smem_fill<{alias}{ev}>({region}, {}, {}, ph_resident + {at});",
                        e.full(),
                        fill.full()
                    ));
                    return Ok(());
                }
                let s = self.scratch(row_scratch(*c, *threads));
                match filled {
                    Some((e, _, fill)) => {
                        let e = self.scalar(e)?;
                        let fill = self.scalar(fill)?;
                        format!(
                            "ph::load_row_packed_fill<{alias}{ev}>({region}, {}, {}, {s})",
                            e.full(),
                            fill.full()
                        )
                    }
                    None => format!("ph::load_row_packed<{alias}{ev}>({region}, {s})"),
                }
            }
            _ if filled.is_some() => {
                // Any other layout: the `where` computed as f32, then packed.
                let t = self.materialize(value, lay)?;
                format!("ph::pack<{storage}>({t})")
            }
            _ => {
                let rhs = self.tile_rhs(lay, value)?.expect("a tile load is one call");
                format!("ph::pack<{storage}>({rhs})")
            }
        };
        self.line(format!("ph::Packed<{storage}, {alias}> {name} = {rhs};"));
        Ok(())
    }
}

impl Emitter<'_> {
    /// ROW_SMEM=1: when the plan stages local `l` in shared memory, its buffer's offset in the
    /// resident region, reserved.
    pub(super) fn staged_row(&mut self, l: phobos_ir::LocalId) -> Option<u32> {
        let Some(Ok(staged)) = self.plan.row_smem.get(&l).map(|r| &r.staged) else {
            return None;
        };
        if let Some(&at) = self.staged_rows.get(&l) {
            return Some(at);
        }
        let at = self.resident_smem.div_ceil(16) * 16;
        // ROWS_AHEAD: two buffers, the next logical block's row in the other.
        let buffers = if self.rows_ahead.is_some_and(|a| a.local == l) {
            2
        } else {
            1
        };
        self.resident_smem = at + buffers * staged.bytes;
        self.staged_rows.insert(l, at);
        self.headers.insert(crate::ROWSMEM_HEADER);
        self.headers.insert("gemm/ptx.cuh");
        Some(at)
    }

    /// ROW_SMEM=1: the store at the statement being emitted writes through a staged row's
    /// buffer (its last use; `plan::row_smem`): that row's name and whether it was left in place
    /// (ROW_SMEM=2), when the stored tile is in its layout.
    pub(crate) fn store_through(&self, lay: &Layout) -> Option<(String, bool)> {
        self.plan.row_smem.values().find_map(|r| {
            let staged = r.staged.as_ref().ok()?;
            let here = staged.store.as_deref() == Some(self.path.as_slice());
            let same = self.plan.layouts.get(&r.local) == Some(lay);
            (here && same && self.staged_rows.contains_key(&r.local))
                .then(|| (self.names.locals[r.local].clone(), staged.in_place))
        })
    }
}

/// One 16-byte vector a group of one lane a warp (`ph::packed_row_scratch`).
fn row_scratch(c: i64, threads: u32) -> u32 {
    let t = i64::from(threads);
    let groups = (c / 8 + t - 1) / t;
    (groups * i64::from(threads / 32) * 16) as u32
}
